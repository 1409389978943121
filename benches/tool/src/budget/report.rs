//! The budget of one request: the QP (and CQ, node and narrower-ops)
//! figures as JSON and text, or the limit hit and the suggestions.

use std::fmt::Write as _;

use bareverbs::sizing::*;
use serde_json::{json, Value};

use super::suggest::{narrower_sets, suggestions};
use super::{request, BudgetArgs};

fn ops_name(ops: SendOps) -> String {
    let mut s = String::new();
    for (name, _) in ops.iter_names() {
        if !s.is_empty() {
            s.push(',');
        }
        s.push_str(&name.to_ascii_lowercase());
    }
    s
}

fn error_json(e: &SizingError, sugg: &[String]) -> Value {
    json!({
        "error": {
            "errno": e.errno(),
            "stage": e.stage.name(),
            "limit": e.limit.name(),
            "requested": e.requested,
            "allowed": e.allowed,
            "rejected_by": e.rejected_by.name(),
            "message": e.to_string(),
        },
        "suggestions": sugg,
    })
}

/// The outcome of a budget computation.
#[derive(Debug, Clone)]
pub struct BudgetOutcome {
    /// The JSON object `--json` prints.
    pub json: Value,
    /// Human-readable text.
    pub text: String,
    /// Process exit code: 0 = fits, 1 = a limit is exceeded.
    pub code: i32,
}

/// Compute the budget for `args` on `caps` (no I/O). SGE counts above
/// the device's `max_sge` are refused as bad input.
pub fn compute(args: &BudgetArgs, caps: &DeviceCaps) -> anyhow::Result<BudgetOutcome> {
    use crate::device_arg::check_sge;
    check_sge("--max-send-sge", args.max_send_sge, caps.max_sge)?;
    check_sge("--max-recv-sge", args.max_recv_sge, caps.max_sge)?;
    let req = request(args)?;
    let (l, cq) = match layouts(args, &req, caps) {
        Ok(v) => v,
        Err(e) => return Ok(failure(&req, &e, caps)),
    };
    let b = qp_budget(&l, cq.as_ref(), 1, caps);
    let mut j = qp_json(&l, req.effective_ops(), &b);
    let mut text = qp_text(&l, &req, &b, caps);
    if let Some(c) = &cq {
        add_cq(&mut j, &mut text, args.cqe, c, &l, caps);
    }
    let _ = writeln!(text, "per QP {} B", b.total_bytes);
    if let Some(n) = args.qps {
        let node = node_budget(&l, cq.as_ref(), 1, n, caps);
        j["qps"] = json!(n);
        j["node_bytes"] = json!(node);
        let _ = writeln!(
            text,
            "{n} QPs: {node} B ({:.1} MiB)",
            node as f64 / (1 << 20) as f64
        );
    }
    add_narrower_ops(&mut j, &mut text, &req, &l, caps);
    Ok(BudgetOutcome {
        json: j,
        text,
        code: 0,
    })
}

/// The outcome of a request that does not fit: the error, the suggestions
/// found for it, exit code 1.
fn failure(req: &QpCaps, e: &SizingError, caps: &DeviceCaps) -> BudgetOutcome {
    let sugg = suggestions(req, e, caps);
    let mut text = e.to_string();
    if !sugg.is_empty() {
        text.push_str(": ");
        text.push_str(&sugg.join(", or "));
    }
    text.push('\n');
    BudgetOutcome {
        json: error_json(e, &sugg),
        text,
        code: 1,
    }
}

/// The QP's layout and, with `--cqe`, the shared CQ's, which must cover
/// every send and receive WR the QP can have outstanding.
fn layouts(
    args: &BudgetArgs,
    req: &QpCaps,
    caps: &DeviceCaps,
) -> Result<(QpLayout, Option<CqLayout>), SizingError> {
    let l = qp_layout(req, caps)?;
    let cq = match args.cqe {
        None => None,
        Some(n) => {
            let c = cq_layout(n, args.cqe_size, caps)?;
            check_cq_covers(
                CqAttach::Shared {
                    cqe: c.reported_cqe,
                },
                l.sq.max_post,
                l.rq.max_post,
            )?;
            Some(c)
        }
    };
    Ok((l, cq))
}

/// The JSON of the QP's queues, buffer and doorbell (`--json`, without the
/// CQ, node and narrower-ops parts).
fn qp_json(l: &QpLayout, ops: SendOps, b: &QpBudget) -> Value {
    json!({
        "qp_type": l.qp_type.name(),
        "send_ops": ops_name(ops),
        "sq": {
            "overhead": l.sq.overhead,
            "wqe_size": l.sq.wqe_size,
            "wqe_cnt": l.sq.wqe_cnt,
            "wqe_shift": l.sq.wqe_shift,
            "max_post": l.sq.max_post,
            "max_gs": l.sq.max_gs,
            "max_inline_data": l.sq.max_inline_data,
            "bytes": l.sq.buf_bytes,
        },
        "rq": {
            "wqe_size": l.rq.wqe_size,
            "wqe_shift": l.rq.wqe_shift,
            "wqe_cnt": l.rq.wqe_cnt,
            "max_post": l.rq.max_post,
            "max_gs": l.rq.max_gs,
            "bytes": l.rq.buf_bytes,
        },
        "total_bytes": l.total_bytes,
        "sq_offset": l.sq_offset,
        "alloc_bytes": l.alloc_bytes,
        "doorbell_bytes": b.qp_doorbell_bytes,
        "qp_bytes": b.total_bytes,
    })
}

/// The text of the QP: its op set, the SQ/RQ table, buffer and doorbell.
fn qp_text(l: &QpLayout, req: &QpCaps, b: &QpBudget, caps: &DeviceCaps) -> String {
    let mut text = String::new();
    let _ = writeln!(
        text,
        "{} QP, send ops {} ({}-byte WQE overhead)",
        l.qp_type,
        if req.send_ops.is_some() {
            ops_name(req.effective_ops())
        } else {
            "classic".into()
        },
        l.sq.overhead
    );
    let _ = writeln!(
        text,
        "     {:>9} {:>8} {:>9} {:>7} {:>10} {:>12}",
        "wqe_size", "wqe_cnt", "max_post", "max_gs", "inline", "bytes"
    );
    let _ = writeln!(
        text,
        "  SQ {:>9} {:>8} {:>9} {:>7} {:>10} {:>12}",
        l.sq.wqe_size,
        l.sq.wqe_cnt,
        l.sq.max_post,
        l.sq.max_gs,
        l.sq.max_inline_data,
        l.sq.buf_bytes
    );
    let _ = writeln!(
        text,
        "  RQ {:>9} {:>8} {:>9} {:>7} {:>10} {:>12}",
        l.rq.wqe_size, l.rq.wqe_cnt, l.rq.max_post, l.rq.max_gs, "-", l.rq.buf_bytes
    );
    let _ = writeln!(
        text,
        "queue buffer {} B (SQ at offset {}), allocated {} B (page {} B)",
        l.total_bytes, l.sq_offset, l.alloc_bytes, caps.page_size
    );
    let _ = writeln!(
        text,
        "doorbell record {} B (one cache line per QP and per CQ)",
        b.qp_doorbell_bytes
    );
    text
}

/// Adds the CQ (`--cqe requested`, laid out as `c`) to the JSON and the text.
fn add_cq(
    j: &mut Value,
    text: &mut String,
    requested: Option<u32>,
    c: &CqLayout,
    l: &QpLayout,
    caps: &DeviceCaps,
) {
    j["cq"] = json!({
        "requested": requested,
        "ncqe": c.ncqe,
        "cqe": c.reported_cqe,
        "cqe_size": c.cqe_size,
        "buf_bytes": c.buf_bytes,
        "alloc_bytes": c.alloc_bytes,
        "outstanding": l.sq.max_post as u64 + l.rq.max_post as u64,
    });
    let _ = writeln!(
        text,
        "CQ {} entries ({} usable ≥ {} send + {} receive outstanding), {} B + {} B doorbell",
        c.ncqe, c.reported_cqe, l.sq.max_post, l.rq.max_post, c.alloc_bytes, caps.cache_line_size
    );
}

/// The lever: a narrower op set (only worth showing when it is narrower),
/// added to the JSON and the text.
fn add_narrower_ops(
    j: &mut Value,
    text: &mut String,
    req: &QpCaps,
    l: &QpLayout,
    caps: &DeviceCaps,
) {
    let cur = l.sq.overhead;
    if l.sq.wqe_size > 0 {
        for (name, o) in narrower_sets() {
            if sq_overhead(req.qp_type, o) < cur {
                if let Ok(s) = send_ops_saving(req, o, caps) {
                    let narrow = qp_layout(&req.ops(o), caps)
                        .map(|n| n.alloc_bytes)
                        .unwrap_or(0);
                    j["narrower_ops"] = json!({
                        "send_ops": name,
                        "alloc_bytes": narrow,
                        "saved_bytes": l.alloc_bytes as i64 - narrow as i64,
                        "classic_alloc_bytes": s.classic_bytes,
                    });
                    let _ = writeln!(
                        text,
                        "with --send-ops {name}: {narrow} B per QP queue buffer (saves {} B)",
                        l.alloc_bytes as i64 - narrow as i64
                    );
                }
                break;
            }
        }
    }
}
