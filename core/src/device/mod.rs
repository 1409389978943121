//! Device bring-up, firmware objects and teardown over the platform traits
//! ([ref §7.2, §7.6, §7.7, §7.9–§7.12, §6.3](crate::reference)).
//!
//! [`Device::bring_up`] runs the documented sequence: wait for
//! `initializing` to clear, set up the command queue, ENABLE_HCA, ISSI
//! negotiation, boot pages, QUERY/SET_HCA_CAP, init pages, INIT_HCA,
//! ALLOC_UAR and (optionally) an async EQ for page requests. Objects (PD,
//! memory key, CQ, QP, SRQ) are created by command; their rings and
//! doorbell records come from the platform's [`DmaAllocator`] and the
//! returned handles carry everything the data-path queue types need
//! ([`CompletionQueue::new`](crate::cq::CompletionQueue::new),
//! [`SendQueue::new`](crate::sq::SendQueue::new), [`RecvQueue::new`](crate::rq::RecvQueue::new)).
//! [`Device::teardown`] destroys what is left, tears the HCA down, reclaims
//! firmware pages and disables the function. Nothing allocates: live
//! objects are kept in bounded `heapless` tables.
//!
//! Layout: the [`Device`] type and the re-exports live here; each child
//! module owns one responsibility of it (`config`, `error`, `bringup`,
//! `exec`, `pages`, `events`, `health`, `accessors`, `objects`, `dma`,
//! `pd`, `mkey`, `cq`, `qp`, `transitions`, `srq`, `port`, `devinfo`,
//! `teardown`).

mod accessors;
mod bringup;
mod comp_eq;
mod config;
mod cq;
mod devinfo;
mod dma;
mod error;
mod events;
mod exec;
mod gid;
mod gid_table;
mod health;
mod mkey;
mod objects;
mod pages;
mod pd;
mod port;
mod qp;
mod roce_path;
mod srq;
mod teardown;
mod transitions;

use crate::cmd::caps::HcaCaps;
use crate::cmd::eq::EventQueue;
use crate::cmd::initseg::FwVersion;
use crate::cmd::ops;
use crate::cmd::pages::PagePool;
use crate::cmd::queue::{CmdQueue, MAX_MSG};
use crate::cmd::{Bar0, Clock};
use crate::platform::{DmaAllocator, Uar};
use core::fmt;
use objects::Obj;

pub use crate::cmd::ops::{AddressPath, HwQpState, Init2Rtr, Rst2Init, Rtr2Rts};
pub use comp_eq::{CqEvents, MAX_COMP_EQS};
pub use config::{DeviceConfig, Step};
pub use cq::CqHandle;
pub use devinfo::DevInfo;
pub use error::DeviceError;
pub use events::EventsServed;
pub use gid::gid_of_ip;
pub use gid_table::{gid_score, GidPair, GID_SLOTS};
pub use mkey::Mkey;
pub use objects::MAX_OBJECTS;
pub use pd::Pd;
pub use port::{port_mtu, IbPortInfo, LinkLayer, PortInfo, PortState, PORT_TYPE_ETHERNET};
pub use qp::{QpHandle, QpSpec};
pub(crate) use roce_path::{check_fields, check_roce, has_peer_path};
pub use srq::{SrqHandle, SrqSpec};
pub use teardown::TeardownReport;

/// Interrupt delivery: the MSI-X vectors an EQ names in `eqc.intr`
/// ([ref §7.17](crate::reference)). Over VFIO each vector is an eventfd
/// (`VFIO_DEVICE_SET_IRQS`); on the simulator the device raises it when it
/// writes an EQE. Vector 0 is the control vector (command, async and page
/// events); completion EQs use vectors from 1 on, as the kernel's do.
pub trait Interrupts {
    /// MSI-X vectors the function has (0: no interrupts).
    fn irq_vectors(&self) -> u16;
    /// Makes `vector` deliver interrupts (VFIO: attaches an eventfd). False
    /// when it cannot (out of range, or the host refused).
    fn enable_irq(&mut self, vector: u16) -> bool;
    /// Waits until `vector` fires or `timeout_us` microseconds pass, and
    /// consumes what fired. True when it fired; false on timeout or for a
    /// vector that is not enabled.
    fn wait_irq(&mut self, vector: u16, timeout_us: u64) -> bool;
}

/// Maps UAR pages of BAR0 ([ref §4.2](crate::reference): UAR index N at BAR0 + N · 4 KiB).
pub trait UarMap {
    /// The UAR type handed to queues.
    type Uar: Uar;
    /// The UAR page with index `index`, or `None` if outside BAR0.
    fn map_uar(&mut self, index: u32) -> Option<Self::Uar>;
}

/// An mlx5 function brought up through the command interface.
pub struct Device<B: Bar0 + UarMap, C: Clock, A: DmaAllocator> {
    bar: B,
    clock: C,
    alloc: A,
    cfg: DeviceConfig,
    cmdq: CmdQueue,
    pages: PagePool,
    inb: [u8; MAX_MSG],
    outb: [u8; MAX_MSG],
    pgin: [u8; MAX_MSG],
    pgout: [u8; MAX_MSG],
    fw: FwVersion,
    issi: u16,
    hca: HcaCaps,
    roce: Option<ops::RoceCaps>,
    roce_enabled: bool,
    gids: gid_table::GidTable,
    uar: u32,
    eq: Option<(EventQueue, B::Uar)>,
    comp_eqs: heapless::Vec<comp_eq::CompEq<B::Uar>, MAX_COMP_EQS>,
    bad_events: u64,
    irqs_enabled: u16,
    objs: heapless::Vec<Obj, { 5 * MAX_OBJECTS }>,
    page_events: u64,
    health_last: u32,
    health_misses: u8,
    /// Variant byte (`mkey_7_0`) of the last memory key created.
    mkey_variant: u8,
}

impl<B: Bar0 + UarMap, C: Clock, A: DmaAllocator> fmt::Debug for Device<B, C, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Device")
            .field("fw", &self.fw)
            .field("issi", &self.issi)
            .field("uar", &self.uar)
            .field("pages_held", &self.pages.held())
            .finish()
    }
}
