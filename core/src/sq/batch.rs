//! An open batch of send WRs: [`SendBatch`], the one posting engine.
//! Each push checks one WR and builds its WQE in the ring at once; the
//! doorbell is rung once, for everything built, when the batch is
//! [`ring`](SendBatch::ring)ed or dropped (the verbs `ibv_wr_start` /
//! `ibv_wr_*` / `ibv_wr_complete` pattern). Every list post
//! ([`SendQueue::post_send_raw`], [`SendQueue::post_send`],
//! [`SendQueue::post_rdma_raw`]) is a loop over one.

use super::{PostErrorKind, RdmaOp, RdmaWr, SendFlags, SendOp, SendQueue, SendWr, SqSlot, SqSlots};
use crate::platform::Uar;
use crate::sge::Sge;
use crate::wqe::{FmCeSe, Opcode};
use core::marker::PhantomData;
use core::ptr::NonNull;

use super::ring::SqRing;

/// WRs being posted on one send queue, one doorbell for all of them.
///
/// Made by [`SendQueue::batch`]. The queue's counters live in the batch
/// while it is open (so a loop of pushes keeps them in registers) and go
/// back into the queue when it ends: [`ring`](Self::ring) or drop stores
/// them, then rings the doorbell once if anything was built. A refused
/// push writes nothing and leaves the batch open; the WRs built before it
/// stay built. A batch that is leaked ([`core::mem::forget`]) rings
/// nothing and advances nothing: its WQEs lie beyond the producer index,
/// where the device does not read, and the next post overwrites them; the
/// records it wrote (visible through [`SendQueue::slot`] until then) are
/// forgotten when the next batch opens, so no completion can ever retire
/// through them. Record storage that shrank since [`SendQueue::new`] (an
/// `AsMut` that changes its answer) leaves a batch no room: every push is
/// refused as queue full.
///
/// Posting starts only after [`SendQueue::enable`]; queue full, SGE count,
/// inline size, WQE size, opcode and UD checks are the same as every
/// other post path's (this is the path they all take), applied to each
/// push before anything of it is written.
///
/// End a batch with [`ring`](Self::ring): dropping it rings too, but the
/// compiler may make a drop an out-of-line call that keeps the batch in
/// memory (it did in the benchmarks), where `ring` lets a loop of pushes
/// keep it in registers.
///
/// ```
/// use bareverbs::platform::Uar;
/// use bareverbs::sq::{PostErrorKind, RdmaOp, RdmaWr, SendQueue, Sge, SqSlots};
///
/// /// WRITEs `bufs` to consecutive 4 KiB remote blocks, one doorbell, the
/// /// last WR signaled; on a refusal the WRs before it are posted.
/// ///
/// /// # Safety
/// /// Every SGE names registered memory that stays valid until the
/// /// completion of its WR is polled.
/// unsafe fn write_blocks<U: Uar, S: SqSlots>(
///     sq: &mut SendQueue<U, S>,
///     bufs: &[Sge],
///     raddr: u64,
///     rkey: u32,
/// ) -> Result<(), PostErrorKind> {
///     let mut batch = sq.batch();
///     for (i, sge) in bufs.iter().enumerate() {
///         let wr = RdmaWr {
///             wr_id: i as u64,
///             remote_addr: raddr + 4096 * i as u64,
///             rkey,
///             sgl: core::slice::from_ref(sge),
///             signaled: i + 1 == bufs.len(),
///         };
///         // SAFETY: the caller's contract covers every SGE.
///         if let Err(e) = unsafe { batch.push_rdma(RdmaOp::Write, &wr) } {
///             batch.ring();
///             return Err(e);
///         }
///     }
///     batch.ring();
///     Ok(())
/// }
/// ```
#[must_use = "a batch rings its doorbell when it is rung or dropped"]
pub struct SendBatch<'q, U: Uar, S: SqSlots> {
    /// The queue, borrowed mutably for `'q` (`_q`). A raw pointer, not a
    /// `&mut`: moving the batch must not reassert unique access to the
    /// whole queue, which would invalidate `slots` (derived from it).
    /// Fields are reached by place, never through a reference to the
    /// whole queue, until the batch ends.
    q: NonNull<SendQueue<U, S>>,
    _q: PhantomData<&'q mut SendQueue<U, S>>,
    /// A copy of the queue's ring view (base, size, QPN image, mask).
    ring: SqRing,
    /// The records, indexed by `cur & ring.mask` (more than `mask` of
    /// them, checked when the batch opened).
    slots: *mut SqSlot,
    /// `head` when the batch opened.
    seq0: u32,
    /// The WR sequence number of the next WR (`head` once the batch ends).
    seq: u32,
    /// The sequence number no WR of this batch may take: `seq0 + room`.
    seq_end: u32,
    /// The producer index in WQEBBs (`cur_post` once the batch ends).
    cur: u32,
    /// WQEBBs of the last WQE built (it starts at `cur - last_bbs`).
    last_bbs: u32,
    /// The last WQE built was an inline one with a payload (for the
    /// BlueFlame choice of a single-WR doorbell).
    last_inline: bool,
    /// The fence a UMR WQE of this batch left for the WQE after it (0
    /// otherwise: for a fixed operation this folds to a constant).
    next_fence: u8,
    /// The fence an earlier post left for the first WQE of this one
    /// ([ref §1.3](crate::reference)); 0 once a refused WR consumed it. It goes into
    /// the first WQE built when the batch ends, if that WQE has no fence
    /// of its own (so the loop carries no state for it).
    cached: u8,
    /// CQ_UPDATE when every WQE is signaled, else 0.
    sig_bits: u8,
    /// The queue's one-compare limits for the three operations of the
    /// fixed-operation posts (copied at open, so a loop of pushes never
    /// reloads them after a slot-record store).
    quick_write: u8,
    quick_read: u8,
    quick_send: u8,
}

/// The batch's sequence numbers and producer index; formatting never
/// reads through the queue pointer or touches the ring.
impl<U: Uar, S: SqSlots> core::fmt::Debug for SendBatch<'_, U, S> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SendBatch")
            .field("seq0", &self.seq0)
            .field("seq", &self.seq)
            .field("seq_end", &self.seq_end)
            .field("cur", &self.cur)
            .finish_non_exhaustive()
    }
}

impl<U: Uar, S: SqSlots> SendQueue<U, S> {
    /// Opens a batch: WRs pushed into it are checked and built one by one,
    /// and rung with one doorbell when it ends (see [`SendBatch`]).
    #[inline(always)]
    pub fn batch(&mut self) -> SendBatch<'_, U, S> {
        // Records a leaked batch left beyond `head` go before this batch
        // can move `head` over them.
        self.forget_leaked_batch();
        let ring = self.ring;
        let seq0 = self.head;
        let mut room = self
            .cfg
            .max_post
            .saturating_sub(seq0.wrapping_sub(self.tail));
        let cached = self.fm_cache;
        let sig_bits = self.sig_bits;
        let cur = self.cur_post;
        let quick = &self.lim.quick;
        let (quick_write, quick_read, quick_send) = (
            quick[Opcode::RdmaWrite as usize],
            quick[Opcode::RdmaRead as usize],
            quick[Opcode::Send as usize],
        );
        let q = NonNull::from(self);
        // The records must have an entry per WQEBB. Storage that shrank
        // since `new` (an `AsMut` that changes its answer) leaves no room:
        // every push is refused as queue full, which is safe.
        // SAFETY: `q` is the queue borrowed mutably for the batch's life;
        // this `&mut` to its record storage is the last use of it before
        // the pointer into the records is taken from it.
        let all = unsafe { (*q.as_ptr()).slots.as_mut() };
        if all.len() <= ring.mask as usize {
            room = 0;
        }
        let slots = all.as_mut_ptr();

        SendBatch {
            q,
            _q: PhantomData,
            ring,
            slots,
            seq0,
            seq: seq0,
            seq_end: seq0.wrapping_add(room),
            cur,
            last_bbs: 0,
            last_inline: false,
            next_fence: 0,
            cached,
            sig_bits,
            quick_write,
            quick_read,
            quick_send,
        }
    }
}

impl<U: Uar, S: SqSlots> SendBatch<'_, U, S> {
    /// Checks `wr` and builds its WQE; refused, nothing of it is written.
    ///
    /// # Safety
    /// As [`SendQueue::post_send_raw`] for this WR: its SGEs name
    /// registered device memory that stays valid until its completion is
    /// polled, and an inline SGE's `addr` is a CPU address readable now,
    /// with exposed provenance.
    #[inline(always)]
    pub unsafe fn push(&mut self, wr: &SendWr<'_>) -> Result<(), PostErrorKind> {
        // SAFETY: forwarded contract; inline SGE addresses are CPU addresses.
        unsafe {
            self.push_with(wr, &|s: &Sge| {
                core::ptr::with_exposed_provenance::<u8>(s.addr as usize)
            })
        }
    }

    /// [`push`](Self::push) for an RDMA WRITE, RDMA READ or SEND with
    /// pointer SGEs (no inline data): the WR of
    /// [`SendQueue::post_rdma_raw`].
    ///
    /// # Safety
    /// As [`push`](Self::push) for non-inline SGEs.
    #[inline(always)]
    pub unsafe fn push_rdma(&mut self, op: RdmaOp, wr: &RdmaWr<'_>) -> Result<(), PostErrorKind> {
        let sop = op.send_op(wr.remote_addr, wr.rkey);
        // SAFETY: forwarded contract; no WR is inline, so the source
        // translation is never called.
        unsafe { self.push_with(&wr.with_op(sop), &|_: &Sge| core::ptr::null::<u8>()) }
    }

    /// The push every post path takes: the checks in the provider's order
    /// (queue full; SGE count; then, with the cached fence consumed, the
    /// opcode, inline size, WQE size and UD destination), then the slot
    /// record and the WQE. One compare decides that the common shape
    /// passes every check after queue full (the opcode allowed, posting
    /// enabled, SGEs and WQE within their limits); anything else takes
    /// them in order. `cpu_of` gives the CPU address an inline payload is
    /// copied from.
    ///
    /// # Safety
    /// As [`push`](Self::push), with `cpu_of(sge)` readable for
    /// `sge.length` bytes for every inline SGE.
    #[inline(always)]
    pub(super) unsafe fn push_with<F: Fn(&Sge) -> *const u8>(
        &mut self,
        wr: &SendWr<'_>,
        cpu_of: &F,
    ) -> Result<(), PostErrorKind> {
        if self.seq == self.seq_end {
            return Err(self.queue_full());
        }
        // SAFETY: forwarded; the queue has room (`seq != seq_end`).
        unsafe { self.push_fitting(wr, cpu_of) }
    }

    /// [`push_with`](Self::push_with) for a WR the caller knows the queue
    /// has room for.
    ///
    /// # Safety
    /// As `push_with`, and `self.room() > 0`.
    #[inline(always)]
    pub(super) unsafe fn push_fitting<F: Fn(&Sge) -> *const u8>(
        &mut self,
        wr: &SendWr<'_>,
        cpu_of: &F,
    ) -> Result<(), PostErrorKind> {
        // SAFETY: a place of the queue borrowed for the batch; a shared
        // reference to its limits only (nothing writes them while the
        // batch is open).
        let lim = unsafe { &(*self.q.as_ptr()).lim };
        let opcode = wr.op.mlx5_opcode();
        let quick_lim = match wr.op {
            SendOp::Write { .. } => self.quick_write,
            SendOp::Read { .. } => self.quick_read,
            SendOp::Send => self.quick_send,
            _ => lim.quick[(opcode & 63) as usize],
        };
        let quick = !wr.flags.contains(SendFlags::INLINE) && wr.sgl.len() < quick_lim as usize;
        if !quick {
            if wr.sgl.len() >= lim.sge_lim {
                return Err(lim.too_many_sges(wr.sgl.len()));
            }
            // The provider consumes the cached fence once the checks above
            // pass, even if a later check fails ([ref §1.3](crate::reference)).
            if let Err(kind) = lim.check_late(wr, opcode) {
                self.next_fence = 0;
                if self.seq == self.seq0 {
                    self.cached = 0;
                }
                return Err(kind);
            }
        }
        // The fence a UMR of this batch left is consumed here; the one an
        // earlier post cached goes into the first WQE when the batch ends.
        let mine = with_wr_fence(self.sig_bits | self.next_fence, wr.flags);
        self.next_fence = 0;
        if opcode == Opcode::Umr.bits() {
            // LOCAL_INV / BIND_MW: the next WQE is small-fenced.
            self.next_fence = FmCeSe::INITIATOR_SMALL_FENCE.bits();
        }
        let cur = self.cur;
        // The record first (it needs nothing the WQE decides).
        // SAFETY: `cur & mask <= mask`, and `slots` has more than `mask`
        // entries (else the batch has no room and nothing gets here; the
        // batch borrows the queue, so nothing else touches them).
        unsafe {
            self.slots
                .add((cur & self.ring.mask) as usize)
                .write(SqSlot::posted(wr.wr_id, self.seq, cur, wr.op.wr_data()))
        };
        // SAFETY: forwarded from this function's contract; the checks above
        // proved the WQE fits the slot the geometry reserves, and the
        // queue has room for it (the caller's promise).
        let bbs = unsafe { self.ring.build(wr, opcode, mine, cur, cpu_of) };
        self.last_bbs = bbs;
        self.last_inline = wr.flags.contains(SendFlags::INLINE) && !wr.sgl.is_empty();
        self.cur = cur.wrapping_add(bbs);
        self.seq = self.seq.wrapping_add(1);
        Ok(())
    }

    /// The refusal of a push into this batch's full queue.
    #[inline(always)]
    pub(super) fn queue_full(&self) -> PostErrorKind {
        // SAFETY: reads of two fields of the queue borrowed for the batch.
        let (tail, max_post) = unsafe {
            let q = self.q.as_ptr();
            ((*q).tail, (*q).cfg.max_post)
        };
        queue_full(self.seq.wrapping_sub(tail), max_post)
    }

    /// WRs built so far in this batch.
    #[inline(always)]
    pub fn built(&self) -> u32 {
        self.seq.wrapping_sub(self.seq0)
    }

    /// WRs that can still be pushed before the queue is full.
    #[inline(always)]
    pub fn room(&self) -> u32 {
        self.seq_end.wrapping_sub(self.seq)
    }

    /// Ends the batch: rings the doorbell once for every WR built (nothing
    /// when none was). Dropping the batch does the same; ending it here
    /// lets the compiler keep the batch's state in registers.
    #[inline(always)]
    pub fn ring(self) {
        let mut me = core::mem::ManuallyDrop::new(self);
        me.finish();
    }
}

impl<U: Uar, S: SqSlots> SendBatch<'_, U, S> {
    /// Stores the counters back into the queue and rings the doorbell
    /// once for every WR built (nothing when none was). Called once: by
    /// [`ring`](Self::ring) (which keeps the batch from dropping) or by
    /// drop.
    #[inline(always)]
    fn finish(&mut self) {
        // SAFETY: the queue borrowed mutably for the batch; the batch ends
        // here (no push follows), so a reference to the whole queue, which
        // ends the records pointer's use, is sound now.
        let q = unsafe { &mut *self.q.as_ptr() };
        let nreq = self.seq.wrapping_sub(self.seq0);
        if nreq == 0 {
            q.fm_cache = self.cached;
            return;
        }
        if self.cached != 0 {
            // SAFETY: the first WQE of this batch starts at the queue's
            // `cur_post` (not yet advanced); it is not rung yet.
            unsafe { self.ring.or_first_fence(q.cur_post, self.cached) };
        }
        q.fm_cache = self.next_fence;
        q.cur_post = self.cur;
        q.head = self.seq;
        let last_inline = self.last_inline;
        q.ring_doorbell(nreq, self.cur.wrapping_sub(self.last_bbs), || last_inline);
    }
}

impl<U: Uar, S: SqSlots> Drop for SendBatch<'_, U, S> {
    /// Ends the batch as [`ring`](SendBatch::ring) does. (The compiler
    /// may call this out of line, with the batch in memory; `ring` lets a
    /// loop of pushes stay in registers.)
    fn drop(&mut self) {
        self.finish();
    }
}

/// The refusal of a push into a full queue (`outstanding` WRs in flight).
/// Takes plain values, and is inlined: an out-of-line call that might
/// unwind would make the compiler keep the batch in memory (to drop it).
#[cold]
#[inline(always)]
fn queue_full(outstanding: u32, max_post: u32) -> PostErrorKind {
    PostErrorKind::QueueFull {
        outstanding,
        max_post,
    }
}

/// The `fm_ce_se` bits a WR's WQE starts from: `bits`, with the fence
/// replaced by small-and-fence when the WR asks for [`SendFlags::FENCE`].
/// [ref §1.3](crate::reference).
#[inline(always)]
fn with_wr_fence(bits: u8, flags: SendFlags) -> u8 {
    if flags.contains(SendFlags::FENCE) {
        (bits & !FmCeSe::FENCE_FIELD) | FmCeSe::SMALL_AND_FENCE.bits()
    } else {
        bits
    }
}
