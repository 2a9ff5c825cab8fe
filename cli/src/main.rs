//! `nnmem`: plan a buffer trace from the command line, draw the plan, report
//! how close it is to the lower bound.
//!
//! ```text
//! nnmem plan [FILE.csv|-] [--algorithm NAME] [--alignment N] [--capacity BYTES]
//!            [--work-limit UNITS] [--node-limit N] [--time-limit SECONDS]
//!            [--output FILE] [--json FILE] [--svg FILE] [--picture[=FILE]] [--trust-fixed]
//! nnmem validate FILE.csv|- [--fixed-from INPUT.csv [--trust-fixed]]
//! nnmem pool-replay FILE.csv|- [--iterations N] [--strategy NAME]... [--alignment N]
//!            [--device host|virtual] [--json]
//! nnmem regions MODEL.csv|- [--config FILE.toml] [--json FILE|-] [--svg FILE|-]
//! nnmem help [plan|validate]
//! ```
//!
//! A workspace member of its own, so that its dependencies (clap) stay out
//! of the library's graph.

mod args;
mod pool_replay;
mod regions;
mod report;

use std::io::{Read, Write};
use std::process::ExitCode;

use nnmem::plan::csv::{self, Row};
use nnmem::plan::{picture, svg, units, validate, validate_with_fixed, Algorithm, Buffer, Invalid, Lifetime, Planner};
use nnmem::region::{RegionConfig, RegionTable};
use nnmem::report_format::ReportFormat;
use nnmem::{Error, Status};

use args::{Command, Dest, PictureDest, PlanArgs, PoolReplayArgs, RegionsArgs, Usage, ValidateArgs};

/// The built-in example: ResNet-50 training trace from MindSpore's SOMAS
/// planner (idealloc benchmarks, MIT licence; see benches/data/README.md).
/// Its buffer count is the summary's and the SVG title's, not the name's.
const BUILTIN_NAME: &str = "built-in: idealloc somas_tensors/resnet50.csv";
const BUILTIN_TRACE: &str = include_str!("../../benches/data/idealloc/somas_tensors/resnet50.csv");

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    match args::parse(&argv) {
        Ok(Command::Print(text)) => {
            // A closed pipe (`nnmem help | head -1`) is not an error.
            let _ = std::io::stdout().lock().write_all(text.as_bytes());
            ExitCode::SUCCESS
        }
        Ok(Command::Plan(a)) => finish(run_plan(&a)),
        Ok(Command::Validate(a)) => finish(run_validate(&a)),
        Ok(Command::PoolReplay(a)) => finish(run_pool_replay(&a)),
        Ok(Command::Regions(a)) => finish(run_regions(&a)),
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

/// Reads an input file, or standard input for `-`; errors name it.
fn read_input(path: &str) -> Result<Vec<u8>, Error> {
    if path == "-" {
        let mut bytes = Vec::new();
        std::io::stdin().read_to_end(&mut bytes).map(|_| bytes)
    } else {
        std::fs::read(path)
    }
    .map_err(|e| Error::invalid(format!("{}: {e}", display_name(path))))
}

/// Reads and parses a trace; errors name the input and the line.
fn read_rows(path: &str) -> Result<Vec<Row>, Error> {
    csv::parse_bytes(&read_input(path)?).map_err(|e| input_error(display_name(path), e))
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
        planner.set_time_limit_secs(seconds)?;
    }
    planner.set_node_limit(a.node_limit);
    if let Some(units) = a.work_limit {
        planner.set_work_limit((units != 0).then_some(units));
    }
    planner.set_trust_fixed(a.trust_fixed);
    for r in &rows {
        let lifetime = Lifetime::half_open(r.lower, r.upper)?;
        planner
            .add_buffer(r.size, lifetime, r.offset)
            .map_err(|e| Error::new(e.status(), format!("{name}: {}: {}", r.describe(), e.message())))?;
    }
    // Fixed offsets are checked here, not left to the planner, so that the
    // error names ids and lines instead of the planner's indices. Trusted
    // overlaps (and tflm, which always trusts them) are reported in the
    // summary instead.
    let trusts_fixed = a.trust_fixed || a.algorithm == Algorithm::Tflm;
    let fixed: Vec<usize> = (0..rows.len()).filter(|&i| rows[i].offset.is_some()).collect();
    let buffers = planner.problem().buffers();
    let fixed_buffers: Vec<Buffer> = fixed.iter().map(|&i| buffers[i]).collect();
    let fixed_offsets: Vec<u64> = fixed.iter().map(|&i| buffers[i].fixed_offset.unwrap_or(0)).collect();
    if let (false, Err(e)) = (trusts_fixed, validate(&fixed_buffers, &fixed_offsets)) {
        return Err(Error::invalid(format!(
            "{name}: fixed offsets: {} (if the offline plan shares that memory on purpose, plan with --trust-fixed)",
            describe_invalid(&rows, &e, |i| fixed[i])
        )));
    }
    let planned = planner.plan().map(|_| ());
    // A summary when there is a plan, or when the capacity was refused
    // against the lower bound; other failures are only the error.
    let refused = matches!(&planned, Err(e) if e.status() == Status::DoesNotFit);
    if planner.outcome().is_some() || refused {
        let summary = report::Summary { input: &name, rows: &rows, planner: &planner, outcome: planner.outcome() };
        let report = summary.text();
        if a.summary_on_stdout {
            write_to(&Dest::Stdout, &report)?;
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

fn run_validate(a: &ValidateArgs) -> Result<(), Error> {
    let name = display_name(&a.input);
    let rows = read_rows(&a.input)?;
    if let Some(r) = rows.iter().find(|r| r.offset.is_none()) {
        return Err(Error::invalid(format!("{name}: {}: no offset to validate", r.describe())));
    }
    let problem = csv::to_problem(&rows, 1).map_err(|e| input_error(name, e))?;
    let offsets: Vec<u64> = rows.iter().map(|r| r.offset.unwrap_or(0)).collect();
    let is_fixed = match &a.fixed_from {
        Some(input) => fixed_rows(name, &rows, input)?,
        None => vec![false; rows.len()],
    };
    let verdict = validate_with_fixed(problem.buffers(), &offsets, &is_fixed, a.trust_fixed)
        .map_err(|e| Error::invalid(format!("{name}: invalid plan: {}", describe_invalid(&rows, &e, |i| i))))?;
    let fixed = match verdict.fixed_overlaps.first {
        Some(f) => format!(
            "\nfixed overlaps: {} pair(s), first {} and {} at step {}{}",
            verdict.fixed_overlaps.count,
            rows[f.first].describe(),
            rows[f.second].describe(),
            f.step,
            if a.trust_fixed { " (trusted)" } else { "" }
        ),
        None => String::new(),
    };
    if let Some(o) = verdict.overlap {
        return Err(Error::invalid(format!(
            "{name}: invalid plan: {}{fixed}",
            describe_invalid(&rows, &Invalid::Overlap(o), |i| i)
        )));
    }
    // The lower bound of the plan as trusted: bytes fixed buffers share count once.
    let mut planner = Planner::new();
    for (b, (&f, &offset)) in problem.buffers().iter().zip(is_fixed.iter().zip(&offsets)) {
        planner.add_buffer(b.size, b.lifetime, f.then_some(offset))?;
    }
    let (peak, lb) = (verdict.peak, planner.lower_bound());
    let verdict = format!(
        "valid: {} buffers, peak {}, lower bound {}, peak/lower bound {}{fixed}\n",
        rows.len(),
        units::bytes(peak),
        units::bytes(lb),
        report::ratio(peak, lb)
    );
    write_to(&Dest::Stdout, &verdict)
}

/// Which rows of a plan are fixed: those whose id has an offset in the
/// trace `input` the plan was made from. Each must have kept that offset,
/// and each of the trace's fixed buffers must be in the plan.
fn fixed_rows(name: &str, rows: &[Row], input: &str) -> Result<Vec<bool>, Error> {
    let input_name = display_name(input);
    let trace = read_rows(input)?;
    let fixed: std::collections::HashMap<&str, (u64, &Row)> =
        trace.iter().filter_map(|r| r.offset.map(|o| (r.id.as_str(), (o, r)))).collect();
    for r in rows {
        if let Some(&(want, source)) = fixed.get(r.id.as_str()) {
            if r.offset != Some(want) {
                return Err(Error::invalid(format!(
                    "{name}: fixed buffer {} is at offset {} but {input_name} ({}) fixes it at {want}",
                    r.describe(),
                    r.offset.unwrap_or(0),
                    source.describe()
                )));
            }
        }
    }
    let planned: std::collections::HashSet<&str> = rows.iter().map(|r| r.id.as_str()).collect();
    if let Some(r) = trace.iter().find(|r| r.offset.is_some() && !planned.contains(r.id.as_str())) {
        return Err(Error::invalid(format!("{input_name}: fixed buffer {} is not in the plan", r.describe())));
    }
    Ok(rows.iter().map(|r| fixed.contains_key(r.id.as_str())).collect())
}

fn run_pool_replay(a: &PoolReplayArgs) -> Result<(), Error> {
    let name = display_name(&a.input);
    let rows = read_rows(&a.input)?;
    let lower_bound = pool_replay::lower_bound(&rows).map_err(|e| input_error(name, e))?;
    let sequence = pool_replay::events(&rows);
    let mut results = Vec::with_capacity(a.strategies.len());
    for &strategy in &a.strategies {
        results.push(pool_replay::replay(&rows, &sequence, strategy, a).map_err(|e| input_error(name, e))?);
    }
    let requests = sequence.iter().filter(|e| matches!(e, pool_replay::Event::Alloc(_))).count();
    let trace = pool_replay::Trace { name, buffers: rows.len(), requests, lower_bound };
    let report = if a.json { pool_replay::json(&trace, a, &results) } else { pool_replay::text(&trace, a, &results) };
    write_to(&Dest::Stdout, &report)
}

fn run_regions(a: &RegionsArgs) -> Result<(), Error> {
    let config = match &a.config {
        // Its errors name the file (and the line and column in it).
        Some(path) => RegionConfig::from_toml_path(std::path::Path::new(path))?,
        None => RegionConfig::glow_defaults(),
    };
    let name = display_name(&a.input);
    let file = regions::read_model(&read_input(&a.input)?).map_err(|e| input_error(name, e))?;
    let table = RegionTable::build(&file.model, &config).map_err(|e| match file.line_named_in(e.message()) {
        Some(line) => Error::new(e.status(), format!("{name}: line {line}: {}", e.message())),
        None => e,
    })?;
    if let Some(dest) = &a.svg {
        write_to(dest, &table.svg())?;
    }
    if let Some(dest) = &a.json {
        write_to(dest, &table.report(ReportFormat::Json))?;
    }
    if a.json != Some(Dest::Stdout) && a.svg != Some(Dest::Stdout) {
        write_to(&Dest::Stdout, &table.report(ReportFormat::Text))?;
    }
    Ok(())
}
