//! Send work requests as callers hand them in: [`SendWr`] with its
//! [`SendOp`] and [`SendFlags`] (the general path), [`RdmaWr`] with
//! [`RdmaOp`] (the hot path), the UD destination and memory-window binds.

use crate::mr::Access;
use crate::sge::Sge;
use crate::wqe::{AddressVector, Opcode};
use bitflags::bitflags;
use static_assertions::const_assert_eq;

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
#[allow(clippy::exhaustive_enums)] // closed by verbs: memory windows are type 1 or type 2
pub enum MwType {
    /// Type 1 window.
    Type1,
    /// Type 2 window (bound to a QP).
    Type2,
}

/// The operation of a send work request, with its operation-specific
/// fields. Immediate data is a host value; it is stored big-endian.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
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
            SendOp::Send => Opcode::Send.bits(),
            SendOp::SendImm { .. } => Opcode::SendImm.bits(),
            SendOp::SendInv { .. } => Opcode::SendInval.bits(),
            SendOp::Write { .. } => Opcode::RdmaWrite.bits(),
            SendOp::WriteImm { .. } => Opcode::RdmaWriteImm.bits(),
            SendOp::Read { .. } => Opcode::RdmaRead.bits(),
            SendOp::CompSwap { .. } => Opcode::AtomicCs.bits(),
            SendOp::FetchAdd { .. } => Opcode::AtomicFa.bits(),
            SendOp::LocalInv { .. } | SendOp::BindMw { .. } => Opcode::Umr.bits(),
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
    pub(super) const fn wr_data(&self) -> u8 {
        match self {
            SendOp::BindMw { .. } => 5,
            SendOp::LocalInv { .. } => 6,
            _ => 0,
        }
    }
    pub(super) const fn is_atomic(&self) -> bool {
        matches!(self, SendOp::CompSwap { .. } | SendOp::FetchAdd { .. })
    }
}

/// The operation of a [`SendQueue::post_rdma_raw`](super::SendQueue::post_rdma_raw) batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(clippy::exhaustive_enums)] // closed by design: the fixed-operation posts, one precomputed limit each
pub enum RdmaOp {
    /// RDMA WRITE.
    Write,
    /// RDMA READ.
    Read,
    /// SEND (remote address and key are ignored).
    Send,
}

impl RdmaOp {
    /// The [`SendOp`] of this operation with its remote address and key
    /// (unused by SEND).
    #[inline(always)]
    pub const fn send_op(self, remote_addr: u64, rkey: u32) -> SendOp {
        match self {
            RdmaOp::Write => SendOp::Write { remote_addr, rkey },
            RdmaOp::Read => SendOp::Read { remote_addr, rkey },
            RdmaOp::Send => SendOp::Send,
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
    #[must_use = "returns the changed value; dropping it discards the change"]
    pub const fn with_flags(mut self, flags: SendFlags) -> Self {
        self.flags = flags;
        self
    }
    /// The same WR with a UD destination.
    #[must_use = "returns the changed value; dropping it discards the change"]
    pub const fn with_ud(mut self, ud: UdDest<'a>) -> Self {
        self.ud = Some(ud);
        self
    }
}

// `with_op` forms SIGNALED from the bool with a shift.
const_assert_eq!(SendFlags::SIGNALED.bits(), 1 << 1);

impl<'a> RdmaWr<'a> {
    /// This WR as the builder sees it, with operation `op`.
    #[inline(always)]
    pub(super) fn with_op(&self, op: SendOp) -> SendWr<'a> {
        SendWr {
            wr_id: self.wr_id,
            op,
            sgl: self.sgl,
            flags: SendFlags::from_bits_retain((self.signaled as u32) << 1),
            ud: None,
        }
    }
}
