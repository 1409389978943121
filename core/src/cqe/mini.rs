//! Compressed CQEs: the 8-byte mini CQE and the expansion of a compressed
//! session (title CQE + mini-CQE arrays) into full CQEs. [ref §5.9](crate::reference).
//!
//! Session layout (as the kernel's mlx5e consumer reads it): the title is a
//! normal cqe64 with format 3 at ring position `p`; its `byte_cnt` is the
//! number `n` of compressed completions, which occupy the `n` consecutive
//! ring positions `p .. p + n`. The mini CQEs come in arrays of eight, one
//! array per CQE slot: the array for completions `0..8` is in slot `p + 1`
//! (slot `p` holds the title), the array for completions `8k .. 8k + 8`
//! (k ≥ 1) is in slot `p + 8k`, the first position of its group. Expanded
//! completion `i` takes ring position `p + i`: it is the title with
//! `byte_cnt` (and hash or checksum) from the mini CQE, `op_own = (title
//! op_own & 0xF0) | owner bit of position p + i` (format and SE cleared),
//! and `wqe_counter = title.wqe_counter + i` (mod 2^16; the receive queue
//! masks it to its size) — or, in [`MiniCqeFormat::SendInfo`], the mini
//! CQE's own WQE counter and send opcode.

use super::{owner_bit_for, Cqe64, CqeFormat};
use crate::error::ParseError;

/// Mini CQEs per 64-byte array (one CQE slot). [ref §5.9](crate::reference).
pub const MINI_CQES_PER_SLOT: usize = 8;

/// What the first four bytes of each mini CQE hold (selected at CQ
/// creation by `cqc.mini_cqe_res_format`). [ref §5.9](crate::reference).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum MiniCqeFormat {
    /// RSS hash result (BE32) → `rss_hash_result`.
    #[default]
    Hash,
    /// Checksum (BE16) + stride index (BE16) → `check_sum`.
    Csum,
    /// WQE counter (BE16) + send WQE opcode (u8) → `wqe_counter` and
    /// `sop_drop_qpn` bits 31:24 (send-side compression).
    SendInfo,
}

/// One 8-byte mini CQE (`mlx5_mini_cqe8`). [ref §5.9](crate::reference).
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct MiniCqe([u8; 8]);

impl MiniCqe {
    /// Wraps 8 bytes.
    #[inline(always)]
    pub const fn from_bytes(b: [u8; 8]) -> Self {
        MiniCqe(b)
    }
    /// Copies the first 8 bytes of `b`.
    pub fn parse(b: &[u8]) -> Result<Self, ParseError> {
        match b.get(..8) {
            Some(s) => {
                let mut a = [0u8; 8];
                a.copy_from_slice(s);
                Ok(MiniCqe(a))
            }
            None => Err(ParseError::Truncated {
                need: 8,
                have: b.len(),
            }),
        }
    }
    /// Mini CQE `index` (0–7) of a 64-byte array; `None` past the end.
    pub fn from_array(arr: &[u8; 64], index: usize) -> Option<Self> {
        let s = arr.get(index.checked_mul(8)?..index.checked_mul(8)?.checked_add(8)?)?;
        MiniCqe::parse(s).ok()
    }
    /// The raw bytes.
    pub const fn as_bytes(&self) -> &[u8; 8] {
        &self.0
    }
    /// Bytes 0–3 as the RSS hash result.
    pub const fn rx_hash_result(&self) -> u32 {
        u32::from_be_bytes([self.0[0], self.0[1], self.0[2], self.0[3]])
    }
    /// Bytes 0–1 as the checksum.
    pub const fn checksum(&self) -> u16 {
        u16::from_be_bytes([self.0[0], self.0[1]])
    }
    /// Bytes 2–3 as the stride index.
    pub const fn stride_idx(&self) -> u16 {
        u16::from_be_bytes([self.0[2], self.0[3]])
    }
    /// Bytes 0–1 as the WQE counter (send-info format).
    pub const fn wqe_counter(&self) -> u16 {
        u16::from_be_bytes([self.0[0], self.0[1]])
    }
    /// Byte 2 as the send WQE opcode (send-info format).
    pub const fn s_wqe_opcode(&self) -> u8 {
        self.0[2]
    }
    /// Bytes 4–7: byte count.
    pub const fn byte_cnt(&self) -> u32 {
        u32::from_be_bytes([self.0[4], self.0[5], self.0[6], self.0[7]])
    }
    /// Sets bytes 0–3.
    pub fn set_word0(&mut self, v: u32) -> &mut Self {
        self.0[..4].copy_from_slice(&v.to_be_bytes());
        self
    }
    /// Sets bytes 4–7.
    pub fn set_byte_cnt(&mut self, v: u32) -> &mut Self {
        self.0[4..].copy_from_slice(&v.to_be_bytes());
        self
    }
}

/// Expands one compressed session (see the module docs for the layout).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MiniCqeExpander {
    title: Cqe64,
    title_pos: u32,
    ncqe: u32,
    count: u32,
    format: MiniCqeFormat,
}

impl MiniCqeExpander {
    /// A session whose title (format 3) sits at consumer position
    /// `title_pos` of a CQ with `ncqe` entries (a power of two). Rejects a
    /// title that is not format 3, a count of 0, a count larger than the
    /// ring, and a non-power-of-two `ncqe`.
    pub fn new(
        title: Cqe64,
        title_pos: u32,
        ncqe: u32,
        format: MiniCqeFormat,
    ) -> Result<Self, ParseError> {
        if title.format_kind() != CqeFormat::Compressed {
            return Err(ParseError::BadField {
                field: "cqe format",
                value: title.format() as u32,
            });
        }
        if !ncqe.is_power_of_two() || ncqe < 2 {
            return Err(ParseError::BadField {
                field: "ncqe",
                value: ncqe,
            });
        }
        let count = title.byte_cnt();
        if count == 0 || count > ncqe {
            return Err(ParseError::BadField {
                field: "mini cqe count",
                value: count,
            });
        }
        Ok(MiniCqeExpander {
            title,
            title_pos,
            ncqe,
            count,
            format,
        })
    }
    /// Number of completions in the session (title `byte_cnt`).
    #[inline(always)]
    pub const fn count(&self) -> u32 {
        self.count
    }
    /// The title CQE.
    #[inline(always)]
    pub const fn title(&self) -> &Cqe64 {
        &self.title
    }
    /// Consumer position of the title.
    #[inline(always)]
    pub const fn title_pos(&self) -> u32 {
        self.title_pos
    }
    /// Number of mini-CQE arrays (CQE slots) the session uses.
    #[inline(always)]
    pub const fn arrays(&self) -> u32 {
        self.count.div_ceil(MINI_CQES_PER_SLOT as u32)
    }
    /// Offset from the title position of the slot holding array `group`
    /// (1 for group 0, else `8 * group`).
    #[inline(always)]
    pub const fn array_offset(group: u32) -> u32 {
        if group == 0 {
            1
        } else {
            group.wrapping_mul(MINI_CQES_PER_SLOT as u32)
        }
    }
    /// Consumer position of the slot holding array `group`.
    #[inline(always)]
    pub const fn array_position(&self, group: u32) -> u32 {
        self.title_pos.wrapping_add(Self::array_offset(group))
    }
    /// Full CQE for completion `i` of the session built from its mini CQE
    /// (any `i`; positions wrap).
    pub fn expand(&self, i: u32, mini: &MiniCqe) -> Cqe64 {
        let mut c = self.title;
        let pos = self.title_pos.wrapping_add(i);
        c.set_byte_cnt(mini.byte_cnt());
        c.set_op_own((self.title.op_own() & 0xF0) | owner_bit_for(pos, self.ncqe));
        match self.format {
            MiniCqeFormat::Hash => {
                c.set_rss_hash_result(mini.rx_hash_result());
                c.set_wqe_counter(self.title.wqe_counter().wrapping_add(i as u16));
            }
            MiniCqeFormat::Csum => {
                c.set_check_sum(mini.checksum());
                c.set_wqe_counter(self.title.wqe_counter().wrapping_add(i as u16));
            }
            MiniCqeFormat::SendInfo => {
                c.set_wqe_counter(mini.wqe_counter());
                c.set_sop_drop_qpn(((mini.s_wqe_opcode() as u32) << 24) | self.title.qpn());
            }
        }
        c
    }
    /// Iterates over the expanded CQEs given the session's arrays in order
    /// (`arrays[k]` = the cqe64 bytes of the slot at
    /// [`Self::array_position`]`(k)`). Stops early when arrays run out.
    pub fn iter<'a>(&'a self, arrays: &'a [[u8; 64]]) -> MiniCqeIter<'a> {
        MiniCqeIter {
            exp: self,
            arrays,
            i: 0,
        }
    }
    /// Writes the expanded CQEs into `out`; returns how many were written
    /// (at most `min(count, 8 * arrays.len(), out.len())`).
    pub fn expand_into(&self, arrays: &[[u8; 64]], out: &mut [Cqe64]) -> usize {
        let mut n = 0;
        for (dst, c) in out.iter_mut().zip(self.iter(arrays)) {
            *dst = c;
            n += 1;
        }
        n
    }
}

/// Iterator over a session's expanded CQEs ([`MiniCqeExpander::iter`]).
#[derive(Clone, Debug)]
pub struct MiniCqeIter<'a> {
    exp: &'a MiniCqeExpander,
    arrays: &'a [[u8; 64]],
    i: u32,
}

impl Iterator for MiniCqeIter<'_> {
    type Item = Cqe64;
    fn next(&mut self) -> Option<Cqe64> {
        if self.i >= self.exp.count {
            return None;
        }
        let group = (self.i as usize) / MINI_CQES_PER_SLOT;
        let arr = self.arrays.get(group)?;
        let mini = MiniCqe::from_array(arr, self.i as usize % MINI_CQES_PER_SLOT)?;
        let c = self.exp.expand(self.i, &mini);
        self.i += 1;
        Some(c)
    }
}
