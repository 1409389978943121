//! Queue sizing ([ref §3](crate::reference)): device capabilities + requested capacities → the
//! exact geometry the mlx5 provider gives the hardware, or a typed error naming
//! the limit that was exceeded.
//!
//! Everything here is a `const fn` over plain integers, so a capacity can be
//! checked at compile time (see [`QpGeometry`]). Device limits are always
//! parameters ([`DeviceCaps`]); the only constants are the fixed byte sizes of
//! mlx5 segments ([ref §1.5](crate::reference)) and the provider's own software limits.
//!
//! | item | ref |
//! | --- | --- |
//! | [`DeviceCaps`] | §3.1, §3.11 |
//! | [`sq_overhead`] | §3.2 |
//! | [`send_wqe_size`] | §3.3 |
//! | [`sq_layout`] | §3.4 |
//! | [`rq_layout`] | §3.5 |
//! | [`qp_layout`] | §3.6 |
//! | [`cq_layout`] | §3.7 |
//! | [`srq_layout`] | §3.8 |
//! | [`check_cq_covers`], [`qp_budget`] | §3.7, §4.1 |

use core::fmt;

use bitflags::bitflags;

/// The provider returns `EINVAL` for every sizing rejection except the CQ
/// buffer overflow, which is `ENOMEM` ([ref §3.4, §3.7](crate::reference)).
pub use crate::errno::{EINVAL, ENOMEM};

/// One send WQE basic block (WQEBB) in bytes, as sizing computes with it.
const SEND_WQE_BB: u32 = crate::wqe::SEND_WQE_BB as u32;
/// Control / data / inline-header segment granule in bytes ([ref §1.5](crate::reference)).
const SEG: u32 = 16;
/// Inline data segment header (byte count) in bytes ([ref §3.3, §3.4](crate::reference)).
const INL_HDR: u32 = 4;
/// The provider's own CQ entry limit, independent of the device: `ncqe` above
/// 2^24 is rejected with EINVAL before the kernel is asked ([ref §3.7](crate::reference)).
pub const PROVIDER_MAX_NCQE: u64 = 1 << 24;
/// The provider's buffer-size guard: a CQ buffer of more than `INT_MAX`
/// bytes fails with ENOMEM ([ref §3.7](crate::reference): "resize also guards cqe·64 > INT_MAX").
pub const PROVIDER_MAX_CQ_BUF: u64 = 0x7fff_ffff;

// ---------------------------------------------------------------------------------------------
// Device capabilities
// ---------------------------------------------------------------------------------------------

/// Device limits that sizing depends on ([ref §3.1](crate::reference), names of the underlying
/// HCA caps in §3.11). Every sizing function takes these as a parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceCaps {
    /// Max send WQE bytes (`cap.max_wqe_sz_sq`, [ref §3.1](crate::reference)).
    pub max_sq_desc_sz: u32,
    /// Max receive WQE bytes (`cap.max_wqe_sz_rq`, [ref §3.1](crate::reference)).
    pub max_rq_desc_sz: u32,
    /// Max WQEBBs per SQ (`1 << cap.log_max_qp_sz`, [ref §3.1](crate::reference)).
    pub max_send_wqebb: u32,
    /// Max receive WQEs per RQ (`1 << cap.log_max_qp_sz`, [ref §3.1](crate::reference)).
    pub max_recv_wr: u32,
    /// Max SRQ WQEs (`1 << cap.log_max_srq_sz`, [ref §3.1](crate::reference)).
    pub max_srq_recv_wr: u32,
    /// Device `max_sge` as `ibv_query_device` reports it (the mlx5 kernel
    /// rule, [`crate::cmd::caps::HcaCaps::max_sge`], [ref §3.10](crate::reference)).
    /// Informational for sizing: the provider's sizing does not check it (it
    /// checks the descriptor sizes instead); the tool refuses SGE counts
    /// above it.
    pub max_sge: u32,
    /// Max CQ **entries** (not a log2, not `entries − 1`): `1 << cap.log_max_cq_sz`
    /// ([ref §3.7, §3.11](crate::reference)). A CQ whose rounded-up entry count `ncqe` exceeds this
    /// is rejected by the kernel. `ibv_query_device` reports `max_cqe − 1`.
    pub max_cqe: u32,
    /// BlueFlame register size in bytes (`1 << cap.log_bf_reg_size`; 0 = no
    /// BlueFlame) ([ref §3.1, §4.2](crate::reference)).
    pub bf_reg_size: u32,
    /// CQE version (0 = QPN in CQE, 1 = user index) ([ref §3.1, §3.11](crate::reference)).
    pub cqe_version: u32,
    /// Host page size used to align queue allocations ([ref §3.6, §3.7](crate::reference)).
    pub page_size: u32,
    /// Cache-line size: one doorbell record per QP/CQ/SRQ occupies one cache
    /// line of the doorbell page ([ref §4.1](crate::reference)).
    pub cache_line_size: u32,
}

impl DeviceCaps {
    /// The fake device of `shared/mlx5/vectors/README.md`: 1024-byte send and
    /// 512-byte receive descriptors (kernel `max_sge` 30), 2^15 WQEBBs / receive WQEs / SRQ WQEs,
    /// 512-byte BlueFlame register, 2^22 CQ entries, 4 KiB pages, CQE version 1.
    pub const DEFAULT: DeviceCaps = DeviceCaps {
        max_sq_desc_sz: 1024,
        max_rq_desc_sz: 512,
        max_send_wqebb: 32768,
        max_recv_wr: 32768,
        max_srq_recv_wr: 32768,
        max_sge: 30,
        max_cqe: 1 << 22,
        bf_reg_size: 512,
        cqe_version: 1,
        page_size: 4096,
        cache_line_size: 64,
    };
}

impl Default for DeviceCaps {
    fn default() -> Self {
        Self::DEFAULT
    }
}

// ---------------------------------------------------------------------------------------------
// QP types and send-op sets
// ---------------------------------------------------------------------------------------------

/// QP transport type; it selects the per-WQE transport segment ([ref §3.2](crate::reference)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QpType {
    /// Reliable connected: no transport segment.
    Rc,
    /// Unreliable connected: no transport segment.
    Uc,
    /// Unreliable datagram: +48-byte datagram (address vector) segment.
    Ud,
    /// Raw Ethernet: +32-byte Ethernet segment; SQ in a separate buffer
    /// ([ref §3.6](crate::reference)).
    RawPacket,
    /// XRC initiator: +16-byte XRC segment; no RQ (receives go to an SRQ).
    XrcSend,
    /// XRC target: +16-byte XRC segment; no RQ (receives go to an SRQ).
    XrcRecv,
}

impl QpType {
    /// Numeric id for const generics ([`QpGeometry`]): RC.
    pub const RC_ID: u8 = 0;
    /// Numeric id for const generics: UC.
    pub const UC_ID: u8 = 1;
    /// Numeric id for const generics: UD.
    pub const UD_ID: u8 = 2;
    /// Numeric id for const generics: RAW_PACKET.
    pub const RAW_PACKET_ID: u8 = 3;
    /// Numeric id for const generics: XRC_SEND.
    pub const XRC_SEND_ID: u8 = 4;
    /// Numeric id for const generics: XRC_RECV.
    pub const XRC_RECV_ID: u8 = 5;

    /// The type for a numeric id (see the `*_ID` constants); `None` if unknown.
    pub const fn from_id(id: u8) -> Option<QpType> {
        match id {
            0 => Some(QpType::Rc),
            1 => Some(QpType::Uc),
            2 => Some(QpType::Ud),
            3 => Some(QpType::RawPacket),
            4 => Some(QpType::XrcSend),
            5 => Some(QpType::XrcRecv),
            _ => None,
        }
    }

    /// Bytes of transport segment(s) after the operation part ([ref §3.2](crate::reference) table).
    pub const fn transport_overhead(self) -> u32 {
        match self {
            QpType::Rc | QpType::Uc => 0,
            QpType::Ud => 48,
            QpType::RawPacket => 32,
            QpType::XrcSend | QpType::XrcRecv => 16,
        }
    }

    /// The `qpc.st` service type, for the types the firmware command path
    /// creates: RC, UC, UD ([ref §7.11](crate::reference)). `None` for the
    /// others (XRC needs an XRC domain, raw packet QPs are SQ/RQ objects),
    /// which `Device::create_qp` refuses.
    pub const fn service_type(self) -> Option<ServiceType> {
        match self {
            QpType::Rc => Some(ServiceType::Rc),
            QpType::Uc => Some(ServiceType::Uc),
            QpType::Ud => Some(ServiceType::Ud),
            _ => None,
        }
    }

    /// The type of a `qpc.st` code the command path creates (the inverse
    /// of [`QpType::service_type`], through [`ServiceType::from_code`]).
    pub const fn from_service_type(st: u8) -> Option<QpType> {
        match ServiceType::from_code(st) {
            Some(s) => Some(s.qp_type()),
            None => None,
        }
    }

    /// Whether this type never has its own RQ (XRC uses SRQs).
    pub const fn has_rq(self) -> bool {
        !matches!(self, QpType::XrcSend | QpType::XrcRecv)
    }

    /// Name as used in the vector files (`RC`, `UC`, `UD`, `RAW_PACKET`, `XRC_SEND`, `XRC_RECV`).
    pub const fn name(self) -> &'static str {
        match self {
            QpType::Rc => "RC",
            QpType::Uc => "UC",
            QpType::Ud => "UD",
            QpType::RawPacket => "RAW_PACKET",
            QpType::XrcSend => "XRC_SEND",
            QpType::XrcRecv => "XRC_RECV",
        }
    }

    /// Parse a QP type name, case-insensitive: `rc`, `uc`, `ud`, `raw`/`raw_packet`,
    /// `xrc`/`xrc_send`, `xrc_recv`.
    pub fn parse(s: &str) -> Option<QpType> {
        let s = s.trim();
        let eq = |n: &str| s.eq_ignore_ascii_case(n);
        if eq("rc") {
            Some(QpType::Rc)
        } else if eq("uc") {
            Some(QpType::Uc)
        } else if eq("ud") {
            Some(QpType::Ud)
        } else if eq("raw") || eq("raw_packet") || eq("raw-packet") {
            Some(QpType::RawPacket)
        } else if eq("xrc") || eq("xrc_send") || eq("xrc-send") {
            Some(QpType::XrcSend)
        } else if eq("xrc_recv") || eq("xrc-recv") {
            Some(QpType::XrcRecv)
        } else {
            None
        }
    }
}

/// The `qpc.st` service type of a QP the firmware command path creates
/// ([ref §7.11](crate::reference)): the subset of [`QpType`] with a code
/// there, so a command cannot carry a type it cannot create.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ServiceType {
    /// Reliable connected (`st` 0).
    Rc = 0,
    /// Unreliable connected (`st` 1).
    Uc = 1,
    /// Unreliable datagram (`st` 2).
    Ud = 2,
}

impl ServiceType {
    /// The `qpc.st` code.
    pub const fn code(self) -> u8 {
        self as u8
    }

    /// The service type of `qpc.st` code `c`; `None` for a code the
    /// command path does not create.
    pub const fn from_code(c: u8) -> Option<Self> {
        match c {
            0 => Some(ServiceType::Rc),
            1 => Some(ServiceType::Uc),
            2 => Some(ServiceType::Ud),
            _ => None,
        }
    }

    /// The QP type of this service type.
    pub const fn qp_type(self) -> QpType {
        match self {
            ServiceType::Rc => QpType::Rc,
            ServiceType::Uc => QpType::Uc,
            ServiceType::Ud => QpType::Ud,
        }
    }
}

impl fmt::Display for QpType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

bitflags! {
    /// The send operations a QP may post (`ibv_qp_init_attr_ex.send_ops_flags`).
    /// The set decides the per-WQE operation overhead ([ref §3.2](crate::reference)): SEND-only
    /// 16 B, with RDMA 32 B, with atomics 48 B, with LOCAL_INV/BIND_MW 192 B.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct SendOps: u32 {
        /// RDMA write.
        const RDMA_WRITE = 1 << 0;
        /// RDMA write with immediate.
        const RDMA_WRITE_IMM = 1 << 1;
        /// Send.
        const SEND = 1 << 2;
        /// Send with immediate.
        const SEND_IMM = 1 << 3;
        /// RDMA read.
        const RDMA_READ = 1 << 4;
        /// Atomic compare-and-swap.
        const ATOMIC_CS = 1 << 5;
        /// Atomic fetch-and-add.
        const ATOMIC_FA = 1 << 6;
        /// Local invalidate (needs UMR room: 192-byte overhead).
        const LOCAL_INV = 1 << 7;
        /// Memory-window bind (needs UMR room: 192-byte overhead).
        const BIND_MW = 1 << 8;
        /// Send with invalidate (control segment only).
        const SEND_INV = 1 << 9;
        /// TCP segmentation offload send (UD/RAW_PACKET); its header room is
        /// requested separately with [`QpCaps::max_tso_header`].
        const TSO = 1 << 10;
    }
}

/// Operations that need a remote-address segment ([ref §3.2](crate::reference)).
const OPS_RDMA: u32 =
    SendOps::RDMA_WRITE.bits() | SendOps::RDMA_WRITE_IMM.bits() | SendOps::RDMA_READ.bits();
/// Operations that need remote-address + atomic segments ([ref §3.2](crate::reference)).
const OPS_ATOMIC: u32 = SendOps::ATOMIC_CS.bits() | SendOps::ATOMIC_FA.bits();
/// Operations that need UMR control + mkey context room ([ref §3.2](crate::reference)).
const OPS_UMR: u32 = SendOps::LOCAL_INV.bits() | SendOps::BIND_MW.bits();

/// Names accepted by [`SendOps::parse`] (besides the flag names themselves).
const OP_ALIASES: &[(&str, u32)] = &[
    ("write", SendOps::RDMA_WRITE.bits()),
    ("write_imm", SendOps::RDMA_WRITE_IMM.bits()),
    ("read", SendOps::RDMA_READ.bits()),
    ("send", SendOps::SEND.bits()),
    ("send_imm", SendOps::SEND_IMM.bits()),
    (
        "imm",
        SendOps::SEND_IMM.bits() | SendOps::RDMA_WRITE_IMM.bits(),
    ),
    ("send_inv", SendOps::SEND_INV.bits()),
    ("cas", SendOps::ATOMIC_CS.bits()),
    ("cmp_swp", SendOps::ATOMIC_CS.bits()),
    ("faa", SendOps::ATOMIC_FA.bits()),
    ("fetch_add", SendOps::ATOMIC_FA.bits()),
    ("atomic", OPS_ATOMIC),
    ("atomics", OPS_ATOMIC),
    ("inv", SendOps::LOCAL_INV.bits()),
    ("local_inv", SendOps::LOCAL_INV.bits()),
    ("bind", SendOps::BIND_MW.bits()),
    ("bind_mw", SendOps::BIND_MW.bits()),
    ("tso", SendOps::TSO.bits()),
    ("rdma", OPS_RDMA),
];

impl SendOps {
    /// The set the provider assumes when no send-op list is given ([ref §3.2](crate::reference)):
    /// RC/UC/XRC: every operation (overhead 192); UD: SEND, SEND_IMM, TSO;
    /// RAW_PACKET: SEND, TSO.
    pub const fn classic(qp_type: QpType) -> SendOps {
        match qp_type {
            QpType::Rc | QpType::Uc | QpType::XrcSend | QpType::XrcRecv => SendOps::all(),
            QpType::Ud => SendOps::from_bits_truncate(
                SendOps::SEND.bits() | SendOps::SEND_IMM.bits() | SendOps::TSO.bits(),
            ),
            QpType::RawPacket => {
                SendOps::from_bits_truncate(SendOps::SEND.bits() | SendOps::TSO.bits())
            }
        }
    }

    /// The RDMA-only set `write,send,read` ([ref §3.2](crate::reference): overhead 32 on RC).
    pub const RDMA_ONLY: SendOps = SendOps::from_bits_truncate(
        SendOps::RDMA_WRITE.bits() | SendOps::SEND.bits() | SendOps::RDMA_READ.bits(),
    );

    /// Bytes of the operation part of the per-WQE overhead ([ref §3.2](crate::reference)):
    /// max of ctrl 16, RDMA 32, atomics 48, UMR (LOCAL_INV/BIND_MW) 192.
    pub const fn op_overhead(self) -> u32 {
        let b = self.bits();
        if b & OPS_UMR != 0 {
            // ctrl 16 + umr ctrl 48 + mkey context 64 + max(16, 64)
            SEG + 48 + 64 + 64
        } else if b & OPS_ATOMIC != 0 {
            SEG + SEG + SEG
        } else if b & OPS_RDMA != 0 {
            SEG + SEG
        } else {
            SEG
        }
    }

    /// Parse a list of operation names separated by `,`, `|`, `+` or spaces,
    /// case-insensitive. Accepts the flag names (`SEND`, `SEND_IMM`, `RDMA_WRITE`,
    /// `RDMA_WRITE_IMM`, `RDMA_READ`, `ATOMIC_CS`, `ATOMIC_FA`, `LOCAL_INV`,
    /// `BIND_MW`, `SEND_INV`, `TSO`) and short aliases (`write`, `read`, `send`,
    /// `write_imm`, `send_imm`, `atomic`, `cas`, `faa`, `inv`, `bind`, `rdma`…).
    /// Returns the first unknown name on error.
    pub fn parse(list: &str) -> Result<SendOps, &str> {
        let mut ops = SendOps::empty();
        for name in list
            .split(|c: char| c == ',' || c == '|' || c == '+' || c.is_ascii_whitespace())
            .filter(|s| !s.is_empty())
        {
            let mut found = None;
            for (flag_name, flag) in SendOps::all().iter_names() {
                if flag_name.eq_ignore_ascii_case(name) {
                    found = Some(flag.bits());
                }
            }
            if found.is_none() {
                for (alias, bits) in OP_ALIASES {
                    if alias.eq_ignore_ascii_case(name) {
                        found = Some(*bits);
                    }
                }
            }
            match found {
                Some(bits) => ops = ops.union(SendOps::from_bits_truncate(bits)),
                None => return Err(name),
            }
        }
        Ok(ops)
    }
}

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

/// Which sizing stage rejected a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stage {
    /// Send queue ([ref §3.3, §3.4](crate::reference)).
    Sq,
    /// Receive queue ([ref §3.5](crate::reference)).
    Rq,
    /// Completion queue ([ref §3.7](crate::reference)) and the CQ-covers-outstanding rule.
    Cq,
    /// Shared receive queue ([ref §3.8](crate::reference)).
    Srq,
}

impl Stage {
    /// Lower-case name as in the vectors' `fail_stage` column (`sq`, `rq`, `cq`, `srq`).
    pub const fn name(self) -> &'static str {
        match self {
            Stage::Sq => "sq",
            Stage::Rq => "rq",
            Stage::Cq => "cq",
            Stage::Srq => "srq",
        }
    }
}

/// Which component rejects the request (the vectors' `rejected_by` column).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RejectedBy {
    /// The userspace provider's own checks (rdma-core mlx5).
    Provider,
    /// The kernel / firmware limits (`mlx5_ib`), modelled from device caps.
    Kernel,
}

impl RejectedBy {
    /// Name as in the vectors (`provider`, `kernel-model`).
    pub const fn name(self) -> &'static str {
        match self {
            RejectedBy::Provider => "provider",
            RejectedBy::Kernel => "kernel-model",
        }
    }
}

/// The limit a request exceeded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Limit {
    /// `max_send_sge` above the gather entries left in a send descriptor
    /// ([ref §3.3](crate::reference) step 4).
    MaxSendSge,
    /// Send WQE (with inline data / SGEs) larger than `max_sq_desc_sz`
    /// ([ref §3.3](crate::reference) step 6, §3.4 step 2).
    MaxSqDescSz,
    /// `max_send_wr > 0x7fffffff / max_sq_desc_sz` (overflow guard, [ref §3.4](crate::reference)
    /// step 4).
    MaxSendWrOverflow,
    /// SQ WQEBB count above `max_send_wqebb` ([ref §3.4](crate::reference) step 6).
    MaxSendWqebb,
    /// `max_recv_wr` above the device's `max_recv_wr` ([ref §3.5](crate::reference) step 2).
    MaxRecvWr,
    /// Receive WQE larger than `max_rq_desc_sz` ([ref §3.5](crate::reference) step 3).
    MaxRqDescSz,
    /// CQ of 0 entries requested ([ref §3.7](crate::reference)).
    CqeZero,
    /// Rounded CQ entries above the provider's 2^24 limit ([ref §3.7](crate::reference)).
    ProviderMaxCqe,
    /// CQ buffer above `INT_MAX` bytes (ENOMEM) ([ref §3.7](crate::reference)).
    CqBufBytes,
    /// Rounded CQ entries above the device's `max_cqe` ([ref §3.7](crate::reference), kernel).
    MaxCqe,
    /// SRQ `max_wr` above `max_srq_recv_wr` ([ref §3.8](crate::reference) step 1).
    MaxSrqRecvWr,
    /// SRQ `max_sge` above `max_rq_desc_sz / 16` ([ref §3.8](crate::reference) step 1).
    MaxSrqSge,
    /// SRQ WQE size above the device's `max_recv_wr` (provider quirk, [ref §3.8](crate::reference)
    /// step 3).
    SrqWqeSize,
    /// Kernel: SRQ `max_wr` (= srq.max − 1) not below `max_srq_recv_wr`.
    KernelSrqWr,
    /// Kernel: SRQ `max_sge` (= max_gs) above `max_rq_desc_sz / 16`.
    KernelSrqSge,
    /// A CQ's usable entries are fewer than the WRs that may be outstanding on it.
    CqCoverage,
    /// A derived count or size does not fit the 32-bit field that holds it
    /// (e.g. an RQ of more than 2^31 WQEs, or a receive WQE above 2^31
    /// bytes, from caps near `u32::MAX`): refused instead of wrapping.
    SizeOverflow,
    /// `DeviceCaps::page_size` is not a power of two (0 included): queue
    /// allocations cannot be aligned to it.
    PageSize,
}

impl Limit {
    /// Short snake_case name (used in JSON output).
    pub const fn name(self) -> &'static str {
        match self {
            Limit::MaxSendSge => "max_send_sge",
            Limit::MaxSqDescSz => "max_sq_desc_sz",
            Limit::MaxSendWrOverflow => "max_send_wr_overflow",
            Limit::MaxSendWqebb => "max_send_wqebb",
            Limit::MaxRecvWr => "max_recv_wr",
            Limit::MaxRqDescSz => "max_rq_desc_sz",
            Limit::CqeZero => "cqe_zero",
            Limit::ProviderMaxCqe => "provider_max_cqe",
            Limit::CqBufBytes => "cq_buf_bytes",
            Limit::MaxCqe => "max_cqe",
            Limit::MaxSrqRecvWr => "max_srq_recv_wr",
            Limit::MaxSrqSge => "max_srq_sge",
            Limit::SrqWqeSize => "srq_wqe_size",
            Limit::KernelSrqWr => "kernel_srq_max_wr",
            Limit::KernelSrqSge => "kernel_srq_max_sge",
            Limit::CqCoverage => "cq_coverage",
            Limit::SizeOverflow => "size_overflow",
            Limit::PageSize => "page_size",
        }
    }
}

/// Extra numbers an error carries so that its message (and the vector
/// columns that are filled even on error rows) can be reproduced.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Detail {
    /// Nothing more.
    None,
    /// A QP sizing error: the SQ overhead (always computed, [ref §3.2](crate::reference)), the
    /// send WQE slot size if it was computed before the failure (else 0), and
    /// the requested `max_send_wr` / `max_recv_wr`.
    Qp {
        /// Per-WQE SQ overhead in bytes.
        sq_overhead: u32,
        /// Send WQE slot bytes (0 when the failure happened before it was known).
        send_wqe_size: u32,
        /// Requested `max_send_wr`.
        max_send_wr: u32,
        /// Requested `max_recv_wr`.
        max_recv_wr: u32,
    },
    /// A CQ-coverage error: the outstanding send and receive WRs.
    Outstanding {
        /// Send WRs that may be outstanding (sum of SQ `max_post`).
        send: u32,
        /// Receive WRs that may be outstanding (sum of RQ `max_post`).
        recv: u32,
    },
}

/// A sizing rejection: which stage, which limit, what was asked, what is
/// allowed. `Copy`, allocation-free; [`fmt::Display`] explains it in one line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SizingError {
    /// The stage that failed.
    pub stage: Stage,
    /// The limit that was exceeded.
    pub limit: Limit,
    /// The requested (or derived) value that exceeded it.
    pub requested: u64,
    /// The largest allowed value.
    pub allowed: u64,
    /// Provider or kernel.
    pub rejected_by: RejectedBy,
    /// Context for the message / vector columns.
    pub detail: Detail,
}

impl SizingError {
    const fn new(stage: Stage, limit: Limit, requested: u64, allowed: u64) -> Self {
        SizingError {
            stage,
            limit,
            requested,
            allowed,
            rejected_by: RejectedBy::Provider,
            detail: Detail::None,
        }
    }

    const fn kernel(mut self) -> Self {
        self.rejected_by = RejectedBy::Kernel;
        self
    }

    const fn with_detail(mut self, detail: Detail) -> Self {
        self.detail = detail;
        self
    }

    /// The errno the provider / kernel would set: EINVAL (22) for everything
    /// except a CQ buffer above `INT_MAX` bytes, which is ENOMEM (12)
    /// ([ref §3.7](crate::reference)).
    pub const fn errno(&self) -> i32 {
        match self.limit {
            Limit::CqBufBytes => ENOMEM,
            _ => EINVAL,
        }
    }

    /// Name of the errno (`EINVAL` / `ENOMEM`).
    pub const fn errno_name(&self) -> &'static str {
        match self.errno() {
            ENOMEM => "ENOMEM",
            _ => "EINVAL",
        }
    }

    /// SQ overhead carried by a QP error (0 for other errors).
    pub const fn sq_overhead(&self) -> u32 {
        match self.detail {
            Detail::Qp { sq_overhead, .. } => sq_overhead,
            _ => 0,
        }
    }

    /// Send WQE size carried by a QP error (0 if not computed).
    pub const fn send_wqe_size(&self) -> u32 {
        match self.detail {
            Detail::Qp { send_wqe_size, .. } => send_wqe_size,
            _ => 0,
        }
    }
}

impl fmt::Display for SizingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (r, a) = (self.requested, self.allowed);
        let (wr, wqe, ovh) = match self.detail {
            Detail::Qp {
                max_send_wr,
                send_wqe_size,
                sq_overhead,
                ..
            } => (max_send_wr, send_wqe_size, sq_overhead),
            _ => (0, 0, 0),
        };
        match self.limit {
            Limit::MaxSendSge => write!(
                f,
                "SQ requests {r} SGEs but a {ovh}-byte WQE overhead leaves room for {a} in the \
                 device's send descriptor"
            ),
            Limit::MaxSqDescSz => write!(
                f,
                "SQ needs {r}-byte WQEs ({ovh}-byte overhead + SGEs/inline); the device allows {a}"
            ),
            Limit::MaxSendWrOverflow => write!(
                f,
                "SQ requests {r} WRs; the provider's overflow guard allows {a}"
            ),
            Limit::MaxSendWqebb => write!(
                f,
                "SQ needs {r} WQEBBs ({wr} WRs × {wqe}-byte WQEs); the device allows {a}"
            ),
            Limit::MaxRecvWr => write!(f, "RQ requests {r} WRs; the device allows {a}"),
            Limit::MaxRqDescSz => {
                write!(f, "RQ needs {r}-byte receive WQEs; the device allows {a}")
            }
            Limit::CqeZero => write!(f, "CQ of 0 entries requested; at least 1 is needed"),
            Limit::ProviderMaxCqe => write!(f, "CQ needs {r} entries; the provider allows {a}"),
            Limit::CqBufBytes => write!(f, "CQ buffer needs {r} bytes; the provider allows {a}"),
            Limit::MaxCqe => write!(f, "CQ needs {r} entries; the device allows {a}"),
            Limit::MaxSrqRecvWr => write!(f, "SRQ requests {r} WRs; the device allows {a}"),
            Limit::MaxSrqSge => write!(f, "SRQ requests {r} SGEs; the device allows {a}"),
            Limit::SrqWqeSize => write!(
                f,
                "SRQ needs {r}-byte WQEs; the provider compares that with max_recv_wr {a}"
            ),
            Limit::KernelSrqWr => write!(
                f,
                "SRQ needs {r} WQEs in the kernel command; the device allows fewer than {a}"
            ),
            Limit::KernelSrqSge => write!(f, "SRQ WQEs hold {r} SGEs; the kernel allows {a}"),
            Limit::SizeOverflow => write!(
                f,
                "a derived size of {r} exceeds the largest representable value {a}"
            ),
            Limit::PageSize => write!(f, "page size {r} is not a power of two"),
            Limit::CqCoverage => {
                let (s, rc) = match self.detail {
                    Detail::Outstanding { send, recv } => (send, recv),
                    _ => (0, 0),
                };
                write!(
                    f,
                    "CQ with {a} usable entries cannot hold {s} send + {rc} receive outstanding WRs"
                )
            }
        }
    }
}

impl core::error::Error for SizingError {}

// ---------------------------------------------------------------------------------------------
// Small const helpers
// ---------------------------------------------------------------------------------------------

/// Round up to a multiple of `a`. Total: `a == 0` means no alignment
/// (returns `x`), and a result beyond `u64::MAX` saturates there.
pub const fn align_up(x: u64, a: u64) -> u64 {
    if a == 0 {
        return x;
    }
    match x.div_ceil(a).checked_mul(a) {
        Some(v) => v,
        None => u64::MAX,
    }
}

/// Largest power-of-two count or byte size a 32-bit sizing field holds.
const MAX_POW2_U32: u64 = 1 << 31;

/// `caps.page_size` must be a power of two to align allocations to.
const fn check_page_size(stage: Stage, caps: &DeviceCaps) -> Result<u64, SizingError> {
    if !caps.page_size.is_power_of_two() {
        return Err(SizingError::new(
            stage,
            Limit::PageSize,
            caps.page_size as u64,
            MAX_POW2_U32,
        ));
    }
    Ok(caps.page_size as u64)
}

/// Round up to a power of two (`rup2`, [ref §0](crate::reference)); `rup2(0) = 1`.
pub const fn rup2(x: u64) -> u64 {
    x.next_power_of_two()
}

/// Number of significant bits of `v` (`ilog32`, [ref §0](crate::reference)).
pub const fn ilog32(v: u32) -> u32 {
    32 - v.leading_zeros()
}

const fn max_u32(a: u32, b: u32) -> u32 {
    if a > b {
        a
    } else {
        b
    }
}

// ---------------------------------------------------------------------------------------------
// QP sizing
// ---------------------------------------------------------------------------------------------

/// A QP capacity request (`ibv_qp_init_attr_ex` fields that affect sizing).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QpCaps {
    /// QP type.
    pub qp_type: QpType,
    /// Requested send WRs (0 = no SQ).
    pub max_send_wr: u32,
    /// Requested gather entries per send WR.
    pub max_send_sge: u32,
    /// Requested inline bytes per send WR.
    pub max_inline_data: u32,
    /// Requested receive WRs (0 = no RQ).
    pub max_recv_wr: u32,
    /// Requested scatter entries per receive WR.
    pub max_recv_sge: u32,
    /// Explicit send-op list (`send_ops_flags`); `None` = the classic default
    /// set for the QP type ([`SendOps::classic`]).
    pub send_ops: Option<SendOps>,
    /// Max TSO header bytes (0 = none requested) ([ref §3.3](crate::reference) step 3).
    pub max_tso_header: u32,
    /// The QP receives through an SRQ: no RQ ([ref §3.5](crate::reference) step 1).
    pub uses_srq: bool,
}

impl QpCaps {
    /// A request with every capacity 0 and the classic op set.
    pub const fn new(qp_type: QpType) -> QpCaps {
        QpCaps {
            qp_type,
            max_send_wr: 0,
            max_send_sge: 0,
            max_inline_data: 0,
            max_recv_wr: 0,
            max_recv_sge: 0,
            send_ops: None,
            max_tso_header: 0,
            uses_srq: false,
        }
    }

    /// Set the send side (WRs, SGEs, inline bytes).
    pub const fn send(mut self, max_send_wr: u32, max_send_sge: u32, max_inline_data: u32) -> Self {
        self.max_send_wr = max_send_wr;
        self.max_send_sge = max_send_sge;
        self.max_inline_data = max_inline_data;
        self
    }

    /// Set the receive side (WRs, SGEs).
    pub const fn recv(mut self, max_recv_wr: u32, max_recv_sge: u32) -> Self {
        self.max_recv_wr = max_recv_wr;
        self.max_recv_sge = max_recv_sge;
        self
    }

    /// Restrict the send operations (explicit `send_ops_flags`).
    pub const fn ops(mut self, ops: SendOps) -> Self {
        self.send_ops = Some(ops);
        self
    }

    /// The op set sizing uses: the explicit one or [`SendOps::classic`].
    pub const fn effective_ops(&self) -> SendOps {
        match self.send_ops {
            Some(o) => o,
            None => SendOps::classic(self.qp_type),
        }
    }
}

/// Per-WQE SQ overhead in bytes ([ref §3.2](crate::reference)): operation part of the op set
/// plus the QP type's transport segment.
pub const fn sq_overhead(qp_type: QpType, ops: SendOps) -> u32 {
    ops.op_overhead() + qp_type.transport_overhead()
}

/// Send WQE slot size in bytes (`mlx5_calc_send_wqe`, [ref §3.3](crate::reference)): a multiple
/// of 64 large enough for the overhead plus `max_send_sge` data segments, or
/// for the overhead plus the inline header and `max_inline_data` bytes.
pub const fn send_wqe_size(req: &QpCaps, caps: &DeviceCaps) -> Result<u32, SizingError> {
    let overhead = sq_overhead(req.qp_type, req.effective_ops()) as u64;
    let desc = caps.max_sq_desc_sz as u64;
    let mut size = overhead;
    let mut inl_size = 0u64;
    if req.max_inline_data > 0 {
        inl_size = overhead + align_up(INL_HDR as u64 + req.max_inline_data as u64, SEG as u64);
    }
    if req.max_tso_header > 0 {
        size += align_up(req.max_tso_header as u64, SEG as u64);
    }
    if size > desc {
        return Err(SizingError::new(Stage::Sq, Limit::MaxSqDescSz, size, desc));
    }
    let max_gather = (desc - size) / SEG as u64;
    if req.max_send_sge as u64 > max_gather {
        return Err(SizingError::new(
            Stage::Sq,
            Limit::MaxSendSge,
            req.max_send_sge as u64,
            max_gather,
        ));
    }
    size += SEG as u64 * req.max_send_sge as u64;
    let tot = if size > inl_size { size } else { inl_size };
    if tot > desc {
        return Err(SizingError::new(Stage::Sq, Limit::MaxSqDescSz, tot, desc));
    }
    Ok(align_up(tot, SEND_WQE_BB as u64) as u32)
}

/// Send queue geometry ([ref §3.3, §3.4](crate::reference)). All zero when there is no SQ.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct SqLayout {
    /// Per-WQE overhead in bytes ([ref §3.2](crate::reference)); computed even without an SQ.
    pub overhead: u32,
    /// Send WQE slot bytes (a multiple of 64).
    pub wqe_size: u32,
    /// Ring size in WQEBBs (64-byte basic blocks).
    pub wqe_cnt: u32,
    /// log2 of the WQEBB size (6) — 0 when there is no SQ.
    pub wqe_shift: u32,
    /// WRs that fit when every WR uses a full slot (`wq_size / wqe_size`).
    pub max_post: u32,
    /// Gather entries per WR (= requested `max_send_sge`).
    pub max_gs: u32,
    /// Inline bytes per WR read back to the user (`wqe_size − overhead − 4`,
    /// wrapping in 32 bits like the provider: 4294967292 when `wqe_size ==
    /// overhead`; the request when there is no SQ) ([ref §3.4](crate::reference) step 3).
    pub max_inline_data: u32,
    /// Ring bytes (`wqe_cnt · 64`, a power of two).
    pub buf_bytes: u64,
}

const fn qp_detail(req: &QpCaps, sq_overhead: u32, send_wqe_size: u32) -> Detail {
    Detail::Qp {
        sq_overhead,
        send_wqe_size,
        max_send_wr: req.max_send_wr,
        max_recv_wr: req.max_recv_wr,
    }
}

/// Send queue sizing (`mlx5_calc_sq_size`, [ref §3.4](crate::reference)).
pub const fn sq_layout(req: &QpCaps, caps: &DeviceCaps) -> Result<SqLayout, SizingError> {
    let overhead = sq_overhead(req.qp_type, req.effective_ops());
    if req.max_send_wr == 0 {
        return Ok(SqLayout {
            overhead,
            wqe_size: 0,
            wqe_cnt: 0,
            wqe_shift: 0,
            max_post: 0,
            max_gs: 0,
            max_inline_data: req.max_inline_data,
            buf_bytes: 0,
        });
    }
    let wqe_size = match send_wqe_size(req, caps) {
        Ok(w) => w,
        Err(e) => return Err(e.with_detail(qp_detail(req, overhead, 0))),
    };
    let desc = caps.max_sq_desc_sz;
    if wqe_size > desc {
        return Err(
            SizingError::new(Stage::Sq, Limit::MaxSqDescSz, wqe_size as u64, desc as u64)
                .with_detail(qp_detail(req, overhead, wqe_size)),
        );
    }
    // Provider quirk: computed in a C `int` and stored in a `u32`, so a WQE with
    // no room for the inline header (wqe_size == overhead, e.g. RC with 0 SGEs)
    // reads back as 2^32 − 4 (= 4294967292), exactly as the vectors show.
    let max_inline_data = wqe_size.wrapping_sub(overhead).wrapping_sub(INL_HDR);
    let wr_limit = 0x7fff_ffff / desc;
    if req.max_send_wr > wr_limit {
        return Err(SizingError::new(
            Stage::Sq,
            Limit::MaxSendWrOverflow,
            req.max_send_wr as u64,
            wr_limit as u64,
        )
        .with_detail(qp_detail(req, overhead, wqe_size)));
    }
    let wq_size = rup2(req.max_send_wr as u64 * wqe_size as u64);
    let wqe_cnt = wq_size / SEND_WQE_BB as u64;
    if wqe_cnt > caps.max_send_wqebb as u64 {
        return Err(SizingError::new(
            Stage::Sq,
            Limit::MaxSendWqebb,
            wqe_cnt,
            caps.max_send_wqebb as u64,
        )
        .with_detail(qp_detail(req, overhead, wqe_size)));
    }
    Ok(SqLayout {
        overhead,
        wqe_size,
        wqe_cnt: wqe_cnt as u32,
        wqe_shift: 6,
        max_post: (wq_size / wqe_size as u64) as u32,
        max_gs: req.max_send_sge,
        max_inline_data,
        buf_bytes: wq_size,
    })
}

/// Receive queue geometry ([ref §3.5](crate::reference)). All zero when there is no RQ.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct RqLayout {
    /// Receive WQE bytes (a power of two, ≥ 16).
    pub wqe_size: u32,
    /// log2 of `wqe_size`.
    pub wqe_shift: u32,
    /// Ring size in receive WQEs.
    pub wqe_cnt: u32,
    /// Receive WRs that may be posted (= `wqe_cnt`).
    pub max_post: u32,
    /// Scatter entries per WR read back (may exceed the request).
    pub max_gs: u32,
    /// Ring bytes (`max(rup2(wr) · wqe, 64)`).
    pub buf_bytes: u64,
}

/// Receive queue sizing (`mlx5_calc_rcv_wqe` + `mlx5_calc_rq_size`, [ref §3.5](crate::reference);
/// no WQE signature).
pub const fn rq_layout(req: &QpCaps, caps: &DeviceCaps) -> Result<RqLayout, SizingError> {
    if req.max_recv_wr == 0 || req.uses_srq || !req.qp_type.has_rq() {
        return Ok(RqLayout {
            wqe_size: 0,
            wqe_shift: 0,
            wqe_cnt: 0,
            max_post: 0,
            max_gs: 0,
            buf_bytes: 0,
        });
    }
    if req.max_recv_wr > caps.max_recv_wr {
        return Err(SizingError::new(
            Stage::Rq,
            Limit::MaxRecvWr,
            req.max_recv_wr as u64,
            caps.max_recv_wr as u64,
        ));
    }
    let raw = SEG as u64 * max_u32(req.max_recv_sge, 1) as u64;
    if raw > caps.max_rq_desc_sz as u64 {
        return Err(SizingError::new(
            Stage::Rq,
            Limit::MaxRqDescSz,
            raw,
            caps.max_rq_desc_sz as u64,
        ));
    }
    let wqe = rup2(raw);
    // With caps near u32::MAX the rounded values need not fit the 32-bit
    // layout fields (wqe_size, wqe_cnt, max_post): refuse, never wrap.
    if wqe > MAX_POW2_U32 {
        return Err(SizingError::new(
            Stage::Rq,
            Limit::SizeOverflow,
            wqe,
            MAX_POW2_U32,
        ));
    }
    let wrs = rup2(req.max_recv_wr as u64);
    if wrs > MAX_POW2_U32 {
        return Err(SizingError::new(
            Stage::Rq,
            Limit::SizeOverflow,
            wrs,
            MAX_POW2_U32,
        ));
    }
    // Both factors ≤ 2^31: the product fits u64.
    let mut wq_size = wrs * wqe;
    if wq_size < 64 {
        wq_size = 64;
    }
    let wqe_cnt = (wq_size / wqe) as u32;
    Ok(RqLayout {
        wqe_size: wqe as u32,
        wqe_shift: ilog32(wqe as u32 - 1),
        wqe_cnt,
        max_post: 1 << ilog32(wqe_cnt - 1),
        max_gs: (wqe / SEG as u64) as u32,
        buf_bytes: wq_size,
    })
}

/// The full QP buffer layout and the capabilities read back to the caller
/// ([ref §3.4–§3.6](crate::reference)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QpLayout {
    /// QP type it was computed for.
    pub qp_type: QpType,
    /// Send queue.
    pub sq: SqLayout,
    /// Receive queue.
    pub rq: RqLayout,
    /// RQ bytes + SQ bytes.
    pub total_bytes: u64,
    /// Byte offset of the SQ in the QP buffer: the RQ comes first ([ref §3.6](crate::reference));
    /// 0 for RAW_PACKET, whose SQ is a separate buffer.
    pub sq_offset: u64,
    /// Bytes actually allocated: the buffer rounded up to the page size
    /// (RAW_PACKET: page-aligned RQ buffer + page-aligned SQ buffer).
    pub alloc_bytes: u64,
    /// `cap.max_send_wr` read back (= SQ `max_post`).
    pub ret_max_send_wr: u32,
    /// `cap.max_send_sge` read back (unchanged request).
    pub ret_max_send_sge: u32,
    /// `cap.max_inline_data` read back ([ref §3.4](crate::reference) step 3).
    pub ret_max_inline_data: u32,
    /// `cap.max_recv_wr` read back (= RQ `max_post`).
    pub ret_max_recv_wr: u32,
    /// `cap.max_recv_sge` read back (= RQ `max_gs`).
    pub ret_max_recv_sge: u32,
}

/// Size a QP exactly as the mlx5 provider does ([ref §3.2–§3.6](crate::reference)): SQ first
/// (errors name [`Stage::Sq`]), then RQ ([`Stage::Rq`]). Every error carries
/// [`Detail::Qp`] with the SQ overhead and, when known, the send WQE size.
pub const fn qp_layout(req: &QpCaps, caps: &DeviceCaps) -> Result<QpLayout, SizingError> {
    let sq = match sq_layout(req, caps) {
        Ok(s) => s,
        Err(e) => return Err(e),
    };
    let rq = match rq_layout(req, caps) {
        Ok(r) => r,
        Err(e) => {
            return Err(e.with_detail(Detail::Qp {
                sq_overhead: sq.overhead,
                send_wqe_size: sq.wqe_size,
                max_send_wr: req.max_send_wr,
                max_recv_wr: req.max_recv_wr,
            }))
        }
    };
    let page = match check_page_size(Stage::Sq, caps) {
        Ok(p) => p,
        Err(e) => {
            return Err(e.with_detail(Detail::Qp {
                sq_overhead: sq.overhead,
                send_wqe_size: sq.wqe_size,
                max_send_wr: req.max_send_wr,
                max_recv_wr: req.max_recv_wr,
            }))
        }
    };
    let total = sq.buf_bytes + rq.buf_bytes;
    let (sq_offset, alloc) = match req.qp_type {
        QpType::RawPacket => (
            0,
            align_up(rq.buf_bytes, page) + align_up(sq.buf_bytes, page),
        ),
        _ => (rq.buf_bytes, align_up(total, page)),
    };
    Ok(QpLayout {
        qp_type: req.qp_type,
        sq,
        rq,
        total_bytes: total,
        sq_offset,
        alloc_bytes: alloc,
        ret_max_send_wr: sq.max_post,
        ret_max_send_sge: req.max_send_sge,
        ret_max_inline_data: sq.max_inline_data,
        ret_max_recv_wr: rq.max_post,
        ret_max_recv_sge: rq.max_gs,
    })
}

// ---------------------------------------------------------------------------------------------
// CQ sizing
// ---------------------------------------------------------------------------------------------

/// CQ geometry ([ref §3.7](crate::reference)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CqLayout {
    /// Entries in the ring: `rup2(cqe + 1)`.
    pub ncqe: u32,
    /// `ibv_cq.cqe` reported to the user: `ncqe − 1`, the usable entries.
    pub reported_cqe: u32,
    /// CQE size in bytes (64 or 128).
    pub cqe_size: u32,
    /// `ncqe · cqe_size`.
    pub buf_bytes: u64,
    /// Buffer rounded up to the page size.
    pub alloc_bytes: u64,
    /// `op_own` byte every entry is initialised to (0xf0).
    pub init_op_own: u8,
}

/// CQ sizing as the provider alone computes it ([ref §3.7](crate::reference)): rejects `cqe = 0`,
/// `ncqe > 2^24`, a CQE size other than 64/128, and a buffer above `INT_MAX`
/// bytes (ENOMEM). Does not apply the device's `max_cqe` (see [`cq_layout`]).
pub const fn cq_provider_layout(
    cqe: u32,
    cqe_size: u32,
    caps: &DeviceCaps,
) -> Result<CqLayout, SizingError> {
    if cqe == 0 {
        return Err(SizingError::new(Stage::Cq, Limit::CqeZero, 0, 1));
    }
    if cqe_size != 64 && cqe_size != 128 {
        return Err(SizingError::new(
            Stage::Cq,
            Limit::CqBufBytes,
            cqe_size as u64,
            128,
        ));
    }
    let ncqe = rup2(cqe as u64 + 1);
    if ncqe > PROVIDER_MAX_NCQE {
        return Err(SizingError::new(
            Stage::Cq,
            Limit::ProviderMaxCqe,
            ncqe,
            PROVIDER_MAX_NCQE,
        ));
    }
    let buf = ncqe * cqe_size as u64;
    if buf > PROVIDER_MAX_CQ_BUF {
        return Err(SizingError::new(
            Stage::Cq,
            Limit::CqBufBytes,
            buf,
            PROVIDER_MAX_CQ_BUF,
        ));
    }
    let page = match check_page_size(Stage::Cq, caps) {
        Ok(p) => p,
        Err(e) => return Err(e),
    };
    Ok(CqLayout {
        ncqe: ncqe as u32,
        reported_cqe: (ncqe - 1) as u32,
        cqe_size,
        buf_bytes: buf,
        alloc_bytes: align_up(buf, page),
        init_op_own: crate::cqe::OP_OWN_INIT,
    })
}

/// CQ sizing including the kernel's limit ([ref §3.7](crate::reference)): the provider's rules
/// ([`cq_provider_layout`]), then `ncqe > caps.max_cqe` → EINVAL
/// ([`RejectedBy::Kernel`]).
pub const fn cq_layout(
    cqe: u32,
    cqe_size: u32,
    caps: &DeviceCaps,
) -> Result<CqLayout, SizingError> {
    let l = match cq_provider_layout(cqe, cqe_size, caps) {
        Ok(l) => l,
        Err(e) => return Err(e),
    };
    if l.ncqe > caps.max_cqe {
        return Err(
            SizingError::new(Stage::Cq, Limit::MaxCqe, l.ncqe as u64, caps.max_cqe as u64).kernel(),
        );
    }
    Ok(l)
}

const fn coverage_err(cqe: u32, s: u32, r: u32) -> SizingError {
    SizingError::new(
        Stage::Cq,
        Limit::CqCoverage,
        s as u64 + r as u64,
        cqe as u64,
    )
    .with_detail(Detail::Outstanding { send: s, recv: r })
}

/// How a QP's completions are spread over CQs, with each CQ's **reported**
/// `cqe` ([`CqLayout::reported_cqe`] = `ncqe − 1`, the usable entries).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CqAttach {
    /// Send and receive completions share one CQ.
    Shared {
        /// Reported `cqe` of the shared CQ.
        cqe: u32,
    },
    /// Separate send and receive CQs.
    Separate {
        /// Reported `cqe` of the send CQ.
        send_cqe: u32,
        /// Reported `cqe` of the receive CQ.
        recv_cqe: u32,
    },
}

/// The CQ-covers-outstanding rule: a CQ must have room for a completion of
/// every WR that can be outstanding on the queues feeding it, or it can
/// overrun (a CQ error, lost completions).
///
/// Compared numbers: the CQ's **reported** `cqe` (`ncqe − 1`, [ref §3.7](crate::reference)) against
/// the **sum of `max_post`** of every SQ and RQ that completes into it
/// (`send_outstanding` = Σ SQ `max_post`, `recv_outstanding` = Σ RQ `max_post`
/// of all QPs sharing the CQ; [ref §3.4](crate::reference) step 7, §3.5 step 5). For
/// [`CqAttach::Separate`] each CQ is checked against its own side.
///
/// A 3000-entry CQ (reported 4095) under 2048 send + 2048 receive WRs fails:
/// "CQ with 4095 usable entries cannot hold 2048 send + 2048 receive outstanding WRs".
pub const fn check_cq_covers(
    cqs: CqAttach,
    send_outstanding: u32,
    recv_outstanding: u32,
) -> Result<(), SizingError> {
    match cqs {
        CqAttach::Shared { cqe } => {
            if (send_outstanding as u64 + recv_outstanding as u64) > cqe as u64 {
                return Err(coverage_err(cqe, send_outstanding, recv_outstanding));
            }
        }
        CqAttach::Separate { send_cqe, recv_cqe } => {
            if send_outstanding > send_cqe {
                return Err(coverage_err(send_cqe, send_outstanding, 0));
            }
            if recv_outstanding > recv_cqe {
                return Err(coverage_err(recv_cqe, 0, recv_outstanding));
            }
        }
    }
    Ok(())
}

/// The smallest CQ request (`cqe` argument) whose reported `cqe` covers `outstanding`
/// WRs: any request ≥ `outstanding` works, since `rup2(n + 1) − 1 ≥ n`.
pub const fn cqe_for_outstanding(outstanding: u32) -> u32 {
    if outstanding == 0 {
        1
    } else {
        outstanding
    }
}

// ---------------------------------------------------------------------------------------------
// SRQ sizing
// ---------------------------------------------------------------------------------------------

/// SRQ geometry ([ref §3.8](crate::reference)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SrqLayout {
    /// WQE bytes (`1 << wqe_shift`): 16-byte next segment + `max_gs` data segments.
    pub wqe_size: u32,
    /// log2 of `wqe_size`.
    pub wqe_shift: u32,
    /// WQEs in the buffer (`srq.max`), including the wait queue.
    pub srq_max: u32,
    /// Scatter entries per WQE.
    pub max_gs: u32,
    /// WQEs in the main free list (`tail + 1`).
    pub nwqes: u32,
    /// Initial free-list head (0).
    pub head: u32,
    /// Initial free-list tail (`rup2(max_wr + 1) − 1`).
    pub tail: u32,
    /// First wait-queue WQE, `None` when there is no wait queue.
    pub waitq: Option<(u32, u32)>,
    /// `max_wr` given to the kernel (`srq_max − 1`).
    pub kernel_max_wr: u32,
    /// `max_sge` given to the kernel (`max_gs`).
    pub kernel_max_sge: u32,
    /// `max_wr` read back to the user (`tail`).
    pub ret_max_wr: u32,
    /// `max_sge` read back to the user (`max_gs`).
    pub ret_max_sge: u32,
    /// `srq_max · wqe_size`.
    pub buf_bytes: u64,
    /// Buffer rounded up to the page size.
    pub alloc_bytes: u64,
}

/// SRQ sizing as the provider computes it ([ref §3.8](crate::reference) steps 1–6), without the
/// kernel's checks (see [`srq_layout`]).
pub const fn srq_provider_layout(
    max_wr: u32,
    max_sge: u32,
    caps: &DeviceCaps,
) -> Result<SrqLayout, SizingError> {
    if max_wr > caps.max_srq_recv_wr {
        return Err(SizingError::new(
            Stage::Srq,
            Limit::MaxSrqRecvWr,
            max_wr as u64,
            caps.max_srq_recv_wr as u64,
        ));
    }
    let sge_lim = caps.max_rq_desc_sz / SEG;
    if max_sge > sge_lim {
        return Err(SizingError::new(
            Stage::Srq,
            Limit::MaxSrqSge,
            max_sge as u64,
            sge_lim as u64,
        ));
    }
    let doubled = 2 * max_wr as u64 + 1;
    let (wr, have_waitq) = if doubled > caps.max_srq_recv_wr as u64 {
        (max_wr as u64 + 1, false)
    } else {
        (doubled, true)
    };
    let raw = SEG as u64 + SEG as u64 * max_sge as u64;
    let wqe = rup2(if raw > 32 { raw } else { 32 });
    if wqe > caps.max_recv_wr as u64 {
        return Err(SizingError::new(
            Stage::Srq,
            Limit::SrqWqeSize,
            wqe,
            caps.max_recv_wr as u64,
        ));
    }
    let srq_max = rup2(wr);
    // max_wr near u32::MAX: srq_max (≤ 2^33) would not fit its u32 field.
    if srq_max > MAX_POW2_U32 {
        return Err(SizingError::new(
            Stage::Srq,
            Limit::SizeOverflow,
            srq_max,
            MAX_POW2_U32,
        ));
    }
    let page = match check_page_size(Stage::Srq, caps) {
        Ok(p) => p,
        Err(e) => return Err(e),
    };
    let tail = rup2(max_wr as u64 + 1) - 1;
    let nwqes = tail + 1;
    let waitq = if have_waitq && srq_max > nwqes {
        Some((nwqes as u32, (srq_max - 1) as u32))
    } else {
        None
    };
    let max_gs = ((wqe - SEG as u64) / SEG as u64) as u32;
    let buf = srq_max * wqe;
    Ok(SrqLayout {
        wqe_size: wqe as u32,
        wqe_shift: ilog32(wqe as u32 - 1),
        srq_max: srq_max as u32,
        max_gs,
        nwqes: nwqes as u32,
        head: 0,
        tail: tail as u32,
        waitq,
        kernel_max_wr: (srq_max - 1) as u32,
        kernel_max_sge: max_gs,
        ret_max_wr: tail as u32,
        ret_max_sge: max_gs,
        buf_bytes: buf,
        alloc_bytes: align_up(buf, page),
    })
}

/// SRQ sizing including the kernel's checks: the provider's layout, then the
/// kernel rejects `kernel_max_wr ≥ max_srq_recv_wr` or
/// `kernel_max_sge > max_rq_desc_sz / 16` ([`RejectedBy::Kernel`]).
pub const fn srq_layout(
    max_wr: u32,
    max_sge: u32,
    caps: &DeviceCaps,
) -> Result<SrqLayout, SizingError> {
    let l = match srq_provider_layout(max_wr, max_sge, caps) {
        Ok(l) => l,
        Err(e) => return Err(e),
    };
    if l.kernel_max_wr >= caps.max_srq_recv_wr {
        return Err(SizingError::new(
            Stage::Srq,
            Limit::KernelSrqWr,
            l.kernel_max_wr as u64,
            caps.max_srq_recv_wr as u64,
        )
        .kernel());
    }
    let sge_lim = caps.max_rq_desc_sz / SEG;
    if l.kernel_max_sge > sge_lim {
        return Err(SizingError::new(
            Stage::Srq,
            Limit::KernelSrqSge,
            l.kernel_max_sge as u64,
            sge_lim as u64,
        )
        .kernel());
    }
    Ok(l)
}

// ---------------------------------------------------------------------------------------------
// Budgets
// ---------------------------------------------------------------------------------------------

/// Host memory one QP costs ([ref §3.6, §3.7, §4.1](crate::reference)).
///
/// Doorbell records: the provider carves doorbell pages into one cache-line
/// (`caps.cache_line_size`, 64 B) record per QP and per CQ ([ref §4.1](crate::reference)), so each
/// QP costs one record and each CQ one record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct QpBudget {
    /// Page-aligned QP queue buffer(s) ([`QpLayout::alloc_bytes`]).
    pub queue_bytes: u64,
    /// The QP's doorbell record (one cache line).
    pub qp_doorbell_bytes: u64,
    /// This QP's share of its CQ: CQ alloc bytes + CQ doorbell record, divided
    /// (rounding up) by the number of QPs sharing the CQ; 0 without a CQ.
    pub cq_share_bytes: u64,
    /// Sum of the above.
    pub total_bytes: u64,
}

/// Bytes per QP: queue buffer + one doorbell record + the share of a CQ that
/// `qps_per_cq` QPs share (send and receive completions in the same CQ).
pub const fn qp_budget(
    layout: &QpLayout,
    cq: Option<&CqLayout>,
    qps_per_cq: u32,
    caps: &DeviceCaps,
) -> QpBudget {
    let db = caps.cache_line_size as u64;
    let share = match cq {
        Some(c) => {
            let n = if qps_per_cq == 0 { 1 } else { qps_per_cq } as u64;
            (c.alloc_bytes + db).div_ceil(n)
        }
        None => 0,
    };
    QpBudget {
        queue_bytes: layout.alloc_bytes,
        qp_doorbell_bytes: db,
        cq_share_bytes: share,
        total_bytes: layout.alloc_bytes + db + share,
    }
}

/// Bytes for `qps` identical QPs on a node, each group of `qps_per_cq` QPs
/// sharing one CQ (if `cq` is given): `qps · (queue + doorbell)` +
/// `ceil(qps / qps_per_cq) · (CQ alloc + CQ doorbell)`.
pub const fn node_budget(
    layout: &QpLayout,
    cq: Option<&CqLayout>,
    qps_per_cq: u32,
    qps: u64,
    caps: &DeviceCaps,
) -> u64 {
    let db = caps.cache_line_size as u64;
    let per_qp = layout.alloc_bytes + db;
    let cqs = match cq {
        Some(c) => {
            let n = if qps_per_cq == 0 { 1 } else { qps_per_cq } as u64;
            qps.div_ceil(n) * (c.alloc_bytes + db)
        }
        None => 0,
    };
    qps * per_qp + cqs
}

/// Queue bytes (page-aligned allocation) under the classic op set and under
/// `ops`, for the same request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpsSaving {
    /// `alloc_bytes` with the classic op set ([`SendOps::classic`]).
    pub classic_bytes: u64,
    /// `alloc_bytes` with the narrower set.
    pub narrow_bytes: u64,
}

impl OpsSaving {
    /// Bytes saved per QP (`classic − narrow`; negative if `ops` is wider).
    pub const fn saved(&self) -> i64 {
        self.classic_bytes as i64 - self.narrow_bytes as i64
    }
}

/// The saving from declaring a narrower send-op set ([ref §3.2](crate::reference)): both layouts
/// must be valid; returns the first error otherwise (classic first).
pub const fn send_ops_saving(
    req: &QpCaps,
    ops: SendOps,
    caps: &DeviceCaps,
) -> Result<OpsSaving, SizingError> {
    let mut classic = *req;
    classic.send_ops = None;
    let c = match qp_layout(&classic, caps) {
        Ok(l) => l,
        Err(e) => return Err(e),
    };
    let n = match qp_layout(&req.ops(ops), caps) {
        Ok(l) => l,
        Err(e) => return Err(e),
    };
    Ok(OpsSaving {
        classic_bytes: c.alloc_bytes,
        narrow_bytes: n.alloc_bytes,
    })
}

// ---------------------------------------------------------------------------------------------
// Compile-time checked geometry
// ---------------------------------------------------------------------------------------------

/// Device capabilities known at compile time, for [`QpGeometry`].
pub trait ConstCaps {
    /// The device limits.
    const CAPS: DeviceCaps;
}

/// [`DeviceCaps::DEFAULT`] as a [`ConstCaps`].
#[derive(Clone, Copy, Debug)]
pub struct DefaultCaps;

impl ConstCaps for DefaultCaps {
    const CAPS: DeviceCaps = DeviceCaps::DEFAULT;
}

/// Op-set parameter value meaning "the classic default set" for [`QpGeometry`].
pub const CLASSIC_OPS: u32 = u32::MAX;

/// A QP capacity checked at compile time. Using [`QpGeometry::LAYOUT`] with an
/// impossible capacity is a compile error.
///
/// Parameters: device caps `C`, QP type id `QPT` ([`QpType::RC_ID`] …), op-set
/// bits `OPS` ([`CLASSIC_OPS`] for the default set), `max_send_wr`,
/// `max_send_sge`, `max_inline_data`, `max_recv_wr`, `max_recv_sge`.
///
/// ```
/// use bareverbs::sizing::{QpGeometry, DefaultCaps, QpType, CLASSIC_OPS};
/// // ref §3.9: RC, 1024 WRs × 16 SGEs → 448-byte WQEs, 8192 WQEBBs, max_post 1170.
/// type G = QpGeometry<DefaultCaps, { QpType::RC_ID }, CLASSIC_OPS, 1024, 16, 0, 1024, 1>;
/// const L: bareverbs::sizing::QpLayout = G::LAYOUT;
/// assert_eq!(L.sq.wqe_size, 448);
/// assert_eq!(L.sq.wqe_cnt, 8192);
/// assert_eq!(L.sq.max_post, 1170);
/// ```
///
/// 65536 WRs × 16 SGEs need 524288 WQEBBs; the device allows 32768, so this
/// does not compile:
///
/// ```compile_fail
/// use bareverbs::sizing::{QpGeometry, DefaultCaps, QpType, CLASSIC_OPS};
/// type G = QpGeometry<DefaultCaps, { QpType::RC_ID }, CLASSIC_OPS, 65536, 16, 0, 0, 0>;
/// const L: bareverbs::sizing::QpLayout = G::LAYOUT;
/// ```
pub struct QpGeometry<
    C: ConstCaps,
    const QPT: u8,
    const OPS: u32,
    const WR: u32,
    const SGE: u32,
    const INLINE: u32,
    const RECV_WR: u32,
    const RECV_SGE: u32,
>(core::marker::PhantomData<C>);

impl<
        C: ConstCaps,
        const QPT: u8,
        const OPS: u32,
        const WR: u32,
        const SGE: u32,
        const INLINE: u32,
        const RECV_WR: u32,
        const RECV_SGE: u32,
    > QpGeometry<C, QPT, OPS, WR, SGE, INLINE, RECV_WR, RECV_SGE>
{
    /// The request these parameters describe.
    pub const CAPS: QpCaps = {
        let qp_type = match QpType::from_id(QPT) {
            Some(t) => t,
            None => panic!("unknown QP type id"),
        };
        let req = QpCaps::new(qp_type)
            .send(WR, SGE, INLINE)
            .recv(RECV_WR, RECV_SGE);
        if OPS == CLASSIC_OPS {
            req
        } else {
            req.ops(SendOps::from_bits_truncate(OPS))
        }
    };

    /// The layout; evaluating it fails to compile if the device cannot hold the QP.
    pub const LAYOUT: QpLayout = match qp_layout(&Self::CAPS, &C::CAPS) {
        Ok(l) => l,
        Err(e) => match e.stage {
            Stage::Sq => panic!("QP does not fit the device: send queue limit exceeded"),
            _ => panic!("QP does not fit the device: receive queue limit exceeded"),
        },
    };
}

/// An SQ-only RC capacity (classic op set) checked at compile time; shorthand
/// for [`QpGeometry`] without an RQ.
///
/// ```
/// use bareverbs::sizing::{SqGeometry, DefaultCaps};
/// // ref §3.9: RC 8192 × 1 SGE is exactly at the 32768-WQEBB limit.
/// assert_eq!(SqGeometry::<DefaultCaps, 8192, 1>::LAYOUT.sq.wqe_cnt, 32768);
/// ```
///
/// ```compile_fail
/// use bareverbs::sizing::{SqGeometry, DefaultCaps};
/// let _ = SqGeometry::<DefaultCaps, 65536, 16>::LAYOUT;
/// ```
pub struct SqGeometry<C: ConstCaps, const WR: u32, const SGE: u32, const INLINE: u32 = 0>(
    core::marker::PhantomData<C>,
);

impl<C: ConstCaps, const WR: u32, const SGE: u32, const INLINE: u32>
    SqGeometry<C, WR, SGE, INLINE>
{
    /// The layout; a compile error if the device cannot hold the SQ.
    pub const LAYOUT: QpLayout =
        match qp_layout(&QpCaps::new(QpType::Rc).send(WR, SGE, INLINE), &C::CAPS) {
            Ok(l) => l,
            Err(_) => panic!("SQ does not fit the device"),
        };
}

// ---------------------------------------------------------------------------------------------
// Tests: ref §3.9 worked examples (with its ASSUMED 512-byte descriptors)
// ---------------------------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;

    const F39: DeviceCaps = DeviceCaps {
        max_sq_desc_sz: 512,
        ..DeviceCaps::DEFAULT
    };

    fn sq(t: QpType, wr: u32, sge: u32, inl: u32) -> Result<SqLayout, SizingError> {
        sq_layout(&QpCaps::new(t).send(wr, sge, inl), &F39)
    }

    #[test]
    fn facts_3_9_sq() {
        let l = sq(QpType::Rc, 1024, 16, 0).unwrap();
        assert_eq!(
            (
                l.overhead,
                l.wqe_size,
                l.buf_bytes,
                l.wqe_cnt,
                l.max_post,
                l.max_inline_data
            ),
            (192, 448, 524288, 8192, 1170, 252)
        );
        let e = sq(QpType::Rc, 65536, 16, 0).unwrap_err();
        assert_eq!(
            (e.stage, e.limit, e.requested, e.allowed),
            (Stage::Sq, Limit::MaxSendWqebb, 524288, 32768)
        );
        assert_eq!(e.errno(), 22);
        assert_eq!(
            e.to_string(),
            "SQ needs 524288 WQEBBs (65536 WRs × 448-byte WQEs); the device allows 32768"
        );
        let l = sq(QpType::Rc, 8192, 1, 0).unwrap();
        assert_eq!(
            (
                l.wqe_size,
                l.buf_bytes,
                l.wqe_cnt,
                l.max_post,
                l.max_inline_data
            ),
            (256, 2097152, 32768, 8192, 60)
        );
        assert_eq!(
            sq(QpType::Rc, 8193, 1, 0).unwrap_err().limit,
            Limit::MaxSendWqebb
        );
        let l = sq(QpType::Rc, 128, 1, 64).unwrap();
        assert_eq!(
            (
                l.wqe_size,
                l.buf_bytes,
                l.wqe_cnt,
                l.max_post,
                l.max_inline_data
            ),
            (320, 65536, 1024, 204, 124)
        );
        assert_eq!(
            sq(QpType::Rc, 128, 1, 512).unwrap_err().limit,
            Limit::MaxSqDescSz
        );
        let l = sq_layout(
            &QpCaps::new(QpType::Rc)
                .send(1024, 1, 0)
                .ops(SendOps::RDMA_ONLY),
            &F39,
        )
        .unwrap();
        assert_eq!(
            (
                l.overhead,
                l.wqe_size,
                l.buf_bytes,
                l.wqe_cnt,
                l.max_post,
                l.max_inline_data
            ),
            (32, 64, 65536, 1024, 1024, 28)
        );
        let l = sq(QpType::Ud, 1024, 1, 0).unwrap();
        assert_eq!(
            (
                l.overhead,
                l.wqe_size,
                l.buf_bytes,
                l.wqe_cnt,
                l.max_post,
                l.max_inline_data
            ),
            (64, 128, 131072, 2048, 1024, 60)
        );
        let l = sq(QpType::Ud, 256, 2, 128).unwrap();
        assert_eq!(
            (
                l.wqe_size,
                l.buf_bytes,
                l.wqe_cnt,
                l.max_post,
                l.max_inline_data
            ),
            (256, 65536, 1024, 256, 188)
        );
        let l = sq(QpType::RawPacket, 512, 1, 0).unwrap();
        assert_eq!(
            (
                l.overhead,
                l.wqe_size,
                l.buf_bytes,
                l.wqe_cnt,
                l.max_post,
                l.max_inline_data
            ),
            (48, 64, 32768, 512, 512, 12)
        );
        let l = sq(QpType::XrcSend, 256, 4, 0).unwrap();
        assert_eq!(
            (
                l.overhead,
                l.wqe_size,
                l.buf_bytes,
                l.wqe_cnt,
                l.max_post,
                l.max_inline_data
            ),
            (208, 320, 131072, 2048, 409, 108)
        );
    }

    #[test]
    fn facts_3_9_rq() {
        let rq = |wr, sge| rq_layout(&QpCaps::new(QpType::Rc).recv(wr, sge), &F39).unwrap();
        let g = |l: RqLayout| {
            (
                l.wqe_size,
                l.buf_bytes,
                l.wqe_cnt,
                l.wqe_shift,
                l.max_post,
                l.max_gs,
            )
        };
        assert_eq!(g(rq(1024, 1)), (16, 16384, 1024, 4, 1024, 1));
        assert_eq!(g(rq(1024, 3)), (64, 65536, 1024, 6, 1024, 4));
        assert_eq!(g(rq(1, 1)), (16, 64, 4, 4, 4, 1));
        assert_eq!(g(rq(1024, 16)), (256, 262144, 1024, 8, 1024, 16));
    }

    #[test]
    fn facts_3_9_cq_srq() {
        for (req, ncqe, cqe, bytes) in [
            (100, 128, 127, 8192u64),
            (1023, 1024, 1023, 65536),
            (1024, 2048, 2047, 131072),
            (4194303, 4194304, 4194303, 256 << 20),
        ] {
            let l = cq_layout(req, 64, &F39).unwrap();
            assert_eq!((l.ncqe, l.reported_cqe, l.buf_bytes), (ncqe, cqe, bytes));
        }
        let s = srq_layout(1000, 1, &F39).unwrap();
        assert_eq!(
            (
                s.wqe_size,
                s.max_gs,
                s.srq_max,
                s.tail,
                s.nwqes,
                s.waitq,
                s.ret_max_wr
            ),
            (32, 1, 2048, 1023, 1024, Some((1024, 2047)), 1023)
        );
        let s = srq_layout(100, 4, &F39).unwrap();
        assert_eq!(
            (
                s.wqe_size,
                s.max_gs,
                s.srq_max,
                s.tail,
                s.nwqes,
                s.waitq,
                s.ret_max_wr
            ),
            (128, 7, 256, 127, 128, Some((128, 255)), 127)
        );
        let s = srq_layout(20000, 1, &F39).unwrap();
        assert_eq!(
            (
                s.wqe_size,
                s.max_gs,
                s.srq_max,
                s.tail,
                s.nwqes,
                s.waitq,
                s.ret_max_wr
            ),
            (32, 1, 32768, 32767, 32768, None, 32767)
        );
    }

    #[test]
    fn cq_covers_field_failure() {
        let cq = cq_layout(3000, 64, &DeviceCaps::DEFAULT).unwrap();
        assert_eq!(cq.reported_cqe, 4095);
        let e = check_cq_covers(
            CqAttach::Shared {
                cqe: cq.reported_cqe,
            },
            2048,
            2048,
        )
        .unwrap_err();
        assert_eq!(e.errno(), EINVAL);
        assert_eq!(
            e.to_string(),
            "CQ with 4095 usable entries cannot hold 2048 send + 2048 receive outstanding WRs"
        );
        assert!(check_cq_covers(CqAttach::Shared { cqe: 4095 }, 2048, 2047).is_ok());
        assert!(check_cq_covers(
            CqAttach::Separate {
                send_cqe: 2047,
                recv_cqe: 2047
            },
            2048,
            1
        )
        .is_err());
        let c = cq_layout(cqe_for_outstanding(4096), 64, &DeviceCaps::DEFAULT).unwrap();
        assert!(check_cq_covers(
            CqAttach::Shared {
                cqe: c.reported_cqe
            },
            2048,
            2048
        )
        .is_ok());
    }

    #[test]
    fn send_ops_parse_and_overhead() {
        let o = SendOps::parse("write,send,read").unwrap();
        assert_eq!(o, SendOps::RDMA_ONLY);
        assert_eq!(sq_overhead(QpType::Rc, o), 32);
        assert_eq!(
            SendOps::parse("SEND|RDMA_WRITE|ATOMIC_FA")
                .unwrap()
                .op_overhead(),
            48
        );
        assert_eq!(SendOps::parse("send").unwrap().op_overhead(), 16);
        assert_eq!(SendOps::parse("send,bind").unwrap().op_overhead(), 192);
        assert_eq!(SendOps::parse("bogus"), Err("bogus"));
        assert_eq!(sq_overhead(QpType::Rc, SendOps::classic(QpType::Rc)), 192);
        assert_eq!(sq_overhead(QpType::Ud, SendOps::classic(QpType::Ud)), 64);
        assert_eq!(
            sq_overhead(QpType::RawPacket, SendOps::classic(QpType::RawPacket)),
            48
        );
        assert_eq!(
            sq_overhead(QpType::XrcSend, SendOps::classic(QpType::XrcSend)),
            208
        );
    }

    #[test]
    fn budgets() {
        // ref §3.9: RC 1024 × 16 → 524288-byte SQ (no RQ), page aligned.
        let l = qp_layout(&QpCaps::new(QpType::Rc).send(1024, 16, 0), &F39).unwrap();
        let cq = cq_layout(1023, 64, &F39).unwrap(); // 65536 bytes
        let b = qp_budget(&l, Some(&cq), 1, &F39);
        assert_eq!(b.total_bytes, 524288 + 64 + 65536 + 64);
        assert_eq!(
            node_budget(&l, Some(&cq), 2, 4, &F39),
            4 * (524288 + 64) + 2 * (65536 + 64)
        );
        // RDMA-only op set: 1024 × 1 → 65536 vs classic 256-byte WQEs → 262144.
        let s = send_ops_saving(
            &QpCaps::new(QpType::Rc).send(1024, 1, 0),
            SendOps::RDMA_ONLY,
            &F39,
        )
        .unwrap();
        assert_eq!((s.classic_bytes, s.narrow_bytes), (262144, 65536));
    }
}
