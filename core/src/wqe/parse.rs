//! Send WQE parser: a copy-out view of one WQE from a byte slice or from a
//! ring (following the wrap at the ring end). [ref §1.2–§1.8](crate::reference).
//!
//! Nothing here panics on bad bytes: every problem is a [`WqeParseError`].

use super::eth_seg::{eth_seg_len, EthPad, EthSeg};
use super::flags::UmrFlags;
use super::layout::SendLayout;
use super::masked_atomic_seg::MaskedAtomicSeg;
use super::opcode::Opcode;
use super::seg::{AddressVector, AtomicSeg, CtrlSeg, DataSeg, RaddrSeg, Segment};
use super::umr_seg::{KlmSeg, MkeyContextSeg, UmrCtrlSeg};
use super::xrc_seg::XrcSeg;
use super::{DS_BYTES, INLINE_SEG, MAX_DS, SEND_WQE_BB};
use core::fmt;

/// Why WQE bytes could not be parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum WqeParseError {
    /// Fewer bytes than the structure needs (e.g. DS·16 > bytes given).
    Truncated {
        /// Bytes needed.
        need: usize,
        /// Bytes available.
        have: usize,
    },
    /// DS is 0: a WQE always holds at least its control segment. [ref §1.2](crate::reference).
    DsZero,
    /// DS byte (byte 7) above 63: the field is 6 bits wide. [ref §1.1](crate::reference).
    DsTooLarge {
        /// The whole byte 7 as found.
        ds: u8,
    },
    /// A segment the opcode / QP type requires runs past DS·16. [ref §1.7](crate::reference).
    SegmentPastDs {
        /// Segment name.
        segment: &'static str,
        /// Byte offset where the segment would end.
        end: usize,
        /// DS·16.
        ds_bytes: usize,
    },
    /// An inline segment's length runs past DS·16. [ref §1.5](crate::reference).
    InlinePastDs {
        /// Byte offset of the inline header inside the WQE.
        offset: usize,
        /// Inline payload length.
        len: u32,
        /// Bytes available after the 4-byte header.
        room: usize,
    },
    /// A ring whose length is zero or not a multiple of 64 (or of the
    /// receive stride).
    BadRing {
        /// The ring length in bytes.
        len: usize,
    },
    /// A field holds a value the format does not allow.
    BadField {
        /// Field name.
        field: &'static str,
        /// Value found.
        value: u32,
    },
    /// DS·16 exceeds the whole ring.
    LargerThanRing {
        /// DS·16.
        wqe_bytes: usize,
        /// Ring bytes.
        ring_bytes: usize,
    },
}

impl fmt::Display for WqeParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            WqeParseError::Truncated { need, have } => {
                write!(f, "truncated WQE: need {need} bytes, have {have}")
            }
            WqeParseError::DsZero => f.write_str("DS is 0"),
            WqeParseError::DsTooLarge { ds } => write!(f, "DS byte {ds} > 63"),
            WqeParseError::SegmentPastDs {
                segment,
                end,
                ds_bytes,
            } => {
                write!(
                    f,
                    "{segment} segment ends at byte {end}, past DS*16 = {ds_bytes}"
                )
            }
            WqeParseError::InlinePastDs { offset, len, room } => write!(
                f,
                "inline segment at +{offset:#x} claims {len} bytes, only {room} before DS end"
            ),
            WqeParseError::BadRing { len } => write!(f, "bad ring length {len}"),
            WqeParseError::BadField { field, value } => {
                write!(f, "bad value {value:#x} in field `{field}`")
            }
            WqeParseError::LargerThanRing {
                wqe_bytes,
                ring_bytes,
            } => {
                write!(
                    f,
                    "WQE of {wqe_bytes} bytes larger than the {ring_bytes}-byte ring"
                )
            }
        }
    }
}

impl core::error::Error for WqeParseError {}

impl From<crate::error::ParseError> for WqeParseError {
    fn from(e: crate::error::ParseError) -> Self {
        match e {
            crate::error::ParseError::Truncated { need, have } => {
                WqeParseError::Truncated { need, have }
            }
            crate::error::ParseError::BadField { field, value } => {
                WqeParseError::BadField { field, value }
            }
        }
    }
}

/// A byte range that may be split in two at the ring end: `first` is read
/// before `second`. [ref §1.8](crate::reference).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WqeBytes<'a> {
    first: &'a [u8],
    second: &'a [u8],
}

impl<'a> WqeBytes<'a> {
    /// Two pieces read in order.
    pub const fn new(first: &'a [u8], second: &'a [u8]) -> Self {
        WqeBytes { first, second }
    }
    /// One contiguous piece.
    pub const fn linear(b: &'a [u8]) -> Self {
        WqeBytes {
            first: b,
            second: &[],
        }
    }
    /// The empty range.
    pub const fn empty() -> Self {
        WqeBytes {
            first: &[],
            second: &[],
        }
    }
    /// The two pieces.
    pub const fn parts(&self) -> (&'a [u8], &'a [u8]) {
        (self.first, self.second)
    }
    /// Total length.
    pub const fn len(&self) -> usize {
        self.first.len() + self.second.len()
    }
    /// Whether the range is empty.
    pub const fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Whether the range is split (continues at the ring start).
    pub const fn is_wrapped(&self) -> bool {
        !self.first.is_empty() && !self.second.is_empty()
    }
    /// Byte `i`, if in range.
    pub fn get(&self, i: usize) -> Option<u8> {
        match self.first.get(i) {
            Some(b) => Some(*b),
            None => self.second.get(i.checked_sub(self.first.len())?).copied(),
        }
    }
    /// The sub-range `[off, off + len)`, if in range.
    pub fn sub(&self, off: usize, len: usize) -> Option<WqeBytes<'a>> {
        let end = off.checked_add(len)?;
        if end > self.len() {
            return None;
        }
        let f = self.first.len();
        let first = if off < f {
            &self.first[off..end.min(f)]
        } else {
            &[][..]
        };
        let s_start = off.saturating_sub(f);
        let s_end = end.saturating_sub(f);
        let second = if end > f {
            &self.second[s_start..s_end]
        } else {
            &[][..]
        };
        if first.is_empty() {
            Some(WqeBytes::linear(second))
        } else {
            Some(WqeBytes::new(first, second))
        }
    }
    /// The bytes from `off` to the end (empty if `off` is past the end).
    #[must_use]
    pub fn tail(&self, off: usize) -> WqeBytes<'a> {
        let len = self.len();
        self.sub(off.min(len), len - off.min(len))
            .unwrap_or_default()
    }
    /// Copies `N` bytes starting at `off`, if in range.
    pub fn read<const N: usize>(&self, off: usize) -> Option<[u8; N]> {
        let r = self.sub(off, N)?;
        let mut out = [0u8; N];
        r.copy_to(&mut out);
        Some(out)
    }
    /// Parses a segment at `off`, if in range.
    pub fn seg<T: Segment>(&self, off: usize) -> Option<T> {
        let r = self.sub(off, T::SIZE)?;
        if r.second.is_empty() {
            T::parse(r.first).ok()
        } else {
            let mut tmp = [0u8; 64];
            let n = r.copy_to(&mut tmp);
            T::parse(tmp.get(..n)?).ok()
        }
    }
    /// Copies as many bytes as fit into `out`; returns the count.
    pub fn copy_to(&self, out: &mut [u8]) -> usize {
        let a = self.first.len().min(out.len());
        out[..a].copy_from_slice(&self.first[..a]);
        let b = self.second.len().min(out.len() - a);
        out[a..a + b].copy_from_slice(&self.second[..b]);
        a + b
    }
    /// Iterates the bytes in order.
    pub fn iter(&self) -> impl Iterator<Item = u8> + 'a {
        self.first.iter().chain(self.second.iter()).copied()
    }
    /// Whether the bytes equal `other`.
    pub fn eq_slice(&self, other: &[u8]) -> bool {
        self.len() == other.len() && self.iter().zip(other.iter()).all(|(a, b)| a == *b)
    }
}

/// Inline data inside a WQE (header + payload, payload possibly wrapped).
/// [ref §1.5, §1.8](crate::reference).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InlineData<'a> {
    /// Offset of the 4-byte header inside the WQE.
    pub offset: usize,
    /// Payload length (`byte_count & 0x7fff_ffff`).
    pub len: u32,
    /// Payload bytes (length `len`).
    pub payload: WqeBytes<'a>,
}

impl InlineData<'_> {
    /// Bytes the inline segment occupies: align(len + 4, 16). [ref §1.5](crate::reference).
    pub const fn occupied(&self) -> usize {
        (self.len as usize + 4).div_ceil(DS_BYTES) * DS_BYTES
    }
}

/// One entry of a WQE's data part. [ref §1.5, §1.7](crate::reference).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(clippy::exhaustive_enums)] // closed by the WQE format: a data entry is a pointer or inline
pub enum DataEntry<'a> {
    /// A pointer (scatter/gather) segment.
    Ptr(DataSeg),
    /// An inline data segment.
    Inline(InlineData<'a>),
}

/// Iterator over the entries of a data part (see [`SendWqe::data_entries`]).
#[derive(Clone, Debug)]
pub struct DataEntries<'a> {
    bytes: WqeBytes<'a>,
    base: usize,
    off: usize,
}

impl<'a> DataEntries<'a> {
    fn next_entry(&mut self) -> Option<Result<DataEntry<'a>, WqeParseError>> {
        if self.off >= self.bytes.len() {
            return None;
        }
        let hdr: [u8; 4] = match self.bytes.read(self.off) {
            Some(h) => h,
            None => {
                let e = WqeParseError::Truncated {
                    need: 4,
                    have: self.bytes.len() - self.off,
                };
                self.off = self.bytes.len();
                return Some(Err(e));
            }
        };
        let bc = u32::from_be_bytes(hdr);
        if bc & INLINE_SEG != 0 {
            let len = bc & !INLINE_SEG;
            let room = self.bytes.len() - self.off - 4;
            let at = self.base + self.off;
            if len as usize > room {
                self.off = self.bytes.len();
                return Some(Err(WqeParseError::InlinePastDs {
                    offset: at,
                    len,
                    room,
                }));
            }
            let payload = self
                .bytes
                .sub(self.off + 4, len as usize)
                .unwrap_or_default();
            let d = InlineData {
                offset: at,
                len,
                payload,
            };
            self.off = (self.off + d.occupied()).min(self.bytes.len());
            Some(Ok(DataEntry::Inline(d)))
        } else {
            match self.bytes.seg::<DataSeg>(self.off) {
                Some(s) => {
                    self.off += DataSeg::SIZE;
                    Some(Ok(DataEntry::Ptr(s)))
                }
                None => {
                    let e = WqeParseError::Truncated {
                        need: DataSeg::SIZE,
                        have: self.bytes.len() - self.off,
                    };
                    self.off = self.bytes.len();
                    Some(Err(e))
                }
            }
        }
    }
}

impl<'a> Iterator for DataEntries<'a> {
    type Item = DataEntry<'a>;
    fn next(&mut self) -> Option<DataEntry<'a>> {
        self.next_entry().and_then(Result::ok)
    }
}

/// A parsed send WQE: the control segment and the typed segments that the
/// opcode and QP type call for ([ref §1.7](crate::reference)), copied out of the bytes; the
/// variable parts (inline header of the Ethernet segment, KLM list, data
/// part) stay as views into the input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendWqe<'a> {
    /// The control segment.
    pub ctrl: CtrlSeg,
    /// The QP type the WQE was parsed for.
    pub layout: SendLayout,
    /// XRC segment (XRC QPs, except UMR WQEs).
    pub xrc: Option<XrcSeg>,
    /// Datagram segment / address vector (UD, underlay UD).
    pub av: Option<AddressVector>,
    /// Ethernet pad (underlay UD).
    pub eth_pad: Option<EthPad>,
    /// Ethernet segment (raw packet, underlay UD).
    pub eth: Option<EthSeg>,
    /// The Ethernet segment's inline packet header (`inline_hdr_sz` bytes
    /// from byte 14 of the segment; may be wrapped).
    pub eth_inline_hdr: WqeBytes<'a>,
    /// Remote address segment (RDMA and atomics on RC/UC/XRC).
    pub raddr: Option<RaddrSeg>,
    /// Atomic segment (ATOMIC_CS / ATOMIC_FA).
    pub atomic: Option<AtomicSeg>,
    /// Masked atomic segment (ATOMIC_MASKED_CS / _FA).
    pub masked_atomic: Option<MaskedAtomicSeg>,
    /// UMR control segment (UMR WQEs: BIND_MW, LOCAL_INV).
    pub umr: Option<UmrCtrlSeg>,
    /// Mkey context segment (UMR WQEs).
    pub mkey: Option<MkeyContextSeg>,
    /// Inline KLM translation entries of a UMR WQE (16 bytes each).
    pub klm: WqeBytes<'a>,
    /// Data part (pointer segments and/or inline data), for opcodes that
    /// carry data.
    pub data: WqeBytes<'a>,
    /// Trailing bytes of opcodes whose remaining layout is not decoded.
    pub opaque: WqeBytes<'a>,
    /// All DS·16 bytes of the WQE.
    pub bytes: WqeBytes<'a>,
    data_off: usize,
}

/// The control segment and the DS-bounded WQE range it declares.
fn ctrl_and_ds(bytes: WqeBytes<'_>) -> Result<(CtrlSeg, WqeBytes<'_>), WqeParseError> {
    let ctrl: CtrlSeg = bytes.seg(0).ok_or(WqeParseError::Truncated {
        need: CtrlSeg::SIZE,
        have: bytes.len(),
    })?;
    let ds_byte = bytes.get(7).unwrap_or(0);
    if ds_byte == 0 {
        return Err(WqeParseError::DsZero);
    }
    if ds_byte as u32 > MAX_DS {
        return Err(WqeParseError::DsTooLarge { ds: ds_byte });
    }
    let ds_bytes = ds_byte as usize * DS_BYTES;
    let bytes = bytes.sub(0, ds_bytes).ok_or(WqeParseError::Truncated {
        need: ds_bytes,
        have: bytes.len(),
    })?;
    Ok((ctrl, bytes))
}

/// Reads segment `T` at `*off` within the DS-bounded range and advances
/// `*off` past it.
fn take<T: Segment>(
    b: &WqeBytes<'_>,
    off: &mut usize,
    name: &'static str,
) -> Result<T, WqeParseError> {
    let end = *off + T::SIZE;
    let s = b.seg::<T>(*off).ok_or(WqeParseError::SegmentPastDs {
        segment: name,
        end,
        ds_bytes: b.len(),
    })?;
    *off = end;
    Ok(s)
}

impl<'a> SendWqe<'a> {
    /// Parses a WQE from a contiguous slice (at least DS·16 bytes; extra
    /// bytes are ignored).
    pub fn parse(bytes: &'a [u8], layout: impl Into<SendLayout>) -> Result<Self, WqeParseError> {
        Self::parse_split(WqeBytes::linear(bytes), layout)
    }

    /// Parses the WQE whose first WQEBB is `start` (reduced modulo the
    /// ring's WQEBB count, as the producer counter is masked) in `ring`,
    /// following the wrap at the ring end. `ring.len()` must be a non-zero
    /// multiple of 64. [ref §1.1, §1.8](crate::reference).
    pub fn parse_ring(
        ring: &'a [u8],
        start: u32,
        layout: impl Into<SendLayout>,
    ) -> Result<Self, WqeParseError> {
        let bytes = ring_wqe_bytes(ring, start)?;
        Self::parse_split(bytes, layout)
    }

    /// Parses a WQE from a possibly split byte range.
    pub fn parse_split(
        bytes: WqeBytes<'a>,
        layout: impl Into<SendLayout>,
    ) -> Result<Self, WqeParseError> {
        let layout = layout.into();
        let (ctrl, bytes) = ctrl_and_ds(bytes)?;
        let ds_bytes = bytes.len();
        let op = Opcode::from_u8(ctrl.opcode());
        let mut w = SendWqe {
            ctrl,
            layout,
            xrc: None,
            av: None,
            eth_pad: None,
            eth: None,
            eth_inline_hdr: WqeBytes::empty(),
            raddr: None,
            atomic: None,
            masked_atomic: None,
            umr: None,
            mkey: None,
            klm: WqeBytes::empty(),
            data: WqeBytes::empty(),
            opaque: WqeBytes::empty(),
            bytes,
            data_off: ds_bytes,
        };
        let mut off = CtrlSeg::SIZE;
        w.take_transport(op, &mut off)?;
        if layout.eth() {
            w.take_eth(&mut off)?;
        }
        // Opcode part (connected transports only). ref §1.7.
        if layout.connected() {
            if let Some(op) = op {
                w.take_opcode_segments(op, &mut off)?;
            }
        }
        let rest = bytes.tail(off);
        if op.is_some_and(Opcode::has_data) {
            w.data = rest;
            w.data_off = off;
            // Validate the whole data part now so iteration cannot fail.
            let mut it = w.data_entries_checked();
            while let Some(r) = it.next_entry() {
                r?;
            }
        } else {
            w.opaque = rest;
        }
        Ok(w)
    }

    /// The transport part after the control segment: XRC (except UMR),
    /// datagram, Ethernet padding. ref §1.7.
    fn take_transport(&mut self, op: Option<Opcode>, off: &mut usize) -> Result<(), WqeParseError> {
        let bytes = self.bytes;
        let layout = self.layout;
        if layout.xrc() && op != Some(Opcode::Umr) {
            self.xrc = Some(take(&bytes, off, "xrc")?);
        }
        if layout.datagram() {
            self.av = Some(take(&bytes, off, "datagram")?);
        }
        if layout.eth_pad() {
            self.eth_pad = Some(take(&bytes, off, "eth_pad")?);
        }
        Ok(())
    }

    /// The Ethernet segment: 16 bytes fixed, then the inline header.
    fn take_eth(&mut self, off: &mut usize) -> Result<(), WqeParseError> {
        let bytes = self.bytes;
        let ds_bytes = bytes.len();
        let first16: [u8; 16] = bytes.read(*off).ok_or(WqeParseError::SegmentPastDs {
            segment: "eth",
            end: *off + 16,
            ds_bytes,
        })?;
        let hdr_sz = u16::from_be_bytes([first16[12], first16[13]]) as usize;
        let len = eth_seg_len(hdr_sz);
        if *off + len > ds_bytes {
            return Err(WqeParseError::SegmentPastDs {
                segment: "eth",
                end: *off + len,
                ds_bytes,
            });
        }
        let mut raw = [0u8; 32];
        bytes.tail(*off).copy_to(&mut raw[..len.min(32)]);
        self.eth = EthSeg::parse(&raw).ok();
        self.eth_inline_hdr = bytes.sub(*off + 14, hdr_sz).unwrap_or_default();
        *off += len;
        Ok(())
    }

    /// The segments a connected transport's opcode adds: remote address,
    /// atomic, masked atomic, or UMR control + mkey context + inline KLMs.
    fn take_opcode_segments(&mut self, op: Opcode, off: &mut usize) -> Result<(), WqeParseError> {
        let bytes = self.bytes;
        let ds_bytes = bytes.len();
        if op.has_raddr() {
            self.raddr = Some(take(&bytes, off, "raddr")?);
        }
        match op {
            Opcode::AtomicCs | Opcode::AtomicFa => {
                self.atomic = Some(take(&bytes, off, "atomic")?);
            }
            Opcode::AtomicMaskedCs | Opcode::AtomicMaskedFa => {
                self.masked_atomic = Some(take(&bytes, off, "masked_atomic")?);
            }
            Opcode::Umr => {
                let umr: UmrCtrlSeg = take(&bytes, off, "umr_ctrl")?;
                self.umr = Some(umr);
                if *off < ds_bytes {
                    self.mkey = Some(take(&bytes, off, "mkey_context")?);
                }
                if umr.umr_flags().contains(UmrFlags::INLINE) {
                    let n = umr.klm_octowords.get() as usize * DS_BYTES;
                    self.klm = bytes.sub(*off, n).ok_or(WqeParseError::SegmentPastDs {
                        segment: "klm",
                        end: *off + n,
                        ds_bytes,
                    })?;
                    *off += n;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// The decoded opcode, or the unknown byte. [ref §1.6](crate::reference).
    pub fn opcode(&self) -> Result<Opcode, u8> {
        Opcode::try_from(self.ctrl.opcode())
    }

    /// DS·16: the WQE's length in bytes.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Always false: a parsed WQE holds at least its control segment.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// WQEBBs the WQE occupies. [ref §1.8](crate::reference).
    pub fn wqebbs(&self) -> u32 {
        self.ctrl.wqebbs()
    }

    /// Offset of the data part inside the WQE.
    pub fn data_offset(&self) -> usize {
        self.data_off
    }

    fn data_entries_checked(&self) -> DataEntries<'a> {
        DataEntries {
            bytes: self.data,
            base: self.data_off,
            off: 0,
        }
    }

    /// The data part's entries in order (validated by the parser).
    pub fn data_entries(&self) -> DataEntries<'a> {
        self.data_entries_checked()
    }

    /// The pointer segments of the data part.
    pub fn data_segs(&self) -> impl Iterator<Item = DataSeg> + 'a {
        self.data_entries().filter_map(|e| match e {
            DataEntry::Ptr(d) => Some(d),
            DataEntry::Inline(_) => None,
        })
    }

    /// The first inline segment of the data part, if any.
    pub fn inline(&self) -> Option<InlineData<'a>> {
        self.data_entries().find_map(|e| match e {
            DataEntry::Inline(d) => Some(d),
            DataEntry::Ptr(_) => None,
        })
    }

    /// The inline KLM entries of a UMR WQE.
    pub fn klms(&self) -> impl Iterator<Item = KlmSeg> + 'a {
        let k = self.klm;
        (0..k.len() / KlmSeg::SIZE).filter_map(move |i| k.seg::<KlmSeg>(i * KlmSeg::SIZE))
    }
}

/// The DS·16 bytes of the WQE starting at WQEBB `start` of `ring` (reduced
/// modulo the WQEBB count), split at the ring end. [ref §1.8](crate::reference).
pub fn ring_wqe_bytes(ring: &[u8], start: u32) -> Result<WqeBytes<'_>, WqeParseError> {
    if ring.is_empty() || !ring.len().is_multiple_of(SEND_WQE_BB) {
        return Err(WqeParseError::BadRing { len: ring.len() });
    }
    let nbb = ring.len() / SEND_WQE_BB;
    let off = (start as usize % nbb) * SEND_WQE_BB;
    let first = &ring[off..];
    let ds_byte = first.get(7).copied().unwrap_or(0);
    if ds_byte == 0 {
        return Err(WqeParseError::DsZero);
    }
    if ds_byte as u32 > MAX_DS {
        return Err(WqeParseError::DsTooLarge { ds: ds_byte });
    }
    let len = ds_byte as usize * DS_BYTES;
    if len > ring.len() {
        return Err(WqeParseError::LargerThanRing {
            wqe_bytes: len,
            ring_bytes: ring.len(),
        });
    }
    if len <= first.len() {
        Ok(WqeBytes::linear(&first[..len]))
    } else {
        Ok(WqeBytes::new(first, &ring[..len - first.len()]))
    }
}
