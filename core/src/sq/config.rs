//! What a send queue is configured with besides its ring: [`SqConfig`]
//! and the BlueFlame register geometry [`BlueFlame`].

use crate::qp::QpType;

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
