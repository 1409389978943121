//! The CQE vector file's data model: setup posts, ring CQEs, expected
//! completions and outcome, the case and the file, and the bounds a case
//! must keep so the replay can allocate it.

use anyhow::{bail, Result};

use super::fake_qp::FakeQpSpec;

/// Which queue a setup post went to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetupQueue {
    /// Send queue (e.g. an RDMA READ whose response is scattered to CQE).
    Send,
    /// Receive queue.
    Recv,
}

/// A work request posted during a case's setup (from its `NOTE:` line).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SetupPost {
    /// Queue.
    pub queue: SetupQueue,
    /// The WR id.
    pub wr_id: u64,
    /// Slot index the post occupies (`sq.wrid[k]` / `rq.wrid[k]`).
    pub index: u32,
    /// Length of each SGE in bytes, in order.
    pub sge_lens: Vec<u32>,
}

/// One CQE placed in the ring.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RingCqe {
    /// Ring slot (entry index).
    pub slot: u32,
    /// The entry's bytes (64 or 128).
    pub bytes: Vec<u8>,
}

/// One expected work completion: `(field name, Some(value) | None)` in
/// file order; `None` = `<not written by provider>`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExpectedWc {
    /// The fields.
    pub fields: Vec<(String, Option<u64>)>,
}

impl ExpectedWc {
    /// Value of field `name` (outer `None` = field absent).
    pub fn get(&self, name: &str) -> Option<Option<u64>> {
        self.fields.iter().find(|(n, _)| n == name).map(|(_, v)| *v)
    }
}

/// Expected outcome of one poll.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Expected {
    /// `ibv_poll_cq` return value (−2 = CQ_POLL_ERR).
    pub ret: i64,
    /// Consumer index after the poll.
    pub cons_index_after: Option<u64>,
    /// SET_CI word of the doorbell record (host value of the BE32).
    pub dbrec: Option<u64>,
    /// `sq.tail` after the poll.
    pub sq_tail: Option<u64>,
    /// `rq.tail` after the poll.
    pub rq_tail: Option<u64>,
    /// Work completions.
    pub wcs: Vec<ExpectedWc>,
    /// Destination buffer of the setup post after the poll.
    pub dest_after: Option<Vec<u8>>,
    /// Fill byte of the destination buffer before the poll.
    pub dest_fill: Option<u8>,
}

/// One case of a CQE vector file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CqeCase {
    /// Vector number from the `===` line.
    pub number: u64,
    /// Title after the number.
    pub title: String,
    /// `NOTE:` lines.
    pub notes: Vec<String>,
    /// 1-based line of the `===` line.
    pub line: usize,
    /// CQ entries.
    pub ncqe: u32,
    /// CQE size in bytes.
    pub cqe_size: usize,
    /// CQE version.
    pub cqe_version: u8,
    /// Consumer index before the poll.
    pub ci_before: u32,
    /// Entries requested (`ne`).
    pub ne: usize,
    /// CQEs written into the ring before the poll.
    pub cqes: Vec<RingCqe>,
    /// Setup posts.
    pub setup: Vec<SetupPost>,
    /// Expected outcome.
    pub expected: Expected,
}

/// A parsed CQE vector file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CqeFile {
    /// Header lines (without `#`).
    pub header: Vec<String>,
    /// The fake QP the header describes.
    pub qp: FakeQpSpec,
    /// Cases in file order.
    pub cases: Vec<CqeCase>,
}

/// Most CQ entries a case may name (the replay allocates the ring).
pub const MAX_NCQE: u32 = 1 << 16;
/// Most completions a case may ask one poll for (`ne`).
pub const MAX_NE: usize = 1 << 16;
/// Most SGEs one setup post may list.
pub const MAX_SETUP_SGES: usize = 64;
/// Most bytes all setup posts of a case may name together (the replay
/// allocates each buffer).
pub const MAX_SETUP_BYTES: u64 = 64 << 20;

impl CqeCase {
    /// Refuses a case whose sizes the replay could not allocate: a vector
    /// file is user input, so absurd counts are an error, never an abort.
    pub fn check_bounds(&self) -> Result<()> {
        let n = self.number;
        if self.ncqe > MAX_NCQE {
            bail!("vector {n}: ncqe {} is more than {MAX_NCQE}", self.ncqe);
        }
        if self.ne > MAX_NE {
            bail!("vector {n}: ne {} is more than {MAX_NE}", self.ne);
        }
        let mut bytes = 0u64;
        for s in &self.setup {
            if s.sge_lens.len() > MAX_SETUP_SGES {
                bail!("vector {n}: a setup post lists more than {MAX_SETUP_SGES} SGEs");
            }
            bytes += s.sge_lens.iter().map(|&l| l as u64).sum::<u64>();
        }
        if bytes > MAX_SETUP_BYTES {
            bail!("vector {n}: setup posts name {bytes} bytes, more than {MAX_SETUP_BYTES}");
        }
        Ok(())
    }
}
