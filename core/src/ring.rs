//! Explicit ring-wrap helpers ([ref §1.8](crate::reference); the UCX style of naming each wrap
//! case). A ring is `[start, start + size)`; positions are byte offsets.

/// Byte offset of the next position after writing `len` bytes at `pos` in a
/// ring of `size` bytes, when the write may run up to the end exactly: if
/// the result equals `size` it wraps to 0 ("wrap exact").
#[inline(always)]
pub const fn advance_exact(pos: usize, len: usize, size: usize) -> usize {
    let next = pos + len;
    if next == size {
        0
    } else {
        next
    }
}

/// Splits a copy of `len` bytes starting at ring offset `pos` into the part
/// before the ring end and the part continuing at offset 0 ("wrap any").
/// Returns `(first, second)` with `first + second == len`.
#[inline(always)]
pub const fn split_at_end(pos: usize, len: usize, size: usize) -> (usize, usize) {
    let room = size - pos;
    if len <= room {
        (len, 0)
    } else {
        (room, len - room)
    }
}

/// Ring byte offset of WQEBB counter `counter` in a ring of `wqe_cnt`
/// (power of two) 64-byte blocks.
#[inline(always)]
pub const fn wqebb_offset(counter: u32, wqe_cnt: u32) -> usize {
    ((counter & (wqe_cnt - 1)) as usize) << crate::wqe::SEND_WQE_SHIFT
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_wraps_only_at_end() {
        assert_eq!(advance_exact(0, 16, 64), 16);
        assert_eq!(advance_exact(48, 16, 64), 0);
    }

    #[test]
    fn split() {
        assert_eq!(split_at_end(500, 10, 512), (10, 0));
        assert_eq!(split_at_end(500, 12, 512), (12, 0));
        assert_eq!(split_at_end(500, 20, 512), (12, 8));
    }

    #[test]
    fn wqebb() {
        assert_eq!(wqebb_offset(9, 8), 64);
        assert_eq!(wqebb_offset(0x1_0005, 8), 5 * 64);
    }
}
