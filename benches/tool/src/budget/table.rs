//! The memory-per-QP table (`budget --table`): exact allocated bytes beside
//! the "64 B + 16 B per SGE" rule of thumb.

use std::fmt::Write as _;

use bareverbs::sizing::*;

use super::BudgetArgs;

/// The "64 B + 16 B per SGE" rule of thumb for an SQ ring.
pub fn estimate_ring_bytes(max_send_wr: u32, max_send_sge: u32) -> u64 {
    max_send_wr as u64 * (64 + 16 * max_send_sge as u64)
}

/// The memory-per-QP table: max_send_wr 128/1024/8192/32768 × max_send_sge
/// 1/4/16, exact allocated bytes for the classic and the `write,send,read` op
/// sets (QP type, inline and receive side from `args`), beside the estimate.
pub fn table(args: &BudgetArgs, caps: &DeviceCaps) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "{} QP memory (allocated bytes; estimate = max_send_wr × (64 + 16·sge))",
        args.qp_type
    );
    let _ = writeln!(
        t,
        "{:>7} {:>4} {:>11} | {:>26} {:>6} | {:>26} {:>6}",
        "send_wr", "sge", "estimate", "classic ops", "ratio", "write,send,read", "ratio"
    );
    for wr in [128u32, 1024, 8192, 32768] {
        for sge in [1u32, 4, 16] {
            let est = estimate_ring_bytes(wr, sge);
            let base = QpCaps::new(args.qp_type)
                .send(wr, sge, args.max_inline_data)
                .recv(args.max_recv_wr, args.max_recv_sge);
            let cell = |r: QpCaps| match qp_layout(&r, caps) {
                Ok(l) => (
                    format!("{} ({}B WQE)", l.alloc_bytes, l.sq.wqe_size),
                    format!("{:.2}", l.alloc_bytes as f64 / est as f64),
                ),
                Err(e) => (
                    match e.limit {
                        Limit::MaxSendWqebb => format!("EINVAL {}>{} BBs", e.requested, e.allowed),
                        _ => format!("EINVAL {}", e.limit.name()),
                    },
                    "-".to_string(),
                ),
            };
            let (c, cr) = cell(base);
            let (n, nr) = cell(base.ops(SendOps::RDMA_ONLY));
            let _ = writeln!(
                t,
                "{wr:>7} {sge:>4} {est:>11} | {c:>26} {cr:>6} | {n:>26} {nr:>6}"
            );
        }
    }
    t
}
