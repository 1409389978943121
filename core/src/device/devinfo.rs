//! Device information for `bareverbs devinfo` ([`DevInfo`]): QUERY_ADAPTER
//! and the assembly of capabilities, vport contexts and port queries.

use super::{port_mtu, Device, DeviceError, IbPortInfo, LinkLayer, PortInfo, PortState, UarMap};
use crate::cmd::caps::HcaCaps;
use crate::cmd::initseg::FwVersion;
use crate::cmd::{ops, Bar0, Clock, CmdError};
use crate::platform::DmaAllocator;

/// What `bareverbs devinfo` prints, from QUERY_HCA_CAP, QUERY_ADAPTER,
/// the NIC or HCA vport context and port queries, with the values the mlx5
/// kernel driver derives from them (`mlx5_ib_query_device`,
/// `mlx5_ib_query_port`). `None` marks what the device did not tell.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DevInfo {
    /// Firmware version (initialization segment).
    pub fw_ver: FwVersion,
    /// Node GUID: NIC vport context on Ethernet, HCA vport context on
    /// InfiniBand (linux `mlx5_query_node_guid`).
    pub node_guid: Option<u64>,
    /// System image GUID, from the same context.
    pub sys_image_guid: Option<u64>,
    /// IEEE vendor id from QUERY_ADAPTER (Mellanox 0x02c9).
    pub vendor_id: Option<u32>,
    /// PCI device id (`vendor_part_id`; the kernel takes it from PCI config
    /// space, so the host fills it in: the core cannot see config space).
    pub vendor_part_id: Option<u16>,
    /// PCI revision (`hw_ver`; host-filled like `vendor_part_id`).
    pub hw_ver: Option<u8>,
    /// QUERY_ADAPTER's PSID bytes (`board_id`; see
    /// [`ops::Adapter::board_id`]).
    pub adapter: Option<ops::Adapter>,
    /// Number of physical ports (`cap.num_ports`).
    pub phys_port_cnt: u8,
    /// Largest memory region: the kernel reports `~0` (all ones).
    pub max_mr_size: u64,
    /// Page sizes: `~(min_page_size − 1)` with `min_page_size = 1 <<
    /// cap.log_pg_sz` (`None` for a nonsense log).
    pub page_size_cap: Option<u64>,
    /// Max QPs (`1 << log_max_qp`).
    pub max_qp: u32,
    /// Max WRs per QP (`1 << log_max_qp_sz`).
    pub max_qp_wr: u32,
    /// Max SGEs (see [`HcaCaps::max_sge`]).
    pub max_sge: u32,
    /// Max SGEs of an RDMA READ ([`crate::cmd::caps::MAX_SGE_RD`]).
    pub max_sge_rd: u32,
    /// Max CQs (`1 << log_max_cq`).
    pub max_cq: u32,
    /// Max CQEs per CQ as ibv reports it (`(1 << log_max_cq_sz) − 1`;
    /// [ref §3.7](crate::reference)).
    pub max_cqe: u32,
    /// Max memory regions (`1 << log_max_mkey`).
    pub max_mr: u32,
    /// Max PDs (`1 << log_max_pd`).
    pub max_pd: u32,
    /// `max_qp_rd_atom` as the mlx5 kernel driver fills it: `1 <<
    /// log_max_ra_req_qp`.
    pub max_qp_rd_atom: u32,
    /// `max_qp_init_rd_atom` as the mlx5 kernel driver fills it: `1 <<
    /// log_max_ra_res_qp`.
    pub max_qp_init_rd_atom: u32,
    /// `max_qp_rd_atom × max_qp` (saturating).
    pub max_res_rd_atom: u32,
    /// Max SRQs (`1 << log_max_srq`).
    pub max_srq: u32,
    /// Max SRQ WRs (`(1 << log_max_srq_sz) − 1`, as the kernel reports it).
    pub max_srq_wr: u32,
    /// Max SRQ SGEs ([`HcaCaps::max_srq_sge`]).
    pub max_srq_sge: u32,
    /// The raw general capabilities.
    pub caps: HcaCaps,
    /// Ports.
    pub ports: heapless::Vec<PortInfo, 4>,
}

/// A refused query is "unknown"; a broken command interface is not.
fn soft<T>(r: Result<T, DeviceError>) -> Result<Option<T>, DeviceError> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(DeviceError::Cmd(CmdError::Failed { .. })) => Ok(None),
        Err(e) => Err(e),
    }
}

impl<B: Bar0 + UarMap, C: Clock, A: DmaAllocator> Device<B, C, A> {
    /// QUERY_ADAPTER ([`ops::query_adapter`]).
    pub fn query_adapter(&mut self) -> Result<ops::Adapter, DeviceError> {
        let r = ops::query_adapter(&mut self.inb);
        self.exec(r)?;
        Ok(ops::parse_query_adapter(&self.outb))
    }

    /// Device information for `bareverbs devinfo`, from the capabilities,
    /// QUERY_ADAPTER (vendor id, board id), the vport context (GUIDs; on an
    /// InfiniBand port also its state and LIDs), QUERY_VPORT_STATE (an
    /// Ethernet port's state) and a PMTU read per port for the MTUs. A
    /// query the firmware fails with a status (older firmware, an opcode
    /// it does not know) leaves what it would have told `None`; any other
    /// command error fails `devinfo`. PCI identity (`vendor_part_id`,
    /// `hw_ver`) is left `None` for the host to fill in.
    pub fn devinfo(&mut self) -> Result<DevInfo, DeviceError> {
        let c = self.hca;
        let link_layer = LinkLayer::from_port_type(c.port_type);
        let adapter = soft(self.query_adapter())?;
        // Ethernet: one vport state for the function, reported per port.
        let eth_state = if link_layer == LinkLayer::InfiniBand {
            None
        } else {
            let (state, _) = self.query_vport_state()?;
            Some(match state {
                0 => PortState::Down,
                1 => PortState::Active,
                o => PortState::Other(o),
            })
        };
        let (mut node_guid, mut sys_image_guid) = (None, None);
        if link_layer != LinkLayer::InfiniBand {
            if let Some(v) = soft(self.query_nic_vport_context())? {
                node_guid = Some(v.node_guid);
                sys_image_guid = Some(v.system_image_guid);
            }
        }
        let max_msg_sz = HcaCaps::pow2(c.log_max_msg);
        let mut ports = heapless::Vec::new();
        for p in 1..=c.num_ports.clamp(1, 4) {
            let (info, guids) = self.devinfo_port(p, link_layer, eth_state, max_msg_sz)?;
            if p == 1 {
                if let Some((node, sys_image)) = guids {
                    node_guid = Some(node);
                    sys_image_guid = Some(sys_image);
                }
            }
            let _ = ports.push(info);
        }
        let max_qp = HcaCaps::pow2(c.log_max_qp);
        let max_qp_rd_atom = HcaCaps::pow2(c.log_max_ra_req_qp);
        Ok(DevInfo {
            fw_ver: self.fw,
            node_guid,
            sys_image_guid,
            vendor_id: adapter.map(|a| a.ieee_vendor_id),
            vendor_part_id: None,
            hw_ver: None,
            adapter,
            phys_port_cnt: c.num_ports,
            max_mr_size: u64::MAX,
            page_size_cap: (c.log_pg_sz < 64).then(|| !((1u64 << c.log_pg_sz) - 1)),
            max_qp,
            max_qp_wr: HcaCaps::pow2(c.log_max_qp_sz),
            max_sge: c.max_sge(),
            max_sge_rd: crate::cmd::caps::MAX_SGE_RD,
            max_cq: HcaCaps::pow2(c.log_max_cq),
            max_cqe: HcaCaps::pow2(c.log_max_cq_sz).saturating_sub(1),
            max_mr: HcaCaps::pow2(c.log_max_mkey),
            max_pd: HcaCaps::pow2(c.log_max_pd),
            max_qp_rd_atom,
            max_qp_init_rd_atom: HcaCaps::pow2(c.log_max_ra_res_qp),
            max_res_rd_atom: max_qp_rd_atom.saturating_mul(max_qp),
            max_srq: HcaCaps::pow2(c.log_max_srq),
            max_srq_wr: HcaCaps::pow2(c.log_max_srq_sz).saturating_sub(1),
            max_srq_sge: c.max_srq_sge(),
            caps: c,
            ports,
        })
    }

    /// One port of [`Device::devinfo`]: the PMTU read for its MTUs and, on
    /// an InfiniBand port, the HCA vport context for its state, LIDs and
    /// IB attributes. Also returns that context's node and system image
    /// GUIDs when it was read.
    fn devinfo_port(
        &mut self,
        p: u8,
        link_layer: LinkLayer,
        eth_state: Option<PortState>,
        max_msg_sz: u32,
    ) -> Result<(PortInfo, Option<(u64, u64)>), DeviceError> {
        let mut guids = None;
        let (active_mtu, max_mtu) = match soft(self.query_pmtu(p))? {
            Some(r) => (
                port_mtu(link_layer, r.oper_mtu).map(ops::IbMtu::bytes),
                port_mtu(link_layer, r.max_mtu).map(ops::IbMtu::bytes),
            ),
            None => (None, None),
        };
        let mut info = PortInfo {
            port: p,
            state: eth_state.unwrap_or(PortState::Other(0)),
            link_layer,
            active_mtu,
            max_mtu,
            sm_lid: Some(0),
            lid: Some(0),
            lmc: Some(0),
            max_msg_sz,
            ib: None,
        };
        if link_layer == LinkLayer::InfiniBand {
            match soft(self.query_hca_vport_context(p))? {
                Some(h) => {
                    info.state = PortState::from_ib(h.vport_state);
                    info.sm_lid = Some(h.sm_lid);
                    info.lid = Some(h.lid);
                    info.lmc = Some(h.lmc);
                    info.ib = Some(IbPortInfo {
                        sm_sl: h.sm_sl,
                        subnet_timeout: h.subnet_timeout,
                        init_type_reply: h.init_type_reply,
                        phys_state: h.port_physical_state,
                        bad_pkey_cntr: h.pkey_violation_counter,
                        qkey_viol_cntr: h.qkey_violation_counter,
                    });
                    guids = Some((h.node_guid, h.system_image_guid));
                }
                None => {
                    info.sm_lid = None;
                    info.lid = None;
                    info.lmc = None;
                }
            }
        }
        Ok((info, guids))
    }
}
