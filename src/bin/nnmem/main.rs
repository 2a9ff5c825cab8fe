//! `nnmem`: plan a buffer trace from the command line, draw the plan, report
//! how close it is to the lower bound.
//!
//! ```text
//! nnmem plan [FILE.csv|-] [--algorithm NAME] [--alignment N] [--capacity BYTES]
//!            [--time-limit SECONDS] [--node-limit N] [--output FILE] [--json FILE]
//!            [--svg FILE] [--picture[=FILE]]
//! nnmem validate FILE.csv|-
//! nnmem help [plan|validate]
//! ```

mod args;
mod report;

use std::io::{Read, Write};
use std::process::ExitCode;
use std::time::Duration;

use nnmem::plan::csv::{self, Row};
use nnmem::plan::{picture, svg, units, validate, Buffer, Invalid, Lifetime, Planner};
use nnmem::{Error, Status};

use args::{Command, Dest, PictureDest, PlanArgs, Usage};

/// The built-in example: ResNet-50 training trace from MindSpore's SOMAS
/// planner (idealloc benchmarks, MIT licence; see benches/data/README.md).
const BUILTIN_NAME: &str = "built-in: idealloc somas_tensors/resnet50.csv (1042 buffers)";
const BUILTIN_TRACE: &str = include_str!("../../../benches/data/idealloc/somas_tensors/resnet50.csv");

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    match args::parse(&argv) {
        Ok(Command::Help(text)) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Ok(Command::Version) => {
            println!("nnmem {}", nnmem::VERSION);
            ExitCode::SUCCESS
        }
        Ok(Command::Plan(a)) => finish(run_plan(&a)),
        Ok(Command::Validate(path)) => finish(run_validate(&path)),
        Err(Usage { message, usage }) => {
            eprintln!("nnmem: {message}\n\n{usage}");
            ExitCode::from(2)
        }
    }
}

fn finish(result: Result<(), Error>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("nnmem: {}", e.message());
            ExitCode::from(if e.status() == Status::DoesNotFit { 3 } else { 1 })
        }
    }
}

/// How errors name an input: its path, "stdin" for `-`.
fn display_name(path: &str) -> &str {
    if path == "-" {
        "stdin"
    } else {
        path
    }
}

/// An input error, prefixed with the input's name.
fn input_error(name: &str, e: Error) -> Error {
    Error::new(e.status(), format!("{name}: {}", e.message()))
}

/// Reads and parses a trace; errors name the input and the line.
fn read_rows(path: &str) -> Result<Vec<Row>, Error> {
    let name = display_name(path);
    let bytes = if path == "-" {
        let mut bytes = Vec::new();
        std::io::stdin().read_to_end(&mut bytes).map(|_| bytes)
    } else {
        std::fs::read(path)
    }
    .map_err(|e| Error::invalid(format!("{name}: {e}")))?;
    csv::parse_bytes(&bytes).map_err(|e| input_error(name, e))
}

fn write_to(dest: &Dest, text: &str) -> Result<(), Error> {
    match dest {
        Dest::Stdout => {
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes()).and_then(|_| out.flush())
        }
        Dest::File(path) => std::fs::write(path, text),
    }
    .map_err(|e| match dest {
        Dest::Stdout => Error::invalid(format!("writing standard output: {e}")),
        Dest::File(path) => Error::invalid(format!("writing {path}: {e}")),
    })
}

/// A validation failure with buffers named by id and line; `index` maps the
/// checked buffers' indices to rows.
fn describe_invalid(rows: &[Row], invalid: &Invalid, index: impl Fn(usize) -> usize) -> String {
    match invalid {
        Invalid::Overlap(o) => format!(
            "{} and {} overlap in memory at step {}",
            rows[index(o.first)].describe(),
            rows[index(o.second)].describe(),
            o.step
        ),
        Invalid::OffsetOverflow(i) => format!("{}: offset + size overflows 64 bits", rows[index(*i)].describe()),
        other => other.to_string(),
    }
}

fn run_plan(a: &PlanArgs) -> Result<(), Error> {
    let (name, rows) = match &a.input {
        Some(path) => (display_name(path).to_string(), read_rows(path)?),
        None => (BUILTIN_NAME.to_string(), csv::parse(BUILTIN_TRACE)?),
    };
    let mut planner = Planner::new();
    planner.set_algorithm(a.algorithm);
    planner.set_alignment(a.alignment)?;
    planner.set_capacity(a.capacity);
    if let Some(seconds) = a.time_limit {
        planner.set_time_limit(Duration::from_secs_f64(seconds))?;
    }
    planner.set_node_limit(a.node_limit);
    for r in &rows {
        let lifetime = Lifetime::half_open(r.lower, r.upper)?;
        planner
            .add_buffer(r.size, lifetime, r.offset)
            .map_err(|e| Error::new(e.status(), format!("{name}: {}: {}", r.describe(), e.message())))?;
    }
    // Fixed offsets are checked here, not left to the planner, so that the
    // error names ids and lines instead of the planner's indices.
    let fixed: Vec<usize> = (0..rows.len()).filter(|&i| rows[i].offset.is_some()).collect();
    let buffers = planner.problem().buffers();
    let fixed_buffers: Vec<Buffer> = fixed.iter().map(|&i| buffers[i]).collect();
    let fixed_offsets: Vec<u64> = fixed.iter().map(|&i| buffers[i].fixed_offset.unwrap_or(0)).collect();
    if let Err(e) = validate(&fixed_buffers, &fixed_offsets) {
        return Err(Error::invalid(format!("{name}: fixed offsets: {}", describe_invalid(&rows, &e, |i| fixed[i]))));
    }
    let planned = planner.plan().map(|_| ());
    // A summary when there is a plan, or when the capacity was refused
    // against the lower bound; other failures are only the error.
    let refused = matches!(&planned, Err(e) if e.status() == Status::DoesNotFit);
    if planner.outcome().is_some() || refused {
        let summary = report::Summary { input: &name, planner: &planner, outcome: planner.outcome() };
        let report = summary.text();
        if a.summary_on_stdout {
            print!("{report}");
        } else {
            eprint!("{report}");
        }
        if let Some(dest) = &a.json {
            write_to(dest, &summary.json())?;
        }
    }
    planned?;
    let o = planner.outcome().expect("planned");
    if let Some(dest) = &a.output {
        write_to(dest, &csv::write(&rows, &o.offsets))?;
    }
    let ids: Vec<&str> = rows.iter().map(|r| r.id.as_str()).collect();
    if let Some(dest) = &a.svg {
        let title = format!(
            "{name}: {} buffers, {}, peak {} B, lower bound {} B",
            rows.len(),
            report::algorithm(&planner, o),
            o.peak,
            o.lower_bound
        );
        write_to(dest, &svg::render(planner.problem().buffers(), &o.offsets, Some(&ids), o.lower_bound, &title))?;
    }
    if let Some(dest) = &a.picture {
        let text = picture::draw_named(planner.problem().buffers(), &o.offsets, Some(&ids));
        match dest {
            PictureDest::To(dest) => write_to(dest, &text)?,
            PictureDest::Stderr => eprint!("{text}"),
        }
    }
    Ok(())
}

fn run_validate(path: &str) -> Result<(), Error> {
    let name = display_name(path);
    let rows = read_rows(path)?;
    if let Some(r) = rows.iter().find(|r| r.offset.is_none()) {
        return Err(Error::invalid(format!("{name}: {}: no offset to validate", r.describe())));
    }
    let problem = csv::to_problem(&rows, 1).map_err(|e| input_error(name, e))?;
    let offsets: Vec<u64> = rows.iter().map(|r| r.offset.unwrap_or(0)).collect();
    let lb = nnmem::plan::lower_bound(problem.buffers()).bytes;
    match validate(problem.buffers(), &offsets) {
        Ok(peak) => {
            println!(
                "valid: {} buffers, peak {}, lower bound {}, peak/lower bound {}",
                rows.len(),
                units::bytes(peak),
                units::bytes(lb),
                report::ratio(peak, lb)
            );
            Ok(())
        }
        Err(e) => Err(Error::invalid(format!("{name}: invalid plan: {}", describe_invalid(&rows, &e, |i| i)))),
    }
}
