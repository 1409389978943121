//! The mlx5 firmware command interface ([ref §7](crate::reference)).
//!
//! Layers, bottom up:
//!
//! * [`Bar0`] — 32-bit big-endian register access to BAR0 (host supplies it),
//!   and [`Clock`] — time for timeouts (host supplies it).
//! * [`initseg`] — the initialization segment at BAR0 offset 0 ([ref §7.1](crate::reference)).
//! * [`queue`] — the command queue: 64-byte entries, ownership handshake,
//!   doorbell by slot bit, chained 576-byte mailboxes ([ref §7.2–§7.4](crate::reference)).
//! * [`ops`] — typed builders and parsers, one per command
//!   ([ref §7.5–§7.12, §6.3](crate::reference)).
//! * [`caps`] — QUERY_HCA_CAP general capabilities → [`crate::sizing::DeviceCaps`]
//!   ([ref §3.11](crate::reference)).
//! * [`eq`] — event queue entries and page-request events ([ref §7.7, §7.9](crate::reference)).
//! * [`pages`] — the pool of 4 KiB pages handed to firmware ([ref §7.7](crate::reference)).
//!
//! Nothing here allocates; messages are assembled in fixed buffers in host
//! memory and copied to DMA memory with raw-pointer stores.

pub mod bits;
pub mod caps;
pub mod eq;
pub mod initseg;
pub mod layout;
pub mod ops;
pub mod pages;
pub mod queue;
mod status;

pub use status::{CmdError, CmdStatus, DeliveryStatus, MailboxProblem};

/// 32-bit register access to BAR0 of an mlx5 function ([ref §7.1](crate::reference)).
///
/// Values are exchanged in host order: `read32` returns the register
/// converted from big-endian, `write32` converts `v` to big-endian before
/// the store. Offsets are bytes from the start of BAR0.
///
/// # Implementation safety
/// Each call must be exactly one 4-byte MMIO access (no tearing, no
/// merging, no reordering with other accesses through the same `Bar0`),
/// and offsets outside BAR0 must be ignored (reads return `0xffff_ffff`,
/// as a PCI master abort would) rather than touch other memory.
pub unsafe trait Bar0 {
    /// Reads the BE32 register at `off`, returned in host order.
    fn read32(&self, off: usize) -> u32;
    /// Writes `v` (host order) to the BE32 register at `off`.
    fn write32(&mut self, off: usize, v: u32);
}

/// A time source for command and bring-up timeouts ([ref §7.3, §7.6](crate::reference)).
///
/// Hosts implement it with a monotonic clock; tests use a fake clock whose
/// `delay_us` advances `now_us`.
pub trait Clock {
    /// Monotonic time in microseconds.
    fn now_us(&self) -> u64;
    /// Waits (or pretends to wait) `us` microseconds.
    fn delay_us(&mut self, us: u32);
}

/// Command opcodes ([ref §7.8, §6.3](crate::reference)).
pub mod op {
    /// QUERY_HCA_CAP.
    pub const QUERY_HCA_CAP: u16 = 0x100;
    /// QUERY_ADAPTER.
    pub const QUERY_ADAPTER: u16 = 0x101;
    /// INIT_HCA.
    pub const INIT_HCA: u16 = 0x102;
    /// TEARDOWN_HCA.
    pub const TEARDOWN_HCA: u16 = 0x103;
    /// ENABLE_HCA.
    pub const ENABLE_HCA: u16 = 0x104;
    /// DISABLE_HCA.
    pub const DISABLE_HCA: u16 = 0x105;
    /// QUERY_PAGES.
    pub const QUERY_PAGES: u16 = 0x107;
    /// MANAGE_PAGES.
    pub const MANAGE_PAGES: u16 = 0x108;
    /// SET_HCA_CAP.
    pub const SET_HCA_CAP: u16 = 0x109;
    /// QUERY_ISSI.
    pub const QUERY_ISSI: u16 = 0x10a;
    /// SET_ISSI.
    pub const SET_ISSI: u16 = 0x10b;
    /// SET_DRIVER_VERSION.
    pub const SET_DRIVER_VERSION: u16 = 0x10d;
    /// CREATE_MKEY.
    pub const CREATE_MKEY: u16 = 0x200;
    /// QUERY_MKEY.
    pub const QUERY_MKEY: u16 = 0x201;
    /// DESTROY_MKEY.
    pub const DESTROY_MKEY: u16 = 0x202;
    /// CREATE_EQ.
    pub const CREATE_EQ: u16 = 0x301;
    /// DESTROY_EQ.
    pub const DESTROY_EQ: u16 = 0x302;
    /// CREATE_CQ.
    pub const CREATE_CQ: u16 = 0x400;
    /// DESTROY_CQ.
    pub const DESTROY_CQ: u16 = 0x401;
    /// CREATE_QP.
    pub const CREATE_QP: u16 = 0x500;
    /// DESTROY_QP.
    pub const DESTROY_QP: u16 = 0x501;
    /// RST2INIT_QP.
    pub const RST2INIT_QP: u16 = 0x502;
    /// INIT2RTR_QP.
    pub const INIT2RTR_QP: u16 = 0x503;
    /// RTR2RTS_QP.
    pub const RTR2RTS_QP: u16 = 0x504;
    /// RTS2RTS_QP.
    pub const RTS2RTS_QP: u16 = 0x505;
    /// SQERR2RTS_QP.
    pub const SQERR2RTS_QP: u16 = 0x506;
    /// 2ERR_QP.
    pub const QP_2ERR: u16 = 0x507;
    /// 2RST_QP.
    pub const QP_2RST: u16 = 0x50a;
    /// QUERY_QP.
    pub const QUERY_QP: u16 = 0x50b;
    /// SQD_RTS_QP.
    pub const SQD_RTS_QP: u16 = 0x50c;
    /// INIT2INIT_QP.
    pub const INIT2INIT_QP: u16 = 0x50e;
    /// CREATE_SRQ.
    pub const CREATE_SRQ: u16 = 0x700;
    /// DESTROY_SRQ.
    pub const DESTROY_SRQ: u16 = 0x701;
    /// QUERY_SRQ.
    pub const QUERY_SRQ: u16 = 0x702;
    /// QUERY_ROCE_ADDRESS.
    pub const QUERY_ROCE_ADDRESS: u16 = 0x760;
    /// SET_ROCE_ADDRESS.
    pub const SET_ROCE_ADDRESS: u16 = 0x761;
    /// CREATE_RMP.
    pub const CREATE_RMP: u16 = 0x90c;
    /// MODIFY_RMP.
    pub const MODIFY_RMP: u16 = 0x90d;
    /// DESTROY_RMP.
    pub const DESTROY_RMP: u16 = 0x90e;
    /// QUERY_RMP.
    pub const QUERY_RMP: u16 = 0x90f;
    /// QUERY_VPORT_STATE.
    pub const QUERY_VPORT_STATE: u16 = 0x750;
    /// QUERY_NIC_VPORT_CONTEXT.
    pub const QUERY_NIC_VPORT_CONTEXT: u16 = 0x754;
    /// MODIFY_NIC_VPORT_CONTEXT.
    pub const MODIFY_NIC_VPORT_CONTEXT: u16 = 0x755;
    /// QUERY_HCA_VPORT_CONTEXT.
    pub const QUERY_HCA_VPORT_CONTEXT: u16 = 0x762;
    /// ALLOC_PD.
    pub const ALLOC_PD: u16 = 0x800;
    /// DEALLOC_PD.
    pub const DEALLOC_PD: u16 = 0x801;
    /// ALLOC_UAR.
    pub const ALLOC_UAR: u16 = 0x802;
    /// DEALLOC_UAR.
    pub const DEALLOC_UAR: u16 = 0x803;
    /// ACCESS_REG.
    pub const ACCESS_REG: u16 = 0x805;
    /// NOP.
    pub const NOP: u16 = 0x80d;
}

/// Name of a command opcode ([ref §7.8](crate::reference)), `"UNKNOWN"` if not listed.
pub fn opcode_name(opcode: u16) -> &'static str {
    match opcode {
        op::QUERY_HCA_CAP => "QUERY_HCA_CAP",
        op::QUERY_ADAPTER => "QUERY_ADAPTER",
        op::INIT_HCA => "INIT_HCA",
        op::TEARDOWN_HCA => "TEARDOWN_HCA",
        op::ENABLE_HCA => "ENABLE_HCA",
        op::DISABLE_HCA => "DISABLE_HCA",
        op::QUERY_PAGES => "QUERY_PAGES",
        op::MANAGE_PAGES => "MANAGE_PAGES",
        op::SET_HCA_CAP => "SET_HCA_CAP",
        op::QUERY_ISSI => "QUERY_ISSI",
        op::SET_ISSI => "SET_ISSI",
        op::SET_DRIVER_VERSION => "SET_DRIVER_VERSION",
        op::CREATE_MKEY => "CREATE_MKEY",
        op::QUERY_MKEY => "QUERY_MKEY",
        op::DESTROY_MKEY => "DESTROY_MKEY",
        op::CREATE_EQ => "CREATE_EQ",
        op::DESTROY_EQ => "DESTROY_EQ",
        op::CREATE_CQ => "CREATE_CQ",
        op::DESTROY_CQ => "DESTROY_CQ",
        op::CREATE_QP => "CREATE_QP",
        op::DESTROY_QP => "DESTROY_QP",
        op::RST2INIT_QP => "RST2INIT_QP",
        op::INIT2RTR_QP => "INIT2RTR_QP",
        op::RTR2RTS_QP => "RTR2RTS_QP",
        op::RTS2RTS_QP => "RTS2RTS_QP",
        op::SQERR2RTS_QP => "SQERR2RTS_QP",
        op::QP_2ERR => "2ERR_QP",
        op::QP_2RST => "2RST_QP",
        op::QUERY_QP => "QUERY_QP",
        op::SQD_RTS_QP => "SQD_RTS_QP",
        op::INIT2INIT_QP => "INIT2INIT_QP",
        op::CREATE_SRQ => "CREATE_SRQ",
        op::DESTROY_SRQ => "DESTROY_SRQ",
        op::QUERY_SRQ => "QUERY_SRQ",
        op::QUERY_ROCE_ADDRESS => "QUERY_ROCE_ADDRESS",
        op::SET_ROCE_ADDRESS => "SET_ROCE_ADDRESS",
        op::CREATE_RMP => "CREATE_RMP",
        op::MODIFY_RMP => "MODIFY_RMP",
        op::DESTROY_RMP => "DESTROY_RMP",
        op::QUERY_RMP => "QUERY_RMP",
        op::QUERY_VPORT_STATE => "QUERY_VPORT_STATE",
        op::QUERY_NIC_VPORT_CONTEXT => "QUERY_NIC_VPORT_CONTEXT",
        op::MODIFY_NIC_VPORT_CONTEXT => "MODIFY_NIC_VPORT_CONTEXT",
        op::QUERY_HCA_VPORT_CONTEXT => "QUERY_HCA_VPORT_CONTEXT",
        op::ALLOC_PD => "ALLOC_PD",
        op::DEALLOC_PD => "DEALLOC_PD",
        op::ALLOC_UAR => "ALLOC_UAR",
        op::DEALLOC_UAR => "DEALLOC_UAR",
        op::ACCESS_REG => "ACCESS_REG",
        op::NOP => "NOP",
        _ => "UNKNOWN",
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod vendor_tests;
