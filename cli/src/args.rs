//! Command-line parsing for `nnmem`, with clap's builder API: every command
//! has its own help (`nnmem plan --help`, `nnmem help plan`) and usage line.
//! Usage errors are worded here, in the voice of the tool's other errors
//! ("nnmem: --alignment: 'x' is not a power of two"), and exit with 2.

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{Arg, ArgAction, ArgMatches};

use nnmem::plan::{check_alignment, Algorithm, DEFAULT_WORK_LIMIT};
use nnmem::pool::StrategyKind;

/// The commands with options of their own (clap adds `help`).
const COMMANDS: [&str; 4] = ["plan", "validate", "pool-replay", "regions"];

const MAIN_AFTER_HELP: &str = "\
Without a command: this text. A command's own help: nnmem help COMMAND, or
nnmem COMMAND --help.
Exit status: 0 ok, 1 bad input or invalid plan, 2 usage error, 3 does not fit.";

const PLAN_ABOUT: &str = "\
Plans a trace: every buffer gets an offset so that buffers live at the same
step never share a byte. FILE '-' is standard input; without FILE a built-in
ResNet-50 training trace (1042 buffers) is planned and only summarised.";

const PLAN_AFTER_HELP: &str = "\
Outputs: FILE '-' is standard output, which carries at most one of them.
The plan CSV (id,lower,upper,size,offset in input order) goes to standard
output unless --output is given; the text summary goes to standard error
(to standard output for the built-in trace when nothing else goes there).

CSV input: header id,lower,upper,size[,offset]; one buffer per row; ids are
unique; lifetimes are half-open [lower, upper) with 0 <= lower < upper; an
empty offset cell is planned, a number is kept fixed. Errors name the file
and the line.
Exit status: 0 ok, 1 bad input, 2 usage error, 3 does not fit.";

const VALIDATE_ABOUT: &str = "\
Checks a plan: a CSV id,lower,upper,size,offset (as nnmem plan writes it)
in which no two buffers live at the same step share a byte. Prints the peak
and the lower bound; an invalid plan names the first overlapping pair (ids
and lines) and the step. FILE '-' is standard input.";

const VALIDATE_AFTER_HELP: &str = "Exit status: 0 valid, 1 bad input or invalid plan, 2 usage error.";

const POOL_REPLAY_ABOUT: &str = "\
Replays a trace through memory pools, as a runtime's allocations: each
buffer is allocated at step `lower` and freed at step `upper` (lifetimes
are half-open, so at one step the frees come before the allocations; rows
of size 0 allocate nothing; an offset column is ignored). The sequence runs
--iterations times through one pool per strategy, with the pool told of
each iteration's end. Prints per strategy the peak bytes reserved from the
device against the trace's lower bound, device allocations and frees per
iteration, requests served from a replay plan, and the time.";

const POOL_REPLAY_AFTER_HELP: &str = "\
Devices: 'host' allocates the pools' memory with the system allocator;
'virtual' hands out addresses without memory (nothing is read or written
through them), for traces larger than this machine's memory. Both count
the device calls and bytes themselves, beside the pools' own statistics.
Exit status: 0 ok, 1 bad input or a pool failed, 2 usage error.";

const REGIONS_ABOUT: &str = "\
Puts every tensor of a model into a memory region, Glow-style: the regions
of a TOML configuration (levels, regions, rules, properties), or without
--config Glow's five defaults (constant weights | mutable weights | input
weights | output weights | activations). Each region is planned; prints
the regions (level, base address, size, peak against the lower bound, their
attributes) and every tensor's region, offset and address, and each tensor
moved to a spill region, once, from the region its rule chose to where it
ended, and why. MODEL '-' is standard input.";

const REGIONS_AFTER_HELP: &str = "\
Outputs: FILE '-' is standard output, which carries one thing: the text
table unless --json - or --svg - takes it.

Model CSV: the plan CSV's id,lower,upper,size (half-open lifetimes) and
optional columns kind (constant, mutable, input, output, input-output,
activation, view; activation when missing), name (the id when missing),
function (main), dtype, alignment (1), tags (key=value;key=value), view_of
(the origin's name) and view_offset (0). Weights (every kind but activation
and view) live for the whole run: their lower and upper are ignored. Views
are added after the other tensors. Quote cells that hold commas. Errors
name the file, the line and the column.
Exit status: 0 ok, 1 bad input, 2 usage error, 3 a region does not fit.";

/// A command's help: its description, usage, arguments and notes; the same
/// for `-h` and `--help` (clap would otherwise show the one-line `about`
/// for `-h`, which is what the command list shows).
const COMMAND_HELP: &str = "{before-help}{usage-heading} {usage}\n\n{all-args}{after-help}";

/// The whole command line.
pub fn cli() -> clap::Command {
    clap::Command::new("nnmem")
        .version(nnmem::VERSION)
        .about("Plans where each buffer of a trace lives in one block of memory, draws the plan, checks plans.")
        .after_help(MAIN_AFTER_HELP)
        .subcommand(plan_command())
        .subcommand(validate_command())
        .subcommand(pool_replay_command())
        .subcommand(regions_command())
}

fn regions_command() -> clap::Command {
    clap::Command::new("regions")
        .about("Put a model's tensors into memory regions (Glow-style) and print the table")
        .before_help(REGIONS_ABOUT)
        .help_template(COMMAND_HELP)
        .after_help(REGIONS_AFTER_HELP)
        .arg(
            Arg::new("input")
                .value_name("MODEL.csv|-")
                .required(true)
                .help("The model's tensors ('-': standard input)"),
        )
        .arg(path_option(
            "config",
            "FILE.toml",
            "The regions: levels, rules and properties (default, and for a file that describes none: Glow's five)",
        ))
        .arg(path_option("json", "FILE", "Write the table as JSON to FILE"))
        .arg(path_option("svg", "FILE", "Draw the table as SVG (one lane per memory level)"))
}

fn plan_command() -> clap::Command {
    // The names, a few to a line: clap does not wrap help text here.
    let mut algorithms = String::from("One of");
    for (i, a) in Algorithm::all().iter().enumerate() {
        let sep = if i == 0 {
            " "
        } else if i % 4 == 0 {
            ",\n"
        } else {
            ", "
        };
        algorithms.push_str(sep);
        algorithms.push_str(a.name());
    }
    clap::Command::new("plan")
        .about("Plan a trace (without FILE: a built-in ResNet-50 trace)")
        .before_help(PLAN_ABOUT)
        .help_template(COMMAND_HELP)
        .after_help(PLAN_AFTER_HELP)
        // `--node-limit -5` is a bad value, not an unknown option.
        .allow_negative_numbers(true)
        .arg(Arg::new("input").value_name("FILE.csv|-").help("The trace to plan ('-': standard input)"))
        .arg(
            Arg::new("algorithm")
                .long("algorithm")
                .value_name("NAME")
                .default_value(Algorithm::Auto.name())
                .value_parser(|s: &str| Algorithm::from_name(s).map_err(|e| e.message().to_string()))
                .help(algorithms),
        )
        .arg(alignment_option("1", "Alignment of sizes and offsets, a power of two"))
        .arg(
            Arg::new("capacity")
                .long("capacity")
                .value_name("BYTES")
                .value_parser(|s: &str| whole(s, "a whole number of bytes", u64::MAX))
                .help(
                    "Fail (exit 3) when the plan needs more than BYTES; at once\n\
                     when BYTES is below the lower bound; exact and auto stop\n\
                     at the first plan that fits",
                ),
        )
        .arg(
            Arg::new("work-limit")
                .long("work-limit")
                .value_name("UNITS")
                .value_parser(|s: &str| whole(s, "a non-negative integer", u64::MAX))
                .help(format!(
                    "Work budget of auto and exact, counted (not timed), so the\n\
                     same plan on any machine (default {DEFAULT_WORK_LIMIT}, 1 to 2 s\n\
                     on a 2-core VM, small or large instance; 0: no cap)"
                )),
        )
        .arg(
            Arg::new("node-limit")
                .long("node-limit")
                .value_name("N")
                .value_parser(|s: &str| whole(s, "a non-negative integer", u64::MAX))
                .help("At most N search nodes (same plan on any machine)"),
        )
        .arg(
            Arg::new("time-limit")
                .long("time-limit")
                .value_name("SECONDS")
                .value_parser(|s: &str| {
                    let seconds = number::<f64>(s, "a number of seconds")?;
                    if seconds.is_finite() && seconds > 0.0 {
                        Ok(seconds)
                    } else {
                        Err(format!("{seconds} is not a positive number of seconds"))
                    }
                })
                .help(
                    "An explicit wall-clock cap (default: none); the summary\n\
                     says when it cut the search (the plan may then differ\n\
                     between machines)",
                ),
        )
        .arg(path_option("output", "FILE", "Write the plan CSV to FILE instead of standard output"))
        .arg(path_option("json", "FILE", "Write the summary as JSON to FILE"))
        .arg(path_option("svg", "FILE", "Draw the plan as SVG (steps across, addresses up)"))
        .arg(Arg::new("picture").long("picture").value_name("FILE").num_args(0..=1).require_equals(true).help(
            "A TFLite-Micro-style text picture of the plan: to FILE, or\n\
                     without FILE to standard output when nothing else goes\n\
                     there, else to standard error",
        ))
        .arg(Arg::new("trust-fixed").long("trust-fixed").action(ArgAction::SetTrue).help(
            "Fixed buffers may overlap each other (an offline plan that\n\
                 shares memory on purpose): plan around all of them and\n\
                 report the overlaps (tflm always does)",
        ))
}

fn validate_command() -> clap::Command {
    clap::Command::new("validate")
        .about("Check a plan (CSV with an offset column)")
        .before_help(VALIDATE_ABOUT)
        .help_template(COMMAND_HELP)
        .after_help(VALIDATE_AFTER_HELP)
        .arg(Arg::new("input").value_name("FILE.csv|-").required(true).help("The plan to check ('-': standard input)"))
        .arg(path_option(
            "fixed-from",
            "INPUT.csv",
            "The trace the plan was made from: rows with an offset there\n\
             are the fixed buffers (matched by id; they must keep that\n\
             offset); overlaps among them are reported",
        ))
        .arg(Arg::new("trust-fixed").long("trust-fixed").action(ArgAction::SetTrue).help(
            "Overlaps among those fixed buffers do not make the plan\n\
             invalid (needs --fixed-from)",
        ))
}

fn pool_replay_command() -> clap::Command {
    let names: Vec<&str> = StrategyKind::ALL.iter().map(|k| k.name()).collect();
    clap::Command::new("pool-replay")
        .about("Replay a trace's allocations through every pool strategy")
        .before_help(POOL_REPLAY_ABOUT)
        .help_template(COMMAND_HELP)
        .after_help(POOL_REPLAY_AFTER_HELP)
        // `--iterations -1` is a bad value, not an unknown option.
        .allow_negative_numbers(true)
        .arg(Arg::new("input").value_name("FILE.csv|-").required(true).help("The trace ('-': standard input)"))
        .arg(
            Arg::new("iterations")
                .long("iterations")
                .value_name("N")
                .default_value("3")
                .value_parser(|s: &str| {
                    let what = "a positive whole number of iterations";
                    match whole(s, what, u32::MAX.into())? {
                        0 => Err(format!("'{s}' is not {what}")),
                        n => Ok(u32::try_from(n).expect("at most u32::MAX")),
                    }
                })
                .help("Times the trace runs through each pool"),
        )
        .arg(
            Arg::new("strategy")
                .long("strategy")
                .value_name("NAME")
                .action(ArgAction::Append)
                .value_parser(|s: &str| StrategyKind::from_name(s).map_err(|e| e.message().to_string()))
                .help(format!(
                    "A strategy to replay through (repeatable; default: all of\n{}; RAF's page_unit_pool and \
                     no_pool name page-unit and no-pool)",
                    names.join(", ")
                )),
        )
        .arg(alignment_option("256", "Alignment of every allocation, a power of two (256: CUDA's)"))
        .arg(
            Arg::new("device")
                .long("device")
                .value_name("NAME")
                .default_value("host")
                .value_parser(|s: &str| match s {
                    "host" => Ok(ReplayDevice::Host),
                    "virtual" => Ok(ReplayDevice::Virtual),
                    _ => Err(format!("unknown device '{s}' (known: host, virtual)")),
                })
                .help("Where the pools' memory comes from: host or virtual"),
        )
        .arg(
            Arg::new("json")
                .long("json")
                .action(ArgAction::SetTrue)
                .help("Print a JSON array, one object per strategy"),
        )
}

/// `--alignment N`: a power of two.
fn alignment_option(default: &'static str, help: &'static str) -> Arg {
    Arg::new("alignment")
        .long("alignment")
        .value_name("N")
        .default_value(default)
        .value_parser(|s: &str| {
            // The largest power of two in 64 bits.
            let n = whole(s, "a power of two", 1 << 63)?;
            check_alignment(n).map(|()| n).map_err(|e| e.message().to_string())
        })
        .help(help)
}

/// An option that takes a path (`-` for standard output or input).
fn path_option(name: &'static str, value_name: &'static str, help: &'static str) -> Arg {
    Arg::new(name).long(name).value_name(value_name).help(help)
}

/// A parsed number, or an error naming the value and what it should be.
fn number<T: std::str::FromStr>(value: &str, what: &str) -> Result<T, String> {
    value.parse().map_err(|_| format!("'{value}' is not {what}"))
}

/// A whole number up to `max`: digits past `max` are "too large" with the
/// limit, anything else (a sign, a fraction) is not `what`.
fn whole(value: &str, what: &str, max: u64) -> Result<u64, String> {
    let digits = value.strip_prefix('+').unwrap_or(value);
    let too_large = || format!("'{value}' is too large (at most {max})");
    match digits.parse::<u64>() {
        Ok(n) if n > max => Err(too_large()),
        Ok(n) => Ok(n),
        Err(_) if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) => Err(too_large()),
        Err(_) => Err(format!("'{value}' is not {what}")),
    }
}

/// What to do.
#[derive(Debug, PartialEq)]
pub enum Command {
    /// Print this text (help or version) on standard output and exit 0.
    Print(String),
    Plan(PlanArgs),
    Validate(ValidateArgs),
    PoolReplay(PoolReplayArgs),
    Regions(RegionsArgs),
}

/// Options of `nnmem regions`.
#[derive(Debug, PartialEq)]
pub struct RegionsArgs {
    pub input: String,
    /// The TOML configuration; `None`: Glow's defaults.
    pub config: Option<String>,
    pub json: Option<Dest>,
    pub svg: Option<Dest>,
}

/// The device `nnmem pool-replay` gives its pools.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ReplayDevice {
    /// The system allocator.
    Host,
    /// Addresses without memory.
    Virtual,
}

/// Options of `nnmem pool-replay`.
#[derive(Debug, PartialEq)]
pub struct PoolReplayArgs {
    pub input: String,
    pub iterations: u32,
    /// In the order given, each once; every built-in when none was given.
    pub strategies: Vec<StrategyKind>,
    pub alignment: u64,
    pub device: ReplayDevice,
    pub json: bool,
}

/// Options of `nnmem validate`.
#[derive(Debug, PartialEq)]
pub struct ValidateArgs {
    pub input: String,
    /// The trace the plan was made from: its rows with an offset are fixed.
    pub fixed_from: Option<String>,
    /// Overlaps among fixed buffers are reported, not an error.
    pub trust_fixed: bool,
}

/// A usage error: the message, and the usage line of the command it is
/// about with where to read more.
#[derive(Debug, PartialEq)]
pub struct Usage {
    pub message: String,
    pub usage: String,
}

impl Usage {
    /// `command`: a name from [`COMMANDS`], or `None` for `nnmem` itself.
    fn new(cli: &mut clap::Command, command: Option<&str>, message: String) -> Usage {
        // Subcommands know their full name ("nnmem plan") once built.
        cli.build();
        let (line, more) = match command.and_then(|name| cli.find_subcommand_mut(name)) {
            Some(sub) => (sub.render_usage(), format!("nnmem help {}", sub.get_name())),
            None => (cli.render_usage(), "nnmem --help".to_string()),
        };
        Usage { message, usage: format!("{line}\n\nFor more information, try '{more}'.") }
    }
}

/// Where an output goes.
#[derive(Clone, Debug, PartialEq)]
pub enum Dest {
    Stdout,
    File(String),
}

impl Dest {
    fn new(path: &str) -> Dest {
        if path == "-" {
            Dest::Stdout
        } else {
            Dest::File(path.to_string())
        }
    }
}

/// Options of `nnmem plan`.
#[derive(Debug, PartialEq)]
pub struct PlanArgs {
    pub input: Option<String>,
    pub algorithm: Algorithm,
    pub alignment: u64,
    pub capacity: Option<u64>,
    pub time_limit: Option<f64>,
    pub node_limit: Option<u64>,
    /// `Some(0)`: no cap; `None`: the default.
    pub work_limit: Option<u64>,
    /// The plan CSV; `None`: not written (built-in trace without --output).
    pub output: Option<Dest>,
    pub json: Option<Dest>,
    pub svg: Option<Dest>,
    /// The picture; a bare `--picture` is resolved to stdout or stderr.
    pub picture: Option<PictureDest>,
    /// The text summary goes to stdout (else stderr).
    pub summary_on_stdout: bool,
    /// Fixed buffers may overlap each other (reported, not an error).
    pub trust_fixed: bool,
}

/// Where `--picture` writes.
#[derive(Clone, Debug, PartialEq)]
pub enum PictureDest {
    To(Dest),
    Stderr,
}

/// Parses the arguments after the program name.
pub fn parse(argv: &[String]) -> Result<Command, Usage> {
    let mut cli = cli();
    // clap's `help` takes command names only: `nnmem help --help` asks for
    // help too, and `nnmem help plan -h` for plan's.
    let argv: Vec<&str> = match argv.split_first() {
        Some((first, rest)) if first == "help" => std::iter::once("help")
            .chain(rest.iter().map(String::as_str).filter(|a| !matches!(*a, "-h" | "--help")))
            .collect(),
        _ => argv.iter().map(String::as_str).collect(),
    };
    let command = argv.first().copied().filter(|a| COMMANDS.contains(a));
    // clap would read `help plan validate` as plan's subcommand validate.
    if let ["help", _, extra, ..] = argv[..] {
        return Err(Usage::new(&mut cli, None, format!("help takes one COMMAND, got also '{extra}'")));
    }
    let matches = match cli.try_get_matches_from_mut(std::iter::once("nnmem").chain(argv.iter().copied())) {
        Ok(m) => m,
        Err(e) if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) => {
            return Ok(Command::Print(e.render().to_string()))
        }
        Err(e) => {
            let message = describe(&e, command);
            return Err(Usage::new(&mut cli, command, message));
        }
    };
    let parsed = match matches.subcommand() {
        Some(("plan", m)) => plan_args(m).map(Command::Plan),
        Some(("validate", m)) => validate_args(m).map(Command::Validate),
        Some(("pool-replay", m)) => Ok(Command::PoolReplay(pool_replay_args(m))),
        Some(("regions", m)) => regions_args(m).map(Command::Regions),
        _ => return Ok(Command::Print(cli.render_help().to_string())),
    };
    parsed.map_err(|message| Usage::new(&mut cli, command, message))
}

/// A clap error in the tool's words: what was wrong, naming the option and
/// the value.
fn describe(e: &clap::Error, command: Option<&str>) -> String {
    let context = |kind| match e.get(kind) {
        Some(ContextValue::String(s)) => s.clone(),
        Some(ContextValue::Strings(s)) => s.join(" and "),
        _ => String::new(),
    };
    // clap names an option with its value: "--alignment <N>".
    let arg = context(ContextKind::InvalidArg);
    let option = arg.split([' ', '=']).next().unwrap_or_default();
    let command = command.unwrap_or("nnmem");
    match e.kind() {
        ErrorKind::ValueValidation => match std::error::Error::source(e) {
            Some(why) => format!("{option}: {why}"),
            None => format!("{option}: '{}' is not valid", context(ContextKind::InvalidValue)),
        },
        ErrorKind::InvalidValue if context(ContextKind::InvalidValue).is_empty() => {
            format!("{option} needs a value ({})", arg.trim_start_matches(option).trim_matches([' ', '<', '>', '=']))
        }
        ErrorKind::UnknownArgument if arg.starts_with('-') && arg != "-" => format!("unknown option '{option}'"),
        ErrorKind::UnknownArgument => format!("{command} takes one FILE, got also '{arg}'"),
        ErrorKind::InvalidSubcommand => {
            let known: Vec<&str> = COMMANDS.iter().copied().chain(["help"]).collect();
            format!("unknown command '{}' (commands: {})", context(ContextKind::InvalidSubcommand), known.join(", "))
        }
        ErrorKind::MissingRequiredArgument => format!("{command} needs {arg}"),
        ErrorKind::TooManyValues => format!("{option} takes no value, got '{}'", context(ContextKind::InvalidValue)),
        // Any other kind: clap's own sentence, without its "error: " and usage.
        _ => {
            let text = e.render().to_string();
            let text = text.strip_prefix("error: ").unwrap_or(&text);
            text.split("\n\n").next().unwrap_or_default().to_string()
        }
    }
}

fn pool_replay_args(m: &ArgMatches) -> PoolReplayArgs {
    let mut strategies: Vec<StrategyKind> = Vec::new();
    for &k in m.get_many::<StrategyKind>("strategy").into_iter().flatten() {
        if !strategies.contains(&k) {
            strategies.push(k);
        }
    }
    if strategies.is_empty() {
        strategies = StrategyKind::ALL.to_vec();
    }
    PoolReplayArgs {
        input: m.get_one::<String>("input").cloned().unwrap_or_default(),
        iterations: m.get_one::<u32>("iterations").copied().unwrap_or(3),
        strategies,
        alignment: m.get_one::<u64>("alignment").copied().unwrap_or(256),
        device: m.get_one::<ReplayDevice>("device").copied().unwrap_or(ReplayDevice::Host),
        json: m.get_flag("json"),
    }
}

fn regions_args(m: &ArgMatches) -> Result<RegionsArgs, String> {
    let dest = |id: &str| m.get_one::<String>(id).map(|p| Dest::new(p));
    let a = RegionsArgs {
        input: m.get_one::<String>("input").cloned().unwrap_or_default(),
        config: m.get_one::<String>("config").cloned(),
        json: dest("json"),
        svg: dest("svg"),
    };
    if a.json == Some(Dest::Stdout) && a.svg == Some(Dest::Stdout) {
        return Err("--json and --svg would both go to standard output".into());
    }
    Ok(a)
}

fn validate_args(m: &ArgMatches) -> Result<ValidateArgs, String> {
    let a = ValidateArgs {
        input: m.get_one::<String>("input").cloned().unwrap_or_default(),
        fixed_from: m.get_one::<String>("fixed-from").cloned(),
        trust_fixed: m.get_flag("trust-fixed"),
    };
    if a.trust_fixed && a.fixed_from.is_none() {
        return Err("--trust-fixed needs --fixed-from INPUT.csv (which buffers are fixed)".into());
    }
    Ok(a)
}

fn plan_args(m: &ArgMatches) -> Result<PlanArgs, String> {
    let dest = |id: &str| m.get_one::<String>(id).map(|p| Dest::new(p));
    let picture = dest("picture");
    let bare_picture = picture.is_none() && m.value_source("picture").is_some();
    let mut a = PlanArgs {
        input: m.get_one::<String>("input").cloned(),
        algorithm: m.get_one::<Algorithm>("algorithm").copied().unwrap_or(Algorithm::Auto),
        alignment: m.get_one::<u64>("alignment").copied().unwrap_or(1),
        capacity: m.get_one::<u64>("capacity").copied(),
        time_limit: m.get_one::<f64>("time-limit").copied(),
        node_limit: m.get_one::<u64>("node-limit").copied(),
        work_limit: m.get_one::<u64>("work-limit").copied(),
        output: dest("output"),
        json: dest("json"),
        svg: dest("svg"),
        picture: picture.map(PictureDest::To),
        summary_on_stdout: false,
        trust_fixed: m.get_flag("trust-fixed"),
    };
    resolve_streams(&mut a, bare_picture)?;
    Ok(a)
}

/// Standard output carries one format at most: the plan CSV by default
/// (when a file is planned and --output is not given), else whatever asks
/// for it with `-`; a bare --picture and the summary take it only when free.
fn resolve_streams(a: &mut PlanArgs, bare_picture: bool) -> Result<(), String> {
    if a.output.is_none() && a.input.is_some() {
        a.output = Some(Dest::Stdout);
    }
    let picture = match &a.picture {
        Some(PictureDest::To(d)) => Some(d),
        _ => None,
    };
    let claims: Vec<&str> = [
        ("the plan CSV", a.output.as_ref()),
        ("--json", a.json.as_ref()),
        ("--svg", a.svg.as_ref()),
        ("--picture", picture),
    ]
    .into_iter()
    .filter(|(_, d)| *d == Some(&Dest::Stdout))
    .map(|(name, _)| name)
    .collect();
    if let [first, second, ..] = claims[..] {
        let hint = if first == "the plan CSV" && a.output == Some(Dest::Stdout) && a.input.is_some() {
            " (write the plan to a file with --output FILE)"
        } else {
            ""
        };
        return Err(format!("{first} and {second} would both go to standard output{hint}"));
    }
    if bare_picture {
        a.picture = Some(if claims.is_empty() { PictureDest::To(Dest::Stdout) } else { PictureDest::Stderr });
    }
    a.summary_on_stdout = a.input.is_none() && claims.is_empty() && !bare_picture;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    fn plan(args: &[&str]) -> PlanArgs {
        match parse(&v(args)) {
            Ok(Command::Plan(a)) => a,
            other => panic!("not a plan command: {other:?}"),
        }
    }

    fn help(args: &[&str]) -> String {
        match parse(&v(args)) {
            Ok(Command::Print(text)) => text,
            other => panic!("{args:?}: no help: {other:?}"),
        }
    }

    fn usage_error(args: &[&str]) -> Usage {
        parse(&v(args)).expect_err("a usage error")
    }

    #[test]
    fn the_command_line_is_consistent() {
        // clap's own checks: no duplicate names, defaults that parse, ...
        cli().debug_assert();
    }

    #[test]
    fn parses_plan_options() {
        let a = plan(&["plan", "x.csv", "--algorithm", "tflm", "--alignment", "16", "--capacity=100"]);
        assert_eq!(a.input.as_deref(), Some("x.csv"));
        assert_eq!((a.algorithm, a.alignment, a.capacity), (Algorithm::Tflm, 16, Some(100)));
        let a = plan(&["plan", "--algorithm", "exact", "--time-limit", "2.5", "--node-limit", "1000"]);
        assert_eq!((a.algorithm, a.time_limit, a.node_limit), (Algorithm::Exact, Some(2.5), Some(1000)));
        assert_eq!(plan(&["plan", "--work-limit=0"]).work_limit, Some(0));
        let a = plan(&["plan"]);
        assert_eq!((a.work_limit, a.algorithm, a.alignment, a.input), (None, Algorithm::Auto, 1, None));
        assert_eq!(plan(&["plan", "-"]).input.as_deref(), Some("-"));
    }

    #[test]
    fn every_command_has_its_help() {
        for args in [&["plan", "--help"][..], &["plan", "x.csv", "-h"], &["help", "plan"]] {
            let text = help(args);
            assert!(text.contains("Usage: nnmem plan [OPTIONS] [FILE.csv|-]"), "{args:?}: {text}");
            assert!(text.contains("--algorithm <NAME>") && text.contains("floor-first"), "{args:?}: {text}");
        }
        for args in [&["validate", "--help"][..], &["validate", "-h"], &["help", "validate"]] {
            let text = help(args);
            assert!(text.contains("Usage: nnmem validate [OPTIONS] <FILE.csv|->"), "{args:?}: {text}");
            assert!(text.contains("--fixed-from <INPUT.csv>"), "{args:?}: {text}");
        }
        for args in [&[][..], &["help"], &["--help"], &["-h"]] {
            let text = help(args);
            assert!(text.contains("Usage: nnmem [COMMAND]"), "{args:?}: {text}");
            assert!(text.contains("  plan ") && text.contains("  validate "), "{args:?}: {text}");
        }
        assert_eq!(help(&["--version"]), format!("nnmem {}\n", nnmem::VERSION));
        // `help` asked for its own help: the main text, or the command's.
        assert_eq!(help(&["help", "--help"]), help(&["--help"]));
        assert_eq!(help(&["help", "-h"]), help(&["--help"]));
        assert_eq!(help(&["help", "plan", "--help"]), help(&["plan", "--help"]));
        assert_eq!(usage_error(&["help", "plan", "validate"]).message, "help takes one COMMAND, got also 'validate'");
    }

    #[test]
    fn rejects_bad_usage_with_the_commands_usage() {
        let e = usage_error(&["plan", "--algorithm", "nope"]);
        assert!(e.message.starts_with("--algorithm: unknown algorithm 'nope' (known: auto, "), "{e:?}");
        assert!(e.usage.starts_with("Usage: nnmem plan ") && e.usage.ends_with("try 'nnmem help plan'."), "{e:?}");
        assert_eq!(usage_error(&["plan", "--alignment", "x"]).message, "--alignment: 'x' is not a power of two");
        assert_eq!(
            usage_error(&["plan", "--alignment", "3"]).message,
            "--alignment: alignment 3 is not a power of two"
        );
        assert_eq!(usage_error(&["plan", "--alignment=0"]).message, "--alignment: alignment 0 is not a power of two");
        assert_eq!(
            usage_error(&["plan", "--time-limit", "-1"]).message,
            "--time-limit: -1 is not a positive number of seconds"
        );
        assert_eq!(
            usage_error(&["plan", "--time-limit=inf"]).message,
            "--time-limit: inf is not a positive number of seconds"
        );
        assert_eq!(
            usage_error(&["plan", "--node-limit", "-5"]).message,
            "--node-limit: '-5' is not a non-negative integer"
        );
        assert_eq!(usage_error(&["plan", "--capacity"]).message, "--capacity needs a value (BYTES)");
        // Values past a type's range are too large, with the limit.
        assert_eq!(
            usage_error(&["plan", "--alignment", "99999999999999999999"]).message,
            "--alignment: '99999999999999999999' is too large (at most 9223372036854775808)"
        );
        assert_eq!(
            usage_error(&["plan", "--alignment=9223372036854775809"]).message,
            "--alignment: '9223372036854775809' is too large (at most 9223372036854775808)"
        );
        assert_eq!(plan(&["plan", "--alignment", "9223372036854775808"]).alignment, 1 << 63);
        assert_eq!(
            usage_error(&["plan", "--capacity", "18446744073709551616"]).message,
            "--capacity: '18446744073709551616' is too large (at most 18446744073709551615)"
        );
        assert_eq!(
            usage_error(&["plan", "--capacity", "-1"]).message,
            "--capacity: '-1' is not a whole number of bytes"
        );
        assert_eq!(
            usage_error(&["plan", "--capacity", "1.5"]).message,
            "--capacity: '1.5' is not a whole number of bytes"
        );
        assert_eq!(plan(&["plan", "--capacity", "+7"]).capacity, Some(7));
        assert_eq!(usage_error(&["plan", "a", "b"]).message, "plan takes one FILE, got also 'b'");
        assert_eq!(usage_error(&["plan", "--bogus"]).message, "unknown option '--bogus'");
        assert_eq!(usage_error(&["plan", "--bogus=1"]).message, "unknown option '--bogus'");
        assert_eq!(usage_error(&["plan", "--trust-fixed=yes"]).message, "--trust-fixed takes no value, got 'yes'");
        let e = usage_error(&["frobnicate"]);
        assert_eq!(e.message, "unknown command 'frobnicate' (commands: plan, validate, pool-replay, regions, help)");
        assert!(e.usage.starts_with("Usage: nnmem [COMMAND]") && e.usage.ends_with("try 'nnmem --help'."), "{e:?}");
        assert_eq!(
            usage_error(&["help", "frobnicate"]).message,
            "unknown command 'frobnicate' (commands: plan, validate, pool-replay, regions, help)"
        );
        let e = usage_error(&["validate", "a.csv", "b.csv"]);
        assert_eq!(e.message, "validate takes one FILE, got also 'b.csv'");
        assert!(e.usage.starts_with("Usage: nnmem validate ") && e.usage.ends_with("'nnmem help validate'."), "{e:?}");
        assert_eq!(usage_error(&["validate"]).message, "validate needs <FILE.csv|->");
        assert_eq!(usage_error(&["validate", "--bogus"]).message, "unknown option '--bogus'");
        assert_eq!(
            usage_error(&["validate", "p.csv", "--trust-fixed"]).message,
            "--trust-fixed needs --fixed-from INPUT.csv (which buffers are fixed)"
        );
        assert_eq!(
            usage_error(&["validate", "p.csv", "--fixed-from"]).message,
            "--fixed-from needs a value (INPUT.csv)"
        );
    }

    #[test]
    fn parses_pool_replay_options() {
        let Ok(Command::PoolReplay(a)) = parse(&v(&["pool-replay", "t.csv"])) else { panic!("not pool-replay") };
        let all = StrategyKind::ALL.to_vec();
        assert_eq!(
            a,
            PoolReplayArgs {
                input: "t.csv".into(),
                iterations: 3,
                strategies: all,
                alignment: 256,
                device: ReplayDevice::Host,
                json: false
            }
        );
        for (value, why) in [
            ("-1", "'-1' is not a positive whole number of iterations"),
            ("0", "'0' is not a positive whole number of iterations"),
            ("2.5", "'2.5' is not a positive whole number of iterations"),
            ("4294967296", "'4294967296' is too large (at most 4294967295)"),
        ] {
            let e = usage_error(&["pool-replay", "t.csv", "--iterations", value]);
            assert_eq!(e.message, format!("--iterations: {why}"));
            assert!(e.usage.starts_with("Usage: nnmem pool-replay "), "{e:?}");
        }
        assert_eq!(
            usage_error(&["pool-replay", "t.csv", "--alignment", "99999999999999999999"]).message,
            "--alignment: '99999999999999999999' is too large (at most 9223372036854775808)"
        );
        let args = ["pool-replay", "-", "--iterations=7", "--strategy", "replay", "--json", "--device", "virtual"];
        let Ok(Command::PoolReplay(a)) = parse(&v(&args)) else { panic!("not pool-replay") };
        assert_eq!(
            (a.iterations, a.strategies, a.json, a.device, a.input.as_str()),
            (7, vec![StrategyKind::Replay], true, ReplayDevice::Virtual, "-")
        );
    }

    #[test]
    fn parses_regions_options() {
        let Ok(Command::Regions(a)) = parse(&v(&["regions", "m.csv"])) else { panic!("not regions") };
        assert_eq!(a, RegionsArgs { input: "m.csv".into(), config: None, json: None, svg: None });
        let args = ["regions", "--config", "r.toml", "-", "--json", "-", "--svg=p.svg"];
        let Ok(Command::Regions(a)) = parse(&v(&args)) else { panic!("not regions") };
        assert_eq!(
            a,
            RegionsArgs {
                input: "-".into(),
                config: Some("r.toml".into()),
                json: Some(Dest::Stdout),
                svg: Some(Dest::File("p.svg".into()))
            }
        );
        assert_eq!(usage_error(&["regions"]).message, "regions needs <MODEL.csv|->");
        assert_eq!(usage_error(&["regions", "a.csv", "b.csv"]).message, "regions takes one FILE, got also 'b.csv'");
        assert_eq!(usage_error(&["regions", "a.csv", "--config"]).message, "--config needs a value (FILE.toml)");
        let e = usage_error(&["regions", "a.csv", "--json", "-", "--svg", "-"]);
        assert_eq!(e.message, "--json and --svg would both go to standard output");
        assert!(e.usage.starts_with("Usage: nnmem regions ") && e.usage.ends_with("'nnmem help regions'."), "{e:?}");
        let text = help(&["help", "regions"]);
        assert!(text.contains("Usage: nnmem regions [OPTIONS] <MODEL.csv|->") && text.contains("--config <FILE.toml>"));
    }

    #[test]
    fn parses_trust_fixed_options() {
        assert!(plan(&["plan", "x.csv", "--trust-fixed"]).trust_fixed);
        assert!(!plan(&["plan", "x.csv"]).trust_fixed);
        let Ok(Command::Validate(a)) = parse(&v(&["validate", "p.csv", "--fixed-from", "in.csv", "--trust-fixed"]))
        else {
            panic!("not a validate command")
        };
        assert_eq!(a, ValidateArgs { input: "p.csv".into(), fixed_from: Some("in.csv".into()), trust_fixed: true });
        let Ok(Command::Validate(a)) = parse(&v(&["validate", "--fixed-from=in.csv", "-"])) else {
            panic!("not a validate command")
        };
        assert_eq!(a, ValidateArgs { input: "-".into(), fixed_from: Some("in.csv".into()), trust_fixed: false });
    }

    #[test]
    fn standard_output_carries_one_format() {
        // A file's plan CSV owns stdout; a bare --picture then goes to stderr.
        let a = plan(&["plan", "x.csv", "--picture"]);
        assert_eq!((a.output, a.picture, a.summary_on_stdout), (Some(Dest::Stdout), Some(PictureDest::Stderr), false));
        // With the CSV in a file, stdout is free for the picture.
        let a = plan(&["plan", "x.csv", "--picture", "--output", "p.csv"]);
        assert_eq!(a.picture, Some(PictureDest::To(Dest::Stdout)));
        // A bare --picture takes no value from the next argument: that is the FILE.
        let a = plan(&["plan", "--picture", "x.csv"]);
        assert_eq!((a.input.as_deref(), a.picture), (Some("x.csv"), Some(PictureDest::Stderr)));
        let a = plan(&["plan", "x.csv", "--output", "p.csv", "--json", "-"]);
        assert_eq!((a.json, a.picture), (Some(Dest::Stdout), None));
        let a = plan(&["plan", "--picture=pic.txt"]);
        assert_eq!(
            (a.picture, a.output, a.summary_on_stdout),
            (Some(PictureDest::To(Dest::File("pic.txt".into()))), None, true)
        );
        let e = usage_error(&["plan", "x.csv", "--json", "-"]);
        assert_eq!(
            e.message,
            "the plan CSV and --json would both go to standard output (write the plan to a file with --output FILE)"
        );
        assert!(e.usage.starts_with("Usage: nnmem plan "), "{e:?}");
        assert!(usage_error(&["plan", "--svg", "-", "--picture=-"])
            .message
            .starts_with("--svg and --picture would both"));
    }
}
