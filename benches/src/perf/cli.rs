//! Dispatch for the perftest-style `perf` subcommands and `compare-c`
//! (kept out of `main.rs` so it stays a thin front end).

use super::cpost::{compare, CASES};
use super::run::{run as run_test, PerfArgs, PerfTest};
use std::process::ExitCode;

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
