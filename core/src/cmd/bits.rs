//! Bit-field and big-endian helpers for the `mlx5_ifc` "_bits" layouts.
//!
//! [ref §0](crate::reference): `dwN[hi:lo]` names bits `hi..=lo` of the big-endian 32-bit word
//! at byte `4·N`; bit 31 is the most significant bit of byte `4·N`. Every
//! helper here works on ordinary byte slices (command messages assembled in
//! host memory before they are copied to DMA memory), never on
//! device-visible memory, and never panics: reads outside the slice yield 0
//! and writes outside the slice are dropped.

/// Mask of the low `width` bits (`width` ≤ 32).
#[inline]
const fn mask(width: u32) -> u32 {
    if width >= 32 {
        u32::MAX
    } else {
        (1u32 << width) - 1
    }
}

/// Reads the big-endian u16 at byte `off` (0 when out of range). [ref §0](crate::reference).
#[inline]
pub fn get16(buf: &[u8], off: usize) -> u16 {
    match buf.get(off..off.wrapping_add(2)) {
        Some(b) => u16::from_be_bytes([b[0], b[1]]),
        None => 0,
    }
}

/// Reads the big-endian u32 at byte `off` (0 when out of range). [ref §0](crate::reference).
#[inline]
pub fn get32(buf: &[u8], off: usize) -> u32 {
    match buf.get(off..off.wrapping_add(4)) {
        Some(b) => u32::from_be_bytes([b[0], b[1], b[2], b[3]]),
        None => 0,
    }
}

/// Reads the big-endian u64 at byte `off` (0 when out of range). [ref §0](crate::reference).
#[inline]
pub fn get64(buf: &[u8], off: usize) -> u64 {
    (u64::from(get32(buf, off)) << 32) | u64::from(get32(buf, off.wrapping_add(4)))
}

/// Writes `v` big-endian at byte `off` (dropped when out of range). [ref §0](crate::reference).
#[inline]
pub fn put16(buf: &mut [u8], off: usize, v: u16) {
    if let Some(b) = buf.get_mut(off..off.wrapping_add(2)) {
        b.copy_from_slice(&v.to_be_bytes());
    }
}

/// Writes `v` big-endian at byte `off` (dropped when out of range). [ref §0](crate::reference).
#[inline]
pub fn put32(buf: &mut [u8], off: usize, v: u32) {
    if let Some(b) = buf.get_mut(off..off.wrapping_add(4)) {
        b.copy_from_slice(&v.to_be_bytes());
    }
}

/// Writes `v` big-endian at byte `off` (dropped when out of range). [ref §0](crate::reference).
#[inline]
pub fn put64(buf: &mut [u8], off: usize, v: u64) {
    if let Some(b) = buf.get_mut(off..off.wrapping_add(8)) {
        b.copy_from_slice(&v.to_be_bytes());
    }
}

/// Reads `dw[hi:lo]` of the structure starting at byte `base` of `buf`
/// ([ref §0](crate::reference) notation). Returns 0 for an empty or out-of-range field.
#[inline]
pub fn get_bits(buf: &[u8], base: usize, dw: usize, hi: u32, lo: u32) -> u32 {
    if hi > 31 || lo > hi {
        return 0;
    }
    let w = get32(buf, base.wrapping_add(dw.wrapping_mul(4)));
    (w >> lo) & mask(hi - lo + 1)
}

/// Sets `dw[hi:lo]` of the structure starting at byte `base` of `buf` to
/// the low bits of `v` ([ref §0](crate::reference) notation); other bits are kept. Dropped
/// when out of range.
#[inline]
pub fn set_bits(buf: &mut [u8], base: usize, dw: usize, hi: u32, lo: u32, v: u32) {
    if hi > 31 || lo > hi {
        return;
    }
    let off = base.wrapping_add(dw.wrapping_mul(4));
    if buf.get(off..off.wrapping_add(4)).is_none() {
        return;
    }
    let m = mask(hi - lo + 1) << lo;
    let w = (get32(buf, off) & !m) | ((v << lo) & m);
    put32(buf, off, w);
}

/// A named bit field `dw[hi:lo]` of an `mlx5_ifc` structure
/// ([ref §0](crate::reference) notation), read and written relative to the
/// byte where the structure starts in a message. The field tables in
/// [`super::layout`] and [`super::caps::field`] are made of these.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    /// Index of the big-endian 32-bit word.
    pub dw: usize,
    /// Most significant bit of the field in that word (≤ 31).
    pub hi: u32,
    /// Least significant bit (≤ `hi`).
    pub lo: u32,
}

impl Field {
    /// The field `dw[hi:lo]`.
    pub const fn new(dw: usize, hi: u32, lo: u32) -> Self {
        Field { dw, hi, lo }
    }

    /// Reads the field of the structure at byte `base` of `buf` (0 when out
    /// of range).
    #[inline]
    pub fn get(self, buf: &[u8], base: usize) -> u32 {
        get_bits(buf, base, self.dw, self.hi, self.lo)
    }

    /// The largest value the field holds (`2^width − 1`).
    pub const fn max(self) -> u32 {
        u32::MAX >> (31 - (self.hi - self.lo))
    }

    /// Sets the field of the structure at byte `base` of `buf` to the low
    /// bits of `v`; other bits are kept (dropped when out of range).
    #[inline]
    pub fn set(self, buf: &mut [u8], base: usize, v: u32) {
        set_bits(buf, base, self.dw, self.hi, self.lo, v)
    }
}

/// A 64-bit big-endian field at a byte offset of a structure (addresses,
/// lengths, GUIDs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field64 {
    /// Byte offset inside the structure.
    pub off: usize,
}

impl Field64 {
    /// The 64-bit field at byte `off`.
    pub const fn new(off: usize) -> Self {
        Field64 { off }
    }

    /// Reads the field of the structure at byte `base` of `buf`.
    #[inline]
    pub fn get(self, buf: &[u8], base: usize) -> u64 {
        get64(buf, base.wrapping_add(self.off))
    }

    /// Writes the field of the structure at byte `base` of `buf`.
    #[inline]
    pub fn set(self, buf: &mut [u8], base: usize, v: u64) {
        put64(buf, base.wrapping_add(self.off), v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_numbering_matches_facts_convention() {
        // ref §0: bit 31 of dw0 is the MSB of byte 0.
        let mut b = [0u8; 8];
        set_bits(&mut b, 0, 0, 31, 31, 1);
        assert_eq!(b[0], 0x80);
        // qpc.state dw0[31:28] = 3 → byte 0 high nibble.
        let mut b = [0u8; 8];
        set_bits(&mut b, 0, 0, 31, 28, 3);
        assert_eq!(b[0], 0x30);
        // qpc.pd dw1[23:0] → bytes 5..8.
        set_bits(&mut b, 0, 1, 23, 0, 0x123456);
        assert_eq!(&b[4..8], &[0, 0x12, 0x34, 0x56]);
        assert_eq!(get_bits(&b, 0, 1, 23, 0), 0x123456);
        assert_eq!(get_bits(&b, 0, 0, 31, 28), 3);
    }

    #[test]
    fn out_of_range_is_harmless() {
        let mut b = [0u8; 4];
        set_bits(&mut b, 0, 1, 3, 0, 7);
        put64(&mut b, 1, 5);
        assert_eq!(b, [0; 4]);
        assert_eq!(get_bits(&b, usize::MAX, usize::MAX, 31, 0), 0);
        assert_eq!(get64(&b, usize::MAX), 0);
        assert_eq!(get_bits(&b, 0, 0, 40, 0), 0);
    }
}
