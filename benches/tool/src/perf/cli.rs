//! Dispatch for the perftest-style `perf` subcommands and `compare-c`
//! (kept out of `main.rs` so it stays a thin front end).

use super::flags::{PerfArgs, PerfTest};
use super::run::{run_streaming, PerfOutcome};
use crate::args::is_usage;
use std::io::Write as _;
use std::process::ExitCode;

/// Refuses, before any backend is opened, an unknown `--device` (the
/// shared names and message of [`crate::device_arg`]) and SGE counts
/// (`--sge`, `--max-send-sge`) above the device's `max_sge` as
/// `ibv_devinfo -v` reports it: from `--caps` (default: the default
/// device's limits, which the simulated ConnectX reports too), or queried
/// from a VFIO device. What the configuration step rejects (perftest's
/// rules and limits with its messages, bad counts, unknown send ops,
/// unreadable `--caps`) is refused as a usage error by `run_outcome`
/// itself, before anything runs. Every refusal is a
/// [`crate::args::UsageError`] (exit status 2).
pub fn check_test_args(args: &PerfArgs) -> anyhow::Result<()> {
    use crate::device_arg::{check_sge, parse_device, Device};
    let dev = parse_device(&args.device)?;
    let max_sge = match &dev {
        Device::Vfio(_) if args.caps.is_none() => crate::devinfo::query_device(&dev)?.max_sge,
        _ => crate::budget::load_caps(args.caps.as_deref())?.max_sge,
    };
    check_sge("--sge", args.sge, max_sge)?;
    if let Some(m) = args.max_send_sge {
        check_sge("--max-send-sge", m, max_sge)?;
    }
    Ok(())
}

/// A parsed `perf` subcommand other than `post`.
#[derive(Debug)]
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
                // A closed stdout ends the run here (status 0).
                let mut o = crate::output::stdout();
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
                crate::outln!("{}", o.output);
            }
            if let Some(f) = o.failure {
                crate::eoutln!("error: {f}");
                return Ok(ExitCode::from(1));
            }
        }
        Cmd::CompareC {
            rounds,
            per_round,
            json,
        } => super::c_loop::compare_c(rounds, per_round, json)?,
    }
    Ok(ExitCode::SUCCESS)
}
