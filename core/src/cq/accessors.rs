//! The completion queue's read-only state and its two setters (consumer
//! index, mini-CQE format).

use super::CompletionQueue;
use crate::cqe::{CqeSize, MiniCqeFormat};
use crate::platform::DmaBuf;

impl<const N: usize> CompletionQueue<N> {
    /// Number of entries (`ibv_cq.cqe + 1`).
    #[inline(always)]
    pub const fn ncqe(&self) -> u32 {
        if N != 0 {
            N as u32
        } else {
            self.ncqe
        }
    }
    /// The free-running consumer index.
    #[inline(always)]
    pub const fn consumer_index(&self) -> u32 {
        self.ci
    }
    /// Sets the consumer index (resuming a CQ, replaying vectors). Does not
    /// touch the doorbell record and drops any half-consumed compressed
    /// session.
    pub fn set_consumer_index(&mut self, ci: u32) {
        self.ci = ci;
        self.zip = None;
    }
    /// The CQ number.
    #[inline(always)]
    pub const fn cqn(&self) -> u32 {
        self.cqn
    }
    /// CQE size.
    #[inline(always)]
    pub const fn cqe_size(&self) -> CqeSize {
        self.cqe_size
    }
    /// CQE version (1: CQEs carry the user index).
    #[inline(always)]
    pub const fn cqe_version(&self) -> u8 {
        self.cqe_version
    }
    /// Selects the mini-CQE content used when expanding compressed
    /// sessions (must match `cqc.mini_cqe_res_format`). [ref §5.9](crate::reference).
    pub fn set_mini_cqe_format(&mut self, f: MiniCqeFormat) {
        self.mini_format = f;
    }

    /// The ring buffer.
    pub const fn ring(&self) -> DmaBuf {
        self.ring
    }
    /// The doorbell record.
    pub const fn dbrec(&self) -> DmaBuf {
        self.dbrec
    }
}
