//! Send queue sizing ([ref §3.2–§3.4](crate::reference)): the per-WQE overhead,
//! the send WQE slot size and the SQ geometry ([`SqLayout`]).

use super::caps::DeviceCaps;
use super::error::{Detail, Limit, SizingError, Stage};
use super::math::{align_up, rup2};
use super::ops::SendOps;
use super::qp_caps::QpCaps;
use super::qp_type::QpType;
use super::{INL_HDR, SEG, SEND_WQE_BB};

/// Per-WQE SQ overhead in bytes ([ref §3.2](crate::reference)): operation part of the op set
/// plus the QP type's transport segment.
pub const fn sq_overhead(qp_type: QpType, ops: SendOps) -> u32 {
    ops.op_overhead() + qp_type.transport_overhead()
}

/// Send WQE slot size in bytes (`mlx5_calc_send_wqe`, [ref §3.3](crate::reference)): a multiple
/// of 64 large enough for the overhead plus `max_send_sge` data segments, or
/// for the overhead plus the inline header and `max_inline_data` bytes.
pub const fn send_wqe_size(req: &QpCaps, caps: &DeviceCaps) -> Result<u32, SizingError> {
    let overhead = sq_overhead(req.qp_type, req.effective_ops()) as u64;
    let desc = caps.max_sq_desc_sz as u64;
    let mut size = overhead;
    let mut inl_size = 0u64;
    if req.max_inline_data > 0 {
        inl_size = overhead + align_up(INL_HDR as u64 + req.max_inline_data as u64, SEG as u64);
    }
    if req.max_tso_header > 0 {
        size += align_up(req.max_tso_header as u64, SEG as u64);
    }
    if size > desc {
        return Err(SizingError::new(Stage::Sq, Limit::MaxSqDescSz, size, desc));
    }
    let max_gather = (desc - size) / SEG as u64;
    if req.max_send_sge as u64 > max_gather {
        return Err(SizingError::new(
            Stage::Sq,
            Limit::MaxSendSge,
            req.max_send_sge as u64,
            max_gather,
        ));
    }
    size += SEG as u64 * req.max_send_sge as u64;
    let tot = if size > inl_size { size } else { inl_size };
    if tot > desc {
        return Err(SizingError::new(Stage::Sq, Limit::MaxSqDescSz, tot, desc));
    }
    Ok(align_up(tot, SEND_WQE_BB as u64) as u32)
}

/// Send queue geometry ([ref §3.3, §3.4](crate::reference)). All zero when there is no SQ.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct SqLayout {
    /// Per-WQE overhead in bytes ([ref §3.2](crate::reference)); computed even without an SQ.
    pub overhead: u32,
    /// Send WQE slot bytes (a multiple of 64).
    pub wqe_size: u32,
    /// Ring size in WQEBBs (64-byte basic blocks).
    pub wqe_cnt: u32,
    /// log2 of the WQEBB size (6) — 0 when there is no SQ.
    pub wqe_shift: u32,
    /// WRs that fit when every WR uses a full slot (`wq_size / wqe_size`).
    pub max_post: u32,
    /// Gather entries per WR (= requested `max_send_sge`).
    pub max_gs: u32,
    /// Inline bytes per WR read back to the user (`wqe_size − overhead − 4`,
    /// wrapping in 32 bits like the provider: 4294967292 when `wqe_size ==
    /// overhead`; the request when there is no SQ) ([ref §3.4](crate::reference) step 3).
    pub max_inline_data: u32,
    /// Ring bytes (`wqe_cnt · 64`, a power of two).
    pub buf_bytes: u64,
}

const fn qp_detail(req: &QpCaps, sq_overhead: u32, send_wqe_size: u32) -> Detail {
    Detail::Qp {
        sq_overhead,
        send_wqe_size,
        max_send_wr: req.max_send_wr,
        max_recv_wr: req.max_recv_wr,
    }
}

/// Send queue sizing (`mlx5_calc_sq_size`, [ref §3.4](crate::reference)).
pub const fn sq_layout(req: &QpCaps, caps: &DeviceCaps) -> Result<SqLayout, SizingError> {
    let overhead = sq_overhead(req.qp_type, req.effective_ops());
    if req.max_send_wr == 0 {
        return Ok(SqLayout {
            overhead,
            wqe_size: 0,
            wqe_cnt: 0,
            wqe_shift: 0,
            max_post: 0,
            max_gs: 0,
            max_inline_data: req.max_inline_data,
            buf_bytes: 0,
        });
    }
    let wqe_size = match send_wqe_size(req, caps) {
        Ok(w) => w,
        Err(e) => return Err(e.with_detail(qp_detail(req, overhead, 0))),
    };
    let desc = caps.max_sq_desc_sz;
    if wqe_size > desc {
        return Err(
            SizingError::new(Stage::Sq, Limit::MaxSqDescSz, wqe_size as u64, desc as u64)
                .with_detail(qp_detail(req, overhead, wqe_size)),
        );
    }
    // Provider quirk: computed in a C `int` and stored in a `u32`, so a WQE with
    // no room for the inline header (wqe_size == overhead, e.g. RC with 0 SGEs)
    // reads back as 2^32 − 4 (= 4294967292), exactly as the vectors show.
    let max_inline_data = wqe_size.wrapping_sub(overhead).wrapping_sub(INL_HDR);
    let wr_limit = 0x7fff_ffff / desc;
    if req.max_send_wr > wr_limit {
        return Err(SizingError::new(
            Stage::Sq,
            Limit::MaxSendWrOverflow,
            req.max_send_wr as u64,
            wr_limit as u64,
        )
        .with_detail(qp_detail(req, overhead, wqe_size)));
    }
    let wq_size = rup2(req.max_send_wr as u64 * wqe_size as u64);
    let wqe_cnt = wq_size / SEND_WQE_BB as u64;
    if wqe_cnt > caps.max_send_wqebb as u64 {
        return Err(SizingError::new(
            Stage::Sq,
            Limit::MaxSendWqebb,
            wqe_cnt,
            caps.max_send_wqebb as u64,
        )
        .with_detail(qp_detail(req, overhead, wqe_size)));
    }
    Ok(SqLayout {
        overhead,
        wqe_size,
        wqe_cnt: wqe_cnt as u32,
        wqe_shift: 6,
        max_post: (wq_size / wqe_size as u64) as u32,
        max_gs: req.max_send_sge,
        max_inline_data,
        buf_bytes: wq_size,
    })
}
