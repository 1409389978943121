//! The send queue: builds WQEs straight into the DMA ring, keeps the
//! `wr_id` bookkeeping in fixed arrays and rings the doorbell (8-byte write
//! or BlueFlame copy). [ref §1](crate::reference) (WQE formats, wrap, bookkeeping), §4.3
//! (doorbell sequence).
//!
//! The ring is `N` 64-byte WQEBBs of DMA memory; `N` is a const generic
//! (a power of two, checked at compile time). Producer and consumer counters
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

use crate::cq::CompletionReject;
use crate::errno;
use crate::mr::Access;
use crate::platform::{self, DmaBuf, Uar};
use crate::qp::QpType;
use crate::wqe::{
    AddressVector, AtomicSeg, Be32, Be64, CtrlSeg, InlineHdr, MkeyAccess, RaddrSeg, Segment,
    ATOMIC_SIZE, EXTENDED_UD_AV,
};
use bitflags::bitflags;
use core::fmt;
use core::ptr::NonNull;
use static_assertions::const_assert_eq;

/// One scatter/gather element: device address, length and local key.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct Sge {
    /// Device (IO virtual) address of the buffer.
    pub addr: u64,
    /// Length in bytes (0 = skipped on the send side, [ref §1.5](crate::reference)).
    pub length: u32,
    /// Local key of the memory region holding the buffer.
    pub lkey: u32,
}

const_assert_eq!(core::mem::offset_of!(Sge, length), 8);
const_assert_eq!(core::mem::offset_of!(Sge, lkey), 12);
const_assert_eq!(core::mem::size_of::<Sge>(), 16);

/// `length` and `lkey` of an SGE as one 8-byte load (they are adjacent:
/// `repr(C)`, offsets asserted above), for builders that form the data
/// segment's first word from it ([`data_seg_word0`]).
#[inline(always)]
fn len_key(s: &Sge) -> u64 {
    // SAFETY: bytes 8..16 of the `Sge` behind the reference (its size is
    // 16, asserted above): initialised `u32` fields, no padding; the read
    // is unaligned-tolerant and creates no reference.
    unsafe {
        core::ptr::from_ref(s)
            .cast::<u8>()
            .add(8)
            .cast::<u64>()
            .read_unaligned()
    }
}

/// The `length` field inside a [`len_key`] word.
#[inline(always)]
const fn len_of(lk: u64) -> u32 {
    if cfg!(target_endian = "little") {
        lk as u32
    } else {
        (lk >> 32) as u32
    }
}

/// A [`len_key`] word with its `length` replaced by `len`.
#[inline(always)]
const fn with_len(lk: u64, len: u32) -> u64 {
    if cfg!(target_endian = "little") {
        (lk & !(u32::MAX as u64)) | len as u64
    } else {
        (lk & u32::MAX as u64) | ((len as u64) << 32)
    }
}

/// The memory image of a data segment's first 8 bytes (`BE32(length)`,
/// `BE32(lkey)`, [ref §1.5](crate::reference)) from a [`len_key`] word: on little-endian
/// hosts a swap and a rotate, on big-endian ones the word itself.
#[inline(always)]
const fn data_seg_word0(lk: u64) -> u64 {
    if cfg!(target_endian = "little") {
        lk.swap_bytes().rotate_left(32)
    } else {
        lk
    }
}

bitflags! {
    /// Send flags, with the `ibv_send_flags` values. [ref §1.3](crate::reference).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub struct SendFlags: u32 {
        /// Wait for earlier RDMA READ/atomic WQEs (fence mode 0x80).
        const FENCE = 1;
        /// Generate a CQE on success (CE = CQ_UPDATE).
        const SIGNALED = 2;
        /// Set the solicited-event bit.
        const SOLICITED = 4;
        /// Copy the payload into the WQE (inline segment).
        const INLINE = 8;
    }
}

/// Memory-window type (for [`SendOp::BindMw`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MwType {
    /// Type 1 window.
    Type1,
    /// Type 2 window (bound to a QP).
    Type2,
}

/// The operation of a send work request, with its operation-specific
/// fields. Immediate data is a host value; it is stored big-endian.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendOp {
    /// SEND.
    Send,
    /// SEND with immediate.
    SendImm {
        /// Immediate data (host order; the wire carries it big-endian).
        imm: u32,
    },
    /// SEND with invalidate.
    SendInv {
        /// rkey the responder invalidates.
        invalidate_rkey: u32,
    },
    /// RDMA WRITE.
    Write {
        /// Remote address.
        remote_addr: u64,
        /// Remote key.
        rkey: u32,
    },
    /// RDMA WRITE with immediate.
    WriteImm {
        /// Remote address.
        remote_addr: u64,
        /// Remote key.
        rkey: u32,
        /// Immediate data (host order).
        imm: u32,
    },
    /// RDMA READ.
    Read {
        /// Remote address.
        remote_addr: u64,
        /// Remote key.
        rkey: u32,
    },
    /// Atomic compare-and-swap (8 bytes).
    CompSwap {
        /// Remote address (8-byte aligned).
        remote_addr: u64,
        /// Remote key.
        rkey: u32,
        /// Compare value.
        compare: u64,
        /// Swap value.
        swap: u64,
    },
    /// Atomic fetch-and-add (8 bytes).
    FetchAdd {
        /// Remote address (8-byte aligned).
        remote_addr: u64,
        /// Remote key.
        rkey: u32,
        /// Value to add.
        add: u64,
    },
    /// Local invalidate (a UMR WQE).
    LocalInv {
        /// rkey to invalidate.
        invalidate_rkey: u32,
    },
    /// Bind a memory window (a UMR WQE).
    BindMw {
        /// The window's current rkey (carried in the control segment).
        mw_rkey: u32,
        /// What to bind.
        bind: MwBind,
    },
}

/// The binding a [`SendOp::BindMw`] establishes ([ref §1.5](crate::reference), UMR WQEs).
/// A local invalidate is the unbind of a type-2 window: [`MwBind::UNBIND`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MwBind {
    /// Window type.
    pub mw_type: MwType,
    /// The new rkey (its low byte is the new key variant).
    pub new_rkey: u32,
    /// lkey of the memory region the window is bound to.
    pub mr_lkey: u32,
    /// Start address of the window.
    pub addr: u64,
    /// Length of the window (0 = unbind).
    pub length: u64,
    /// Access rights of the window (`ZERO_BASED` makes its addresses
    /// offsets from the window start).
    pub access: Access,
}

impl MwBind {
    /// The unbind a LOCAL_INV performs.
    pub const UNBIND: MwBind = MwBind {
        mw_type: MwType::Type2,
        new_rkey: 0,
        mr_lkey: 0,
        addr: 0,
        length: 0,
        access: Access::empty(),
    };
}

impl SendOp {
    /// The mlx5 opcode this operation is built with. [ref §1.6](crate::reference).
    pub const fn mlx5_opcode(&self) -> u8 {
        match self {
            SendOp::Send => 0x0a,
            SendOp::SendImm { .. } => 0x0b,
            SendOp::SendInv { .. } => 0x01,
            SendOp::Write { .. } => 0x08,
            SendOp::WriteImm { .. } => 0x09,
            SendOp::Read { .. } => 0x10,
            SendOp::CompSwap { .. } => 0x11,
            SendOp::FetchAdd { .. } => 0x12,
            SendOp::LocalInv { .. } | SendOp::BindMw { .. } => 0x25,
        }
    }
    /// The verbs name of the operation.
    pub const fn name(&self) -> &'static str {
        match self {
            SendOp::Send => "SEND",
            SendOp::SendImm { .. } => "SEND_WITH_IMM",
            SendOp::SendInv { .. } => "SEND_WITH_INV",
            SendOp::Write { .. } => "RDMA_WRITE",
            SendOp::WriteImm { .. } => "RDMA_WRITE_WITH_IMM",
            SendOp::Read { .. } => "RDMA_READ",
            SendOp::CompSwap { .. } => "ATOMIC_CMP_AND_SWP",
            SendOp::FetchAdd { .. } => "ATOMIC_FETCH_AND_ADD",
            SendOp::LocalInv { .. } => "LOCAL_INV",
            SendOp::BindMw { .. } => "BIND_MW",
        }
    }
    /// The completion opcode override recorded for this operation's slot:
    /// UMR-based operations complete as 5 (BIND_MW) or 6 (LOCAL_INV),
    /// everything else 0. [ref §1.10](crate::reference).
    const fn wr_data(&self) -> u8 {
        match self {
            SendOp::BindMw { .. } => 5,
            SendOp::LocalInv { .. } => 6,
            _ => 0,
        }
    }
    const fn is_atomic(&self) -> bool {
        matches!(self, SendOp::CompSwap { .. } | SendOp::FetchAdd { .. })
    }
}

/// The operation of a [`SendQueue::post_rdma_raw`] batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RdmaOp {
    /// RDMA WRITE.
    Write,
    /// RDMA READ.
    Read,
    /// SEND (remote address and key are ignored).
    Send,
}

impl RdmaOp {
    /// The mlx5 opcode of the operation (that of the [`SendOp`] it posts).
    const fn mlx5_opcode(self) -> u8 {
        match self {
            RdmaOp::Write => SendOp::Write {
                remote_addr: 0,
                rkey: 0,
            }
            .mlx5_opcode(),
            RdmaOp::Read => SendOp::Read {
                remote_addr: 0,
                rkey: 0,
            }
            .mlx5_opcode(),
            RdmaOp::Send => SendOp::Send.mlx5_opcode(),
        }
    }
}

/// A work request of the hot path: pointer SGEs, remote address and key,
/// signaled or not.
#[derive(Clone, Copy, Debug)]
pub struct RdmaWr<'a> {
    /// Caller's identifier, returned in the completion.
    pub wr_id: u64,
    /// Remote address (WRITE/READ).
    pub remote_addr: u64,
    /// Remote key (WRITE/READ).
    pub rkey: u32,
    /// Local scatter/gather list.
    pub sgl: &'a [Sge],
    /// Generate a CQE on success.
    pub signaled: bool,
}

impl<'a> RdmaWr<'a> {
    /// The same work request for the general path.
    pub fn to_send_wr(&self, op: RdmaOp) -> SendWr<'a> {
        let sop = match op {
            RdmaOp::Write => SendOp::Write {
                remote_addr: self.remote_addr,
                rkey: self.rkey,
            },
            RdmaOp::Read => SendOp::Read {
                remote_addr: self.remote_addr,
                rkey: self.rkey,
            },
            RdmaOp::Send => SendOp::Send,
        };
        let flags = if self.signaled {
            SendFlags::SIGNALED
        } else {
            SendFlags::empty()
        };
        SendWr::new(self.wr_id, sop, self.sgl).with_flags(flags)
    }
}

/// Destination of a UD send: address vector, remote QPN and Q_Key.
#[derive(Clone, Copy, Debug)]
pub struct UdDest<'a> {
    /// Address vector built once per address handle ([ref §1.5](crate::reference)).
    pub av: &'a AddressVector,
    /// Remote QP number (24 bits).
    pub remote_qpn: u32,
    /// Remote Q_Key.
    pub remote_qkey: u32,
}

/// A send work request.
#[derive(Clone, Copy, Debug)]
pub struct SendWr<'a> {
    /// Caller's identifier, returned in the completion.
    pub wr_id: u64,
    /// Operation and its fields.
    pub op: SendOp,
    /// Scatter/gather list (or inline source with [`SendFlags::INLINE`]).
    pub sgl: &'a [Sge],
    /// Flags.
    pub flags: SendFlags,
    /// UD destination (required on UD QPs, ignored elsewhere).
    pub ud: Option<UdDest<'a>>,
}

impl<'a> SendWr<'a> {
    /// A WR with no flags and no UD destination.
    pub const fn new(wr_id: u64, op: SendOp, sgl: &'a [Sge]) -> Self {
        SendWr {
            wr_id,
            op,
            sgl,
            flags: SendFlags::empty(),
            ud: None,
        }
    }
    /// The same WR with `flags`.
    pub const fn with_flags(mut self, flags: SendFlags) -> Self {
        self.flags = flags;
        self
    }
    /// The same WR with a UD destination.
    pub const fn with_ud(mut self, ud: UdDest<'a>) -> Self {
        self.ud = Some(ud);
        self
    }
}

/// Why a send WR was refused. Nothing of the refused WR reaches the ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PostErrorKind {
    /// The queue holds `outstanding` WRs and allows `max_post`.
    QueueFull {
        /// WRs posted and not yet completed (including this batch).
        outstanding: u32,
        /// The queue's `max_post`.
        max_post: u32,
    },
    /// More SGEs than the queue's `max_send_sge` (or posting disabled in
    /// this QP state, when `max` is `None`).
    TooManySges {
        /// SGEs in the WR.
        num: usize,
        /// The queue's limit, or `None` while the QP state forbids posting.
        max: Option<u32>,
    },
    /// Inline payload larger than the queue's `max_inline_data`.
    InlineTooLarge {
        /// Bytes requested.
        len: u64,
        /// The queue's read-back `max_inline_data`.
        max: u32,
    },
    /// The operation is not valid on this QP type.
    OpNotAllowed {
        /// Verbs name of the operation.
        op: &'static str,
        /// The QP type.
        qp_type: QpType,
    },
    /// Atomics are not enabled on this QP.
    AtomicsDisabled,
    /// A UD send without a destination.
    MissingUdDest,
    /// A memory-window bind longer than the 2 GiB a KLM can describe.
    BindTooLong {
        /// Requested window length.
        length: u64,
    },
    /// The WQE would be larger than the slot the queue's geometry reserves
    /// per WR (ring bytes / `max_post`); posting it could overrun WQEs in
    /// flight.
    WqeTooLarge {
        /// Worst-case bytes of this WQE.
        bytes: u32,
        /// Bytes reserved per WR.
        slot: u32,
    },
    /// An SGE is outside every registered region it names (safe API).
    SgeOutOfBounds {
        /// Index of the SGE in the WR.
        sge: usize,
    },
    /// An inline SGE refers to memory that is not registered (safe API).
    InlineNotReadable {
        /// Index of the SGE in the WR.
        sge: usize,
    },
}

impl PostErrorKind {
    /// The errno the vendor's provider returns for the same failure.
    pub const fn errno(&self) -> i32 {
        match self {
            PostErrorKind::QueueFull { .. }
            | PostErrorKind::TooManySges { .. }
            | PostErrorKind::InlineTooLarge { .. } => errno::ENOMEM,
            PostErrorKind::AtomicsDisabled | PostErrorKind::BindTooLong { .. } => errno::EOPNOTSUPP,
            _ => errno::EINVAL,
        }
    }
}

/// A refused WR: its index in the batch and the reason. WRs before `index`
/// were posted and the doorbell was rung for them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PostError {
    /// Index of the first WR not posted.
    pub index: usize,
    /// Why.
    pub kind: PostErrorKind,
}

impl fmt::Display for PostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "WR {} not posted: ", self.index)?;
        match self.kind {
            PostErrorKind::QueueFull {
                outstanding,
                max_post,
            } => {
                write!(
                    f,
                    "send queue full ({outstanding} outstanding, max_post {max_post})"
                )
            }
            PostErrorKind::TooManySges { num, max: Some(m) } => {
                write!(f, "{num} SGEs, the queue allows {m} (max_send_sge)")
            }
            PostErrorKind::TooManySges { max: None, .. } => {
                write!(f, "the QP state does not allow posting (move it to RTS)")
            }
            PostErrorKind::InlineTooLarge { len, max } => {
                write!(
                    f,
                    "{len} inline bytes, the queue allows {max} (max_inline_data)"
                )
            }
            PostErrorKind::OpNotAllowed { op, qp_type } => {
                write!(f, "{op} is not allowed on a {qp_type:?} QP")
            }
            PostErrorKind::AtomicsDisabled => write!(f, "atomics are not enabled on this QP"),
            PostErrorKind::MissingUdDest => write!(f, "UD send without a destination"),
            PostErrorKind::BindTooLong { length } => {
                write!(
                    f,
                    "window of {length} bytes exceeds the 2 GiB a KLM describes"
                )
            }
            PostErrorKind::WqeTooLarge { bytes, slot } => {
                write!(
                    f,
                    "a {bytes}-byte WQE exceeds the {slot} bytes reserved per WR"
                )
            }
            PostErrorKind::SgeOutOfBounds { sge } => {
                write!(f, "SGE {sge} is outside its registered memory region")
            }
            PostErrorKind::InlineNotReadable { sge } => {
                write!(f, "inline SGE {sge} is not in registered host memory")
            }
        }
    }
}

/// BlueFlame register geometry of the UAR a QP uses. [ref §4.2](crate::reference).
///
/// The half toggle lives in the send queue, so a BlueFlame register
/// (`reg_offset` of one UAR page) with `enabled` must belong to one send
/// queue: two queues sharing it would toggle independently and could write
/// the same half at once. Give each queue its own register (the VFIO and
/// simulator tools do), or use [`BlueFlame::doorbell_only`] (what the safe
/// [`verbs`](crate::verbs) layer uses).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlueFlame {
    /// Offset of the register in the UAR page (0x800 + k × bf_reg_size).
    pub reg_offset: usize,
    /// Half-register size (`bf_reg_size / 2`); 0 = no BlueFlame (bfreg 0):
    /// every doorbell is an 8-byte write and the offset never toggles.
    pub buf_size: usize,
    /// Copy inline single-WR posts through BlueFlame (provider default).
    pub enabled: bool,
    /// Also BlueFlame non-inline single-WR posts (`MLX5_POST_SEND_PREFER_BF`).
    pub prefer: bool,
}

impl BlueFlame {
    /// 8-byte doorbells only (the VFIO default: BAR mappings are uncached).
    pub const fn doorbell_only(reg_offset: usize) -> Self {
        BlueFlame {
            reg_offset,
            buf_size: 0,
            enabled: false,
            prefer: false,
        }
    }
}

/// Everything a send queue needs to know that is not its ring size.
#[derive(Clone, Copy, Debug)]
pub struct SqConfig {
    /// QP number (24 bits), stamped in every control segment.
    pub qpn: u32,
    /// QP type (decides the transport segments and the allowed ops).
    pub qp_type: QpType,
    /// WRs that fit (from sizing: `max_post`).
    pub max_post: u32,
    /// SGEs per WR (from sizing: `max_gs`).
    pub max_gs: u32,
    /// Read-back `max_inline_data`.
    pub max_inline_data: u32,
    /// Every WQE generates a CQE (`sq_sig_all`).
    pub sig_all: bool,
    /// Atomics enabled on this QP.
    pub atomics: bool,
    /// BlueFlame register.
    pub bf: BlueFlame,
}

mod lane;
pub use lane::SendLane;

/// What the completion path needs from the send queue for one CQE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendRetired {
    /// The completed WR's `wr_id`.
    pub wr_id: u64,
    /// Completion opcode override for UMR-based WRs (5 BIND_MW,
    /// 6 LOCAL_INV), else 0.
    pub wr_data: u8,
}

/// What a send queue remembers about the WQE that starts at one WQEBB of
/// its ring (16 bytes, written with two 8-byte stores per WR): the WR's
/// `wr_id`, and one word holding the WR's sequence number (bits 31:0), the
/// completion opcode override of UMR-based WRs (39:32) and the 16-bit
/// WQEBB counter it was posted at (63:48: the counter shifted up, its
/// upper bits falling off, is the whole of the field's work). A completion is checked against it
/// with two compares: the counter must be the recorded one and the
/// sequence number inside the in-flight window `[tail, head)`.
///
/// A record whose WQEBB was later covered by the middle of another WQE
/// keeps an old sequence number, below `tail` (that WQE could only be
/// posted once the old one was retired: the geometry reserves room for
/// `max_post` WRs). A record the queue forgets (creation, reset, replay)
/// gets the counter `idx ^ 1`, which no completion for slot `idx` can
/// carry on a ring of two or more WQEBBs; on a one-WQEBB ring every post
/// rewrites the only record, and reset and replay leave the in-flight
/// window empty until then.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct SqSlot {
    wr_id: u64,
    meta: u64,
}

impl SqSlot {
    /// The record of a WR posted at WQEBB counter `ctr` as WR `seq`.
    #[inline(always)]
    const fn posted(wr_id: u64, seq: u32, ctr: u32, wr_data: u8) -> Self {
        SqSlot {
            wr_id,
            meta: seq as u64 | ((wr_data as u64) << 32) | ((ctr as u64) << 48),
        }
    }
    /// The same record with the WQEBB counter `ctr`.
    #[inline(always)]
    const fn with_ctr(self, ctr: u16) -> Self {
        SqSlot {
            wr_id: self.wr_id,
            meta: (self.meta & !(0xffff << 48)) | ((ctr as u64) << 48),
        }
    }
    /// WR sequence number.
    #[inline(always)]
    const fn seq(&self) -> u32 {
        self.meta as u32
    }
    /// WQEBB counter the WR was posted at.
    #[inline(always)]
    const fn ctr(&self) -> u16 {
        (self.meta >> 48) as u16
    }
    /// Completion opcode override.
    #[inline(always)]
    const fn wr_data(&self) -> u8 {
        (self.meta >> 32) as u8
    }
}

/// Storage for a send queue's per-WQEBB records: its length is the ring
/// size in WQEBBs (a power of two up to 65536). A fixed array
/// (`[SqSlot; N]`, no allocation, for `no_std` users), a borrowed slice, or
/// any owner of one (`Box<[SqSlot]>`, `Vec<SqSlot>`) sized at run time from
/// the queue's geometry.
pub trait SqSlots: AsRef<[SqSlot]> + AsMut<[SqSlot]> {}
impl<T: AsRef<[SqSlot]> + AsMut<[SqSlot]> + ?Sized> SqSlots for T {}

/// A send queue with its records in a fixed array of `N` WQEBBs.
pub type FixedSendQueue<U, const N: usize> = SendQueue<U, [SqSlot; N]>;

/// The send ring as the builder sees it: base, size and the QP number
/// stamped into control segments. Every store into the ring goes through
/// it, with the explicit wrap rule of [`SqRing::wrap`].
#[derive(Clone, Copy)]
struct SqRing {
    base: NonNull<u8>,
    /// Ring bytes (WQEBBs × 64, a power of two).
    bytes: usize,
    qpn: u32,
    /// The QPN part of every control segment's bytes 4..8
    /// ([`CtrlSeg::qpn_ds_image`] with DS 0).
    qpn_image: u32,
    /// WQEBBs − 1.
    mask: u32,
    /// A UD QP: WQEs carry the datagram segment.
    datagram: bool,
}

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

/// The fence-mode field of `fm_ce_se` (bits 7:5). [ref §1.3](crate::reference).
const FENCE_BITS: u8 = 0xe0;

/// DS units of the control and operation segments, by mlx5 opcode (UMR
/// counts the LOCAL_INV shape; a bind adds its KLM in `check_rare`).
const BASE_DS: [u8; 64] = {
    let mut t = [1u8; 64];
    t[0x08] = 2;
    t[0x09] = 2;
    t[0x10] = 2;
    t[0x11] = 3;
    t[0x12] = 3;
    t[0x25] = 8;
    t
};

/// What the WR checks need to know about the queue, copied out of it once
/// per post call (so the loop keeps it in registers).
#[derive(Clone, Copy)]
struct Limits {
    /// `sgl.len() < sge_lim` ⇔ posting is enabled and within `max_gs`.
    sge_lim: usize,
    /// `sgl.len() < quick[opcode]` ⇔ a non-inline WR with that mlx5
    /// opcode passes every check: the opcode is allowed on this QP,
    /// posting is enabled, the SGEs are within `max_gs` and the WQE fits
    /// the slot. 0 for UMR opcodes and on UD QPs (their WRs always take
    /// the full checks).
    quick: [u8; 64],
    max_gs: u32,
    max_ds: u32,
    transport_ds: u32,
    allowed: u64,
    max_inline: u32,
    qp_type: QpType,
    atomics: bool,
}

impl Limits {
    /// Posting enabled (RTS and later) or disabled (RESET/INIT/RTR): sets
    /// the SGE limit and the one-compare bounds derived from it.
    fn set_enabled(&mut self, on: bool) {
        self.sge_lim = if on { self.max_gs as usize + 1 } else { 0 };
        let (sge_lim, max_ds, udp) = (self.sge_lim, self.max_ds as usize, self.transport_ds != 0);
        let allowed = self.allowed;
        self.quick = core::array::from_fn(|op| {
            if udp || op == 0x25 || allowed & (1 << op) == 0 {
                0
            } else {
                // At most 64: max_ds <= 63.
                sge_lim.min((max_ds + 1).saturating_sub(BASE_DS[op] as usize)) as u8
            }
        });
    }

    #[cold]
    fn too_many_sges(&self, num: usize) -> PostErrorKind {
        PostErrorKind::TooManySges {
            num,
            max: if self.sge_lim == 0 {
                None
            } else {
                Some(self.max_gs)
            },
        }
    }

    /// Checks that need the opcode; nothing is written yet.
    #[inline(always)]
    fn check_late(&self, wr: &SendWr<'_>, opcode: u8) -> Result<(), PostErrorKind> {
        if self.allowed & (1u64 << (opcode & 63)) == 0 {
            return Err(self.not_allowed(wr.op.is_atomic(), wr.op.name()));
        }
        let base_ds = BASE_DS[(opcode & 63) as usize] as u32 + self.transport_ds;
        let data_ds = if wr.flags.contains(SendFlags::INLINE) && !wr.sgl.is_empty() {
            let len: u64 = wr.sgl.iter().map(|s| s.length as u64).sum();
            if len > self.max_inline as u64 {
                return Err(PostErrorKind::InlineTooLarge {
                    len,
                    max: self.max_inline,
                });
            }
            (len as u32 + 4).div_ceil(16)
        } else {
            wr.sgl.len() as u32
        };
        if base_ds + data_ds > self.max_ds || opcode == 0x25 || self.transport_ds != 0 {
            let bind_len = match wr.op {
                SendOp::BindMw { bind, .. } => Some(bind.length),
                _ => None,
            };
            return self.check_rare(bind_len, wr.ud.is_some(), base_ds + data_ds);
        }
        Ok(())
    }

    #[cold]
    fn not_allowed(&self, atomic: bool, op: &'static str) -> PostErrorKind {
        if atomic && !self.atomics && self.qp_type != QpType::Ud {
            PostErrorKind::AtomicsDisabled
        } else {
            PostErrorKind::OpNotAllowed {
                op,
                qp_type: self.qp_type,
            }
        }
    }

    /// Checks of the rarer shapes: UMR WQEs (`bind_len`: a bind's length),
    /// UD destinations, oversize. Takes plain values, not the WR, so the
    /// common path never has to keep the WR in memory for it.
    #[inline(never)]
    fn check_rare(
        &self,
        bind_len: Option<u64>,
        has_ud: bool,
        mut ds: u32,
    ) -> Result<(), PostErrorKind> {
        if let Some(length) = bind_len {
            if length > 1 << 31 {
                return Err(PostErrorKind::BindTooLong { length });
            }
            if length != 0 {
                ds += 4; // inline KLM
            }
        }
        if self.qp_type == QpType::Ud && !has_ud {
            return Err(PostErrorKind::MissingUdDest);
        }
        if ds > self.max_ds {
            let bytes = (ds * 16).next_multiple_of(64);
            return Err(PostErrorKind::WqeTooLarge {
                bytes,
                slot: self.max_ds * 16,
            });
        }
        Ok(())
    }
}

impl<U: Uar, S: SqSlots> SendQueue<U, S> {
    /// Creates a send queue over `ring` (`slots.len()` × 64 bytes) and the
    /// QP's 8-byte doorbell record `dbrec` (word 1 is the send counter),
    /// keeping its per-WQEBB records in `slots`. `None` when `slots.len()`
    /// is not a power of two up to 65536, the buffers are too small, or the
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
        let ring_bytes = n * 64;
        if ring.len < ring_bytes || dbrec.len < 8 || cfg.max_post == 0 {
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
        let slot_bytes = ((ring_bytes / cfg.max_post as usize) & !63).min(1024) as u32;
        let max_ds = (slot_bytes / 16).min(crate::wqe::MAX_DS);
        let bit = |op: u8| 1u64 << op;
        let sends = bit(0x0a) | bit(0x0b);
        let allowed = match cfg.qp_type {
            QpType::Ud => sends,
            QpType::RawPacket => bit(0x0a),
            QpType::Uc => sends | bit(0x01) | bit(0x08) | bit(0x09) | bit(0x25),
            QpType::Rc | QpType::XrcSend => {
                sends
                    | bit(0x01)
                    | bit(0x08)
                    | bit(0x09)
                    | bit(0x10)
                    | bit(0x25)
                    | if cfg.atomics {
                        bit(0x11) | bit(0x12)
                    } else {
                        0
                    }
            }
            QpType::XrcRecv => 0,
        };
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
            sig_bits: if cfg.sig_all { 0x08 } else { 0 },
            lim: Limits {
                sge_lim: 0,
                quick: [0; 64],
                max_gs: cfg.max_gs,
                max_ds,
                transport_ds: if cfg.qp_type == QpType::Ud { 3 } else { 0 },
                allowed,
                max_inline: cfg.max_inline_data,
                qp_type: cfg.qp_type,
                atomics: cfg.atomics,
            },
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
    /// into a [`SendWr`]), builds its WQE with [`SqRing::build`], records
    /// its slot and rings one doorbell for the batch. `cpu_of` gives the
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
        let room = self
            .cfg
            .max_post
            .saturating_sub(seq0.wrapping_sub(self.tail)) as usize;
        // WRs that fit; the one after them (if any) is refused as
        // QueueFull once the ones before it passed their checks.
        let fits = wrs.len().min(room);
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
            let mine = if wr.flags.contains(SendFlags::FENCE) {
                (bits & !FENCE_BITS) | 0x80
            } else {
                bits
            };
            bits = sig_bits;
            if !quick {
                if let Err(kind) = lim.check_late(&wr, opcode) {
                    refused = Some(kind);
                    break;
                }
            }
            if opcode == 0x25 {
                bits = sig_bits | 0x20; // LOCAL_INV / BIND_MW: next WQE small-fenced
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
            // The first WQE starts at the `cur_post` of before this call.
            let first_ctrl = ((self.cur_post & mask) as usize) << 6;
            // SAFETY: byte 11 (fm_ce_se) of the first WQE this call built,
            // inside the ring this queue owns; not yet rung.
            unsafe {
                let p = ring.base.as_ptr().add(first_ctrl + 11);
                p.write(p.read() | cached);
            }
        }
        self.fm_cache = bits & FENCE_BITS;
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
                    self.fm_cache = bits & FENCE_BITS;
                }
                Err(PostError { index: 0, kind })
            }
            None if len > fits => Err(self.refusal(0, None)),
            None => Ok(()),
        }
    }

    #[inline(always)]
    fn write_dbrec(&mut self, value: u32) {
        // SAFETY: dbrec is 8 bytes of DMA memory this queue owns (contract
        // of `new`); word 1 (bytes 4..8) is the send counter. Volatile: the
        // device reads it asynchronously.
        unsafe {
            core::ptr::write_volatile(
                self.dbrec.as_ptr().add(4).cast::<[u8; 4]>(),
                value.to_be_bytes(),
            )
        }
    }

    /// The doorbell sequence of [ref §4.3](crate::reference) for `nreq` WRs whose last WQE
    /// starts at WQEBB counter `last_cur` (`cur_post` and `head` already
    /// count them). `single_inline` tells, for a single-WR post, whether
    /// it was inline (asked only when a BlueFlame copy is possible).
    #[inline(always)]
    fn ring_doorbell(&mut self, nreq: u32, last_cur: u32, single_inline: impl FnOnce() -> bool) {
        platform::to_device_barrier();
        self.write_dbrec(self.cur_post & 0xffff);
        platform::mmio_flush_writes();
        let bf = self.cfg.bf;
        let reg = bf.reg_offset + self.bf_offset;
        let ctrl_off = ((last_cur & self.ring.mask) as usize) << 6;
        if bf.enabled && bf.buf_size != 0 && nreq == 1 && (bf.prefer || single_inline()) {
            // SAFETY: byte 7 of the control segment at `ctrl_off`, inside
            // the ring this queue owns; a raw read, no reference.
            let ds = unsafe { self.ring.base.as_ptr().add(ctrl_off + 7).read() } as u32 & 0x3f;
            if ds > 1 && (ds as usize) <= bf.buf_size / 16 {
                self.blueflame_copy(reg, ctrl_off, ds);
                self.uar.flush();
                self.bf_offset ^= bf.buf_size;
                return;
            }
        }
        let mut first = [0u8; 8];
        // SAFETY: the control segment of the last WQE lies inside the
        // ring at `ctrl_off`.
        unsafe {
            core::ptr::copy_nonoverlapping(
                self.ring.base.as_ptr().add(ctrl_off),
                first.as_mut_ptr(),
                8,
            )
        };
        self.uar.write64(reg, first);
        self.uar.flush();
        self.bf_offset ^= bf.buf_size;
    }
    /// Copies the single WQE of `ds` units at `ctrl_off` into the
    /// BlueFlame register at `reg` in 64-byte chunks, wrapping at the ring
    /// end.
    #[inline(never)]
    fn blueflame_copy(&mut self, reg: usize, ctrl_off: usize, ds: u32) {
        let bytes = (ds as usize * 16).div_ceil(64) * 64;
        let mut src = ctrl_off;
        let mut dst = reg;
        let mut chunk = [0u8; 64];
        for _ in 0..bytes / 64 {
            // SAFETY: `src` is a 64-aligned offset inside the ring (it
            // wraps to 0 at the end); the chunk is copied out of DMA
            // memory with a raw read, no reference to the ring.
            unsafe {
                core::ptr::copy_nonoverlapping(
                    self.ring.base.as_ptr().add(src),
                    chunk.as_mut_ptr(),
                    64,
                )
            };
            self.uar.write_bf(dst, &chunk);
            src = self.ring.wrap(src + 64);
            dst += 64;
        }
    }
}

impl<'a> RdmaWr<'a> {
    /// This WR as the builder sees it, with operation `op`.
    #[inline(always)]
    fn with_op(&self, op: SendOp) -> SendWr<'a> {
        SendWr {
            wr_id: self.wr_id,
            op,
            sgl: self.sgl,
            flags: SendFlags::from_bits_retain((self.signaled as u32) << 1),
            ud: None,
        }
    }
}

impl SqRing {
    /// Ring byte offset after `off`, wrapping at the end ("wrap exact",
    /// [ref §1.8](crate::reference)): a segment never straddles the end, and one that
    /// would start at the end starts at 0.
    #[inline(always)]
    fn wrap(self, off: usize) -> usize {
        wrap_at(off, self.bytes)
    }

    /// Stores a segment at ring offset `off`.
    ///
    /// # Safety
    /// `off + G::SIZE <= ring bytes`.
    #[inline(always)]
    unsafe fn put<G: Segment>(self, off: usize, seg: G) {
        // SAFETY: the caller keeps the segment inside the ring, which this
        // queue exclusively owns (contract of `SendQueue::new`).
        unsafe { seg.write_to(self.base.as_ptr().add(off)) }
    }

    /// Stores raw bytes at ring offset `off` (within the ring).
    ///
    /// # Safety
    /// `off + bytes.len() <= ring bytes`.
    #[inline(always)]
    unsafe fn put_bytes(self, off: usize, bytes: &[u8]) {
        // SAFETY: as `put`; `bytes` is ordinary memory, not the ring.
        unsafe {
            core::ptr::copy_nonoverlapping(bytes.as_ptr(), self.base.as_ptr().add(off), bytes.len())
        }
    }

    /// Stores the data segment naming an SGE (its [`len_key`] word and
    /// address) at ring offset `off`; the byte count is 8 for an atomic's
    /// result ([ref §1.5](crate::reference)).
    ///
    /// # Safety
    /// `off + 16 <= ring bytes`.
    #[inline(always)]
    unsafe fn put_sge(self, off: usize, lk: u64, addr: u64, atomic: bool) {
        let w0 = data_seg_word0(if atomic {
            with_len(lk, ATOMIC_SIZE)
        } else {
            lk
        });
        // SAFETY: forwarded: 16 bytes at `off` inside the ring.
        unsafe {
            let p = self.base.as_ptr().add(off).cast::<u64>();
            p.write_unaligned(w0);
            p.add(1)
                .write_unaligned(u64::from_ne_bytes(addr.to_be_bytes()));
        }
    }

    /// Builds the WQE of `wr` at WQEBB counter `cur` — the one builder
    /// every post path uses — and returns the WQEBBs it takes.
    ///
    /// # Safety
    /// As `SendQueue::post_send_raw`; the checks of `post_engine` passed
    /// for `wr` (its WQE fits the slot the geometry reserves per WR) and
    /// the queue has room for it.
    #[inline(always)]
    unsafe fn build<F: Fn(&Sge) -> *const u8>(
        self,
        wr: &SendWr<'_>,
        opcode: u8,
        fm_base: u8,
        cur: u32,
        cpu_of: &F,
    ) -> u32 {
        // The fence and CQ_UPDATE bits the engine decided, plus the WR's
        // own CE and SE (formed here, where the segment is stored).
        let fm_ce_se = fm_base
            | ((wr.flags.bits() & SendFlags::SIGNALED.bits()) << 2) as u8
            | ((wr.flags.bits() & SendFlags::SOLICITED.bits()) >> 1) as u8;
        let ctrl_off = ((cur & self.mask) as usize) << 6;
        let mut off = ctrl_off + 16;
        let mut ds: u32 = 1;
        let mut imm = 0u32;

        // SAFETY: every store below stays inside the ring: segments are
        // 16-byte multiples written at 16-aligned offsets and wrapped at the
        // ring end, and the WQE is at most `max_ds` units, which fit the
        // slot the geometry reserves per WR (checked before `build`). The
        // remote-address and atomic segments start inside the WQE's first
        // WQEBB (at most 48 bytes after the control segment), so they need
        // no wrap; the datagram segment and the UMR segments are followed
        // by an explicit wrap, and every data segment is wrapped (masked)
        // where it could reach the ring end.
        unsafe {
            if self.datagram {
                if let Some(ud) = wr.ud {
                    let mut av = *ud.av;
                    av.dqp_dct = Be32::new(ud.remote_qpn | EXTENDED_UD_AV);
                    av.key[..4].copy_from_slice(&ud.remote_qkey.to_be_bytes());
                    self.put(off, av);
                    off = self.wrap(off + 48);
                    ds += 3;
                }
            }
            match wr.op {
                SendOp::Send => {}
                SendOp::SendImm { imm: v } => imm = v,
                SendOp::SendInv { invalidate_rkey } => imm = invalidate_rkey,
                SendOp::Write { remote_addr, rkey } | SendOp::Read { remote_addr, rkey } => {
                    self.put(off, RaddrSeg::new(remote_addr, rkey));
                    off += 16;
                    ds += 1;
                }
                SendOp::WriteImm {
                    remote_addr,
                    rkey,
                    imm: v,
                } => {
                    imm = v;
                    self.put(off, RaddrSeg::new(remote_addr, rkey));
                    off += 16;
                    ds += 1;
                }
                SendOp::CompSwap {
                    remote_addr,
                    rkey,
                    compare,
                    swap,
                } => {
                    self.put(off, RaddrSeg::new(remote_addr, rkey));
                    self.put(
                        off + 16,
                        AtomicSeg {
                            swap_add: Be64::new(swap),
                            compare: Be64::new(compare),
                        },
                    );
                    off += 32;
                    ds += 2;
                }
                SendOp::FetchAdd {
                    remote_addr,
                    rkey,
                    add,
                } => {
                    self.put(off, RaddrSeg::new(remote_addr, rkey));
                    // compare is not written for fetch-and-add (ref §1.5)
                    self.put(off + 16, Be64::new(add));
                    off += 32;
                    ds += 2;
                }
                SendOp::LocalInv { invalidate_rkey } => {
                    imm = invalidate_rkey;
                    self.umr(&mut off, &mut ds, &MwBind::UNBIND);
                }
                SendOp::BindMw { mw_rkey, bind } => {
                    imm = mw_rkey;
                    self.umr(&mut off, &mut ds, &bind);
                }
            }

            if wr.flags.contains(SendFlags::INLINE) && !wr.sgl.is_empty() {
                ds += self.copy_inline(off, wr.sgl, cpu_of);
            } else {
                let atomic = opcode == 0x11 || opcode == 0x12;
                // The ring is a power of two: masking the offset is the
                // wrap rule (an offset at the end becomes 0).
                let end_mask = self.bytes - 1;
                if let [s] = wr.sgl {
                    // One SGE: no loop; no wrap when it starts in the
                    // WQE's first WQEBB (the common shapes).
                    let lk = len_key(s);
                    if len_of(lk) != 0 {
                        // (`off` may have wrapped below `ctrl_off` after a
                        // datagram segment: then it is masked, harmlessly.)
                        if off.wrapping_sub(ctrl_off) >= 64 {
                            off &= end_mask;
                        }
                        self.put_sge(off, lk, s.addr, atomic);
                        ds += 1;
                        // Finished here, so the DS count (and the WQEBBs
                        // it takes) stay constants for a fixed operation.
                        self.put_ctrl(ctrl_off, cur, opcode, ds, fm_ce_se, imm);
                        return (ds + 3) >> 2;
                    }
                } else if wr.sgl.len() * 16 <= self.bytes.saturating_sub(off) {
                    // The data segments end at or before the ring end:
                    // no wrap between them, and the DS count follows from
                    // how far they reach.
                    let start = off;
                    for s in wr.sgl {
                        let lk = len_key(s);
                        if len_of(lk) != 0 {
                            self.put_sge(off, lk, s.addr, atomic);
                            off += 16;
                        }
                    }
                    ds += ((off - start) >> 4) as u32;
                } else {
                    for s in wr.sgl {
                        let lk = len_key(s);
                        if len_of(lk) != 0 {
                            off &= end_mask;
                            self.put_sge(off, lk, s.addr, atomic);
                            off += 16;
                            ds += 1;
                        }
                    }
                }
            }

            self.put_ctrl(ctrl_off, cur, opcode, ds, fm_ce_se, imm);
        }
        (ds + 3) >> 2
    }

    /// Stores the control segment of the WQE at `ctrl_off` as two words
    /// (its QPN part was formed once, at queue creation).
    ///
    /// # Safety
    /// `ctrl_off` is a WQE's 64-aligned offset inside the ring.
    #[inline(always)]
    unsafe fn put_ctrl(
        self,
        ctrl_off: usize,
        cur: u32,
        opcode: u8,
        ds: u32,
        fm_ce_se: u8,
        imm: u32,
    ) {
        let qpn_ds = self.qpn_image | CtrlSeg::ds_image(ds as u8);
        let w0 = CtrlSeg::word0(cur as u16, opcode, qpn_ds);
        // SAFETY: forwarded: 16 bytes at a WQEBB boundary inside the ring.
        unsafe {
            let p = self.base.as_ptr().add(ctrl_off).cast::<u64>();
            p.write_unaligned(w0);
            p.add(1)
                .write_unaligned(CtrlSeg::word1(fm_ce_se, Be32::new(imm)));
        }
    }

    /// Copies an inline payload after its 4-byte header at `off`, splitting
    /// at the ring end; returns the DS units used (0 for an empty payload).
    ///
    /// # Safety
    /// As `build`: the payload fits the slot; `cpu_of(s)` is readable.
    #[inline(never)]
    unsafe fn copy_inline<F: Fn(&Sge) -> *const u8>(
        self,
        off: usize,
        sgl: &[Sge],
        cpu_of: &F,
    ) -> u32 {
        let mut p = off + 4;
        let mut total = 0u32;
        // SAFETY: the caller guarantees room for the payload in the ring
        // (split at the end) and readable sources.
        unsafe {
            for s in sgl {
                if s.length == 0 {
                    continue;
                }
                let mut src = cpu_of(s);
                let mut len = s.length as usize;
                total += s.length;
                let room = self.bytes - p;
                if len > room {
                    core::ptr::copy_nonoverlapping(src, self.base.as_ptr().add(p), room);
                    src = src.add(room);
                    len -= room;
                    p = 0;
                }
                core::ptr::copy_nonoverlapping(src, self.base.as_ptr().add(p), len);
                p += len;
            }
            if total == 0 {
                return 0;
            }
            self.put(off, InlineHdr::new(total));
        }
        (total + 4).div_ceil(16)
    }

    /// Writes the UMR control, mkey context and (for a bind with a length)
    /// the inline KLM of a LOCAL_INV / BIND_MW WQE. [ref §1.5, §1.7](crate::reference).
    ///
    /// # Safety
    /// `*off` is a 16-aligned ring offset with room for the UMR segments.
    #[inline(never)]
    unsafe fn umr(self, off: &mut usize, ds: &mut u32, b: &MwBind) {
        let MwBind {
            mw_type,
            new_rkey,
            mr_lkey,
            addr,
            length,
            access,
        } = *b;
        let bind = length != 0;
        // UMR control segment (48 bytes, all written).
        let mut flags: u8 = 0x80 | 0x10; // INLINE | TRANSLATION_OFFSET
        let mut mask: u64 = (1 << 29) | (1 << 13); // FREE | MKEY
        if mw_type == MwType::Type2 {
            mask |= 1 << 14; // QPN
        }
        let klm_octowords: u16 = if bind {
            if mw_type == MwType::Type2 {
                flags |= 0x20; // CHECK_FREE
            }
            // LEN | START_ADDR | LOCAL_WRITE | REMOTE_READ | REMOTE_WRITE | ATOMIC
            mask |= 1 | (1 << 6) | (0xf << 18);
            4
        } else {
            if mw_type == MwType::Type2 {
                flags |= 0x08; // CHECK_QPN
            }
            0
        };
        let mut umr = [0u8; 48];
        umr[0] = flags;
        umr[4..6].copy_from_slice(&klm_octowords.to_be_bytes());
        umr[8..16].copy_from_slice(&mask.to_be_bytes());
        // SAFETY: the caller guarantees room; each 16-byte piece is placed
        // with the wrap rule of the provider (segments never straddle).
        unsafe {
            for chunk in umr.chunks_exact(16) {
                *off = self.wrap(*off);
                self.put_bytes(*off, chunk);
                *off += 16;
            }
            *off = self.wrap(*off);
            // Mkey context segment (64 bytes): only the fields below.
            let m = *off;
            let qpn_mkey = (new_rkey & 0xff)
                | if mw_type == MwType::Type1 || !bind {
                    0xffff_ff00
                } else {
                    self.qpn << 8
                };
            if bind {
                let acc = MkeyAccess::from_ibv(access).bits();
                self.put_bytes(m, &[0]);
                self.put_bytes(m + 2, &[acc]);
                let start = if access.contains(Access::ZERO_BASED) {
                    0
                } else {
                    addr
                };
                self.put_bytes(m + 16, &start.to_be_bytes());
                self.put_bytes(m + 24, &length.to_be_bytes());
            } else {
                self.put_bytes(m, &[0x40]); // FREE
            }
            self.put_bytes(m + 4, &qpn_mkey.to_be_bytes());
            *off = m + 64;
            *ds += 3 + 4;
            if bind {
                *off = self.wrap(*off);
                let mut klm = [0u8; 64];
                klm[0..4].copy_from_slice(&(length as u32).to_be_bytes());
                klm[4..8].copy_from_slice(&mr_lkey.to_be_bytes());
                klm[8..16].copy_from_slice(&addr.to_be_bytes());
                self.put_bytes(*off, &klm);
                *off += 64;
                *ds += 4;
            }
            // A UMR ending exactly at the ring end: what follows (inline
            // data) starts at offset 0.
            *off = self.wrap(*off);
        }
    }
}

// SAFETY: `Be64` is `#[repr(transparent)]` over `[u8; 8]`: no padding,
// every bit pattern valid; `SIZE` is left at its default.
unsafe impl Segment for Be64 {}

/// Gives every record the counter `idx ^ 1`, which no completion for its
/// slot carries (see [`SqSlot`]); the visible `wr_id`/sequence/`wr_data`
/// stay as they are.
fn forget(slots: &mut [SqSlot]) {
    for (idx, slot) in slots.iter_mut().enumerate() {
        *slot = slot.with_ctr(idx as u16 ^ 1);
    }
}

/// Ring byte offset after `off`, wrapping at the end of a ring of
/// `ring_bytes` ("wrap exact", [ref §1.8](crate::reference)).
#[inline(always)]
fn wrap_at(off: usize, ring_bytes: usize) -> usize {
    if off == ring_bytes {
        0
    } else {
        off
    }
}

#[cfg(test)]
#[path = "sq_post_tests.rs"]
mod post_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::MemUar;
    use crate::wqe::{Be16, SendWqe};

    const N: usize = 8;

    /// Test memory for one queue: ring, doorbell record, inline payload.
    struct Fixture {
        ring: [u64; N * 8],
        db: [u64; 1],
    }

    fn buf<T>(a: &mut [T]) -> DmaBuf {
        DmaBuf {
            cpu: NonNull::new(a.as_mut_ptr().cast::<u8>()).unwrap(),
            iova: 0x1000,
            len: core::mem::size_of_val(a),
        }
    }

    /// A test queue's configuration (also used by `post_tests`).
    pub(super) fn cfg(qp_type: QpType, max_post: u32, max_gs: u32, inline: u32) -> SqConfig {
        SqConfig {
            qpn: 0xabcde,
            qp_type,
            max_post,
            max_gs,
            max_inline_data: inline,
            sig_all: false,
            atomics: true,
            bf: BlueFlame {
                reg_offset: 0x800,
                buf_size: 256,
                enabled: true,
                prefer: false,
            },
        }
    }

    fn queue(f: &mut Fixture, c: SqConfig) -> SendQueue<MemUar, [SqSlot; N]> {
        // SAFETY: the fixture outlives the queue in every test and nothing
        // else touches it while the queue lives.
        let mut q = unsafe {
            SendQueue::new(
                buf(&mut f.ring),
                buf(&mut f.db),
                MemUar::filled(0xee),
                c,
                [SqSlot::default(); N],
            )
        }
        .unwrap();
        q.enable();
        q
    }

    fn ring_bytes(f: &Fixture) -> [u8; N * 64] {
        let mut out = [0u8; N * 64];
        for (i, w) in f.ring.iter().enumerate() {
            out[i * 8..i * 8 + 8].copy_from_slice(&w.to_ne_bytes());
        }
        out
    }

    /// A BlueFlame register that does not fit in the 4 KiB UAR page is
    /// refused at construction (a vector file naming `buf_size` 0x1000
    /// made `conform` index past the page: found by `vector_files`).
    #[test]
    fn blueflame_register_must_fit_the_uar_page() {
        let mut f = Fixture {
            ring: [0; N * 8],
            db: [0],
        };
        let make = |f: &mut Fixture, reg_offset: usize, buf_size: usize| {
            let mut c = cfg(QpType::Rc, 1, 16, 0);
            c.bf.reg_offset = reg_offset;
            c.bf.buf_size = buf_size;
            // SAFETY: the fixture outlives the queue, which is dropped at
            // once.
            unsafe {
                SendQueue::new(
                    buf(&mut f.ring),
                    buf(&mut f.db),
                    MemUar::filled(0xee),
                    c,
                    [SqSlot::default(); N],
                )
            }
            .is_some()
        };
        assert!(make(&mut f, 0x800, 256));
        assert!(
            make(&mut f, 0xe00, 256),
            "last register: 0xe00 + 512 = 4096"
        );
        assert!(make(&mut f, 0xff8, 0), "8-byte doorbells only");
        assert!(!make(&mut f, 0xe00, 257));
        assert!(!make(&mut f, 0x800, 0x1000));
        assert!(!make(&mut f, 0xffc, 0));
        assert!(!make(&mut f, 0x800, usize::MAX));
        assert!(!make(&mut f, usize::MAX, 0));
    }

    #[test]
    fn write_then_parse_back() {
        let mut f = Fixture {
            ring: [0; N * 8],
            db: [0],
        };
        let mut q = queue(&mut f, cfg(QpType::Rc, 1, 16, 252));
        let sgl = [Sge {
            addr: 0x1122_3344_5566_7788,
            length: 100,
            lkey: 7,
        }];
        let wr = SendWr::new(
            9,
            SendOp::Write {
                remote_addr: 0xdead_beef,
                rkey: 0x42,
            },
            &sgl,
        )
        .with_flags(SendFlags::SIGNALED);
        // SAFETY: non-inline SGE; the memory UAR never dereferences it.
        unsafe { q.post_send_raw(&[wr]) }.unwrap();
        let r = ring_bytes(&f);
        let w = SendWqe::parse(&r, crate::wqe::QpType::Rc).unwrap();
        // ref §1.7: RC WRITE with 1 SGE = ctrl + raddr + data = 3 DS.
        assert_eq!(w.ctrl.ds(), 3);
        assert_eq!(w.ctrl.opcode(), 0x08);
        assert_eq!(w.ctrl.qpn(), 0xabcde);
        assert_eq!(w.ctrl.fm_ce_se, 0x08);
        assert_eq!(q.cur_post(), 1);
        // ref §4.1: dbrec word 1 = BE32(cur_post).
        assert_eq!(f.db[0].to_ne_bytes()[4..8], 1u32.to_be_bytes());
        // 8-byte doorbell at the BF register: the first 8 ctrl bytes.
        assert_eq!(q.uar().bytes()[0x800..0x808], r[..8]);
        assert_eq!(q.bf_offset(), 256);
    }

    #[test]
    fn inline_wraps_at_ring_end_and_blueflame_copies_it() {
        let mut f = Fixture {
            ring: [0; N * 8],
            db: [0],
        };
        let mut q = queue(&mut f, cfg(QpType::Rc, 1, 16, 252));
        // SAFETY: memory-only ring, never executed by a device.
        unsafe { q.set_counters(7, 7, 0) };
        let payload: [u8; 60] = core::array::from_fn(|i| i as u8);
        let sgl = [Sge {
            addr: payload.as_ptr().expose_provenance() as u64,
            length: 60,
            lkey: 0,
        }];
        let wr = SendWr::new(1, SendOp::Send, &sgl).with_flags(SendFlags::INLINE);
        // SAFETY: the inline SGE points at `payload`, alive and readable.
        unsafe { q.post_send_raw(&[wr]) }.unwrap();
        let r = ring_bytes(&f);
        // ctrl at slot 7 (0x1c0); inline header at 0x1d0, 44 bytes of
        // payload to the ring end, the remaining 16 at offset 0. ref §1.8.
        assert_eq!(r[0x1d0..0x1d4], (60u32 | 0x8000_0000).to_be_bytes());
        assert_eq!(r[0x1d4..0x200], payload[..44]);
        assert_eq!(r[0..16], payload[44..]);
        // DS = 1 + ceil((60 + 4) / 16) = 5 → 2 WQEBBs.
        assert_eq!(q.cur_post(), 9);
        // BlueFlame: single inline WR of DS 5 ≤ 16 → 128 bytes copied, the
        // source wrapping at the ring end.
        assert_eq!(q.uar().bytes()[0x800..0x840], r[0x1c0..0x200]);
        assert_eq!(q.uar().bytes()[0x840..0x880], r[0..0x40]);
    }

    #[test]
    fn every_refusal_is_typed_and_writes_nothing() {
        let mut f = Fixture {
            ring: [0; N * 8],
            db: [0],
        };
        let mut q = queue(&mut f, cfg(QpType::Rc, 2, 4, 60));
        let before = ring_bytes(&f);
        let sge = Sge {
            addr: 0x1000,
            length: 8,
            lkey: 1,
        };
        let five = [sge; 5];
        let big = [Sge {
            addr: 0x1000,
            length: 61,
            lkey: 1,
        }];
        let one = [sge];
        let ra = SendOp::Write {
            remote_addr: 0,
            rkey: 0,
        };
        let cases = [
            (SendWr::new(1, SendOp::Send, &five), 12),
            (
                SendWr::new(1, SendOp::Send, &big).with_flags(SendFlags::INLINE),
                12,
            ),
            (
                SendWr::new(
                    1,
                    SendOp::BindMw {
                        mw_rkey: 1,
                        bind: MwBind {
                            length: 1 << 32,
                            new_rkey: 2,
                            mr_lkey: 3,
                            ..MwBind::UNBIND
                        },
                    },
                    &[],
                ),
                95,
            ),
        ];
        for (wr, errno) in cases {
            // SAFETY: nothing is dereferenced (refused before any write).
            let e = unsafe { q.post_send_raw(&[wr]) }.unwrap_err();
            assert_eq!(e.index, 0);
            assert_eq!(e.kind.errno(), errno, "{:?}", e.kind);
        }
        // Queue full after max_post (2) WRs: the third is refused.
        let wrs = [
            SendWr::new(1, ra, &one),
            SendWr::new(2, ra, &one),
            SendWr::new(3, ra, &one),
        ];
        // SAFETY: non-inline SGEs, never dereferenced.
        let e = unsafe { q.post_send_raw(&wrs) }.unwrap_err();
        assert_eq!(e.index, 2);
        assert!(matches!(
            e.kind,
            PostErrorKind::QueueFull {
                outstanding: 2,
                max_post: 2
            }
        ));
        assert_eq!(q.cur_post(), 2);
        let after = ring_bytes(&f);
        assert_eq!(
            after[128..],
            before[128..],
            "only the two posted WQEBBs changed"
        );
        // Posting is refused in a non-RTS state.
        // SAFETY: memory-only ring, never executed by a device.
        unsafe { q.reset() };
        // SAFETY: as above.
        let e = unsafe { q.post_send_raw(&[SendWr::new(1, SendOp::Send, &[])]) }.unwrap_err();
        assert!(matches!(
            e.kind,
            PostErrorKind::TooManySges { max: None, .. }
        ));
    }

    #[test]
    fn hot_path_writes_exactly_what_the_general_path_writes() {
        let mut fa = Fixture {
            ring: [0; N * 8],
            db: [0],
        };
        let mut fb = Fixture {
            ring: [0; N * 8],
            db: [0],
        };
        let c = cfg(QpType::Rc, 4, 4, 60);
        let mut a = queue(&mut fa, c);
        let mut b = queue(&mut fb, c);
        let mut seed = 0x1234_5678_u32;
        let mut rnd = || {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            seed
        };
        for round in 0..200u64 {
            let sges: [Sge; 4] = core::array::from_fn(|i| Sge {
                addr: 0x1000 * i as u64 + round,
                length: if rnd() % 4 == 0 { 0 } else { rnd() % 5000 },
                lkey: rnd(),
            });
            let k = (rnd() % 5) as usize;
            let op = [RdmaOp::Write, RdmaOp::Read, RdmaOp::Send][(rnd() % 3) as usize];
            let n = 1 + (rnd() % 3) as usize;
            let fast: [RdmaWr<'_>; 3] = core::array::from_fn(|j| RdmaWr {
                wr_id: round * 8 + j as u64,
                remote_addr: 0xdead_0000 + j as u64,
                rkey: 0x77,
                sgl: &sges[..k],
                signaled: j == n - 1,
            });
            let slow: [SendWr<'_>; 3] = core::array::from_fn(|j| fast[j].to_send_wr(op));
            // SAFETY: non-inline SGEs, never dereferenced.
            let ra = unsafe { a.post_rdma_raw(op, &fast[..n]) };
            // SAFETY: as above.
            let rb = unsafe { b.post_send_raw(&slow[..n]) };
            assert_eq!(ra, rb);
            assert_eq!(
                (a.cur_post(), a.head(), a.bf_offset()),
                (b.cur_post(), b.head(), b.bf_offset())
            );
            assert_eq!(ring_bytes(&fa), ring_bytes(&fb), "round {round}");
            assert_eq!(fa.db, fb.db);
            assert_eq!(a.uar().bytes()[..], b.uar().bytes()[..]);
            if rnd() % 2 == 0 {
                // Everything completed (both queues alike).
                // SAFETY: memory-only rings, never executed by a device.
                unsafe {
                    a.set_counters(a.cur_post(), a.head(), a.bf_offset());
                    b.set_counters(b.cur_post(), b.head(), b.bf_offset());
                }
            }
        }
    }

    #[test]
    fn ud_needs_a_destination_and_only_sends() {
        let mut f = Fixture {
            ring: [0; N * 8],
            db: [0],
        };
        let mut q = queue(&mut f, cfg(QpType::Ud, 4, 1, 60));
        let one = [Sge {
            addr: 0x1000,
            length: 8,
            lkey: 1,
        }];
        // SAFETY: refused before any write.
        let e = unsafe { q.post_send_raw(&[SendWr::new(1, SendOp::Send, &one)]) }.unwrap_err();
        assert_eq!(e.kind, PostErrorKind::MissingUdDest);
        let wr = SendWr::new(
            1,
            SendOp::Read {
                remote_addr: 0,
                rkey: 0,
            },
            &one,
        );
        // SAFETY: refused before any write.
        let e = unsafe { q.post_send_raw(&[wr]) }.unwrap_err();
        assert!(matches!(
            e.kind,
            PostErrorKind::OpNotAllowed {
                op: "RDMA_READ",
                ..
            }
        ));
        let av = AddressVector {
            rlid: Be16::new(0x12),
            ..Default::default()
        };
        let ud = UdDest {
            av: &av,
            remote_qpn: 0xbeef,
            remote_qkey: 0x1111_1111,
        };
        // SAFETY: non-inline SGE, never dereferenced.
        unsafe { q.post_send_raw(&[SendWr::new(1, SendOp::Send, &one).with_ud(ud)]) }.unwrap();
        let r = ring_bytes(&f);
        // ref §1.5: dqp_dct = QPN | 0x80000000, qkey in bytes 0–3 of the AV.
        assert_eq!(r[16..20], 0x1111_1111u32.to_be_bytes());
        assert_eq!(r[24..28], (0xbeef | 0x8000_0000u32).to_be_bytes());
        // ctrl + AV + data = 5 DS → 2 WQEBBs (ref §1.7).
        assert_eq!(q.cur_post(), 2);
    }

    fn send_wr(wr_id: u64, sgl: &[Sge]) -> SendWr<'_> {
        SendWr::new(wr_id, SendOp::Send, sgl).with_flags(SendFlags::SIGNALED)
    }

    #[test]
    fn retire_accepts_only_the_first_wqebb_of_a_wqe_in_flight() {
        let mut f = Fixture {
            ring: [0; N * 8],
            db: [0],
        };
        let mut q = queue(&mut f, cfg(QpType::Rc, 4, 4, 0));
        let s1 = [Sge {
            addr: 0x10,
            length: 8,
            lkey: 1,
        }];
        // 4 SGEs: ctrl + 4 data = 5 DS = 2 WQEBBs.
        let s4 = [s1[0]; 4];
        // WR 1 at counter 0 (1 WQEBB), WR 2 at counter 1 (2 WQEBBs), WR 3
        // at counter 3.
        // SAFETY: memory-only ring; SGEs never dereferenced.
        unsafe { q.post_send_raw(&[send_wr(1, &s1), send_wr(2, &s4), send_wr(3, &s1)]) }.unwrap();
        assert_eq!((q.cur_post(), q.head(), q.tail()), (4, 3, 0));
        // SAFETY: (all retire calls) memory-only ring, never executed.
        unsafe {
            // Never posted: counter 4 (beyond the producer), 9 (slot 1 a lap
            // on), 2 (second WQEBB of WR 2).
            for c in [4u16, 9, 2, 0xffff] {
                assert_eq!(q.retire(c), Err(CompletionReject::NotInFlight), "{c}");
                assert_eq!(q.tail(), 0, "{c}");
            }
            assert_eq!(q.retire(1).map(|r| r.wr_id), Ok(2));
            assert_eq!(q.tail(), 2);
            // Repeated and stale counters retire nothing; tail never moves
            // backwards.
            assert_eq!(q.retire(1), Err(CompletionReject::NotInFlight));
            assert_eq!(q.retire(0), Err(CompletionReject::NotInFlight));
            assert_eq!(q.tail(), 2);
            assert_eq!(q.retire(3).map(|r| r.wr_id), Ok(3));
            assert_eq!(q.outstanding(), 0);
            assert_eq!(q.retire(3), Err(CompletionReject::NotInFlight));
        }
    }

    #[test]
    fn reset_forgets_every_slot() {
        let mut f = Fixture {
            ring: [0; N * 8],
            db: [0],
        };
        let mut q = queue(&mut f, cfg(QpType::Rc, 4, 4, 0));
        let s1 = [Sge {
            addr: 0x10,
            length: 8,
            lkey: 1,
        }];
        let s4 = [s1[0]; 4];
        // SAFETY: memory-only ring; SGEs never dereferenced.
        unsafe { q.post_send_raw(&[send_wr(1, &s1), send_wr(2, &s1), send_wr(3, &s1)]) }.unwrap();
        // SAFETY: memory-only ring, never executed by a device.
        unsafe { q.reset() };
        q.enable();
        // New life: WR 10 at counter 0 (2 WQEBBs), WR 11 at counter 2.
        // SAFETY: as above.
        unsafe { q.post_send_raw(&[send_wr(10, &s4), send_wr(11, &s1)]) }.unwrap();
        // SAFETY: memory-only ring, never executed.
        unsafe {
            // Slot 1 still holds WR 2 of the old life (sequence 1, which is
            // inside the new [tail, head)): a stale CQE for it is refused.
            assert_eq!(q.retire(1), Err(CompletionReject::NotInFlight));
            assert_eq!(q.tail(), 0);
            assert_eq!(q.retire(2).map(|r| r.wr_id), Ok(11));
        }
        // set_counters forgets too.
        // SAFETY: memory-only ring.
        unsafe { q.set_counters(5, 7, 0) };
        // SAFETY: as above.
        unsafe { assert_eq!(q.retire(2), Err(CompletionReject::NotInFlight)) };
    }

    #[test]
    fn umr_ending_at_the_ring_end_wraps_before_inline_data() {
        let mut f = Fixture {
            ring: [0; N * 8],
            db: [0],
        };
        let mut q = queue(&mut f, cfg(QpType::Rc, 1, 4, 64));
        // LOCAL_INV at WQEBB 6: ctrl 0x180, UMR control 0x190..0x1c0, mkey
        // context 0x1c0..0x200 = the ring end; the inline data must start
        // at offset 0 (before the fix: off == RING_BYTES, `room`
        // underflowed — a debug panic, a write past the ring in release).
        // SAFETY: memory-only ring, never executed by a device.
        unsafe { q.set_counters(6, 6, 0) };
        let payload: [u8; 8] = core::array::from_fn(|i| 0xa0 + i as u8);
        let sgl = [Sge {
            addr: payload.as_ptr().expose_provenance() as u64,
            length: 8,
            lkey: 0,
        }];
        let wr = SendWr::new(
            1,
            SendOp::LocalInv {
                invalidate_rkey: 0x1234,
            },
            &sgl,
        )
        .with_flags(SendFlags::INLINE | SendFlags::SIGNALED);
        // SAFETY: the inline SGE points at `payload`, alive and readable.
        unsafe { q.post_send_raw(&[wr]) }.unwrap();
        let r = ring_bytes(&f);
        assert_eq!(r[0..4], (8u32 | 0x8000_0000).to_be_bytes());
        assert_eq!(r[4..12], payload);
        // ctrl 1 + UMR 3 + mkey 4 + inline 1 = 9 DS → 3 WQEBBs.
        assert_eq!(r[0x187] & 0x3f, 9);
        assert_eq!(q.cur_post(), 9);
    }

    #[test]
    fn atomic_result_sge_must_cover_eight_writable_bytes() {
        let mut f = Fixture {
            ring: [0; N * 8],
            db: [0],
        };
        let mut q = queue(&mut f, cfg(QpType::Rc, 4, 1, 0));
        let mut mem = [0u64; 2];
        let cpu = NonNull::new(mem.as_mut_ptr().cast::<u8>()).unwrap();
        // SAFETY: `mem` outlives the region; the ring is never executed, so
        // nothing writes through it.
        let mr = unsafe {
            crate::mr::MemoryRegion::new(cpu, 0x9000, 16, 7, 7, crate::mr::Access::LOCAL_WRITE)
        };
        let op = SendOp::FetchAdd {
            remote_addr: 0x5000,
            rkey: 3,
            add: 1,
        };
        // 4 bytes at offset 12 are inside the region, but the device
        // writes 8 bytes there (4 past its end).
        let bad = [Sge {
            addr: 0x900c,
            length: 4,
            lkey: 7,
        }];
        let e = q.post_send(&[SendWr::new(1, op, &bad)], &[mr]).unwrap_err();
        assert_eq!(e.kind, PostErrorKind::SgeOutOfBounds { sge: 0 });
        assert_eq!(q.head(), 0);
        let good = [Sge {
            addr: 0x9008,
            length: 4,
            lkey: 7,
        }];
        q.post_send(&[SendWr::new(2, op, &good)], &[mr]).unwrap();
        assert_eq!(q.head(), 1);
        // A read-only region is refused even when the 8 bytes fit.
        // SAFETY: as above.
        let ro = unsafe {
            crate::mr::MemoryRegion::new(cpu, 0x9000, 16, 8, 8, crate::mr::Access::empty())
        };
        let sg = [Sge {
            addr: 0x9000,
            length: 8,
            lkey: 8,
        }];
        let e = q.post_send(&[SendWr::new(3, op, &sg)], &[ro]).unwrap_err();
        assert_eq!(e.kind, PostErrorKind::SgeOutOfBounds { sge: 0 });
    }
}
