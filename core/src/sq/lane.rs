//! [`SendLane`]: one send queue's completion state held in registers while
//! the lean poller retires a run of its requester CQEs.
//!
//! [`SendQueue::retire`] reads and writes the queue's `tail` through
//! `&mut self`; when the poller runs it per CQE, every device barrier or
//! volatile ring read in between makes the compiler store and reload it.
//! A lane copies `tail` and `head` out once, retires with the same rule
//! ([`in_flight`]) on its copies, and writes `tail` back when it is dropped.

use super::{SendQueue, SqSlot, SqSlots};
use crate::platform::Uar;
use crate::queue_pair::wc_opcode_of;
use crate::retire::{CompletionReject, SendDone};

/// The in-flight rule of a requester completion ([ref §5.7](crate::reference)), in the
/// terms both retirers keep: `last = head − 1` and `inflight = head −
/// tail`. The record at the counter's slot must have been posted at
/// exactly `wqe_counter`, and its WR sequence number must lie in the
/// window `[tail, head)`: with `d = last − seq` that is `d < inflight`
/// (two compares). Returns `d`, the WRs still in flight once it and every
/// earlier WR are retired (`tail` becomes `head − d`). The one owner of the
/// rule: [`SendQueue::retire`] and [`SendLane::retire`] both apply it.
#[inline(always)]
pub(super) fn in_flight(slot: &SqSlot, wqe_counter: u16, last: u32, inflight: u32) -> Option<u32> {
    let d = last.wrapping_sub(slot.seq());
    (slot.ctr() == wqe_counter && d < inflight).then_some(d)
}

/// A send queue's completion state, borrowed for a run of CQEs (see the
/// module documentation). Made by [`SendQueue::send_lane`] and handed to
/// the lean poller by [`WrResolver::send_lane`](crate::cq::WrResolver::send_lane);
/// only the poller retires through it. Dropping it stores the retired
/// position back into the queue.
pub struct SendLane<'a> {
    /// The CQE routing value naming this queue's QP (user index with CQE
    /// version 1, else the QPN).
    id: u32,
    /// The records; `mask + 1` of them.
    slots: &'a [SqSlot],
    /// `slots.len() − 1`; the length is a power of two (checked when the
    /// lane is made).
    mask: usize,
    /// The queue's `tail`, written back on drop (as `head − inflight`).
    home: &'a mut u32,
    /// `head − 1`: the newest WR in flight (when any is).
    last: u32,
    /// `head − tail`: WRs in flight.
    inflight: u32,
}

/// The lane's routing value and counters (never the records or the ring).
impl core::fmt::Debug for SendLane<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SendLane")
            .field("id", &self.id)
            .field("last", &self.last)
            .field("inflight", &self.inflight)
            .finish_non_exhaustive()
    }
}

impl<U: Uar, S: SqSlots> SendQueue<U, S> {
    /// A [`SendLane`] over this queue for the CQE routing value `id` (the
    /// QP's user index with CQE version 1, else its QPN), or `None` when
    /// the record storage is not a power of two long (the poller then
    /// retires through [`WrResolver::send_done`](crate::cq::WrResolver::send_done)).
    ///
    /// # Safety
    /// The lean poller retires from this queue every requester CQE whose
    /// QP field equals `id`: `id` must be the routing value of this
    /// queue's QP on the CQ being polled, the one for which the resolver's
    /// `send_done` retires from this queue (retiring for another QP's CQE
    /// would hand back SGE memory the device still uses).
    /// [`QueuePair`](crate::queue_pair::QueuePair) makes its lane this
    /// way, safely.
    #[inline(always)]
    pub unsafe fn send_lane(&mut self, id: u32) -> Option<SendLane<'_>> {
        let slots = self.slots.as_ref();
        if !slots.len().is_power_of_two() {
            return None;
        }
        let (tail, head) = (self.tail, self.head);
        Some(SendLane {
            id,
            mask: slots.len() - 1,
            slots,
            home: &mut self.tail,
            last: head.wrapping_sub(1),
            inflight: head.wrapping_sub(tail),
        })
    }
}

impl SendLane<'_> {
    /// The CQE routing value of the lane's QP.
    #[inline(always)]
    pub(crate) fn id(&self) -> u32 {
        self.id
    }

    /// [`SendQueue::retire`] on the lane's copies: the same slot, rule,
    /// result and refusal.
    ///
    /// # Safety
    /// As [`SendQueue::retire`]: `wqe_counter` is from a requester CQE the
    /// device wrote for this queue.
    #[inline(always)]
    pub(crate) unsafe fn retire(&mut self, wqe_counter: u16) -> Result<SendDone, CompletionReject> {
        let idx = wqe_counter as usize & self.mask;
        // SAFETY: idx ≤ mask = slots.len() − 1 (the length is a nonzero
        // power of two, checked in `send_lane`).
        let slot = unsafe { self.slots.get_unchecked(idx) };
        let Some(d) = in_flight(slot, wqe_counter, self.last, self.inflight) else {
            return Err(CompletionReject::NotInFlight);
        };
        self.inflight = d;
        Ok(SendDone {
            wr_id: slot.wr_id,
            wr_data: wc_opcode_of(slot.wr_data()),
        })
    }
}

impl Drop for SendLane<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        *self.home = self.last.wrapping_add(1).wrapping_sub(self.inflight);
    }
}
