//! `nnmem`: plan a buffer trace from the command line, draw the plan, report
//! how close it is to the lower bound.
//!
//! ```text
//! nnmem plan [FILE.csv|-] [--algorithm NAME] [--alignment N] [--capacity BYTES]
//!            [--time-limit SECONDS] [--node-limit N] [--output OUT.csv] [--svg OUT.svg] [--picture]
//! nnmem validate FILE.csv|- [--fixed-from INPUT.csv] [--trust-fixed]
//! ```

mod args;
mod report;

use std::io::{Read, Write};
use std::process::ExitCode;
use std::time::Duration;

use nnmem::plan::{csv, svg, validate_with_fixed, Invalid, Planner};
use nnmem::{Error, Status};

use args::{Command, PlanArgs, ValidateArgs};

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
        Ok(Command::Validate(a)) => finish(run_validate(&a)),
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
        planner.set_time_limit(Duration::from_secs_f64(seconds))?;
    }
    planner.set_node_limit(a.node_limit);
    planner.set_trust_fixed(a.trust_fixed);
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

fn run_validate(a: &ValidateArgs) -> Result<(), Error> {
    let path = a.input.as_str();
    let rows = csv::parse(&read_input(path)?).map_err(|e| Error::new(e.status(), format!("{path}: {}", e.message())))?;
    if let Some(i) = rows.iter().position(|r| r.offset.is_none()) {
        return Err(Error::invalid(format!("{path}: line {}: no offset to validate", i + 2)));
    }
    let problem = csv::to_problem(&rows, 1)?;
    let offsets: Vec<u64> = rows.iter().map(|r| r.offset.unwrap_or(0)).collect();
    let is_fixed = match &a.fixed_from {
        Some(input) => fixed_rows(&rows, input)?,
        None => vec![false; rows.len()],
    };
    let line = |i: usize| format!("{} (line {})", rows[i].id, i + 2);
    let verdict = validate_with_fixed(problem.buffers(), &offsets, &is_fixed, a.trust_fixed)
        .map_err(|e: Invalid| Error::invalid(format!("invalid plan: {e}")))?;
    let fixed = match verdict.fixed_overlaps.first {
        Some(f) => format!(
            "\nfixed overlaps: {} pair(s), first {} and {} at step {}{}",
            verdict.fixed_overlaps.count,
            line(f.first),
            line(f.second),
            f.step,
            if a.trust_fixed { " (trusted)" } else { "" }
        ),
        None => String::new(),
    };
    if let Some(o) = verdict.overlap {
        return Err(Error::invalid(format!(
            "invalid plan: {} and {} overlap in memory at step {}{fixed}",
            line(o.first),
            line(o.second),
            o.step
        )));
    }
    // The lower bound of the plan as trusted: bytes fixed buffers share count once.
    let mut planner = Planner::new();
    for (b, &f) in problem.buffers().iter().zip(&is_fixed) {
        planner.add_buffer(b.size, b.lifetime, f.then_some(b.fixed_offset.unwrap_or(0)))?;
    }
    let (peak, lb) = (verdict.peak, planner.lower_bound());
    println!("valid: {} buffers, peak {peak} B, lower bound {lb} B, peak/lower bound {}{fixed}", rows.len(), report::ratio(peak, lb));
    Ok(())
}

/// Which rows of a plan are fixed: those whose id has an offset in the
/// trace `input` the plan was made from. Each must have kept that offset.
fn fixed_rows(rows: &[csv::Row], input: &str) -> Result<Vec<bool>, Error> {
    let trace = csv::parse(&read_input(input)?).map_err(|e| Error::new(e.status(), format!("{input}: {}", e.message())))?;
    let mut fixed = std::collections::HashMap::new();
    for (i, r) in trace.iter().enumerate() {
        if let Some(offset) = r.offset {
            if fixed.insert(r.id.as_str(), offset).is_some() {
                return Err(Error::invalid(format!("{input}: line {}: id {} is fixed twice", i + 2, r.id)));
            }
        }
    }
    let is_fixed: Vec<bool> = rows.iter().map(|r| fixed.contains_key(r.id.as_str())).collect();
    for (i, r) in rows.iter().enumerate() {
        if let Some(&want) = fixed.get(r.id.as_str()) {
            if r.offset != Some(want) {
                return Err(Error::invalid(format!(
                    "line {}: fixed buffer {} is at {} but {input} fixes it at {want}",
                    i + 2,
                    r.id,
                    r.offset.unwrap_or(0)
                )));
            }
        }
    }
    let planned: std::collections::HashSet<&str> = rows.iter().map(|r| r.id.as_str()).collect();
    if let Some((i, r)) = trace.iter().enumerate().find(|(_, r)| r.offset.is_some() && !planned.contains(r.id.as_str())) {
        return Err(Error::invalid(format!("{input}: line {}: fixed buffer {} is not in the plan", i + 2, r.id)));
    }
    Ok(is_fixed)
}
