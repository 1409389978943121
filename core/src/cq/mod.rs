//! The completion queue poll path: ownership test, CQE → work completion,
//! wr_id recovery through the send/receive queues, error CQEs, inline
//! scatter, compressed sessions, the consumer-index doorbell record and
//! arming. [ref §3.7, §4.1, §4.5, §5.3–§5.9](crate::reference).
//!
//! # The boundary with the send and receive queues
//!
//! The CQ does not own the work queues. Every CQE that completes a work
//! request is resolved through a [`WrResolver`] (implemented by whatever
//! owns the QPs/SRQs — usually a small table from QP id to queue): the CQ
//! tells it *which* WQE completed (`qp`, `wqe_counter`), the resolver
//! checks that this names work really in flight, retires the WR(s) and
//! returns the `wr_id` — or says why not ([`CompletionReject`]). `qp` is
//! the user index from `srqn_uidx` with CQE version 1 (what ConnectX-4+
//! contexts use), else the QPN from `sop_drop_qpn`. [ref §5.7](crate::reference).
//!
//! # The device is not trusted
//!
//! A CQE may be wrong, stale, repeated or hostile. One that names an
//! unknown QP or no WR in flight becomes a typed [`PollError`] (naming the
//! QP, the counter and the reason), retires nothing, and is consumed like
//! any other CQE; the next `poll` continues behind it. Compressed sessions
//! are checked per expanded mini-CQE. [`CompletionQueue::clean`] purges a
//! QP's unpolled CQEs when it is reset ([ref §5.10](crate::reference)).
//!
//! # Memory rules
//!
//! The ring and doorbell record are device-visible: they are only touched
//! through raw-pointer volatile reads and writes, never through references.
//! The ownership byte is read first; only when software owns the entry does
//! the poller issue [`platform::from_device_barrier`](crate::platform::from_device_barrier) and copy the whole
//! CQE out ([ref §5.3, §4.4](crate::reference)).
//!
//! # Files
//!
//! The completion queue type is defined here; each concern of it is an
//! `impl` block in a file of its own: construction (`build`), accessors
//! (`accessors`), ring access (`ring`), doorbell-record writes and arming
//! (`arm`, over the record layout of `doorbell`), the general poll path
//! (`poll`, with CQE → completion in `complete` and compressed sessions in
//! `zip`), purging (`clean`) and the lean poller (`lean`). The resolver
//! boundary is `resolver`, the errors `error`. The files are private;
//! every item is re-exported here, so `bareverbs::cq::X` is the path.

use crate::cqe::{CqeSize, MiniCqeFormat};
use crate::platform::DmaBuf;
use core::fmt;

mod accessors;
mod arm;
mod build;
mod clean;
mod complete;
mod doorbell;
mod error;
mod poll;
mod resolver;
mod ring;
mod zip;

pub use build::MAX_CQ_ENTRIES;
pub use doorbell::{CQ_DB_REQ_NOT, CQ_DB_REQ_NOT_SOL, DBREC_ARM, DBREC_BYTES, DBREC_SET_CI};
pub use error::{CqError, PollError};
pub use resolver::WrResolver;

pub use crate::retire::{CompletionReject, RecvDone, SendDone};

use zip::ZipState;

/// A completion queue of `N` entries (a power of two, checked at compile
/// time) over a DMA ring and doorbell record. `N = 0` is the runtime-sized
/// variant ([`DynCompletionQueue`], built with
/// [`CompletionQueue::with_entries`]).
pub struct CompletionQueue<const N: usize> {
    ring: DmaBuf,
    dbrec: DmaBuf,
    ncqe: u32,
    ci: u32,
    cqn: u32,
    cqe_size: CqeSize,
    cqe_version: u8,
    arm_sn: u32,
    mini_format: MiniCqeFormat,
    zip: Option<ZipState>,
}

/// A completion queue whose entry count is known only at run time.
pub type DynCompletionQueue = CompletionQueue<0>;

impl<const N: usize> fmt::Debug for CompletionQueue<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompletionQueue")
            .field("cqn", &self.cqn)
            .field("ncqe", &self.ncqe)
            .field("ci", &self.ci)
            .field("cqe_size", &self.cqe_size)
            .field("cqe_version", &self.cqe_version)
            .field("arm_sn", &self.arm_sn)
            .finish()
    }
}

mod lean;

#[cfg(test)]
mod tests;
