//! Segment layouts: control, remote address, data pointer, inline header,
//! atomic, datagram (address vector). [ref §1.2–§1.5](crate::reference).

use super::{FmCeSe, Opcode};
use crate::error::ParseError;
use static_assertions::{assert_eq_size, const_assert_eq};

/// Big-endian 16-bit field, stored exactly as the device reads it.
#[repr(transparent)]
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Be16([u8; 2]);
/// Big-endian 32-bit field.
#[repr(transparent)]
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Be32([u8; 4]);
/// Big-endian 64-bit field.
#[repr(transparent)]
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Be64([u8; 8]);

macro_rules! be_impl {
    ($t:ident, $n:ty) => {
        impl $t {
            /// Encodes a host value.
            #[inline(always)]
            pub const fn new(v: $n) -> Self {
                Self(v.to_be_bytes())
            }
            /// Decodes to a host value.
            #[inline(always)]
            pub const fn get(self) -> $n {
                <$n>::from_be_bytes(self.0)
            }
            /// The raw bytes as stored.
            #[inline(always)]
            pub const fn raw(self) -> [u8; core::mem::size_of::<$n>()] {
                self.0
            }
            /// Wraps raw stored bytes.
            #[inline(always)]
            pub const fn from_raw(b: [u8; core::mem::size_of::<$n>()]) -> Self {
                Self(b)
            }
        }
        impl core::fmt::Debug for $t {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                write!(f, "{:#x}", self.get())
            }
        }
    };
}
be_impl!(Be16, u16);
be_impl!(Be32, u32);
be_impl!(Be64, u64);

/// A fixed-size WQE segment that can be stored into a ring or parsed back.
///
/// The provided methods move the value's raw bytes: [`Segment::parse`]
/// turns arbitrary input bytes (from a device, a file or a fuzzer) into a
/// `Self`, and [`Segment::to_bytes`] / [`Segment::write_to`] expose every
/// byte of a `Self`. That is only sound for plain-old-data types, hence the
/// trait is `unsafe` to implement.
///
/// # Safety
/// An implementing type must be plain old data:
/// * `#[repr(C)]` or `#[repr(transparent)]` (a layout the bytes mean
///   something in), made only of fields that are themselves plain old data
///   (integers, byte arrays, the `Be*` wrappers, other such structs);
/// * **every bit pattern is a valid value**: no `bool`, `char`, enums,
///   references, pointers with validity requirements, `NonZero*` or
///   niches (`parse` builds a `Self` from any bytes);
/// * **no padding bytes**, anywhere (`to_bytes` and `write_to` read all
///   `size_of::<Self>()` bytes; padding is uninitialised);
/// * no interior mutability and no `Drop` glue (it is `Copy`).
///
/// [`Segment::SIZE`] must equal `size_of::<Self>()`. That one is also
/// checked by the compiler: every provided method evaluates a constant
/// assertion, so an implementation that overrides `SIZE` with anything
/// else fails to compile as soon as a method is used:
///
/// ```compile_fail,E0080
/// use bareverbs::wqe::{Be64, Segment};
/// #[repr(C)]
/// #[derive(Clone, Copy)]
/// struct Wrong {
///     a: Be64,
///     b: Be64,
/// }
/// // SAFETY (of the plain-old-data part): two byte arrays, no padding.
/// unsafe impl Segment for Wrong {
///     const SIZE: usize = 8; // but size_of::<Wrong>() == 16
/// }
/// let _ = Wrong::parse(&[0u8; 16]);
/// ```
///
/// Nor can the trait be implemented without `unsafe` (the promise above
/// must be made explicitly):
///
/// ```compile_fail,E0200
/// use bareverbs::wqe::{Be64, Segment};
/// #[repr(C)]
/// #[derive(Clone, Copy)]
/// struct Plain {
///     a: Be64,
/// }
/// impl Segment for Plain {}
/// ```
///
/// The same type with the default `SIZE` compiles:
///
/// ```
/// use bareverbs::wqe::{Be64, Segment};
/// #[repr(C)]
/// #[derive(Clone, Copy)]
/// struct Right {
///     a: Be64,
///     b: Be64,
/// }
/// // SAFETY: repr(C) of two byte arrays: no padding, any bits valid.
/// unsafe impl Segment for Right {}
/// assert!(Right::parse(&[0u8; 16]).is_ok());
/// ```
pub unsafe trait Segment: Copy + Sized {
    /// Size in bytes (a multiple of 16 for send segments). Must equal
    /// `size_of::<Self>()`; leave the default.
    const SIZE: usize = core::mem::size_of::<Self>();

    /// Evaluated by every provided method: a `SIZE` other than
    /// `size_of::<Self>()` is a compile error, not out-of-bounds access.
    #[doc(hidden)]
    const SIZE_IS_SIZE_OF: () = assert!(
        Self::SIZE == core::mem::size_of::<Self>(),
        "Segment::SIZE must equal size_of::<Self>()"
    );

    /// Stores the segment at `dst` with one unaligned raw-pointer write.
    ///
    /// # Safety
    /// `dst` must be valid for writes of `Self::SIZE` bytes. No reference to
    /// that memory may be live (it may be device-visible).
    #[inline(always)]
    unsafe fn write_to(self, dst: *mut u8) {
        #[allow(clippy::let_unit_value)]
        let () = Self::SIZE_IS_SIZE_OF;
        // SAFETY: the caller guarantees `dst` is writable for SIZE bytes,
        // which is size_of::<Self>() (asserted at compile time above); the
        // write is unaligned so no alignment is assumed.
        unsafe { core::ptr::write_unaligned(dst.cast::<Self>(), self) }
    }

    /// Copies the segment out of the first `Self::SIZE` bytes of `b`.
    fn parse(b: &[u8]) -> Result<Self, ParseError> {
        #[allow(clippy::let_unit_value)]
        let () = Self::SIZE_IS_SIZE_OF;
        if b.len() < Self::SIZE {
            return Err(ParseError::Truncated {
                need: Self::SIZE,
                have: b.len(),
            });
        }
        // SAFETY: `b` holds at least SIZE = size_of::<Self>() bytes (checked
        // above; equality asserted at compile time); the trait's contract
        // makes every bit pattern a valid `Self`; the read is unaligned.
        Ok(unsafe { core::ptr::read_unaligned(b.as_ptr().cast::<Self>()) })
    }

    /// The segment's bytes in memory order. `N` must be `Self::SIZE`
    /// (checked at compile time).
    fn to_bytes<const N: usize>(self) -> [u8; N] {
        const { assert!(N == Self::SIZE, "to_bytes::<N> needs N == Self::SIZE") };
        let mut out = [0u8; N];
        // SAFETY: `out` is a local array of exactly SIZE bytes (N == SIZE
        // asserted at compile time); the trait's contract says `Self` has
        // no padding, so all N bytes written are initialised.
        unsafe { self.write_to(out.as_mut_ptr()) };
        out
    }
}

/// Control segment, always first in a send WQE (16 bytes). [ref §1.2](crate::reference).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CtrlSeg {
    /// opmod (31:24) | WQE index (23:8) | opcode (7:0).
    pub opmod_idx_opcode: Be32,
    /// QPN (31:8) | DS (5:0).
    pub qpn_ds: Be32,
    /// WQE signature (0 unless signatures are enabled).
    pub signature: u8,
    /// DCI stream channel id (rdma-core only; 0 otherwise).
    pub dci_stream_channel_id: Be16,
    /// Fence mode | CE | SE bits. [ref §1.3](crate::reference).
    pub fm_ce_se: u8,
    /// Immediate / invalidate rkey / mkey, stored as the device reads it.
    pub imm: Be32,
}

impl CtrlSeg {
    /// Builds a control segment.
    #[inline(always)]
    pub const fn new(
        opmod: u8,
        wqe_index: u16,
        opcode: u8,
        qpn: u32,
        ds: u8,
        fm_ce_se: u8,
        imm: Be32,
    ) -> Self {
        CtrlSeg {
            opmod_idx_opcode: Be32::new(
                ((opmod as u32) << 24) | ((wqe_index as u32) << 8) | opcode as u32,
            ),
            qpn_ds: Be32::new((qpn << 8) | (ds as u32 & super::DS_MASK)),
            signature: 0,
            dci_stream_channel_id: Be16::new(0),
            fm_ce_se,
            imm,
        }
    }
    /// Memory image of bytes 4..8 (`BE32(qpn << 8 | ds)`) as a native
    /// `u32`. The QPN and DS parts occupy disjoint bits, so
    /// `qpn_ds_image(qpn, 0) | qpn_ds_image(0, ds)` is the whole field: a
    /// builder forms the QPN part once per queue.
    #[inline(always)]
    pub const fn qpn_ds_image(qpn: u32, ds: u8) -> u32 {
        u32::from_ne_bytes(((qpn << 8) | (ds as u32 & super::DS_MASK)).to_be_bytes())
    }

    /// The DS part of [`qpn_ds_image`](Self::qpn_ds_image) for `ds <= 63`
    /// (the caller's bound: a WQE has at most 63 units): the same as
    /// `qpn_ds_image(0, ds)` without the mask.
    #[inline(always)]
    pub const fn ds_image(ds: u8) -> u32 {
        u32::from_ne_bytes([0, 0, 0, ds])
    }

    /// Memory image of bytes 0..8 (opmod 0, `wqe_index`, `opcode`, then
    /// the [`qpn_ds_image`](Self::qpn_ds_image)) as one native-endian word,
    /// for builders that store the segment as two words.
    #[inline(always)]
    pub const fn word0(wqe_index: u16, opcode: u8, qpn_ds_image: u32) -> u64 {
        if cfg!(target_endian = "little") {
            // Bytes 1..3 are the index big-endian: its two bytes swapped,
            // one byte up; the opcode is byte 3.
            ((qpn_ds_image as u64) << 32)
                | ((opcode as u64) << 24)
                | ((wqe_index.swap_bytes() as u64) << 8)
        } else {
            let lo = ((wqe_index as u32) << 8) | opcode as u32;
            join(lo.to_be_bytes(), qpn_ds_image.to_ne_bytes())
        }
    }

    /// Memory image of bytes 8..16 (signature 0, DCI stream 0, `fm_ce_se`,
    /// `imm`) as one native-endian word.
    #[inline(always)]
    pub const fn word1(fm_ce_se: u8, imm: Be32) -> u64 {
        join([0, 0, 0, fm_ce_se], imm.0)
    }

    /// The mlx5 opcode (bits 7:0).
    pub const fn opcode(&self) -> u8 {
        self.opmod_idx_opcode.get() as u8
    }
    /// The same segment with `qpn_ds` replaced by a precomputed
    /// `qpn << 8 | ds` word.
    #[must_use]
    #[inline(always)]
    pub const fn with_qpn_ds(mut self, qpn_ds: u32) -> Self {
        self.qpn_ds = Be32::new(qpn_ds);
        self
    }
    /// The opcode modifier (bits 31:24).
    pub const fn opmod(&self) -> u8 {
        (self.opmod_idx_opcode.get() >> 24) as u8
    }
    /// The WQE index (producer counter of the first WQEBB, bits 23:8).
    pub const fn wqe_index(&self) -> u16 {
        (self.opmod_idx_opcode.get() >> 8) as u16
    }
    /// The QP number (24 bits).
    pub const fn qpn(&self) -> u32 {
        self.qpn_ds.get() >> 8
    }
    /// The DS count: total WQE length in 16-byte units.
    pub const fn ds(&self) -> u8 {
        (self.qpn_ds.get() & super::DS_MASK) as u8
    }
    /// The `fm_ce_se` byte as flags (unknown bits retained). [ref §1.3](crate::reference).
    pub const fn flags(&self) -> FmCeSe {
        FmCeSe::from_bits_retain(self.fm_ce_se)
    }
    /// The opcode byte decoded; unknown values as `Err(byte)`. [ref §1.6](crate::reference).
    pub fn op(&self) -> Result<Opcode, u8> {
        Opcode::try_from(self.opcode())
    }
    /// The same segment with the signature byte set. [ref §1.12](crate::reference).
    #[must_use]
    pub const fn with_signature(mut self, signature: u8) -> Self {
        self.signature = signature;
        self
    }
    /// Number of WQEBBs the WQE occupies: ceil(DS·16 / 64). [ref §1.8](crate::reference).
    pub const fn wqebbs(&self) -> u32 {
        super::wqebbs_for_ds(self.ds() as u32)
    }
    /// Byte offset of the opcode in the segment: the low byte of the
    /// big-endian `opmod_idx_opcode` dword. [ref §1.3](crate::reference).
    pub const OPCODE_BYTE: usize = core::mem::offset_of!(CtrlSeg, opmod_idx_opcode) + 3;
    /// Byte offset of the DS count in the segment: the low byte of the
    /// big-endian `qpn_ds` dword (masked with [`super::DS_MASK`]). [ref §1.3](crate::reference).
    pub const DS_BYTE: usize = core::mem::offset_of!(CtrlSeg, qpn_ds) + 3;
    /// Byte offset of the `fm_ce_se` flags byte. [ref §1.3](crate::reference).
    pub const FM_CE_SE_BYTE: usize = core::mem::offset_of!(CtrlSeg, fm_ce_se);
}

/// Remote address segment (16 bytes). [ref §1.5](crate::reference).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RaddrSeg {
    /// Remote virtual address.
    pub raddr: Be64,
    /// Remote key.
    pub rkey: Be32,
    /// Reserved, written 0.
    pub reserved: Be32,
}

impl RaddrSeg {
    /// Builds a remote address segment.
    #[inline(always)]
    pub const fn new(raddr: u64, rkey: u32) -> Self {
        RaddrSeg {
            raddr: Be64::new(raddr),
            rkey: Be32::new(rkey),
            reserved: Be32::new(0),
        }
    }
}

/// Data (scatter/gather pointer) segment, same in SQ, RQ and SRQ (16 bytes).
/// [ref §1.5](crate::reference).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DataSeg {
    /// Byte count (bit 31 must be 0: it is the inline marker).
    pub byte_count: Be32,
    /// Local key.
    pub lkey: Be32,
    /// Local address.
    pub addr: Be64,
}

impl DataSeg {
    /// Builds a data segment.
    #[inline(always)]
    pub const fn new(byte_count: u32, lkey: u32, addr: u64) -> Self {
        DataSeg {
            byte_count: Be32::new(byte_count),
            lkey: Be32::new(lkey),
            addr: Be64::new(addr),
        }
    }
    /// The receive-list terminator `{0, INVALID_LKEY, 0}`. [ref §2.1](crate::reference).
    pub const TERMINATOR: DataSeg = DataSeg::new(0, super::INVALID_LKEY, 0);
}

/// Inline data segment header (4 bytes, payload follows). [ref §1.5](crate::reference).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InlineHdr {
    /// Inline length | 0x8000_0000.
    pub byte_count: Be32,
}

impl InlineHdr {
    /// Builds the header for `len` inline bytes.
    #[inline(always)]
    pub const fn new(len: u32) -> Self {
        InlineHdr {
            byte_count: Be32::new(len | super::INLINE_SEG),
        }
    }
}

/// Atomic segment (16 bytes). [ref §1.5](crate::reference).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AtomicSeg {
    /// Swap value (CS) or add value (FA).
    pub swap_add: Be64,
    /// Compare value (CS only).
    pub compare: Be64,
}

impl AtomicSeg {
    /// Builds an atomic segment. [ref §1.5](crate::reference).
    pub const fn new(swap_add: u64, compare: u64) -> Self {
        AtomicSeg {
            swap_add: Be64::new(swap_add),
            compare: Be64::new(compare),
        }
    }
}

/// Address vector inside the datagram segment (48 bytes). [ref §1.5](crate::reference).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AddressVector {
    /// UD: qkey in bytes 0–3, bytes 4–7 reserved; DC: dc_key.
    pub key: [u8; 8],
    /// Remote QPN | EXTENDED_UD_AV.
    pub dqp_dct: Be32,
    /// rate<<4 | SL.
    pub stat_rate_sl: u8,
    /// force-loopback (bit 7) | source path bits.
    pub fl_mlid: u8,
    /// DLID (IB) or UDP source port (RoCEv2).
    pub rlid: Be16,
    /// Reserved.
    pub reserved0: [u8; 4],
    /// RoCE destination MAC.
    pub rmac: [u8; 6],
    /// GRH traffic class.
    pub tclass: u8,
    /// GRH hop limit.
    pub hop_limit: u8,
    /// GRH present (bit 30) | sgid index (27:20) | flow label (19:0).
    pub grh_gid_fl: Be32,
    /// Destination GID.
    pub rgid: [u8; 16],
}

/// Datagram segment = one address vector (48 bytes). [ref §1.5](crate::reference).
pub type DatagramSeg = AddressVector;

impl AddressVector {
    /// Builds a datagram segment the way `mlx5dv_set_dgram_seg` defines its
    /// inputs: `key` fills all 8 key bytes (UD: qkey << 32), `dqp_dct` is
    /// OR-ed with `ext << 31` ([`super::EXTENDED_UD_AV`]). [ref §1.5](crate::reference).
    #[allow(clippy::too_many_arguments)]
    pub const fn datagram(
        key: u64,
        dqp_dct: u32,
        ext: bool,
        stat_rate_sl: u8,
        fl_mlid: u8,
        rlid: u16,
        rmac: [u8; 6],
        tclass: u8,
        hop_limit: u8,
        grh_gid_fl: u32,
        rgid: [u8; 16],
    ) -> Self {
        AddressVector {
            key: key.to_be_bytes(),
            dqp_dct: Be32::new(dqp_dct | if ext { super::EXTENDED_UD_AV } else { 0 }),
            stat_rate_sl,
            fl_mlid,
            rlid: Be16::new(rlid),
            reserved0: [0; 4],
            rmac,
            tclass,
            hop_limit,
            grh_gid_fl: Be32::new(grh_gid_fl),
            rgid,
        }
    }
    /// UD qkey (bytes 0–3). [ref §1.5](crate::reference).
    pub const fn qkey(&self) -> u32 {
        u32::from_be_bytes([self.key[0], self.key[1], self.key[2], self.key[3]])
    }
    /// Remote QPN / DCT number (24 bits of `dqp_dct`).
    pub const fn dqpn(&self) -> u32 {
        self.dqp_dct.get() & 0x00ff_ffff
    }
    /// Whether the extended-AV bit (31) of `dqp_dct` is set.
    pub const fn extended(&self) -> bool {
        self.dqp_dct.get() & super::EXTENDED_UD_AV != 0
    }
    /// Whether a GRH is present (bit 30 of `grh_gid_fl`).
    pub const fn grh(&self) -> bool {
        self.grh_gid_fl.get() & (1 << 30) != 0
    }
    /// Source GID index (bits 27:20 of `grh_gid_fl`).
    pub const fn sgid_index(&self) -> u8 {
        (self.grh_gid_fl.get() >> 20) as u8
    }
    /// Flow label (bits 19:0 of `grh_gid_fl`).
    pub const fn flow_label(&self) -> u32 {
        self.grh_gid_fl.get() & 0xf_ffff
    }
}

// SAFETY: (this and the five below) `#[repr(C)]` structs whose fields are `u8`, byte
// arrays and the `Be16`/`Be32`/`Be64` byte-array wrappers: alignment 1, so
// no padding (the sizes below equal the sums of the fields), every bit
// pattern valid, no interior mutability; `SIZE` is left at its default.
unsafe impl Segment for CtrlSeg {
    /// Two 8-byte stores of the segment's memory image (a field-by-field
    /// write would be six stores).
    #[inline(always)]
    unsafe fn write_to(self, dst: *mut u8) {
        let d = self.dci_stream_channel_id.0;
        let w0 = join(self.opmod_idx_opcode.0, self.qpn_ds.0);
        let w1 = join([self.signature, d[0], d[1], self.fm_ce_se], self.imm.0);
        // SAFETY: the caller guarantees 16 writable bytes at `dst` (SIZE);
        // unaligned stores assume no alignment.
        unsafe { store_words(dst, w0, w1) }
    }
}
// SAFETY: see above.
unsafe impl Segment for RaddrSeg {
    /// Two 8-byte stores of the segment's memory image.
    #[inline(always)]
    unsafe fn write_to(self, dst: *mut u8) {
        let w0 = u64::from_ne_bytes(self.raddr.0);
        let w1 = join(self.rkey.0, self.reserved.0);
        // SAFETY: as for `CtrlSeg`: 16 writable bytes at `dst`.
        unsafe { store_words(dst, w0, w1) }
    }
}
// SAFETY: see above.
unsafe impl Segment for DataSeg {
    /// Two 8-byte stores of the segment's memory image.
    #[inline(always)]
    unsafe fn write_to(self, dst: *mut u8) {
        let w0 = join(self.byte_count.0, self.lkey.0);
        let w1 = u64::from_ne_bytes(self.addr.0);
        // SAFETY: as for `CtrlSeg`: 16 writable bytes at `dst`.
        unsafe { store_words(dst, w0, w1) }
    }
}

/// The native-endian 8-byte word whose memory image is `lo` then `hi`.
#[inline(always)]
const fn join(lo: [u8; 4], hi: [u8; 4]) -> u64 {
    let (lo, hi) = (u32::from_ne_bytes(lo) as u64, u32::from_ne_bytes(hi) as u64);
    if cfg!(target_endian = "little") {
        lo | (hi << 32)
    } else {
        (lo << 32) | hi
    }
}

/// Stores `w0` then `w1` (memory images) at `dst` with two unaligned
/// 8-byte raw stores.
///
/// # Safety
/// `dst` is valid for writes of 16 bytes; no reference points at them.
#[inline(always)]
unsafe fn store_words(dst: *mut u8, w0: u64, w1: u64) {
    // SAFETY: forwarded; both stores lie in the 16 bytes.
    unsafe {
        core::ptr::write_unaligned(dst.cast::<u64>(), w0);
        core::ptr::write_unaligned(dst.add(8).cast::<u64>(), w1);
    }
}
// SAFETY: see above.
unsafe impl Segment for InlineHdr {}
// SAFETY: see above.
unsafe impl Segment for AtomicSeg {}
// SAFETY: see above.
unsafe impl Segment for AddressVector {}
// SAFETY: `Be64` is `#[repr(transparent)]` over `[u8; 8]`: no padding,
// every bit pattern valid; `SIZE` is left at its default.
unsafe impl Segment for Be64 {}

assert_eq_size!(CtrlSeg, [u8; 16]);
assert_eq_size!(RaddrSeg, [u8; 16]);
assert_eq_size!(DataSeg, [u8; 16]);
assert_eq_size!(InlineHdr, [u8; 4]);
assert_eq_size!(AtomicSeg, [u8; 16]);
assert_eq_size!(AddressVector, [u8; 48]);
const_assert_eq!(core::mem::offset_of!(CtrlSeg, fm_ce_se), 11);
const_assert_eq!(core::mem::offset_of!(CtrlSeg, imm), 12);
const_assert_eq!(core::mem::offset_of!(AddressVector, dqp_dct), 8);
const_assert_eq!(core::mem::offset_of!(AddressVector, rlid), 14);
const_assert_eq!(core::mem::offset_of!(AddressVector, rmac), 20);
const_assert_eq!(core::mem::offset_of!(AddressVector, grh_gid_fl), 28);
const_assert_eq!(core::mem::offset_of!(AddressVector, rgid), 32);
const_assert_eq!(core::mem::offset_of!(CtrlSeg, qpn_ds), 4);
const_assert_eq!(core::mem::offset_of!(CtrlSeg, signature), 8);
const_assert_eq!(core::mem::offset_of!(CtrlSeg, dci_stream_channel_id), 9);
const_assert_eq!(core::mem::offset_of!(AtomicSeg, compare), 8);
const_assert_eq!(core::mem::offset_of!(AddressVector, stat_rate_sl), 12);
const_assert_eq!(core::mem::offset_of!(AddressVector, fl_mlid), 13);
const_assert_eq!(core::mem::offset_of!(AddressVector, tclass), 26);
const_assert_eq!(core::mem::offset_of!(AddressVector, hop_limit), 27);
