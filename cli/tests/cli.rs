//! The `nnmem` command line, run as a user would.

use std::io::Write;
use std::process::{Command, Output, Stdio};

fn nnmem(args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_nnmem"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("nnmem runs");
    if let Some(text) = stdin {
        // A run that rejects its arguments may exit before reading stdin:
        // a broken pipe then is expected, not a failure of the test.
        match child.stdin.take().unwrap().write_all(text.as_bytes()) {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
            other => other.unwrap(),
        }
    }
    drop(child.stdin.take());
    child.wait_with_output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A fresh directory for one test's files.
fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("nnmem-cli-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

const EXAMPLE: &str = "id,lower,upper,size\nb1,0,3,4\nb2,3,9,4\nb3,0,9,4\nb4,9,21,4\nb5,0,21,4\n";

#[test]
fn the_built_in_plans_svg_title_counts_the_buffers_once() {
    let dir = temp_dir("builtin-svg");
    let svg = dir.join("builtin.svg");
    let out = nnmem(&["plan", "--algorithm", "size-first-fit", "--svg", svg.to_str().unwrap()], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let picture = std::fs::read_to_string(&svg).unwrap();
    let title = picture.split("<title>").nth(1).and_then(|t| t.split("</title>").next()).unwrap();
    assert!(title.starts_with("built-in: idealloc somas_tensors/resnet50.csv: 1042 buffers, "), "{title}");
    assert_eq!(title.matches("1042").count(), 1, "{title}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn built_in_example_prints_a_report() {
    let out = nnmem(&["plan"], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report = text(&out.stdout);
    assert!(report.contains("buffers         1042"), "{report}");
    assert!(report.contains("lower bound     1515472556 B (1.41 GiB)"), "{report}");
    assert!(report.contains("peak/lower"), "{report}");
}

#[test]
fn plans_a_csv_from_stdin_in_input_order() {
    let out = nnmem(&["plan", "-"], Some(EXAMPLE));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let csv = text(&out.stdout);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], "id,lower,upper,size,offset");
    assert_eq!(lines.len(), 6);
    assert!(lines[1].starts_with("b1,0,3,4,") && lines[5].starts_with("b5,0,21,4,"));
    let report = text(&out.stderr);
    assert!(report.contains("peak            12 B") && report.contains("proven optimal  yes"), "{report}");
    // The plan it printed validates.
    let check = nnmem(&["validate", "-"], Some(&csv));
    assert!(check.status.success(), "{}", text(&check.stderr));
    assert!(text(&check.stdout).contains("peak 12 B"));
}

#[test]
fn bad_rows_name_their_line() {
    let out = nnmem(&["plan", "-"], Some("id,lower,upper,size\na,0,3,4\nb,5,2,4\n"));
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("stdin: line 3: upper 2 is below lower 5"), "{}", text(&out.stderr));
    let out = nnmem(&["plan", "-"], Some("id,lower,upper,size\na,0,3,four\n"));
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("line 2: size 'four'"));
}

#[test]
fn capacity_too_small_exits_3_with_the_missing_bytes() {
    // linear stacks all five buffers (20 B); the lower bound is 12.
    let out = nnmem(&["plan", "-", "--algorithm", "linear", "--capacity", "19"], Some(EXAMPLE));
    assert_eq!(out.status.code(), Some(3));
    assert!(text(&out.stderr).contains("requested 20 B, available 19 B, missing 1 B"), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("capacity        19 B: does NOT fit, missing 1 B"), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty(), "no plan CSV for a plan that does not fit");
}

#[test]
fn validate_names_the_overlapping_pair() {
    let plan = "id,lower,upper,size,offset\nx,0,4,8,0\ny,2,6,8,4\n";
    let out = nnmem(&["validate", "-"], Some(plan));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("stdin: invalid plan: x (line 2) and y (line 3) overlap in memory at step 2"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn writes_output_svg_and_picture() {
    let dir = temp_dir("outputs");
    let (csv, svg) = (dir.join("plan.csv"), dir.join("plan.svg"));
    let out = nnmem(
        &[
            "plan",
            "-",
            "--algorithm",
            "tflm",
            "--alignment",
            "16",
            "--output",
            csv.to_str().unwrap(),
            "--svg",
            svg.to_str().unwrap(),
            "--picture",
        ],
        Some(EXAMPLE),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let plan = std::fs::read_to_string(&csv).unwrap();
    assert!(plan.lines().skip(1).all(|l| l.rsplit(',').next().unwrap().parse::<u64>().unwrap() % 16 == 0));
    let picture = std::fs::read_to_string(&svg).unwrap();
    assert_eq!(picture.matches("<rect class=\"buf\"").count(), 5);
    // Axes, legend, ids in the rectangles and tooltips by CSV id.
    for part in [
        "address (offset in the block)",
        "execution step",
        "<g class=\"legend\"",
        ">16 B</text>",
        ">20</text>",
        ">b5</text>",
        "<title>b3: size 16 B, steps [0, 9)",
    ] {
        assert!(picture.contains(part), "{part}: {picture}");
    }
    // The plan went to a file, so the picture has standard output to itself.
    assert!(text(&out.stdout).starts_with("5 buffers, peak 48 B\n0 (id=b1): size=16"), "{}", text(&out.stdout));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn exact_with_a_capacity_fits_a_minimalloc_instance() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../benches/data/minimalloc/challenging/H.1048576.csv");
    // The default work budget, not a time limit, bounds it: the same outcome
    // on any machine.
    let out = nnmem(&["plan", path, "--algorithm", "exact", "--capacity", "1048576"], None);
    let report = text(&out.stderr);
    assert!(out.status.success(), "{report}");
    assert!(report.contains("capacity        1048576 B (1.00 MiB): fits"), "{report}");
    assert!(report.contains("proven optimal  yes"), "{report}");
    assert!(report.contains("search          "), "the report gives the nodes: {report}");
    // The plan on stdout is valid.
    let check = nnmem(&["validate", "-"], Some(&text(&out.stdout)));
    assert!(check.status.success(), "{}", text(&check.stderr));
    assert!(text(&check.stdout).contains("peak 1048576 B"), "{}", text(&check.stdout));
}

#[test]
fn a_capacity_below_the_lower_bound_is_refused_at_once() {
    // The lower bound is 12: nothing fits 11, said without searching.
    let out = nnmem(&["plan", "-", "--algorithm", "exact", "--capacity", "11", "--time-limit", "60"], Some(EXAMPLE));
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains("capacity 11 B is below the lower bound 12 B: no plan fits (missing at least 1 B)"), "{err}");
    assert!(err.contains("capacity        11 B: does NOT fit, missing at least 1 B"), "{err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn node_limit_is_validated() {
    let out = nnmem(&["plan", "-", "--node-limit", "many"], Some(EXAMPLE));
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--node-limit"), "{}", text(&out.stderr));
}

/// Fixed buffers a and b share bytes 8..16 at steps 1..3; c is planned.
const SHARED_OFFLINE: &str = "id,lower,upper,size,offset\na,0,3,16,0\nb,1,4,16,8\nc,0,4,8,\n";

#[test]
fn trust_fixed_plans_around_overlapping_fixed_buffers_and_reports_them() {
    let out = nnmem(&["plan", "-", "--algorithm", "size-best-fit"], Some(SHARED_OFFLINE));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("fixed offsets: a (line 2) and b (line 3) overlap in memory at step 1"),
        "{}",
        text(&out.stderr)
    );
    let out = nnmem(&["plan", "-", "--algorithm", "size-best-fit", "--trust-fixed"], Some(SHARED_OFFLINE));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "id,lower,upper,size,offset\na,0,3,16,0\nb,1,4,16,8\nc,0,4,8,24\n");
    let report = text(&out.stderr);
    assert!(report.contains("fixed overlaps  1 pair(s) of fixed buffers share memory (trusted), first a (line 2) and b (line 3) at step 1"), "{report}");
    assert!(report.contains("lower bound     32 B"), "{report}");
    // tflm trusts them without being told, as TFLite Micro does.
    let out = nnmem(&["plan", "-", "--algorithm", "tflm"], Some(SHARED_OFFLINE));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("fixed overlaps  1 pair(s)"), "{}", text(&out.stderr));
}

#[test]
fn validate_trusts_fixed_buffers_named_by_the_input_trace() {
    let dir = std::env::temp_dir().join(format!("nnmem-cli-fixed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let input = dir.join("input.csv");
    std::fs::write(&input, SHARED_OFFLINE).unwrap();
    let input = input.to_str().unwrap();
    let plan = "id,lower,upper,size,offset\na,0,3,16,0\nb,1,4,16,8\nc,0,4,8,24\n";
    let out = nnmem(&["validate", "-"], Some(plan));
    assert_eq!(out.status.code(), Some(1), "without --fixed-from every overlap counts");
    let out = nnmem(&["validate", "-", "--fixed-from", input], Some(plan));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("fixed overlaps: 1 pair(s), first a (line 2) and b (line 3) at step 1"),
        "{}",
        text(&out.stderr)
    );
    let out = nnmem(&["validate", "-", "--fixed-from", input, "--trust-fixed"], Some(plan));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report = text(&out.stdout);
    assert!(report.contains("valid: 3 buffers, peak 32 B, lower bound 32 B"), "{report}");
    assert!(
        report.contains("fixed overlaps: 1 pair(s), first a (line 2) and b (line 3) at step 1 (trusted)"),
        "{report}"
    );
    // A planned buffer on a fixed one is still invalid; a moved fixed buffer is refused.
    let clash = "id,lower,upper,size,offset\na,0,3,16,0\nb,1,4,16,8\nc,0,4,8,16\n";
    let out = nnmem(&["validate", "-", "--fixed-from", input, "--trust-fixed"], Some(clash));
    assert!(
        text(&out.stderr).contains("b (line 3) and c (line 4) overlap in memory at step 1"),
        "{}",
        text(&out.stderr)
    );
    let moved = "id,lower,upper,size,offset\na,0,3,16,0\nb,1,4,16,16\nc,0,4,8,32\n";
    let out = nnmem(&["validate", "-", "--fixed-from", input, "--trust-fixed"], Some(moved));
    assert!(text(&out.stderr).contains("fixed buffer b (line 3) is at offset 16 but"), "{}", text(&out.stderr));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn every_command_has_its_own_help() {
    let plan = ["Usage: nnmem plan [OPTIONS] [FILE.csv|-]", "--algorithm <NAME>", "--picture[=<FILE>]", "Exit status"];
    let validate = ["Usage: nnmem validate [OPTIONS] <FILE.csv|->", "--fixed-from <INPUT.csv>", "Exit status"];
    let pool_replay =
        ["Usage: nnmem pool-replay [OPTIONS] <FILE.csv|->", "--iterations <N>", "--device <NAME>", "Exit status"];
    let main = ["Usage: nnmem [COMMAND]", "  plan ", "  validate ", "  pool-replay ", "Exit status"];
    for (args, parts) in [
        (&["plan", "--help"][..], &plan[..]),
        (&["plan", "-h"], &plan),
        (&["help", "plan"], &plan),
        (&["validate", "--help"], &validate),
        (&["validate", "-h"], &validate),
        (&["help", "validate"], &validate),
        (&["pool-replay", "--help"], &pool_replay),
        (&["help", "pool-replay"], &pool_replay),
        (&[], &main),
        (&["help"], &main),
        (&["--help"], &main),
        (&["help", "--help"], &main),
        (&["help", "-h"], &main),
        (&["help", "plan", "--help"], &plan),
    ] {
        let out = nnmem(args, None);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", text(&out.stderr));
        for part in parts {
            assert!(text(&out.stdout).contains(part), "{args:?}: {part}: {}", text(&out.stdout));
        }
    }
    let out = nnmem(&["--version"], None);
    assert_eq!(text(&out.stdout), format!("nnmem {}\n", env!("CARGO_PKG_VERSION")));
}

#[test]
fn usage_errors_exit_2_with_the_commands_usage() {
    for (args, message, usage) in [
        (&["plan", "--algorithm", "magic"][..], "--algorithm: unknown algorithm 'magic'", "Usage: nnmem plan "),
        (&["plan", "--alignment", "3"], "--alignment: alignment 3 is not a power of two", "Usage: nnmem plan "),
        (&["plan", "--alignment", "x"], "--alignment: 'x' is not a power of two", "Usage: nnmem plan "),
        (&["plan", "--capacity"], "--capacity needs a value (BYTES)", "Usage: nnmem plan "),
        (
            &["plan", "--alignment", "99999999999999999999"],
            "--alignment: '99999999999999999999' is too large (at most 9223372036854775808)",
            "Usage: nnmem plan ",
        ),
        (
            &["plan", "--capacity", "99999999999999999999"],
            "--capacity: '99999999999999999999' is too large (at most 18446744073709551615)",
            "Usage: nnmem plan ",
        ),
        (&["plan", "--frobnicate"], "unknown option '--frobnicate'", "Usage: nnmem plan "),
        (&["plan", "a.csv", "b.csv"], "plan takes one FILE, got also 'b.csv'", "Usage: nnmem plan "),
        (
            &["plan", "a.csv", "--json", "-"],
            "the plan CSV and --json would both go to standard output",
            "Usage: nnmem plan ",
        ),
        (&["validate"], "validate needs <FILE.csv|->", "Usage: nnmem validate "),
        (&["validate", "a.csv", "b.csv"], "validate takes one FILE, got also 'b.csv'", "Usage: nnmem validate "),
        (&["validate", "--strict"], "unknown option '--strict'", "Usage: nnmem validate "),
        (
            &["bogus"],
            "unknown command 'bogus' (commands: plan, validate, pool-replay, regions, help)",
            "Usage: nnmem [COMMAND]",
        ),
        (&["help", "bogus"], "unknown command 'bogus'", "Usage: nnmem [COMMAND]"),
        (&["help", "plan", "validate"], "help takes one COMMAND, got also 'validate'", "Usage: nnmem [COMMAND]"),
    ] {
        let out = nnmem(args, None);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.starts_with(&format!("nnmem: {message}")), "{args:?}: {err}");
        assert!(err.contains(usage), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn input_errors_name_the_file_and_the_line() {
    let dir = temp_dir("input-errors");
    for (name, content, message) in [
        (
            "big.csv",
            &b"id,lower,upper,size\na,0,1,99999999999999999999\n"[..],
            "line 2: size 99999999999999999999 is too large for 64 bits",
        ),
        ("dup.csv", b"id,lower,upper,size\na,0,1,4\nb,0,1,4\na,1,2,4\n", "line 4: id 'a' is already used on line 2"),
        ("neg.csv", b"id,lower,upper,size\na,0,1,4\nb,-1,1,4\n", "line 3: lower -1 is negative"),
        ("empty.csv", b"id,lower,upper,size\na,3,3,4\n", "line 2: empty lifetime: upper equals lower (3)"),
        ("utf8.csv", b"id,lower,upper,size\na,0,1,4\nb\xc3,0,1,4\n", "line 3: invalid UTF-8 at column 2"),
        (
            "fixed.csv",
            b"id,lower,upper,size,offset\nin,0,4,8,0\nmid,0,4,8,\nw,2,6,8,4\n",
            "fixed offsets: in (line 2) and w (line 4) overlap in memory at step 2",
        ),
    ] {
        let path = dir.join(name);
        std::fs::write(&path, content).unwrap();
        for command in ["plan", "validate"] {
            if command == "validate" && name == "fixed.csv" {
                continue; // a row without offset: not a plan
            }
            let out = nnmem(&[command, path.to_str().unwrap()], None);
            let err = text(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{command} {name}: {err}");
            assert!(err.contains(&format!("nnmem: {}: {message}", path.display())), "{command} {name}: {err}");
        }
    }
    // Standard input is named as such.
    let out = nnmem(&["plan", "-"], Some("id,lower,upper,size\na,0,1,4\na,0,1,4\n"));
    assert!(
        text(&out.stderr).contains("nnmem: stdin: line 3: id 'a' is already used on line 2"),
        "{}",
        text(&out.stderr)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_picture_never_mixes_into_the_plan_csv() {
    let dir = temp_dir("picture");
    let input = dir.join("in.csv");
    std::fs::write(&input, EXAMPLE).unwrap();
    // nnmem plan in.csv --picture > plan.csv && nnmem validate plan.csv
    let out = nnmem(&["plan", input.to_str().unwrap(), "--picture"], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let plan = dir.join("plan.csv");
    std::fs::write(&plan, &out.stdout).unwrap();
    let check = nnmem(&["validate", plan.to_str().unwrap()], None);
    assert!(check.status.success(), "{}\n{}", text(&check.stderr), text(&out.stdout));
    assert!(text(&out.stderr).contains("0 (id=b1): size=4"), "the picture went to stderr: {}", text(&out.stderr));
    // --picture=FILE writes a file.
    let picture = dir.join("picture.txt");
    let out = nnmem(&["plan", input.to_str().unwrap(), &format!("--picture={}", picture.display())], None);
    assert!(out.status.success());
    assert!(std::fs::read_to_string(&picture).unwrap().contains("4 (id=b5): size=4"));
    assert!(!text(&out.stdout).contains("id=b5") && !text(&out.stderr).contains("id=b5"));
    std::fs::remove_dir_all(&dir).unwrap();
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out.stdout)))
}

#[test]
fn json_summary_has_every_field() {
    let out = nnmem(&["plan", "-", "--output", "/dev/null", "--json", "-", "--capacity", "16"], Some(EXAMPLE));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let j = json(&out);
    assert_eq!(j["format"], "nnmem-plan-summary/1");
    assert_eq!(j["input"], "stdin");
    assert_eq!(j["buffers"], 5);
    assert_eq!(j["alignment"], 1);
    assert_eq!(j["lower_bound_bytes"], 12);
    assert_eq!(j["peak_bytes"], 12);
    assert_eq!(j["peak_to_lower_bound"], 1.0);
    assert_eq!(j["proven_optimal"], true);
    assert_eq!(j["best_lower_bound_bytes"], 12);
    assert_eq!(j["algorithm"], "auto");
    assert!(j["winner"].as_str().is_some_and(|w| w != "auto"), "{j}");
    assert!(j["plan_time_ms"].as_f64().is_some_and(|t| t >= 0.0), "{j}");
    assert_eq!(j["search_nodes"], 0);
    assert_eq!(j["capacity_bytes"], 16);
    assert_eq!(j["fits"], true);
    assert_eq!(j["missing_bytes"], 0);
    assert_eq!((j["fixed_overlap_count"].as_u64(), j["fixed_overlap_first"].is_null()), (Some(0), true), "{j}");
    assert!(j["work_units"].as_u64().is_some_and(|w| w > 0), "{j}");
    assert_eq!(j["time_limit_cut"], false);
    assert_eq!(j.as_object().unwrap().len(), 20, "{j}");
    // Does not fit: the plan's shortfall; below the bound: no peak.
    let out = nnmem(
        &["plan", "-", "--output", "/dev/null", "--json", "-", "--algorithm", "linear", "--capacity", "19"],
        Some(EXAMPLE),
    );
    assert_eq!(out.status.code(), Some(3));
    let j = json(&out);
    assert_eq!(
        (j["peak_bytes"].as_u64(), j["fits"].as_bool(), j["missing_bytes"].as_u64()),
        (Some(20), Some(false), Some(1))
    );
    let out = nnmem(&["plan", "-", "--output", "/dev/null", "--json", "-", "--capacity", "10"], Some(EXAMPLE));
    assert_eq!(out.status.code(), Some(3));
    let j = json(&out);
    assert!(j["peak_bytes"].is_null() && j["winner"].is_null(), "{j}");
    assert_eq!((j["fits"].as_bool(), j["missing_bytes"].as_u64()), (Some(false), Some(2)));
    // Without a capacity: null capacity and missing bytes. To a file, the
    // plan CSV keeps stdout.
    let dir = temp_dir("json");
    let file = dir.join("summary.json");
    let out = nnmem(&["plan", "-", "--json", file.to_str().unwrap()], Some(EXAMPLE));
    assert!(text(&out.stdout).starts_with("id,lower,upper,size,offset\n"));
    let j: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert!(j["capacity_bytes"].is_null() && j["missing_bytes"].is_null() && j["fits"] == true, "{j}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A small training-like trace for `pool-replay`: forward activations,
/// then their gradients; sizes are multiples of 4 KiB, so no pool rounds
/// them, and the best plan reaches the lower bound (464 KiB).
const POOL_TRACE: &str = "id,lower,upper,size
input,0,3,65536
w1,0,12,16384
a1,1,4,131072
a2,2,6,65536
a3,3,7,262144
a4,4,8,65536
a5,6,9,131072
g5,8,10,131072
g4,9,11,65536
g3,10,12,262144
gw1,11,12,16384
loss,7,9,4096
";
const POOL_TRACE_LOWER_BOUND: u64 = 475_136;

/// `nnmem pool-replay --json` on [`POOL_TRACE`], one object per strategy.
fn pool_replay(extra: &[&str]) -> Vec<serde_json::Value> {
    let mut args = vec!["pool-replay", "-", "--json"];
    args.extend_from_slice(extra);
    let out = nnmem(&args, Some(POOL_TRACE));
    assert!(out.status.success(), "{}", text(&out.stderr));
    json(&out).as_array().expect("a JSON array").clone()
}

fn numbers(v: &serde_json::Value) -> Vec<u64> {
    v.as_array().expect("an array").iter().map(|n| n.as_u64().expect("a number")).collect()
}

#[test]
fn pool_replay_reports_every_strategy_in_json() {
    let all = pool_replay(&[]);
    let names: Vec<&str> = all.iter().map(|o| o["strategy"].as_str().unwrap()).collect();
    assert_eq!(names, ["no-pool", "page-unit", "caching", "replay"]);
    for o in &all {
        let name = o["strategy"].as_str().unwrap();
        for key in ["peak_reserved_bytes", "lower_bound_bytes", "served_from_plan", "steady_peak_reserved_bytes"] {
            assert!(o[key].is_u64(), "{name}: {key} in {o}");
        }
        assert!(o["time_ms"].as_f64().is_some_and(|t| t >= 0.0), "{name}: {o}");
        assert_eq!(o["lower_bound_bytes"], POOL_TRACE_LOWER_BOUND);
        assert_eq!((o["buffers"].as_u64(), o["requests_per_iteration"].as_u64()), (Some(12), Some(12)));
        let (allocs, frees) = (numbers(&o["device_allocs"]), numbers(&o["device_frees"]));
        assert_eq!((allocs.len(), frees.len()), (3, 3), "{name}: one entry per iteration");
        assert_eq!(numbers(&o["peak_reserved_per_iteration"]).len(), 3);
        // No pool can hold less than what is live at once.
        assert!(o["peak_reserved_bytes"].as_u64().unwrap() >= POOL_TRACE_LOWER_BOUND, "{name}: {o}");
        if name == "no-pool" {
            // Every request goes to the device and comes back at once.
            assert_eq!((allocs, frees), (vec![12; 3], vec![12; 3]), "{o}");
            assert_eq!(o["peak_reserved_bytes"], POOL_TRACE_LOWER_BOUND);
        } else {
            // The cache (or the plan) serves every later iteration.
            assert!(allocs[0] > 0 && allocs[1..] == [0, 0], "{name}: device allocs {allocs:?}");
        }
    }
    let replay = &all[3];
    let steady = replay["steady_peak_reserved_bytes"].as_u64().unwrap();
    assert!(
        steady as f64 <= 1.01 * POOL_TRACE_LOWER_BOUND as f64,
        "replay from iteration 2: {steady} B against the lower bound {POOL_TRACE_LOWER_BOUND} B"
    );
    // Iterations 2 and 3 come from the plan, request for request.
    assert_eq!(numbers(&replay["served_from_plan_per_iteration"]), [0, 12, 12]);
    assert_eq!(replay["served_from_plan"], 24);
    assert_eq!(replay["plan_departures"], 0);
    for o in &all[..3] {
        assert_eq!(o["served_from_plan"], 0, "{o}");
    }
}

#[test]
fn pool_replay_runs_the_strategies_asked_for_on_either_device() {
    for device in ["host", "virtual"] {
        let runs = pool_replay(&[
            "--strategy",
            "replay",
            "--strategy=caching",
            "--strategy",
            "replay",
            "--iterations",
            "2",
            "--device",
            device,
        ]);
        let names: Vec<&str> = runs.iter().map(|o| o["strategy"].as_str().unwrap()).collect();
        assert_eq!(names, ["replay", "caching"], "{device}: in the order given, each once");
        for o in &runs {
            assert_eq!(o["device"], device);
            assert_eq!(numbers(&o["device_allocs"]).len(), 2);
            assert_eq!(numbers(&o["device_allocs"])[1], 0, "{device}: {o}");
        }
    }
}

#[test]
fn pool_replay_takes_rafs_strategy_names_and_reports_nnmems() {
    let runs = pool_replay(&["--strategy", "page_unit_pool", "--strategy=no_pool", "--strategy", "page-unit"]);
    let names: Vec<&str> = runs.iter().map(|o| o["strategy"].as_str().unwrap()).collect();
    assert_eq!(names, ["page-unit", "no-pool"], "an alias and its name are one strategy");
}

#[test]
fn pool_replay_prints_a_text_report() {
    let out = nnmem(&["pool-replay", "-", "--iterations", "2"], Some(POOL_TRACE));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report = text(&out.stdout);
    assert!(report.contains("lower bound     475136 B (464.00 KiB)"), "{report}");
    assert!(report.contains("2 iteration(s) on host memory, alignment 256 B"), "{report}");
    for name in ["no-pool", "page-unit", "caching", "replay"] {
        assert!(report.contains(&format!("\n{name}\n  peak reserved ")), "{name}: {report}");
    }
    assert!(report.contains("  device allocs     12 12 (per iteration)"), "no-pool: {report}");
    assert!(report.contains("  served from plan  0 12 (per iteration)"), "replay: {report}");
}

#[test]
fn pool_replay_refuses_bad_input_and_usage() {
    let out = nnmem(&["pool-replay", "/nonexistent/trace.csv"], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).starts_with("nnmem: /nonexistent/trace.csv: "), "{}", text(&out.stderr));
    let out = nnmem(&["pool-replay", "-"], Some("id,lower,upper,size\na,0,3,4\nb,5,x,4\n"));
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("stdin: line 3: upper 'x'"), "{}", text(&out.stderr));
    for (args, message) in [
        (
            &["pool-replay", "-", "--iterations", "0"][..],
            "nnmem: --iterations: '0' is not a positive whole number of iterations",
        ),
        (
            &["pool-replay", "-", "--iterations=-2"],
            "nnmem: --iterations: '-2' is not a positive whole number of iterations",
        ),
        (
            &["pool-replay", "-", "--iterations", "-1"],
            "nnmem: --iterations: '-1' is not a positive whole number of iterations",
        ),
        (
            &["pool-replay", "-", "--iterations", "4294967296"],
            "nnmem: --iterations: '4294967296' is too large (at most 4294967295)",
        ),
        (
            &["pool-replay", "-", "--alignment", "99999999999999999999"],
            "nnmem: --alignment: '99999999999999999999' is too large (at most 9223372036854775808)",
        ),
        (
            &["pool-replay", "-", "--strategy", "bfc"],
            "nnmem: --strategy: unknown pool strategy 'bfc' (known: no-pool, page-unit, caching, replay)",
        ),
        (&["pool-replay", "-", "--device", "gpu"], "nnmem: --device: unknown device 'gpu' (known: host, virtual)"),
        (&["pool-replay", "-", "--alignment", "24"], "nnmem: --alignment: alignment 24 is not a power of two"),
        (&["pool-replay"], "nnmem: pool-replay needs <FILE.csv|->"),
    ] {
        let out = nnmem(args, Some(POOL_TRACE));
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = text(&out.stderr);
        assert!(err.starts_with(&format!("{message}\n")), "{args:?}: {err}");
        assert!(err.contains("Usage: nnmem pool-replay "), "{args:?}: {err}");
    }
}

/// A small model for `nnmem regions`: two constants, an input, an output,
/// two activations live together, and a view inside the first.
const REGIONS_MODEL: &str = "id,lower,upper,size,kind,name,tags,view_of,view_offset
w1,,,1024,constant,fc1.weight,op=fc,,
w2,,,256,constant,fc2.weight,op=fc,,
x,,,512,input,image,,,
y,,,64,output,logits,,,
a1,0,2,2048,,,,,
a2,1,3,1024,activation,,,,
v1,1,2,512,view,,,a1,512
";

/// `nnmem regions ... --json -` on [`REGIONS_MODEL`].
fn regions_json(extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["regions", "-", "--json", "-"];
    args.extend_from_slice(extra);
    let out = nnmem(&args, Some(REGIONS_MODEL));
    assert!(out.status.success(), "{}", text(&out.stderr));
    json(&out)
}

/// The tensor named `name` in a regions JSON, and its region.
fn tensor<'j>(j: &'j serde_json::Value, name: &str) -> (&'j serde_json::Value, &'j serde_json::Value) {
    let t = j["tensors"].as_array().unwrap().iter().find(|t| t["name"] == name).unwrap();
    let r = j["regions"].as_array().unwrap().iter().find(|r| r["name"] == t["region"]).unwrap();
    (t, r)
}

#[test]
fn regions_with_the_defaults_place_every_tensor() {
    let j = regions_json(&[]);
    let region_of = |name: &str| tensor(&j, name).0["region"].as_str().unwrap().to_string();
    assert_eq!(region_of("fc1.weight"), "constant-weights");
    assert_eq!(region_of("fc2.weight"), "constant-weights");
    assert_eq!(region_of("image"), "mutable-input-weights");
    assert_eq!(region_of("logits"), "mutable-output-weights");
    assert_eq!(region_of("a1"), "activations");
    assert_eq!(region_of("v1"), "activations");
    // Every address is its region's base plus its offset; the view sits
    // 512 B into its origin.
    for t in j["tensors"].as_array().unwrap() {
        let (t, r) = tensor(&j, t["name"].as_str().unwrap());
        assert_eq!(t["address"].as_u64().unwrap(), r["base_address"].as_u64().unwrap() + t["offset"].as_u64().unwrap());
        assert_eq!(t["spilled"], false);
    }
    assert_eq!(tensor(&j, "v1").0["address"].as_u64().unwrap(), tensor(&j, "a1").0["address"].as_u64().unwrap() + 512);
    // Constants stacked in model order, no reuse.
    assert_eq!(
        (tensor(&j, "fc1.weight").0["offset"].as_u64(), tensor(&j, "fc2.weight").0["offset"].as_u64()),
        (Some(0), Some(1024))
    );
    // The two activations are live together: the region reaches its lower
    // bound, 3 KiB.
    let activations = tensor(&j, "a1").1;
    assert_eq!(
        (activations["peak_bytes"].as_u64(), activations["lower_bound_bytes"].as_u64()),
        (Some(3072), Some(3072))
    );
    assert_eq!(activations["tensors"], serde_json::json!(["a1", "a2", "v1"]));
    // Regions of one level do not overlap.
    let mut spans: Vec<(u64, u64)> = j["regions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["size_bytes"].as_u64().unwrap() > 0)
        .map(|r| {
            (
                r["base_address"].as_u64().unwrap(),
                r["base_address"].as_u64().unwrap() + r["size_bytes"].as_u64().unwrap(),
            )
        })
        .collect();
    spans.sort();
    assert!(spans.windows(2).all(|w| w[0].1 <= w[1].0), "{spans:?}");
    // The text table by default, the same figures.
    let out = nnmem(&["regions", "-"], Some(REGIONS_MODEL));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let table = text(&out.stdout);
    assert!(table.contains("level   region") || table.contains("level  region"), "{table}");
    let line = table.lines().find(|l| l.starts_with("v1 ")).unwrap_or_else(|| panic!("{table}"));
    assert!(line.contains(" view ") && line.contains(" activations ") && line.contains(" 512 B"), "{line}");
}

#[test]
fn regions_json_has_the_keys_backends_read() {
    let j = regions_json(&[]);
    for r in j["regions"].as_array().unwrap() {
        for key in ["name", "level", "base_address", "size_bytes", "peak_bytes", "lower_bound_bytes"] {
            assert!(!r[key].is_null(), "{key}: {r}");
        }
        assert!(r["tensors"].is_array(), "{r}");
        assert_eq!(r["level"], "memory");
    }
    assert_eq!(j["tensors"].as_array().unwrap().len(), 7);
    for t in j["tensors"].as_array().unwrap() {
        for key in ["name", "region", "offset", "address", "spilled"] {
            assert!(!t[key].is_null(), "{key}: {t}");
        }
    }
    assert!(j["levels"].is_array() && j["spills"].as_array().unwrap().is_empty(), "{j}");
}

#[test]
fn regions_reads_a_config_and_spills_what_does_not_fit() {
    let dir = temp_dir("regions-config");
    let config = dir.join("regions.toml");
    std::fs::write(
        &config,
        r#"defaults = true
[[level]]
name = "sram"
rank = 0
[[level]]
name = "memory"
rank = 1
[[region]]
name = "fc-weights"
level = "sram"
planner = "sequential"
reuse = false
base_address = 0x1000
capacity = 1024
spill = "ddr-weights"
rule = { and = [{ kind = "constant" }, { tag = "op=fc" }] }
[[region]]
name = "ddr-weights"
planner = "sequential"
reuse = false
rule = { not = { all_tensors = true } }
"#,
    )
    .unwrap();
    let svg = dir.join("regions.svg");
    let j = regions_json(&["--config", config.to_str().unwrap(), "--svg", svg.to_str().unwrap()]);
    // The SRAM region needs 1280 B: fc1.weight, the larger lifetime
    // pressure, moves to DDR; fc2.weight then fits.
    let (fc2, sram) = tensor(&j, "fc2.weight");
    assert_eq!(
        (fc2["region"].as_str(), fc2["address"].as_u64(), fc2["spilled"].as_bool()),
        (Some("fc-weights"), Some(0x1000), Some(false))
    );
    assert_eq!(sram["level"], "sram");
    let (fc1, ddr) = tensor(&j, "fc1.weight");
    assert_eq!((fc1["region"].as_str(), fc1["spilled"].as_bool()), (Some("ddr-weights"), Some(true)), "{j}");
    assert_eq!(ddr["level"], "memory");
    let spill = &j["spills"][0];
    assert_eq!(
        (spill["tensor"].as_str(), spill["from"].as_str(), spill["to"].as_str()),
        (Some("fc1.weight"), Some("fc-weights"), Some("ddr-weights"))
    );
    assert!(spill["reason"].as_str().unwrap().contains("1280 B"), "{spill}");
    assert_eq!(j["spills"].as_array().unwrap().len(), 1);
    assert_eq!(j["levels"][0]["name"], "sram");
    // The picture: a lane per level, the fixed-base SRAM region marked,
    // the spilled tensor drawn.
    let picture = std::fs::read_to_string(&svg).unwrap();
    assert!(picture.starts_with("<svg ") && picture.trim_end().ends_with("</svg>"));
    assert_eq!(picture.matches(r#"<g class="lane""#).count(), 2);
    assert!(
        picture.contains("region fc-weights (level sram, description") && picture.contains("fixed base: base 0x1000"),
        "{picture}"
    );
    assert!(
        picture.contains("fc1.weight (constant, function main): region ddr-weights")
            && picture.contains(", spilled</title>")
    );
    // Without the spill region, the error says what is missing, exit 3.
    std::fs::write(&config, std::fs::read_to_string(&config).unwrap().replace("spill = \"ddr-weights\"\n", ""))
        .unwrap();
    let out = nnmem(&["regions", "-", "--config", config.to_str().unwrap()], Some(REGIONS_MODEL));
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let e = text(&out.stderr);
    assert!(e.contains("region 'fc-weights' needs") && e.contains("capacity 1024 B") && e.contains("missing"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A configuration that describes no region gets Glow's defaults, as
/// running without `--config` does; `defaults = false` refuses instead.
#[test]
fn regions_with_a_config_of_no_regions_uses_the_defaults() {
    let dir = temp_dir("regions-empty-config");
    let want = regions_json(&[]);
    for (name, content) in [("empty.toml", ""), ("levels.toml", "[[level]]\nname = \"sram\"\nrank = 0\n")] {
        let config = dir.join(name);
        std::fs::write(&config, content).unwrap();
        let j = regions_json(&["--config", config.to_str().unwrap()]);
        assert_eq!(j["regions"], want["regions"], "{name}");
        assert_eq!(j["tensors"], want["tensors"], "{name}");
    }
    let config = dir.join("none.toml");
    std::fs::write(&config, "defaults = false\n").unwrap();
    let out = nnmem(&["regions", "-", "--config", config.to_str().unwrap()], Some(REGIONS_MODEL));
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let e = text(&out.stderr);
    assert!(e.contains("'fc1.weight' (constant, function main) matches no region; tried: no regions"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The text and the JSON give a level the same start and size: the example
/// configuration's SRAM bank, "2368 B from 0x20000000".
#[test]
fn regions_text_and_json_agree_on_a_level() {
    let root = env!("CARGO_MANIFEST_DIR");
    let config = format!("{root}/../examples/regions.toml");
    let model = format!("{root}/../examples/regions_model.csv");
    let out = nnmem(&["regions", "--config", &config, &model], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    // "6 regions in 2 levels: sram (rank 0, 2368 B from 0x20000000), memory (rank 1, 168128 B)"
    let first = text(&out.stdout).lines().next().unwrap().to_string();
    let levels: Vec<(String, u64, u64)> = first
        .split(": ")
        .nth(1)
        .unwrap()
        .split("), ")
        .map(|l| {
            let (name, rest) = l.split_once(" (rank ").unwrap();
            let figures = rest.split_once(", ").unwrap().1.trim_end_matches(')');
            let (size, start) = match figures.split_once(" B from 0x") {
                Some((size, start)) => (size, u64::from_str_radix(start, 16).unwrap()),
                None => (figures.trim_end_matches(" B"), 0),
            };
            (name.to_string(), start, size.parse().unwrap())
        })
        .collect();
    assert_eq!(levels.len(), 2, "{first}");
    assert_eq!((levels[0].0.as_str(), levels[0].1, levels[1].1), ("sram", 0x2000_0000, 0), "{first}");
    let out = nnmem(&["regions", "--config", &config, &model, "--json", "-"], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let j = json(&out);
    for (level, (name, start, size)) in j["levels"].as_array().unwrap().iter().zip(&levels) {
        assert_eq!(level["name"], name.as_str());
        assert_eq!(level["start_address"].as_u64(), Some(*start), "{level}");
        assert_eq!(level["size_bytes"].as_u64(), Some(*size), "{level}");
        assert_eq!(level["end_address"].as_u64(), Some(start + size), "{level}");
    }
}

#[test]
fn regions_refuses_bad_input_with_the_line_and_column() {
    let cases: [(&[&str], Option<&str>, &str); 6] = [
        (&["regions", "no-such-model.csv"], None, "nnmem: no-such-model.csv: "),
        (
            &["regions", "-"],
            Some("id,lower,upper,size,kind\na,0,1,4,activation\nb,0,1,4,weights\n"),
            "nnmem: stdin: line 3, column kind: unknown tensor kind 'weights' (known: constant, mutable, input, output, input-output, activation, view)",
        ),
        (
            &["regions", "-"],
            Some("id,lower,upper,size,colour\na,0,1,4,red\n"),
            "nnmem: stdin: line 1: unknown column 'colour' (known: id, lower, upper, size, kind, name",
        ),
        (
            &["regions", "-"],
            Some("id,lower,upper,size,view_of\na,0,1,4,\nv,0,1,4,b\n"),
            "nnmem: stdin: line 3: view 'v' (view, function main) names origin 'b', which is not in function main",
        ),
        (&["regions", "-", "--config", "no-such-config.toml"], Some(REGIONS_MODEL), "nnmem: no-such-config.toml: cannot read the region configuration: "),
        (
            &["regions", "-"],
            Some("id,lower,upper,size,kind,view_of,view_offset\na,0,1,4,,,\nv,0,1,4,view,a,2\n"),
            "nnmem: stdin: line 3: view 'v' (view, function main) reaches past the end of its origin 'a'",
        ),
    ];
    for (args, stdin, want) in cases {
        let out = nnmem(args, stdin);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", text(&out.stderr));
        assert!(text(&out.stderr).starts_with(want), "{args:?}\n  got: {}\n want: {want}", text(&out.stderr));
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    // A config that does not parse: its file and where.
    let dir = temp_dir("regions-bad-config");
    let config = dir.join("bad.toml");
    std::fs::write(&config, "[[region]]\nname = \"x\"\nrule = { kind = \"weights\" }\n").unwrap();
    let out = nnmem(&["regions", "-", "--config", config.to_str().unwrap()], Some(REGIONS_MODEL));
    assert_eq!(out.status.code(), Some(1));
    let e = text(&out.stderr);
    assert!(e.starts_with(&format!("nnmem: {}: ", config.display())) && e.contains("line 3"), "{e}");
    // An empty model says so, as plan does, and a tensor too large for its
    // region's alignment is named with its file and line.
    let empty = dir.join("empty.csv");
    std::fs::write(&empty, "").unwrap();
    let huge = dir.join("huge.csv");
    std::fs::write(&huge, format!("id,lower,upper,size\nsmall,0,1,8\nactivations,0,2,{}\n", u64::MAX)).unwrap();
    for (path, want) in [
        (&empty, format!("nnmem: {}: line 1: empty input, expected a header with id and size", empty.display())),
        (
            &huge,
            format!(
                "nnmem: {}: line 3: region 'activations': tensor 'activations' (activation, function main): size {} \
                 rounded up to alignment 64 overflows 64 bits",
                huge.display(),
                u64::MAX
            ),
        ),
    ] {
        let out = nnmem(&["regions", path.to_str().unwrap()], None);
        assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
        assert!(text(&out.stderr).starts_with(&want), "got: {}\nwant: {want}", text(&out.stderr));
    }
    std::fs::remove_dir_all(&dir).unwrap();
    // Usage errors exit 2.
    let out = nnmem(&["regions"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).starts_with("nnmem: regions needs <MODEL.csv|->"), "{}", text(&out.stderr));
}
