//! The page address lists (`pas[]`) of the CREATE_{CQ,QP,EQ,SRQ,MKEY}
//! inputs: where they start and how their BE64 entries are written
//! ([ref §7.9–§7.12](crate::reference)).

use crate::cmd::bits::put64;

/// Offset of `pas[]` / MTT lists in CREATE_{CQ,QP,EQ,SRQ,MKEY} inputs.
/// [ref §7.9–§7.12](crate::reference).
pub const PAS_OFFSET: usize = 0x110;

/// Writes `npages` BE64 page addresses `base + i·4096` (with `flags` or'ed
/// in) from byte `at`; returns the end offset.
pub(super) fn put_pas(b: &mut [u8], at: usize, base: u64, npages: usize, flags: u64) -> usize {
    put_pas_sized(b, at, base, npages, 12, flags)
}

/// As `put_pas`, for pages of `1 << log_page` bytes.
pub(super) fn put_pas_sized(
    b: &mut [u8],
    at: usize,
    base: u64,
    npages: usize,
    log_page: u8,
    flags: u64,
) -> usize {
    for i in 0..npages {
        put64(
            b,
            at + 8 * i,
            base.wrapping_add((i as u64) << log_page) | flags,
        );
    }
    at + 8 * npages
}
