//! SRQ sizing ([ref §3.8](crate::reference)): the SRQ geometry with its free
//! list and wait queue ([`SrqLayout`]), with and without the kernel's checks.

use super::caps::DeviceCaps;
use super::error::{Limit, SizingError, Stage};
use super::math::{align_up, check_page_size, ilog32, rup2, MAX_POW2_U32};
use super::SEG;

/// SRQ geometry ([ref §3.8](crate::reference)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SrqLayout {
    /// WQE bytes (`1 << wqe_shift`): 16-byte next segment + `max_gs` data segments.
    pub wqe_size: u32,
    /// log2 of `wqe_size`.
    pub wqe_shift: u32,
    /// WQEs in the buffer (`srq.max`), including the wait queue.
    pub srq_max: u32,
    /// Scatter entries per WQE.
    pub max_gs: u32,
    /// WQEs in the main free list (`tail + 1`).
    pub nwqes: u32,
    /// Initial free-list head (0).
    pub head: u32,
    /// Initial free-list tail (`rup2(max_wr + 1) − 1`).
    pub tail: u32,
    /// First wait-queue WQE, `None` when there is no wait queue.
    pub waitq: Option<(u32, u32)>,
    /// `max_wr` given to the kernel (`srq_max − 1`).
    pub kernel_max_wr: u32,
    /// `max_sge` given to the kernel (`max_gs`).
    pub kernel_max_sge: u32,
    /// `max_wr` read back to the user (`tail`).
    pub ret_max_wr: u32,
    /// `max_sge` read back to the user (`max_gs`).
    pub ret_max_sge: u32,
    /// `srq_max · wqe_size`.
    pub buf_bytes: u64,
    /// Buffer rounded up to the page size.
    pub alloc_bytes: u64,
}

/// SRQ sizing as the provider computes it ([ref §3.8](crate::reference) steps 1–6), without the
/// kernel's checks (see [`srq_layout`]).
pub const fn srq_provider_layout(
    max_wr: u32,
    max_sge: u32,
    caps: &DeviceCaps,
) -> Result<SrqLayout, SizingError> {
    if max_wr > caps.max_srq_recv_wr {
        return Err(SizingError::new(
            Stage::Srq,
            Limit::MaxSrqRecvWr,
            max_wr as u64,
            caps.max_srq_recv_wr as u64,
        ));
    }
    let sge_lim = caps.max_rq_desc_sz / SEG;
    if max_sge > sge_lim {
        return Err(SizingError::new(
            Stage::Srq,
            Limit::MaxSrqSge,
            max_sge as u64,
            sge_lim as u64,
        ));
    }
    let doubled = 2 * max_wr as u64 + 1;
    let (wr, have_waitq) = if doubled > caps.max_srq_recv_wr as u64 {
        (max_wr as u64 + 1, false)
    } else {
        (doubled, true)
    };
    let raw = SEG as u64 + SEG as u64 * max_sge as u64;
    let wqe = rup2(if raw > 32 { raw } else { 32 });
    if wqe > caps.max_recv_wr as u64 {
        return Err(SizingError::new(
            Stage::Srq,
            Limit::SrqWqeSize,
            wqe,
            caps.max_recv_wr as u64,
        ));
    }
    let srq_max = rup2(wr);
    // max_wr near u32::MAX: srq_max (≤ 2^33) would not fit its u32 field.
    if srq_max > MAX_POW2_U32 {
        return Err(SizingError::new(
            Stage::Srq,
            Limit::SizeOverflow,
            srq_max,
            MAX_POW2_U32,
        ));
    }
    let page = match check_page_size(Stage::Srq, caps) {
        Ok(p) => p,
        Err(e) => return Err(e),
    };
    let tail = rup2(max_wr as u64 + 1) - 1;
    let nwqes = tail + 1;
    let waitq = if have_waitq && srq_max > nwqes {
        Some((nwqes as u32, (srq_max - 1) as u32))
    } else {
        None
    };
    let max_gs = ((wqe - SEG as u64) / SEG as u64) as u32;
    let buf = srq_max * wqe;
    Ok(SrqLayout {
        wqe_size: wqe as u32,
        wqe_shift: ilog32(wqe as u32 - 1),
        srq_max: srq_max as u32,
        max_gs,
        nwqes: nwqes as u32,
        head: 0,
        tail: tail as u32,
        waitq,
        kernel_max_wr: (srq_max - 1) as u32,
        kernel_max_sge: max_gs,
        ret_max_wr: tail as u32,
        ret_max_sge: max_gs,
        buf_bytes: buf,
        alloc_bytes: align_up(buf, page),
    })
}

/// SRQ sizing including the kernel's checks: the provider's layout, then the
/// kernel rejects `kernel_max_wr ≥ max_srq_recv_wr` or
/// `kernel_max_sge > max_rq_desc_sz / 16` ([`RejectedBy::Kernel`](super::RejectedBy::Kernel)).
pub const fn srq_layout(
    max_wr: u32,
    max_sge: u32,
    caps: &DeviceCaps,
) -> Result<SrqLayout, SizingError> {
    let l = match srq_provider_layout(max_wr, max_sge, caps) {
        Ok(l) => l,
        Err(e) => return Err(e),
    };
    if l.kernel_max_wr >= caps.max_srq_recv_wr {
        return Err(SizingError::new(
            Stage::Srq,
            Limit::KernelSrqWr,
            l.kernel_max_wr as u64,
            caps.max_srq_recv_wr as u64,
        )
        .kernel());
    }
    let sge_lim = caps.max_rq_desc_sz / SEG;
    if l.kernel_max_sge > sge_lim {
        return Err(SizingError::new(
            Stage::Srq,
            Limit::KernelSrqSge,
            l.kernel_max_sge as u64,
            sge_lim as u64,
        )
        .kernel());
    }
    Ok(l)
}
