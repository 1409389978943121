//! The general poll path: [`CompletionQueue::poll`] and its step over one
//! CQE or mini-CQE ([ref §4.5, §5.3](crate::reference)).

use super::error::PollError;
use super::resolver::WrResolver;
use super::ring::read_cqe64;
use super::CompletionQueue;
use crate::cqe::{sw_owns, CqeFormat, WorkCompletion, OP_OWN_OFFSET};
use crate::devmem;
use crate::platform;

/// Outcome of one step of the general poll path ([`CompletionQueue::step`]).
pub(super) enum Step {
    /// Software owns no entry at the consumer index: nothing consumed.
    Empty,
    /// One completion written; the CQE (or mini-CQE) consumed.
    Done,
    /// The CQE was consumed but is no completion.
    Failed(PollError),
}

impl<const N: usize> CompletionQueue<N> {
    /// Polls up to `out.len()` completions, exactly as the mlx5 provider's
    /// `ibv_poll_cq` does: stops at the first entry software does not own
    /// (or INVALID), consumes each owned CQE (`ci += 1`), turns it into a
    /// [`WorkCompletion`] through `r`, and finally stores SET_CI in the
    /// doorbell record — once per call, even when nothing was polled.
    /// RESIZE_CQ (and other CQE opcodes that complete no WR) count as a
    /// completion with only `qp_num` and `wc_flags` written. Compressed
    /// sessions are expanded in place. [ref §4.5, §5.3–§5.9](crate::reference).
    ///
    /// Not modelled: ODP page-fault error CQEs on SRQs (syndrome 0x22 with
    /// vendor syndrome 0x93), which rdma-core consumes internally, are
    /// reported like any other error CQE; NO_PACKET and SIG_ERR CQEs are
    /// treated like RESIZE_CQ.
    ///
    /// Every CQE that completes a work request is checked by the resolver
    /// (the device is not trusted): one naming an unknown QP, or a WQE that
    /// is not in flight (phantom, repeated, stale, out of order), becomes a
    /// [`PollError`] instead of a completion and retires nothing. In a
    /// compressed session each expanded mini-CQE is checked the same way;
    /// after the first refused one the rest of the session is consumed
    /// without producing completions.
    ///
    /// Returns the number of completions written to `out`, or a
    /// [`PollError`] (CQ_POLL_ERR) for the first CQE that could not be
    /// turned into a completion; that CQE is consumed, the record is still
    /// updated, and the next call continues with the next CQE.
    #[inline]
    pub fn poll<R: WrResolver + ?Sized>(
        &mut self,
        r: &mut R,
        out: &mut [WorkCompletion],
    ) -> Result<usize, PollError> {
        let call_start = self.ci;
        let mut n = 0;
        let mut res = Ok(());
        for slot in out.iter_mut() {
            match self.step(r, call_start, slot) {
                Step::Done => n += 1,
                Step::Empty => break,
                Step::Failed(e) => {
                    res = Err(e);
                    break;
                }
            }
        }
        self.publish_ci();
        match res {
            Ok(()) => Ok(n),
            Err(e) => Err(e.with_completions(n)),
        }
    }

    /// One step of the general poll path: the next completion of a
    /// compressed session in progress, or the CQE at the consumer index if
    /// software owns it (a compressed title starts a session). Writes
    /// `slot` on [`Step::Done`]; consumes the CQE (advances `ci`) on
    /// [`Step::Done`] and [`Step::Failed`]; does not touch the doorbell
    /// record. `call_start` is the consumer index when the poll call began.
    #[inline(always)]
    pub(super) fn step<R: WrResolver + ?Sized>(
        &mut self,
        r: &mut R,
        call_start: u32,
        slot: &mut WorkCompletion,
    ) -> Step {
        if self.zip.is_some() {
            return match self.poll_zip(r) {
                Ok(wc) => {
                    *slot = wc;
                    Step::Done
                }
                Err(e) => Step::Failed(e),
            };
        }
        let pos = self.ci;
        let p = self.cqe64_ptr(pos);
        // SAFETY: p points at a cqe64 inside the ring (cqe64_ptr,
        // non-null); the ownership byte is read alone, by value, through a
        // read-only volatile view, with no reference.
        let op_own = unsafe { devmem::read_only(p.add(OP_OWN_OFFSET)) }.read();
        if !sw_owns(op_own, pos, self.ncqe()) {
            return Step::Empty;
        }
        platform::from_device_barrier();
        // SAFETY: the 64 bytes at p are inside the ring and software
        // owns the entry (checked above, ordered by the barrier).
        let cqe = unsafe { read_cqe64(p) };
        if cqe.format() == CqeFormat::Compressed as u8 {
            return match self
                .start_zip(cqe, pos, call_start)
                .and_then(|()| self.poll_zip(r))
            {
                Ok(wc) => {
                    *slot = wc;
                    Step::Done
                }
                Err(e) => Step::Failed(e),
            };
        }
        self.ci = pos.wrapping_add(1);
        match self.complete(&cqe, p, r, slot) {
            Ok(()) => Step::Done,
            Err(e) => Step::Failed(e),
        }
    }
}
