//! Command-line parsing for `nnmem` (no dependency: eight options).

use nnmem::plan::Algorithm;

pub const USAGE: &str = "\
usage:
  nnmem plan [FILE.csv|-] [options]   plan a trace (without FILE: a built-in ResNet-50 trace)
  nnmem validate FILE.csv|- [--fixed-from INPUT.csv] [--trust-fixed]
                                      check a plan (CSV with an offset column)
  nnmem help | --help                 this text
  nnmem --version

plan options:
  --algorithm NAME     auto (default), tflm, linear, size-first-fit, size-best-fit,
                       lifetime-first-fit, live-step, conflict, floor-first, exact
  --alignment N        alignment of sizes and offsets, a power of two (default 1)
  --capacity BYTES     fail (exit 3) when the plan needs more than BYTES; exact and
                       auto then stop at the first plan that fits
  --time-limit SECONDS time budget of searching algorithms: exact, and auto's
                       search when no heuristic reaches the bound (default 1)
  --node-limit N       at most N search nodes (same plan on any machine)
  --output OUT.csv     write the plan there instead of stdout
  --svg OUT.svg        draw the plan (steps across, addresses up)
  --picture            print a TFLite-Micro-style text picture of the plan
  --trust-fixed        fixed buffers may overlap each other (an offline plan that
                       shares memory on purpose): plan around all of them and
                       report the overlaps (tflm always does)

validate options:
  --fixed-from INPUT.csv  the trace the plan was made from: rows with an offset
                       there are the fixed buffers (matched by id; they must keep
                       that offset); overlaps among them are reported
  --trust-fixed        overlaps among those fixed buffers do not make the plan
                       invalid

CSV input: header id,lower,upper,size[,offset]; lifetimes are half-open
[lower, upper); an empty offset cell is planned, a number is kept fixed.
Output: id,lower,upper,size,offset in input order; the report goes to stderr
(to stdout for the built-in example).
Exit status: 0 ok, 1 bad input or invalid plan, 2 usage, 3 does not fit.
";

/// What to do.
#[derive(Debug, PartialEq)]
pub enum Command {
    Help,
    Version,
    Plan(PlanArgs),
    Validate(ValidateArgs),
}

/// Options of `nnmem validate`.
#[derive(Debug, PartialEq)]
pub struct ValidateArgs {
    pub input: String,
    pub fixed_from: Option<String>,
    pub trust_fixed: bool,
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
    pub output: Option<String>,
    pub svg: Option<String>,
    pub picture: bool,
    pub trust_fixed: bool,
}

fn number<T: std::str::FromStr>(flag: &str, value: Option<&String>) -> Result<T, String> {
    let v = value.ok_or_else(|| format!("{flag} needs a value"))?;
    v.parse().map_err(|_| format!("{flag}: '{v}' is not a valid number"))
}

pub fn parse(argv: &[String]) -> Result<Command, String> {
    let Some(first) = argv.first() else { return Ok(Command::Help) };
    match first.as_str() {
        "help" | "--help" | "-h" => Ok(Command::Help),
        "--version" | "-V" => Ok(Command::Version),
        "validate" => parse_validate(&argv[1..]).map(Command::Validate),
        "plan" => parse_plan(&argv[1..]).map(Command::Plan),
        other => Err(format!("unknown command '{other}'")),
    }
}

fn parse_plan(argv: &[String]) -> Result<PlanArgs, String> {
    let mut a = PlanArgs {
        input: None,
        algorithm: Algorithm::Auto,
        alignment: 1,
        capacity: None,
        time_limit: None,
        node_limit: None,
        output: None,
        svg: None,
        picture: false,
        trust_fixed: false,
    };
    let mut it = argv.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--algorithm" => {
                let name = it.next().ok_or("--algorithm needs a value")?;
                a.algorithm = Algorithm::from_name(name).map_err(|e| e.message().to_string())?;
            }
            "--alignment" => a.alignment = number("--alignment", it.next())?,
            "--capacity" => a.capacity = Some(number("--capacity", it.next())?),
            "--time-limit" => {
                let s: f64 = number("--time-limit", it.next())?;
                if !(s.is_finite() && s > 0.0) {
                    return Err(format!("--time-limit: {s} is not a positive number of seconds"));
                }
                a.time_limit = Some(s);
            }
            "--node-limit" => a.node_limit = Some(number("--node-limit", it.next())?),
            "--output" => a.output = Some(it.next().ok_or("--output needs a path")?.clone()),
            "--svg" => a.svg = Some(it.next().ok_or("--svg needs a path")?.clone()),
            "--picture" => a.picture = true,
            "--trust-fixed" => a.trust_fixed = true,
            flag if flag.starts_with("--") => return Err(format!("unknown option '{flag}'")),
            path => {
                if a.input.is_some() {
                    return Err(format!("only one input file, got a second: '{path}'"));
                }
                a.input = Some(path.to_string());
            }
        }
    }
    Ok(a)
}

fn parse_validate(argv: &[String]) -> Result<ValidateArgs, String> {
    let (mut input, mut fixed_from, mut trust_fixed) = (None, None, false);
    let mut it = argv.iter();
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--fixed-from" => fixed_from = Some(it.next().ok_or("--fixed-from needs a path")?.clone()),
            "--trust-fixed" => trust_fixed = true,
            flag if flag.starts_with("--") => return Err(format!("unknown option '{flag}'")),
            path if input.is_none() => input = Some(path.to_string()),
            path => return Err(format!("only one input file, got a second: '{path}'")),
        }
    }
    let input = input.ok_or("validate takes exactly one FILE (or -)")?;
    Ok(ValidateArgs { input, fixed_from, trust_fixed })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn parses_plan_options() {
        let Command::Plan(a) = parse(&v(&["plan", "x.csv", "--algorithm", "tflm", "--alignment", "16", "--capacity", "100"])).unwrap() else {
            panic!("not a plan command")
        };
        assert_eq!(a.input.as_deref(), Some("x.csv"));
        assert_eq!((a.algorithm, a.alignment, a.capacity), (Algorithm::Tflm, 16, Some(100)));
        let Command::Plan(a) = parse(&v(&["plan", "--algorithm", "exact", "--time-limit", "2.5", "--node-limit", "1000"])).unwrap() else {
            panic!("not a plan command")
        };
        assert_eq!((a.algorithm, a.time_limit, a.node_limit), (Algorithm::Exact, Some(2.5), Some(1000)));
    }

    #[test]
    fn rejects_bad_usage() {
        assert!(parse(&v(&["plan", "--algorithm", "nope"])).unwrap_err().contains("unknown algorithm 'nope'"));
        assert!(parse(&v(&["plan", "--alignment", "x"])).unwrap_err().contains("not a valid number"));
        assert!(parse(&v(&["plan", "--time-limit", "-1"])).is_err());
        assert!(parse(&v(&["plan", "--node-limit", "-5"])).unwrap_err().contains("not a valid number"));
        assert!(parse(&v(&["plan", "a", "b"])).is_err());
        assert!(parse(&v(&["frobnicate"])).is_err());
        assert!(parse(&v(&["plan", "--bogus"])).is_err());
        assert_eq!(parse(&[]).unwrap(), Command::Help);
    }

    #[test]
    fn parses_trust_fixed_options() {
        let Command::Plan(a) = parse(&v(&["plan", "x.csv", "--trust-fixed"])).unwrap() else { panic!("not a plan command") };
        assert!(a.trust_fixed);
        let Command::Validate(a) = parse(&v(&["validate", "p.csv", "--fixed-from", "in.csv", "--trust-fixed"])).unwrap() else {
            panic!("not a validate command")
        };
        assert_eq!(a, ValidateArgs { input: "p.csv".into(), fixed_from: Some("in.csv".into()), trust_fixed: true });
        assert!(parse(&v(&["validate"])).is_err());
        assert!(parse(&v(&["validate", "a", "b"])).is_err());
        assert!(parse(&v(&["validate", "a", "--fixed-from"])).is_err());
    }
}
