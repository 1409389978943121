//! Whether a server's run can be trusted ([`server_verdict`]): the server
//! posts little or nothing itself, so its verdict rests on what arrived
//! (every byte checked when the client is bareverbs), on its own
//! completions and, for a bandwidth test, on the client's report.

use crate::perf::run::{PerfRunConfig, PerfRunReport, PerfTest};

/// Why the server's run `rep` of `cfg` cannot be trusted, if it cannot.
pub fn server_verdict(test: PerfTest, cfg: &PerfRunConfig, rep: &PerfRunReport) -> Option<String> {
    if rep.completed_err > 0 || rep.completed_ok < rep.posted {
        return Some(format!(
            "only {} of {} posted WRs completed successfully ({} with an error status)",
            rep.completed_ok, rep.posted, rep.completed_err
        ));
    }
    if rep.mismatches > 0 {
        return Some(format!(
            "{} payload bytes did not arrive as sent",
            rep.mismatches
        ));
    }
    let pongs = matches!(test, PerfTest::WriteLat | PerfTest::SendLat);
    if pongs && rep.posted < cfg.iters {
        return Some(format!(
            "only {} of {} replies were posted",
            rep.posted, cfg.iters
        ));
    }
    let peer = rep.peer.as_ref()?;
    match peer.bw {
        Some(bw) if peer.bareverbs && bw.iters != cfg.iters * cfg.qps as u64 => Some(format!(
            "the client reported {} iterations, {} were expected",
            bw.iters,
            cfg.iters * cfg.qps as u64
        )),
        _ => None,
    }
}
