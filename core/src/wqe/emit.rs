//! Emitting whole simple send WQEs from a value description (used for
//! round-trip tests, the simulator and fuzzing). [ref §1.2–§1.8](crate::reference).
//!
//! The segment order is the one of [ref §1.7](crate::reference): ctrl → transport part (XRC,
//! datagram, Ethernet pad, Ethernet) → opcode part (raddr, atomic) → data
//! (pointer segments or one inline segment). DS is computed and stored in
//! the control segment.

use super::eth_seg::{eth_seg_len, EthPad};
use super::seg::{AddressVector, AtomicSeg, CtrlSeg, DataSeg, InlineHdr, RaddrSeg, Segment};
use super::xrc_seg::XrcSeg;
use super::{DS_BYTES, INLINE_SEG, MAX_DS, SEND_WQE_BB};
use core::fmt;

/// Largest WQE in bytes (63 DS).
pub const MAX_WQE_BYTES: usize = MAX_DS as usize * DS_BYTES;

/// Why a WQE could not be emitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum EmitError {
    /// The WQE would need more than 63 DS.
    TooLarge {
        /// Bytes the WQE would need.
        bytes: usize,
    },
    /// The output buffer (or ring) is too small.
    BufferTooSmall {
        /// Bytes needed.
        need: usize,
        /// Bytes available.
        have: usize,
    },
    /// The ring length is zero or not a multiple of 64.
    BadRing {
        /// The ring length.
        len: usize,
    },
    /// An inline payload or Ethernet header longer than its length field
    /// allows.
    TooLong,
}

impl fmt::Display for EmitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            EmitError::TooLarge { bytes } => write!(f, "WQE of {bytes} bytes exceeds 63 DS"),
            EmitError::BufferTooSmall { need, have } => {
                write!(f, "buffer too small: need {need}, have {have}")
            }
            EmitError::BadRing { len } => write!(f, "bad ring length {len}"),
            EmitError::TooLong => f.write_str("inline payload or header too long"),
        }
    }
}

impl core::error::Error for EmitError {}

/// Ethernet segment description: checksum flags, MSS and the inline packet
/// header. [ref §1.5](crate::reference).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EthRepr<'p> {
    /// `cs_flags` byte.
    pub cs_flags: u8,
    /// TSO MSS (0 for non-TSO).
    pub mss: u16,
    /// Inline packet header bytes.
    pub hdr: &'p [u8],
}

/// A fixed-capacity list of pointer segments (`heapless::Vec`).
pub type DataSegVec<const N: usize> = heapless::Vec<DataSeg, N>;

/// The data part of a WQE description.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[allow(clippy::exhaustive_enums)] // closed by the WQE format: no data, pointer segments or inline
pub enum DataRepr<'p, const N: usize> {
    /// No data part.
    #[default]
    None,
    /// Pointer segments.
    Segs(DataSegVec<N>),
    /// One inline segment with this payload (no segment if empty, as
    /// rdma-core does; [ref §1.5](crate::reference)).
    Inline(&'p [u8]),
}

/// A whole simple send WQE as values. `ctrl`'s DS bits are ignored and
/// recomputed by [`SendWqeRepr::emit`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SendWqeRepr<'p, const N: usize> {
    /// Control segment.
    pub ctrl: CtrlSeg,
    /// XRC segment.
    pub xrc: Option<XrcSeg>,
    /// Datagram segment.
    pub av: Option<AddressVector>,
    /// Ethernet pad (underlay UD).
    pub eth_pad: Option<EthPad>,
    /// Ethernet segment.
    pub eth: Option<EthRepr<'p>>,
    /// Remote address segment.
    pub raddr: Option<RaddrSeg>,
    /// Atomic segment.
    pub atomic: Option<AtomicSeg>,
    /// Data part.
    pub data: DataRepr<'p, N>,
}

impl<const N: usize> SendWqeRepr<'_, N> {
    /// Bytes the WQE occupies (DS·16).
    pub fn len(&self) -> usize {
        let mut n = CtrlSeg::SIZE;
        n += self.xrc.map_or(0, |_| XrcSeg::SIZE);
        n += self.av.map_or(0, |_| AddressVector::SIZE);
        n += self.eth_pad.map_or(0, |_| EthPad::SIZE);
        n += self.eth.map_or(0, |e| eth_seg_len(e.hdr.len()));
        n += self.raddr.map_or(0, |_| RaddrSeg::SIZE);
        n += self.atomic.map_or(0, |_| AtomicSeg::SIZE);
        n += match &self.data {
            DataRepr::None => 0,
            DataRepr::Segs(v) => v.len() * DataSeg::SIZE,
            DataRepr::Inline([]) => 0,
            DataRepr::Inline(p) => (p.len() + 4).div_ceil(DS_BYTES) * DS_BYTES,
        };
        n
    }

    /// Always false (a WQE holds at least its control segment).
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Writes the WQE to the start of `out` (padding bytes inside the last
    /// segment are zeroed) and returns DS·16.
    pub fn emit(&self, out: &mut [u8]) -> Result<usize, EmitError> {
        let len = self.len();
        if len > MAX_WQE_BYTES {
            return Err(EmitError::TooLarge { bytes: len });
        }
        if out.len() < len {
            return Err(EmitError::BufferTooSmall {
                need: len,
                have: out.len(),
            });
        }
        let out = &mut out[..len];
        out.fill(0);
        let ds = (len / DS_BYTES) as u32;
        let mut ctrl = self.ctrl;
        ctrl.qpn_ds = super::Be32::new((ctrl.qpn_ds.get() & !0xff) | ds);
        let mut off = 0;
        put(out, &mut off, ctrl);
        if let Some(x) = self.xrc {
            put(out, &mut off, x);
        }
        if let Some(a) = self.av {
            put(out, &mut off, a);
        }
        if let Some(p) = self.eth_pad {
            put(out, &mut off, p);
        }
        if let Some(e) = self.eth {
            let n = super::eth_seg::EthSeg::set(&mut out[off..], e.cs_flags, e.mss, e.hdr)
                .ok_or(EmitError::TooLong)?;
            off += n;
        }
        if let Some(r) = self.raddr {
            put(out, &mut off, r);
        }
        if let Some(a) = self.atomic {
            put(out, &mut off, a);
        }
        match &self.data {
            DataRepr::None => {}
            DataRepr::Segs(v) => {
                for d in v {
                    put(out, &mut off, *d);
                }
            }
            DataRepr::Inline([]) => {}
            DataRepr::Inline(p) => {
                if p.len() as u64 >= INLINE_SEG as u64 {
                    return Err(EmitError::TooLong);
                }
                put(out, &mut off, InlineHdr::new(p.len() as u32));
                out[off..off + p.len()].copy_from_slice(p);
            }
        }
        Ok(len)
    }

    /// Writes the WQE into `ring` at WQEBB `start` (reduced modulo the
    /// WQEBB count), continuing at the ring start when it runs past the end
    /// ([ref §1.8](crate::reference)). Returns DS·16.
    pub fn emit_ring(&self, ring: &mut [u8], start: u32) -> Result<usize, EmitError> {
        if ring.is_empty() || !ring.len().is_multiple_of(SEND_WQE_BB) {
            return Err(EmitError::BadRing { len: ring.len() });
        }
        let mut tmp = [0u8; MAX_WQE_BYTES];
        let len = self.emit(&mut tmp)?;
        if len > ring.len() {
            return Err(EmitError::BufferTooSmall {
                need: len,
                have: ring.len(),
            });
        }
        let off = (start as usize % (ring.len() / SEND_WQE_BB)) * SEND_WQE_BB;
        let (a, b) = crate::ring::split_at_end(off, len, ring.len());
        ring[off..off + a].copy_from_slice(&tmp[..a]);
        ring[..b].copy_from_slice(&tmp[a..len]);
        Ok(len)
    }
}

fn put<T: Segment>(out: &mut [u8], off: &mut usize, seg: T) {
    let dst = &mut out[*off..*off + T::SIZE];
    // SAFETY: `dst` is an exclusive borrow of exactly `T::SIZE` bytes of an
    // ordinary (non-device) buffer; `write_to` does an unaligned write.
    unsafe { seg.write_to(dst.as_mut_ptr()) };
    *off += T::SIZE;
}
