//! The send-operation set of a QP ([`SendOps`]): its per-WQE operation
//! overhead ([ref §3.2](crate::reference)), the classic default sets and the
//! name parser with its aliases.

use bitflags::bitflags;

use super::qp_type::QpType;
use super::SEG;

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
        /// requested separately with [`QpCaps::max_tso_header`](super::QpCaps::max_tso_header).
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
