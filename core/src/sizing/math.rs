//! Small const integer helpers of the provider's sizing arithmetic
//! (`align_up`, `rup2`, `ilog32`, [ref §0](crate::reference)) and the page-size
//! check every queue allocation is aligned by.

use super::caps::DeviceCaps;
use super::error::{Limit, SizingError, Stage};

/// Round up to a multiple of `a`. Total: `a == 0` means no alignment
/// (returns `x`), and a result beyond `u64::MAX` saturates there.
pub const fn align_up(x: u64, a: u64) -> u64 {
    if a == 0 {
        return x;
    }
    match x.div_ceil(a).checked_mul(a) {
        Some(v) => v,
        None => u64::MAX,
    }
}

/// Largest power-of-two count or byte size a 32-bit sizing field holds.
pub(super) const MAX_POW2_U32: u64 = 1 << 31;

/// `caps.page_size` must be a power of two to align allocations to.
pub(super) const fn check_page_size(stage: Stage, caps: &DeviceCaps) -> Result<u64, SizingError> {
    if !caps.page_size.is_power_of_two() {
        return Err(SizingError::new(
            stage,
            Limit::PageSize,
            caps.page_size as u64,
            MAX_POW2_U32,
        ));
    }
    Ok(caps.page_size as u64)
}

/// Round up to a power of two (`rup2`, [ref §0](crate::reference)); `rup2(0) = 1`.
pub const fn rup2(x: u64) -> u64 {
    x.next_power_of_two()
}

/// Number of significant bits of `v` (`ilog32`, [ref §0](crate::reference)).
pub const fn ilog32(v: u32) -> u32 {
    32 - v.leading_zeros()
}

pub(super) const fn max_u32(a: u32, b: u32) -> u32 {
    if a > b {
        a
    } else {
        b
    }
}
