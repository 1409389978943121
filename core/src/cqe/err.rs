//! The error-CQE view [`ErrCqe`] (`mlx5_err_cqe`). [ref §5.5](crate::reference).

use super::{syndrome_to_status, Cqe64, Syndrome, WcStatus, VENDOR_SYNDROME_ODP_PFAULT};

/// Error-CQE view (`mlx5_err_cqe`) over a copy of 64 bytes. [ref §5.5](crate::reference).
#[repr(transparent)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ErrCqe(pub(super) Cqe64);

impl ErrCqe {
    /// The underlying CQE.
    #[inline(always)]
    pub const fn cqe(&self) -> &Cqe64 {
        &self.0
    }
    /// Bytes 32–35: SRQ number, or user index with cqe_version 1.
    #[inline(always)]
    pub const fn srqn(&self) -> u32 {
        self.0.srqn_uidx()
    }
    /// Byte 54: vendor syndrome.
    #[inline(always)]
    pub const fn vendor_err_synd(&self) -> u8 {
        self.0.vendor_err_synd()
    }
    /// Byte 55: syndrome (raw).
    #[inline(always)]
    pub const fn syndrome(&self) -> u8 {
        self.0.syndrome()
    }
    /// Syndrome decoded.
    #[inline(always)]
    pub const fn syndrome_kind(&self) -> Syndrome {
        Syndrome::from_u8(self.0.syndrome())
    }
    /// The work-completion status the syndrome maps to. [ref §5.6](crate::reference).
    #[inline(always)]
    pub const fn status(&self) -> WcStatus {
        syndrome_to_status(self.0.syndrome())
    }
    /// Bytes 56–59: s_wqe_opcode_qpn.
    #[inline(always)]
    pub const fn s_wqe_opcode_qpn(&self) -> u32 {
        self.0.sop_drop_qpn()
    }
    /// Send WQE opcode (bits 31:24 of s_wqe_opcode_qpn).
    #[inline(always)]
    pub const fn s_wqe_opcode(&self) -> u8 {
        self.0.send_wqe_opcode()
    }
    /// QPN (bits 23:0 of s_wqe_opcode_qpn).
    #[inline(always)]
    pub const fn qpn(&self) -> u32 {
        self.0.qpn()
    }
    /// Bytes 60–61: WQE counter.
    #[inline(always)]
    pub const fn wqe_counter(&self) -> u16 {
        self.0.wqe_counter()
    }
    /// Byte 62: signature.
    #[inline(always)]
    pub const fn signature(&self) -> u8 {
        self.0.signature()
    }
    /// Byte 63: op_own (opcode 13 or 14 for a real error CQE).
    #[inline(always)]
    pub const fn op_own(&self) -> u8 {
        self.0.op_own()
    }
    /// True for an ODP page fault report (syndrome 0x22 with vendor
    /// syndrome 0x93), which the provider handles internally on SRQs.
    /// [ref §5.6](crate::reference).
    #[inline(always)]
    pub const fn is_odp_page_fault(&self) -> bool {
        self.syndrome() == Syndrome::RemoteAbortedErr.as_u8()
            && self.vendor_err_synd() == VENDOR_SYNDROME_ODP_PFAULT
    }
}
