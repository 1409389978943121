//! Compressed sessions: a title starts one, its mini-CQEs are expanded
//! and completed one by one, and a refusal consumes the rest
//! ([ref §5.9](crate::reference)).

use super::error::PollError;
use super::resolver::WrResolver;
use super::{CompletionQueue, CompletionReject};
use crate::cqe::{Cqe64, MiniCqe, MiniCqeExpander, WorkCompletion, MINI_CQES_PER_SLOT};
use crate::devmem;

/// A compressed session in progress: its expander, the index of the next
/// mini-CQE and the mini-CQE array being expanded.
#[derive(Clone, Copy, Debug)]
pub(super) struct ZipState {
    exp: MiniCqeExpander,
    next: u32,
    arr: [u8; 64],
}

impl<const N: usize> CompletionQueue<N> {
    /// Begins a compressed session whose title is at `pos`.
    #[cold]
    #[inline(never)]
    /// A session may not cover positions this poll call already consumed
    /// (`call_start..pos`): an honest device publishes a session only over
    /// entries software has not consumed, so a title claiming more is
    /// refused like an impossible count, and one call never consumes more
    /// than one lap of the ring.
    pub(super) fn start_zip(
        &mut self,
        title: Cqe64,
        pos: u32,
        call_start: u32,
    ) -> Result<(), PollError> {
        let used = pos.wrapping_sub(call_start) as u64;
        let fits = used + title.byte_cnt() as u64 <= self.ncqe() as u64;
        match MiniCqeExpander::new(title, pos, self.ncqe(), self.mini_format) {
            Ok(exp) if fits => {
                self.zip = Some(ZipState {
                    exp,
                    next: 0,
                    arr: [0; 64],
                });
                Ok(())
            }
            _ => {
                // Consume the bad title so the poller does not spin on it.
                self.ci = pos.wrapping_add(1);
                Err(PollError::BadCompressedSession {
                    position: pos,
                    count: title.byte_cnt(),
                    completions: 0,
                })
            }
        }
    }

    /// Produces the next completion of the current compressed session:
    /// loads the next mini-CQE array when a group starts, expands, marks the
    /// consumed ring position INVALID (so a stale copy is never taken for a
    /// new CQE on a later pass), advances `ci`. An expanded CQE that
    /// completes no work request, or that its queue refuses, ends the
    /// session: its remaining positions are consumed (and marked INVALID)
    /// without producing completions, and the refusal is returned.
    #[cold]
    #[inline(never)]
    pub(super) fn poll_zip<R: WrResolver + ?Sized>(
        &mut self,
        r: &mut R,
    ) -> Result<WorkCompletion, PollError> {
        let Some(mut z) = self.zip else {
            return Err(PollError::BadCompressedSession {
                position: self.ci,
                count: 0,
                completions: 0,
            });
        };
        let i = z.next;
        let pos = z.exp.title_pos().wrapping_add(i);
        let slot = i as usize % MINI_CQES_PER_SLOT;
        if slot == 0 {
            let ap = self.cqe64_ptr(z.exp.array_position(i / MINI_CQES_PER_SLOT as u32));
            // SAFETY: ap is a cqe64 inside the ring (non-null); the session
            // was published with its title, which software owns. A
            // read-only volatile view of 64 bytes, no reference.
            z.arr = unsafe { devmem::read_only(ap.cast::<[u8; 64]>()) }.read();
        }
        let mini = MiniCqe::from_array(&z.arr, slot).unwrap_or_default();
        let cqe = z.exp.expand(i, &mini);
        let p = self.cqe64_ptr(pos);
        self.invalidate(pos);
        z.next = i + 1;
        self.zip = if z.next >= z.exp.count() {
            None
        } else {
            Some(z)
        };
        self.ci = pos.wrapping_add(1);
        let mut wc = WorkCompletion::default();
        let res = if matches!(cqe.opcode(), 0..=4 | 13 | 14) {
            self.complete(&cqe, p, r, &mut wc)
        } else {
            let qp = if self.cqe_version == 1 {
                cqe.uidx()
            } else {
                cqe.qpn()
            };
            Err(PollError::reject(
                qp,
                cqe.wqe_counter(),
                CompletionReject::NoWorkRequest,
            ))
        };
        match res {
            Ok(()) => Ok(wc),
            Err(e) => {
                self.skip_zip();
                Err(e)
            }
        }
    }

    /// Consumes the rest of the current compressed session without
    /// producing completions.
    #[cold]
    fn skip_zip(&mut self) {
        if let Some(z) = self.zip.take() {
            let end = z.exp.title_pos().wrapping_add(z.exp.count());
            let mut pos = self.ci;
            while pos != end {
                self.invalidate(pos);
                pos = pos.wrapping_add(1);
            }
            self.ci = end;
        }
    }
}
