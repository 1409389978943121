//! Scatter/gather elements: [`Sge`] (device address, length, local key)
//! and the 8-byte length/key word that builders read out of one. A leaf
//! module: the memory-region checks (`mr`) and the send and receive
//! queues build on it.

use static_assertions::const_assert_eq;

/// One scatter/gather element: device address, length and local key.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct Sge {
    /// Device (IO virtual) address of the buffer.
    pub addr: u64,
    /// Length in bytes (0 = skipped on the send side, [ref §1.5](crate::reference)).
    pub length: u32,
    /// Local key of the memory region holding the buffer.
    pub lkey: u32,
}

const_assert_eq!(core::mem::offset_of!(Sge, length), 8);
const_assert_eq!(core::mem::offset_of!(Sge, lkey), 12);
const_assert_eq!(core::mem::size_of::<Sge>(), 16);

/// `length` and `lkey` of an SGE as one 8-byte load (they are adjacent:
/// `repr(C)`, offsets asserted above), for builders that form the data
/// segment's first word from it.
#[inline(always)]
pub(crate) const fn len_key(s: &Sge) -> u64 {
    // SAFETY: bytes 8..16 of the `Sge` behind the reference (its size is
    // 16, asserted above): initialised `u32` fields, no padding; the read
    // is unaligned-tolerant and creates no reference.
    unsafe {
        core::ptr::from_ref(s)
            .cast::<u8>()
            .add(8)
            .cast::<u64>()
            .read_unaligned()
    }
}

/// The `length` field inside a [`len_key`] word.
#[inline(always)]
pub(crate) const fn len_of(lk: u64) -> u32 {
    if cfg!(target_endian = "little") {
        lk as u32
    } else {
        (lk >> 32) as u32
    }
}

/// A [`len_key`] word with its `length` replaced by `len`.
#[inline(always)]
pub(crate) const fn with_len(lk: u64, len: u32) -> u64 {
    if cfg!(target_endian = "little") {
        (lk & !(u32::MAX as u64)) | len as u64
    } else {
        (lk & u32::MAX as u64) | ((len as u64) << 32)
    }
}

/// The memory image of a data segment's first 8 bytes (`BE32(length)`,
/// `BE32(lkey)`, [ref §1.5](crate::reference)) from a [`len_key`] word: on little-endian
/// hosts a swap and a rotate, on big-endian ones the word itself.
#[inline(always)]
pub(crate) const fn data_seg_word0(lk: u64) -> u64 {
    if cfg!(target_endian = "little") {
        lk.swap_bytes().rotate_left(32)
    } else {
        lk
    }
}
