//! Dispatch for the perftest-style `perf` subcommands and `compare-c`
//! (kept out of `main.rs` so it stays a thin front end).

use super::cpost::{compare, CASES};
use super::run::{run_streaming, PerfArgs, PerfOutcome, PerfTest};
use crate::args::{is_usage, usage_error};
use std::io::Write as _;
use std::process::ExitCode;

/// Refuses, before any backend is opened, an unknown `--device`. What
/// the configuration step rejects (perftest's rules and limits with its
/// messages, bad counts, unknown send ops, unreadable `--caps`) is refused
/// as a usage error by `run_outcome` itself, before anything runs.
/// Every refusal is a [`crate::args::UsageError`] (exit status 2).
pub fn check_test_args(args: &PerfArgs) -> anyhow::Result<()> {
    let d = args.device.as_str();
    if !matches!(d, "sim" | "model" | "fw-sim") && !d.starts_with("vfio:") {
        return Err(usage_error(format!(
            "unknown --device {d:?} (expected sim, model, fw-sim or vfio:BDF)"
        )));
    }
    Ok(())
}

/// A parsed `perf` subcommand other than `post`.
pub enum Cmd {
    /// A perftest look-alike.
    Test(PerfTest, Box<PerfArgs>),
    /// Rust vs C post loop.
    CompareC {
        /// Rounds.
        rounds: u32,
        /// WRs per round.
        per_round: u64,
        /// JSON output.
        json: bool,
    },
}

/// Runs `cmd`, printing to stdout.
pub fn run(cmd: Cmd) -> anyhow::Result<ExitCode> {
    match cmd {
        Cmd::Test(t, a) => {
            // Bad arguments (perftest's refusals, what the backend does
            // not model) exit 2 before anything runs; a run that failed
            // exits 1 with a one-line reason on stderr, and `--json`
            // prints the same verdict as an object.
            check_test_args(&a)?;
            // Text is printed as it is produced (header, then each row as
            // its size completes).
            let mut print = |s: &str| {
                let mut o = std::io::stdout().lock();
                let _ = o.write_all(s.as_bytes());
                let _ = o.flush();
            };
            let o = match run_streaming(t, &a, &mut print) {
                Ok(o) => o,
                Err(e) if is_usage(&e) => return Err(e),
                Err(e) => PerfOutcome {
                    output: if a.json {
                        super::run::failure_json(t, &a, &format!("{e:#}"))
                    } else {
                        String::new()
                    },
                    failure: Some(format!("{e:#}")),
                },
            };
            if a.json {
                println!("{}", o.output);
            }
            if let Some(f) = o.failure {
                eprintln!("error: {f}");
                return Ok(ExitCode::from(1));
            }
        }
        Cmd::CompareC {
            rounds,
            per_round,
            json,
        } => {
            let mut res = Vec::new();
            for c in CASES {
                res.push(compare(c, rounds, per_round)?);
            }
            if json {
                println!("{}", serde_json::to_string(&res)?);
            } else {
                println!(
                    "Rust (bareverbs::sq) vs C (mlx5dv.h setters), same doorbell sequence into RAM; {rounds} interleaved rounds x {per_round} WRs; median [min-max] over the rounds"
                );
                println!(
                    "{:<26} {:>22} {:>22} {:>20}",
                    "case", "Rust ns/WR", "C ns/WR", "Rust/C"
                );
                let f = |s: &crate::perf::cpost::Spread, w: usize| {
                    format!("{:.2} [{:.2}-{:.2}]", s.median, s.min, s.max)
                        .chars()
                        .take(w)
                        .collect::<String>()
                };
                for r in &res {
                    println!(
                        "{:<26} {:>22} {:>22} {:>20}",
                        r.case.name,
                        f(&r.rust_ns, 22),
                        f(&r.c_ns, 22),
                        f(&r.ratio, 20)
                    );
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
