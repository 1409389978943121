//! The `bareverbs` binary on bad input: a one-line `error: …` naming the
//! problem and exit status 2, never a panic; run-time failures exit 1.

use std::process::{Command, Output};

fn bareverbs(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bareverbs"))
        .args(args)
        .output()
        .expect("run bareverbs")
}

/// Asserts exit status `code` and a stderr of exactly one `error: ` line
/// containing `needle`.
fn refused(args: &[&str], code: i32, needle: &str) -> String {
    let o = bareverbs(args);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(code), "{args:?}: {err}");
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    assert!(err.starts_with("error: "), "{args:?}: {err}");
    assert!(err.contains(needle), "{args:?}: {err}");
    err
}

/// Like [`refused`], and the message is a single line (our errors; clap's
/// usage errors add a `--help` hint line of their own).
fn refused_one_line(args: &[&str], code: i32, needle: &str) {
    let err = refused(args, code, needle);
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
}

#[test]
fn non_ascii_hex_is_refused_with_its_position() {
    refused_one_line(
        &["decode", "cqe", "aé0"],
        2,
        "not a hex digit: 'é' at position 2",
    );
    refused_one_line(
        &["decode", "wqe", "00", "1é"],
        2,
        "not a hex digit: 'é' at position 5",
    );
    refused_one_line(&["decode", "cqe", "abc"], 2, "odd number of hex digits");
    // Too short to be a CQE: bad input too.
    refused_one_line(&["decode", "cqe", "00"], 2, "64 or 128 bytes");
}

#[test]
fn sweep_sge_zero_is_a_usage_error_in_words() {
    let o = bareverbs(&["sweep", "--sge", "0", "--iters", "0"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("TooManySges"), "{err}");
    refused_one_line(&["sweep", "--sge", "0", "--iters", "0"], 2, "--sge 0");
}

#[test]
fn output_paths_are_checked_before_the_sweep() {
    // One line and no progress bar: nothing ran before the refusal.
    refused_one_line(
        &["sweep", "--svg", "/no/dir/x.svg"],
        2,
        "--svg /no/dir/x.svg: ",
    );
    refused_one_line(
        &["sweep", "--json-file", "/no/dir/x.json"],
        2,
        "--json-file /no/dir/x.json: ",
    );
}

#[test]
fn sizes_read_like_perftest() {
    for (s, bytes) in [("64K", " 65536 "), ("0x1000", " 4096 "), ("010", " 8 ")] {
        let o = bareverbs(&["perf", "write-lat", "--device", "model", "-n", "5", "-s", s]);
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success(),
            "-s {s}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(out.contains(bytes), "-s {s}: {out}");
    }
    refused(&["perf", "write-lat", "-s", "64k"], 2, "upper case");
    refused(
        &["perf", "write-lat", "-s", "0"],
        2,
        "Message Size should be between 1 and 2147483647",
    );
    refused(&["sweep", "-s", "1x"], 2, "unexpected 'x'");
    refused(&["budget", "--max-inline-data", "-1"], 2, "");
    let o = bareverbs(&["budget", "--max-send-wr", "64", "--max-inline-data", "0x40"]);
    assert!(o.status.success());
}

#[test]
fn negative_counts_say_what_is_wrong() {
    refused(
        &["perf", "write-lat", "-n", "-1"],
        2,
        "must be a positive integer",
    );
    refused(
        &["perf", "write-bw", "-t", "-3"],
        2,
        "must be a positive integer",
    );
}

#[test]
fn bad_combinations_and_files_exit_2() {
    refused_one_line(
        &["perf", "read-lat", "-c", "UC"],
        2,
        "UC connection not possible in READ/ATOMIC verbs",
    );
    refused_one_line(&["perf", "write-lat", "--device", "nope"], 2, "--device");
    refused_one_line(
        &["perf", "write-lat", "-n", "3"],
        2,
        "Iteration num should be between 5 and",
    );
    refused_one_line(&["budget", "--caps", "/no/such.toml"], 2, "/no/such.toml");
    refused_one_line(&["conform", "/no/such.vec"], 2, "/no/such.vec");
    refused_one_line(&["devinfo", "--device", "nope"], 2, "unknown device");
}

#[test]
fn run_time_failures_exit_1() {
    // A device that cannot be opened is a run-time failure, not a usage error.
    refused_one_line(
        &[
            "perf",
            "write-lat",
            "--device",
            "vfio:ffff:ff:1f.7",
            "-n",
            "5",
        ],
        1,
        "",
    );
}

/// Built without the `c-loop` feature, the commands that need the C
/// comparison loop say which feature to build with (a run-time failure).
#[cfg(not(feature = "c-loop"))]
#[test]
fn c_loop_commands_name_the_feature() {
    let want =
        "built without the c-loop feature: rebuild with --features c-loop; needs libibverbs-dev";
    refused_one_line(&["perf", "compare-c", "--rounds", "1"], 1, want);
    refused_one_line(&["perf", "post", "--c-loop", "--iters", "10"], 1, want);
}
