//! The lean poll path: [`CompletionQueue::poll_completions`] writes
//! [`Completion`]s, and its callback form [`CompletionQueue::poll_each`]
//! hands each to a closure (no output array; inlined, the fields a caller
//! does not read cost nothing), reading each fast CQE's fields once,
//! straight from the ring, and handing everything else to the general
//! path.
//!
//! # Fast and cold CQEs
//!
//! A CQE is *fast* when its `op_own` byte alone shows it owned by software
//! (owner bit = pass parity), uncompressed and plain (format 0), with
//! opcode REQ (0), RESP_WR_IMM (1), RESP_SEND (2) or RESP_SEND_IMM (3):
//! `(op_own ^ parity) & 0xCD == 0`, one test. Only then, after
//! [`platform::from_device_barrier`], are the fields read — with aligned
//! 4- and 8-byte volatile loads, each once: bytes 56..64 (`sop_drop_qpn`,
//! `wqe_counter`, `signature`, `op_own`) in one load, `srqn_uidx` with CQE
//! version 1, and after the resolver accepted the CQE only what the
//! completion reports (`byte_cnt`, `flags_rqpn`, the immediate; the
//! checksum bits when the queue asks for them).
//!
//! The resolver checks a fast CQE exactly as in [`CompletionQueue::poll`]
//! (the same [`WrResolver`] calls with the same arguments, the same
//! [`PollError`] for a refusal, the CQE consumed either way), and the
//! completion holds what the general path writes, in lean form
//! (`Completion::from(&wc)`).
//!
//! Every other CQE the software owns — error CQEs (13/14), compressed
//! sessions, inline scatter, RESP_SEND_INV, RESIZE_CQ, undefined opcodes —
//! and every mini-CQE of a session in progress goes through the general
//! step ([`CompletionQueue::step`], the body of `poll`), out of line, and
//! is converted. An entry software does not own stops the poll, as in
//! `poll`. The doorbell record is stored once per call, even when nothing
//! was polled or a CQE was refused.
//!
//! # Lane runs
//!
//! Requester CQEs of the resolver's [`SendLane`](crate::sq::SendLane) QP
//! are taken in runs that end at the ring's end or at the caller's limit,
//! whichever is first, so the per-CQE loop tests one bound; one test of
//! the ownership byte admits a CQE to the run (software's, plain, opcode
//! REQ), then the barrier, the routing value and the lane's in-flight
//! check.

use super::poll::Step;
use super::{CompletionQueue, PollError, SendDone, WrResolver};
use crate::cqe::{req_completion, Completion, CompletionFlags, WcOpcode, WcStatus};
use crate::cqe::{sw_owns, Cqe64, OP_OWN_OFFSET};
use crate::cqe::{CqeSize, WorkCompletion, CQE128_SIZE, CQE64_SIZE};
use crate::devmem;
use crate::platform;
use crate::wqe::Opcode;

/// The bits of `op_own ^ parity` that are zero in a fast CQE: opcode bits
/// 7:6 (opcode < 4), format bits 3:2 (plain) and the owner bit 0 (equal to
/// the pass parity). Bit 1 (SE) and opcode bits 5:4 are free.
const FAST_MASK: u8 = 0xCD;

/// [`REQ_TABLE`] entry bit: `byte_len` is the CQE's `byte_cnt` (RDMA read).
const LEN_BYTE_CNT: u64 = 1 << 0;
/// [`REQ_TABLE`] entry bit: `byte_len` is 8 (atomics).
const LEN_8: u64 = 1 << 1;
/// [`REQ_TABLE`] entry bit: the opcode is the slot's `wr_data` (UMR, SET_PSV,
/// NOP, MMO).
const OP_WR_DATA: u64 = 1 << 2;
/// Where the [`REQ_TABLE`] bits above live: the `imm` part of the word,
/// which is 0 in every requester completion.
const SPECIAL: u64 = 0xffff_ffff;
/// The opcode byte of a [`Completion::rest`] word.
const OPCODE_BITS: u64 = 0xff << 40;
/// The QPN bits of the big-endian bytes 56..64 (`sop_drop_qpn & 0xffffff`
/// in bits 55:32): `qp_num << 32`.
const QPN_HI: u64 = 0x00ff_ffff_0000_0000;

/// One [`REQ_TABLE`] entry, derived from [`req_completion`] (the mapping the
/// general path uses) by probing it with two different `wr_data` /
/// `byte_cnt` pairs: the [`Completion::rest`] word of a successful
/// requester completion (status 0, the opcode — [`WcOpcode::Send`] where
/// the general path leaves it unwritten — and the flags, no immediate),
/// with the [`SPECIAL`] bits in its `imm` part. Fails to compile if
/// `req_completion` ever maps an opcode in a way the table cannot express.
const fn req_entry(sop: u8) -> u64 {
    let a = req_completion(sop, WcOpcode::Send, 0);
    let b = req_completion(sop, WcOpcode::LocalInv, 0x1234_5678);
    assert!(a.flags.bits() == b.flags.bits());
    let mut special = 0;
    let opcode = match (a.opcode, b.opcode) {
        (Some(x), Some(y)) => {
            if x as u32 != y as u32 {
                assert!(x as u32 == WcOpcode::Send as u32);
                assert!(y as u32 == WcOpcode::LocalInv as u32);
                special |= OP_WR_DATA;
            }
            assert!(x as u32 <= 0xff);
            x as u8
        }
        (None, None) => WcOpcode::Send as u8,
        _ => panic!("req_completion: opcode written for one wr_data only"),
    };
    match (a.byte_len, b.byte_len) {
        (None, None) => {}
        (Some(0), Some(0x1234_5678)) => special |= LEN_BYTE_CNT,
        (Some(8), Some(8)) => special |= LEN_8,
        _ => panic!("req_completion: byte_len the table cannot express"),
    }
    let flags = CompletionFlags::from_wc(a.flags);
    Completion::rest(0, WcStatus::Success as u8, opcode, flags, 0) | special
}

/// Requester mapping by send WQE opcode (`sop_drop_qpn >> 24`), [ref §5.7](crate::reference).
/// A `const`, not a `static`: indexed in the poller it is emitted beside
/// the code using it and read without a GOT load.
const REQ_TABLE: [u64; 256] = {
    let mut t = [0u64; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = req_entry(i as u8);
        i += 1;
    }
    t
};

/// Big-endian u32 at `p + off`.
///
/// # Safety
/// `p + off` is valid for a 4-byte read and 4-byte aligned.
#[inline(always)]
unsafe fn be32(p: *const u8, off: usize) -> u32 {
    // SAFETY: forwarded contract (inside the ring, so non-null); a
    // by-value read through a read-only volatile view, no reference.
    u32::from_be_bytes(
        unsafe { devmem::read_only(p.add(off).cast::<u32>()) }
            .read()
            .to_ne_bytes(),
    )
}

/// The 4 bytes at `p + off` as stored (`u32::from_ne_bytes`).
///
/// # Safety
/// As [`be32`].
#[inline(always)]
unsafe fn raw32(p: *const u8, off: usize) -> u32 {
    // SAFETY: forwarded contract.
    unsafe { devmem::read_only(p.add(off).cast::<u32>()) }.read()
}

impl<const N: usize> CompletionQueue<N> {
    /// Polls up to `out.len()` completions in lean form: the same CQEs,
    /// checks, errors, consumer index and doorbell-record update as
    /// [`Self::poll`] — a CQE the resolver refuses (unknown QP; phantom,
    /// repeated, stale or out-of-order counter) is consumed, retires
    /// nothing and is the returned [`PollError`] — with each completion
    /// written as the [`Completion`] of the [`WorkCompletion`] `poll` would
    /// have written (`Completion::from(&wc)`).
    ///
    /// Successful requester and send / write-with-immediate responder CQEs
    /// in plain format are decoded inline from a few aligned loads; every
    /// other CQE (errors, compressed sessions, inline scatter, send with
    /// invalidate, RESIZE_CQ, undefined opcodes) goes through the general
    /// path out of line. See the module documentation of `cq::lean`.
    ///
    /// Returns the number of completions written to `out`, or the
    /// [`PollError`] for the first CQE that could not become one (after
    /// [`PollError::completions`] valid entries).
    #[inline]
    pub fn poll_completions<R: WrResolver + ?Sized>(
        &mut self,
        r: &mut R,
        out: &mut [Completion],
    ) -> Result<usize, PollError> {
        let mut q = out.as_mut_ptr();
        self.poll_each(r, out.len(), |c| {
            // SAFETY: `poll_each` calls this at most `out.len()` times, so
            // q is an element of `out` (borrowed mutably for this call)
            // each time; a plain write of a `Copy` value.
            unsafe { q.write(c) };
            q = q.wrapping_add(1);
        })
    }

    /// Polls up to `max` completions in lean form and hands each to `f`
    /// as it is taken, in order: exactly the completions, errors,
    /// consumer index and doorbell-record update of
    /// [`Self::poll_completions`] with an output of `max` entries (and so
    /// of [`Self::poll`]), without an output array. `f` runs once per
    /// completion, before the next CQE is read; it cannot reach the
    /// resolver or the queue. Inlined with `f`, a caller that reads only
    /// some fields of the [`Completion`] (say `wr_id`) pays for little
    /// more than the checks: every CQE is still validated (ownership,
    /// barrier, QP routing, the send queue's in-flight window) before it
    /// becomes a completion.
    ///
    /// Returns the number of completions passed to `f`, or the
    /// [`PollError`] for the first CQE that could not become one (after
    /// [`PollError::completions`] calls of `f`).
    #[inline]
    pub fn poll_each<R: WrResolver + ?Sized, F: FnMut(Completion)>(
        &mut self,
        r: &mut R,
        max: usize,
        mut f: F,
    ) -> Result<usize, PollError> {
        let res = match (self.cqe_version == 1, self.cqe_size) {
            (true, CqeSize::B64) => self.lean_loop::<true, CQE64_SIZE, R, F>(r, max, &mut f),
            (true, CqeSize::B128) => self.lean_loop::<true, CQE128_SIZE, R, F>(r, max, &mut f),
            (false, CqeSize::B64) => self.lean_loop::<false, CQE64_SIZE, R, F>(r, max, &mut f),
            (false, CqeSize::B128) => self.lean_loop::<false, CQE128_SIZE, R, F>(r, max, &mut f),
        };
        self.publish_ci();
        res
    }

    /// The loop of [`Self::poll_each`]; `UIDX`: the CQE version is 1 (the
    /// resolver is given the user index, else the QPN); `STRIDE`: the
    /// entry size (`self.cqe_size.bytes()`). Runs of fast CQEs go through
    /// [`Self::fast_run`]; an entry software owns that the fast path does
    /// not decode (and every entry of a compressed session) goes through
    /// the general step; one software does not own ends the poll.
    /// `self.ci` is written back before the general path runs and at the
    /// end.
    #[inline(always)]
    pub(crate) fn lean_loop<const UIDX: bool, const STRIDE: usize, R, F>(
        &mut self,
        r: &mut R,
        max: usize,
        f: &mut F,
    ) -> Result<usize, PollError>
    where
        R: WrResolver + ?Sized,
        F: FnMut(Completion),
    {
        let ncqe = self.ncqe();
        let call_start = self.ci;
        // The cqe64 of entry 0: the entry, or its second half for 128-byte
        // entries (STRIDE − 64 = cqe64_offset).
        let base = self
            .ring
            .cpu
            .as_ptr()
            .wrapping_add(STRIDE - CQE64_SIZE)
            .cast_const();
        let ring = LeanRing::<STRIDE> { base, ncqe };
        let mut ci = self.ci;
        let mut n = 0usize;
        let mut failed = None;
        while n < max {
            let stop = if self.zip.is_none() {
                Self::fast_run::<UIDX, STRIDE, R, F>(r, &ring, &mut ci, &mut n, max, f)
            } else {
                Stop::Cold
            };
            match stop {
                Stop::Full | Stop::NotOwned => break,
                Stop::Failed(e) => {
                    failed = Some(e);
                    break;
                }
                Stop::Cold => {}
            }
            // A compressed session in progress, or an owned CQE the fast
            // path does not decode.
            self.ci = ci;
            let res = self.lean_cold(r, call_start);
            ci = self.ci;
            match res {
                Ok(Some(c)) => {
                    f(c);
                    n += 1;
                }
                Ok(None) => break,
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        self.ci = ci;
        match failed {
            None => Ok(n),
            Some(e) => Err(e.with_completions(n)),
        }
    }

    /// Polls fast CQEs from consumer index `*ci` while `*n < max` (`*n <
    /// max` on entry), handing each completion to `f`, until `max` were
    /// taken or an entry is not a fast CQE software owns, and says which
    /// ([`Stop`]). Per entry: the ownership byte alone, then
    /// [`platform::from_device_barrier`], then its fields, each read once.
    /// Requester CQEs of the resolver's [`SendLane`](crate::sq::SendLane)
    /// QP are retired on the lane's copies of the queue state (written back
    /// when the lane drops, before `r` is used again), in runs that end at
    /// the ring's end or at `max` (so the loop tests one bound); every other
    /// one through `r`. `*ci` advances past every CQE consumed, including
    /// a refused one (which is no completion), `*n` counts the
    /// completions.
    #[inline(always)]
    fn fast_run<const UIDX: bool, const STRIDE: usize, R, F>(
        r: &mut R,
        ring: &LeanRing<STRIDE>,
        ci_io: &mut u32,
        n_io: &mut usize,
        max: usize,
        f: &mut F,
    ) -> Stop
    where
        R: WrResolver + ?Sized,
        F: FnMut(Completion),
    {
        let mut ci = *ci_io;
        let mut n = *n_io;
        let stop = 'run: loop {
            // Why the lane loop stopped at an entry it does not retire
            // itself: its ownership byte (read, not yet ordered by the
            // barrier), or its head words (read after the barrier).
            let mut pending = Pending::None;
            // A routing value wider than the CQE's 24-bit field matches no
            // CQE: such a queue gets no lane (the resolver refuses its CQEs).
            if let Some(mut lane) = r.send_lane().filter(|l| l.id() <= 0x00ff_ffff) {
                let id = lane.id();
                // The lane's routing value as `head_words` returns a CQE's.
                let want = if UIDX { Self::stored_24(id) } else { id };
                loop {
                    // One run: from ci to the ring's end or to the max-th
                    // completion, whichever is first (n < max here), at
                    // one pass parity. The entry is `end - off` (off from
                    // room·STRIDE down to 0: one counter, one test).
                    let idx = ci & (ring.ncqe - 1);
                    let room = ((ring.ncqe - idx) as usize).min(max - n);
                    let end = ring.base.wrapping_add((idx as usize + room) * STRIDE);
                    let parity = ((ci & ring.ncqe) != 0) as u8;
                    let mut off = room * STRIDE;
                    let miss = loop {
                        let p = end.wrapping_sub(off);
                        // SAFETY: 0 < off ≤ room·STRIDE, so p is the cqe64
                        // of an entry of this run (room entries from idx,
                        // at most to the ring's end); the byte is read
                        // alone, by value, with no reference.
                        let own = unsafe { devmem::read_only(p.add(OP_OWN_OFFSET)) }.read();
                        // Software's, plain, and opcode 0 (REQ): opcode
                        // bits 5:4 zero too.
                        if (own ^ parity) & (FAST_MASK | 0x30) != 0 {
                            break Pending::Own(own);
                        }
                        platform::from_device_barrier();
                        // SAFETY: software owns the entry (its ownership
                        // byte was read before the barrier); p is 8-byte
                        // aligned inside the ring.
                        let (tail, key) = unsafe { Self::head_words::<UIDX>(p) };
                        if key != want {
                            break Pending::Words(tail, key);
                        }
                        let ctr = (tail >> 16) as u16;
                        // SAFETY: ctr is from a requester CQE (opcode 0 in
                        // the byte tested above) the device wrote for the
                        // lane's QP (its routing value).
                        match unsafe { lane.retire(ctr) } {
                            Ok(d) => f(Self::req_done(d, tail, p)),
                            Err(why) => {
                                let k = room - off / STRIDE;
                                // The refused CQE is consumed too.
                                ci = ci.wrapping_add(k as u32 + 1);
                                n += k;
                                break 'run Stop::Failed(PollError::reject(id, ctr, why));
                            }
                        }
                        off -= STRIDE;
                        if off == 0 {
                            break Pending::None;
                        }
                    };
                    let k = room - off / STRIDE;
                    ci = ci.wrapping_add(k as u32);
                    n += k;
                    if !matches!(miss, Pending::None) {
                        pending = miss;
                        break;
                    }
                    if n == max {
                        break 'run Stop::Full;
                    }
                    // The lap ended: the next run starts at entry 0 with
                    // the other parity (ci says both).
                }
            }
            // A fast CQE for another QP, a responder CQE, or no lane:
            // through the resolver.
            let p = ring.entry(ci);
            let (tail, key) = match pending {
                Pending::Words(t, k) => (t, k),
                Pending::Own(own) => {
                    if (own ^ ((ci & ring.ncqe) != 0) as u8) & FAST_MASK != 0 {
                        break 'run Self::not_fast(own, ci, ring.ncqe);
                    }
                    platform::from_device_barrier();
                    // SAFETY: software owns the entry (its ownership byte
                    // was read before the barrier); p is the cqe64 of
                    // entry ci, 8-byte aligned inside the ring.
                    unsafe { Self::head_words::<UIDX>(p) }
                }
                Pending::None => {
                    let parity = ((ci & ring.ncqe) != 0) as u8;
                    // SAFETY: p is the cqe64 of entry ci, inside the ring.
                    match unsafe { Self::take::<UIDX>(p, parity, ci, ring.ncqe) } {
                        Ok(w) => w,
                        Err(stop) => break 'run stop,
                    }
                }
            };
            ci = ci.wrapping_add(1);
            let qp = Self::qp_of::<UIDX>(key);
            match Self::fast_one(r, p, tail, qp) {
                Ok(c) => f(c),
                Err(e) => break 'run Stop::Failed(e),
            }
            n += 1;
            if n == max {
                break 'run Stop::Full;
            }
        };
        *ci_io = ci;
        *n_io = n;
        stop
    }

    /// The entry at `p` (consumer index `ci`, pass parity `parity`) as a
    /// fast CQE: its ownership byte alone, then
    /// [`platform::from_device_barrier`], then its
    /// [`head_words`](Self::head_words); or why the run stops there.
    ///
    /// # Safety
    /// `p` is the cqe64 of the entry of `ci`, inside the ring.
    #[inline(always)]
    unsafe fn take<const UIDX: bool>(
        p: *const u8,
        parity: u8,
        ci: u32,
        ncqe: u32,
    ) -> Result<(u64, u32), Stop> {
        // SAFETY: the byte is inside the entry (caller), so non-null; read
        // alone, by value, through a read-only volatile view, with no
        // reference.
        let own = unsafe { devmem::read_only(p.add(OP_OWN_OFFSET)) }.read();
        if (own ^ parity) & FAST_MASK != 0 {
            return Err(Self::not_fast(own, ci, ncqe));
        }
        platform::from_device_barrier();
        // SAFETY: software owns the entry (its ownership byte was read
        // before the barrier); p is 8-byte aligned.
        Ok(unsafe { Self::head_words::<UIDX>(p) })
    }

    /// Why a fast run stopped at an entry whose ownership byte `own` is not
    /// a fast CQE's: software owns it (the general step decodes it) or not.
    #[inline(always)]
    fn not_fast(own: u8, ci: u32, ncqe: u32) -> Stop {
        if sw_owns(own, ci, ncqe) {
            Stop::Cold
        } else {
            Stop::NotOwned
        }
    }

    /// Bytes 56..64 of the fast CQE at `p` (`sop_drop_qpn`, `wqe_counter`,
    /// `signature`, `op_own`, big-endian) and its routing key: with CQE
    /// version 1 the `srqn_uidx` bytes 33..36 as stored, shifted down
    /// (`qp_of` turns it into the user index), else the QPN from bytes
    /// 57..60. Each field read once.
    ///
    /// # Safety
    /// `p` is a software-owned cqe64 in the ring, 8-byte aligned, read
    /// after the barrier that follows its ownership test.
    #[inline(always)]
    unsafe fn head_words<const UIDX: bool>(p: *const u8) -> (u64, u32) {
        // SAFETY: forwarded contract; p + 56 is 8-byte aligned inside the
        // entry.
        let tail = u64::from_be(unsafe { devmem::read_only(p.add(56).cast::<u64>()) }.read());
        let key = if UIDX {
            // SAFETY: as above; p + 32 is 4-byte aligned. Bytes 33..36 as
            // stored: on a little-endian host byte 32 (the SRQN's top
            // byte) is the word's low byte, shifted out; on a big-endian
            // host it is the top byte, masked off.
            let raw = unsafe { raw32(p, 32) };
            if cfg!(target_endian = "little") {
                raw >> 8
            } else {
                raw & 0x00ff_ffff
            }
        } else {
            (tail >> 32) as u32 & 0x00ff_ffff
        };
        (tail, key)
    }

    /// The routing value the resolver is given, from the key of
    /// [`Self::head_words`]: the user index (`srqn_uidx & 0xffffff`) with
    /// CQE version 1, else the QPN.
    #[inline(always)]
    fn qp_of<const UIDX: bool>(key: u32) -> u32 {
        if UIDX {
            Self::stored_24(key)
        } else {
            key
        }
    }

    /// A 24-bit value and its key as [`Self::head_words`] reads it from a
    /// big-endian field (either way: the map is its own inverse).
    #[inline(always)]
    fn stored_24(v: u32) -> u32 {
        if cfg!(target_endian = "little") {
            v.swap_bytes() >> 8
        } else {
            v
        }
    }

    /// The completion of the fast CQE at `p` (software-owned, ordered by
    /// the barrier, opcode 0–3 in plain format per its ownership byte),
    /// whose [`head_words`](Self::head_words) are `tail` and `qp`, through
    /// the resolver, or the refusal.
    #[inline(always)]
    fn fast_one<R: WrResolver + ?Sized>(
        r: &mut R,
        p: *const u8,
        tail: u64,
        qp: u32,
    ) -> Result<Completion, PollError> {
        let ctr = (tail >> 16) as u16;
        // Opcode bits 5:4 of op_own as this load sees it (opcode 0–3: bits
        // 7:6 were zero in the byte tested before the barrier; a device
        // that rewrites an entry it handed over only changes which fast
        // CQE it is).
        if tail & 0x30 == 0 {
            let d = r
                .send_done(qp, ctr)
                .map_err(|why| PollError::reject(qp, ctr, why))?;
            Ok(Self::req_done(d, tail, p))
        } else {
            let d = r
                .recv_done(qp, ctr)
                .map_err(|why| PollError::reject(qp, ctr, why))?;
            Ok(Self::resp(
                (tail as u8 >> 4) & 3,
                d.wr_id,
                d.rx_csum,
                tail,
                p,
            ))
        }
    }

    /// The completion of the successful requester CQE at `p` (bytes
    /// 56..64 `tail`) that retired `d`.
    #[inline(always)]
    fn req_done(d: SendDone, tail: u64, p: *const u8) -> Completion {
        // A promoted `const` reference: a constant of the code using it,
        // reached without a GOT load (and never copied).
        let table: &'static [u64; 256] = &REQ_TABLE;
        let e = table[(tail >> 56) as usize];
        let (word1, rest) = if e & SPECIAL == 0 {
            (tail & QPN_HI, e)
        } else {
            Self::req_special(e, d.wr_data, tail, p)
        };
        // SAFETY: the status byte of `rest` is Success (0): every table
        // entry's is (`req_entry` builds them so; the const check below
        // the table proves it for all 256) and `req_special` keeps it.
        // Told to the compiler so that a caller testing the status of a
        // fast completion tests nothing.
        unsafe { core::hint::assert_unchecked((rest >> 32) as u8 == WcStatus::Success as u8) };
        Completion::from_words(d.wr_id, word1, rest)
    }

    /// The completion of a successful, plain responder CQE of opcode `op`
    /// (1–3) at `p` whose receive `wr_id` the resolver returned; `tail`
    /// is the CQE's bytes 56..64, big-endian.
    #[inline(always)]
    fn resp(op: u8, wr_id: u64, rx_csum: bool, tail: u64, p: *const u8) -> Completion {
        // SAFETY: (every read below) the lean loop passes the
        // software-owned, 8-byte aligned cqe64 at p; offsets 44, 24, 36
        // and 28 are 4-byte aligned inside it.
        let byte_len = unsafe { be32(p, 44) };
        // SAFETY: as above.
        let rqpn = unsafe { be32(p, 24) };
        let mut flags = if (rqpn >> 28) & 3 != 0 {
            CompletionFlags::GRH
        } else {
            CompletionFlags::empty()
        };
        let (opcode, imm) = if op == 2 {
            (WcOpcode::Recv, 0)
        } else {
            flags |= CompletionFlags::WITH_IMM;
            let o = if op == 1 {
                WcOpcode::RecvRdmaWithImm
            } else {
                WcOpcode::Recv
            };
            // SAFETY: as above.
            (o, unsafe { raw32(p, 36) })
        };
        if rx_csum {
            // Byte 28 hds_ip_ext, byte 29 l4_hdr_type_etc: L3_OK and L4_OK
            // on an IPv4 packet. ref §5.8.
            // SAFETY: as above.
            let w = unsafe { be32(p, 28) };
            let (hds, l3) = ((w >> 24) as u8, ((w >> 16) as u8 >> 2) & 3);
            if Cqe64::ipv4_csum_ok_bits(hds, l3) {
                flags |= CompletionFlags::IP_CSUM_OK;
            }
        }
        Completion::from_words(
            wr_id,
            byte_len as u64 | (tail & QPN_HI),
            Completion::rest(imm, WcStatus::Success as u8, opcode as u8, flags, 0),
        )
    }

    /// The second and third [`Completion`] words of a requester CQE whose
    /// [`REQ_TABLE`] entry `e` has [`SPECIAL`] bits: RDMA read (`byte_cnt`
    /// from the CQE at `p`), atomics (8), UMR / SET_PSV / NOP / MMO (opcode
    /// `wr_data`). `tail` is the CQE's bytes 56..64, big-endian.
    #[cold]
    #[inline(never)]
    fn req_special(e: u64, wr_data: WcOpcode, tail: u64, p: *const u8) -> (u64, u64) {
        let mut rest = e & !SPECIAL;
        if e & OP_WR_DATA != 0 {
            rest = (rest & !OPCODE_BITS) | (wr_data as u8 as u64) << 40;
        }
        let byte_len = if e & LEN_BYTE_CNT != 0 {
            // SAFETY: called by the lean loop for the software-owned cqe64
            // at p (8-byte aligned); byte_cnt is bytes 44..48.
            unsafe { be32(p, 44) }
        } else if e & LEN_8 != 0 {
            8
        } else {
            0
        };
        (byte_len as u64 | (tail & QPN_HI), rest)
    }

    /// One general step ([`Self::step`], the body of [`Self::poll`]) for a
    /// CQE the lean path does not decode, converted to a [`Completion`]:
    /// `Ok(None)` when software owns no entry.
    #[cold]
    #[inline(never)]
    fn lean_cold<R: WrResolver + ?Sized>(
        &mut self,
        r: &mut R,
        call_start: u32,
    ) -> Result<Option<Completion>, PollError> {
        let mut wc = WorkCompletion::default();
        match self.step(r, call_start, &mut wc) {
            Step::Done => Ok(Some(Completion::from(&wc))),
            Step::Empty => Ok(None),
            Step::Failed(e) => Err(e),
        }
    }
}

/// The CQ ring as the lean poller walks it: `ncqe` entries of `STRIDE`
/// bytes whose cqe64s start at `base`. The poller walks runs of entries
/// that end at the ring's end at the latest (the next run starts at
/// entry 0 with the other pass parity).
struct LeanRing<const STRIDE: usize> {
    base: *const u8,
    /// A power of two (construction).
    ncqe: u32,
}

impl<const STRIDE: usize> LeanRing<STRIDE> {
    /// The cqe64 of the entry of consumer index `ci`.
    #[inline(always)]
    fn entry(&self, ci: u32) -> *const u8 {
        self.base
            .wrapping_add((ci & (self.ncqe - 1)) as usize * STRIDE)
    }
}

/// Where the lane loop of [`CompletionQueue::fast_run`] stopped short of
/// its run's end.
#[derive(Clone, Copy)]
enum Pending {
    /// It did not (or no lane ran).
    None,
    /// At an entry whose ownership byte (this value, read before any
    /// barrier) is not a requester CQE software owns in plain format.
    Own(u8),
    /// At a fast requester CQE for another routing value: its
    /// [`head_words`](CompletionQueue::head_words), read after the barrier.
    Words(u64, u32),
}

/// Why [`CompletionQueue::fast_run`] stopped.
enum Stop {
    /// The output is full.
    Full,
    /// The next entry is not software's: the poll ends.
    NotOwned,
    /// The next entry is software's but not a fast CQE (or a compressed
    /// session is in progress): the general step decodes it.
    Cold,
    /// A CQE was refused (consumed, no completion written).
    Failed(PollError),
}

// Spot checks of the requester table (all 256 entries are compared with
// the general path in the tests), and every entry's status is Success
// (what `req_done` tells the compiler).
const _: () = {
    let mut i = 0;
    while i < 256 {
        assert!((REQ_TABLE[i] >> 32) as u8 == WcStatus::Success as u8);
        i += 1;
    }
    let write = Completion::rest(0, 0, WcOpcode::RdmaWrite as u8, CompletionFlags::empty(), 0);
    assert!(REQ_TABLE[Opcode::RdmaWrite as usize] == write);
    let imm = Completion::rest(0, 0, WcOpcode::Send as u8, CompletionFlags::WITH_IMM, 0);
    assert!(REQ_TABLE[Opcode::SendImm as usize] == imm);
    let read = Completion::rest(0, 0, WcOpcode::RdmaRead as u8, CompletionFlags::empty(), 0);
    assert!(REQ_TABLE[Opcode::RdmaRead as usize] == read | LEN_BYTE_CNT);
};

#[cfg(test)]
mod tests;
