//! The perftest-style tests end to end through [`run`](super::run) and
//! [`run_outcome`](super::run_outcome) on every backend, by subject: what
//! runs produce, what is refused, verdicts, the JSON schema, the bounds
//! on memory and time.

use super::*;
use crate::perftest::format as pf;

mod bounds;
mod end_to_end;
mod json_schema;
mod refusals;
mod verdicts;

/// The perf flags of `v`.
fn args(v: &[&str]) -> PerfArgs {
    crate::perf::flags::test_args(v)
}

/// The error text of running `test` with flags `v`.
fn err(test: PerfTest, v: &[&str]) -> String {
    format!("{:#}", run(test, &args(v)).unwrap_err())
}

/// The JSON object and failure of running `test` with flags `v` and
/// `--json`.
fn json(test: PerfTest, v: &[&str]) -> (serde_json::Value, Option<String>) {
    let mut v = v.to_vec();
    v.push("--json");
    let o = run_outcome(test, &args(&v)).unwrap();
    (serde_json::from_str(&o.output).unwrap(), o.failure)
}
