//! The public face of the simulator: a [`Fabric`] (virtual clock, event
//! queue, fault plan, cost model) joining simulated [`Device`]s, each with
//! a DMA address space, object tables and UAR pages ([`SimUar`]).
//!
//! Objects are created through a Rust API on the device, or by firmware
//! commands ([`crate::fw::bring_up_on`], which fills the same tables under
//! the numbers firmware chose: the crate's `*_as` methods). Every ring,
//! doorbell record and memory region is resolved through the device's DMA
//! table ([`HeapDma::translate`]) when it is created: an address that is
//! not inside a live allocation is refused and never dereferenced, and
//! every address a WQE names is checked against a memory region.
//!
//! No safe method keys driver memory (issue 29): `reg_mr` and
//! `reg_mr_range` key payload buffers ([`Device::alloc`]) only, refusing
//! a queue's ring or record, or anything allocated through the
//! `DmaAllocator` trait, with [`SimError::DriverMemory`]; `create_cq_at`
//! and `create_qp_at` take payload buffers no key covered
//! ([`SimError::KeyedMemory`]) and make them queue memory. The firmware
//! path (`*_as`, reached only through the driver's `unsafe` command
//! runner) and `reg_mr_range_unchecked` (`unsafe`) are not checked.
//!
//! | file | owns |
//! | --- | --- |
//! | `error` | why the device refused a request ([`SimError`]) |
//! | `fabric` | the simulation handle ([`Fabric`]): devices, clock, faults, trace |
//! | `handles` | what object creation returns or takes ([`Pd`], [`CqHandle`], [`SrqHandle`], [`QpInit`], [`QpHandle`]) |
//! | `placement` | object tables: numbered placement ([`MAX_PLACED_INDEX`]) and the power-of-two size check |
//! | `port` | the device's place on the fabric: index, LID, GID ([`sim_gid`]) |
//! | `memory` | the DMA allocator and the translation of device addresses |
//! | `pd_mr` | protection domains and memory keys |
//! | `cq`, `srq`, `qp` | creating, numbering and destroying CQs, SRQs, QPs |
//! | `modify` | modify-QP (transitions and attributes) and the QP's state |
//! | `observe` | asynchronous events, counters, per-QP timing |
//! | `uar` | the UAR page ([`SimUar`]): doorbells, BlueFlame, CQ arming |

mod cq;
mod error;
mod fabric;
mod handles;
mod memory;
mod modify;
mod observe;
mod pd_mr;
mod placement;
mod port;
mod qp;
mod srq;
mod uar;

pub use error::SimError;
pub use fabric::Fabric;
pub use handles::{CqHandle, Pd, QpHandle, QpInit, SrqHandle};
pub use placement::MAX_PLACED_INDEX;
pub use port::sim_gid;
pub use uar::SimUar;

use crate::dma::HeapDma;
use crate::world::World;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

/// One simulated ConnectX (a handle; cloning shares it).
#[derive(Clone)]
pub struct Device {
    w: Rc<RefCell<World>>,
    id: u16,
    dma: Arc<HeapDma>,
}

/// The device's index on its fabric.
impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Device")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}
