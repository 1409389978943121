//! Running a test: every configuration (one per message size) on the
//! chosen backend, perftest's text streamed as each piece exists, each
//! run's verdict, and the JSON object built at the end ([`run_streaming`]
//! and its short forms [`run`], [`run_outcome`]).

use super::backend::backend;
use super::json::{be_modeled, perf_json, result_json};
use super::row::{result_row, Figures};
use super::text::{addresses, header_info, result_columns};
use super::verdict::verdict;
use super::{
    configs_on_port, port_attrs, PerfArgs, PerfBackend, PerfRunConfig, PerfTest, PortAttrs,
};
use crate::perftest::format as pf;
use crate::perftest::stats::BwUnit;

/// A run's printed output and its verdict.
#[derive(Clone, Debug)]
pub struct PerfOutcome {
    /// perftest text or the JSON object (which carries `verdict` and, on
    /// failure, `error`).
    pub output: String,
    /// Why the figures cannot be trusted (the run must exit non-zero).
    pub failure: Option<String>,
}

/// Runs a perftest-style test and returns its output (text or JSON); a
/// run whose figures cannot be trusted ([`verdict`]) is an error.
pub fn run(test: PerfTest, args: &PerfArgs) -> anyhow::Result<String> {
    let o = run_outcome(test, args)?;
    match o.failure {
        Some(f) => Err(anyhow::anyhow!("{f}")),
        None => Ok(o.output),
    }
}

/// Runs a perftest-style test: its output and verdict. Flags perftest
/// refuses, or that the backend does not implement, are errors before
/// anything runs.
pub fn run_outcome(test: PerfTest, args: &PerfArgs) -> anyhow::Result<PerfOutcome> {
    run_streaming(test, args, &mut |_| {})
}

/// As [`run_outcome`], handing each piece of perftest text to `out` as
/// soon as it exists (the header before the first run, each row as its
/// size completes), so `-a` shows its rows while it runs and a failure
/// leaves the rows before it on screen. The JSON object is built at the
/// end (it is one object).
pub fn run_streaming(
    test: PerfTest,
    args: &PerfArgs,
    out: &mut dyn FnMut(&str),
) -> anyhow::Result<PerfOutcome> {
    use crate::args::UsageExt as _;
    let port = port_attrs(&args.device)?;
    // Bad flags are usage errors (exit 2), found before anything runs.
    let cfgs = configs_on_port(test, args, port).usage()?;
    let mut be = backend(args)?;
    let role = crate::perf::two_hosts::role_of(args);
    if role.two_hosts() {
        return super::two_hosts::stream_two_hosts(test, args, port, &cfgs, &mut *be, role, out);
    }
    stream_on(test, args, port, &cfgs, &mut *be, out)
}

/// The body of [`run_streaming`] on a chosen backend `be`, for the
/// resolved configurations `cfgs` (one per message size) of `port`.
pub(super) fn stream_on(
    test: PerfTest,
    args: &PerfArgs,
    port: Option<PortAttrs>,
    cfgs: &[PerfRunConfig],
    be: &mut dyn PerfBackend,
    out: &mut dyn FnMut(&str),
) -> anyhow::Result<PerfOutcome> {
    for cfg in cfgs {
        if let Some(why) = be.refuse(cfg, args) {
            return Err(crate::args::usage_error(why));
        }
    }
    let unit = if args.report_gbits {
        BwUnit::Gbps
    } else {
        BwUnit::MBps
    };
    let verb = test.verb();
    let mut text = String::new();
    let h = header_info(test, args, port, cfgs, be);
    let mut emit = |text: &mut String, s: &str| {
        text.push_str(s);
        if !args.json {
            out(s);
        }
    };
    emit(&mut text, &pf::header(&h));
    let mut results = Vec::new();
    let mut failure = None;
    let columns = result_columns(test, unit, args.duration.is_some());
    for (n, cfg) in cfgs.iter().enumerate() {
        let rep = match be.run(cfg) {
            Ok(r) => r,
            Err(e) => {
                let f = format!("{e:#}");
                results.push(result_json(
                    cfg,
                    None,
                    0,
                    &Figures::default(),
                    unit,
                    Some(&f),
                ));
                failure = Some(f);
                break;
            }
        };
        if n == 0 {
            emit(&mut text, &addresses(verb, &h, &rep, columns));
        }
        let iters = if test.is_bw() {
            rep.completions()
        } else {
            rep.latency_samples_ns.len() as u64 + rep.beyond.samples
        };
        let row = result_row(test, args, cfg, &rep, iters, unit)?;
        failure = row.failure;
        if failure.is_none() {
            failure = verdict(cfg, &rep, &row.bw_gbps);
        }
        let r = result_json(cfg, Some(&rep), iters, &row.fig, unit, failure.as_deref());
        results.push(r);
        if failure.is_some() {
            // No figure of a failed run is printed as a result.
            break;
        }
        emit(&mut text, &row.text);
    }
    emit(&mut text, pf::RESULT_LINE);
    if args.json {
        let top = perf_json(
            test,
            args,
            Some((&be.name(), be_modeled(&results))),
            Some(serde_json::to_value(&h)?),
            results,
            failure.as_deref(),
        );
        return Ok(PerfOutcome {
            output: serde_json::to_string(&top)?,
            failure,
        });
    }
    Ok(PerfOutcome {
        output: text,
        failure,
    })
}
