//! How the model reports a failed command ([ref §7.5](bareverbs::reference)):
//! the reason codes and the syndrome word built from them.

/// Simulator syndromes: `0x5100_0000 | opcode << 8 | reason`. Real
/// syndromes are firmware-specific; these only need to be distinct and
/// stable so tests and logs can tell causes apart.
pub mod reason {
    /// Unknown opcode.
    pub const UNKNOWN_OPCODE: u8 = 0x01;
    /// HCA in the wrong life-cycle state.
    pub const HCA_STATE: u8 = 0x02;
    /// Input too short.
    pub const INPUT_LEN: u8 = 0x03;
    /// Output too short.
    pub const OUTPUT_LEN: u8 = 0x04;
    /// A field value is invalid.
    pub const FIELD: u8 = 0x05;
    /// An address does not translate (not DMA-mapped).
    pub const ADDRESS: u8 = 0x06;
    /// Unknown object number.
    pub const UNKNOWN_OBJECT: u8 = 0x07;
    /// Object still referenced.
    pub const IN_USE: u8 = 0x08;
    /// Object count limit.
    pub const LIMIT: u8 = 0x09;
    /// Not enough firmware pages.
    pub const PAGES: u8 = 0x0a;
    /// QP transition not legal from the current state.
    pub const QP_STATE: u8 = 0x0b;
    /// A size exceeds a capability.
    pub const SIZE: u8 = 0x0c;
    /// Driver refused pages (MANAGE_PAGES CANT_GIVE).
    pub const CANT_GIVE: u8 = 0x0d;
    /// The connected data path cannot execute this object (see
    /// [`SimFirmware::refusals`](crate::fw::SimFirmware::refusals) for its reason).
    pub const DATA_PATH: u8 = 0x0e;
    /// A QP was attached to an Ethernet port whose vport has RoCE disabled
    /// (the model's choice of status; real firmware refuses such QPs).
    pub const ROCE_DISABLED: u8 = 0x0f;
    /// A command the negotiated ISSI does not use (CREATE_SRQ once ISSI 1
    /// is set: SRQs are RMPs then; a model choice, see `fw/srq.rs`).
    pub const ISSI: u8 = 0x10;
    /// A GID table index beyond the port's table.
    pub const GID_INDEX: u8 = 0x11;
}

/// The syndrome the model reports for `opcode` failing for `reason`.
pub fn syndrome(opcode: u16, reason: u8) -> u32 {
    0x5100_0000 | ((opcode as u32) << 8) | reason as u32
}
