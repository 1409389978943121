//! Receive queue sizing ([ref §3.5](crate::reference)): the RQ geometry
//! ([`RqLayout`]).

use super::caps::DeviceCaps;
use super::error::{Limit, SizingError, Stage};
use super::math::{ilog32, max_u32, rup2, MAX_POW2_U32};
use super::qp_caps::QpCaps;
use super::SEG;

/// Receive queue geometry ([ref §3.5](crate::reference)). All zero when there is no RQ.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct RqLayout {
    /// Receive WQE bytes (a power of two, ≥ 16).
    pub wqe_size: u32,
    /// log2 of `wqe_size`.
    pub wqe_shift: u32,
    /// Ring size in receive WQEs.
    pub wqe_cnt: u32,
    /// Receive WRs that may be posted (= `wqe_cnt`).
    pub max_post: u32,
    /// Scatter entries per WR read back (may exceed the request).
    pub max_gs: u32,
    /// Ring bytes (`max(rup2(wr) · wqe, 64)`).
    pub buf_bytes: u64,
}

/// Receive queue sizing (`mlx5_calc_rcv_wqe` + `mlx5_calc_rq_size`, [ref §3.5](crate::reference);
/// no WQE signature).
pub const fn rq_layout(req: &QpCaps, caps: &DeviceCaps) -> Result<RqLayout, SizingError> {
    if req.max_recv_wr == 0 || req.uses_srq || !req.qp_type.has_rq() {
        return Ok(RqLayout {
            wqe_size: 0,
            wqe_shift: 0,
            wqe_cnt: 0,
            max_post: 0,
            max_gs: 0,
            buf_bytes: 0,
        });
    }
    if req.max_recv_wr > caps.max_recv_wr {
        return Err(SizingError::new(
            Stage::Rq,
            Limit::MaxRecvWr,
            req.max_recv_wr as u64,
            caps.max_recv_wr as u64,
        ));
    }
    let raw = SEG as u64 * max_u32(req.max_recv_sge, 1) as u64;
    if raw > caps.max_rq_desc_sz as u64 {
        return Err(SizingError::new(
            Stage::Rq,
            Limit::MaxRqDescSz,
            raw,
            caps.max_rq_desc_sz as u64,
        ));
    }
    let wqe = rup2(raw);
    // With caps near u32::MAX the rounded values need not fit the 32-bit
    // layout fields (wqe_size, wqe_cnt, max_post): refuse, never wrap.
    if wqe > MAX_POW2_U32 {
        return Err(SizingError::new(
            Stage::Rq,
            Limit::SizeOverflow,
            wqe,
            MAX_POW2_U32,
        ));
    }
    let wrs = rup2(req.max_recv_wr as u64);
    if wrs > MAX_POW2_U32 {
        return Err(SizingError::new(
            Stage::Rq,
            Limit::SizeOverflow,
            wrs,
            MAX_POW2_U32,
        ));
    }
    // Both factors ≤ 2^31: the product fits u64.
    let mut wq_size = wrs * wqe;
    if wq_size < 64 {
        wq_size = 64;
    }
    let wqe_cnt = (wq_size / wqe) as u32;
    Ok(RqLayout {
        wqe_size: wqe as u32,
        wqe_shift: ilog32(wqe as u32 - 1),
        wqe_cnt,
        max_post: 1 << ilog32(wqe_cnt - 1),
        max_gs: (wqe / SEG as u64) as u32,
        buf_bytes: wq_size,
    })
}
