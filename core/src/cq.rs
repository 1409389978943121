//! The completion queue poll path: ownership test, CQE → work completion,
//! wr_id recovery through the send/receive queues, error CQEs, inline
//! scatter, compressed sessions, the consumer-index doorbell record and
//! arming. [ref §3.7, §4.1, §4.5, §5.3–§5.9](crate::reference).
//!
//! # The boundary with the send and receive queues
//!
//! The CQ does not own the work queues. Every CQE that completes a work
//! request is resolved through a [`WrResolver`] (implemented by whatever
//! owns the QPs/SRQs — usually a small table from QP id to queue): the CQ
//! tells it *which* WQE completed (`qp`, `wqe_counter`), the resolver
//! checks that this names work really in flight, retires the WR(s) and
//! returns the `wr_id` — or says why not ([`CompletionReject`]). `qp` is
//! the user index from `srqn_uidx` with CQE version 1 (what ConnectX-4+
//! contexts use), else the QPN from `sop_drop_qpn`. [ref §5.7](crate::reference).
//!
//! # The device is not trusted
//!
//! A CQE may be wrong, stale, repeated or hostile. One that names an
//! unknown QP or no WR in flight becomes a typed [`PollError`] (naming the
//! QP, the counter and the reason), retires nothing, and is consumed like
//! any other CQE; the next `poll` continues behind it. Compressed sessions
//! are checked per expanded mini-CQE. [`CompletionQueue::clean`] purges a
//! QP's unpolled CQEs when it is reset ([ref §5.10](crate::reference)).
//!
//! # Memory rules
//!
//! The ring and doorbell record are device-visible: they are only touched
//! through raw-pointer volatile reads and writes, never through references.
//! The ownership byte is read first; only when software owns the entry does
//! the poller issue [`platform::from_device_barrier`] and copy the whole
//! CQE out ([ref §5.3, §4.4](crate::reference)).

use crate::cqe::{
    req_completion, sw_owns, Cqe64, CqeFormat, CqeSize, MiniCqe, MiniCqeExpander, MiniCqeFormat,
    WcFlags, WcOpcode, WcStatus, WorkCompletion, WrittenFields, CQE128_SIZE, CQE64_SIZE,
    MINI_CQES_PER_SLOT, OP_OWN_INIT, OP_OWN_OFFSET,
};
use crate::platform::{self, DmaBuf, Uar};
use crate::sq::SendLane;
use core::fmt;
use core::ptr;

/// Index of the SET_CI word in the CQ doorbell record (MLX5_CQ_SET_CI).
/// [ref §4.1](crate::reference).
pub const DBREC_SET_CI: usize = 0;
/// Index of the ARM word in the CQ doorbell record (MLX5_CQ_ARM_DB).
/// [ref §4.1](crate::reference).
pub const DBREC_ARM: usize = 1;
/// Bytes of a CQ doorbell record (two BE32 words). [ref §4.1](crate::reference).
pub const DBREC_BYTES: usize = 8;
/// Arm command: next solicited completion only (MLX5_CQ_DB_REQ_NOT_SOL).
/// [ref §4.5](crate::reference).
pub const CQ_DB_REQ_NOT_SOL: u32 = 1 << 24;
/// Arm command: next completion (MLX5_CQ_DB_REQ_NOT). [ref §4.5](crate::reference).
pub const CQ_DB_REQ_NOT: u32 = 0;
/// Largest CQ the provider creates (2^24 entries). [ref §3.7](crate::reference).
pub const MAX_CQ_ENTRIES: usize = 1 << 24;

/// Copies the 64-byte CQE at `p` out of the ring with eight 8-byte
/// volatile loads (a byte-wise volatile copy costs ~120 instructions).
///
/// # Safety
/// `p` must be valid for reads of 64 bytes and 8-byte aligned (CQ rings
/// are page aligned and entries are 64 or 128 bytes).
#[inline(always)]
unsafe fn read_cqe64(p: *const u8) -> Cqe64 {
    let q = p.cast::<u64>();
    let mut w = [0u64; 8];
    for (i, x) in w.iter_mut().enumerate() {
        // SAFETY: i < 8, so q + i is inside the 64 readable, aligned bytes.
        *x = unsafe { ptr::read_volatile(q.add(i)) };
    }
    // SAFETY: [u64; 8] and [u8; 64] have the same size and every bit
    // pattern is valid for both.
    Cqe64::from_bytes(unsafe { core::mem::transmute::<[u64; 8], [u8; 64]>(w) })
}

pub use crate::retire::{CompletionReject, RecvDone, SendDone};

/// The boundary between the CQ poller and the queues that own work
/// requests. Implemented by whoever owns the QPs/SRQs attached to the CQ.
///
/// `qp` names the queue pair: the user index (`srqn_uidx & 0xffffff`) with
/// CQE version 1, else the QPN (`sop_drop_qpn & 0xffffff`). [ref §5.7](crate::reference).
///
/// The device is not trusted: `*_done` must check that `wqe_counter` names
/// a WR really in flight and return the [`CompletionReject`] reason
/// otherwise, retiring nothing. A rejected CQE is consumed and reported as
/// a [`PollError`]; it never becomes a completion.
///
/// For one CQE the poller calls at most one `scatter_*` method, always
/// *before* the matching `*_done`, so the WQE's buffers are still owned by
/// the queue when the data is copied; a resolver that scatters must apply
/// the same in-flight check there (the CQE may still be rejected).
pub trait WrResolver {
    /// A requester CQE (success or REQ_ERR) for `qp`. If `wqe_counter` is
    /// the first WQEBB of a WQE in flight, retire every WR up to and
    /// including it (`sq.tail = wqe_head[idx] + 1`, idx = `wqe_counter &
    /// (sq.wqe_cnt − 1)`) and return its `wr_id` and `wr_data`; else
    /// retire nothing and say why ([`CompletionReject::UnknownQp`] for an
    /// unknown QP: CQ_POLL_ERR). [ref §1.10, §5.7](crate::reference).
    fn send_done(&mut self, qp: u32, wqe_counter: u16) -> Result<SendDone, CompletionReject>;

    /// A responder CQE (success or RESP_ERR) for `qp`. Non-SRQ: the oldest
    /// outstanding receive, idx = `wqe_counter & (rq.wqe_cnt − 1)`, `wr_id
    /// = rq.wrid[idx]`, `rq.tail += 1`. SRQ: slot = `wqe_counter`
    /// (unmasked), which must hold a posted WQE; free it. Otherwise retire
    /// nothing and say why. [ref §5.8](crate::reference).
    fn recv_done(&mut self, qp: u32, wqe_counter: u16) -> Result<RecvDone, CompletionReject>;

    /// Inline scatter on a requester CQE (small RDMA-read response or
    /// atomic result): copy `data` into the local SGEs of the send WQE at
    /// `wqe_counter` ([ref §5.7](crate::reference)). `data` is the completion's byte count
    /// (byte_cnt for RDMA_READ, 8 for atomics) taken from the start of the
    /// inline area, as the provider copies it, bounded by the CQE entry.
    /// Return `false` if it does not fit (the completion then reports
    /// [`WcStatus::LocLenErr`]), the QP is unknown or the WQE is not in
    /// flight (copy nothing then).
    fn scatter_to_send(&mut self, qp: u32, wqe_counter: u16, data: &[u8]) -> bool;

    /// Inline scatter on a responder CQE: copy `data` into the buffers of
    /// the receive WQE (RQ index or SRQ slot from `wqe_counter`, as in
    /// [`Self::recv_done`]). Return `false` if it does not fit
    /// ([`WcStatus::LocLenErr`]), the QP is unknown or the WQE is not
    /// outstanding. [ref §5.8](crate::reference).
    fn scatter_to_recv(&mut self, qp: u32, wqe_counter: u16, data: &[u8]) -> bool;

    /// The send queue most of this CQ's requester CQEs are for, as a
    /// [`SendLane`] (its completion state in registers for a run of CQEs),
    /// or `None` (the default: every CQE goes through [`Self::send_done`]).
    /// The lean poller ([`CompletionQueue::poll_completions`]) retires a
    /// requester CQE whose QP field equals the lane's routing value through
    /// the lane, which applies exactly the checks `send_done` applies for
    /// that QP; a lane must therefore be the queue `send_done` would use
    /// for that value (a lane can only be made that way: the constructor,
    /// [`SendQueue::send_lane`](crate::sq::SendQueue::send_lane), is
    /// `unsafe` with that contract, and `QueuePair`'s own lane keeps it).
    #[inline(always)]
    fn send_lane(&mut self) -> Option<SendLane<'_>> {
        None
    }
}

impl<R: WrResolver + ?Sized> WrResolver for &mut R {
    fn send_done(&mut self, qp: u32, wqe_counter: u16) -> Result<SendDone, CompletionReject> {
        (**self).send_done(qp, wqe_counter)
    }
    fn recv_done(&mut self, qp: u32, wqe_counter: u16) -> Result<RecvDone, CompletionReject> {
        (**self).recv_done(qp, wqe_counter)
    }
    fn scatter_to_send(&mut self, qp: u32, wqe_counter: u16, data: &[u8]) -> bool {
        (**self).scatter_to_send(qp, wqe_counter, data)
    }
    fn scatter_to_recv(&mut self, qp: u32, wqe_counter: u16, data: &[u8]) -> bool {
        (**self).scatter_to_recv(qp, wqe_counter, data)
    }
    #[inline(always)]
    fn send_lane(&mut self) -> Option<SendLane<'_>> {
        (**self).send_lane()
    }
}

/// A poll that stopped on a CQE it could not turn into a completion
/// (the provider's CQ_POLL_ERR, `ibv_poll_cq` returning −2). The offending
/// CQE has been consumed: the consumer index is past it and the doorbell
/// record was updated. The first `completions` entries of the output slice
/// hold valid completions consumed before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PollError {
    /// The CQE names a QP/SRQ the resolver does not know.
    UnknownQp {
        /// The user index (CQE version 1) or QPN.
        qp: u32,
        /// Valid completions written before the error.
        completions: usize,
    },
    /// The CQE (or an expanded mini-CQE) names a known queue but no work
    /// request it could complete: see `why`. Nothing was retired. In a
    /// compressed session the rest of the session is consumed without
    /// producing completions.
    Rejected {
        /// The user index (CQE version 1) or QPN.
        qp: u32,
        /// The CQE's `wqe_counter`.
        wqe_counter: u16,
        /// Why the queue refused it.
        why: CompletionReject,
        /// Valid completions written before the error.
        completions: usize,
    },
    /// A compressed-session title with an impossible mini-CQE count.
    BadCompressedSession {
        /// Consumer position of the title.
        position: u32,
        /// The title's count (`byte_cnt`).
        count: u32,
        /// Valid completions written before the error.
        completions: usize,
    },
}

impl PollError {
    /// Valid completions written to the output before the error.
    pub const fn completions(&self) -> usize {
        match *self {
            PollError::UnknownQp { completions, .. }
            | PollError::Rejected { completions, .. }
            | PollError::BadCompressedSession { completions, .. } => completions,
        }
    }

    /// The same error with `completions` set to `n`.
    const fn with_completions(self, n: usize) -> Self {
        match self {
            PollError::UnknownQp { qp, .. } => PollError::UnknownQp { qp, completions: n },
            PollError::Rejected {
                qp,
                wqe_counter,
                why,
                ..
            } => PollError::Rejected {
                qp,
                wqe_counter,
                why,
                completions: n,
            },
            PollError::BadCompressedSession {
                position, count, ..
            } => PollError::BadCompressedSession {
                position,
                count,
                completions: n,
            },
        }
    }

    /// The error for a CQE of `qp` / `wqe_counter` refused for `why`.
    const fn reject(qp: u32, wqe_counter: u16, why: CompletionReject) -> Self {
        match why {
            CompletionReject::UnknownQp => PollError::UnknownQp { qp, completions: 0 },
            _ => PollError::Rejected {
                qp,
                wqe_counter,
                why,
                completions: 0,
            },
        }
    }
}

impl fmt::Display for PollError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PollError::UnknownQp { qp, .. } => write!(f, "CQE names unknown QP/SRQ {qp:#x}"),
            PollError::Rejected {
                qp,
                wqe_counter,
                why,
                ..
            } => write!(
                f,
                "CQE for QP {qp:#x} with wqe_counter {wqe_counter:#x} rejected: {why}"
            ),
            PollError::BadCompressedSession {
                position, count, ..
            } => {
                write!(
                    f,
                    "compressed CQE title at {position} with bad count {count}"
                )
            }
        }
    }
}

impl core::error::Error for PollError {}

/// Why a completion queue could not be built.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CqError {
    /// The entry count is not a power of two in `2..=2^24`. [ref §3.7](crate::reference).
    BadEntryCount {
        /// The count given.
        ncqe: usize,
    },
    /// The ring buffer is shorter than `ncqe × cqe_size`.
    RingTooSmall {
        /// Bytes needed.
        need: usize,
        /// Bytes given.
        have: usize,
    },
    /// The doorbell record is shorter than 8 bytes.
    DbrecTooSmall {
        /// Bytes given.
        have: usize,
    },
    /// The ring or the doorbell record is not 8-byte aligned (CQEs are
    /// copied out with 8-byte loads).
    Misaligned {
        /// The misaligned CPU address.
        addr: usize,
    },
    /// CQE version other than 0 or 1.
    BadCqeVersion {
        /// The version given.
        version: u8,
    },
    /// The queue's entry count is not the one the CQ was created with.
    EntriesDisagree {
        /// Entries of the queue type.
        queue: usize,
        /// Entries the device's CQ has.
        created: u32,
    },
}

impl fmt::Display for CqError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CqError::BadEntryCount { ncqe } => {
                write!(f, "CQ entries {ncqe} not a power of two in 2..=2^24")
            }
            CqError::RingTooSmall { need, have } => {
                write!(f, "CQ ring needs {need} bytes, has {have}")
            }
            CqError::DbrecTooSmall { have } => {
                write!(f, "CQ doorbell record needs 8 bytes, has {have}")
            }
            CqError::Misaligned { addr } => {
                write!(f, "CQ memory at {addr:#x} is not 8-byte aligned")
            }
            CqError::EntriesDisagree { queue, created } => write!(
                f,
                "a {queue}-entry completion queue over a CQ created with {created} entries"
            ),
            CqError::BadCqeVersion { version } => write!(f, "CQE version {version} (0 or 1)"),
        }
    }
}

impl core::error::Error for CqError {}

/// Outcome of one step of the general poll path ([`CompletionQueue::step`]).
enum Step {
    /// Software owns no entry at the consumer index: nothing consumed.
    Empty,
    /// One completion written; the CQE (or mini-CQE) consumed.
    Done,
    /// The CQE was consumed but is no completion.
    Failed(PollError),
}

#[derive(Clone, Copy, Debug)]
struct ZipState {
    exp: MiniCqeExpander,
    next: u32,
    arr: [u8; 64],
}

/// A completion queue of `N` entries (a power of two, checked at compile
/// time) over a DMA ring and doorbell record. `N = 0` is the runtime-sized
/// variant ([`DynCompletionQueue`], built with
/// [`CompletionQueue::with_entries`]).
pub struct CompletionQueue<const N: usize> {
    ring: DmaBuf,
    dbrec: DmaBuf,
    ncqe: u32,
    ci: u32,
    cqn: u32,
    cqe_size: CqeSize,
    cqe_version: u8,
    arm_sn: u32,
    mini_format: MiniCqeFormat,
    zip: Option<ZipState>,
}

/// A completion queue whose entry count is known only at run time.
pub type DynCompletionQueue = CompletionQueue<0>;

impl<const N: usize> fmt::Debug for CompletionQueue<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompletionQueue")
            .field("cqn", &self.cqn)
            .field("ncqe", &self.ncqe)
            .field("ci", &self.ci)
            .field("cqe_size", &self.cqe_size)
            .field("cqe_version", &self.cqe_version)
            .field("arm_sn", &self.arm_sn)
            .finish()
    }
}

impl<const N: usize> CompletionQueue<N> {
    /// Compile-time check of `N`: a power of two in `2..=2^24`. [ref §3.7](crate::reference).
    pub const OK: () = assert!(
        N >= 2 && N.is_power_of_two() && N <= MAX_CQ_ENTRIES,
        "CompletionQueue<N>: N must be a power of two in 2..=2^24"
    );

    /// A CQ of `N` entries over `ring` (at least `N × cqe_size` bytes) and
    /// `dbrec` (8 bytes), with CQ number `cqn` and CQE version 0 or 1.
    /// The consumer index starts at 0; call [`Self::init_ring`] unless the
    /// ring already holds initialised entries.
    ///
    /// Refuses (typed [`CqError`]) a bad entry count, short buffers, a ring
    /// or record that is not 8-byte aligned and a CQE version above 1.
    ///
    /// # Safety
    /// For the whole life of the returned value, `ring` and `dbrec` must
    /// be valid for reads and writes of their lengths (the ring is read
    /// with 8-byte volatile loads; its 8-byte alignment is checked here),
    /// must not be
    /// accessed through Rust references, and may be written concurrently
    /// only by the device (and only as the mlx5 CQ protocol allows).
    pub unsafe fn new(
        ring: DmaBuf,
        dbrec: DmaBuf,
        cqn: u32,
        cqe_size: CqeSize,
        cqe_version: u8,
    ) -> Result<Self, CqError> {
        #[allow(clippy::let_unit_value)]
        let () = Self::OK;
        Self::build(N, ring, dbrec, cqn, cqe_size, cqe_version)
    }

    fn build(
        ncqe: usize,
        ring: DmaBuf,
        dbrec: DmaBuf,
        cqn: u32,
        cqe_size: CqeSize,
        cqe_version: u8,
    ) -> Result<Self, CqError> {
        if ncqe < 2 || !ncqe.is_power_of_two() || ncqe > MAX_CQ_ENTRIES {
            return Err(CqError::BadEntryCount { ncqe });
        }
        let need = ncqe * cqe_size.bytes();
        if ring.len < need {
            return Err(CqError::RingTooSmall {
                need,
                have: ring.len,
            });
        }
        if dbrec.len < DBREC_BYTES {
            return Err(CqError::DbrecTooSmall { have: dbrec.len });
        }
        for p in [ring.cpu, dbrec.cpu] {
            if !p.cast::<u64>().as_ptr().is_aligned() {
                return Err(CqError::Misaligned {
                    addr: p.as_ptr().addr(),
                });
            }
        }
        if cqe_version > 1 {
            return Err(CqError::BadCqeVersion {
                version: cqe_version,
            });
        }
        Ok(CompletionQueue {
            ring,
            dbrec,
            ncqe: ncqe as u32,
            ci: 0,
            cqn,
            cqe_size,
            cqe_version,
            arm_sn: 0,
            mini_format: MiniCqeFormat::default(),
            zip: None,
        })
    }

    /// Number of entries (`ibv_cq.cqe + 1`).
    #[inline(always)]
    pub const fn ncqe(&self) -> u32 {
        if N != 0 {
            N as u32
        } else {
            self.ncqe
        }
    }
    /// The free-running consumer index.
    #[inline(always)]
    pub const fn consumer_index(&self) -> u32 {
        self.ci
    }
    /// Sets the consumer index (resuming a CQ, replaying vectors). Does not
    /// touch the doorbell record and drops any half-consumed compressed
    /// session.
    pub fn set_consumer_index(&mut self, ci: u32) {
        self.ci = ci;
        self.zip = None;
    }
    /// The CQ number.
    #[inline(always)]
    pub const fn cqn(&self) -> u32 {
        self.cqn
    }
    /// CQE size.
    #[inline(always)]
    pub const fn cqe_size(&self) -> CqeSize {
        self.cqe_size
    }
    /// CQE version (1: CQEs carry the user index).
    #[inline(always)]
    pub const fn cqe_version(&self) -> u8 {
        self.cqe_version
    }
    /// Selects the mini-CQE content used when expanding compressed
    /// sessions (must match `cqc.mini_cqe_res_format`). [ref §5.9](crate::reference).
    pub fn set_mini_cqe_format(&mut self, f: MiniCqeFormat) {
        self.mini_format = f;
    }
    /// Current arm sequence number.
    #[inline(always)]
    pub const fn arm_sn(&self) -> u32 {
        self.arm_sn
    }
    /// Records that a completion event for this CQ was consumed
    /// (`arm_sn += 1`, as mlx5_cq_event does). [ref §4.5](crate::reference).
    pub fn event_consumed(&mut self) {
        self.arm_sn = self.arm_sn.wrapping_add(1);
    }
    /// The ring buffer.
    pub const fn ring(&self) -> DmaBuf {
        self.ring
    }
    /// The doorbell record.
    pub const fn dbrec(&self) -> DmaBuf {
        self.dbrec
    }

    /// Pointer to the cqe64 of the entry at consumer position `pos`.
    #[inline(always)]
    fn cqe64_ptr(&self, pos: u32) -> *mut u8 {
        let idx = (pos & (self.ncqe() - 1)) as usize;
        let off = idx * self.cqe_size.bytes() + self.cqe_size.cqe64_offset();
        // SAFETY: idx < ncqe and the ring holds ncqe × cqe_size bytes
        // (checked at construction), so off + 64 <= ring.len.
        unsafe { self.ring.cpu.as_ptr().add(off) }
    }

    /// Writes every entry as zeros with `op_own = 0xF0` (opcode INVALID,
    /// owner 0) in the cqe64 (offset 0, or 64 for 128-byte CQEs) and resets
    /// nothing else. [ref §3.7](crate::reference).
    pub fn init_ring(&mut self) {
        let words = self.cqe_size.bytes() / 8;
        // The word holding op_own (byte 63 of the cqe64) and its bytes.
        let own_word = (self.cqe_size.cqe64_offset() + OP_OWN_OFFSET) / 8;
        let mut own = [0u8; 8];
        own[OP_OWN_OFFSET % 8] = OP_OWN_INIT;
        let own = u64::from_ne_bytes(own);
        for i in 0..self.ncqe() {
            let base = self
                .cqe64_ptr(i)
                .wrapping_sub(self.cqe_size.cqe64_offset())
                .cast::<u64>();
            for k in 0..words {
                let v = if k == own_word { own } else { 0 };
                // SAFETY: `base` is the start of entry i, valid for the
                // entry's 64 or 128 bytes of writes and 8-byte aligned
                // (construction checks the ring's alignment; entries are
                // multiples of 64 bytes), so word k < bytes / 8 is inside
                // it; a volatile store creates no reference. The stored
                // bytes are the same on any host (from_ne_bytes of a byte
                // array).
                unsafe { ptr::write_volatile(base.add(k), v) };
            }
        }
    }

    /// Stores `BE32(ci & 0xffffff)` into the SET_CI word. [ref §4.1, §4.5](crate::reference).
    #[inline(always)]
    pub fn publish_ci(&mut self) {
        // Order the CQE reads of this batch before the store that hands the
        // slots back to the device.
        core::sync::atomic::fence(core::sync::atomic::Ordering::Release);
        self.write_dbrec(DBREC_SET_CI, self.ci & 0x00ff_ffff);
    }

    #[inline(always)]
    fn write_dbrec(&mut self, word: usize, v: u32) {
        let p = self.dbrec.cpu.as_ptr().wrapping_add(word * 4).cast::<u32>();
        // SAFETY: the record is at least 8 bytes and 8-byte aligned
        // (construction) and word is 0 or 1, so p is valid and aligned for
        // a 4-byte store; volatile keeps the store. The stored bytes are
        // BE32(v) on any host.
        unsafe { ptr::write_volatile(p, u32::from_ne_bytes(v.to_be_bytes())) };
    }

    /// Reads the doorbell record word `word` (0 = SET_CI, 1 = ARM) as a
    /// host value.
    pub fn read_dbrec(&self, word: usize) -> u32 {
        if word > 1 {
            return 0;
        }
        let p = self
            .dbrec
            .cpu
            .as_ptr()
            .wrapping_add(word * 4)
            .cast::<[u8; 4]>();
        // SAFETY: as in write_dbrec: in bounds, alignment 1, raw read.
        u32::from_be_bytes(unsafe { ptr::read_volatile(p) })
    }

    /// Requests a completion event: `arm = (arm_sn & 3) << 28 | cmd | (ci &
    /// 0xffffff)` with cmd = [`CQ_DB_REQ_NOT_SOL`] when `solicited_only`,
    /// else [`CQ_DB_REQ_NOT`]; stores BE32(arm) in the ARM word of the
    /// record, then one 64-bit big-endian MMIO write of `arm << 32 | cqn`
    /// at UAR + 0x20, bracketed by write-combining flushes. [ref §4.5](crate::reference).
    pub fn arm<U: Uar + ?Sized>(&mut self, solicited_only: bool, uar: &mut U) {
        let sn = self.arm_sn & 3;
        let cmd = if solicited_only {
            CQ_DB_REQ_NOT_SOL
        } else {
            CQ_DB_REQ_NOT
        };
        let arm = (sn << 28) | cmd | (self.ci & 0x00ff_ffff);
        self.write_dbrec(DBREC_ARM, arm);
        platform::to_device_barrier();
        uar.flush();
        let v = ((arm as u64) << 32) | self.cqn as u64;
        uar.write64(platform::CQ_DOORBELL, v.to_be_bytes());
        uar.flush();
    }

    /// Returns a copy of the CQE at the consumer index if software owns
    /// it, without consuming it.
    pub fn peek(&self) -> Option<Cqe64> {
        let p = self.cqe64_ptr(self.ci);
        // SAFETY: p is a valid cqe64 of the ring (cqe64_ptr); raw volatile
        // read of one byte.
        let op_own = unsafe { ptr::read_volatile(p.add(OP_OWN_OFFSET)) };
        if !sw_owns(op_own, self.ci, self.ncqe()) {
            return None;
        }
        platform::from_device_barrier();
        // SAFETY: 64 bytes at p are inside the ring; [u8; 64] has
        // alignment 1.
        Some(Cqe64::from_bytes(unsafe {
            ptr::read_volatile(p.cast::<[u8; 64]>())
        }))
    }

    /// Polls up to `out.len()` completions, exactly as the mlx5 provider's
    /// `ibv_poll_cq` does: stops at the first entry software does not own
    /// (or INVALID), consumes each owned CQE (`ci += 1`), turns it into a
    /// [`WorkCompletion`] through `r`, and finally stores SET_CI in the
    /// doorbell record — once per call, even when nothing was polled.
    /// RESIZE_CQ (and other CQE opcodes that complete no WR) count as a
    /// completion with only `qp_num` and `wc_flags` written. Compressed
    /// sessions are expanded in place. [ref §4.5, §5.3–§5.9](crate::reference).
    ///
    /// Not modelled: ODP page-fault error CQEs on SRQs (syndrome 0x22 with
    /// vendor syndrome 0x93), which rdma-core consumes internally, are
    /// reported like any other error CQE; NO_PACKET and SIG_ERR CQEs are
    /// treated like RESIZE_CQ.
    ///
    /// Every CQE that completes a work request is checked by the resolver
    /// (the device is not trusted): one naming an unknown QP, or a WQE that
    /// is not in flight (phantom, repeated, stale, out of order), becomes a
    /// [`PollError`] instead of a completion and retires nothing. In a
    /// compressed session each expanded mini-CQE is checked the same way;
    /// after the first refused one the rest of the session is consumed
    /// without producing completions.
    ///
    /// Returns the number of completions written to `out`, or a
    /// [`PollError`] (CQ_POLL_ERR) for the first CQE that could not be
    /// turned into a completion; that CQE is consumed, the record is still
    /// updated, and the next call continues with the next CQE.
    #[inline]
    pub fn poll<R: WrResolver + ?Sized>(
        &mut self,
        r: &mut R,
        out: &mut [WorkCompletion],
    ) -> Result<usize, PollError> {
        let call_start = self.ci;
        let mut n = 0;
        let mut res = Ok(());
        for slot in out.iter_mut() {
            match self.step(r, call_start, slot) {
                Step::Done => n += 1,
                Step::Empty => break,
                Step::Failed(e) => {
                    res = Err(e);
                    break;
                }
            }
        }
        self.publish_ci();
        match res {
            Ok(()) => Ok(n),
            Err(e) => Err(e.with_completions(n)),
        }
    }

    /// One step of the general poll path: the next completion of a
    /// compressed session in progress, or the CQE at the consumer index if
    /// software owns it (a compressed title starts a session). Writes
    /// `slot` on [`Step::Done`]; consumes the CQE (advances `ci`) on
    /// [`Step::Done`] and [`Step::Failed`]; does not touch the doorbell
    /// record. `call_start` is the consumer index when the poll call began.
    #[inline(always)]
    fn step<R: WrResolver + ?Sized>(
        &mut self,
        r: &mut R,
        call_start: u32,
        slot: &mut WorkCompletion,
    ) -> Step {
        if self.zip.is_some() {
            return match self.poll_zip(r) {
                Ok(wc) => {
                    *slot = wc;
                    Step::Done
                }
                Err(e) => Step::Failed(e),
            };
        }
        let pos = self.ci;
        let p = self.cqe64_ptr(pos);
        // SAFETY: p points at a cqe64 inside the ring (cqe64_ptr); the
        // ownership byte is read alone, by value, with no reference.
        let op_own = unsafe { ptr::read_volatile(p.add(OP_OWN_OFFSET)) };
        if !sw_owns(op_own, pos, self.ncqe()) {
            return Step::Empty;
        }
        platform::from_device_barrier();
        // SAFETY: the 64 bytes at p are inside the ring and software
        // owns the entry (checked above, ordered by the barrier).
        let cqe = unsafe { read_cqe64(p) };
        if cqe.format() == CqeFormat::Compressed as u8 {
            return match self
                .start_zip(cqe, pos, call_start)
                .and_then(|()| self.poll_zip(r))
            {
                Ok(wc) => {
                    *slot = wc;
                    Step::Done
                }
                Err(e) => Step::Failed(e),
            };
        }
        self.ci = pos.wrapping_add(1);
        match self.complete(&cqe, p, r, slot) {
            Ok(()) => Step::Done,
            Err(e) => Step::Failed(e),
        }
    }

    /// Turns one owned CQE into a completion. `p` is its cqe64 in the ring
    /// (used only for inline-scatter-64 data). A CQE the resolver refuses
    /// is an error (`wc` is then garbage).
    #[inline(always)]
    fn complete<R: WrResolver + ?Sized>(
        &self,
        cqe: &Cqe64,
        p: *const u8,
        r: &mut R,
        wc: &mut WorkCompletion,
    ) -> Result<(), PollError> {
        *wc = WorkCompletion {
            qp_num: cqe.qpn(),
            written: WrittenFields::COMMON,
            ..WorkCompletion::default()
        };
        let qp = if self.cqe_version == 1 {
            cqe.uidx()
        } else {
            cqe.qpn()
        };
        match cqe.opcode() {
            0 => {
                let mut status = WcStatus::Success;
                if cqe.format() != 0 {
                    status = self.scatter(cqe, p, r, qp, true);
                }
                let d = r
                    .send_done(qp, cqe.wqe_counter())
                    .map_err(|why| PollError::reject(qp, cqe.wqe_counter(), why))?;
                let m = req_completion(cqe.send_wqe_opcode(), d.wr_data, cqe.byte_cnt());
                wc.wr_id = d.wr_id;
                wc.status = status;
                wc.wc_flags = m.flags;
                wc.written |= WrittenFields::WR_ID | WrittenFields::STATUS;
                if let Some(o) = m.opcode {
                    wc.opcode = o;
                    wc.written |= WrittenFields::OPCODE;
                }
                if let Some(b) = m.byte_len {
                    wc.byte_len = b;
                    wc.written |= WrittenFields::BYTE_LEN;
                }
            }
            op @ 1..=4 => {
                let mut status = WcStatus::Success;
                if cqe.format() != 0 {
                    status = self.scatter(cqe, p, r, qp, false);
                }
                let d = r
                    .recv_done(qp, cqe.wqe_counter())
                    .map_err(|why| PollError::reject(qp, cqe.wqe_counter(), why))?;
                wc.wr_id = d.wr_id;
                wc.status = status;
                wc.byte_len = cqe.byte_cnt();
                if status != WcStatus::Success {
                    // The provider returns right after a failed copy.
                    wc.written |=
                        WrittenFields::WR_ID | WrittenFields::STATUS | WrittenFields::BYTE_LEN;
                    return Ok(());
                }
                wc.written |= WrittenFields::WR_ID
                    | WrittenFields::STATUS
                    | WrittenFields::OPCODE
                    | WrittenFields::RESPONDER;
                let raw = cqe.imm_inval_pkey_raw();
                match op {
                    1 => {
                        wc.opcode = WcOpcode::RecvRdmaWithImm;
                        wc.imm_data = u32::from_ne_bytes(raw);
                        wc.wc_flags = WcFlags::WITH_IMM;
                        wc.written |= WrittenFields::IMM_DATA;
                    }
                    2 => wc.opcode = WcOpcode::Recv,
                    3 => {
                        wc.opcode = WcOpcode::Recv;
                        wc.imm_data = u32::from_ne_bytes(raw);
                        wc.wc_flags = WcFlags::WITH_IMM;
                        wc.written |= WrittenFields::IMM_DATA;
                    }
                    _ => {
                        wc.opcode = WcOpcode::Recv;
                        wc.invalidated_rkey = cqe.imm_inval_pkey();
                        wc.wc_flags = WcFlags::WITH_INV;
                        wc.written |= WrittenFields::INVALIDATED_RKEY;
                    }
                }
                wc.src_qp = cqe.src_qp();
                wc.sl = cqe.sl();
                if cqe.grh() != 0 {
                    wc.wc_flags |= WcFlags::GRH;
                }
                wc.slid = cqe.slid();
                wc.dlid_path_bits = cqe.dlid_path_bits();
                wc.pkey_index = cqe.imm_inval_pkey() as u16;
                // L3_OK and L4_OK on an IPv4 packet.
                if d.rx_csum && cqe.hds_ip_ext() & 0x6 == 0x6 && cqe.l3_hdr_type() == 2 {
                    wc.wc_flags |= WcFlags::IP_CSUM_OK;
                }
            }
            13 | 14 => return Self::complete_error(cqe, r, qp, wc),
            // RESIZE_CQ, NO_PACKET, SIG_ERR and undefined opcodes complete
            // no work request: counted, only qp_num and wc_flags written.
            _ => {}
        }
        Ok(())
    }

    #[cold]
    #[inline(never)]
    fn complete_error<R: WrResolver + ?Sized>(
        cqe: &Cqe64,
        r: &mut R,
        qp: u32,
        wc: &mut WorkCompletion,
    ) -> Result<(), PollError> {
        let e = cqe.as_err();
        let ctr = e.wqe_counter();
        let wr_id = if cqe.opcode() == 13 {
            r.send_done(qp, ctr).map(|d| d.wr_id)
        } else {
            r.recv_done(qp, ctr).map(|d| d.wr_id)
        }
        .map_err(|why| PollError::reject(qp, ctr, why))?;
        wc.wr_id = wr_id;
        wc.status = e.status();
        wc.vendor_err = e.vendor_err_synd() as u32;
        wc.written |= WrittenFields::WR_ID | WrittenFields::STATUS | WrittenFields::VENDOR_ERR;
        Ok(())
    }
    /// Inline scatter (format 1 or 2): hands the data to the resolver.
    /// Format 2 data is the 64 bytes before the cqe64, which exist only with
    /// 128-byte CQEs; on a 64-byte CQ it is treated as empty.
    #[cold]
    #[inline(never)]
    fn scatter<R: WrResolver + ?Sized>(
        &self,
        cqe: &Cqe64,
        p: *const u8,
        r: &mut R,
        qp: u32,
        send: bool,
    ) -> WcStatus {
        let len = if send {
            req_completion(cqe.send_wqe_opcode(), WcOpcode::Send, cqe.byte_cnt())
                .byte_len
                .unwrap_or(cqe.byte_cnt())
        } else {
            cqe.byte_cnt()
        } as usize;
        // As the provider does, `len` bytes are copied from the start of
        // the inline area; here the copy is bounded by the entry (64 bytes
        // of cqe64 for format 1, the whole 128-byte entry for format 2).
        let buf: [u8; CQE128_SIZE];
        let data: &[u8] = match cqe.format_kind() {
            CqeFormat::InlineScatter32 => &cqe.as_bytes()[..len.min(CQE64_SIZE)],
            CqeFormat::InlineScatter64 if self.cqe_size == CqeSize::B128 => {
                let mut b = [0u8; CQE128_SIZE];
                // SAFETY: with 128-byte CQEs the cqe64 is the second half
                // of its entry, so the 64 bytes before `p` are the first
                // half of the same entry, inside the ring; the entry is
                // software-owned (checked before this call).
                let front = unsafe { ptr::read_volatile(p.sub(64).cast::<[u8; 64]>()) };
                b[..64].copy_from_slice(&front);
                b[64..].copy_from_slice(cqe.as_bytes());
                buf = b;
                &buf[..len.min(CQE128_SIZE)]
            }
            _ => &[],
        };
        let ok = if send {
            r.scatter_to_send(qp, cqe.wqe_counter(), data)
        } else {
            r.scatter_to_recv(qp, cqe.wqe_counter(), data)
        };
        if ok {
            WcStatus::Success
        } else {
            WcStatus::LocLenErr
        }
    }

    /// Begins a compressed session whose title is at `pos`.
    #[cold]
    #[inline(never)]
    /// A session may not cover positions this poll call already consumed
    /// (`call_start..pos`): an honest device publishes a session only over
    /// entries software has not consumed, so a title claiming more is
    /// refused like an impossible count, and one call never consumes more
    /// than one lap of the ring.
    fn start_zip(&mut self, title: Cqe64, pos: u32, call_start: u32) -> Result<(), PollError> {
        let used = pos.wrapping_sub(call_start) as u64;
        let fits = used + title.byte_cnt() as u64 <= self.ncqe() as u64;
        match MiniCqeExpander::new(title, pos, self.ncqe(), self.mini_format) {
            Ok(exp) if fits => {
                self.zip = Some(ZipState {
                    exp,
                    next: 0,
                    arr: [0; 64],
                });
                Ok(())
            }
            _ => {
                // Consume the bad title so the poller does not spin on it.
                self.ci = pos.wrapping_add(1);
                Err(PollError::BadCompressedSession {
                    position: pos,
                    count: title.byte_cnt(),
                    completions: 0,
                })
            }
        }
    }

    /// Produces the next completion of the current compressed session:
    /// loads the next mini-CQE array when a group starts, expands, marks the
    /// consumed ring position INVALID (so a stale copy is never taken for a
    /// new CQE on a later pass), advances `ci`. An expanded CQE that
    /// completes no work request, or that its queue refuses, ends the
    /// session: its remaining positions are consumed (and marked INVALID)
    /// without producing completions, and the refusal is returned.
    #[cold]
    #[inline(never)]
    fn poll_zip<R: WrResolver + ?Sized>(&mut self, r: &mut R) -> Result<WorkCompletion, PollError> {
        let Some(mut z) = self.zip else {
            return Err(PollError::BadCompressedSession {
                position: self.ci,
                count: 0,
                completions: 0,
            });
        };
        let i = z.next;
        let pos = z.exp.title_pos().wrapping_add(i);
        let slot = i as usize % MINI_CQES_PER_SLOT;
        if slot == 0 {
            let ap = self.cqe64_ptr(z.exp.array_position(i / MINI_CQES_PER_SLOT as u32));
            // SAFETY: ap is a cqe64 inside the ring; the session was
            // published with its title, which software owns.
            z.arr = unsafe { ptr::read_volatile(ap.cast::<[u8; 64]>()) };
        }
        let mini = MiniCqe::from_array(&z.arr, slot).unwrap_or_default();
        let cqe = z.exp.expand(i, &mini);
        let p = self.cqe64_ptr(pos);
        self.invalidate(pos);
        z.next = i + 1;
        self.zip = if z.next >= z.exp.count() {
            None
        } else {
            Some(z)
        };
        self.ci = pos.wrapping_add(1);
        let mut wc = WorkCompletion::default();
        let res = if matches!(cqe.opcode(), 0..=4 | 13 | 14) {
            self.complete(&cqe, p, r, &mut wc)
        } else {
            let qp = if self.cqe_version == 1 {
                cqe.uidx()
            } else {
                cqe.qpn()
            };
            Err(PollError::reject(
                qp,
                cqe.wqe_counter(),
                CompletionReject::NoWorkRequest,
            ))
        };
        match res {
            Ok(()) => Ok(wc),
            Err(e) => {
                self.skip_zip();
                Err(e)
            }
        }
    }

    /// Consumes the rest of the current compressed session without
    /// producing completions.
    #[cold]
    fn skip_zip(&mut self) {
        if let Some(z) = self.zip.take() {
            let end = z.exp.title_pos().wrapping_add(z.exp.count());
            let mut pos = self.ci;
            while pos != end {
                self.invalidate(pos);
                pos = pos.wrapping_add(1);
            }
            self.ci = end;
        }
    }

    /// Marks the entry at consumer position `pos` INVALID (owner bit 0).
    #[inline(always)]
    fn invalidate(&mut self, pos: u32) {
        let p = self.cqe64_ptr(pos);
        // SAFETY: p is a cqe64 inside the ring, owned by software until the
        // consumer index is published past it; one-byte volatile store.
        unsafe { ptr::write_volatile(p.add(OP_OWN_OFFSET), OP_OWN_INIT) };
    }

    /// Purges the completions of QP `qp` (user index with CQE version 1,
    /// else QPN — the same id the resolvers see) that software owns but
    /// has not polled, as a move to RESET or a destroy requires
    /// ([ref §5.10](crate::reference)): scans from the consumer index over the software-owned
    /// entries (at most `ncqe − 1`, stopping at the first device-owned or
    /// INVALID entry, or at a compressed title), drops those naming `qp`,
    /// moves the surviving older entries forward over the gaps (keeping
    /// their order and giving each the owner bit of its new slot), marks
    /// the freed slots INVALID, advances the consumer index by the number
    /// dropped and republishes SET_CI. `dropped` is called with each
    /// dropped CQE, oldest last (e.g. to free the SRQ slot a receive
    /// consumed). Does nothing while a compressed session is half consumed.
    /// Returns the number of CQEs dropped.
    pub fn clean_with<F: FnMut(&Cqe64)>(&mut self, qp: u32, mut dropped: F) -> u32 {
        if self.zip.is_some() {
            return 0;
        }
        let ncqe = self.ncqe();
        let mut pi = self.ci;
        while pi.wrapping_sub(self.ci) < ncqe - 1 {
            let p = self.cqe64_ptr(pi);
            // SAFETY: p is a cqe64 inside the ring; one-byte volatile read.
            let op_own = unsafe { ptr::read_volatile(p.add(OP_OWN_OFFSET)) };
            if !sw_owns(op_own, pi, ncqe) || (op_own >> 2) & 3 == CqeFormat::Compressed as u8 {
                break;
            }
            pi = pi.wrapping_add(1);
        }
        platform::from_device_barrier();
        let sz = self.cqe_size.bytes();
        let off64 = self.cqe_size.cqe64_offset();
        let mut nfreed = 0u32;
        let mut pos = pi;
        while pos != self.ci {
            pos = pos.wrapping_sub(1);
            let p = self.cqe64_ptr(pos);
            // SAFETY: p is a software-owned cqe64 inside the ring.
            let cqe = unsafe { read_cqe64(p) };
            let id = if self.cqe_version == 1 {
                cqe.uidx()
            } else {
                cqe.qpn()
            };
            if id == qp {
                dropped(&cqe);
                nfreed += 1;
            } else if nfreed > 0 {
                let dst_pos = pos.wrapping_add(nfreed);
                let src = p.wrapping_sub(off64);
                let dst = self.cqe64_ptr(dst_pos).wrapping_sub(off64);
                // SAFETY: src and dst are the starts of two distinct entries
                // of the ring (nfreed < ncqe), each valid for `sz` bytes;
                // byte-wise volatile copies need no alignment and create no
                // reference.
                unsafe {
                    for k in 0..sz {
                        ptr::write_volatile(dst.add(k), ptr::read_volatile(src.add(k)));
                    }
                }
                let owner = ((dst_pos & ncqe) != 0) as u8;
                let dp = self.cqe64_ptr(dst_pos);
                // SAFETY: dp is a cqe64 inside the ring (just written).
                unsafe {
                    let o = ptr::read_volatile(dp.add(OP_OWN_OFFSET));
                    ptr::write_volatile(dp.add(OP_OWN_OFFSET), (o & !1) | owner);
                }
            }
        }
        if nfreed > 0 {
            for k in 0..nfreed {
                self.invalidate(self.ci.wrapping_add(k));
            }
            self.ci = self.ci.wrapping_add(nfreed);
            platform::to_device_barrier();
            self.publish_ci();
        }
        nfreed
    }

    /// [`Self::clean_with`] without a callback.
    pub fn clean(&mut self, qp: u32) -> u32 {
        self.clean_with(qp, |_| {})
    }
}

impl CompletionQueue<0> {
    /// A runtime-sized CQ of `ncqe` entries (a power of two in
    /// `2..=2^24`); otherwise as [`CompletionQueue::new`].
    ///
    /// # Safety
    /// Same contract as [`CompletionQueue::new`].
    pub unsafe fn with_entries(
        ncqe: usize,
        ring: DmaBuf,
        dbrec: DmaBuf,
        cqn: u32,
        cqe_size: CqeSize,
        cqe_version: u8,
    ) -> Result<Self, CqError> {
        Self::build(ncqe, ring, dbrec, cqn, cqe_size, cqe_version)
    }
}

mod lean;

#[cfg(test)]
mod tests;
