//! Every command's `--json` output, from the binary, against the key
//! lists of `docs/json-commands.md` (schema `bareverbs/1`), and the shared
//! `--device` / SGE-limit refusals.

use bareverbs_tool::envelope::{assert_documented, documented, key_paths};
use serde_json::Value;
use std::process::{Command, Output};

fn bareverbs(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bareverbs"))
        .args(args)
        .output()
        .expect("run bareverbs")
}

/// Runs `args`, expects exit 0 and one JSON object on stdout.
fn json(args: &[&str]) -> Value {
    let o = bareverbs(args);
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "{args:?}: not JSON ({e}): {}",
            String::from_utf8_lossy(&o.stdout)
        )
    })
}

fn check(command: &str, args: &[&str]) -> Value {
    let v = json(args);
    assert_documented(command, &v);
    v
}

#[test]
fn devinfo_and_selftest() {
    let v = check("devinfo", &["devinfo", "--json"]);
    assert_eq!(v["max_sge"], 30);
    let v = check(
        "devinfo",
        &["devinfo", "-d", "fw-sim", "-i", "1", "--json", "--selftest"],
    );
    assert_eq!(v["selftest"]["result"], "PASSED");
    assert_eq!(v["device"], "fw-sim");
    check("selftest", &["selftest", "--json"]);
    // -l: only the envelope and `devices`, all documented.
    let v = json(&["devinfo", "-l", "--json"]);
    let (_, optional) = documented("devinfo");
    for k in key_paths(&v) {
        assert!(
            ["schema", "command"].contains(&k.as_str()) || optional.contains(&k),
            "{k}"
        );
    }
    assert_eq!(v["devices"][0], "sim");
}

#[test]
fn budget() {
    check(
        "budget",
        &[
            "budget",
            "--max-send-wr",
            "1024",
            "--max-send-sge",
            "4",
            "--cqe",
            "2000",
            "--json",
        ],
    );
    check(
        "budget",
        &["budget", "--device", "sim", "--max-send-wr", "64", "--json"],
    );
}

#[test]
fn sweep_stdout_and_file_agree() {
    let f = std::env::temp_dir().join(format!("bareverbs-sweep-{}.json", std::process::id()));
    let fs = f.to_str().unwrap();
    let a = ["sweep", "--wr", "128", "--sge", "1,4", "--iters", "0"];
    let mut with = a.to_vec();
    with.extend(["--json", "--json-file", fs]);
    let v = check("sweep", &with);
    let file: Value = serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
    std::fs::remove_file(&f).unwrap();
    assert_eq!(v, file);
    assert!(v["measured_on"].is_null());
    // Without --json the tables are text; --json-file alone writes the file.
    let o = bareverbs(&a);
    assert!(o.status.success());
    assert!(serde_json::from_slice::<Value>(&o.stdout).is_err());
}

#[test]
fn decode() {
    let cqe = "00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 \
               00000005 00000000 00000000 00000000 00000000 00008204 0a0abcde 000700d0";
    let mut a = vec!["decode", "cqe"];
    a.extend(cqe.split(' ').filter(|s| !s.is_empty()));
    a.extend(["--json", "--ci", "0", "--ncqe", "8"]);
    let v = check("decode cqe", &a);
    assert_eq!(v["status"], "LOC_PROT_ERR");
    let v = check(
        "decode wqe",
        &[
            "decode", "wqe", "0000000a", "0abcde02", "00000008", "00000000", "00000100",
            "00a0b0c0", "00000000", "10000040", "--json",
        ],
    );
    assert_eq!(v["segments"][0]["type"], "data");
}

#[test]
fn perf_micro_benchmarks() {
    check("perf post", &["perf", "post", "--iters", "2000", "--json"]);
    let c_loop = bareverbs_tool::perf::c_loop::C_LOOP_BUILT;
    if c_loop {
        check(
            "perf post",
            &["perf", "post", "--c-loop", "--iters", "2000", "--json"],
        );
    }
    check("perf poll", &["perf", "poll", "--iters", "2000", "--json"]);
    check(
        "perf post-recv",
        &["perf", "post-recv", "--iters", "2000", "--json"],
    );
    if !c_loop {
        return;
    }
    let v = check(
        "perf compare-c",
        &[
            "perf",
            "compare-c",
            "--rounds",
            "1",
            "--per-round",
            "2000",
            "--json",
        ],
    );
    assert!(!v["cases"].as_array().unwrap().is_empty());
}

/// Refusals: one line, exit 2, the shared texts.
fn refused(args: &[&str], needle: &str) {
    let o = bareverbs(args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    assert!(err.contains(needle), "{args:?}: {err}");
}

#[test]
fn device_names_and_limits_are_refused_alike() {
    let unknown = "unknown device \"nic\" (--device): use sim";
    refused(&["devinfo", "--device", "nic"], unknown);
    refused(&["devinfo", "-d", "nic"], unknown);
    refused(&["selftest", "--device", "nic"], unknown);
    refused(&["budget", "--device", "nic"], unknown);
    refused(&["perf", "write-lat", "--device", "nic"], unknown);
    refused(&["sweep", "--device", "nic", "--iters", "0"], unknown);
    let model = "--device model is the cost model only";
    refused(&["devinfo", "--device", "model"], model);
    refused(&["selftest", "--device", "model"], model);
    refused(&["budget", "--device", "model"], model);
    refused(&["devinfo", "-i", "2"], "Invalid port requested for device");
    // clap's own refusal (exit 2; it adds its --help hint line).
    let o = bareverbs(&["devinfo", "-i", "0"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("must be a positive integer, not 0"));
    // 40–52 SGEs fit a 1024-byte descriptor but exceed the device's
    // max_sge of 30 (the kernel rule).
    for n in ["31", "40", "52"] {
        let msg = format!("{n} exceeds the device's max_sge 30");
        refused(
            &["budget", "--max-send-wr", "16", "--max-send-sge", n],
            &msg,
        );
        refused(&["perf", "write-bw", "--sge", n], &msg);
        refused(
            &[
                "perf",
                "write-lat",
                "--device",
                "fw-sim",
                "--max-send-sge",
                n,
            ],
            &msg,
        );
        refused(&["perf", "post", "--sge", n], &msg);
        refused(&["perf", "post-recv", "--sge", n], &msg);
    }
}
