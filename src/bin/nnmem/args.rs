//! Command-line parsing for `nnmem`. Hand-written, not a parser crate: the
//! CLI is built from the library's package, and a dependency here would be
//! one of the library's too.

use nnmem::plan::{check_alignment, Algorithm};

pub const MAIN_USAGE: &str = "\
usage:
  nnmem plan [FILE.csv|-] [options]   plan a trace (without FILE: a built-in ResNet-50 trace)
  nnmem validate FILE.csv|- [options] check a plan (CSV with an offset column)
  nnmem help [plan|validate]          this text, or a subcommand's (also: nnmem plan --help)
  nnmem --version

Exit status: 0 ok, 1 bad input or invalid plan, 2 usage error, 3 does not fit.
";

pub const PLAN_USAGE: &str = "\
usage: nnmem plan [FILE.csv|-] [options]

Plans a trace: every buffer gets an offset so that buffers live at the same
step never share a byte. FILE '-' is standard input; without FILE a built-in
ResNet-50 training trace (1042 buffers) is planned and only summarised.

options (VALUE may also be given as --option=VALUE):
  --algorithm NAME     auto (default), tflm, linear, size-first-fit, size-best-fit,
                       lifetime-first-fit, live-step, conflict, floor-first, exact
  --alignment N        alignment of sizes and offsets, a power of two (default 1)
  --capacity BYTES     fail (exit 3) when the plan needs more than BYTES; at once
                       when BYTES is below the lower bound; exact and auto stop
                       at the first plan that fits
  --work-limit UNITS   work budget of auto and exact, counted (not timed), so the
                       same plan on any machine (default 130000000, about 1 s
                       on the largest shipped traces; 0: no cap)
  --node-limit N       at most N search nodes (same plan on any machine)
  --time-limit SECONDS an explicit wall-clock cap (default: none); the summary
                       says when it cut the search (the plan may then differ
                       between machines)
  --output FILE        write the plan CSV to FILE instead of standard output
  --json FILE          write the summary as JSON to FILE
  --svg FILE           draw the plan as SVG (steps across, addresses up)
  --picture[=FILE]     a TFLite-Micro-style text picture of the plan: to FILE, or
                       without FILE to standard output when nothing else goes
                       there, else to standard error
  --trust-fixed        fixed buffers may overlap each other (an offline plan that
                       shares memory on purpose): plan around all of them and
                       report the overlaps (tflm always does)
  -h, --help           this text

Outputs: FILE '-' is standard output, which carries at most one of them.
The plan CSV (id,lower,upper,size,offset in input order) goes to standard
output unless --output is given; the text summary goes to standard error
(to standard output for the built-in trace when nothing else goes there).

CSV input: header id,lower,upper,size[,offset]; one buffer per row; ids are
unique; lifetimes are half-open [lower, upper) with 0 <= lower < upper; an
empty offset cell is planned, a number is kept fixed. Errors name the file
and the line.
Exit status: 0 ok, 1 bad input, 2 usage error, 3 does not fit.
";

pub const VALIDATE_USAGE: &str = "\
usage: nnmem validate FILE.csv|- [--fixed-from INPUT.csv [--trust-fixed]]

Checks a plan: a CSV id,lower,upper,size,offset (as nnmem plan writes it)
in which no two buffers live at the same step share a byte. Prints the peak
and the lower bound; an invalid plan names the first overlapping pair (ids
and lines) and the step. FILE '-' is standard input.

options (VALUE may also be given as --option=VALUE):
  --fixed-from INPUT.csv  the trace the plan was made from: rows with an offset
                       there are the fixed buffers (matched by id; they must
                       keep that offset); overlaps among them are reported
  --trust-fixed        overlaps among those fixed buffers do not make the plan
                       invalid (needs --fixed-from)
  -h, --help           this text

Exit status: 0 valid, 1 bad input or invalid plan, 2 usage error.
";

/// What to do.
#[derive(Debug, PartialEq)]
pub enum Command {
    /// Print a help text on stdout.
    Help(&'static str),
    Version,
    Plan(PlanArgs),
    Validate(ValidateArgs),
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

/// A usage error: the message and the usage text of the command it is about.
#[derive(Debug, PartialEq)]
pub struct Usage {
    pub message: String,
    pub usage: &'static str,
}

/// Where an output goes.
#[derive(Clone, Debug, PartialEq)]
pub enum Dest {
    Stdout,
    File(String),
}

impl Dest {
    fn new(path: String) -> Dest {
        if path == "-" {
            Dest::Stdout
        } else {
            Dest::File(path)
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

pub fn parse(argv: &[String]) -> Result<Command, Usage> {
    let usage = |message: String| Usage { message, usage: MAIN_USAGE };
    let Some(first) = argv.first() else { return Ok(Command::Help(MAIN_USAGE)) };
    let help_of = |name: &str| match name {
        "plan" => Some(PLAN_USAGE),
        "validate" => Some(VALIDATE_USAGE),
        _ => None,
    };
    match first.as_str() {
        "help" | "--help" | "-h" => match &argv[1..] {
            [] => Ok(Command::Help(MAIN_USAGE)),
            [name] => {
                help_of(name).map(Command::Help).ok_or_else(|| usage(format!("no help on '{name}': not a command")))
            }
            [_, extra, ..] => Err(usage(format!("help takes one command name, got also '{extra}'"))),
        },
        "--version" | "-V" => match argv.get(1) {
            None => Ok(Command::Version),
            Some(extra) => Err(usage(format!("--version takes no argument, got '{extra}'"))),
        },
        "validate" => parse_validate(&argv[1..]),
        "plan" => parse_plan(&argv[1..]),
        other => Err(usage(format!("unknown command '{other}'"))),
    }
}

fn parse_validate(argv: &[String]) -> Result<Command, Usage> {
    let usage = |message: String| Usage { message, usage: VALIDATE_USAGE };
    let mut a = ValidateArgs { input: String::new(), fixed_from: None, trust_fixed: false };
    let mut input = None;
    let mut it = argv.iter();
    while let Some(arg) = it.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (arg.as_str(), None),
        };
        match flag {
            "-h" | "--help" => return Ok(Command::Help(VALIDATE_USAGE)),
            "--fixed-from" => {
                let path =
                    inline.or_else(|| it.next().cloned()).ok_or_else(|| usage("--fixed-from needs a path".into()))?;
                a.fixed_from = Some(path);
            }
            "--trust-fixed" if inline.is_none() => a.trust_fixed = true,
            _ if inline.is_some() => return Err(usage(format!("unknown option '{flag}'"))),
            flag if flag.starts_with('-') && flag != "-" => return Err(usage(format!("unknown option '{flag}'"))),
            path => match &input {
                None => input = Some(path.to_string()),
                Some(_) => return Err(usage(format!("validate takes one FILE, got also '{path}'"))),
            },
        }
    }
    a.input = input.ok_or_else(|| usage("validate needs a FILE (or - for standard input)".into()))?;
    if a.trust_fixed && a.fixed_from.is_none() {
        return Err(usage("--trust-fixed needs --fixed-from INPUT.csv (which buffers are fixed)".into()));
    }
    Ok(Command::Validate(a))
}

/// A parsed number, or a usage error naming the option and the value.
fn number<T: std::str::FromStr>(flag: &str, value: &str, what: &str) -> Result<T, String> {
    value.parse().map_err(|_| format!("{flag}: '{value}' is not {what}"))
}

fn parse_plan(argv: &[String]) -> Result<Command, Usage> {
    match parse_plan_options(argv) {
        Ok(Some(a)) => Ok(Command::Plan(a)),
        Ok(None) => Ok(Command::Help(PLAN_USAGE)),
        Err(message) => Err(Usage { message, usage: PLAN_USAGE }),
    }
}

/// `Ok(None)`: help was asked for.
fn parse_plan_options(argv: &[String]) -> Result<Option<PlanArgs>, String> {
    let mut a = PlanArgs {
        input: None,
        algorithm: Algorithm::Auto,
        alignment: 1,
        capacity: None,
        time_limit: None,
        node_limit: None,
        work_limit: None,
        output: None,
        json: None,
        svg: None,
        picture: None,
        summary_on_stdout: false,
        trust_fixed: false,
    };
    let mut bare_picture = false;
    let mut it = argv.iter();
    while let Some(arg) = it.next() {
        // `--option=VALUE` or `--option VALUE`.
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (arg.as_str(), None),
        };
        let mut value = |what: &str| -> Result<String, String> {
            match inline.clone() {
                Some(v) => Ok(v),
                None => it.next().cloned().ok_or_else(|| format!("{flag} needs {what}")),
            }
        };
        match flag {
            "-h" | "--help" => return Ok(None),
            "--algorithm" => {
                let name = value("an algorithm name")?;
                a.algorithm = Algorithm::from_name(&name).map_err(|e| format!("--algorithm: {}", e.message()))?;
            }
            "--alignment" => {
                a.alignment = number(flag, &value("a power of two")?, "a power of two")?;
                check_alignment(a.alignment).map_err(|e| format!("--alignment: {}", e.message()))?;
            }
            "--capacity" => a.capacity = Some(number(flag, &value("a number of bytes")?, "a number of bytes")?),
            "--time-limit" => {
                let s: f64 = number(flag, &value("a number of seconds")?, "a number of seconds")?;
                if !(s.is_finite() && s > 0.0) {
                    return Err(format!("--time-limit: {s} is not a positive number of seconds"));
                }
                a.time_limit = Some(s);
            }
            "--work-limit" => a.work_limit = Some(number(flag, &value("a number")?, "a non-negative integer")?),
            "--node-limit" => a.node_limit = Some(number(flag, &value("a number")?, "a non-negative integer")?),
            "--output" => a.output = Some(Dest::new(value("a path")?)),
            "--json" => a.json = Some(Dest::new(value("a path")?)),
            "--svg" => a.svg = Some(Dest::new(value("a path")?)),
            "--trust-fixed" if inline.is_none() => a.trust_fixed = true,
            "--picture" => match inline {
                Some(path) => a.picture = Some(PictureDest::To(Dest::new(path))),
                None => bare_picture = true,
            },
            _ if inline.is_some() => return Err(format!("unknown option '{flag}'")),
            flag if flag.starts_with('-') && flag != "-" => return Err(format!("unknown option '{flag}'")),
            path => {
                if let Some(first) = &a.input {
                    return Err(format!("plan takes one input FILE, got '{first}' and '{path}'"));
                }
                a.input = Some(path.to_string());
            }
        }
    }
    resolve_streams(&mut a, bare_picture)?;
    Ok(Some(a))
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

    fn usage_error(args: &[&str]) -> Usage {
        parse(&v(args)).expect_err("a usage error")
    }

    #[test]
    fn parses_plan_options() {
        let a = plan(&["plan", "x.csv", "--algorithm", "tflm", "--alignment", "16", "--capacity=100"]);
        assert_eq!(a.input.as_deref(), Some("x.csv"));
        assert_eq!((a.algorithm, a.alignment, a.capacity), (Algorithm::Tflm, 16, Some(100)));
        let a = plan(&["plan", "--algorithm", "exact", "--time-limit", "2.5", "--node-limit", "1000"]);
        assert_eq!((a.algorithm, a.time_limit, a.node_limit), (Algorithm::Exact, Some(2.5), Some(1000)));
        assert_eq!(plan(&["plan", "--work-limit=0"]).work_limit, Some(0));
        assert_eq!(plan(&["plan"]).work_limit, None);
    }

    #[test]
    fn every_command_has_its_help() {
        for args in [&["plan", "--help"][..], &["plan", "x.csv", "-h"], &["help", "plan"]] {
            assert_eq!(parse(&v(args)).unwrap(), Command::Help(PLAN_USAGE), "{args:?}");
        }
        for args in [&["validate", "--help"][..], &["validate", "-h"], &["help", "validate"]] {
            assert_eq!(parse(&v(args)).unwrap(), Command::Help(VALIDATE_USAGE), "{args:?}");
        }
        for args in [&[][..], &["help"], &["--help"], &["-h"]] {
            assert_eq!(parse(&v(args)).unwrap(), Command::Help(MAIN_USAGE), "{args:?}");
        }
    }

    #[test]
    fn rejects_bad_usage_with_the_commands_usage() {
        let e = usage_error(&["plan", "--algorithm", "nope"]);
        assert!(e.message.contains("unknown algorithm 'nope'") && e.usage == PLAN_USAGE, "{e:?}");
        assert_eq!(usage_error(&["plan", "--alignment", "x"]).message, "--alignment: 'x' is not a power of two");
        assert!(usage_error(&["plan", "--alignment", "3"]).message.contains("alignment 3 is not a power of two"));
        assert!(usage_error(&["plan", "--alignment=0"]).message.contains("alignment 0 is not a power of two"));
        assert!(usage_error(&["plan", "--time-limit", "-1"]).message.contains("not a positive number of seconds"));
        assert_eq!(
            usage_error(&["plan", "--node-limit", "-5"]).message,
            "--node-limit: '-5' is not a non-negative integer"
        );
        assert_eq!(usage_error(&["plan", "--capacity"]).message, "--capacity needs a number of bytes");
        assert_eq!(usage_error(&["plan", "a", "b"]).message, "plan takes one input FILE, got 'a' and 'b'");
        assert_eq!(usage_error(&["plan", "--bogus"]).message, "unknown option '--bogus'");
        assert_eq!(usage_error(&["plan", "--bogus=1"]).message, "unknown option '--bogus'");
        assert_eq!(usage_error(&["frobnicate"]).usage, MAIN_USAGE);
        assert_eq!(usage_error(&["help", "frobnicate"]).usage, MAIN_USAGE);
        let e = usage_error(&["validate", "a.csv", "b.csv"]);
        assert!(e.message.contains("one FILE") && e.usage == VALIDATE_USAGE, "{e:?}");
        assert_eq!(usage_error(&["validate"]).usage, VALIDATE_USAGE);
        assert_eq!(usage_error(&["validate", "--bogus"]).message, "unknown option '--bogus'");
        assert!(usage_error(&["validate", "p.csv", "--trust-fixed"]).message.contains("needs --fixed-from"));
        assert_eq!(usage_error(&["validate", "p.csv", "--fixed-from"]).message, "--fixed-from needs a path");
    }

    #[test]
    fn parses_trust_fixed_options() {
        assert!(plan(&["plan", "x.csv", "--trust-fixed"]).trust_fixed);
        assert!(!plan(&["plan", "x.csv"]).trust_fixed);
        let Command::Validate(a) =
            parse(&v(&["validate", "p.csv", "--fixed-from", "in.csv", "--trust-fixed"])).unwrap()
        else {
            panic!("not a validate command")
        };
        assert_eq!(a, ValidateArgs { input: "p.csv".into(), fixed_from: Some("in.csv".into()), trust_fixed: true });
        let Command::Validate(a) = parse(&v(&["validate", "--fixed-from=in.csv", "-"])).unwrap() else {
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
        assert!(usage_error(&["plan", "--svg", "-", "--picture=-"])
            .message
            .starts_with("--svg and --picture would both"));
    }
}
