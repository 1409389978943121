//! The fixed sizes and limits of a perftest run: receive depth, the
//! message-slot budget, the busy-wait limit, the UD Q_Key and GRH room,
//! the simulator's in-flight cap and the stamp reservation.

/// Receive WQEs per QP (perftest's default `rx_depth` is 512).
pub const RQ_WQES: usize = 512;
/// Most bytes of message slots per area (src or dst of one side), over
/// all QP pairs of a run.
pub const AREA_BYTES: usize = 32 << 20;
/// Default limit of every busy-wait (5 s of the timer's clock).
pub const DEFAULT_TIMEOUT_NS: u64 = 5_000_000_000;
/// Q_Key of the UD QPs.
pub const QKEY: u32 = 0x1111_1111;
/// UD receive buffers start with room for the GRH (IBA 11.4.1.2).
pub const GRH_BYTES: usize = 40;
/// Payload bytes in flight per QP on the simulator devices (see
/// [`PerfDevice::inflight_bytes`](super::PerfDevice::inflight_bytes)).
pub const SIM_INFLIGHT_BYTES: u64 = 128 << 20;
/// Most post/completion stamps reserved up front.
pub(super) const RESERVE_MAX: u64 = 1 << 20;
