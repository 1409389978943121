//! The `bareverbs` binary with stdout a pipe nobody reads (`bareverbs … |
//! head` after `head` has gone): every command stops and exits 0 without a
//! word on stderr, never the standard library's "failed printing to
//! stdout: Broken pipe" panic (exit 101) or an `error:` line.
//!
//! The pipe's read end is closed before the binary starts, so its first
//! write to stdout fails (EPIPE) whatever the timing.

use std::process::{Command, Stdio};

/// Runs the binary with `args` and a stdout whose reader has closed;
/// asserts exit status 0 and returns stderr.
fn run_with_closed_stdout(args: &[&str]) -> String {
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    let o = Command::new(env!("CARGO_BIN_EXE_bareverbs"))
        .args(args)
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .expect("run bareverbs");
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{args:?}: {:?}; stderr: {err}",
        o.status
    );
    err
}

/// [`run_with_closed_stdout`], and stderr is quiet (the sweep's progress
/// lines, `[###…] n/total …`, are the only output allowed there).
fn quiet_on_closed_stdout(args: &[&str]) {
    let err = run_with_closed_stdout(args);
    let noise: Vec<&str> = err.lines().filter(|l| !l.starts_with('[')).collect();
    assert!(noise.is_empty(), "{args:?}: stderr: {err}");
}

#[test]
fn budget_table() {
    quiet_on_closed_stdout(&["budget", "--table"]);
}

#[test]
fn budget_text_and_json() {
    quiet_on_closed_stdout(&["budget", "--max-send-wr", "1024"]);
    quiet_on_closed_stdout(&["budget", "--max-send-wr", "1024", "--json"]);
}

#[test]
fn devinfo_verbose_list_and_json() {
    quiet_on_closed_stdout(&["devinfo", "-v"]);
    quiet_on_closed_stdout(&["devinfo", "-l"]);
    quiet_on_closed_stdout(&["devinfo", "--json"]);
}

#[test]
fn selftest_json_and_text() {
    quiet_on_closed_stdout(&["selftest", "--json"]);
    quiet_on_closed_stdout(&["selftest"]);
}

#[test]
fn sweep_tables_and_json() {
    quiet_on_closed_stdout(&["sweep", "--iters", "0"]);
    quiet_on_closed_stdout(&["sweep", "--iters", "0", "--json"]);
}

#[test]
fn sweep_writes_its_files_before_stdout() {
    let dir = std::env::temp_dir().join(format!("bareverbs-closed-stdout-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let svg = dir.join("chart.svg");
    let json = dir.join("sweep.json");
    let args = [
        "sweep",
        "--iters",
        "0",
        "--json",
        "--svg",
        svg.to_str().unwrap(),
        "--json-file",
        json.to_str().unwrap(),
    ];
    let err = run_with_closed_stdout(&args);
    assert!(!err.contains("panicked") && !err.contains("error"), "{err}");
    assert!(std::fs::metadata(&svg).unwrap().len() > 0, "{err}");
    assert!(std::fs::metadata(&json).unwrap().len() > 0, "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn decode_wqe_and_cqe() {
    let wqe = [
        "decode", "wqe", "0000000a", "0abcde02", "00000008", "00000000", "00000100", "00a0b0c0",
        "00000000", "10000040",
    ];
    quiet_on_closed_stdout(&wqe);
    let cqe = "00".repeat(64);
    quiet_on_closed_stdout(&["decode", "cqe", &cqe]);
    quiet_on_closed_stdout(&["decode", "cqe", &cqe, "--json"]);
}

#[test]
fn conform_on_a_vector_file() {
    let file = bareverbs_tool::vectors::vectors_dir().join("cqe_vectors.txt");
    if !file.exists() {
        eprintln!(
            "{} missing (set BAREVERBS_VECTORS); skipping",
            file.display()
        );
        return;
    }
    quiet_on_closed_stdout(&["conform", file.to_str().expect("utf-8 path")]);
}

#[test]
fn perf_commands() {
    quiet_on_closed_stdout(&["perf", "poll", "--iters", "1000"]);
    quiet_on_closed_stdout(&["perf", "post", "--iters", "1000"]);
    quiet_on_closed_stdout(&["perf", "post-recv", "--iters", "1000"]);
    // perftest-style text is streamed row by row.
    quiet_on_closed_stdout(&["perf", "write-lat", "-n", "5"]);
    quiet_on_closed_stdout(&["perf", "write-bw", "-n", "5", "--json"]);
}

#[test]
fn version_help_and_completions() {
    quiet_on_closed_stdout(&["version"]);
    quiet_on_closed_stdout(&["--version"]);
    quiet_on_closed_stdout(&["--help"]);
    quiet_on_closed_stdout(&["sweep", "--help"]);
    quiet_on_closed_stdout(&["completions", "bash"]);
}
