//! Event queues: EQE decoding, ownership, event types, page-request events
//! ([ref §4.6, §7.7, §7.9](crate::reference)). The EQE's field positions
//! are [`super::layout::eqe`].

use super::layout::eqe;
use super::queue::{dma_load8, dma_read, dma_store8};
use crate::platform::{
    from_device_barrier, to_device_barrier, DmaBuf, Uar, EQ_DOORBELL_ARM, EQ_DOORBELL_NO_ARM,
};

/// Bytes per EQE. [ref §7.9](crate::reference).
pub const EQE_BYTES: usize = 64;
/// Spare EQEs added to the requested count (MLX5_NUM_SPARE_EQE). [ref §4.6](crate::reference).
pub const NUM_SPARE_EQE: u32 = 0x80;
/// EQEs the async EQ is sized for before the spares (MLX5_NUM_CMD_EQE).
/// [ref §4.6](crate::reference).
pub const NUM_CMD_EQE: u32 = 32;
/// Entries of the async EQ: the command EQEs plus the spares, rounded up
/// to a power of two (256). [ref §4.6, §7.6](crate::reference).
pub const ASYNC_EQ_ENTRIES: u32 = (NUM_CMD_EQE + NUM_SPARE_EQE).next_power_of_two();

/// Event types ([ref §7.9](crate::reference)).
pub mod event {
    /// Completion.
    pub const COMP: u8 = 0x00;
    /// Path migrated.
    pub const PATH_MIG: u8 = 0x01;
    /// Communication established.
    pub const COMM_EST: u8 = 0x02;
    /// SQ drained.
    pub const SQ_DRAINED: u8 = 0x03;
    /// CQ error.
    pub const CQ_ERROR: u8 = 0x04;
    /// WQ catastrophic error.
    pub const WQ_CATAS_ERROR: u8 = 0x05;
    /// Path migration failed.
    pub const PATH_MIG_FAILED: u8 = 0x07;
    /// Internal error.
    pub const INTERNAL_ERROR: u8 = 0x08;
    /// Port change.
    pub const PORT_CHANGE: u8 = 0x09;
    /// Command completion.
    pub const CMD: u8 = 0x0a;
    /// Page request.
    pub const PAGE_REQUEST: u8 = 0x0b;
    /// Page fault.
    pub const PAGE_FAULT: u8 = 0x0c;
    /// NIC vport change.
    pub const NIC_VPORT_CHANGE: u8 = 0x0d;
    /// WQ invalid request error.
    pub const WQ_INVAL_REQ_ERROR: u8 = 0x10;
    /// WQ access error.
    pub const WQ_ACCESS_ERROR: u8 = 0x11;
    /// SRQ catastrophic error.
    pub const SRQ_CATAS_ERROR: u8 = 0x12;
    /// SRQ last WQE reached.
    pub const SRQ_LAST_WQE: u8 = 0x13;
    /// SRQ limit reached.
    pub const SRQ_RQ_LIMIT: u8 = 0x14;
}

/// A decoded EQE ([ref §7.7, §7.9](crate::reference)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Eqe {
    /// Completion on a CQ (CQN = low 24 bits of BE32 at byte 56).
    Completion {
        /// CQ number.
        cqn: u32,
    },
    /// Command completion: bitmask of finished slots (BE32 at byte 32).
    Command {
        /// Slot bitmask.
        slots: u32,
    },
    /// Firmware wants pages (positive) or returns pages (negative).
    PageRequest {
        /// Function id (BE16 at byte 34).
        function_id: u16,
        /// Signed page count (BE32 at byte 36).
        num_pages: i32,
    },
    /// Any other event.
    Other {
        /// Event type (byte 1).
        event_type: u8,
        /// Sub-type (byte 3).
        sub_type: u8,
        /// First event-data word (BE32 at byte 32).
        data0: u32,
    },
}

impl Eqe {
    /// Decodes 64 EQE bytes (never panics on short input: missing bytes read 0).
    pub fn parse(b: &[u8]) -> Eqe {
        let ty = b.get(eqe::EVENT_TYPE).copied().unwrap_or(0);
        match ty {
            event::COMP => Eqe::Completion {
                cqn: eqe::COMP_CQ_NUMBER.get(b, 0),
            },
            event::CMD => Eqe::Command {
                slots: eqe::CMD_VECTOR.get(b, 0),
            },
            event::PAGE_REQUEST => Eqe::PageRequest {
                function_id: eqe::PAGE_REQ_FUNC_ID.get(b, 0) as u16,
                num_pages: eqe::PAGE_REQ_NUM_PAGES.get(b, 0) as i32,
            },
            _ => Eqe::Other {
                event_type: ty,
                sub_type: b.get(eqe::EVENT_SUB_TYPE).copied().unwrap_or(0),
                data0: eqe::EVENT_DATA_DW0.get(b, 0),
            },
        }
    }
}

/// Whether the EQE with owner byte `owner` is valid at consumer index `ci`
/// in an EQ of `nent` entries: `(owner & 1) == ((ci & nent) != 0)`. [ref §7.9](crate::reference).
pub const fn eqe_valid(owner: u8, ci: u32, nent: u32) -> bool {
    (owner & 1 != 0) == (ci & nent != 0)
}

/// Software side of one EQ: ring, consumer index, doorbell value.
#[derive(Debug)]
pub struct EventQueue {
    ring: DmaBuf,
    nent: u32,
    ci: u32,
    eqn: u8,
}

// SAFETY: the EQ exclusively owns its ring description.
unsafe impl Send for EventQueue {}

impl EventQueue {
    /// Prepares a ring of `nent` (power of two) EQEs: every owner byte = 1
    /// ([ref §7.9](crate::reference)). Returns `None` if the ring is too small.
    ///
    /// # Safety
    /// `ring` must be DMA memory the EQ exclusively owns, not yet given to
    /// the device, for the EQ's life.
    pub unsafe fn new(ring: DmaBuf, nent: u32) -> Option<EventQueue> {
        if !nent.is_power_of_two() || ring.len < nent as usize * EQE_BYTES {
            return None;
        }
        for i in 0..nent as usize {
            // SAFETY: entry i is inside the ring (checked above).
            unsafe { dma_store8(&ring, i * EQE_BYTES + eqe::OWNER, 1) };
        }
        Some(EventQueue {
            ring,
            nent,
            ci: 0,
            eqn: 0,
        })
    }
    /// Records the EQ number CREATE_EQ returned.
    pub fn set_eqn(&mut self, eqn: u8) {
        self.eqn = eqn;
    }
    /// EQ number.
    pub fn eqn(&self) -> u8 {
        self.eqn
    }
    /// Entries.
    pub fn nent(&self) -> u32 {
        self.nent
    }
    /// Consumer index.
    pub fn ci(&self) -> u32 {
        self.ci
    }
    /// The ring.
    pub fn ring(&self) -> DmaBuf {
        self.ring
    }
    /// Whether the EQE at the consumer index looks valid (one volatile
    /// load of its owner byte; nothing is consumed).
    pub fn peek_valid(&self) -> bool {
        let off = (self.ci & (self.nent - 1)) as usize * EQE_BYTES;
        // SAFETY: the ring is ours and `off` is inside it (nent entries,
        // checked in `new`); volatile because the device writes it.
        let owner = unsafe { dma_load8(&self.ring, off + eqe::OWNER) };
        eqe_valid(owner, self.ci, self.nent)
    }
    /// Takes the next valid EQE, if any, and advances the consumer index.
    ///
    /// The entry is copied out of the ring with volatile loads into a local
    /// array and decoded from that copy only.
    pub fn poll(&mut self) -> Option<Eqe> {
        let off = (self.ci & (self.nent - 1)) as usize * EQE_BYTES;
        // SAFETY: the ring is ours and `off` is inside it; the owner byte is
        // read volatile because the device writes it.
        let owner = unsafe { dma_load8(&self.ring, off + eqe::OWNER) };
        if !eqe_valid(owner, self.ci, self.nent) {
            return None;
        }
        from_device_barrier();
        let mut b = [0u8; EQE_BYTES];
        // SAFETY: as above; the entry is valid so the device is done with it.
        unsafe { dma_read(&self.ring, off, &mut b) };
        self.ci = self.ci.wrapping_add(1);
        Some(Eqe::parse(&b))
    }
    /// The BE32 doorbell word `eqn << 24 | (ci & 0xffffff)` for UAR + 0x40
    /// (arm) or + 0x48 (update only). [ref §4.6](crate::reference).
    pub fn doorbell(&self) -> [u8; 4] {
        ((self.eqn as u32) << 24 | (self.ci & EQ_CI_MASK)).to_be_bytes()
    }
    /// Publishes the consumer index: the [`doorbell`](Self::doorbell)
    /// word, one 4-byte store to `uar` + 0x40 (`arm`: update and re-arm)
    /// or + 0x48 (update only), then [`to_device_barrier`] — the
    /// doorbell, then the barrier, as rdma-core's mlx5 VFIO provider
    /// (`eq_update_ci`: `mmio_write32_be`, then `udma_to_device_barrier`):
    /// x86_64 a compiler barrier, aarch64 `dmb oshst`. The only place the
    /// EQ doorbells are written. [ref §4.4, §4.6](crate::reference).
    #[inline]
    pub fn update_ci<U: Uar + ?Sized>(&self, uar: &mut U, arm: bool) {
        let off = if arm {
            EQ_DOORBELL_ARM
        } else {
            EQ_DOORBELL_NO_ARM
        };
        uar.write32(off, self.doorbell());
        to_device_barrier();
    }
}

/// The consumer-index bits (23:0) of an EQ doorbell word. [ref §4.6](crate::reference).
pub const EQ_CI_MASK: u32 = 0x00ff_ffff;

/// An EQ doorbell word read back (what the device sees): `(eqn, ci)`.
/// The inverse of [`EventQueue::doorbell`]. [ref §4.6](crate::reference).
pub const fn parse_doorbell(word: [u8; 4]) -> (u8, u32) {
    let v = u32::from_be_bytes(word);
    ((v >> 24) as u8, v & EQ_CI_MASK)
}
