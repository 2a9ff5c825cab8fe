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

const EXAMPLE: &str = "id,lower,upper,size\nb1,0,3,4\nb2,3,9,4\nb3,0,9,4\nb4,9,21,4\nb5,0,21,4\n";

#[test]
fn built_in_example_prints_a_report() {
    let out = nnmem(&["plan"], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report = text(&out.stdout);
    assert!(report.contains("buffers         1042"), "{report}");
    assert!(report.contains("lower bound     1515472556 B"), "{report}");
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
    assert!(text(&out.stderr).contains("line 3: upper 2 is below lower 5"), "{}", text(&out.stderr));
    let out = nnmem(&["plan", "-"], Some("id,lower,upper,size\na,0,3,four\n"));
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("line 2: size 'four'"));
}

#[test]
fn capacity_too_small_exits_3_with_the_missing_bytes() {
    let out = nnmem(&["plan", "-", "--capacity", "10"], Some(EXAMPLE));
    assert_eq!(out.status.code(), Some(3));
    assert!(text(&out.stderr).contains("requested 12 B, available 10 B, missing 2 B"), "{}", text(&out.stderr));
}

#[test]
fn validate_names_the_overlapping_pair() {
    let plan = "id,lower,upper,size,offset\nx,0,4,8,0\ny,2,6,8,4\n";
    let out = nnmem(&["validate", "-"], Some(plan));
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("x (line 2) and y (line 3) overlap in memory at step 2"), "{}", text(&out.stderr));
}

#[test]
fn writes_output_svg_and_picture() {
    let dir = std::env::temp_dir().join(format!("nnmem-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
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
    assert_eq!(picture.matches("<rect x=").count(), 5);
    assert!(text(&out.stdout).contains("0 (id=0): size=16"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(nnmem(&["plan", "--algorithm", "magic"], None).status.code(), Some(2));
    assert_eq!(nnmem(&["bogus"], None).status.code(), Some(2));
    assert!(nnmem(&["--help"], None).status.success());
}

#[test]
fn exact_with_a_capacity_fits_a_minimalloc_instance() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/data/minimalloc/challenging/H.1048576.csv");
    let out = nnmem(&["plan", path, "--algorithm", "exact", "--capacity", "1048576", "--time-limit", "30"], None);
    let report = text(&out.stderr);
    assert!(out.status.success(), "{report}");
    assert!(report.contains("capacity        1048576 B: fits"), "{report}");
    assert!(report.contains("proven optimal  yes"), "{report}");
    assert!(report.contains("search          "), "the report gives the nodes: {report}");
    // The plan on stdout is valid.
    let check = nnmem(&["validate", "-"], Some(&text(&out.stdout)));
    assert!(check.status.success(), "{}", text(&check.stderr));
    assert!(text(&check.stdout).contains("peak 1048576 B"), "{}", text(&check.stdout));
}

#[test]
fn exact_reports_a_capacity_it_cannot_meet() {
    // The lower bound is 12: nothing fits 11, and the search proves it.
    let out = nnmem(&["plan", "-", "--algorithm", "exact", "--capacity", "11"], Some(EXAMPLE));
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("missing 1 B"), "{}", text(&out.stderr));
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
    assert!(text(&out.stderr).contains("fixed buffers 0 and 1 overlap in memory at step 1"), "{}", text(&out.stderr));
    let out = nnmem(&["plan", "-", "--algorithm", "size-best-fit", "--trust-fixed"], Some(SHARED_OFFLINE));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "id,lower,upper,size,offset\na,0,3,16,0\nb,1,4,16,8\nc,0,4,8,24\n");
    let report = text(&out.stderr);
    assert!(report.contains("fixed overlaps  1 pair(s) of fixed buffers share memory (trusted), first on input lines 2 and 3 at step 1"), "{report}");
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
    assert!(text(&out.stderr).contains("fixed overlaps: 1 pair(s), first a (line 2) and b (line 3) at step 1"), "{}", text(&out.stderr));
    let out = nnmem(&["validate", "-", "--fixed-from", input, "--trust-fixed"], Some(plan));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report = text(&out.stdout);
    assert!(report.contains("valid: 3 buffers, peak 32 B, lower bound 32 B"), "{report}");
    assert!(report.contains("fixed overlaps: 1 pair(s), first a (line 2) and b (line 3) at step 1 (trusted)"), "{report}");
    // A planned buffer on a fixed one is still invalid; a moved fixed buffer is refused.
    let clash = "id,lower,upper,size,offset\na,0,3,16,0\nb,1,4,16,8\nc,0,4,8,16\n";
    let out = nnmem(&["validate", "-", "--fixed-from", input, "--trust-fixed"], Some(clash));
    assert!(text(&out.stderr).contains("b (line 3) and c (line 4) overlap in memory at step 1"), "{}", text(&out.stderr));
    let moved = "id,lower,upper,size,offset\na,0,3,16,0\nb,1,4,16,16\nc,0,4,8,32\n";
    let out = nnmem(&["validate", "-", "--fixed-from", input, "--trust-fixed"], Some(moved));
    assert!(text(&out.stderr).contains("fixed buffer b is at 16 but"), "{}", text(&out.stderr));
    std::fs::remove_dir_all(&dir).unwrap();
}
