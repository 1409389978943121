//! A firmware model behind an emulated BAR0 ([ref §7](bareverbs::reference)).
//!
//! [`SimBar`] implements the core's [`Bar0`](bareverbs::cmd::Bar0) and
//! [`UarMap`](bareverbs::device::UarMap): the
//! initialization segment (firmware version, command-interface revision 5,
//! an `initializing` bit that clears after a configurable number of polls,
//! a health counter that ticks on every read, the command queue address
//! registers) and the command doorbell. Ringing the doorbell makes
//! [`SimFirmware`] read the command queue entry and its mailbox chain from
//! DMA memory (through [`HeapDma::translate`]), execute the command against
//! its HCA state, page accounting and [`objects::ObjectTable`], and write
//! the output and the ownership byte back, exactly where hardware would.
//!
//! Page accounting: QUERY_HCA_CAP/SET_HCA_CAP need the boot pages and
//! INIT_HCA the init pages; each object created after INIT_HCA needs
//! [`FwConfig::pages_per_object`] more. A command short of pages fails with
//! NO_RESOURCES (0x0f) — unless an async EQ subscribed to PAGE_REQUEST
//! exists, in which case firmware posts a PAGE_REQUEST EQE and keeps the
//! command pending until MANAGE_PAGES supplies the pages (on another slot),
//! as real firmware does.
//!
//! The data path connects through [`objects::DataPath`];
//! [`datapath::FabricPath`] connects it to a simulated device on a
//! [`Fabric`](crate::Fabric), and [`bring_up_on`] assembles the whole
//! function (firmware, BAR0, data path, the core's bring-up);
//! [`bring_up_wired`] does the same for a function on the UDP wire.

mod bringup;
mod cmdq;
mod config;
mod cq;
pub mod datapath;
mod dispatch;
mod eq;
mod exec;
mod faults;
pub mod fuzz;
mod gid;
mod guest;
mod handler;
mod hca;
mod hca_cap;
mod hook;
mod mkey;
pub mod objects;
mod pages;
mod pd;
mod platform;
mod qp;
mod reg;
mod registers;
mod srq;
mod status;
mod uar;
mod vport;
mod wired;

use bareverbs::cmd::caps::HcaCaps;
use std::sync::Arc;

use crate::dma::HeapDma;
pub use bringup::{bring_up_sim, bring_up_sim_with, devinfo_sim, devinfo_sim_with, SimDevice};
pub use config::{default_caps, guid_of_mac, FwConfig, DEFAULT_PSID};
pub use datapath::{bring_up_on, FabricPath};
pub use faults::Faults;
pub use platform::{FakeClock, SharedDma, SimBar, SimUar, SIM_MSIX_VECTORS};
pub use status::{reason, syndrome};
pub use wired::{bring_up_wired, WiredError, WiredFunction};

/// The error the driver reports when this model fails `opcode` with
/// `status` for `reason` (the syndrome is [`syndrome`]`(opcode, reason)`):
/// what tests against the model expect.
pub fn failure(
    opcode: u16,
    status: bareverbs::cmd::CmdStatus,
    reason: u8,
) -> bareverbs::cmd::CmdError {
    bareverbs::cmd::CmdError::Failed {
        opcode,
        status,
        syndrome: syndrome(opcode, reason),
    }
}
pub use objects::{DataPath, ObjectEvent, ObjectTable};

/// Size of the emulated BAR0 (UAR indices must stay inside it).
pub const BAR0_SIZE: usize = 32 << 20;
/// First UAR index firmware hands out (pages 0–2 hold the init segment).
pub const FIRST_UAR: u32 = 4;

/// HCA life-cycle state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(clippy::exhaustive_enums)] // closed by the PRM: the HCA's four life-cycle states
pub enum HcaState {
    /// Before ENABLE_HCA / after DISABLE_HCA.
    Disabled,
    /// After ENABLE_HCA.
    Enabled,
    /// After INIT_HCA.
    Initialized,
    /// After TEARDOWN_HCA.
    TornDown,
}

/// The firmware model.
pub struct SimFirmware {
    pub(crate) dma: Arc<HeapDma>,
    pub(crate) cfg: FwConfig,
    pub(crate) cmdq_h: u32,
    pub(crate) cmdq_l: u32,
    pub(crate) nic_ifc: u8,
    pub(crate) init_reads: u32,
    pub(crate) health: u32,
    pub(crate) hca: HcaState,
    pub(crate) issi: u16,
    /// HOST_ENDIANNESS `he` byte written with ACCESS_REG, if any.
    pub host_endianness: Option<u8>,
    /// The vport's `roce_en` (MODIFY_NIC_VPORT_CONTEXT). On an Ethernet
    /// port, RST2INIT fails while it is off.
    pub roce_en: bool,
    /// The current RoCE capability `sw_r_roce_src_udp_port` (SET_HCA_CAP
    /// op_mod 8).
    pub roce_sw_src_udp_port: bool,
    /// The port's GID table (SET_ROCE_ADDRESS entries, grown on first
    /// use to `roce_address_table_size`).
    pub(crate) gids: Vec<[u8; 0x20]>,
    /// MSI-X vectors fired and not yet taken (bit n: vector n).
    pub(crate) irq_pending: u64,
    /// MSI-X vectors the host enabled (bit n: vector n).
    pub(crate) irq_enabled: u64,
    pub(crate) cur_caps: [u8; 256],
    pub(crate) pages: Vec<u64>,
    pub(crate) charged_objects: u32,
    pub(crate) objects: ObjectTable,
    /// Faults to inject.
    pub faults: Faults,
    pub(crate) hook: Option<Box<dyn DataPath>>,
    pub(crate) pending: Vec<u8>,
    pub(crate) hung: Vec<u8>,
    /// Opcodes executed, in order (with their status byte).
    pub log: Vec<(u16, u8)>,
    /// (slot, opcode) of every executed command, in order.
    pub slot_log: Vec<(u8, u16)>,
    /// Doorbell writes seen on UAR pages: (uar, offset, value bytes).
    pub uar_writes: Vec<(u32, usize, Vec<u8>)>,
    /// Why the data path refused objects (commands failed with
    /// [`reason::DATA_PATH`]), in order.
    pub refusals: Vec<&'static str>,
}

/// The life-cycle state, configuration switches and counts (not the
/// tables, rings or logs themselves).
impl std::fmt::Debug for SimFirmware {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimFirmware")
            .field("hca", &self.hca)
            .field("issi", &self.issi)
            .field("nic_ifc", &self.nic_ifc)
            .field("host_endianness", &self.host_endianness)
            .field("roce_en", &self.roce_en)
            .field("pages", &self.pages.len())
            .field("commands", &self.log.len())
            .field("faults", &self.faults)
            .finish_non_exhaustive()
    }
}

impl SimFirmware {
    /// A powered-on function: firmware initializing, HCA disabled.
    pub fn new(dma: Arc<HeapDma>, cfg: FwConfig) -> Self {
        let mut cur_caps = [0u8; 256];
        cfg.caps.write(&mut cur_caps);
        SimFirmware {
            dma,
            cfg,
            cmdq_h: 0,
            cmdq_l: 0,
            nic_ifc: 0,
            init_reads: 0,
            health: 0x10,
            hca: HcaState::Disabled,
            issi: 0,
            host_endianness: None,
            roce_en: false,
            roce_sw_src_udp_port: false,
            gids: Vec::new(),
            cur_caps,
            pages: Vec::new(),
            charged_objects: 0,
            objects: ObjectTable::default(),
            faults: Faults::default(),
            hook: None,
            pending: Vec::new(),
            hung: Vec::new(),
            log: Vec::new(),
            slot_log: Vec::new(),
            uar_writes: Vec::new(),
            irq_pending: 0,
            irq_enabled: 0,
            refusals: Vec::new(),
        }
    }
    /// Connects a data-path model (see [`objects`]).
    pub fn set_data_path(&mut self, hook: Box<dyn DataPath>) {
        self.hook = Some(hook);
    }
    /// The object table.
    pub fn objects(&self) -> &ObjectTable {
        &self.objects
    }
    /// HCA state.
    pub fn hca_state(&self) -> HcaState {
        self.hca
    }
    /// Pages firmware holds.
    pub fn pages_held(&self) -> usize {
        self.pages.len()
    }
    /// Negotiated ISSI.
    pub fn issi(&self) -> u16 {
        self.issi
    }
    /// Current general capabilities image.
    pub fn current_caps(&self) -> HcaCaps {
        HcaCaps::parse(&self.cur_caps)
    }
    /// Completes commands that were hung by [`Faults::hang_next`] (late
    /// firmware), so their slots become usable again.
    pub fn release_hung(&mut self) {
        for slot in std::mem::take(&mut self.hung) {
            self.run_slot(slot);
        }
    }
}
