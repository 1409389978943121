//! Receive-queue geometries as sizing computes them: [`RqConfig`]
//! ([ref §3.5](crate::reference)) and [`SrqConfig`] ([ref §3.8](crate::reference)).

/// Geometry of a receive queue (from sizing). [ref §3.5](crate::reference).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RqConfig {
    /// log2 of the WQE stride in bytes (≥ 4).
    pub wqe_shift: u32,
    /// Data segments per WQE (`max_gs`).
    pub max_gs: u32,
    /// WRs that may be outstanding (`max_post`).
    pub max_post: u32,
}

/// Geometry of a shared receive queue (from sizing). [ref §3.8](crate::reference).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SrqConfig {
    /// log2 of the WQE size in bytes (≥ 5).
    pub wqe_shift: u32,
    /// Data segments per WQE.
    pub max_gs: u32,
    /// Slots in the main free list (`tail + 1` at creation).
    pub nwqes: u32,
    /// Whether slots `nwqes..N` form a wait queue.
    pub wait_queue: bool,
}
