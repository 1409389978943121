//! The shared receive queue ([`SharedReceiveQueue`]): its free list linked
//! through each WQE's next segment, retirement by slot and posting
//! ([ref §2.2](crate::reference)).

use core::ptr::NonNull;

use super::config::SrqConfig;
use super::error::{RecvError, RecvErrorKind};
use super::seg::{put_recv_segs, put_seg, seg_words, seg_words_of, TERMINATOR_WORDS};
use super::slot::{SrqSlot, SrqSlots};
use super::wr::RecvWr;
use crate::devmem;
use crate::platform::{self, DmaBuf};
use crate::retire::CompletionReject;

/// An SRQ with its records in a fixed array of `N` slots.
pub type FixedSharedReceiveQueue<const N: usize> = SharedReceiveQueue<[SrqSlot; N]>;

/// A shared receive queue of `slots.len()` WQE slots with a free list linked through
/// each WQE's next segment. [ref §2.2](crate::reference).
///
/// The links are kept in a shadow array (`next`) as well as in the ring,
/// so nothing read back from device-visible memory is trusted.
pub struct SharedReceiveQueue<S: SrqSlots> {
    ring: NonNull<u8>,
    dbrec: NonNull<u8>,
    cfg: SrqConfig,
    head: u32,
    tail: u32,
    waitq_head: i32,
    waitq_tail: i32,
    counter: u16,
    /// `slots.len()` at creation: the ring holds this many WQEs.
    n: u32,
    slots: S,
}

// SAFETY: exclusive owner of its ring and record (contract of `new`).
unsafe impl<S: SrqSlots + Send> Send for SharedReceiveQueue<S> {}

/// The queue's geometry, free-list ends and counter; formatting never
/// reads the ring or the doorbell record (device-visible memory).
impl<S: SrqSlots> core::fmt::Debug for SharedReceiveQueue<S> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SharedReceiveQueue")
            .field("cfg", &self.cfg)
            .field("head", &self.head)
            .field("tail", &self.tail)
            .field("waitq_head", &self.waitq_head)
            .field("waitq_tail", &self.waitq_tail)
            .field("counter", &self.counter)
            .field("slots", &self.n)
            .finish_non_exhaustive()
    }
}

impl<S: SrqSlots> SharedReceiveQueue<S> {
    /// Creates the SRQ and links its free lists: `0 → 1 → … → nwqes-1`
    /// and, with a wait queue, `nwqes → … → n-1` (`n = slots.len()`, a
    /// power of two up to 65536).
    ///
    /// # Safety
    /// `ring` (`n << wqe_shift` bytes) and `dbrec` (4 bytes) must be DMA
    /// memory this queue exclusively owns for its whole life.
    pub unsafe fn new(ring: DmaBuf, dbrec: DmaBuf, cfg: SrqConfig, mut slots: S) -> Option<Self> {
        let n = slots.as_ref().len();
        if !n.is_power_of_two()
            || n > 1 << 16
            || cfg.wqe_shift < 5
            || cfg.wqe_shift > 16
            || ((cfg.max_gs as usize + 1) << 4) > 1 << cfg.wqe_shift
            || cfg.nwqes == 0
            || cfg.nwqes as usize > n
            || ring.len < n << cfg.wqe_shift
            || dbrec.len < 4
        {
            return None;
        }
        let mut q = SharedReceiveQueue {
            ring: ring.cpu,
            dbrec: dbrec.cpu,
            cfg,
            head: 0,
            tail: cfg.nwqes - 1,
            waitq_head: -1,
            waitq_tail: -1,
            counter: 0,
            n: n as u32,
            slots: {
                slots.as_mut().fill(SrqSlot::default());
                slots
            },
        };
        for i in 0..cfg.nwqes - 1 {
            q.link(i, i + 1);
        }
        if cfg.wait_queue && (cfg.nwqes as usize) < n {
            q.waitq_head = cfg.nwqes as i32;
            q.waitq_tail = n as i32 - 1;
            for i in cfg.nwqes..n as u32 - 1 {
                q.link(i, i + 1);
            }
        }
        Some(q)
    }

    fn link(&mut self, from: u32, to: u32) {
        let all = self.slots.as_mut();
        let len = all.len().min(self.n as usize);
        all[..len][from as usize].next = to as u16;
        // SAFETY: `from` < min(slots.len(), n) (the index above would have
        // panicked), so bytes 2..4 of its slot are inside the ring of `n`
        // WQEs.
        unsafe {
            write_link(
                self.ring
                    .as_ptr()
                    .add((from as usize) << self.cfg.wqe_shift),
                to,
            )
        }
    }

    fn is_free(&self, i: u32) -> bool {
        self.slots.as_ref()[i as usize].free
    }

    /// Head of the free list (next slot a post uses).
    pub fn head(&self) -> u32 {
        self.head
    }
    /// Last slot of the free list (never handed to the device).
    pub fn tail(&self) -> u32 {
        self.tail
    }
    /// The 16-bit posted-WQE counter published in the doorbell record.
    pub fn counter(&self) -> u16 {
        self.counter
    }
    /// The geometry.
    pub fn config(&self) -> &SrqConfig {
        &self.cfg
    }
    /// `wr_id` recorded for slot `idx`.
    pub fn wrid(&self, idx: usize) -> Option<u64> {
        self.slots.as_ref().get(idx).map(|s| s.wr_id)
    }
    /// The free-list link of slot `idx`.
    pub fn next_of(&self, idx: usize) -> Option<u16> {
        self.slots.as_ref().get(idx).map(|s| s.next)
    }
    /// Slots completed and not yet re-linked.
    pub fn free_slots(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.slots.as_ref().len() as u32).filter(|&i| self.is_free(i))
    }
    /// Whether slot `idx` holds a posted, not yet completed WQE.
    pub fn is_posted(&self, idx: usize) -> bool {
        self.slots.as_ref().get(idx).is_some_and(|s| s.posted)
    }
    /// Sets the posted-WQE counter (replaying a recorded state).
    ///
    /// # Safety
    /// The counter is what the device reads from the doorbell record to
    /// learn how many WQEs were posted: it must not announce WQEs that
    /// were never written (the next post publishes `c + posted`).
    pub unsafe fn set_counter(&mut self, c: u16) {
        self.counter = c;
    }

    /// Completes slot `slot` (a responder CQE's `wqe_counter` on an SRQ):
    /// returns its `wr_id` and marks the slot free for re-linking. Only a
    /// slot holding a posted WQE can be retired: an out-of-range slot or
    /// one never posted / already completed (bad device bytes) retires
    /// nothing and says why.
    ///
    /// # Safety
    /// Freeing hands the slot (and, to the caller, its buffers) back for
    /// reuse: call it only for a responder CQE the device really wrote for
    /// this SRQ (or when the device no longer executes it).
    pub unsafe fn retire(&mut self, slot: u16) -> Result<u64, CompletionReject> {
        let s = slot as usize;
        let Some(&rec) = self.slots.as_ref().get(s) else {
            return Err(CompletionReject::SlotOutOfRange);
        };
        if !rec.posted {
            return Err(CompletionReject::SlotNotPosted);
        }
        let r = &mut self.slots.as_mut()[s];
        r.posted = false;
        r.free = true;
        Ok(rec.wr_id)
    }

    fn set_next_tail(&mut self, next_tail: u32) {
        self.link(self.tail, next_tail);
        self.tail = next_tail;
        self.slots.as_mut()[next_tail as usize].free = false;
    }

    /// Finds the first run of free slots in `[first, last)`.
    fn contig(&self, first: u32, last: u32) -> (u32, u32) {
        let mut count = 0;
        let mut i = first;
        while i < last {
            if self.is_free(i) {
                count += 1;
            } else if count > 0 {
                break;
            }
            i += 1;
        }
        (i - count, count)
    }

    fn extend(&mut self) -> bool {
        let nw = self.cfg.nwqes;
        let next_tail = (self.tail + 1) % nw;
        if self.is_free(next_tail) {
            self.set_next_tail(next_tail);
            return true;
        }
        let (mut start, mut count) = self.contig(self.head + 1, nw);
        if count == 0 {
            (start, count) = self.contig(0, self.head);
            if count == 0 {
                return false;
            }
        }
        self.link(self.tail, start);
        self.tail = start + count - 1;
        let t = self.tail as usize;
        self.slots.as_mut()[t].free = false;
        for i in start..self.tail {
            self.link(i, i + 1);
            self.slots.as_mut()[i as usize].free = false;
        }
        true
    }

    /// Posts receive WRs naming raw device addresses. Zero-length SGEs are
    /// written as-is (unlike the RQ). [ref §2.2](crate::reference).
    ///
    /// Refusals, in the order each WR is checked: more than `max_gs` SGEs
    /// ([`RecvErrorKind::TooManySges`]), then no free slot even after
    /// re-linking the completed ones ([`RecvErrorKind::QueueFull`]). The
    /// WRs before the refused one are posted and published.
    ///
    /// # Safety
    /// As [`RecvQueue::post_recv_raw`](super::RecvQueue::post_recv_raw).
    pub unsafe fn post_recv_raw(&mut self, wrs: &[RecvWr<'_>]) -> Result<(), RecvError> {
        let mut done = 0usize;
        let result = loop {
            let rest = wrs.get(done..).unwrap_or_default();
            // SAFETY: forwarded from this function's contract.
            done += unsafe {
                if self.cfg.max_gs == 1 {
                    self.post_single_run::<true>(rest)
                } else {
                    self.post_single_run::<false>(rest)
                }
            };
            let Some(wr) = wrs.get(done) else {
                break Ok(());
            };
            // Another SGE count, or no free slot after the tail: this WR
            // by the general rules.
            // SAFETY: forwarded from this function's contract.
            match unsafe { self.post_one(wr) } {
                Ok(()) => done += 1,
                Err(kind) => break Err(RecvError { index: done, kind }),
            }
        };
        if done > 0 {
            // The counter is 16 bits by definition (ref §2.2).
            self.counter = self.counter.wrapping_add(done as u16);
            platform::to_device_barrier();
            // SAFETY: the SRQ doorbell record (4 bytes, non-null,
            // alignment 1 as [u8; 4]) this queue owns and is borrowed
            // mutably; a write-only volatile view: the device reads it.
            unsafe { devmem::write_only(self.dbrec.as_ptr().cast::<[u8; 4]>()) }
                .write((self.counter as u32).to_be_bytes());
        }
        result
    }

    /// Posts one WR by the general rules of [ref §2.2](crate::reference): refused with more
    /// than `max_gs` SGEs, or when the head reached the tail and
    /// [`extend`](Self::extend) finds no free slot; otherwise written at
    /// the head, which follows its link.
    ///
    /// # Safety
    /// As [`post_recv_raw`](Self::post_recv_raw).
    #[inline(never)]
    unsafe fn post_one(&mut self, wr: &RecvWr<'_>) -> Result<(), RecvErrorKind> {
        let max_gs = self.cfg.max_gs;
        if wr.sgl.len() > max_gs as usize {
            return Err(RecvErrorKind::TooManySges {
                num: wr.sgl.len(),
                max: Some(max_gs),
            });
        }
        if self.head == self.tail && !self.extend() {
            return Err(RecvErrorKind::QueueFull {
                outstanding: self.cfg.nwqes - 1,
                max_post: self.cfg.nwqes - 1,
            });
        }
        let slot = self.head as usize;
        let all = self.slots.as_mut();
        let len = all.len().min(self.n as usize);
        let rec = &mut all[..len][slot];
        rec.wr_id = wr.wr_id;
        rec.posted = true;
        self.head = rec.next as u32;
        // SAFETY: slot < n (it indexed the first n records), so its WQE is
        // inside the ring; after the 16-byte next segment it holds max_gs
        // data segments ((max_gs + 1) * 16 <= WQE size, checked in `new`)
        // and sgl.len() <= max_gs (checked above).
        unsafe {
            put_recv_segs::<false>(
                self.ring.as_ptr().add((slot << self.cfg.wqe_shift) + 16),
                wr.sgl,
                max_gs as usize,
            )
        };
        Ok(())
    }

    /// Posts the single-SGE WRs at the front of `wrs` at the free-list
    /// head, following the links, and returns how many; stops at a WR with
    /// another SGE count, or when the head reaches the tail and the slot
    /// after the tail is not free (for [`extend`](Self::extend) to
    /// search). When that slot is free it becomes the tail here, with the
    /// same link written as `extend`'s first step would ([ref §2.2](crate::reference)).
    /// Posts nothing unless `max_gs >= 1` and the records have the `n`
    /// slots `new` saw. `ONE`: `max_gs == 1` (no terminator after the SGE).
    ///
    /// Indices are taken modulo `n` (a power of two), which changes none:
    /// every link is below `nwqes <= n` (only `new`, `extend` and this
    /// function write links, all below `nwqes`), so are the head and tail.
    ///
    /// # Safety
    /// As [`post_recv_raw`](Self::post_recv_raw).
    #[inline(always)]
    unsafe fn post_single_run<const ONE: bool>(&mut self, wrs: &[RecvWr<'_>]) -> usize {
        let ring = self.ring.as_ptr();
        let shift = self.cfg.wqe_shift;
        let nw = self.cfg.nwqes;
        let max_gs = self.cfg.max_gs;
        let n = self.n as usize;
        let mask = self.n.wrapping_sub(1);
        let Some(slots) = self.slots.as_mut().get_mut(..n) else {
            return 0;
        };
        // n >= 1 (checked in `new`; told to the compiler so that
        // `x & mask < n` needs no bounds check).
        if max_gs == 0 || n == 0 {
            return 0;
        }
        let mut head = self.head;
        let mut tail = self.tail;
        let mut posted = 0usize;
        let stride = 1usize << shift;
        while let Some(rest) = wrs.get(posted..).filter(|r| !r.is_empty()) {
            if head == tail && tail + 1 < nw && rest.len() > 1 {
                // Chain extension (`extend`'s first step, WR after WR):
                // the WR goes to the tail slot t, and the free slot t + 1
                // becomes the tail, linked from t; a run stays below
                // nw − 1 (no wrap, nw ≤ n). For one WR the step below
                // (less set-up) does the same.
                let t0 = tail as usize;
                let Some((mut cur, after)) = slots
                    .get_mut(t0..nw as usize)
                    .and_then(|r| r.split_first_mut())
                else {
                    break;
                };
                // SAFETY: t0 < n: slot t0's WQE is inside the ring.
                let mut wqe = unsafe { ring.add(t0 << shift) };
                let mut nt = tail;
                let mut stopped = false;
                for (wr, next) in rest.iter().zip(after.iter_mut()) {
                    // One SGE: within max_gs (>= 1); the slot after the
                    // tail free (else `extend` searches).
                    let ([s], true) = (wr.sgl, next.free) else {
                        stopped = true;
                        break;
                    };
                    next.free = false;
                    nt += 1;
                    // `cur` (slot nt − 1) is the tail: not free, not
                    // posted (every path that makes a slot the tail clears
                    // its `free`, and a posted slot is never the tail).
                    *cur = SrqSlot {
                        wr_id: wr.wr_id,
                        next: nt as u16,
                        free: false,
                        posted: true,
                    };
                    // SAFETY: wqe is slot nt − 1's WQE (nt − 1 < n), inside
                    // the ring: its bytes 2..4, and after the 16-byte next
                    // segment max_gs >= 1 data segments ((max_gs + 1) * 16
                    // <= WQE size, checked in `new`), the terminator's too
                    // when max_gs > 1.
                    unsafe {
                        write_link(wqe, nt);
                        let seg = wqe.add(16);
                        put_seg(seg, seg_words_of(s));
                        if !ONE && max_gs > 1 {
                            put_seg(seg.add(16), TERMINATOR_WORDS);
                        }
                    }
                    // At most one past slot nw − 1 ≤ n − 1: inside or at
                    // the end of the ring.
                    wqe = wqe.wrapping_add(stride);
                    cur = next;
                }
                posted += (nt - tail) as usize;
                tail = nt;
                head = nt;
                if stopped {
                    break;
                }
                continue;
            }
            let wr = &rest[0];
            // One SGE: within max_gs (>= 1).
            let [s] = wr.sgl else { break };
            let slot = (head & mask) as usize;
            if head == tail {
                let next_tail = tail + 1;
                // `(tail + 1) % nw` without the division (tail < nw).
                let next_tail = if next_tail < nw {
                    next_tail
                } else {
                    next_tail % nw
                };
                let next = &mut slots[(next_tail & mask) as usize];
                if !next.free {
                    break;
                }
                // `extend`'s first step: the free slot after the tail
                // becomes the tail, linked from the old one (this WR's).
                next.free = false;
                let rec = &mut slots[slot];
                rec.next = next_tail as u16;
                rec.wr_id = wr.wr_id;
                rec.posted = true;
                // SAFETY: slot < n: bytes 2..4 of its WQE are inside the
                // ring.
                unsafe { write_link(ring.add(slot << shift), next_tail) };
                tail = next_tail;
                head = next_tail;
            } else {
                let rec = &mut slots[slot];
                rec.wr_id = wr.wr_id;
                rec.posted = true;
                head = rec.next as u32;
            }
            // SAFETY: slot < n, so its WQE is inside the ring; after the
            // 16-byte next segment it holds max_gs >= 1 data segments
            // ((max_gs + 1) * 16 <= WQE size, checked in `new`), the
            // terminator's too when max_gs > 1.
            unsafe {
                let seg = ring.add((slot << shift) + 16);
                put_seg(seg, seg_words(s.length, s.lkey, s.addr));
                if !ONE && max_gs > 1 {
                    put_seg(seg.add(16), TERMINATOR_WORDS);
                }
            }
            posted += 1;
        }
        self.head = head;
        self.tail = tail;
        posted
    }
}

/// Stores the free-list link `to` in bytes 2..4 of the SRQ WQE at `wqe`
/// (the next segment's `next_wqe_index`, big-endian). [ref §2.2](crate::reference).
///
/// # Safety
/// `wqe` must be valid for writes of 4 bytes, with no Rust reference to
/// them.
#[inline(always)]
unsafe fn write_link(wqe: *mut u8, to: u32) {
    // SAFETY: bytes 2..4 of the caller's 4 writable bytes; the store is
    // unaligned, so no alignment is assumed.
    unsafe {
        wqe.add(2)
            .cast::<u16>()
            .write_unaligned((to as u16).to_be())
    }
}
