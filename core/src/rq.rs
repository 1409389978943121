//! Receive queue and shared receive queue posting ([ref §2](crate::reference)).
//!
//! Receive queues have no MMIO doorbell: the doorbell record alone tells
//! the device how many receive WQEs were posted ([ref §4.1](crate::reference)).

use crate::platform::{self, DmaBuf};
use crate::retire::CompletionReject;
use crate::sge::Sge;
use core::fmt;
use core::ptr::NonNull;

/// A receive work request.
#[derive(Clone, Copy, Debug)]
pub struct RecvWr<'a> {
    /// Caller's identifier, returned in the completion.
    pub wr_id: u64,
    /// Where incoming data is scattered.
    pub sgl: &'a [Sge],
}

/// Why a receive WR was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecvErrorKind {
    /// The queue is full (`outstanding` of `max_post` WRs posted).
    QueueFull {
        /// WRs outstanding including this batch.
        outstanding: u32,
        /// Capacity.
        max_post: u32,
    },
    /// More SGEs than the WQE stride holds (or posting disabled in this QP
    /// state, when `max` is `None`).
    TooManySges {
        /// SGEs in the WR.
        num: usize,
        /// Limit, or `None` while the QP state forbids posting.
        max: Option<u32>,
    },
    /// An SGE is outside its registered region (safe API).
    SgeOutOfBounds {
        /// Index of the SGE.
        sge: usize,
    },
}

impl RecvErrorKind {
    /// The errno the vendor's provider returns for the same failure.
    pub const fn errno(&self) -> i32 {
        match self {
            RecvErrorKind::QueueFull { .. } => crate::errno::ENOMEM,
            _ => crate::errno::EINVAL,
        }
    }
}

/// A refused receive WR; WRs before `index` were posted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecvError {
    /// Index of the first WR not posted.
    pub index: usize,
    /// Why.
    pub kind: RecvErrorKind,
}

impl fmt::Display for RecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "receive WR {} not posted: ", self.index)?;
        match self.kind {
            RecvErrorKind::QueueFull {
                outstanding,
                max_post,
            } => {
                write!(
                    f,
                    "queue full ({outstanding} outstanding, capacity {max_post})"
                )
            }
            RecvErrorKind::TooManySges { num, max: Some(m) } => {
                write!(f, "{num} SGEs, the queue allows {m}")
            }
            RecvErrorKind::TooManySges { max: None, .. } => {
                write!(
                    f,
                    "the QP state does not allow receive posting (move it to INIT)"
                )
            }
            RecvErrorKind::SgeOutOfBounds { sge } => {
                write!(f, "SGE {sge} is outside its registered memory region")
            }
        }
    }
}

/// Geometry of a receive queue (from sizing). [ref §3.5](crate::reference).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RqConfig {
    /// log2 of the WQE stride in bytes (≥ 4).
    pub wqe_shift: u32,
    /// Data segments per WQE (`max_gs`).
    pub max_gs: u32,
    /// WRs that may be outstanding (`max_post`).
    pub max_post: u32,
}

/// What a receive queue remembers about one ring slot: the `wr_id` of the
/// receive WQE posted there.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RqSlot {
    wr_id: u64,
}

/// Storage for a receive queue's per-WQE records: its length is the ring
/// size in WQEs (a power of two up to 65536). A fixed array
/// (`[RqSlot; N]`), a slice, or any owner of one (`Box<[RqSlot]>`).
pub trait RqSlots: AsRef<[RqSlot]> + AsMut<[RqSlot]> {}
impl<T: AsRef<[RqSlot]> + AsMut<[RqSlot]> + ?Sized> RqSlots for T {}

/// A receive queue with its records in a fixed array of `N` WQEs.
pub type FixedRecvQueue<const N: usize> = RecvQueue<[RqSlot; N]>;

/// What a shared receive queue remembers about one WQE slot: its `wr_id`,
/// its free-list link (a shadow of the ring's next segment, so nothing read
/// back from device-visible memory is trusted), whether it is free for
/// re-linking and whether it holds a posted WQE.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SrqSlot {
    wr_id: u64,
    next: u16,
    free: bool,
    posted: bool,
}

/// Storage for an SRQ's per-slot records: its length is the number of WQE
/// slots (a power of two up to 65536). A fixed array (`[SrqSlot; N]`), a
/// slice, or any owner of one.
pub trait SrqSlots: AsRef<[SrqSlot]> + AsMut<[SrqSlot]> {}
impl<T: AsRef<[SrqSlot]> + AsMut<[SrqSlot]> + ?Sized> SrqSlots for T {}

/// An SRQ with its records in a fixed array of `N` slots.
pub type FixedSharedReceiveQueue<const N: usize> = SharedReceiveQueue<[SrqSlot; N]>;

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
        // SAFETY: word 0 of the QP doorbell record, owned by this queue.
        unsafe { core::ptr::write_volatile(self.dbrec.as_ptr().cast::<[u8; 4]>(), v.to_be_bytes()) }
    }
}

/// The 16 bytes of a data segment `{byte_count, lkey, addr}`
/// ([ref §1.5](crate::reference)) as two native words whose in-memory bytes are the big-endian
/// fields: the same bytes as [`DataSeg::new`](crate::wqe::DataSeg::new), stored with two 8-byte
/// stores.
#[inline(always)]
const fn seg_words(byte_count: u32, lkey: u32, addr: u64) -> [u64; 2] {
    [
        (((byte_count as u64) << 32) | lkey as u64).to_be(),
        addr.to_be(),
    ]
}

/// [`DataSeg::TERMINATOR`](crate::wqe::DataSeg::TERMINATOR) as [`seg_words`].
const TERMINATOR_WORDS: [u64; 2] = seg_words(0, crate::wqe::INVALID_LKEY, 0);

/// Stores one data segment.
///
/// # Safety
/// `dst` must be valid for writes of 16 bytes (no alignment needed), with
/// no Rust reference to them.
#[inline(always)]
unsafe fn put_seg(dst: *mut u8, w: [u64; 2]) {
    // SAFETY: the caller guarantees 16 writable bytes at `dst`; the stores
    // are unaligned, so no alignment is assumed.
    unsafe {
        dst.cast::<u64>().write_unaligned(w[0]);
        dst.add(8).cast::<u64>().write_unaligned(w[1]);
    }
}

/// Writes the data segments of one receive WR at `wqe`: its SGEs (those
/// of length 0 skipped when `SKIP_ZERO`), then the terminator when fewer
/// than `max_gs` segments were written. [ref §2.1, §2.2](crate::reference).
///
/// # Safety
/// `sgl.len() <= max_gs` and `wqe` valid for writes of `16 * max_gs` bytes
/// with no Rust reference to them.
#[inline(always)]
unsafe fn put_recv_segs<const SKIP_ZERO: bool>(wqe: *mut u8, sgl: &[Sge], max_gs: usize) {
    let mut j = 0usize;
    if let [s] = sgl {
        // The common single-SGE receive, without the loop.
        if !SKIP_ZERO || s.length != 0 {
            // SAFETY: 1 = sgl.len() <= max_gs: segment 0 is inside `wqe`.
            unsafe { put_seg(wqe, seg_words(s.length, s.lkey, s.addr)) };
            j = 1;
        }
    } else {
        for s in sgl {
            if SKIP_ZERO && s.length == 0 {
                continue;
            }
            // SAFETY: j counts written segments, j < sgl.len() <= max_gs:
            // segment j is inside `wqe`.
            unsafe { put_seg(wqe.add(j << 4), seg_words(s.length, s.lkey, s.addr)) };
            j += 1;
        }
    }
    if j < max_gs {
        // SAFETY: j < max_gs: segment j is inside `wqe`.
        unsafe { put_seg(wqe.add(j << 4), TERMINATOR_WORDS) };
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

/// [`put_recv_segs`] for any SGE count, out of the hot loop: `false`
/// (nothing written) when `sgl.len() > max_gs`.
///
/// # Safety
/// `wqe` valid for writes of `16 * max_gs` bytes with no Rust reference to
/// them.
#[cold]
#[inline(never)]
unsafe fn put_any<const SKIP_ZERO: bool>(wqe: *mut u8, sgl: &[Sge], max_gs: usize) -> bool {
    if sgl.len() > max_gs {
        return false;
    }
    // SAFETY: sgl.len() <= max_gs (checked above), the caller's WQE holds
    // max_gs segments.
    unsafe { put_recv_segs::<SKIP_ZERO>(wqe, sgl, max_gs) };
    true
}

/// Geometry of a shared receive queue (from sizing). [ref §3.8](crate::reference).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SrqConfig {
    /// log2 of the WQE size in bytes (≥ 5).
    pub wqe_shift: u32,
    /// Data segments per WQE.
    pub max_gs: u32,
    /// Slots in the main free list (`tail + 1` at creation).
    pub nwqes: u32,
    /// Whether slots `nwqes..N` form a wait queue.
    pub wait_queue: bool,
}

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
    /// As [`RecvQueue::post_recv_raw`].
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
            // SAFETY: the SRQ doorbell record (4 bytes) this queue owns.
            unsafe {
                core::ptr::write_volatile(
                    self.dbrec.as_ptr().cast::<[u8; 4]>(),
                    (self.counter as u32).to_be_bytes(),
                )
            }
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
        for wr in wrs {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wqe::{DataSeg, Segment};

    fn buf<T>(a: &mut [T]) -> DmaBuf {
        DmaBuf {
            cpu: NonNull::new(a.as_mut_ptr().cast::<u8>()).unwrap(),
            iova: 0x1000,
            len: core::mem::size_of_val(a),
        }
    }

    fn seg(ring: &[u64], idx: usize) -> [u8; 16] {
        let mut out = [0u8; 16];
        out[..8].copy_from_slice(&ring[idx * 2].to_ne_bytes());
        out[8..].copy_from_slice(&ring[idx * 2 + 1].to_ne_bytes());
        out
    }

    #[test]
    fn rq_terminator_skip_and_overflow() {
        let mut ring = [0u64; 4 * 2 * 2];
        let mut db = [0u64; 1];
        let cfg = RqConfig {
            wqe_shift: 5,
            max_gs: 2,
            max_post: 4,
        };
        // SAFETY: test memory outliving the queue, touched only through it
        // until the queue is dropped.
        let mut rq =
            unsafe { RecvQueue::new(buf(&mut ring), buf(&mut db), cfg, [RqSlot::default(); 4]) }
                .unwrap();
        let s = [
            Sge {
                addr: 0x10,
                length: 0,
                lkey: 1,
            },
            Sge {
                addr: 0x20,
                length: 8,
                lkey: 2,
            },
        ];
        // Posting before INIT is refused.
        // SAFETY: the SGEs are never dereferenced by this memory-only test.
        let e = unsafe { rq.post_recv_raw(&[RecvWr { wr_id: 1, sgl: &s }]) }.unwrap_err();
        assert!(matches!(
            e.kind,
            RecvErrorKind::TooManySges { max: None, .. }
        ));
        rq.enable();
        let wrs = [RecvWr { wr_id: 1, sgl: &s }; 5];
        // SAFETY: as above.
        let e = unsafe { rq.post_recv_raw(&wrs) }.unwrap_err();
        assert_eq!((e.index, e.kind.errno()), (4, 12));
        let _ = rq;
        // ref §2.1: the zero-length SGE is skipped, the terminator follows.
        assert_eq!(seg(&ring, 0), DataSeg::new(8, 2, 0x20).to_bytes::<16>());
        assert_eq!(seg(&ring, 1), DataSeg::TERMINATOR.to_bytes::<16>());
        assert_eq!(db[0].to_ne_bytes()[..4], 4u32.to_be_bytes());
    }

    #[test]
    fn srq_free_list_relinks_completed_slots() {
        let mut ring = [0u64; 8 * 4];
        let mut db = [0u64; 1];
        let cfg = SrqConfig {
            wqe_shift: 5,
            max_gs: 1,
            nwqes: 4,
            wait_queue: true,
        };
        // SAFETY: as above.
        let mut srq = unsafe {
            SharedReceiveQueue::new(buf(&mut ring), buf(&mut db), cfg, [SrqSlot::default(); 8])
        }
        .unwrap();
        let s = [Sge {
            addr: 0x20,
            length: 8,
            lkey: 2,
        }];
        let wr = [RecvWr { wr_id: 7, sgl: &s }];
        for _ in 0..3 {
            // SAFETY: as above.
            unsafe { srq.post_recv_raw(&wr) }.unwrap();
        }
        // head == tail: full (tail slot never handed out). ref §2.2.
        // SAFETY: as above.
        let e = unsafe { srq.post_recv_raw(&wr) }.unwrap_err();
        assert_eq!(e.kind.errno(), 12);
        // SAFETY: memory-only test: no device executes the ring.
        assert_eq!(unsafe { srq.retire(0) }, Ok(7));
        assert_eq!(
            // SAFETY: as above.
            unsafe { srq.retire(9) },
            Err(CompletionReject::SlotOutOfRange),
            "out-of-range slot from bad device bytes"
        );
        // SAFETY: as above.
        unsafe { srq.post_recv_raw(&wr) }.unwrap();
        assert_eq!((srq.head(), srq.tail(), srq.counter()), (0, 0, 4));
    }
}

/// Receive WQE bytes against a model built from the rules of [ref §2.1](crate::reference) and
/// §2.2 alone (not from the queue's code): random geometries, random SGE
/// lists (zero-length SGEs, too many SGEs, single-SGE runs crossing the
/// ring end), random batches and completions.
#[cfg(test)]
mod model_tests {
    use super::*;
    use bareverbs_sim::rng::Rng;

    fn rounds() -> u64 {
        if cfg!(miri) {
            6
        } else {
            400
        }
    }

    /// A random SGE list of up to `max_len` entries; a third of the lengths
    /// are 0; mostly single SGEs.
    fn sgl(r: &mut Rng, max_len: usize) -> Vec<Sge> {
        let len = if r.below(2) == 0 {
            1
        } else {
            r.below(max_len as u64 + 1) as usize
        };
        (0..len)
            .map(|_| Sge {
                addr: r.next_u64(),
                length: if r.below(3) == 0 {
                    0
                } else {
                    r.next_u64() as u32
                },
                lkey: r.next_u64() as u32,
            })
            .collect()
    }

    /// [ref §1.5](crate::reference): byte_count, lkey, addr, all big-endian.
    fn seg_bytes(len: u32, lkey: u32, addr: u64) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[..4].copy_from_slice(&len.to_be_bytes());
        b[4..8].copy_from_slice(&lkey.to_be_bytes());
        b[8..].copy_from_slice(&addr.to_be_bytes());
        b
    }
    const TERM: [u8; 16] = [0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0];

    fn read(p: *const u8, len: usize) -> Vec<u8> {
        // SAFETY: `p` is the test's own allocation of `len` bytes; the
        // queue writes it only inside its calls, none runs concurrently.
        (0..len).map(|i| unsafe { p.add(i).read() }).collect()
    }

    fn dma(p: *mut u64, words: usize) -> DmaBuf {
        DmaBuf {
            cpu: NonNull::new(p.cast::<u8>()).unwrap(),
            iova: 0x1000,
            len: words * 8,
        }
    }

    #[test]
    fn rq_bytes_match_facts_model() {
        let mut r = Rng::new(0x9e37_79b9_7f4a_7c15);
        for _ in 0..rounds() {
            let n = 1usize << r.below(5);
            let shift = 4 + r.below(3) as u32;
            let stride = 1usize << shift;
            let max_gs = r.below(stride as u64 / 16 + 1) as u32;
            let max_post = 1 + r.below(n as u64) as u32;
            let mut ring = vec![0u64; n * stride / 8];
            let mut db = vec![0u64; 1];
            let (rp, dp) = (ring.as_mut_ptr(), db.as_mut_ptr());
            let cfg = RqConfig {
                wqe_shift: shift,
                max_gs,
                max_post,
            };
            // SAFETY: test memory outliving the queue, read only through
            // the same raw pointers between the queue's calls.
            let mut rq = unsafe {
                RecvQueue::new(
                    dma(rp, ring.len()),
                    dma(dp, 1),
                    cfg,
                    vec![RqSlot::default(); n],
                )
            }
            .unwrap();
            let mut exp = vec![0u8; n * stride];
            let mut wrid = vec![0u64; n];
            let (mut head, mut tail, mut dbrec) = (0u32, 0u32, [0u8; 4]);
            let mut enabled = false;
            for step in 0..12 {
                if step > 0 && !enabled {
                    rq.enable();
                    enabled = true;
                }
                let lists: Vec<Vec<Sge>> = (0..r.below(max_post as u64 + 3))
                    .map(|_| sgl(&mut r, max_gs as usize + 1))
                    .collect();
                let wrs: Vec<RecvWr> = lists
                    .iter()
                    .map(|l| RecvWr {
                        wr_id: r.next_u64(),
                        sgl: l,
                    })
                    .collect();
                // The model (ref §2.1).
                let mut want = Ok(());
                let mut nreq = 0u32;
                for (i, wr) in wrs.iter().enumerate() {
                    let outstanding = head - tail + nreq;
                    if outstanding >= max_post {
                        want = Err(RecvError {
                            index: i,
                            kind: RecvErrorKind::QueueFull {
                                outstanding,
                                max_post,
                            },
                        });
                        break;
                    }
                    let lim = if enabled { max_gs as i64 } else { -1 };
                    if wr.sgl.len() as i64 > lim {
                        want = Err(RecvError {
                            index: i,
                            kind: RecvErrorKind::TooManySges {
                                num: wr.sgl.len(),
                                max: enabled.then_some(max_gs),
                            },
                        });
                        break;
                    }
                    let ind = ((head + nreq) as usize) & (n - 1);
                    let mut j = 0;
                    for s in wr.sgl.iter().filter(|s| s.length != 0) {
                        let o = ind * stride + j * 16;
                        exp[o..o + 16].copy_from_slice(&seg_bytes(s.length, s.lkey, s.addr));
                        j += 1;
                    }
                    if j < max_gs as usize {
                        let o = ind * stride + j * 16;
                        exp[o..o + 16].copy_from_slice(&TERM);
                    }
                    wrid[ind] = wr.wr_id;
                    nreq += 1;
                }
                if nreq > 0 {
                    head += nreq;
                    dbrec = (head & 0xffff).to_be_bytes();
                }
                // SAFETY: the SGEs are never dereferenced (memory-only ring).
                let got = unsafe { rq.post_recv_raw(&wrs) };
                assert_eq!(got, want);
                assert_eq!(read(rp.cast(), exp.len()), exp, "ring bytes");
                assert_eq!(read(dp.cast(), 4), dbrec, "doorbell record");
                assert_eq!(rq.head(), head);
                for (i, w) in wrid.iter().enumerate() {
                    assert_eq!(rq.wrid(i), Some(*w));
                }
                // Completions of the oldest WRs, in order.
                for _ in 0..r.below((head - tail) as u64 + 1) {
                    // SAFETY: memory-only ring, never executed by a device.
                    let id = unsafe { rq.retire(tail as u16) };
                    assert_eq!(id, Ok(wrid[tail as usize & (n - 1)]));
                    tail += 1;
                }
            }
            drop(rq);
        }
    }

    #[test]
    fn srq_bytes_match_facts_model() {
        let mut r = Rng::new(0x2545_f491_4f6c_dd1d);
        for _ in 0..rounds() {
            let n = 2usize << r.below(4);
            let shift = 5 + r.below(2) as u32;
            let stride = 1usize << shift;
            let max_gs = r.below(stride as u64 / 16) as u32;
            let nw = 1 + r.below(n as u64) as u32;
            let wait_queue = r.below(2) == 0;
            let mut ring = vec![0u64; n * stride / 8];
            let mut db = vec![0u64; 1];
            let (rp, dp) = (ring.as_mut_ptr(), db.as_mut_ptr());
            let cfg = SrqConfig {
                wqe_shift: shift,
                max_gs,
                nwqes: nw,
                wait_queue,
            };
            // SAFETY: as in the RQ test.
            let mut srq = unsafe {
                SharedReceiveQueue::new(
                    dma(rp, ring.len()),
                    dma(dp, 1),
                    cfg,
                    vec![SrqSlot::default(); n],
                )
            }
            .unwrap();
            // The model (ref §2.2): links 0 → 1 → … → nw−1 (and the wait
            // queue nw → … → n−1), head 0, tail nw−1.
            let mut exp = vec![0u8; n * stride];
            let mut next = vec![0u32; n];
            let mut free = vec![false; n];
            let mut posted = vec![false; n];
            let mut wrid = vec![0u64; n];
            let link = |exp: &mut Vec<u8>, next: &mut Vec<u32>, from: u32, to: u32| {
                next[from as usize] = to;
                let o = from as usize * stride + 2;
                exp[o..o + 2].copy_from_slice(&(to as u16).to_be_bytes());
            };
            for i in 0..nw - 1 {
                link(&mut exp, &mut next, i, i + 1);
            }
            if wait_queue {
                for i in nw..(n as u32).saturating_sub(1) {
                    link(&mut exp, &mut next, i, i + 1);
                }
            }
            let (mut head, mut tail, mut counter) = (0u32, nw - 1, 0u16);
            let mut dbrec = [0u8; 4];
            for _ in 0..12 {
                let lists: Vec<Vec<Sge>> = (0..r.below(nw as u64 + 2))
                    .map(|_| sgl(&mut r, max_gs as usize + 1))
                    .collect();
                let wrs: Vec<RecvWr> = lists
                    .iter()
                    .map(|l| RecvWr {
                        wr_id: r.next_u64(),
                        sgl: l,
                    })
                    .collect();
                let mut want = Ok(());
                let mut nreq = 0u16;
                for (i, wr) in wrs.iter().enumerate() {
                    if wr.sgl.len() > max_gs as usize {
                        want = Err(RecvError {
                            index: i,
                            kind: RecvErrorKind::TooManySges {
                                num: wr.sgl.len(),
                                max: Some(max_gs),
                            },
                        });
                        break;
                    }
                    if head == tail {
                        // Extend: the slot after the tail if free, else the
                        // first run of free slots after the head, then
                        // before it; none: full.
                        let nt = (tail + 1) % nw;
                        if free[nt as usize] {
                            link(&mut exp, &mut next, tail, nt);
                            tail = nt;
                            free[nt as usize] = false;
                        } else {
                            let run = |lo: u32, hi: u32| -> Option<(u32, u32)> {
                                let s = (lo..hi).find(|&i| free[i as usize])?;
                                let e = (s..hi).find(|&i| !free[i as usize]).unwrap_or(hi);
                                Some((s, e))
                            };
                            let Some((s, e)) = run(head + 1, nw).or_else(|| run(0, head)) else {
                                want = Err(RecvError {
                                    index: i,
                                    kind: RecvErrorKind::QueueFull {
                                        outstanding: nw - 1,
                                        max_post: nw - 1,
                                    },
                                });
                                break;
                            };
                            link(&mut exp, &mut next, tail, s);
                            for k in s..e - 1 {
                                link(&mut exp, &mut next, k, k + 1);
                            }
                            for k in s..e {
                                free[k as usize] = false;
                            }
                            tail = e - 1;
                        }
                    }
                    let slot = head as usize;
                    wrid[slot] = wr.wr_id;
                    posted[slot] = true;
                    head = next[slot];
                    let mut j = 0;
                    for s in wr.sgl {
                        let o = slot * stride + 16 + j * 16;
                        exp[o..o + 16].copy_from_slice(&seg_bytes(s.length, s.lkey, s.addr));
                        j += 1;
                    }
                    if j < max_gs as usize {
                        let o = slot * stride + 16 + j * 16;
                        exp[o..o + 16].copy_from_slice(&TERM);
                    }
                    nreq += 1;
                }
                if nreq > 0 {
                    counter = counter.wrapping_add(nreq);
                    dbrec = (counter as u32).to_be_bytes();
                }
                // SAFETY: the SGEs are never dereferenced (memory-only ring).
                let got = unsafe { srq.post_recv_raw(&wrs) };
                assert_eq!(got, want);
                assert_eq!(read(rp.cast(), exp.len()), exp, "ring bytes");
                assert_eq!(read(dp.cast(), 4), dbrec, "doorbell record");
                assert_eq!(
                    (srq.head(), srq.tail(), srq.counter()),
                    (head, tail, counter)
                );
                for i in 0..n {
                    assert_eq!(srq.wrid(i), Some(wrid[i]));
                    assert_eq!(srq.is_posted(i), posted[i]);
                }
                let free_now: Vec<u32> = (0..n as u32).filter(|&i| free[i as usize]).collect();
                assert_eq!(srq.free_slots().collect::<Vec<_>>(), free_now);
                // Completions in any order; a slot not posted is refused.
                for _ in 0..r.below(nw as u64 + 1) {
                    let slot = r.below(n as u64) as u16;
                    // SAFETY: memory-only ring, never executed by a device.
                    let got = unsafe { srq.retire(slot) };
                    if posted[slot as usize] {
                        assert_eq!(got, Ok(wrid[slot as usize]));
                        posted[slot as usize] = false;
                        free[slot as usize] = true;
                    } else {
                        assert_eq!(got, Err(CompletionReject::SlotNotPosted));
                    }
                }
            }
            drop(srq);
        }
    }
}
