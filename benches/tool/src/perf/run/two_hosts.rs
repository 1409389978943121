//! A two-host run from connecting to its output ([`stream_two_hosts`]):
//! perftest's server banner, the TCP exchange up to the test, this
//! host's side of the run, the address lines, the row (a server of a
//! bandwidth test shows the client's report, as perftest's does), the
//! verdict and the JSON object.

use super::json::{be_modeled, perf_json, result_json};
use super::row::{result_row, Figures};
use super::text::{addresses, header_info, result_columns};
use super::verdict::verdict;
use super::{PerfArgs, PerfBackend, PerfOutcome, PerfRunConfig, PerfTest, PortAttrs};
use crate::perf::engine::Role;
use crate::perf::two_hosts::{refusal, server_verdict, TcpPeer};
use crate::perftest::format as pf;
use crate::perftest::stats::{BwStats, BwUnit, GBS_DIVISOR};

/// perftest's banner of a server before a client connects
/// (`write_bw.c` and the other tests, printed at full verbosity).
pub const WAITING_BANNER: &str = "\n************************************\n\
                                  * Waiting for client to connect... *\n\
                                  ************************************\n";

/// Runs `test` as this host's side (`role`) of a two-host run of the one
/// configuration in `cfgs`, streaming perftest's text to `out`.
pub(super) fn stream_two_hosts(
    test: PerfTest,
    args: &PerfArgs,
    port: Option<PortAttrs>,
    cfgs: &[PerfRunConfig],
    be: &mut dyn PerfBackend,
    role: Role,
    out: &mut dyn FnMut(&str),
) -> anyhow::Result<PerfOutcome> {
    if let Some(why) = refusal(args, cfgs) {
        return Err(crate::args::usage_error(why));
    }
    let cfg = &cfgs[0];
    if let Some(why) = be.refuse(cfg, args) {
        return Err(crate::args::usage_error(why));
    }
    let unit = if args.report_gbits {
        BwUnit::Gbps
    } else {
        BwUnit::MBps
    };
    let mut text = String::new();
    let mut emit = |text: &mut String, s: &str| {
        text.push_str(s);
        if !args.json {
            out(s);
        }
    };
    if role == Role::Server {
        emit(&mut text, WAITING_BANNER);
    }
    let (mut link, mtu) = TcpPeer::establish(test, args, cfg, role)?;
    // check_mtu: both sides use the smaller of their MTUs.
    let mut cfg = cfg.clone();
    cfg.mtu = cfg.mtu.min(mtu);
    let cfg = &cfg;
    let mut h = header_info(test, args, port, std::slice::from_ref(cfg), be);
    let columns = result_columns(test, unit, false);
    let run = be.run_half(cfg, role, &mut link);
    // The header names the GID index the run sent from.
    if let Ok(rep) = &run {
        h.gid_index = rep.sgid_index.map(u32::from);
    }
    emit(&mut text, &pf::header(&h));
    let (result, failure) = match run {
        Err(e) => {
            let f = format!("{e:#}");
            let r = result_json(cfg, None, 0, &Figures::default(), unit, Some(&f));
            (r, Some(f))
        }
        Ok(rep) => {
            emit(&mut text, &addresses(test.verb(), &h, &rep, columns));
            let peer_bw = rep.peer.as_ref().and_then(|p| p.bw);
            let (row, fig, failure) = match (role, test) {
                (Role::Server, PerfTest::WriteBw | PerfTest::ReadBw) => match peer_bw {
                    // perftest's server prints the client's report.
                    Some(bw) => {
                        let s = BwStats {
                            bw_peak: bw.bw_peak,
                            bw_avg: bw.bw_avg,
                            msg_rate_mpps: bw.msg_rate_avg,
                            unit,
                            gbps_avg: bw.bw_avg * unit.divisor() / GBS_DIVISOR,
                        };
                        let row = pf::bw_row(bw.size, bw.iters, &s);
                        let fig = Figures {
                            bw: Some(s),
                            ..Figures::default()
                        };
                        (row, fig, server_verdict(test, cfg, &rep))
                    }
                    None => (
                        String::new(),
                        Figures::default(),
                        Some("the client sent no bandwidth report".into()),
                    ),
                },
                // perftest's server of a READ or atomic latency test only
                // waits for the client to close.
                (Role::Server, PerfTest::ReadLat | PerfTest::AtomicLat) => (
                    String::new(),
                    Figures::default(),
                    server_verdict(test, cfg, &rep),
                ),
                _ => {
                    let iters = if test.is_bw() {
                        rep.completions()
                    } else {
                        rep.latency_samples_ns.len() as u64 + rep.beyond.samples
                    };
                    let r = result_row(test, args, cfg, &rep, iters, unit)?;
                    let failure = r.failure.or_else(|| match role {
                        Role::Server => server_verdict(test, cfg, &rep),
                        _ => verdict(cfg, &rep, &r.bw_gbps),
                    });
                    (r.text, r.fig, failure)
                }
            };
            let iters = peer_bw.map_or(cfg.iters, |b| b.iters);
            let r = result_json(cfg, Some(&rep), iters, &fig, unit, failure.as_deref());
            if failure.is_none() {
                emit(&mut text, &row);
            }
            (r, failure)
        }
    };
    emit(&mut text, pf::RESULT_LINE);
    let results = vec![result];
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
