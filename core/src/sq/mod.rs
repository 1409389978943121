//! The send queue: builds WQEs straight into the DMA ring, keeps the
//! `wr_id` bookkeeping in its slot records and rings the doorbell (8-byte write
//! or BlueFlame copy). [ref §1](crate::reference) (WQE formats, wrap, bookkeeping), §4.3
//! (doorbell sequence).
//!
//! The ring is `N` 64-byte WQEBBs of DMA memory; `N` is the length of the
//! slot storage `S: SqSlots` (fixed at run time; [`SendQueue::new`] refuses
//! one that is not a power of two up to 65536). Producer and consumer counters
//! are free running; one signaled completion retires every earlier
//! unsignaled WR (`tail = wqe_head[idx] + 1`).
//!
//! Completions are not trusted: each slot records the 16-bit WQEBB counter
//! its WQE was posted at and that WR's sequence number, and a CQE retires
//! anything only if it names the first WQEBB of a WQE still in flight
//! (recorded counter equal, sequence in `[tail, head)`); see
//! [`SendQueue::retire`].
//!
//! Posting is checked before anything is written: a WR that fails leaves
//! the ring untouched, the good prefix of a batch is posted and rung with
//! the last WQE actually built, and the failing index is reported.

mod batch;
mod build;
mod config;
mod doorbell;
mod error;
mod lane;
mod limits;
mod post;
mod ring;
mod slot;
mod umr;
mod wr;

pub use crate::sge::Sge;
pub use batch::SendBatch;
pub use config::{BlueFlame, SqConfig};
pub use error::{PostError, PostErrorKind};
pub use lane::SendLane;
pub use slot::{SendRetired, SqSlot, SqSlots};
pub use wr::{MwBind, MwType, RdmaOp, RdmaWr, SendFlags, SendOp, SendWr, UdDest};

use crate::platform::{self, DmaBuf, Uar};
use crate::qp::QpType;
use crate::retire::CompletionReject;
use crate::wqe::{CtrlSeg, FmCeSe};
use core::ptr::NonNull;
use limits::Limits;
use ring::SqRing;
use slot::forget;

/// A send queue with its records in a fixed array of `N` WQEBBs.
pub type FixedSendQueue<U, const N: usize> = SendQueue<U, [SqSlot; N]>;

/// A send queue of `slots.len()` WQEBBs over DMA memory, ringing through `U`.
pub struct SendQueue<U: Uar, S: SqSlots> {
    ring: SqRing,
    dbrec: NonNull<u8>,
    uar: U,
    cfg: SqConfig,
    /// What the WR checks need (posting state, SGE and slot limits,
    /// allowed opcodes), kept up to date by `new`, `enable` and `reset`.
    lim: Limits,
    cur_post: u32,
    head: u32,
    tail: u32,
    fm_cache: u8,
    bf_offset: usize,
    sig_bits: u8,
    /// One record per WQEBB (ring size = `slots.len()` at `new`).
    slots: S,
}

// SAFETY: the queue exclusively owns its ring and doorbell-record memory
// (by the contract of `new`); moving it to another thread moves that
// ownership. It is not Sync: `post` needs `&mut self`.
unsafe impl<U: Uar + Send, S: SqSlots + Send> Send for SendQueue<U, S> {}

/// The queue's configuration and counters; formatting reads neither the
/// ring nor the doorbell record (device-visible memory) nor the UAR.
impl<U: Uar, S: SqSlots> core::fmt::Debug for SendQueue<U, S> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SendQueue")
            .field("cfg", &self.cfg)
            .field("cur_post", &self.cur_post)
            .field("head", &self.head)
            .field("tail", &self.tail)
            .field("slots", &self.slots.as_ref().len())
            .finish_non_exhaustive()
    }
}

impl<U: Uar, S: SqSlots> SendQueue<U, S> {
    /// Creates a send queue over `ring` (`slots.len()` × 64 bytes) and the
    /// QP's 8-byte doorbell record `dbrec` (word 1 is the send counter),
    /// keeping its per-WQEBB records in `slots`. `None` when `slots.len()`
    /// is not a power of two up to 65536, the buffers are too small, the
    /// doorbell record is not 4-byte aligned, or the
    /// BlueFlame register (`reg_offset` plus both `buf_size` halves, or the
    /// 8-byte doorbell) does not fit in a UAR page.
    ///
    /// Posting starts disabled, as after create: call [`enable`](Self::enable)
    /// when the QP reaches RTS.
    ///
    /// # Safety
    /// `ring` and `dbrec` must be valid DMA memory of at least `slots.len() * 64` and
    /// 8 bytes that this queue exclusively owns (no other queue writes them,
    /// no Rust reference points at them) for its whole life, and the device
    /// must only read them.
    pub unsafe fn new(
        ring: DmaBuf,
        dbrec: DmaBuf,
        uar: U,
        cfg: SqConfig,
        mut slots: S,
    ) -> Option<Self> {
        let n = slots.as_ref().len();
        if !n.is_power_of_two() || n > 1 << 16 {
            return None;
        }
        let ring_bytes = n * crate::wqe::SEND_WQE_BB;
        // The record is stored as one aligned 4-byte word (mlx5 doorbell
        // records are 8-byte aligned anyway).
        let dbrec_aligned = dbrec.cpu.as_ptr().align_offset(4) == 0;
        if ring.len < ring_bytes || dbrec.len < 8 || !dbrec_aligned || cfg.max_post == 0 {
            return None;
        }
        // Both halves of the register (doorbells alternate between them,
        // BlueFlame copies fill one) lie inside the UAR page.
        let reg_end = cfg
            .bf
            .buf_size
            .checked_mul(2)
            .and_then(|b| b.max(8).checked_add(cfg.bf.reg_offset));
        if reg_end.is_none_or(|e| e > platform::UAR_PAGE_BYTES) {
            return None;
        }
        // No record names a WR in flight: each gets a counter no
        // completion for its slot carries (a default record's counter 0
        // would match one for slot 0).
        let all = slots.as_mut();
        all.fill(SqSlot::default());
        forget(all);
        let q = SendQueue {
            ring: SqRing {
                base: ring.cpu,
                bytes: ring_bytes,
                qpn: cfg.qpn,
                qpn_image: CtrlSeg::qpn_ds_image(cfg.qpn, 0),
                mask: n as u32 - 1,
                datagram: cfg.qp_type == QpType::Ud,
            },
            dbrec: dbrec.cpu,
            uar,
            sig_bits: if cfg.sig_all {
                FmCeSe::CQ_UPDATE.bits()
            } else {
                0
            },
            lim: Limits::new(&cfg, ring_bytes),
            cfg,
            cur_post: 0,
            head: 0,
            tail: 0,
            fm_cache: 0,
            bf_offset: 0,
            slots,
        };
        Some(q)
    }

    /// Allows posting (the QP entered RTS, or stays in SQD/SQE/ERR).
    pub fn enable(&mut self) {
        self.lim.set_enabled(true);
    }

    /// Disables posting and resets every counter, as a move to RESET does
    /// ([ref §2.1, §6.4](crate::reference)): indices to 0, the send doorbell record zeroed,
    /// and every slot's record cleared, so a stale CQE of the previous
    /// life (still in a CQ) is rejected instead of retiring new work.
    ///
    /// # Safety
    /// Forgetting the WRs hands their WQEs' ring space (and, to the caller,
    /// their memory) back: call it only when the device no longer executes
    /// this queue (its QP was moved to RESET, or was never started).
    pub unsafe fn reset(&mut self) {
        self.lim.set_enabled(false);
        self.cur_post = 0;
        self.head = 0;
        self.tail = 0;
        self.fm_cache = 0;
        self.forget_slots();
        self.write_dbrec(0);
    }

    /// After a leaked batch (opened, never rung or dropped): forgets every
    /// record of a WR not in flight, so the records the batch wrote beyond
    /// `head` can never be taken for a WR posted later at their sequence
    /// numbers. Called before `head` advances. A leaked batch is known by
    /// its first record: at the producer index, with the WR sequence
    /// number `head` and the counter `cur_post` — which no other record
    /// there has (a record of an earlier lap has an older sequence number;
    /// a forgotten one another counter), short of one posted exactly 2^32
    /// WRs earlier, for which the forgetting is merely unneeded.
    #[inline(always)]
    pub(super) fn forget_leaked_batch(&mut self) {
        let first = (self.cur_post & self.ring.mask) as usize;
        let want = SqSlot::posted(0, self.head, self.cur_post, 0).meta;
        if let Some(rec) = self.slots.as_ref().get(first) {
            if rec.meta & !SqSlot::WR_DATA_BITS == want {
                self.forget_not_in_flight();
            }
        }
    }

    #[cold]
    #[inline(never)]
    fn forget_not_in_flight(&mut self) {
        let (last, inflight) = (self.head.wrapping_sub(1), self.head.wrapping_sub(self.tail));
        for (idx, slot) in self.slots.as_mut().iter_mut().enumerate() {
            if last.wrapping_sub(slot.seq()) >= inflight {
                *slot = slot.with_ctr(idx as u16 ^ 1);
            }
        }
    }

    /// Makes every slot name no WR in flight. The provider-visible
    /// `wr_id`/sequence/`wr_data` records are left as they are.
    fn forget_slots(&mut self) {
        forget(self.slots.as_mut());
    }

    /// The configuration.
    pub fn config(&self) -> &SqConfig {
        &self.cfg
    }
    /// Producer index in WQEBBs (free running).
    pub fn cur_post(&self) -> u32 {
        self.cur_post
    }
    /// WRs posted (free running).
    pub fn head(&self) -> u32 {
        self.head
    }
    /// WRs retired by completions (free running).
    pub fn tail(&self) -> u32 {
        self.tail
    }
    /// WRs posted and not yet retired.
    pub fn outstanding(&self) -> u32 {
        self.head.wrapping_sub(self.tail)
    }
    /// Current BlueFlame half offset (0 or `buf_size`).
    pub fn bf_offset(&self) -> usize {
        self.bf_offset
    }
    /// The UAR this queue rings.
    pub fn uar(&self) -> &U {
        &self.uar
    }
    /// Mutable access to the UAR.
    pub fn uar_mut(&mut self) -> &mut U {
        &mut self.uar
    }
    /// `wr_id`, WR sequence number and `wr_data` recorded for ring slot
    /// `idx` (the slot of a WQE's first WQEBB).
    pub fn slot(&self, idx: usize) -> Option<(u64, u32, u8)> {
        let s = self.slots.as_ref().get(idx)?;
        Some((s.wr_id, s.seq(), s.wr_data()))
    }

    /// Positions the counters as if `cur_post` WQEBBs and `head` WRs had
    /// been posted and all completed (for replaying recorded states, e.g.
    /// the ground-truth vectors' filler posts). Every slot's record is
    /// cleared: no WR is in flight afterwards.
    ///
    /// # Safety
    /// The device must not be reading the ring, or must already have
    /// completed every WQE posted so far (it will fetch from `cur_post` on
    /// next): the queue forgets all posted WRs, so their memory is treated
    /// as free and later posts overwrite their WQEs. `bf_offset` must be
    /// 0 or the BlueFlame buffer size.
    pub unsafe fn set_counters(&mut self, cur_post: u32, head: u32, bf_offset: usize) {
        self.cur_post = cur_post;
        self.head = head;
        self.tail = head;
        self.bf_offset = bf_offset;
        self.forget_slots();
    }

    /// Accounts for one WQE of `wqebbs` WQEBBs that the caller wrote at
    /// the producer index itself (bypassing the builder, e.g. to test a
    /// device's validation): records `wr_id` for its first WQEBB as a
    /// posted WR and advances `cur_post` and `head`. The doorbell is not
    /// touched.
    ///
    /// # Safety
    /// The caller wrote the WQE (and is responsible for what the device
    /// does with it); `wqebbs` is its real size in WQEBBs, at least 1, and
    /// the queue has room for it (fewer than `max_post` WRs outstanding).
    pub unsafe fn record_raw_post(&mut self, wr_id: u64, wqebbs: u32) {
        self.forget_leaked_batch();
        let idx = (self.cur_post & self.ring.mask) as usize;
        if let Some(slot) = self.slots.as_mut().get_mut(idx) {
            *slot = SqSlot::posted(wr_id, self.head, self.cur_post, 0);
        }
        self.cur_post = self.cur_post.wrapping_add(wqebbs.max(1));
        self.head = self.head.wrapping_add(1);
    }

    /// Retires WRs up to the WQE whose first WQEBB counter is
    /// `wqe_counter` (from a requester CQE) and returns its `wr_id`.
    /// [ref §5.7](crate::reference): `tail = wqe_head[idx] + 1` — but only if the slot's WQE
    /// was posted at exactly `wqe_counter` and is still in flight (its WR
    /// sequence in `[tail, head)`). A repeated, stale or never-posted
    /// counter retires nothing: [`CompletionReject::NotInFlight`]. Two
    /// compares, no search.
    ///
    /// # Safety
    /// Retiring hands the WQEs' ring space (and, to the caller, the SGE
    /// memory of every WR retired) back for reuse: call it only with the
    /// `wqe_counter` of a requester CQE the device really wrote for this
    /// queue (or when the device no longer executes the queue).
    #[inline]
    pub unsafe fn retire(&mut self, wqe_counter: u16) -> Result<SendRetired, CompletionReject> {
        // Indexed modulo the records' own length (the ring size, so the
        // same slot as `wqe_counter & mask`): for a fixed array the index
        // is in bounds by construction and the check disappears.
        let slots = self.slots.as_ref();
        let idx = wqe_counter as usize & slots.len().wrapping_sub(1);
        let Some(&slot) = slots.get(idx) else {
            return Err(CompletionReject::NotInFlight);
        };
        let last = self.head.wrapping_sub(1);
        let inflight = self.head.wrapping_sub(self.tail);
        let Some(d) = lane::in_flight(&slot, wqe_counter, last, inflight) else {
            return Err(CompletionReject::NotInFlight);
        };
        self.tail = self.head.wrapping_sub(d);
        Ok(SendRetired {
            wr_id: slot.wr_id,
            wr_data: slot.wr_data(),
        })
    }
}

#[cfg(test)]
mod batch_tests;
#[cfg(test)]
mod post_tests;

#[cfg(test)]
mod tests;
