//! Flag bytes of send WQEs: the control segment's `fm_ce_se` byte
//! ([ref §1.3](crate::reference)), Ethernet checksum flags ([ref §1.5](crate::reference)) and the
//! UMR / mkey context flag fields used by BIND_MW and LOCAL_INV UMR WQEs.

use bitflags::bitflags;

bitflags! {
    /// Byte 11 of the control segment: fence mode (bits 7:5), completion
    /// mode CE (bits 3:2) and solicited event SE (bit 1). [ref §1.3](crate::reference).
    ///
    /// The fence constants are multi-bit values of a 3-bit field: read the
    /// field with [`FmCeSe::fence_mode`] rather than `contains`. Values read
    /// from memory must be wrapped with `from_bits_retain` so that unknown
    /// bits (bit 0, bit 4, fence codes 5–7) survive.
    #[repr(transparent)]
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
    pub struct FmCeSe: u8 {
        /// SE: set the solicited-event bit in the packet (0x02).
        const SOLICITED = 1 << 1;
        /// CE = 2: always generate a CQE ("signaled", 0x08).
        const CQ_UPDATE = 2 << 2;
        /// CE = 3: generate a CQE and an EQE (0x0c).
        const CQ_UPDATE_AND_EQE = 3 << 2;
        /// FM = 1: initiator small fence (0x20).
        const INITIATOR_SMALL_FENCE = 1 << 5;
        /// FM = 2: fence (kernel MLX5_FENCE_MODE_FENCE, 0x40).
        const FENCE = 2 << 5;
        /// FM = 3: strong ordering (0x60).
        const STRONG_ORDERING = 3 << 5;
        /// FM = 4: small and fence (rdma-core MLX5_WQE_CTRL_FENCE, 0x80).
        const SMALL_AND_FENCE = 4 << 5;
    }
}

/// Fence mode, bits 7:5 of `fm_ce_se`. [ref §1.3](crate::reference).
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[allow(clippy::exhaustive_enums)] // closed by the format: the fence field's defined values
pub enum FenceMode {
    /// No fence.
    #[default]
    None = 0,
    /// Initiator small fence (set on the WQE after BIND_MW / LOCAL_INV).
    InitiatorSmall = 1,
    /// Fence (kernel IB_SEND_FENCE).
    Fence = 2,
    /// Strong ordering.
    StrongOrdering = 3,
    /// Small and fence (rdma-core IBV_SEND_FENCE).
    SmallAndFence = 4,
}

impl FenceMode {
    /// The mode's value inside the `fm_ce_se` byte (`mode << 5`).
    pub const fn byte(self) -> u8 {
        (self as u8) << 5
    }
    /// Name as used in the dump and JSON output.
    pub const fn name(self) -> &'static str {
        match self {
            FenceMode::None => "none",
            FenceMode::InitiatorSmall => "initiator_small",
            FenceMode::Fence => "fence",
            FenceMode::StrongOrdering => "strong_ordering",
            FenceMode::SmallAndFence => "small_and_fence",
        }
    }
}

impl TryFrom<u8> for FenceMode {
    type Error = u8;
    /// Converts the 3-bit field value (0–4); others are returned as errors.
    fn try_from(v: u8) -> Result<Self, u8> {
        Ok(match v {
            0 => FenceMode::None,
            1 => FenceMode::InitiatorSmall,
            2 => FenceMode::Fence,
            3 => FenceMode::StrongOrdering,
            4 => FenceMode::SmallAndFence,
            _ => return Err(v),
        })
    }
}

/// Completion mode, bits 3:2 of `fm_ce_se`. [ref §1.3](crate::reference).
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[allow(clippy::exhaustive_enums)] // closed by the format: the 2-bit CE field's defined values
pub enum CompletionMode {
    /// CE = 0: a CQE only on error.
    #[default]
    ErrorOnly = 0,
    /// CE = 2: always a CQE.
    CqUpdate = 2,
    /// CE = 3: a CQE and an EQE.
    CqUpdateAndEqe = 3,
}

impl TryFrom<u8> for CompletionMode {
    type Error = u8;
    /// Converts the 2-bit field value; 1 (never used by any source) is an
    /// error.
    fn try_from(v: u8) -> Result<Self, u8> {
        Ok(match v {
            0 => CompletionMode::ErrorOnly,
            2 => CompletionMode::CqUpdate,
            3 => CompletionMode::CqUpdateAndEqe,
            _ => return Err(v),
        })
    }
}

impl FmCeSe {
    /// The fence-mode field (bits 7:5) as a mask of the byte.
    pub const FENCE_FIELD: u8 = 0b111 << 5;
    /// Builds the byte from its three fields.
    pub const fn new(fence: FenceMode, ce: CompletionMode, solicited: bool) -> Self {
        FmCeSe::from_bits_retain(
            fence.byte() | ((ce as u8) << 2) | if solicited { Self::SOLICITED.bits() } else { 0 },
        )
    }
    /// The raw fence-mode field (bits 7:5, 0–7).
    pub const fn fence_bits(self) -> u8 {
        self.bits() >> 5
    }
    /// The decoded fence mode; reserved codes 5–7 come back as `Err(code)`.
    pub fn fence_mode(self) -> Result<FenceMode, u8> {
        FenceMode::try_from(self.fence_bits())
    }
    /// The raw CE field (bits 3:2).
    pub const fn ce_bits(self) -> u8 {
        (self.bits() >> 2) & 3
    }
    /// The decoded completion mode; the unused code 1 is `Err(1)`.
    pub fn completion_mode(self) -> Result<CompletionMode, u8> {
        CompletionMode::try_from(self.ce_bits())
    }
    /// Whether a CQE is always generated (CE bit 3 set: 0x08 or 0x0c).
    pub const fn signaled(self) -> bool {
        self.bits() & Self::CQ_UPDATE.bits() != 0
    }
    /// Whether the solicited-event bit is set.
    pub const fn solicited(self) -> bool {
        self.bits() & Self::SOLICITED.bits() != 0
    }
    /// The same byte with the fence field replaced.
    #[must_use]
    pub const fn with_fence(self, fence: FenceMode) -> Self {
        FmCeSe::from_bits_retain((self.bits() & !Self::FENCE_FIELD) | fence.byte())
    }
}

bitflags! {
    /// Ethernet segment `cs_flags` (byte 4). [ref §1.5](crate::reference).
    #[repr(transparent)]
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
    pub struct EthCsFlags: u8 {
        /// Inner L3 checksum (kernel only).
        const INNER_L3_CSUM = 0x10;
        /// Inner L4 checksum (kernel only).
        const INNER_L4_CSUM = 0x20;
        /// L3 (IP) checksum.
        const L3_CSUM = 0x40;
        /// L4 (TCP/UDP) checksum.
        const L4_CSUM = 0x80;
    }
}

bitflags! {
    /// UMR control segment `flags` byte (byte 0), as seen in rdma-core's
    /// BIND_MW (0xb0) and LOCAL_INV (0x98) UMR WQEs (`mlx5dv.h (installed)`).
    #[repr(transparent)]
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
    pub struct UmrFlags: u8 {
        /// Check the QPN of the mkey.
        const CHECK_QPN = 1 << 3;
        /// `translation_offset` field is valid.
        const TRANSLATION_OFFSET = 1 << 4;
        /// Check that the mkey is free.
        const CHECK_FREE = 1 << 5;
        /// The translation (KLM list) is inline in the WQE.
        const INLINE = 1 << 7;
    }
}

bitflags! {
    /// UMR control segment `mkey_mask`: which mkey-context fields the UMR
    /// modifies (`mlx5dv.h (installed)`).
    #[repr(transparent)]
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
    pub struct MkeyMask: u64 {
        /// `len`.
        const LEN = 1 << 0;
        /// `start_addr`.
        const START_ADDR = 1 << 6;
        /// Signature error.
        const SIG_ERR = 1 << 9;
        /// BSF enable.
        const BSF_ENABLE = 1 << 12;
        /// The mkey variant byte.
        const MKEY = 1 << 13;
        /// The owning QPN.
        const QPN = 1 << 14;
        /// Local write access.
        const ACCESS_LOCAL_WRITE = 1 << 18;
        /// Remote read access.
        const ACCESS_REMOTE_READ = 1 << 19;
        /// Remote write access.
        const ACCESS_REMOTE_WRITE = 1 << 20;
        /// Atomic access.
        const ACCESS_ATOMIC = 1 << 21;
        /// The `free` bit.
        const FREE = 1 << 29;
    }
}

bitflags! {
    /// Mkey context segment `access_flags` (byte 2) (`mlx5dv.h (installed)`).
    #[repr(transparent)]
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
    pub struct MkeyAccess: u8 {
        /// Local read.
        const LOCAL_READ = 1 << 2;
        /// Local write.
        const LOCAL_WRITE = 1 << 3;
        /// Remote read.
        const REMOTE_READ = 1 << 4;
        /// Remote write.
        const REMOTE_WRITE = 1 << 5;
        /// Atomic.
        const ATOMIC = 1 << 6;
    }
}

/// The ibv access flags that have an mkey-context right, each with its
/// right (the one mapping between the two encodings).
const IBV_TO_MKC: [(crate::mr::Access, MkeyAccess); 4] = [
    (crate::mr::Access::LOCAL_WRITE, MkeyAccess::LOCAL_WRITE),
    (crate::mr::Access::REMOTE_WRITE, MkeyAccess::REMOTE_WRITE),
    (crate::mr::Access::REMOTE_READ, MkeyAccess::REMOTE_READ),
    (crate::mr::Access::REMOTE_ATOMIC, MkeyAccess::ATOMIC),
];

impl MkeyAccess {
    /// The five rights as `mkc.access` holds them (bits 14..10 of mkc
    /// dword 0, [`crate::cmd::layout::mkc::ACCESS`]): this byte's bits 6..2.
    pub const fn to_mkc_field(self) -> u32 {
        (self.bits() >> 2) as u32
    }
    /// The rights an `mkc.access` field value names (the inverse of
    /// [`MkeyAccess::to_mkc_field`]; bits above the five are dropped).
    pub const fn from_mkc_field(v: u32) -> Self {
        Self::from_bits_truncate(((v & 0x1f) << 2) as u8)
    }
    /// The mkey-context rights for `ibv_access_flags`: local write, remote
    /// write, remote read and remote atomic map one to one; local read is
    /// not an ibv flag (add [`MkeyAccess::LOCAL_READ`] where verbs implies
    /// it, as CREATE_MKEY does); other ibv flags have no mkey-context bit.
    pub const fn from_ibv(a: crate::mr::Access) -> Self {
        let mut m = MkeyAccess::empty();
        let mut i = 0;
        while i < IBV_TO_MKC.len() {
            if a.contains(IBV_TO_MKC[i].0) {
                m = m.union(IBV_TO_MKC[i].1);
            }
            i += 1;
        }
        m
    }
    /// The `ibv_access_flags` these rights grant (local read has no ibv
    /// flag and is dropped).
    pub const fn to_ibv(self) -> crate::mr::Access {
        let mut a = crate::mr::Access::empty();
        let mut i = 0;
        while i < IBV_TO_MKC.len() {
            if self.contains(IBV_TO_MKC[i].1) {
                a = a.union(IBV_TO_MKC[i].0);
            }
            i += 1;
        }
        a
    }
}

/// Mkey context `free` byte value marking the mkey free. (`mlx5dv.h (installed)`)
pub const MKEY_CONTEXT_FREE: u8 = 1 << 6;
