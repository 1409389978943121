//! What a send queue is configured with besides its ring: [`SqConfig`]
//! and the BlueFlame register geometry [`BlueFlame`]. It owns the one way
//! to build a configuration: [`SqConfig::from_layout`] where the geometry
//! comes from sizing (the verbs path), [`SqConfig::new`] where a test, the
//! simulator or a tool chooses it, each refined by the builder methods.

use crate::platform::BF_OFFSET;
use crate::qp::QpType;
use crate::sizing::QpLayout;

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
///
/// Build it with [`SqConfig::from_layout`] (geometry from
/// [`qp_layout`](crate::sizing::qp_layout)) or [`SqConfig::new`], then the
/// builder methods ([`qpn`](Self::qpn), [`inline`](Self::inline),
/// [`sig_all`](Self::sig_all), [`atomics`](Self::atomics),
/// [`blueflame`](Self::blueflame)).
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

impl SqConfig {
    /// A `qp_type` queue taking `max_post` WRs of up to `max_gs` SGEs, with
    /// QPN 0, no inline data, no `sig_all`, no atomics and 8-byte doorbells
    /// on the first register ([`BlueFlame::doorbell_only`] at
    /// [`BF_OFFSET`]).
    #[must_use]
    pub const fn new(qp_type: QpType, max_post: u32, max_gs: u32) -> Self {
        SqConfig {
            qpn: 0,
            qp_type,
            max_post,
            max_gs,
            max_inline_data: 0,
            sig_all: false,
            atomics: false,
            bf: BlueFlame::doorbell_only(BF_OFFSET),
        }
    }
    /// The send queue that sizing gave QP `qpn`: its type, `max_post`,
    /// `max_gs` and read-back `max_inline_data` from `layout` (the
    /// [`qp_layout`](crate::sizing::qp_layout) result); the rest as in
    /// [`SqConfig::new`].
    #[must_use]
    pub const fn from_layout(qpn: u32, layout: &QpLayout) -> Self {
        SqConfig::new(layout.qp_type, layout.sq.max_post, layout.sq.max_gs)
            .qpn(qpn)
            .inline(layout.sq.max_inline_data)
    }
    /// With QP number `qpn`.
    #[must_use]
    pub const fn qpn(mut self, qpn: u32) -> Self {
        self.qpn = qpn;
        self
    }
    /// With `max_inline_data` inline bytes per WR.
    #[must_use]
    pub const fn inline(mut self, max_inline_data: u32) -> Self {
        self.max_inline_data = max_inline_data;
        self
    }
    /// With every WQE generating a CQE (`sq_sig_all`) when `on`.
    #[must_use]
    pub const fn sig_all(mut self, on: bool) -> Self {
        self.sig_all = on;
        self
    }
    /// With atomics enabled when `on`.
    #[must_use]
    pub const fn atomics(mut self, on: bool) -> Self {
        self.atomics = on;
        self
    }
    /// With BlueFlame register `bf`.
    #[must_use]
    pub const fn blueflame(mut self, bf: BlueFlame) -> Self {
        self.bf = bf;
        self
    }
}
