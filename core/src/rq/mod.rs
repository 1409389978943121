//! Receive queue and shared receive queue posting ([ref §2](crate::reference)).
//!
//! Receive queues have no MMIO doorbell: the doorbell record alone tells
//! the device how many receive WQEs were posted ([ref §4.1](crate::reference)).
//!
//! One concept a file: the work request (`wr`), refusals (`error`), the
//! geometries (`config`), per-slot records (`slot`), the scatter segment
//! encoding (`seg`), the receive queue (`queue`) and the SRQ (`srq`). The
//! files are private; every item is re-exported here, so
//! `bareverbs::rq::X` is the path.

mod config;
mod error;
mod queue;
mod seg;
mod slot;
mod srq;
mod wr;

pub use config::{RqConfig, SrqConfig};
pub use error::{RecvError, RecvErrorKind};
pub use queue::{FixedRecvQueue, RecvQueue};
pub use slot::{RqSlot, RqSlots, SrqSlot, SrqSlots};
pub use srq::{FixedSharedReceiveQueue, SharedReceiveQueue};
pub use wr::RecvWr;

#[cfg(test)]
mod tests;

#[cfg(test)]
mod model_tests;
