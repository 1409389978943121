//! The masked atomic segment ([`MaskedAtomicSeg`], opcodes 0x14/0x15).
//! [ref §1.5](crate::reference).

use super::seg::{Be64, Segment};
use core::mem::offset_of;
use static_assertions::{assert_eq_size, const_assert_eq};

/// Masked atomic segment (32 bytes, opcodes 0x14/0x15). [ref §1.5](crate::reference).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MaskedAtomicSeg {
    /// Swap (CS) or add (FA) operand.
    pub swap_add: Be64,
    /// Compare operand.
    pub compare: Be64,
    /// Mask applied to `swap_add`.
    pub swap_add_mask: Be64,
    /// Mask applied to `compare`.
    pub compare_mask: Be64,
}

impl MaskedAtomicSeg {
    /// Builds a masked atomic segment. [ref §1.5](crate::reference).
    pub const fn new(swap_add: u64, compare: u64, swap_add_mask: u64, compare_mask: u64) -> Self {
        MaskedAtomicSeg {
            swap_add: Be64::new(swap_add),
            compare: Be64::new(compare),
            swap_add_mask: Be64::new(swap_add_mask),
            compare_mask: Be64::new(compare_mask),
        }
    }
}

// SAFETY: a `#[repr(C)]` struct of `u8`, byte arrays and the
// `Be16`/`Be32`/`Be64` byte-array wrappers only: alignment 1, hence no
// padding (sizes pinned below), every bit pattern valid, no interior
// mutability; `SIZE` is left at its default.
unsafe impl Segment for MaskedAtomicSeg {}

// Layout pins (ref §1.5, §2.2; `mlx5dv.h (installed)`).
assert_eq_size!(MaskedAtomicSeg, [u8; 32]);
const_assert_eq!(offset_of!(MaskedAtomicSeg, compare), 8);
const_assert_eq!(offset_of!(MaskedAtomicSeg, swap_add_mask), 16);
const_assert_eq!(offset_of!(MaskedAtomicSeg, compare_mask), 24);
