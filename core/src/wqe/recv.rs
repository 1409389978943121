//! Receive WQEs: regular RQ WQEs (optional signature segment, data
//! segments, terminator) and SRQ WQEs (next segment, data segments).
//! [ref §2.1, §2.2](crate::reference).

use super::parse::WqeParseError;
use super::recv_seg::{RecvSigSeg, SrqNextSeg};
use super::seg::{DataSeg, Segment};
use super::{DS_BYTES, INVALID_LKEY};

/// A receive WQE view: the optional first segment and the data segments up
/// to the terminator (or the end of the stride).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecvWqe<'a> {
    /// Receive signature segment (RQ with WQE signatures).
    pub sig: Option<RecvSigSeg>,
    /// SRQ next segment (SRQ WQEs).
    pub next: Option<SrqNextSeg>,
    /// Whether a terminator `{0, INVALID_LKEY, 0}`-style segment (lkey
    /// 0x100) ended the list before the stride end.
    pub terminated: bool,
    /// Number of data segments before the terminator.
    pub num_segs: usize,
    segs: &'a [u8],
}

impl<'a> RecvWqe<'a> {
    fn scan(stride: &'a [u8], first: usize) -> Result<(&'a [u8], usize, bool), WqeParseError> {
        if stride.is_empty() || !stride.len().is_multiple_of(DS_BYTES) {
            return Err(WqeParseError::BadRing { len: stride.len() });
        }
        let segs = stride.get(first..).ok_or(WqeParseError::Truncated {
            need: first,
            have: stride.len(),
        })?;
        let mut n = 0;
        let mut terminated = false;
        for c in segs.chunks_exact(DS_BYTES) {
            let d = DataSeg::parse(c)?;
            if d.lkey.get() == INVALID_LKEY {
                terminated = true;
                break;
            }
            n += 1;
        }
        Ok((segs, n, terminated))
    }

    /// Parses one RQ WQE stride (a non-zero multiple of 16 bytes). With
    /// `signature`, the first 16 bytes are a [`RecvSigSeg`]. [ref §2.1](crate::reference).
    pub fn parse_rq(stride: &'a [u8], signature: bool) -> Result<Self, WqeParseError> {
        let first = if signature { RecvSigSeg::SIZE } else { 0 };
        let (segs, num_segs, terminated) = Self::scan(stride, first)?;
        let sig = if signature {
            Some(RecvSigSeg::parse(stride)?)
        } else {
            None
        };
        Ok(RecvWqe {
            sig,
            next: None,
            terminated,
            num_segs,
            segs,
        })
    }

    /// Parses one SRQ WQE (next segment + data segments). [ref §2.2](crate::reference).
    pub fn parse_srq(stride: &'a [u8]) -> Result<Self, WqeParseError> {
        let (segs, num_segs, terminated) = Self::scan(stride, SrqNextSeg::SIZE)?;
        let next = Some(SrqNextSeg::parse(stride)?);
        Ok(RecvWqe {
            sig: None,
            next,
            terminated,
            num_segs,
            segs,
        })
    }

    /// Parses WQE `index` (reduced modulo the WQE count) of a receive ring
    /// with stride `1 << stride_shift` bytes (receive WQEs never wrap).
    /// [ref §2.1, §2.2](crate::reference).
    pub fn parse_ring(
        ring: &'a [u8],
        stride_shift: u32,
        index: u32,
        srq: bool,
        signature: bool,
    ) -> Result<Self, WqeParseError> {
        let stride = 1usize.checked_shl(stride_shift).unwrap_or(0);
        if stride < DS_BYTES || ring.is_empty() || !ring.len().is_multiple_of(stride) {
            return Err(WqeParseError::BadRing { len: ring.len() });
        }
        let n = ring.len() / stride;
        let off = (index as usize % n) * stride;
        let s = &ring[off..off + stride];
        if srq {
            Self::parse_srq(s)
        } else {
            Self::parse_rq(s, signature)
        }
    }

    /// The data segments before the terminator.
    pub fn data_segs(&self) -> impl Iterator<Item = DataSeg> + 'a {
        self.segs
            .chunks_exact(DS_BYTES)
            .take(self.num_segs)
            .filter_map(|c| DataSeg::parse(c).ok())
    }

    /// Total bytes the scatter list can receive (sum of byte counts).
    pub fn capacity(&self) -> u64 {
        self.data_segs().map(|d| d.byte_count.get() as u64).sum()
    }
}
