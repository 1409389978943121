//! What the receive queues remember per ring slot ([`RqSlot`], [`SrqSlot`])
//! and the storage they keep those records in ([`RqSlots`], [`SrqSlots`]).

/// What a receive queue remembers about one ring slot: the `wr_id` of the
/// receive WQE posted there.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RqSlot {
    pub(super) wr_id: u64,
}

/// Storage for a receive queue's per-WQE records: its length is the ring
/// size in WQEs (a power of two up to 65536). A fixed array
/// (`[RqSlot; N]`), a slice, or any owner of one (`Box<[RqSlot]>`).
pub trait RqSlots: AsRef<[RqSlot]> + AsMut<[RqSlot]> {}
impl<T: AsRef<[RqSlot]> + AsMut<[RqSlot]> + ?Sized> RqSlots for T {}

/// What a shared receive queue remembers about one WQE slot: its `wr_id`,
/// its free-list link (a shadow of the ring's next segment, so nothing read
/// back from device-visible memory is trusted), whether it is free for
/// re-linking and whether it holds a posted WQE.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SrqSlot {
    pub(super) wr_id: u64,
    pub(super) next: u16,
    pub(super) free: bool,
    pub(super) posted: bool,
}

/// Storage for an SRQ's per-slot records: its length is the number of WQE
/// slots (a power of two up to 65536). A fixed array (`[SrqSlot; N]`), a
/// slice, or any owner of one.
pub trait SrqSlots: AsRef<[SrqSlot]> + AsMut<[SrqSlot]> {}
impl<T: AsRef<[SrqSlot]> + AsMut<[SrqSlot]> + ?Sized> SrqSlots for T {}
