//! A firmware model behind an emulated BAR0 ([ref §7](bareverbs::reference)).
//!
//! [`SimBar`] implements the core's [`Bar0`] and [`UarMap`]: the
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
//! function (firmware, BAR0, data path, the core's bring-up).

mod cmdq;
mod cq;
pub mod datapath;
mod dispatch;
mod eq;
mod exec;
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
mod qp;
mod reg;
mod srq;
mod status;
mod uar;
mod vport;

use bareverbs::cmd::caps::HcaCaps;
use bareverbs::cmd::initseg;
use bareverbs::cmd::{Bar0, Clock};
use bareverbs::device::{DevInfo, Device, DeviceConfig, DeviceError, UarMap};
use bareverbs::platform::{DmaAllocator, DmaBuf, Uar, EQ_DOORBELL_ARM, EQ_DOORBELL_NO_ARM};
use std::cell::{RefCell, RefMut};
use std::rc::Rc;
use std::sync::Arc;

use crate::dma::HeapDma;
pub use datapath::{bring_up_on, FabricPath};
pub use status::{reason, syndrome};

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

/// Firmware model parameters.
#[derive(Clone, Debug)]
pub struct FwConfig {
    /// Firmware version (major, minor, sub-minor).
    pub fw_version: (u16, u16, u16),
    /// Command-interface revision reported (5 is the only one spoken).
    pub cmdif_rev: u16,
    /// log2 command slots.
    pub log_cmdq_size: u8,
    /// log2 command slot stride.
    pub log_cmdq_stride: u8,
    /// Reads of `initializing` before bit 31 clears (`u32::MAX` = never).
    pub init_polls: u32,
    /// `supported_issi_dw0`.
    pub supported_issi: u32,
    /// Pages QUERY_PAGES BOOT asks for.
    pub boot_pages: u32,
    /// Pages QUERY_PAGES INIT asks for.
    pub init_pages: u32,
    /// Pages each object created after INIT_HCA consumes.
    pub pages_per_object: u32,
    /// Objects created after INIT_HCA before pages are charged.
    pub free_objects: u32,
    /// Capabilities reported (maximum and initial current values).
    pub caps: HcaCaps,
    /// Port state reported by QUERY_VPORT_STATE (1 = up).
    pub port_state: u8,
    /// If set, QUERY_PAGES INIT reports this instead of the true need (a
    /// lying firmware, to test INIT_HCA failing for lack of pages).
    pub init_pages_reported: Option<u32>,
    /// MTU in bytes the PMTU register (ACCESS_REG 0x5003) reports as
    /// `oper_mtu` and `admin_mtu` for every port. On an Ethernet port
    /// (`caps.port_type` 1) it is the hardware MTU, netdev MTU + 22
    /// (ETH_HLEN 14 + VLAN 4 + FCS 4): the default 1522 is a 1500-byte
    /// netdev. On an InfiniBand port (`port_type` 0) it is the IB MTU
    /// (256 … 4096); set it (and `port_max_mtu`) for IB configurations.
    pub port_mtu: u16,
    /// Permanent MAC address of the port (QUERY_NIC_VPORT_CONTEXT).
    pub mac: [u8; 6],
    /// The lowest EQ number CREATE_EQ hands out (default 0); a nonzero base
    /// shows that an object names the EQ it was given, not "EQ 0".
    pub first_eqn: u8,
    /// Byte 0 of the RoCE capability page (QUERY_HCA_CAP type 4): 0x08
    /// sw_r_roce_src_udp_port, 0x04 fl_rc_qp_when_roce_disabled, 0x02
    /// fl_rc_qp_when_roce_enabled. Default 0x0e (all three). The
    /// maximum page reports it as is; in the current page
    /// sw_r_roce_src_udp_port starts off and SET_HCA_CAP op_mod 8 turns it
    /// on (only if set here).
    pub roce_cap_byte0: u8,
    /// RoCE capability `qp_ts_format`: 0 free-running only, 1 real-time
    /// only, 2 both (default, as current cards). CREATE_QP with a
    /// `ts_format` the value does not allow is refused.
    pub qp_ts_format: u8,
    /// RoCE capability `roce_address_table_size`: GID table entries per
    /// port (default 256).
    pub roce_address_table_size: u16,
    /// MTU in bytes PMTU reports as `max_mtu` (same units as `port_mtu`).
    /// Default 10000, a model value (a 9978-byte netdev MTU + 22); an IB
    /// configuration should set it to an IB MTU (e.g. 4096).
    pub port_max_mtu: u16,
    /// Whether ACCESS_REG answers PMTU reads; `false` models older
    /// firmware that rejects the register with BAD_PARAM.
    pub pmtu_supported: bool,
    /// Memory key indices: `false` (default) hands out fresh numbers from
    /// the shared counter; `true` reuses the lowest free index ≥ 1, as
    /// firmware may, so a destroyed key's index comes back for the next
    /// key (the case the `mkey_7_0` variant exists for).
    pub reuse_mkey_index: bool,
    /// Node GUID the vport contexts report (QUERY_NIC_VPORT_CONTEXT on
    /// Ethernet, QUERY_HCA_VPORT_CONTEXT on InfiniBand). Default: the
    /// default `mac` with `03:00` inserted after its third byte, the form
    /// Mellanox boards derive their GUIDs in (a model value).
    pub node_guid: u64,
    /// System image GUID the vport contexts report (default: `node_guid`,
    /// as a single-function adapter reports it).
    pub system_image_guid: u64,
    /// IEEE vendor id QUERY_ADAPTER reports (default 0x02c9, Mellanox's
    /// OUI).
    pub ieee_vendor_id: u32,
    /// PSID QUERY_ADAPTER reports in `vsd_contd_psid` (NUL-padded ASCII;
    /// the `board_id` `ibv_devinfo` prints). Default `BAREVERBS_SIM01`, a
    /// name no real board carries.
    pub psid: [u8; 16],
    /// PCI device id of the function's config space (not a command: the
    /// host reads it; `vendor_part_id`). Default 0x1017 (4119), ConnectX-5.
    pub pci_device_id: u16,
    /// PCI revision id (`hw_ver`). Default 0.
    pub pci_revision: u8,
    /// InfiniBand configurations: the port's LID (QUERY_HCA_VPORT_CONTEXT).
    pub lid: u16,
    /// InfiniBand configurations: the subnet manager's LID.
    pub sm_lid: u16,
    /// InfiniBand configurations: the LID mask count (0..=7).
    pub lmc: u8,
}

/// [`FwConfig::mac`]'s default (a locally administered address).
const MAC: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x00, 0x01];

/// [`FwConfig::psid`]'s default.
pub const DEFAULT_PSID: [u8; 16] = *b"BAREVERBS_SIM01\0";

/// The GUID Mellanox-style firmware derives from a MAC: the MAC's first
/// three bytes, `03 00`, its last three.
pub const fn guid_of_mac(mac: [u8; 6]) -> u64 {
    u64::from_be_bytes([mac[0], mac[1], mac[2], 0x03, 0x00, mac[3], mac[4], mac[5]])
}

impl Default for FwConfig {
    fn default() -> Self {
        FwConfig {
            fw_version: (16, 35, 2000),
            cmdif_rev: 5,
            log_cmdq_size: 5,
            log_cmdq_stride: 6,
            init_polls: 3,
            supported_issi: 0b11,
            boot_pages: 8,
            init_pages: 32,
            pages_per_object: 1,
            free_objects: 8,
            caps: default_caps(),
            port_state: 1,
            init_pages_reported: None,
            mac: MAC,
            first_eqn: 0,
            roce_cap_byte0: 0x0e,
            qp_ts_format: 2,
            roce_address_table_size: 256,
            port_mtu: 1522,
            port_max_mtu: 10000,
            pmtu_supported: true,
            reuse_mkey_index: false,
            node_guid: guid_of_mac(MAC),
            system_image_guid: guid_of_mac(MAC),
            ieee_vendor_id: 0x02c9,
            psid: DEFAULT_PSID,
            pci_device_id: 0x1017,
            pci_revision: 0,
            lid: 1,
            sm_lid: 1,
            lmc: 0,
        }
    }
}

/// The capabilities the simulated ConnectX reports: ConnectX-5-like limits
/// ([ref §3.11](bareverbs::reference) typical values: log_max_qp 18, log_max_qp_sz 15,
/// log_max_cq_sz 22) and the descriptor sizes of `DeviceCaps::DEFAULT`
/// (1024-byte send, 512-byte receive WQEs, 512-byte BlueFlame registers).
pub fn default_caps() -> HcaCaps {
    HcaCaps {
        log_max_srq_sz: 15,
        log_max_qp_sz: 15,
        log_max_qp: 18,
        log_max_srq: 23,
        log_max_cq_sz: 22,
        log_max_cq: 24,
        log_max_eq_sz: 22,
        log_max_mkey: 24,
        log_max_eq: 7,
        fast_teardown: true,
        log_max_ra_req_qp: 4,
        log_max_ra_res_qp: 4,
        pkey_table_size: 0,
        port_type: 1,
        num_ports: 1,
        log_max_msg: 30,
        cqe_version: 1,
        cmdif_checksum: 3,
        roce: true,
        num_vhca_ports: 0,
        atomic: true,
        uar_4k: true,
        umem_uid_0: true,
        log_pg_sz: 12,
        bf: true,
        mkey_by_name: false,
        log_bf_reg_size: 9,
        max_wqe_sz_sq: 1024,
        max_wqe_sz_rq: 512,
        max_wqe_sz_sq_dc: 512,
        log_max_pd: 24,
        log_uar_page_sz: 0,
        num_of_uars_per_page: 1,
        cqe_128_always: false,
        cqe_compression: true,
    }
}

/// Faults to inject into the next commands.
#[derive(Clone, Debug, Default)]
pub struct Faults {
    /// The next N commands are never completed (ownership stays with firmware).
    pub hang_next: u32,
    /// The next command fails with (status, syndrome) regardless of input.
    pub fail_next: Option<(u8, u32)>,
    /// The next command gets this delivery status.
    pub delivery_next: Option<u8>,
    /// The next output mailbox chain gets a wrong block number.
    pub corrupt_out_block_num: bool,
    /// The health counter stops ticking.
    pub health_stuck: bool,
    /// A lying firmware: the next successful ALLOC_PD, ALLOC_UAR, CREATE_MKEY,
    /// CREATE_CQ, CREATE_QP or CREATE_SRQ reports this whole word as the
    /// object number (output dw2, reserved bits 31:24 included) instead of
    /// the number the model assigned; the model keeps its real object.
    pub object_number_next: Option<u32>,
    /// An event storm: every EQ doorbell (consumer-index update) refills
    /// the EQ with fresh valid EQEs (PORT_CHANGE), so the ring never runs
    /// dry. Start it with [`SimFirmware::post_event`].
    pub eqe_storm: bool,
}

/// HCA life-cycle state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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

    fn read_reg(&mut self, off: usize) -> u32 {
        let (maj, min, sub) = self.cfg.fw_version;
        match off {
            initseg::FW_REV => initseg::fw_rev_word(maj, min),
            initseg::CMDIF_REV_FW_SUB => initseg::cmdif_rev_fw_sub_word(self.cfg.cmdif_rev, sub),
            initseg::CMDQ_ADDR_H => self.cmdq_h,
            initseg::CMDQ_ADDR_L_SZ => initseg::cmdq_addr_l_sz_word(
                self.cmdq_l,
                self.nic_ifc,
                self.cfg.log_cmdq_size,
                self.cfg.log_cmdq_stride,
            ),
            initseg::INITIALIZING => {
                if self.init_reads < self.cfg.init_polls {
                    self.init_reads = self.init_reads.saturating_add(1);
                    initseg::INITIALIZING_BIT
                } else {
                    0
                }
            }
            initseg::HEALTH_FW_VER => ((maj as u32) << 16) | min as u32,
            initseg::HEALTH_COUNTER => {
                if !self.faults.health_stuck {
                    self.health = self.health.wrapping_add(1) & initseg::HEALTH_COUNTER_MASK;
                }
                self.health
            }
            o if o < BAR0_SIZE => 0,
            _ => 0xffff_ffff,
        }
    }

    fn write_reg(&mut self, off: usize, v: u32) {
        match off {
            initseg::CMDQ_ADDR_H => self.cmdq_h = v,
            initseg::CMDQ_ADDR_L_SZ => {
                self.cmdq_l = v & initseg::CMDQ_ADDR_L_MASK;
                self.nic_ifc = initseg::nic_ifc_bits(v);
            }
            initseg::CMD_DBELL => {
                let slots = 1u32 << self.cfg.log_cmdq_size.min(initseg::MAX_LOG_CMDQ_SIZE);
                for slot in 0..slots.min(32) {
                    if v & (1 << slot) != 0 {
                        self.doorbell(slot as u8);
                    }
                }
            }
            _ => {}
        }
    }

    fn uar_store(&mut self, uar: u32, offset: usize, bytes: &[u8]) {
        // EQ doorbells update the consumer index (ref §4.6).
        if (offset == EQ_DOORBELL_ARM || offset == EQ_DOORBELL_NO_ARM) && bytes.len() == 4 {
            let (eqn, ci) =
                bareverbs::cmd::eq::parse_doorbell([bytes[0], bytes[1], bytes[2], bytes[3]]);
            if let Some(eq) = self.objects.eqs.get_mut(&eqn) {
                eq.ci = ci;
            }
            if self.faults.eqe_storm {
                while self.post_event(bareverbs::cmd::eq::event::PORT_CHANGE) {}
            }
        }
        if self.hook.is_none() {
            // Kept only without a data path: a benchmark's doorbells would
            // otherwise grow this log without bound.
            self.uar_writes.push((uar, offset, bytes.to_vec()));
        }
        if let Some(h) = self.hook.as_mut() {
            h.uar_write(uar, offset, bytes);
        }
    }

    fn uar_flush(&mut self, uar: u32) {
        if let Some(h) = self.hook.as_mut() {
            h.uar_flush(uar);
        }
    }
}

/// The emulated BAR0: a handle to the shared firmware model.
#[derive(Clone)]
pub struct SimBar {
    fw: Rc<RefCell<SimFirmware>>,
}

impl SimBar {
    /// A BAR over a fresh firmware model.
    pub fn new(dma: Arc<HeapDma>, cfg: FwConfig) -> Self {
        SimBar {
            fw: Rc::new(RefCell::new(SimFirmware::new(dma, cfg))),
        }
    }
    /// The firmware model (to inject faults or inspect objects). The
    /// borrow must end before the driver touches the BAR again.
    pub fn fw(&self) -> RefMut<'_, SimFirmware> {
        self.fw.borrow_mut()
    }
}

// SAFETY: every access is one whole 32-bit register operation on the model
// (one borrow each, single-threaded: SimBar is neither Send nor Sync);
// out-of-range reads return all-ones and writes are ignored.
unsafe impl Bar0 for SimBar {
    fn read32(&self, off: usize) -> u32 {
        self.fw().read_reg(off)
    }
    fn write32(&mut self, off: usize, v: u32) {
        self.fw().write_reg(off, v)
    }
}

impl UarMap for SimBar {
    type Uar = SimUar;
    fn map_uar(&mut self, index: u32) -> Option<SimUar> {
        if (index as usize + 1) * 4096 > BAR0_SIZE || index < FIRST_UAR {
            return None;
        }
        Some(SimUar {
            fw: self.fw.clone(),
            index,
        })
    }
}

/// A UAR page of the emulated BAR0: stores are forwarded to the firmware
/// model (EQ doorbells) and the data-path hook.
#[derive(Clone)]
pub struct SimUar {
    fw: Rc<RefCell<SimFirmware>>,
    index: u32,
}

impl SimUar {
    fn fw(&self) -> RefMut<'_, SimFirmware> {
        self.fw.borrow_mut()
    }
    fn store(&mut self, offset: usize, bytes: &[u8]) {
        let index = self.index;
        self.fw().uar_store(index, offset, bytes);
    }
}

// SAFETY: every store is delivered whole and in program order to the model
// (one borrow each, single-threaded).
unsafe impl Uar for SimUar {
    fn write64(&mut self, offset: usize, bytes: [u8; 8]) {
        self.store(offset, &bytes)
    }
    fn write32(&mut self, offset: usize, bytes: [u8; 4]) {
        self.store(offset, &bytes)
    }
    fn write_bf(&mut self, offset: usize, chunk: &[u8; 64]) {
        self.store(offset, chunk)
    }
    fn flush(&mut self) {
        let index = self.index;
        self.fw().uar_flush(index);
    }
}

/// A DMA allocator sharing one [`HeapDma`] with the firmware model.
#[derive(Clone, Debug)]
pub struct SharedDma(pub Arc<HeapDma>);

// SAFETY: delegates to HeapDma, which upholds the DmaAllocator contract.
unsafe impl DmaAllocator for SharedDma {
    fn alloc(&self, len: usize, align: usize) -> Option<DmaBuf> {
        self.0.alloc(len, align)
    }
    unsafe fn free(&self, buf: DmaBuf) {
        // SAFETY: forwarded caller contract.
        unsafe { self.0.free(buf) }
    }
}

/// A fake clock: `delay_us` advances time, nothing sleeps.
#[derive(Clone, Debug, Default)]
pub struct FakeClock {
    /// Current time in microseconds.
    pub now: u64,
    /// Total delay requested.
    pub delays: u64,
}

impl Clock for FakeClock {
    fn now_us(&self) -> u64 {
        self.now
    }
    fn delay_us(&mut self, us: u32) {
        self.now += us as u64;
        self.delays += 1;
    }
}

/// The device type the simulator runs the core's bring-up on.
pub type SimDevice = Device<SimBar, FakeClock, SharedDma>;

/// Brings up a simulated function with `cfg` through the core's
/// [`Device::bring_up`] (the same code VFIO runs).
pub fn bring_up_sim(cfg: FwConfig) -> Result<SimDevice, DeviceError> {
    bring_up_sim_with(cfg, DeviceConfig::default())
}

/// [`bring_up_sim`] with chosen driver settings (timeouts, async EQ).
pub fn bring_up_sim_with(fw: FwConfig, dev: DeviceConfig) -> Result<SimDevice, DeviceError> {
    let dma = Arc::new(HeapDma::new());
    let bar = SimBar::new(dma.clone(), fw);
    Device::bring_up(bar, FakeClock::default(), SharedDma(dma), dev)
}

/// `bareverbs devinfo` on the simulator: bring-up, QUERY_HCA_CAP,
/// QUERY_VPORT_STATE, a PMTU read (ACCESS_REG) per port and teardown
/// against the firmware model.
pub fn devinfo_sim() -> Result<DevInfo, DeviceError> {
    devinfo_sim_with(FwConfig::default())
}

/// [`devinfo_sim`] with a chosen firmware configuration.
pub fn devinfo_sim_with(cfg: FwConfig) -> Result<DevInfo, DeviceError> {
    let (part, rev) = (cfg.pci_device_id, cfg.pci_revision);
    let mut d = bring_up_sim(cfg)?;
    let info = d.devinfo();
    let _ = d.teardown();
    // The PCI identity is config space, which the host (here: the
    // simulator's) reads, not the command interface.
    info.map(|mut i| {
        i.vendor_part_id = Some(part);
        i.hw_ver = Some(rev);
        i
    })
}
