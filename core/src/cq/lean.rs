//! The lean poll path: [`CompletionQueue::poll_completions`] writes
//! [`Completion`]s, reading each fast CQE's fields once, straight from the
//! ring, and hands everything else to the general path.
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

use super::{platform, sw_owns, CompletionQueue, PollError, SendDone, Step, WrResolver};
use super::OP_OWN_OFFSET;
use crate::cqe::{req_completion, Completion, CompletionFlags, WcOpcode, WcStatus};
use crate::cqe::{CqeSize, WorkCompletion, CQE128_SIZE, CQE64_SIZE};
use core::mem::size_of;
use core::ptr;

/// The bits of `op_own ^ parity` that are zero in a fast CQE: opcode bits
/// 7:6 (opcode < 4), format bits 3:2 (plain) and the owner bit 0 (equal to
/// the pass parity). Bit 1 (SE) and opcode bits 5:4 are free.
const FAST_MASK: u8 = 0xCD;

/// [`REQ_MAP`] entry bit: `byte_len` is the CQE's `byte_cnt` (RDMA read).
const LEN_BYTE_CNT: u64 = 1 << 0;
/// [`REQ_MAP`] entry bit: `byte_len` is 8 (atomics).
const LEN_8: u64 = 1 << 1;
/// [`REQ_MAP`] entry bit: the opcode is the slot's `wr_data` (UMR, SET_PSV,
/// NOP, MMO).
const OP_WR_DATA: u64 = 1 << 2;
/// Where the [`REQ_MAP`] bits above live: the `imm` part of the word,
/// which is 0 in every requester completion.
const SPECIAL: u64 = 0xffff_ffff;
/// The opcode byte of a [`Completion::rest`] word.
const OPCODE_BITS: u64 = 0xff << 40;
/// The QPN bits of the big-endian bytes 56..64 (`sop_drop_qpn & 0xffffff`
/// in bits 55:32): `qp_num << 32`.
const QPN_HI: u64 = 0x00ff_ffff_0000_0000;

/// One [`REQ_MAP`] entry, derived from [`req_completion`] (the mapping the
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

/// Requester mapping by send WQE opcode (`sop_drop_qpn >> 24`), FACTS §5.7.
static REQ_MAP: [u64; 256] = REQ_TABLE;

/// [`REQ_MAP`]'s value.
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
    // SAFETY: forwarded contract; a by-value volatile read, no reference.
    u32::from_be_bytes(unsafe { ptr::read_volatile(p.add(off).cast::<u32>()) }.to_ne_bytes())
}

/// The 4 bytes at `p + off` as stored (`u32::from_ne_bytes`).
///
/// # Safety
/// As [`be32`].
#[inline(always)]
unsafe fn raw32(p: *const u8, off: usize) -> u32 {
    // SAFETY: forwarded contract.
    unsafe { ptr::read_volatile(p.add(off).cast::<u32>()) }
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
        let res = match (self.cqe_version == 1, self.cqe_size) {
            (true, CqeSize::B64) => self.lean_loop::<true, CQE64_SIZE, R>(r, out),
            (true, CqeSize::B128) => self.lean_loop::<true, CQE128_SIZE, R>(r, out),
            (false, CqeSize::B64) => self.lean_loop::<false, CQE64_SIZE, R>(r, out),
            (false, CqeSize::B128) => self.lean_loop::<false, CQE128_SIZE, R>(r, out),
        };
        self.publish_ci();
        res
    }

    /// The loop of [`Self::poll_completions`]; `UIDX`: the CQE version is
    /// 1 (the resolver is given the user index, else the QPN); `STRIDE`:
    /// the entry size (`self.cqe_size.bytes()`).
    ///
    /// Each round first *scans* ownership bytes only ([`Self::scan`]): how
    /// many consecutive entries from the consumer index are fast CQEs
    /// software owns (at most the room left in `out`). Then one
    /// [`platform::from_device_barrier`] orders all those ownership reads
    /// before every field read of the round, and the run is decoded
    /// ([`Self::decode_run`]) with no barrier in between. A scan that
    /// stopped at an entry software owns but the fast path does not decode
    /// (or a compressed session in progress) hands that one entry to the
    /// general step; one software does not own ends the poll. `self.ci` is
    /// written back before the general path runs and at the end.
    #[inline(always)]
    fn lean_loop<const UIDX: bool, const STRIDE: usize, R: WrResolver + ?Sized>(
        &mut self,
        r: &mut R,
        out: &mut [Completion],
    ) -> Result<usize, PollError> {
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
        while n < out.len() {
            let room = out.len() - n;
            let (run, owned_cold) = if self.zip.is_none() {
                ring.scan(ci, room)
            } else {
                (0, true)
            };
            if run != 0 {
                // Every ownership read of the scan before any field read.
                platform::from_device_barrier();
                // The run in at most two pieces contiguous in the ring:
                // up to the ring end, then from entry 0.
                let first = run.min((ncqe - (ci & (ncqe - 1))) as usize);
                let p = ring.entry(ci);
                let (mut done, mut res) =
                    Self::decode_run::<UIDX, STRIDE, R>(r, p, &mut out[n..n + first]);
                if res.is_ok() && first < run {
                    let (more, r2) =
                        Self::decode_run::<UIDX, STRIDE, R>(r, base, &mut out[n + first..n + run]);
                    done += more;
                    res = r2;
                }
                ci = ci.wrapping_add(done as u32);
                if let Err(e) = res {
                    // The refused CQE is consumed too.
                    ci = ci.wrapping_add(1);
                    n += done;
                    failed = Some(e);
                    break;
                }
                n += run;
                if run == room {
                    break;
                }
            }
            if !owned_cold {
                break;
            }
            // A compressed session in progress, or an owned CQE the fast
            // path does not decode.
            self.ci = ci;
            let res = self.lean_cold(r, call_start);
            ci = self.ci;
            match res {
                Ok(Some(c)) => {
                    out[n] = c;
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

    /// Decodes the run of `dst.len()` fast CQEs whose cqe64s are
    /// contiguous in the ring from `p` (scanned, after the barrier) into
    /// `dst`. Requester CQEs of the
    /// resolver's [`SendLane`](crate::sq::SendLane) QP are retired on the
    /// lane's copies of the queue state (written back when the lane drops,
    /// before `r` is used again); every other one through `r`. Returns how
    /// many were written and, if one was refused, its error (that CQE is
    /// the next one, not counted).
    #[inline(never)]
    fn decode_run<const UIDX: bool, const STRIDE: usize, R: WrResolver + ?Sized>(
        r: &mut R,
        mut p: *const u8,
        dst: &mut [Completion],
    ) -> (usize, Result<(), PollError>) {
        // `dst` walked by pointer (one register for the position, one for
        // the end); `done` turns a position back into a count.
        let first = dst.as_mut_ptr();
        let end = first.wrapping_add(dst.len());
        let done = |q: *mut Completion| (q as usize - first as usize) / size_of::<Completion>();
        let mut q = first;
        while q != end {
            if let Some(mut lane) = r.send_lane() {
                let id = lane.id() & 0x00ff_ffff;
                // The lane's routing value as `head_words` returns a CQE's.
                let want = if UIDX { id.swap_bytes() >> 8 } else { id };
                while q != end {
                    // SAFETY: p is the software-owned cqe64 of a scanned
                    // entry, 8-byte aligned.
                    let (tail, key) = unsafe { Self::head_words::<UIDX>(p) };
                    // Opcode bits 5:4 of op_own zero: a requester CQE.
                    if tail & 0x30 != 0 || key != want {
                        break;
                    }
                    let ctr = (tail >> 16) as u16;
                    // SAFETY: ctr is from a requester CQE the device wrote
                    // for the lane's QP (its routing value).
                    match unsafe { lane.retire(ctr) } {
                        // SAFETY: first ≤ q < end: an element of `dst`,
                        // which is borrowed mutably for this call.
                        Ok(d) => Self::req_done(unsafe { &mut *q }, d, tail, p),
                        Err(why) => return (done(q), Err(PollError::reject(id, ctr, why))),
                    }
                    q = q.wrapping_add(1);
                    p = p.wrapping_add(STRIDE);
                }
                if q == end {
                    break;
                }
            }
            // A CQE for another QP, or a responder CQE: through the
            // resolver.
            // SAFETY: as above.
            let (tail, key) = unsafe { Self::head_words::<UIDX>(p) };
            let qp = Self::qp_of::<UIDX>(key);
            // SAFETY: first ≤ q < end, as above.
            if let Err(e) = Self::fast_one(r, unsafe { &mut *q }, p, tail, qp) {
                return (done(q), Err(e));
            }
            q = q.wrapping_add(1);
            p = p.wrapping_add(STRIDE);
        }
        (dst.len(), Ok(()))
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
        let tail = u64::from_be(unsafe { ptr::read_volatile(p.add(56).cast::<u64>()) });
        let key = if UIDX {
            // SAFETY: as above; p + 32 is 4-byte aligned. The low byte of
            // the stored word is byte 32 (the SRQN's top byte), dropped.
            (unsafe { raw32(p, 32) }) >> 8
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
            key.swap_bytes() >> 8
        } else {
            key
        }
    }

    /// Turns the fast CQE at `p` (software-owned, ordered by the barrier,
    /// opcode 0–3 in plain format per its ownership byte), whose
    /// [`head_words`](Self::head_words) are `tail` and `qp`, into `slot`
    /// through the resolver, or returns the refusal.
    #[inline(always)]
    fn fast_one<R: WrResolver + ?Sized>(
        r: &mut R,
        slot: &mut Completion,
        p: *const u8,
        tail: u64,
        qp: u32,
    ) -> Result<(), PollError> {
        let ctr = (tail >> 16) as u16;
        // Opcode bits 5:4 of op_own as this load sees it (opcode 0–3: bits
        // 7:6 were zero in the byte tested before the barrier; a device
        // that rewrites an entry it handed over only changes which fast
        // CQE it is).
        if tail & 0x30 == 0 {
            let d = r
                .send_done(qp, ctr)
                .map_err(|why| PollError::reject(qp, ctr, why))?;
            Self::req_done(slot, d, tail, p);
        } else {
            let d = r
                .recv_done(qp, ctr)
                .map_err(|why| PollError::reject(qp, ctr, why))?;
            *slot = Self::resp((tail as u8 >> 4) & 3, d.wr_id, d.rx_csum, tail, p);
        }
        Ok(())
    }

    /// Writes to `slot` the completion of the successful requester CQE at
    /// `p` (bytes 56..64 `tail`) that retired `d`.
    #[inline(always)]
    fn req_done(slot: &mut Completion, d: SendDone, tail: u64, p: *const u8) {
        let e = REQ_MAP[(tail >> 56) as usize];
        let (word1, rest) = if e & SPECIAL == 0 {
            (tail & QPN_HI, e)
        } else {
            Self::req_special(e, d.wr_data, tail, p)
        };
        *slot = Completion::from_words(d.wr_id, word1, rest);
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
            // on an IPv4 packet. FACTS §5.8.
            // SAFETY: as above.
            let w = unsafe { be32(p, 28) };
            let (hds, l3) = ((w >> 24) as u8, ((w >> 16) as u8 >> 2) & 3);
            if hds & 0x6 == 0x6 && l3 == 2 {
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
    /// [`REQ_MAP`] entry `e` has [`SPECIAL`] bits: RDMA read (`byte_cnt`
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
/// bytes whose cqe64s start at `base`; a run of entries is split at the
/// ring end (the explicit wrap rule of [`Self::scan`] and the decode).
struct LeanRing<const STRIDE: usize> {
    base: *const u8,
    /// A power of two (construction).
    ncqe: u32,
}

impl<const STRIDE: usize> LeanRing<STRIDE> {
    /// The cqe64 of the entry of consumer index `ci`.
    #[inline(always)]
    fn entry(&self, ci: u32) -> *const u8 {
        self.base.wrapping_add((ci & (self.ncqe - 1)) as usize * STRIDE)
    }

    /// How many consecutive entries from consumer index `ci` (at most
    /// `room`) are fast CQEs software owns, by their ownership bytes
    /// alone; and whether the entry that stopped the scan (if `room` did
    /// not) is one software owns (to go through the general step). The
    /// pass parity is constant up to the ring end and flips there.
    #[inline(always)]
    fn scan(&self, ci: u32, room: usize) -> (usize, bool) {
        let mut run = 0usize;
        let mut idx = (ci & (self.ncqe - 1)) as usize;
        let mut parity = ((ci & self.ncqe) != 0) as u8;
        loop {
            // Entries before the ring end, bounded by the room left.
            let seg = (self.ncqe as usize - idx).min(room - run);
            let mut own_p = self.base.wrapping_add(idx * STRIDE + OP_OWN_OFFSET);
            let end = own_p.wrapping_add(seg * STRIDE);
            while own_p != end {
                // SAFETY: own_p is the ownership byte of an entry at index
                // idx..ncqe, inside the ring (ncqe × STRIDE bytes,
                // construction); read alone, by value, with no reference.
                let own = unsafe { ptr::read_volatile(own_p) };
                if (own ^ parity) & FAST_MASK != 0 {
                    run += (own_p as usize - self.base.wrapping_add(idx * STRIDE + OP_OWN_OFFSET) as usize) / STRIDE;
                    return (run, sw_owns(own, ci.wrapping_add(run as u32), self.ncqe));
                }
                own_p = own_p.wrapping_add(STRIDE);
            }
            run += seg;
            if run == room {
                return (run, false);
            }
            idx = 0;
            parity ^= 1;
        }
    }
}

// Spot checks of the requester table (all 256 entries are compared with
// the general path in the tests).
const _: () = {
    let write = Completion::rest(0, 0, WcOpcode::RdmaWrite as u8, CompletionFlags::empty(), 0);
    assert!(REQ_TABLE[0x08] == write);
    let imm = Completion::rest(0, 0, WcOpcode::Send as u8, CompletionFlags::WITH_IMM, 0);
    assert!(REQ_TABLE[0x0b] == imm);
    let read = Completion::rest(0, 0, WcOpcode::RdmaRead as u8, CompletionFlags::empty(), 0);
    assert!(REQ_TABLE[0x10] == read | LEN_BYTE_CNT);
};

#[cfg(test)]
mod tests;
