//! CQ sizing ([ref §3.7](crate::reference)): the provider's own CQ limits and
//! the CQ geometry ([`CqLayout`]), with and without the kernel's limit.

use super::caps::DeviceCaps;
use super::error::{Limit, SizingError, Stage};
use super::math::{align_up, check_page_size, rup2};

/// The provider's own CQ entry limit, independent of the device: `ncqe` above
/// 2^24 is rejected with EINVAL before the kernel is asked ([ref §3.7](crate::reference)).
pub const PROVIDER_MAX_NCQE: u64 = 1 << 24;
/// The provider's buffer-size guard: a CQ buffer of more than `INT_MAX`
/// bytes fails with ENOMEM ([ref §3.7](crate::reference): "resize also guards cqe·64 > INT_MAX").
pub const PROVIDER_MAX_CQ_BUF: u64 = 0x7fff_ffff;

/// CQ geometry ([ref §3.7](crate::reference)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CqLayout {
    /// Entries in the ring: `rup2(cqe + 1)`.
    pub ncqe: u32,
    /// `ibv_cq.cqe` reported to the user: `ncqe − 1`, the usable entries.
    pub reported_cqe: u32,
    /// CQE size in bytes (64 or 128).
    pub cqe_size: u32,
    /// `ncqe · cqe_size`.
    pub buf_bytes: u64,
    /// Buffer rounded up to the page size.
    pub alloc_bytes: u64,
    /// `op_own` byte every entry is initialised to (0xf0).
    pub init_op_own: u8,
}

/// CQ sizing as the provider alone computes it ([ref §3.7](crate::reference)): rejects `cqe = 0`,
/// `ncqe > 2^24`, a CQE size other than 64/128, and a buffer above `INT_MAX`
/// bytes (ENOMEM). Does not apply the device's `max_cqe` (see [`cq_layout`]).
pub const fn cq_provider_layout(
    cqe: u32,
    cqe_size: u32,
    caps: &DeviceCaps,
) -> Result<CqLayout, SizingError> {
    if cqe == 0 {
        return Err(SizingError::new(Stage::Cq, Limit::CqeZero, 0, 1));
    }
    if cqe_size != 64 && cqe_size != 128 {
        return Err(SizingError::new(
            Stage::Cq,
            Limit::CqBufBytes,
            cqe_size as u64,
            128,
        ));
    }
    let ncqe = rup2(cqe as u64 + 1);
    if ncqe > PROVIDER_MAX_NCQE {
        return Err(SizingError::new(
            Stage::Cq,
            Limit::ProviderMaxCqe,
            ncqe,
            PROVIDER_MAX_NCQE,
        ));
    }
    let buf = ncqe * cqe_size as u64;
    if buf > PROVIDER_MAX_CQ_BUF {
        return Err(SizingError::new(
            Stage::Cq,
            Limit::CqBufBytes,
            buf,
            PROVIDER_MAX_CQ_BUF,
        ));
    }
    let page = match check_page_size(Stage::Cq, caps) {
        Ok(p) => p,
        Err(e) => return Err(e),
    };
    Ok(CqLayout {
        ncqe: ncqe as u32,
        reported_cqe: (ncqe - 1) as u32,
        cqe_size,
        buf_bytes: buf,
        alloc_bytes: align_up(buf, page),
        init_op_own: crate::cqe::OP_OWN_INIT,
    })
}

/// CQ sizing including the kernel's limit ([ref §3.7](crate::reference)): the provider's rules
/// ([`cq_provider_layout`]), then `ncqe > caps.max_cqe` → EINVAL
/// ([`RejectedBy::Kernel`](super::RejectedBy::Kernel)).
pub const fn cq_layout(
    cqe: u32,
    cqe_size: u32,
    caps: &DeviceCaps,
) -> Result<CqLayout, SizingError> {
    let l = match cq_provider_layout(cqe, cqe_size, caps) {
        Ok(l) => l,
        Err(e) => return Err(e),
    };
    if l.ncqe > caps.max_cqe {
        return Err(
            SizingError::new(Stage::Cq, Limit::MaxCqe, l.ncqe as u64, caps.max_cqe as u64).kernel(),
        );
    }
    Ok(l)
}
