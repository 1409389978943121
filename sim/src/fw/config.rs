//! The firmware model's parameters: [`FwConfig`], its defaults and the
//! default capabilities ([`default_caps`]) the simulated ConnectX reports.

use bareverbs::cmd::caps::HcaCaps;

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
