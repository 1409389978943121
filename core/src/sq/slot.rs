//! The per-WQEBB records of a send queue: [`SqSlot`] (what is posted at
//! a WQEBB), the [`SqSlots`] storage trait, what a completion retires
//! ([`SendRetired`]) and how records are forgotten.

/// What the completion path needs from the send queue for one CQE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendRetired {
    /// The completed WR's `wr_id`.
    pub wr_id: u64,
    /// Completion opcode override for UMR-based WRs (5 BIND_MW,
    /// 6 LOCAL_INV), else 0.
    pub wr_data: u8,
}

/// What a send queue remembers about the WQE that starts at one WQEBB of
/// its ring (16 bytes, written with two 8-byte stores per WR): the WR's
/// `wr_id`, and one word holding the WR's sequence number (bits 31:0), the
/// completion opcode override of UMR-based WRs (39:32) and the 16-bit
/// WQEBB counter it was posted at (63:48: the counter shifted up, its
/// upper bits falling off, is the whole of the field's work). A completion is checked against it
/// with two compares: the counter must be the recorded one and the
/// sequence number inside the in-flight window `[tail, head)`.
///
/// A record whose WQEBB was later covered by the middle of another WQE
/// keeps an old sequence number, below `tail` (that WQE could only be
/// posted once the old one was retired: the geometry reserves room for
/// `max_post` WRs). A record the queue forgets (creation, reset, replay)
/// gets the counter `idx ^ 1`, which no completion for slot `idx` can
/// carry on a ring of two or more WQEBBs; on a one-WQEBB ring every post
/// rewrites the only record, and reset and replay leave the in-flight
/// window empty until then.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct SqSlot {
    pub(super) wr_id: u64,
    pub(super) meta: u64,
}

impl SqSlot {
    /// The `wr_data` bits of the record word.
    pub(super) const WR_DATA_BITS: u64 = 0xff << 32;
    /// The record of a WR posted at WQEBB counter `ctr` as WR `seq`.
    #[inline(always)]
    pub(super) const fn posted(wr_id: u64, seq: u32, ctr: u32, wr_data: u8) -> Self {
        SqSlot {
            wr_id,
            meta: seq as u64 | ((wr_data as u64) << 32) | ((ctr as u64) << 48),
        }
    }
    /// The same record with the WQEBB counter `ctr`.
    #[inline(always)]
    pub(super) const fn with_ctr(self, ctr: u16) -> Self {
        SqSlot {
            wr_id: self.wr_id,
            meta: (self.meta & !(0xffff << 48)) | ((ctr as u64) << 48),
        }
    }
    /// WR sequence number.
    #[inline(always)]
    pub(super) const fn seq(&self) -> u32 {
        self.meta as u32
    }
    /// WQEBB counter the WR was posted at.
    #[inline(always)]
    pub(super) const fn ctr(&self) -> u16 {
        (self.meta >> 48) as u16
    }
    /// Completion opcode override.
    #[inline(always)]
    pub(super) const fn wr_data(&self) -> u8 {
        (self.meta >> 32) as u8
    }
}

/// Storage for a send queue's per-WQEBB records: its length is the ring
/// size in WQEBBs (a power of two up to 65536). A fixed array
/// (`[SqSlot; N]`, no allocation, for `no_std` users), a borrowed slice, or
/// any owner of one (`Box<[SqSlot]>`, `Vec<SqSlot>`) sized at run time from
/// the queue's geometry.
pub trait SqSlots: AsRef<[SqSlot]> + AsMut<[SqSlot]> {}
impl<T: AsRef<[SqSlot]> + AsMut<[SqSlot]> + ?Sized> SqSlots for T {}

/// Gives every record the counter `idx ^ 1`, which no completion for its
/// slot carries (see [`SqSlot`]); the visible `wr_id`/sequence/`wr_data`
/// stay as they are.
pub(super) fn forget(slots: &mut [SqSlot]) {
    for (idx, slot) in slots.iter_mut().enumerate() {
        *slot = slot.with_ctr(idx as u16 ^ 1);
    }
}
