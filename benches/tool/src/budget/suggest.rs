//! What to change so a request that does not fit does: each suggestion is
//! found by re-running the real sizing functions.

use bareverbs::sizing::*;

/// Narrower op sets tried when the SQ does not fit (name for `--send-ops`, set).
pub(super) fn narrower_sets() -> [(&'static str, SendOps); 2] {
    [
        ("write,send,read", SendOps::RDMA_ONLY),
        ("send", SendOps::SEND),
    ]
}

/// Largest `v` in `0..=hi` for which `fits(v)` holds, assuming monotonic; `None` if none.
fn largest_fitting(hi: u32, lo: u32, fits: impl Fn(u32) -> bool) -> Option<u32> {
    if !fits(lo) {
        return None;
    }
    let (mut lo, mut hi) = (lo, hi);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    Some(lo)
}

/// What to change so that `req` fits `caps`, each computed with the real
/// sizing functions (empty if nothing single-handedly fixes it).
pub fn suggestions(req: &QpCaps, err: &SizingError, caps: &DeviceCaps) -> Vec<String> {
    let fits = |r: &QpCaps| qp_layout(r, caps).is_ok();
    let mut out = Vec::new();
    match err.stage {
        Stage::Sq => {
            if let Some(wr) = largest_fitting(req.max_send_wr, 1, |w| {
                let mut r = *req;
                r.max_send_wr = w;
                fits(&r)
            }) {
                out.push(format!("lower max_send_wr to {wr}"));
            }
            if let Some(sge) = largest_fitting(req.max_send_sge, 0, |s| {
                let mut r = *req;
                r.max_send_sge = s;
                fits(&r)
            }) {
                out.push(format!("max_send_sge to {sge}"));
            }
            if req.max_inline_data > 0 {
                if let Some(inl) = largest_fitting(req.max_inline_data, 0, |i| {
                    let mut r = *req;
                    r.max_inline_data = i;
                    fits(&r)
                }) {
                    out.push(format!("max_inline_data to {inl}"));
                }
            }
            let cur = sq_overhead(req.qp_type, req.effective_ops());
            for (name, ops) in narrower_sets() {
                if sq_overhead(req.qp_type, ops) >= cur {
                    continue;
                }
                let r = req.ops(ops);
                if fits(&r) {
                    out.push(format!("restrict --send-ops to {name}"));
                    break;
                }
                if let Some(wr) = largest_fitting(req.max_send_wr, 1, |w| {
                    let mut r2 = r;
                    r2.max_send_wr = w;
                    fits(&r2)
                }) {
                    out.push(format!(
                        "restrict --send-ops to {name} and lower max_send_wr to {wr}"
                    ));
                    break;
                }
            }
        }
        Stage::Rq => {
            if let Some(wr) = largest_fitting(req.max_recv_wr, 1, |w| {
                let mut r = *req;
                r.max_recv_wr = w;
                fits(&r)
            }) {
                out.push(format!("lower max_recv_wr to {wr}"));
            }
            if let Some(sge) = largest_fitting(req.max_recv_sge, 0, |s| {
                let mut r = *req;
                r.max_recv_sge = s;
                fits(&r)
            }) {
                out.push(format!("max_recv_sge to {sge}"));
            }
        }
        Stage::Cq => {
            if err.limit == Limit::CqCoverage {
                out.push(format!(
                    "raise --cqe to at least {}",
                    cqe_for_outstanding(err.requested.min(u32::MAX as u64) as u32)
                ));
            } else if err.limit != Limit::CqeZero {
                out.push(format!(
                    "lower --cqe below {} (the CQ may hold {} entries)",
                    caps.max_cqe, caps.max_cqe
                ));
            } else {
                out.push("use --cqe 1 or more".to_string());
            }
        }
        // No suggestion for an SRQ, nor for a stage added later.
        Stage::Srq | _ => {}
    }
    out
}
