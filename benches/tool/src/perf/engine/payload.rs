//! What every message carries and how it is checked: the iteration tag
//! at each end (or, under 16 bytes, one byte value per iteration), the
//! stamping of a source slot, and the in-place comparison of what arrived
//! with what was sent (tags, body, fetched atomics).

use super::pair::Slot;

/// Bytes of the iteration tag at each end of a message.
pub(super) const TAG: usize = 8;

/// The iteration tag: `i + 1`, big-endian (its last byte changes every
/// iteration, which is what the write-latency receiver watches).
pub(super) fn tag(i: u64) -> [u8; TAG] {
    (i + 1).to_be_bytes()
}

/// The byte of messages under 16 bytes (never 0, changes every iteration).
pub(super) fn small(i: u64) -> u8 {
    (i % 255) as u8 + 1
}

/// Writes iteration `i`'s tags (or, under 16 bytes, its byte) into `s`.
pub(super) fn stamp(s: &Slot, size: usize, i: u64) {
    let p = s.cpu.as_ptr();
    if size < 2 * TAG {
        // SAFETY: the slot holds at least `size` bytes; no WR reads it now.
        unsafe { std::ptr::write_bytes(p, small(i), size) };
    } else {
        let t = tag(i);
        // SAFETY: as above; both tags lie inside [0, size).
        unsafe {
            std::ptr::copy_nonoverlapping(t.as_ptr(), p, TAG);
            std::ptr::copy_nonoverlapping(t.as_ptr(), p.add(size - TAG), TAG);
        }
    }
}

/// The last byte of iteration `i`'s message.
pub(super) fn last_byte(size: usize, i: u64) -> u8 {
    if size < 2 * TAG {
        small(i)
    } else {
        tag(i)[TAG - 1]
    }
}

/// Bytes of the tag at `p` that differ from every iteration `j` that may
/// be there: `j = i + m * stride < upto` (later WRs through the same slot).
pub(super) fn tag_mismatches(p: *const u8, i: u64, stride: u64, upto: u64) -> u64 {
    let mut got = [0u8; TAG];
    // SAFETY: callers pass a pointer to TAG bytes inside a live slot; raw
    // reads, no reference to memory the device may write.
    unsafe { std::ptr::copy_nonoverlapping(p, got.as_mut_ptr(), TAG) };
    let named = u64::from_be_bytes(got).wrapping_sub(1);
    let stride = stride.max(1);
    if named >= i && named < upto.max(i + 1) && (named - i).is_multiple_of(stride) {
        return 0;
    }
    got.iter().zip(tag(i)).filter(|(x, y)| **x != *y).count() as u64
}

/// Bytes of the message at `p` that differ from iteration `i`'s, compared
/// in place (a 4 KiB window at a time, no copy of the message). With a
/// slot shared by every `stride`-th iteration (posted up to `upto`), a
/// tag of any of those later iterations is accepted too; the body must
/// match exactly.
pub(super) fn mismatches(
    p: *const u8,
    size: usize,
    i: u64,
    body: &[u8],
    stride: u64,
    upto: u64,
) -> u64 {
    let mut chunk = [0u8; 4096];
    let mut diff_body = |from: usize, to: usize| -> u64 {
        let mut d = 0u64;
        let mut o = from;
        while o < to {
            let n = (to - o).min(chunk.len());
            // SAFETY: [o, o + n) lies inside the `size` bytes at `p`, a
            // live slot; raw reads, no reference to device-visible memory.
            unsafe { std::ptr::copy_nonoverlapping(p.add(o), chunk.as_mut_ptr(), n) };
            let want = &body[o..o + n];
            if chunk[..n] != *want {
                d += chunk[..n].iter().zip(want).filter(|(x, y)| x != y).count() as u64;
            }
            o += n;
        }
        d
    };
    if size < 2 * TAG {
        let stride = stride.max(1);
        let ok = |b: u8| {
            (0..=((upto.max(i + 1) - 1 - i) / stride).min(255)).any(|m| small(i + m * stride) == b)
        };
        let mut got = [0u8; 2 * TAG];
        // SAFETY: `size` bytes at `p` inside a live slot; raw reads.
        unsafe { std::ptr::copy_nonoverlapping(p, got.as_mut_ptr(), size) };
        if got[..size].iter().all(|&b| b == got[0]) && ok(got[0]) {
            return 0;
        }
        let b = small(i);
        return got[..size].iter().filter(|&&x| x != b).count() as u64;
    }
    let mid = diff_body(TAG, size - TAG);
    // SAFETY: both tags lie inside the `size` bytes at `p`.
    let tail = unsafe { p.add(size - TAG) };
    tag_mismatches(p, i, stride, upto) + tag_mismatches(tail, i, stride, upto) + mid
}

pub(super) fn read_byte(s: &Slot, off: usize) -> u8 {
    // SAFETY: callers pass offsets inside the slot; a raw volatile read of
    // memory the device may be writing.
    unsafe { std::ptr::read_volatile(s.cpu.as_ptr().add(off)) }
}

/// Bytes of an 8-byte fetched value that differ from `v` (either byte
/// order: the simulator stores atomics big-endian, hardware may be set up
/// for the host's order).
pub(super) fn atomic_mismatches(p: *const u8, v: u64) -> u64 {
    let mut got = [0u8; 8];
    // SAFETY: the slot holds at least 8 bytes no WR writes now.
    unsafe { std::ptr::copy_nonoverlapping(p, got.as_mut_ptr(), 8) };
    let d = |w: [u8; 8]| got.iter().zip(w).filter(|(x, y)| **x != *y).count() as u64;
    d(v.to_be_bytes()).min(d(v.to_le_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The payload check counts wrong bytes (so a broken transfer shows).
    #[test]
    fn mismatch_counter_sees_wrong_bytes() {
        let body: Vec<u8> = (0..64).map(|j| ((j * 7) % 251 + 1) as u8).collect();
        let mut buf = body.clone();
        buf[..8].copy_from_slice(&tag(41));
        buf[56..].copy_from_slice(&tag(41));
        assert_eq!(mismatches(buf.as_ptr(), 64, 41, &body, 1, 42), 0);
        // Another iteration's tags: the last byte of both tags differs.
        assert_eq!(mismatches(buf.as_ptr(), 64, 42, &body, 1, 43), 2);
        // ... unless that slot is shared and iteration 41 may be there:
        // a slot shared by every 3rd iteration holds 38's tag or later.
        assert_eq!(mismatches(buf.as_ptr(), 64, 38, &body, 3, 45), 0);
        // 40 is not among 38, 41, 44 … of stride 2.
        assert_eq!(mismatches(buf.as_ptr(), 64, 40, &body, 2, 45), 2);
        // Not yet posted: refused.
        assert_eq!(mismatches(buf.as_ptr(), 64, 38, &body, 3, 41), 2);
        buf[30] ^= 0xff;
        assert_eq!(mismatches(buf.as_ptr(), 64, 41, &body, 1, 42), 1);
        let small_msg = [small(7); 5];
        assert_eq!(mismatches(small_msg.as_ptr(), 5, 7, &body, 1, 8), 0);
        assert_eq!(mismatches(small_msg.as_ptr(), 5, 8, &body, 1, 9), 5);
        assert_eq!(atomic_mismatches(9u64.to_be_bytes().as_ptr(), 9), 0);
        assert_eq!(atomic_mismatches(9u64.to_le_bytes().as_ptr(), 9), 0);
        assert_eq!(atomic_mismatches(10u64.to_be_bytes().as_ptr(), 9), 1);
        // A large message is compared across the 4 KiB windows.
        let body: Vec<u8> = (0..10_000).map(|j| ((j * 7) % 251 + 1) as u8).collect();
        let mut big = body.clone();
        big[..8].copy_from_slice(&tag(0));
        big[10_000 - 8..].copy_from_slice(&tag(0));
        assert_eq!(mismatches(big.as_ptr(), 10_000, 0, &body, 1, 1), 0);
        big[4096] ^= 1;
        big[8191] ^= 1;
        assert_eq!(mismatches(big.as_ptr(), 10_000, 0, &body, 1, 1), 2);
    }
}
