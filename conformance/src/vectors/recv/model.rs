//! The recv vector file's data model: the file, RQ/SRQ geometries, receive
//! WRs, the setup a case runs first, the posted WQE slots and the case
//! itself, with the bounds a replay may allocate or loop.

use anyhow::{bail, Result};
use bareverbs::qp::QpType;

use super::super::wqe::{HexLine, PostResult, Sge};

/// A whole recv vector file.
#[derive(Debug, Clone, Default)]
pub struct RecvFile {
    /// The `#` header lines.
    pub header_lines: Vec<String>,
    /// `max_rq_desc_sz=` of the fake device, if stated.
    pub max_rq_desc_sz: Option<u32>,
    /// `max_recv_wr=` of the fake device, if stated.
    pub max_recv_wr: Option<u32>,
    /// `max_srq_recv_wr=` of the fake device, if stated.
    pub max_srq_recv_wr: Option<u32>,
    /// The cases, in file order.
    pub cases: Vec<RecvCase>,
}

/// RQ or SRQ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecvKind {
    /// `=== VECTOR N:` — `mlx5_post_recv` on a QP's receive queue.
    Rq,
    /// `=== SRQ VECTOR N:` — `mlx5_post_srq_recv`.
    Srq,
}

/// RQ geometry (the `QP:` line).
#[derive(Debug, Clone)]
pub struct RqGeometry {
    /// QP type (RC in the visible files).
    pub qp_type: QpType,
    /// QP number.
    pub qpn: u32,
    /// Requested `max_recv_wr`.
    pub max_recv_wr: u32,
    /// Requested `max_recv_sge`.
    pub max_recv_sge: u32,
    /// `rq.wqe_cnt`.
    pub wqe_cnt: u32,
    /// Bytes per WQE (`x N bytes`).
    pub wqe_size: u32,
    /// `rq.wqe_shift`.
    pub wqe_shift: u32,
    /// RQ ring bytes.
    pub ring_bytes: u32,
    /// Offset of the RQ in the QP buffer.
    pub buf_offset: u32,
    /// `rq.max_post`.
    pub max_post: u32,
    /// `rq.max_gs`.
    pub max_gs: u32,
    /// Returned `cap.max_recv_wr`.
    pub ret_max_recv_wr: Option<u32>,
    /// Returned `cap.max_recv_sge`.
    pub ret_max_recv_sge: Option<u32>,
    /// `wq_sig`.
    pub wq_sig: bool,
}

/// SRQ geometry (the `SRQ:` line).
#[derive(Debug, Clone)]
pub struct SrqGeometry {
    /// SRQ number.
    pub srqn: u32,
    /// Requested `max_wr`.
    pub max_wr: u32,
    /// Requested `max_sge`.
    pub max_sge: u32,
    /// `srq.wqe_shift`.
    pub wqe_shift: u32,
    /// Bytes per WQE.
    pub wqe_size: u32,
    /// Data segments per WQE (`+ N data segs`).
    pub data_segs: Option<u32>,
    /// `srq.max` (WQEs in the buffer).
    pub max: u32,
    /// Buffer bytes.
    pub buf_bytes: u32,
    /// `srq.max_gs`.
    pub max_gs: u32,
    /// `nwqes` (free-list length before the wait queue).
    pub nwqes: u32,
    /// `waitq_head` (-1 = no wait queue).
    pub waitq_head: i64,
    /// `waitq_tail` (-1 = no wait queue).
    pub waitq_tail: i64,
    /// Returned `attr.max_wr`.
    pub ret_max_wr: Option<u32>,
    /// Returned `attr.max_sge`.
    pub ret_max_sge: Option<u32>,
    /// `wq_sig`.
    pub wq_sig: bool,
}

/// One receive WR.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecvWr {
    /// `WR[i]`.
    pub index: usize,
    /// `wr_id`.
    pub wr_id: u64,
    /// `num_sge`, a C `int` (may exceed the SGE lines printed; may be negative,
    /// which the provider's `for (i = 0; i < wr->num_sge; ++i)` loops treat as
    /// no SGEs).
    pub num_sge: i32,
    /// SGEs.
    pub sges: Vec<Sge>,
}

/// One SRQ prep operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SrqPrepOp {
    /// `P`: post one filler receive.
    Post,
    /// `P!`: a filler post that failed with ENOMEM.
    PostFailed,
    /// `F<i>`: `mlx5_free_srq_wqe(srq, i)` (an SRQ completion of WQE i).
    Free(u32),
}

/// Setup before the post (the NOTE line), in structured form.
#[derive(Debug, Clone)]
pub enum RecvPrep {
    /// RQ: `prep posted C filler receives (completed…) then O … left outstanding, so rq.head=H rq.tail=T`.
    RqFillers {
        /// Fillers posted and completed (rq.tail = rq.head after each).
        completed: u32,
        /// Fillers then left outstanding.
        outstanding: u32,
        /// Resulting rq.head.
        head: Option<u32>,
        /// Resulting rq.tail.
        tail: Option<u32>,
        /// Filler WR.
        filler: Option<RecvWr>,
    },
    /// SRQ: explicit op sequence (`P P F0 P! …`).
    SrqOps {
        /// The ops in order.
        ops: Vec<SrqPrepOp>,
        /// Resulting srq.counter.
        counter: Option<u32>,
        /// Resulting srq.head.
        head: Option<u32>,
        /// Resulting srq.tail.
        tail: Option<u32>,
        /// Filler WR.
        filler: Option<RecvWr>,
    },
    /// SRQ: `N x { post one filler receive; mlx5_free_srq_wqe(srq, index it used) }` (counter wrap).
    SrqCycles {
        /// Number of post+complete cycles.
        cycles: u32,
        /// Resulting srq.counter.
        counter: Option<u32>,
        /// Resulting srq.head.
        head: Option<u32>,
        /// Resulting srq.tail.
        tail: Option<u32>,
        /// Filler WR.
        filler: Option<RecvWr>,
    },
}

/// One dumped WQE slot.
#[derive(Debug, Clone)]
pub struct RecvWqeBlock {
    /// `WQE[i]` (i-th WQE of the post).
    pub index: usize,
    /// `rq index N` / `srq index N`.
    pub slot: u32,
    /// Ring/buffer byte offset.
    pub offset: u32,
    /// SRQ: `next_wqe_index`.
    pub next_wqe_index: Option<u32>,
    /// `rq.wrid[i]` / `srq.wrid[i]`.
    pub wrid: u64,
    /// Hex lines.
    pub lines: Vec<HexLine>,
}

/// One RQ or SRQ case.
#[derive(Debug, Clone)]
pub struct RecvCase {
    /// RQ or SRQ.
    pub kind: RecvKind,
    /// Vector number.
    pub number: u32,
    /// Title.
    pub title: String,
    /// 1-based line of the `===` header.
    pub line: usize,
    /// Raw case text.
    pub raw: String,
    /// RQ geometry (RQ cases).
    pub rq: Option<RqGeometry>,
    /// SRQ geometry (SRQ cases).
    pub srq: Option<SrqGeometry>,
    /// NOTE text, if any.
    pub note: Option<String>,
    /// Structured setup, if a NOTE was present and understood.
    pub prep: Option<RecvPrep>,
    /// The WR list.
    pub wrs: Vec<RecvWr>,
    /// Expected result.
    pub result: PostResult,
    /// rq.head / srq.head before.
    pub head_before: u32,
    /// rq.head / srq.head after.
    pub head_after: u32,
    /// RQ: `rq.tail=` (unchanged by a post).
    pub rq_tail: Option<u32>,
    /// RQ: outstanding before the post.
    pub outstanding_before: Option<u32>,
    /// SRQ tail before.
    pub tail_before: Option<u32>,
    /// SRQ tail after.
    pub tail_after: Option<u32>,
    /// SRQ counter (u16) before.
    pub counter_before: Option<u32>,
    /// SRQ counter after.
    pub counter_after: Option<u32>,
    /// RQ dbrec value before (be32 value).
    pub dbrec_before: Option<u32>,
    /// dbrec bytes after (memory order).
    pub dbrec_after: Option<Vec<u8>>,
    /// SRQ free bitmap set bits before.
    pub free_bitmap_before: Option<Vec<u32>>,
    /// SRQ free bitmap set bits after.
    pub free_bitmap_after: Option<Vec<u32>>,
    /// Dumped WQE slots.
    pub wqes: Vec<RecvWqeBlock>,
    /// Unrecognised lines.
    pub unknown_lines: Vec<String>,
}

impl RecvCase {
    /// Ring (RQ) or buffer (SRQ) size in bytes.
    pub fn ring_bytes(&self) -> usize {
        match (&self.rq, &self.srq) {
            (Some(r), _) => r.ring_bytes as usize,
            (_, Some(s)) => s.buf_bytes as usize,
            _ => 0,
        }
    }
    /// Bytes per WQE slot.
    pub fn wqe_size(&self) -> usize {
        match (&self.rq, &self.srq) {
            (Some(r), _) => r.wqe_size as usize,
            (_, Some(s)) => s.wqe_size as usize,
            _ => 0,
        }
    }
    /// Number of WQE slots (wrid table length).
    pub fn slots(&self) -> usize {
        match (&self.rq, &self.srq) {
            (Some(r), _) => r.wqe_cnt as usize,
            (_, Some(s)) => s.max as usize,
            _ => 0,
        }
    }
}

/// The largest ring a receive case may name (slots × WQE size): 65536
/// slots of 512 bytes, the largest receive descriptor mlx5 devices report
/// (`max_rq_desc_sz`). The replay allocates the ring, so a file cannot make
/// the tool allocate more.
pub const MAX_RING_BYTES: u64 = 65536 * 512;
pub use crate::vectors::MAX_PREP_POSTS;

impl RecvCase {
    /// Refuses a case whose replay would allocate or loop more than any
    /// real case needs ([`MAX_RING_BYTES`], [`MAX_PREP_POSTS`]).
    pub fn check_bounds(&self) -> Result<()> {
        let ring = (self.slots() as u64) << self.wqe_shift().min(63);
        if ring > MAX_RING_BYTES || self.ring_bytes() as u64 > MAX_RING_BYTES {
            bail!(
                "the ring is {} slots of 2^{} bytes, more than {MAX_RING_BYTES} bytes",
                self.slots(),
                self.wqe_shift()
            );
        }
        let posts = match &self.prep {
            Some(RecvPrep::RqFillers {
                completed,
                outstanding,
                ..
            }) => u64::from(*completed) + u64::from(*outstanding),
            Some(RecvPrep::SrqOps { ops, .. }) => ops.len() as u64,
            Some(RecvPrep::SrqCycles { cycles, .. }) => u64::from(*cycles),
            None => 0,
        };
        if posts > MAX_PREP_POSTS {
            bail!("the setup runs {posts} filler posts, more than {MAX_PREP_POSTS}");
        }
        Ok(())
    }
    /// log2 of the WQE slot size.
    pub fn wqe_shift(&self) -> u32 {
        match (&self.rq, &self.srq) {
            (Some(r), _) => r.wqe_shift,
            (_, Some(s)) => s.wqe_shift,
            _ => 0,
        }
    }
}
