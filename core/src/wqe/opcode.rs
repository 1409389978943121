//! mlx5 send opcodes and QP transport types. [ref §1.6, §1.7](crate::reference).

/// An mlx5 send opcode (bits 7:0 of the control segment's first dword).
/// [ref §1.6](crate::reference).
///
/// `TryFrom<u8>` is checked: unknown values are returned as `Err(value)`.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Opcode {
    /// 0x00: no operation; the hardware skips the WQE ([ref §1.9](crate::reference)).
    Nop = 0x00,
    /// 0x01: send with invalidate (imm = rkey to invalidate).
    SendInval = 0x01,
    /// 0x08: RDMA write.
    RdmaWrite = 0x08,
    /// 0x09: RDMA write with immediate.
    RdmaWriteImm = 0x09,
    /// 0x0a: send.
    Send = 0x0a,
    /// 0x0b: send with immediate.
    SendImm = 0x0b,
    /// 0x0e: TCP segmentation offload (kernel name LSO).
    Tso = 0x0e,
    /// 0x10: RDMA read.
    RdmaRead = 0x10,
    /// 0x11: atomic compare and swap.
    AtomicCs = 0x11,
    /// 0x12: atomic fetch and add.
    AtomicFa = 0x12,
    /// 0x14: masked atomic compare and swap.
    AtomicMaskedCs = 0x14,
    /// 0x15: masked atomic fetch and add.
    AtomicMaskedFa = 0x15,
    /// 0x18: bind memory window (kernel header opcode).
    BindMw = 0x18,
    /// 0x19: fast memory registration (kernel header opcode).
    Fmr = 0x19,
    /// 0x1b: local invalidate (kernel header opcode).
    LocalInval = 0x1b,
    /// 0x1f: configuration command.
    ConfigCmd = 0x1f,
    /// 0x20: set PSV.
    SetPsv = 0x20,
    /// 0x21: get PSV.
    GetPsv = 0x21,
    /// 0x22: check PSV.
    CheckPsv = 0x22,
    /// 0x25: user-mode memory registration; rdma-core implements BIND_MW and
    /// LOCAL_INV as UMR WQEs.
    Umr = 0x25,
    /// 0x28: tag matching (SRQ tag-matching operations).
    TagMatching = 0x28,
    /// 0x2c: flow table access.
    FlowTblAccess = 0x2c,
    /// 0x2f: memory-to-memory offload.
    Mmo = 0x2f,
}

impl Opcode {
    /// Every opcode, in numeric order.
    pub const ALL: [Opcode; 23] = [
        Opcode::Nop,
        Opcode::SendInval,
        Opcode::RdmaWrite,
        Opcode::RdmaWriteImm,
        Opcode::Send,
        Opcode::SendImm,
        Opcode::Tso,
        Opcode::RdmaRead,
        Opcode::AtomicCs,
        Opcode::AtomicFa,
        Opcode::AtomicMaskedCs,
        Opcode::AtomicMaskedFa,
        Opcode::BindMw,
        Opcode::Fmr,
        Opcode::LocalInval,
        Opcode::ConfigCmd,
        Opcode::SetPsv,
        Opcode::GetPsv,
        Opcode::CheckPsv,
        Opcode::Umr,
        Opcode::TagMatching,
        Opcode::FlowTblAccess,
        Opcode::Mmo,
    ];

    /// The opcode's numeric value.
    #[inline(always)]
    pub const fn bits(self) -> u8 {
        self as u8
    }

    /// The mlx5 name (as in [ref §1.6](crate::reference)), e.g. `"RDMA_WRITE_IMM"`.
    pub const fn name(self) -> &'static str {
        match self {
            Opcode::Nop => "NOP",
            Opcode::SendInval => "SEND_INVAL",
            Opcode::RdmaWrite => "RDMA_WRITE",
            Opcode::RdmaWriteImm => "RDMA_WRITE_IMM",
            Opcode::Send => "SEND",
            Opcode::SendImm => "SEND_IMM",
            Opcode::Tso => "TSO",
            Opcode::RdmaRead => "RDMA_READ",
            Opcode::AtomicCs => "ATOMIC_CS",
            Opcode::AtomicFa => "ATOMIC_FA",
            Opcode::AtomicMaskedCs => "ATOMIC_MASKED_CS",
            Opcode::AtomicMaskedFa => "ATOMIC_MASKED_FA",
            Opcode::BindMw => "BIND_MW",
            Opcode::Fmr => "FMR",
            Opcode::LocalInval => "LOCAL_INVAL",
            Opcode::ConfigCmd => "CONFIG_CMD",
            Opcode::SetPsv => "SET_PSV",
            Opcode::GetPsv => "GET_PSV",
            Opcode::CheckPsv => "CHECK_PSV",
            Opcode::Umr => "UMR",
            Opcode::TagMatching => "TAG_MATCHING",
            Opcode::FlowTblAccess => "FLOW_TBL_ACCESS",
            Opcode::Mmo => "MMO",
        }
    }

    /// Checked conversion (the `const` form of `TryFrom<u8>`).
    pub const fn from_u8(v: u8) -> Option<Opcode> {
        Some(match v {
            0x00 => Opcode::Nop,
            0x01 => Opcode::SendInval,
            0x08 => Opcode::RdmaWrite,
            0x09 => Opcode::RdmaWriteImm,
            0x0a => Opcode::Send,
            0x0b => Opcode::SendImm,
            0x0e => Opcode::Tso,
            0x10 => Opcode::RdmaRead,
            0x11 => Opcode::AtomicCs,
            0x12 => Opcode::AtomicFa,
            0x14 => Opcode::AtomicMaskedCs,
            0x15 => Opcode::AtomicMaskedFa,
            0x18 => Opcode::BindMw,
            0x19 => Opcode::Fmr,
            0x1b => Opcode::LocalInval,
            0x1f => Opcode::ConfigCmd,
            0x20 => Opcode::SetPsv,
            0x21 => Opcode::GetPsv,
            0x22 => Opcode::CheckPsv,
            0x25 => Opcode::Umr,
            0x28 => Opcode::TagMatching,
            0x2c => Opcode::FlowTblAccess,
            0x2f => Opcode::Mmo,
            _ => return None,
        })
    }

    /// Whether the imm field carries immediate data (SEND_IMM,
    /// RDMA_WRITE_IMM). [ref §1.4](crate::reference).
    pub const fn has_imm(self) -> bool {
        matches!(self, Opcode::SendImm | Opcode::RdmaWriteImm)
    }

    /// Whether the WQE carries a remote address segment on RC/UC/XRC
    /// (RDMA and atomic operations). [ref §1.7](crate::reference).
    pub const fn has_raddr(self) -> bool {
        matches!(
            self,
            Opcode::RdmaWrite
                | Opcode::RdmaWriteImm
                | Opcode::RdmaRead
                | Opcode::AtomicCs
                | Opcode::AtomicFa
                | Opcode::AtomicMaskedCs
                | Opcode::AtomicMaskedFa
        )
    }

    /// Whether the WQE ends with a data part (pointer segments or inline
    /// data). [ref §1.7](crate::reference).
    pub const fn has_data(self) -> bool {
        matches!(
            self,
            Opcode::SendInval
                | Opcode::RdmaWrite
                | Opcode::RdmaWriteImm
                | Opcode::Send
                | Opcode::SendImm
                | Opcode::Tso
                | Opcode::RdmaRead
                | Opcode::AtomicCs
                | Opcode::AtomicFa
                | Opcode::AtomicMaskedCs
                | Opcode::AtomicMaskedFa
        )
    }
}

impl TryFrom<u8> for Opcode {
    type Error = u8;
    /// Checked conversion; an unknown value comes back as the error.
    fn try_from(v: u8) -> Result<Self, u8> {
        Opcode::from_u8(v).ok_or(v)
    }
}

impl From<Opcode> for u8 {
    fn from(o: Opcode) -> u8 {
        o as u8
    }
}

impl core::fmt::Display for Opcode {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

/// Name of an opcode byte, or `"UNKNOWN"`. [ref §1.6](crate::reference).
pub const fn opcode_name(v: u8) -> &'static str {
    match Opcode::from_u8(v) {
        Some(o) => o.name(),
        None => "UNKNOWN",
    }
}
