//! Dispatch for the perftest-style `perf` subcommands and `compare-c`
//! (kept out of `main.rs` so it stays a thin front end).

use super::cpost::{compare, CASES};
use super::run::{configs, run as run_test, Conn, PerfArgs, PerfTest};
use crate::args::{usage_error, UsageExt as _};
use crate::perftest::format::Verb;
use std::process::ExitCode;

/// Refuses, before any backend is opened, the arguments of a perftest
/// look-alike that no backend can run: what the configuration step
/// rejects (bad counts, unknown send ops, unreadable `--caps`), an unknown
/// `--device`, and the verb/connection combinations the backends refuse.
/// Every refusal is a [`crate::args::UsageError`] (exit status 2).
pub fn check_test_args(test: PerfTest, args: &PerfArgs) -> anyhow::Result<()> {
    let d = args.device.as_str();
    if !matches!(d, "sim" | "model" | "fw-sim") && !d.starts_with("vfio:") {
        return Err(usage_error(format!(
            "unknown --device {d:?} (expected sim, model, fw-sim or vfio:BDF)"
        )));
    }
    let cfgs = configs(test, args).usage()?;
    let verb = test.verb();
    if args.conn != Conn::Rc && matches!(verb, Verb::Read | Verb::Atomic) {
        return Err(usage_error(format!(
            "{} needs an RC QP (-c RC)",
            verb.name()
        )));
    }
    if args.conn == Conn::Ud && verb == Verb::Write {
        return Err(usage_error("RDMA_Write is not available on UD QPs"));
    }
    if let Some(c) = cfgs
        .iter()
        .find(|c| c.conn == Conn::Ud && c.size > c.mtu as u64)
    {
        return Err(usage_error(format!(
            "UD messages are limited to one MTU ({} B), -s is {}",
            c.mtu, c.size
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
            check_test_args(t, &a)?;
            let out = run_test(t, &a)?;
            if a.json {
                println!("{out}");
            } else {
                print!("{out}");
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
