//! The receive scatter segment encoding ([ref §1.5, §2.1, §2.2](crate::reference)):
//! a data segment as two native words, the terminator, and the writers of
//! one receive WR's segments.

use crate::sge::{data_seg_word0, len_key, Sge};

/// The 16 bytes of a data segment `{byte_count, lkey, addr}`
/// ([ref §1.5](crate::reference)) as two native words whose in-memory bytes are the big-endian
/// fields: the same bytes as [`DataSeg::new`](crate::wqe::DataSeg::new), stored with two 8-byte
/// stores.
#[inline(always)]
pub(super) const fn seg_words(byte_count: u32, lkey: u32, addr: u64) -> [u64; 2] {
    [
        (((byte_count as u64) << 32) | lkey as u64).to_be(),
        addr.to_be(),
    ]
}

/// [`seg_words`] of `s`, its first word from one 8-byte load of the
/// `Sge`'s length and key (the send builder's data-segment word,
/// [`data_seg_word0`]).
#[inline(always)]
pub(super) const fn seg_words_of(s: &Sge) -> [u64; 2] {
    [data_seg_word0(len_key(s)), s.addr.to_be()]
}

// `seg_words_of` is `seg_words`.
const _: () = {
    let s = Sge {
        addr: 0x1112_1314_1516_1718,
        length: 0x0102_0304,
        lkey: 0x0506_0708,
    };
    let (a, b) = (seg_words_of(&s), seg_words(s.length, s.lkey, s.addr));
    assert!(a[0] == b[0] && a[1] == b[1]);
};

/// [`DataSeg::TERMINATOR`](crate::wqe::DataSeg::TERMINATOR) as [`seg_words`].
pub(super) const TERMINATOR_WORDS: [u64; 2] = seg_words(0, crate::wqe::INVALID_LKEY, 0);

/// Stores one data segment.
///
/// # Safety
/// `dst` must be valid for writes of 16 bytes (no alignment needed), with
/// no Rust reference to them.
#[inline(always)]
pub(super) unsafe fn put_seg(dst: *mut u8, w: [u64; 2]) {
    // SAFETY: the caller guarantees 16 writable bytes at `dst`; the stores
    // are unaligned, so no alignment is assumed.
    unsafe {
        dst.cast::<u64>().write_unaligned(w[0]);
        dst.add(8).cast::<u64>().write_unaligned(w[1]);
    }
}

/// Writes the data segments of one receive WR at `wqe`: its SGEs (those
/// of length 0 skipped when `SKIP_ZERO`), then the terminator when fewer
/// than `max_gs` segments were written. [ref §2.1, §2.2](crate::reference).
///
/// # Safety
/// `sgl.len() <= max_gs` and `wqe` valid for writes of `16 * max_gs` bytes
/// with no Rust reference to them.
#[inline(always)]
pub(super) unsafe fn put_recv_segs<const SKIP_ZERO: bool>(
    wqe: *mut u8,
    sgl: &[Sge],
    max_gs: usize,
) {
    let mut j = 0usize;
    if let [s] = sgl {
        // The common single-SGE receive, without the loop.
        if !SKIP_ZERO || s.length != 0 {
            // SAFETY: 1 = sgl.len() <= max_gs: segment 0 is inside `wqe`.
            unsafe { put_seg(wqe, seg_words(s.length, s.lkey, s.addr)) };
            j = 1;
        }
    } else {
        for s in sgl {
            if SKIP_ZERO && s.length == 0 {
                continue;
            }
            // SAFETY: j counts written segments, j < sgl.len() <= max_gs:
            // segment j is inside `wqe`.
            unsafe { put_seg(wqe.add(j << 4), seg_words(s.length, s.lkey, s.addr)) };
            j += 1;
        }
    }
    if j < max_gs {
        // SAFETY: j < max_gs: segment j is inside `wqe`.
        unsafe { put_seg(wqe.add(j << 4), TERMINATOR_WORDS) };
    }
}

/// [`put_recv_segs`] for any SGE count, out of the hot loop: `false`
/// (nothing written) when `sgl.len() > max_gs`.
///
/// # Safety
/// `wqe` valid for writes of `16 * max_gs` bytes with no Rust reference to
/// them.
#[cold]
#[inline(never)]
pub(super) unsafe fn put_any<const SKIP_ZERO: bool>(
    wqe: *mut u8,
    sgl: &[Sge],
    max_gs: usize,
) -> bool {
    if sgl.len() > max_gs {
        return false;
    }
    // SAFETY: sgl.len() <= max_gs (checked above), the caller's WQE holds
    // max_gs segments.
    unsafe { put_recv_segs::<SKIP_ZERO>(wqe, sgl, max_gs) };
    true
}
