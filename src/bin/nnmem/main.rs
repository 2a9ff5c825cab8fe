//! `nnmem`: plan a buffer trace from the command line, draw the plan, report
//! how close it is to the lower bound.
//!
//! ```text
//! nnmem plan [FILE.csv|-] [--algorithm NAME] [--alignment N] [--capacity BYTES]
//!            [--time-limit SECONDS] [--node-limit N] [--output OUT.csv] [--svg OUT.svg] [--picture]
//! nnmem validate FILE.csv|-
//! ```

mod args;
mod report;

use std::io::{Read, Write};
use std::process::ExitCode;

use nnmem::plan::{csv, svg, validate, Invalid, Planner};
use nnmem::{Error, Status};

use args::{Command, PlanArgs};

/// The built-in example: ResNet-50 training trace from MindSpore's SOMAS
/// planner (idealloc benchmarks, MIT licence; see benches/data/README.md).
const BUILTIN_NAME: &str = "built-in: idealloc somas_tensors/resnet50.csv (1042 buffers)";
const BUILTIN_TRACE: &str = include_str!("../../../benches/data/idealloc/somas_tensors/resnet50.csv");

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    match args::parse(&argv) {
        Ok(Command::Help) => {
            print!("{}", args::USAGE);
            ExitCode::SUCCESS
        }
        Ok(Command::Version) => {
            println!("nnmem {}", nnmem::VERSION);
            ExitCode::SUCCESS
        }
        Ok(Command::Plan(a)) => finish(run_plan(&a)),
        Ok(Command::Validate(path)) => finish(run_validate(&path)),
        Err(message) => {
            eprintln!("nnmem: {message}\n\n{}", args::USAGE);
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

fn read_input(path: &str) -> Result<String, Error> {
    if path == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| Error::invalid(format!("reading standard input: {e}")))?;
        return Ok(text);
    }
    std::fs::read_to_string(path).map_err(|e| Error::invalid(format!("{path}: {e}")))
}

fn write_file(path: &str, text: &str) -> Result<(), Error> {
    std::fs::write(path, text).map_err(|e| Error::invalid(format!("writing {path}: {e}")))
}

fn run_plan(a: &PlanArgs) -> Result<(), Error> {
    let (name, text) = match &a.input {
        Some(path) => (path.clone(), read_input(path)?),
        None => (BUILTIN_NAME.to_string(), BUILTIN_TRACE.to_string()),
    };
    let rows = csv::parse(&text).map_err(|e| Error::new(e.status(), format!("{name}: {}", e.message())))?;
    let mut planner = Planner::new();
    planner.set_algorithm(a.algorithm);
    planner.set_alignment(a.alignment)?;
    planner.set_capacity(a.capacity);
    if let Some(seconds) = a.time_limit {
        planner.set_time_limit_secs(seconds)?;
    }
    planner.set_node_limit(a.node_limit);
    for (i, r) in rows.iter().enumerate() {
        let lifetime = nnmem::plan::Lifetime::half_open(r.lower, r.upper)?;
        planner
            .add_buffer(r.size, lifetime, r.offset)
            .map_err(|e| Error::new(e.status(), format!("{name}: line {} (id {}): {}", i + 2, r.id, e.message())))?;
    }
    let planned = planner.plan().map(|_| ());
    let outcome = planner.outcome().cloned();
    if let Some(o) = &outcome {
        let report = report::summary(&name, &planner, o);
        // The built-in example's report is the main output; with a file, the
        // CSV owns stdout and the report goes to stderr.
        if a.input.is_none() {
            print!("{report}");
        } else {
            eprint!("{report}");
        }
    }
    planned?;
    let o = outcome.expect("planned");
    let plan_csv = csv::write(&rows, &o.offsets);
    match (&a.output, &a.input) {
        (Some(path), _) => write_file(path, &plan_csv)?,
        (None, Some(_)) => {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(plan_csv.as_bytes());
        }
        (None, None) => {}
    }
    if let Some(path) = &a.svg {
        let title = format!(
            "{name}: {} buffers, {} ({}), peak {} B, lower bound {} B",
            rows.len(),
            a.algorithm.name(),
            o.algorithm.name(),
            o.peak,
            o.lower_bound
        );
        write_file(path, &svg::render(planner.problem().buffers(), &o.offsets, o.lower_bound, &title))?;
    }
    if a.picture {
        print!("{}", planner.draw()?);
    }
    Ok(())
}

fn run_validate(path: &str) -> Result<(), Error> {
    let rows = csv::parse(&read_input(path)?).map_err(|e| Error::new(e.status(), format!("{path}: {}", e.message())))?;
    if let Some(i) = rows.iter().position(|r| r.offset.is_none()) {
        return Err(Error::invalid(format!("{path}: line {}: no offset to validate", i + 2)));
    }
    let problem = csv::to_problem(&rows, 1)?;
    let offsets: Vec<u64> = rows.iter().map(|r| r.offset.unwrap_or(0)).collect();
    let lb = nnmem::plan::lower_bound(problem.buffers()).bytes;
    match validate(problem.buffers(), &offsets) {
        Ok(peak) => {
            println!("valid: {} buffers, peak {peak} B, lower bound {lb} B, peak/lower bound {}", rows.len(), report::ratio(peak, lb));
            Ok(())
        }
        Err(Invalid::Overlap(o)) => Err(Error::invalid(format!(
            "invalid plan: {} (line {}) and {} (line {}) overlap in memory at step {}",
            rows[o.first].id,
            o.first + 2,
            rows[o.second].id,
            o.second + 2,
            o.step
        ))),
        Err(e) => Err(Error::invalid(format!("invalid plan: {e}"))),
    }
}
