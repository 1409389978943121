//! Probe functions for `scripts/check-barriers.sh`: compiled only with
//! `--cfg bareverbs_barrier_probes` (never in a normal build), each
//! `#[inline(never)]` so the emitted assembly has one symbol per barrier
//! and per doorbell sequence whose instructions the script checks. The
//! barrier probes return distinct constants so that no two of them have
//! the same body (identical functions may be merged into one symbol).
//!
//! The sequence probes call the real code paths (never a copy of them):
//! the CQ doorbell stores, the send / receive / SRQ doorbells, the lean and
//! general CQ poll, the command queue's post and completion read, the EQ
//! poll and the EQ consumer-index doorbell. They take their queues by
//! reference: nothing is run, only compiled.

use crate::cmd::eq::{Eqe, EventQueue};
use crate::cmd::queue::{CmdQueue, SlotKind};
use crate::cmd::{Bar0, CmdError};
use crate::cq::{CompletionQueue, PollError, WrResolver};
use crate::cqe::{Completion, Cqe64, WorkCompletion, CQE64_SIZE};
use crate::platform::{self, MemUar};
use crate::rq::{RecvError, RecvQueue, RecvWr, RqSlot, SharedReceiveQueue, SrqSlot};
use crate::sq::{SendQueue, SqSlot};

/// [`platform::to_device_barrier`] alone.
#[inline(never)]
pub fn to_device() -> u32 {
    platform::to_device_barrier();
    1
}

/// [`platform::ordering_write_barrier`] alone.
#[inline(never)]
pub fn ordering_write() -> u32 {
    platform::ordering_write_barrier();
    2
}

/// [`platform::from_device_barrier`] alone.
#[inline(never)]
pub fn from_device() -> u32 {
    platform::from_device_barrier();
    3
}

/// [`platform::release_to_device_barrier`] alone.
#[inline(never)]
pub fn release_to_device() -> u32 {
    platform::release_to_device_barrier();
    4
}

/// [`platform::mmio_wc_start`] alone.
#[inline(never)]
pub fn mmio_wc_start() -> u32 {
    platform::mmio_wc_start();
    5
}

/// [`platform::mmio_flush_writes`] alone.
#[inline(never)]
pub fn mmio_flush_writes() -> u32 {
    platform::mmio_flush_writes();
    6
}

/// The SET_CI store after polling: barrier, then the record word.
#[inline(never)]
pub fn cq_publish_ci(cq: &mut CompletionQueue<0>) {
    cq.publish_ci();
}

/// The CQ arm sequence: record word, `mmio_wc_start`, the 8-byte UAR
/// doorbell, the UAR flush.
#[inline(never)]
pub fn cq_arm(cq: &mut CompletionQueue<0>, uar: &mut MemUar) {
    cq.arm(false, uar);
}

/// The send doorbell sequence: `to_device_barrier`, the record word,
/// `mmio_wc_start`, the doorbell or BlueFlame copy, the UAR flush.
#[inline(never)]
pub fn sq_ring_doorbell(sq: &mut SendQueue<MemUar, [SqSlot; 64]>, nreq: u32, last_cur: u32) {
    sq.ring_doorbell(nreq, last_cur, || false);
}

/// The lean poll loop (the body of `poll_each` / `poll_completions`) for
/// CQE version 1, 64-byte CQEs, with a resolver behind a vtable so its
/// send lane is live: each of the loop's three ownership tests (lane run,
/// a lane run's pending entry, single entry) is followed by
/// `from_device_barrier` and loads of the CQE's words.
#[inline(never)]
pub fn cq_poll_lean(
    cq: &mut CompletionQueue<0>,
    r: &mut dyn WrResolver,
    out: &mut [Completion; 16],
) -> Result<usize, PollError> {
    let mut i = 0;
    cq.lean_loop::<true, CQE64_SIZE, dyn WrResolver, _>(r, out.len(), &mut |c| {
        if let Some(o) = out.get_mut(i) {
            *o = c;
        }
        i += 1;
    })
}

/// The general poll path (`CompletionQueue::poll`): the ownership byte,
/// `from_device_barrier`, the 64-byte CQE copy; then SET_CI.
#[inline(never)]
pub fn cq_poll(
    cq: &mut CompletionQueue<0>,
    r: &mut dyn WrResolver,
    out: &mut [WorkCompletion; 4],
) -> Result<usize, PollError> {
    cq.poll(r, out)
}

/// `CompletionQueue::peek`: the ownership byte, `from_device_barrier`, the
/// CQE.
#[inline(never)]
pub fn cq_peek(cq: &CompletionQueue<0>) -> Option<Cqe64> {
    cq.peek()
}

/// The receive post (`RecvQueue::post_recv_raw`): WQE stores,
/// `to_device_barrier`, the doorbell record word.
///
/// # Safety
/// As `post_recv_raw` (never called: the probe is only compiled).
#[inline(never)]
pub unsafe fn rq_post(
    rq: &mut RecvQueue<[RqSlot; 64]>,
    wrs: &[RecvWr<'_>],
) -> Result<(), RecvError> {
    // SAFETY: forwarded contract.
    unsafe { rq.post_recv_raw(wrs) }
}

/// The SRQ post (`SharedReceiveQueue::post_recv_raw`): WQE stores,
/// `to_device_barrier`, the doorbell record word.
///
/// # Safety
/// As `post_recv_raw` (never called: the probe is only compiled).
#[inline(never)]
pub unsafe fn srq_post(
    srq: &mut SharedReceiveQueue<[SrqSlot; 64]>,
    wrs: &[RecvWr<'_>],
) -> Result<(), RecvError> {
    // SAFETY: forwarded contract.
    unsafe { srq.post_recv_raw(wrs) }
}

/// A BAR0 in ordinary memory for the command probes: volatile 4-byte
/// stores and loads, like the hardware register file.
#[derive(Debug)]
pub struct MemBar0 {
    regs: [u32; 1024],
}

// SAFETY: each register is one volatile 4-byte access to ordinary memory
// this value owns; out-of-range offsets read 0 and write nothing.
unsafe impl Bar0 for MemBar0 {
    fn read32(&self, off: usize) -> u32 {
        match self.regs.get(off / 4) {
            // SAFETY: `r` is a live, aligned u32 of `self.regs`; a
            // read-only volatile view, by value.
            Some(r) => unsafe { crate::devmem::read_only(core::ptr::from_ref(r)) }.read(),
            None => 0,
        }
    }
    fn write32(&mut self, off: usize, v: u32) {
        if let Some(r) = self.regs.get_mut(off / 4) {
            // SAFETY: `r` is a live, aligned u32 of `self.regs`, borrowed
            // mutably; a write-only volatile view.
            unsafe { crate::devmem::write_only(core::ptr::from_mut(r)) }.write(v);
        }
    }
}

/// The command post (`CmdQueue::post`): entry and mailbox stores,
/// `ordering_write_barrier`, the ownership byte, `to_device_barrier`, the
/// doorbell register.
#[inline(never)]
pub fn cmd_post(q: &mut CmdQueue, bar: &mut MemBar0, input: &[u8]) -> Result<(), CmdError> {
    q.post(bar, SlotKind::Regular, input, 16)
}

/// The command completion as the executor reads it (`CmdQueue::done`, then
/// `CmdQueue::complete`): the ownership byte, `from_device_barrier`, the
/// output.
#[inline(never)]
pub fn cmd_complete(q: &mut CmdQueue, out: &mut [u8; 64]) -> Option<Result<usize, CmdError>> {
    if q.done(SlotKind::Regular) {
        Some(q.complete(SlotKind::Regular, out))
    } else {
        None
    }
}

/// The EQ poll (`EventQueue::poll`): the owner byte,
/// `from_device_barrier`, the EQE.
#[inline(never)]
pub fn eq_poll(eq: &mut EventQueue) -> Option<Eqe> {
    eq.poll()
}

/// The EQ consumer-index doorbell (`EventQueue::update_ci`): the 4-byte
/// doorbell store, then `to_device_barrier`.
#[inline(never)]
pub fn eq_update_ci(eq: &EventQueue, uar: &mut MemUar, arm: bool) {
    eq.update_ci(uar, arm);
}
