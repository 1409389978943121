//! The receive queue ([`RecvQueue`]): construction, counters, in-order
//! retirement and posting, with its fast single-SGE run.

use core::ptr::NonNull;

use super::config::RqConfig;
use super::error::{RecvError, RecvErrorKind};
use super::seg::{put_any, put_seg, seg_words, TERMINATOR_WORDS};
use super::slot::{RqSlot, RqSlots};
use super::wr::RecvWr;
use crate::devmem;
use crate::platform::{self, DmaBuf};
use crate::retire::CompletionReject;

/// A receive queue with its records in a fixed array of `N` WQEs.
pub type FixedRecvQueue<const N: usize> = RecvQueue<[RqSlot; N]>;

/// A receive queue of `slots.len()` WQEs (a power of two) over DMA memory.
pub struct RecvQueue<S: RqSlots> {
    ring: NonNull<u8>,
    dbrec: NonNull<u8>,
    cfg: RqConfig,
    state_max_gs: i64,
    head: u32,
    tail: u32,
    /// `slots.len() - 1`.
    mask: u32,
    slots: S,
}

// SAFETY: the queue exclusively owns its ring and doorbell record (contract
// of `new`); moving it moves that ownership.
unsafe impl<S: RqSlots + Send> Send for RecvQueue<S> {}

/// The queue's geometry and counters; formatting never reads the ring or
/// the doorbell record (device-visible memory).
impl<S: RqSlots> core::fmt::Debug for RecvQueue<S> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("RecvQueue")
            .field("cfg", &self.cfg)
            .field("head", &self.head)
            .field("tail", &self.tail)
            .field("slots", &self.slots.as_ref().len())
            .finish_non_exhaustive()
    }
}

impl<S: RqSlots> RecvQueue<S> {
    /// Creates a receive queue over `ring` (`slots.len() << cfg.wqe_shift` bytes)
    /// and the QP's doorbell record (word 0 is the receive counter).
    /// Posting starts disabled: call [`enable`](Self::enable) at INIT.
    /// `None` for a bad geometry (`slots.len()` not a power of two up to
    /// 65536), short buffers, or `cfg.max_post > slots.len()`
    /// (more outstanding WRs than ring slots would overwrite WQEs in
    /// flight).
    ///
    /// # Safety
    /// `ring` and `dbrec` must be DMA memory this queue exclusively owns for
    /// its whole life (no Rust reference to it, no other writer).
    pub unsafe fn new(ring: DmaBuf, dbrec: DmaBuf, cfg: RqConfig, mut slots: S) -> Option<Self> {
        let n = slots.as_ref().len();
        if !n.is_power_of_two()
            || n > 1 << 16
            || cfg.wqe_shift < 4
            || cfg.wqe_shift > 16
            || (cfg.max_gs as usize) << 4 > 1 << cfg.wqe_shift
            || ring.len < n << cfg.wqe_shift
            || dbrec.len < 4
            || cfg.max_post as usize > n
        {
            return None;
        }
        slots.as_mut().fill(RqSlot::default());
        Some(RecvQueue {
            ring: ring.cpu,
            dbrec: dbrec.cpu,
            cfg,
            state_max_gs: -1,
            head: 0,
            tail: 0,
            mask: n as u32 - 1,
            slots,
        })
    }

    /// Allows posting (the QP entered INIT or later).
    pub fn enable(&mut self) {
        self.state_max_gs = self.cfg.max_gs as i64;
    }
    /// Disables posting and zeroes the counters and the receive record.
    /// Nothing is outstanding afterwards, so a stale CQE of the previous
    /// life is rejected ([`CompletionReject::NothingOutstanding`] or
    /// [`CompletionReject::NotOldest`]).
    ///
    /// # Safety
    /// Forgetting the WRs hands their WQEs' ring space (and, to the caller,
    /// their memory) back: call it only when the device no longer executes
    /// this queue (its QP was moved to RESET, or was never started).
    pub unsafe fn reset(&mut self) {
        self.state_max_gs = -1;
        self.head = 0;
        self.tail = 0;
        self.write_dbrec(0);
    }
    /// WRs posted (free running).
    pub fn head(&self) -> u32 {
        self.head
    }
    /// WRs completed (free running).
    pub fn tail(&self) -> u32 {
        self.tail
    }
    /// The geometry.
    pub fn config(&self) -> &RqConfig {
        &self.cfg
    }
    /// `wr_id` recorded for slot `idx`.
    pub fn wrid(&self, idx: usize) -> Option<u64> {
        self.slots.as_ref().get(idx).map(|s| s.wr_id)
    }
    /// Positions the counters (replaying a recorded state).
    ///
    /// # Safety
    /// `head − tail` must not exceed `max_post`, and the device must not be
    /// executing WQEs the new counters call free (`[old tail, new tail)`)
    /// or expect WQEs the new counters call posted that were never written:
    /// later posts overwrite the slots outside `[tail, head)`.
    pub unsafe fn set_counters(&mut self, head: u32, tail: u32) {
        self.head = head;
        self.tail = tail;
    }

    /// Completes the WQE named by a responder CQE's `wqe_counter`: it must
    /// be the oldest outstanding receive (receives complete in order;
    /// `wqe_counter & (n − 1) == tail & (n − 1)` (`n` WQEs), the part of the counter
    /// the mlx5 format defines, [ref §5.8](crate::reference)). Returns its `wr_id` and
    /// advances the tail; otherwise retires nothing and says why. One
    /// compare, no search.
    ///
    /// # Safety
    /// Retiring hands the WQE's slot (and, to the caller, its buffers)
    /// back for reuse: call it only for a responder CQE the device really
    /// wrote for this queue (or when the device no longer executes it).
    #[inline]
    pub unsafe fn retire(&mut self, wqe_counter: u16) -> Result<u64, CompletionReject> {
        if self.head == self.tail {
            return Err(CompletionReject::NothingOutstanding);
        }
        let idx = (wqe_counter as u32 & self.mask) as usize;
        let want = (self.tail & self.mask) as usize;
        if idx != want {
            return Err(CompletionReject::NotOldest {
                expected: want as u16,
            });
        }
        self.tail = self.tail.wrapping_add(1);
        Ok(self.slots.as_ref().get(idx).map_or(0, |s| s.wr_id))
    }

    /// WRs posted and not yet completed.
    pub fn outstanding(&self) -> u32 {
        self.head.wrapping_sub(self.tail)
    }

    /// Posts receive WRs naming raw device addresses, then publishes the
    /// new head in the doorbell record (once per batch).
    ///
    /// Refusals, in the order each WR is checked: the queue is full
    /// ([`RecvErrorKind::QueueFull`]), posting is disabled
    /// ([`RecvErrorKind::TooManySges`] with `max: None`) or the WR has more
    /// than `max_gs` SGEs. The WRs before the refused one are posted and
    /// published.
    ///
    /// # Safety
    /// The device writes into every SGE: each must name registered memory
    /// that stays valid, and is not read or written through Rust
    /// references, until the WR completes.
    pub unsafe fn post_recv_raw(&mut self, wrs: &[RecvWr<'_>]) -> Result<(), RecvError> {
        let head = self.head;
        let max_post = self.cfg.max_post;
        let outstanding = head.wrapping_sub(self.tail);
        // The room is computed once: WR `i` is refused as "queue full"
        // exactly when `outstanding + i >= max_post`, i.e. `i >= room`.
        let room = max_post.saturating_sub(outstanding) as usize;
        let (fit, mut result) = match wrs.get(..room) {
            Some(fit) if fit.len() < wrs.len() => (
                fit,
                Err(RecvError {
                    index: room,
                    kind: RecvErrorKind::QueueFull {
                        outstanding: outstanding.wrapping_add(room as u32),
                        max_post,
                    },
                }),
            ),
            _ => (wrs, Ok(())),
        };
        if self.state_max_gs < 0 {
            // Posting disabled: the first WR with room is refused.
            return match fit.first() {
                Some(wr) => Err(RecvError {
                    index: 0,
                    kind: RecvErrorKind::TooManySges {
                        num: wr.sgl.len(),
                        max: None,
                    },
                }),
                None => result,
            };
        }
        let max_gs = self.state_max_gs as usize;
        let ring = self.ring.as_ptr();
        let shift = self.cfg.wqe_shift;
        let start = (head & self.mask) as usize;
        let slots = self.slots.as_mut();
        // The fast run: single-SGE WRs into consecutive slots from the
        // head up to the ring end, records of exactly mask + 1 slots.
        let done = match slots.get_mut(..=self.mask as usize) {
            Some(exact) if max_gs >= 1 => {
                let run_slots = exact.get_mut(start..).unwrap_or_default();
                // SAFETY: start <= mask: slot `start` begins inside the
                // ring, and `run_slots` has one record per slot from there
                // to the ring end; max_gs >= 1 and 16 * max_gs <= 1 << shift
                // (checked in `new`); the SGEs obey this function's
                // contract.
                unsafe {
                    let wqe = ring.add(start << shift);
                    if max_gs == 1 {
                        post_single_run::<true>(wqe, shift, max_gs, fit, run_slots)
                    } else {
                        post_single_run::<false>(wqe, shift, max_gs, fit, run_slots)
                    }
                }
            }
            _ => 0,
        };
        let filled = if done < fit.len() {
            // Another SGE count, the ring end, or a geometry the fast run
            // does not cover: the rest WR by WR.
            // SAFETY: forwarded from this function's contract.
            unsafe { self.post_checked(fit, done) }
        } else {
            Ok(())
        };
        let nreq = match filled {
            Ok(()) => fit.len(),
            Err(i) => {
                result = Err(RecvError {
                    index: i,
                    kind: RecvErrorKind::TooManySges {
                        num: fit.get(i).map_or(0, |wr| wr.sgl.len()),
                        max: Some(self.cfg.max_gs),
                    },
                });
                i
            }
        };
        if nreq > 0 {
            // nreq <= room <= max_post <= 65536: no truncation.
            self.head = head.wrapping_add(nreq as u32);
            platform::to_device_barrier();
            self.write_dbrec(self.head & 0xffff);
        }
        result
    }

    /// Writes WQEs `head + from, …` for `wrs[from..]` one by one (any SGE
    /// count, the ring wrapping), recording each `wr_id` if the records
    /// have that slot; stops at the first WR with more than `max_gs` SGEs
    /// and returns its index. Does not move the head.
    ///
    /// # Safety
    /// Posting is enabled (`state_max_gs >= 0`); every SGE obeys
    /// [`post_recv_raw`](Self::post_recv_raw)'s contract.
    #[inline(never)]
    unsafe fn post_checked(&mut self, wrs: &[RecvWr<'_>], from: usize) -> Result<(), usize> {
        let max_gs = self.state_max_gs as usize;
        let slots = self.slots.as_mut();
        for (i, wr) in wrs.iter().enumerate().skip(from) {
            let ind = (self.head.wrapping_add(i as u32) & self.mask) as usize;
            // SAFETY: ind <= mask: slot `ind` (max_gs segments, checked in
            // `new`) is inside the ring; `put_any` checks the SGE count
            // before writing.
            let wqe = unsafe { self.ring.as_ptr().add(ind << self.cfg.wqe_shift) };
            // SAFETY: as above.
            if !unsafe { put_any::<true>(wqe, wr.sgl, max_gs) } {
                return Err(i);
            }
            if let Some(slot) = slots.get_mut(ind) {
                slot.wr_id = wr.wr_id;
            }
        }
        Ok(())
    }

    fn write_dbrec(&mut self, v: u32) {
        // SAFETY: word 0 of the QP doorbell record, owned by this queue
        // (borrowed mutably; non-null, 4 bytes, alignment 1 as [u8; 4]); a
        // write-only volatile view: the device reads the word.
        unsafe { devmem::write_only(self.dbrec.as_ptr().cast::<[u8; 4]>()) }.write(v.to_be_bytes())
    }
}

/// Writes one receive WQE per single-SGE WR of `wrs` into consecutive ring
/// slots from `wqe` on, recording each `wr_id` in the matching record of
/// `slots`; stops at the first WR with another SGE count, or when either
/// slice ends, and returns how many WRs were written. `ONE`: `max_gs == 1`,
/// so a written SGE fills the WQE (no terminator). [ref §2.1](crate::reference).
///
/// # Safety
/// `max_gs >= 1`, `16 * max_gs <= 1 << shift`; `wqe` is the start of a
/// ring slot followed by at least `slots.len()` slots of `1 << shift` bytes
/// inside the ring, no Rust reference to them; every SGE obeys
/// [`RecvQueue::post_recv_raw`]'s contract.
#[inline(always)]
unsafe fn post_single_run<const ONE: bool>(
    mut wqe: *mut u8,
    shift: u32,
    max_gs: usize,
    wrs: &[RecvWr<'_>],
    slots: &mut [RqSlot],
) -> usize {
    let term_after_one = !ONE && max_gs > 1;
    let stride = 1usize << shift;
    let mut n = 0usize;
    for (wr, slot) in wrs.iter().zip(slots.iter_mut()) {
        let [s] = wr.sgl else { break };
        if s.length != 0 {
            // SAFETY: segment 0 is inside the WQE (max_gs >= 1), segment 1
            // too when max_gs > 1.
            unsafe {
                put_seg(wqe, seg_words(s.length, s.lkey, s.addr));
                if term_after_one {
                    put_seg(wqe.add(16), TERMINATOR_WORDS);
                }
            }
        } else {
            // Skipped: the terminator comes first (0 < max_gs).
            // SAFETY: segment 0 is inside the WQE (max_gs >= 1).
            unsafe { put_seg(wqe, TERMINATOR_WORDS) };
        }
        slot.wr_id = wr.wr_id;
        // One past the last slot at most: inside or at the end of the ring.
        wqe = wqe.wrapping_add(stride);
        n += 1;
    }
    n
}
