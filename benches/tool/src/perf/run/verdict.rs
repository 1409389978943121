//! Whether a finished run's figures can be trusted ([`verdict`]): all its
//! work completed, its payload arrived as sent, and no bandwidth exceeds
//! the link the backend models.

use super::{Conn, PerfRunConfig, PerfRunReport};

/// Why a finished run's figures cannot be trusted: not all of its work
/// completed successfully, payload arrived corrupted, or a bandwidth
/// exceeds the link the backend models. `bw_gbps` are the bandwidths
/// derived from the report (Gb/s).
pub fn verdict(cfg: &PerfRunConfig, rep: &PerfRunReport, bw_gbps: &[f64]) -> Option<String> {
    // -D: as many as the time allowed (at least perftest's 5 iterations).
    let per_qp = if cfg.duration.is_some() { 5 } else { cfg.iters };
    let want = per_qp * if cfg.test.is_bw() { cfg.qps as u64 } else { 1 };
    if rep.posted == 0 {
        return Some(format!("nothing was posted ({want} WRs expected)"));
    }
    if rep.posted < want {
        return Some(format!("only {} of {want} WRs were posted", rep.posted));
    }
    if rep.completed_err > 0 || rep.completed_ok < rep.posted {
        return Some(format!(
            "only {} of {} posted WRs completed successfully ({} with an error status)",
            rep.completed_ok, rep.posted, rep.completed_err
        ));
    }
    if rep.mismatches > 0 && (cfg.conn == Conn::Rc || cfg.loss == 0.0) {
        return Some(format!(
            "{} payload bytes did not arrive as sent",
            rep.mismatches
        ));
    }
    if rep.link_gbps > 0.0 {
        let limit = rep.link_gbps * (1.0 + 1e-9);
        for &g in bw_gbps.iter().chain([rep.bandwidth_gbps].iter()) {
            if g > limit {
                return Some(format!(
                    "{g:.2} Gb/s exceeds the {} Gb/s link the backend models",
                    rep.link_gbps
                ));
            }
        }
    }
    None
}
