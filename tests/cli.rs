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
