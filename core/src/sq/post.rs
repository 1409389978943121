//! The posting path: the three entry points (raw, checked against
//! memory regions, the fixed-operation hot path), the one posting engine
//! behind them and the refusals it reports.

use super::{
    PostError, PostErrorKind, RdmaOp, RdmaWr, SendFlags, SendOp, SendQueue, SendWr, SqSlot, SqSlots,
};
use crate::platform::Uar;
use crate::sge::Sge;
use crate::wqe::{FmCeSe, Opcode, ATOMIC_SIZE};

impl<U: Uar, S: SqSlots> SendQueue<U, S> {
    /// Posts `wrs` whose SGEs name raw device addresses, writing one WQE
    /// per WR and ringing one doorbell for the batch.
    ///
    /// On error, WRs before the failing index are posted and rung; the
    /// failing WR and those after it are not, and nothing of them is
    /// written to the ring.
    ///
    /// # Safety
    /// The device will read (SEND/WRITE) or write (READ/atomic) every SGE:
    /// each must name memory registered under its lkey that stays valid,
    /// and unaliased by Rust references where the device writes, until the
    /// WR's completion is polled. For [`SendFlags::INLINE`], each SGE's
    /// `addr` must be a CPU address readable for `length` bytes now, whose
    /// provenance was exposed (`ptr as u64` or `ptr.expose_provenance()`).
    pub unsafe fn post_send_raw(&mut self, wrs: &[SendWr<'_>]) -> Result<(), PostError> {
        // SAFETY: forwarded contract; inline SGE addresses are CPU addresses.
        unsafe {
            self.post_engine(
                wrs,
                None,
                |w: &SendWr<'_>| *w,
                |s: &Sge| core::ptr::with_exposed_provenance::<u8>(s.addr as usize),
            )
        }
    }

    /// Posts `wrs` after checking every SGE against the registered regions
    /// `mrs`: each SGE must lie inside a region under its lkey, and
    /// operations the device writes into (READ, atomics) need
    /// `LOCAL_WRITE`. Inline payloads are read through the region's CPU
    /// mapping. An atomic's result SGE must cover the 8 bytes the device
    /// writes (whatever its `length`). The first WR that fails a check is reported as
    /// [`PostErrorKind::SgeOutOfBounds`]; the WRs before it are posted.
    pub fn post_send(
        &mut self,
        wrs: &[SendWr<'_>],
        mrs: &[crate::mr::MemoryRegion],
    ) -> Result<(), PostError> {
        let mut bad = None;
        'outer: for (i, wr) in wrs.iter().enumerate() {
            let writes = matches!(
                wr.op,
                SendOp::Read { .. } | SendOp::CompSwap { .. } | SendOp::FetchAdd { .. }
            );
            let atomic = wr.op.is_atomic();
            for (j, s) in wr.sgl.iter().enumerate() {
                if s.length == 0 {
                    continue;
                }
                // An atomic's data segment always says 8 bytes (whatever
                // `length` is): the device writes the 8-byte result there.
                let extent = if atomic {
                    Sge {
                        length: ATOMIC_SIZE,
                        ..*s
                    }
                } else {
                    *s
                };
                let ok = crate::mr::find(mrs, &extent)
                    .is_some_and(|m| !writes || m.access().allows(crate::mr::Access::LOCAL_WRITE));
                if !ok {
                    bad = Some(PostError {
                        index: i,
                        kind: PostErrorKind::SgeOutOfBounds { sge: j },
                    });
                    break 'outer;
                }
            }
        }
        let upto = bad.map_or(wrs.len(), |e| e.index);
        // SAFETY: every SGE of wrs[..upto] lies inside a region whose
        // contract (MemoryRegion::new) keeps it valid and registered while
        // WRs naming it are outstanding; inline sources are translated to
        // CPU pointers inside those regions.
        let r = unsafe {
            self.post_engine(
                &wrs[..upto],
                None,
                |w: &SendWr<'_>| *w,
                |s: &Sge| {
                    crate::mr::find(mrs, s)
                        .and_then(|m| m.cpu_of(s))
                        .map_or(core::ptr::null(), |p| p.as_ptr() as *const u8)
                },
            )
        };
        r.and(bad.map_or(Ok(()), Err))
    }

    /// The batch form for the most common work: RDMA WRITE, RDMA READ or
    /// SEND with pointer SGEs, one operation for the whole batch. The same
    /// engine and builder as [`post_send_raw`](Self::post_send_raw) (every
    /// check, the same WQEs), instantiated for a fixed operation so the
    /// per-WR decisions that depend only on it fold away.
    ///
    /// # Safety
    /// As [`post_send_raw`](Self::post_send_raw) for non-inline SGEs.
    #[inline(always)]
    pub unsafe fn post_rdma_raw(
        &mut self,
        op: RdmaOp,
        wrs: &[RdmaWr<'_>],
    ) -> Result<(), PostError> {
        let no_inline = |_: &Sge| core::ptr::null::<u8>();
        // SAFETY: forwarded contract; no WR is inline, so `no_inline` is
        // never called.
        unsafe {
            match op {
                RdmaOp::Write => self.post_engine(
                    wrs,
                    Some(RdmaOp::Write.mlx5_opcode()),
                    |w: &RdmaWr<'_>| {
                        w.with_op(SendOp::Write {
                            remote_addr: w.remote_addr,
                            rkey: w.rkey,
                        })
                    },
                    no_inline,
                ),
                RdmaOp::Read => self.post_engine(
                    wrs,
                    Some(RdmaOp::Read.mlx5_opcode()),
                    |w: &RdmaWr<'_>| {
                        w.with_op(SendOp::Read {
                            remote_addr: w.remote_addr,
                            rkey: w.rkey,
                        })
                    },
                    no_inline,
                ),
                RdmaOp::Send => self.post_engine(
                    wrs,
                    Some(RdmaOp::Send.mlx5_opcode()),
                    |w: &RdmaWr<'_>| w.with_op(SendOp::Send),
                    no_inline,
                ),
            }
        }
    }

    /// The posting engine: checks each WR (`view` turns the caller's form
    /// into a [`SendWr`]), builds its WQE with
    /// [`SqRing::build`](super::ring::SqRing::build), records its slot and
    /// rings one doorbell for the batch. `cpu_of` gives the
    /// CPU address inline payloads are copied from. `fixed` names the mlx5
    /// opcode every WR of a fixed-operation caller has (its one-compare
    /// limit is then read once per call, not once per WR); a WR with
    /// another opcode still reads its own.
    ///
    /// # Safety
    /// As `post_send_raw`, with `cpu_of(sge)` readable for `sge.length`
    /// bytes for every inline SGE.
    #[inline(always)]
    unsafe fn post_engine<T, V, F>(
        &mut self,
        wrs: &[T],
        fixed: Option<u8>,
        view: V,
        cpu_of: F,
    ) -> Result<(), PostError>
    where
        V: Fn(&T) -> SendWr<'_>,
        F: Fn(&Sge) -> *const u8,
    {
        if self.slots.as_mut().len() > self.ring.mask as usize {
            // SAFETY: forwarded; the records have an entry per WQEBB.
            unsafe { self.post_loop::<false, T, V, F>(wrs, fixed, view, cpu_of) }
        } else {
            // SAFETY: forwarded.
            unsafe { self.post_shrunk(wrs, fixed, view, cpu_of) }
        }
    }

    /// [`post_engine`](Self::post_engine) for record storage that shrank
    /// since `new` (an `AsMut` that changes its answer): every record goes
    /// into one spare entry, so nothing posted now ever completes (the
    /// queue fills and refuses), which is safe.
    ///
    /// # Safety
    /// As `post_engine`.
    #[cold]
    #[inline(never)]
    unsafe fn post_shrunk<T, V, F>(
        &mut self,
        wrs: &[T],
        fixed: Option<u8>,
        view: V,
        cpu_of: F,
    ) -> Result<(), PostError>
    where
        V: Fn(&T) -> SendWr<'_>,
        F: Fn(&Sge) -> *const u8,
    {
        // SAFETY: forwarded; SPARE records into a local entry.
        unsafe { self.post_loop::<true, T, V, F>(wrs, fixed, view, cpu_of) }
    }

    /// The loop of [`post_engine`](Self::post_engine). With `SPARE` every
    /// record goes to one local entry; without it, the records must have
    /// more than `mask` entries (the caller checked).
    ///
    /// The queue's counters and limits are copied into locals for the
    /// loop and written back once. The loop carries only what the next WR
    /// needs; a refusal leaves it with its reason, and everything about
    /// errors (the index, queue full, the cached fence of a batch that
    /// built nothing) is settled after it, out of line.
    ///
    /// # Safety
    /// As `post_engine`; without `SPARE`, `slots.as_mut().len() > mask`.
    #[inline(always)]
    unsafe fn post_loop<const SPARE: bool, T, V, F>(
        &mut self,
        wrs: &[T],
        fixed: Option<u8>,
        view: V,
        cpu_of: F,
    ) -> Result<(), PostError>
    where
        V: Fn(&T) -> SendWr<'_>,
        F: Fn(&Sge) -> *const u8,
    {
        let seq0 = self.head;
        // WRs that fit; the one after them (if any) is refused as
        // QueueFull once the ones before it passed their checks.
        let fits = wrs.len().min(self.room());
        let lim = &self.lim;
        let quick_fixed = fixed.map_or(0, |op| lim.quick[(op & 63) as usize]);
        let ring = self.ring;
        let mask = ring.mask;
        let sig_bits = self.sig_bits;
        // WR sequence number of the next WR (`seq - seq0` WRs built so far,
        // which is also the index of the WR being built).
        let mut seq = seq0;
        let mut cur = self.cur_post;
        // WQEBBs of the last WQE built (it starts at `cur - last_bbs`).
        let mut last_bbs = 0;
        // The fm_ce_se bits the next WQE starts from: CQ_UPDATE when every
        // WQE is signaled, plus the small fence a UMR WQE sets for the one
        // after it. The fence cached from an earlier call goes into the
        // first WQE after the loop (so the loop carries no extra state).
        let cached = self.fm_cache;
        let mut bits = sig_bits;
        let mut refused = None;
        // The records: `cur & slot_mask` indexes them with no check left
        // in the loop (the caller checked their length, or all go into one
        // spare entry).
        let mut spare = SqSlot::default();
        let (slot_base, slot_mask) = if SPARE {
            (&mut spare as *mut SqSlot, 0)
        } else {
            (self.slots.as_mut().as_mut_ptr(), mask)
        };
        for item in &wrs[..fits] {
            let wr = view(item);
            let opcode = wr.op.mlx5_opcode();
            // One compare decides that the common shape passes every check
            // below (the opcode allowed here, posting enabled, SGEs and WQE
            // within their limits; for a fixed operation the opcode and
            // the flags fold to constants); anything else takes them in
            // order.
            let quick_lim = match fixed {
                Some(op) if op == opcode => quick_fixed,
                _ => lim.quick[(opcode & 63) as usize],
            };
            let quick = !wr.flags.contains(SendFlags::INLINE) && wr.sgl.len() < quick_lim as usize;
            if !quick && wr.sgl.len() >= lim.sge_lim {
                refused = Some(lim.too_many_sges(wr.sgl.len()));
                break;
            }
            // The provider consumes the cached fence once these checks
            // pass, even if a later check fails (ref §1.3).
            let mine = with_wr_fence(bits, wr.flags);
            bits = sig_bits;
            if !quick {
                if let Err(kind) = lim.check_late(&wr, opcode) {
                    refused = Some(kind);
                    break;
                }
            }
            if opcode == Opcode::Umr.bits() {
                // LOCAL_INV / BIND_MW: next WQE small-fenced
                bits = sig_bits | FmCeSe::INITIATOR_SMALL_FENCE.bits();
            }
            // The record first (it needs nothing the WQE decides), so the
            // WR's id is consumed at once.
            // SAFETY: `cur & slot_mask <= slot_mask`, and `slot_base` has
            // more than `slot_mask` entries (the spare one entry for mask
            // 0, else checked by the caller; the `AsMut` call above is the
            // last before the loop, and nothing else touches the records
            // during it).
            unsafe {
                slot_base
                    .add((cur & slot_mask) as usize)
                    .write(SqSlot::posted(wr.wr_id, seq, cur, wr.op.wr_data()))
            };
            // SAFETY: forwarded from this function's contract; the checks
            // above proved the WQE fits the slot the geometry reserves, and
            // the queue has room for it.
            let bbs = unsafe { ring.build(&wr, opcode, mine, cur, &cpu_of) };
            last_bbs = bbs;
            cur = cur.wrapping_add(bbs);
            seq = seq.wrapping_add(1);
        }
        let nreq = seq.wrapping_sub(seq0);
        if nreq == 0 {
            return self.refuse_first(wrs.len(), fits, refused, bits);
        }
        // The provider consumes the cached fence once the first WR passes
        // the queue-full and SGE checks (ref §1.3): a WQE that took it
        // without FENCE of its own gets it.
        if cached != 0 && !view(&wrs[0]).flags.contains(SendFlags::FENCE) {
            // SAFETY: the first WQE this call built starts at the
            // `cur_post` of before it; not yet rung.
            unsafe { ring.or_fm_ce_se(self.cur_post, cached) };
        }
        self.fm_cache = bits & FmCeSe::FENCE_FIELD;
        self.cur_post = cur;
        self.head = seq;
        // The doorbell needs, for a single-WR post, whether it was inline.
        self.ring_doorbell(nreq, cur.wrapping_sub(last_bbs), || {
            let w = view(&wrs[0]);
            w.flags.contains(SendFlags::INLINE) && !w.sgl.is_empty()
        });
        if nreq as usize == wrs.len() {
            Ok(())
        } else {
            Err(self.refusal(nreq as usize, refused))
        }
    }

    /// WRs that can still be posted: `max_post` less those in flight.
    #[inline(always)]
    fn room(&self) -> usize {
        self.cfg
            .max_post
            .saturating_sub(self.head.wrapping_sub(self.tail)) as usize
    }

    /// The error of a post that built some WRs but not all: the refused
    /// WR's reason, or QueueFull (nothing refused it, so it did not fit).
    /// Called after the built WRs were counted into `head`.
    #[cold]
    #[inline(never)]
    fn refusal(&self, index: usize, refused: Option<PostErrorKind>) -> PostError {
        PostError {
            index,
            kind: refused.unwrap_or(PostErrorKind::QueueFull {
                outstanding: self.outstanding(),
                max_post: self.cfg.max_post,
            }),
        }
    }

    /// The outcome of a post that built nothing (`fits` of `len` WRs had
    /// room): Ok for an empty batch, else the first WR's refusal. A WR
    /// refused after the SGE check passed consumed the cached fence
    /// ([ref §1.3](crate::reference)): the cache takes the loop's `bits` then.
    #[cold]
    #[inline(never)]
    fn refuse_first(
        &mut self,
        len: usize,
        fits: usize,
        refused: Option<PostErrorKind>,
        bits: u8,
    ) -> Result<(), PostError> {
        match refused {
            Some(kind) => {
                if !matches!(kind, PostErrorKind::TooManySges { .. }) {
                    self.fm_cache = bits & FmCeSe::FENCE_FIELD;
                }
                Err(PostError { index: 0, kind })
            }
            None if len > fits => Err(self.refusal(0, None)),
            None => Ok(()),
        }
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
