//! Ports: link layer, state, MTU and LID attributes ([`PortInfo`]), the
//! PMTU-to-IB-MTU rule ([`port_mtu`]) and the vport and PMTU queries
//! ([ref §3.11](crate::reference)).

use super::{Device, DeviceError, UarMap};
use crate::cmd::{ops, Bar0, Clock};
use crate::platform::DmaAllocator;

/// `cap.port_type` of an Ethernet port ([ref §3.11](crate::reference)).
pub const PORT_TYPE_ETHERNET: u8 = 1;

/// Link layer of a port (cap.port_type; [ref §3.11](crate::reference)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LinkLayer {
    /// InfiniBand.
    InfiniBand,
    /// Ethernet (RoCE).
    Ethernet,
    /// Another value.
    Other(u8),
}

impl LinkLayer {
    /// The link layer `cap.port_type` names (0 InfiniBand, 1 Ethernet).
    pub const fn from_port_type(t: u8) -> LinkLayer {
        match t {
            0 => LinkLayer::InfiniBand,
            PORT_TYPE_ETHERNET => LinkLayer::Ethernet,
            o => LinkLayer::Other(o),
        }
    }
}

/// Port state as `ibv_port_state` numbers it (`ibv_devinfo` prints
/// `PORT_ACTIVE (4)`). An Ethernet port's comes from QUERY_VPORT_STATE (up
/// → Active, down → Down), an InfiniBand port's from the HCA vport
/// context's `vport_state`, which uses these numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PortState {
    /// Down (1).
    Down,
    /// Initialize (2).
    Init,
    /// Armed (3).
    Armed,
    /// Active (4).
    Active,
    /// Another value: the number the device reported.
    Other(u8),
}

impl PortState {
    /// The `ibv_port_state` number (the device's own for [`PortState::Other`]).
    pub const fn code(self) -> u8 {
        match self {
            PortState::Down => 1,
            PortState::Init => 2,
            PortState::Armed => 3,
            PortState::Active => 4,
            PortState::Other(v) => v,
        }
    }
    /// The state for an `ibv_port_state` number (IB vport state).
    pub const fn from_ib(v: u8) -> PortState {
        match v {
            1 => PortState::Down,
            2 => PortState::Init,
            3 => PortState::Armed,
            4 => PortState::Active,
            o => PortState::Other(o),
        }
    }
}

/// The InfiniBand-only port attributes, from QUERY_HCA_VPORT_CONTEXT (linux
/// `mlx5_query_hca_port`); an Ethernet port has none of them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IbPortInfo {
    /// Subnet manager SL.
    pub sm_sl: u8,
    /// Subnet timeout.
    pub subnet_timeout: u8,
    /// InitTypeReply.
    pub init_type_reply: u8,
    /// Physical port state (`ibv_devinfo` phys_state; 5 = LINK_UP).
    pub phys_state: u8,
    /// P_Key violation counter.
    pub bad_pkey_cntr: u16,
    /// Q_Key violation counter.
    pub qkey_viol_cntr: u16,
}

/// One port in [`DevInfo`](super::DevInfo).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortInfo {
    /// 1-based port number.
    pub port: u8,
    /// State.
    pub state: PortState,
    /// Link layer.
    pub link_layer: LinkLayer,
    /// Active MTU in bytes (an IB MTU, 256 … 4096), from the PMTU
    /// register's `oper_mtu`: on an InfiniBand port the IB MTU it names, on
    /// an Ethernet (RoCE) port the RoCE MTU of its netdev MTU
    /// ([`ops::roce_mtu_of_hw_mtu`]). `None` when the firmware rejects the
    /// PMTU read (older firmware) or reports a value with no IB MTU.
    pub active_mtu: Option<u32>,
    /// Maximum MTU in bytes, from PMTU `max_mtu` by the same rule as
    /// `active_mtu`.
    pub max_mtu: Option<u32>,
    /// Subnet manager LID: from the HCA vport context on an InfiniBand
    /// port, 0 on an Ethernet port (linux `mlx5_query_port_roce` leaves it
    /// 0); `None` when the firmware refused the query.
    pub sm_lid: Option<u16>,
    /// The port's LID, by the same rule as `sm_lid`.
    pub lid: Option<u16>,
    /// The LID mask count, by the same rule as `sm_lid`.
    pub lmc: Option<u8>,
    /// Largest message (`1 << log_max_msg`).
    pub max_msg_sz: u32,
    /// InfiniBand-only attributes (`None` on Ethernet or when the query
    /// failed).
    pub ib: Option<IbPortInfo>,
}

impl PortInfo {
    /// `active_mtu` as an [`ops::IbMtu`] (for its enum code, as
    /// `ibv_devinfo` prints `4096 (5)`).
    pub fn active_ib_mtu(&self) -> Option<ops::IbMtu> {
        self.active_mtu.and_then(ops::IbMtu::from_bytes)
    }
    /// `max_mtu` as an [`ops::IbMtu`].
    pub fn max_ib_mtu(&self) -> Option<ops::IbMtu> {
        self.max_mtu.and_then(ops::IbMtu::from_bytes)
    }
}

/// The IB MTU a port reports for a PMTU value (bytes): on an InfiniBand
/// port the IB MTU of exactly that size (linux `mlx5_ib` main.c
/// mlx5_mtu_to_ib_mtu), on an Ethernet port the RoCE MTU of the hardware
/// MTU ([`ops::roce_mtu_of_hw_mtu`], linux iboe_get_mtu). Other link layers:
/// `None`.
pub fn port_mtu(link_layer: LinkLayer, pmtu_bytes: u16) -> Option<ops::IbMtu> {
    match link_layer {
        LinkLayer::InfiniBand => ops::IbMtu::from_bytes(pmtu_bytes as u32),
        LinkLayer::Ethernet => ops::roce_mtu_of_hw_mtu(pmtu_bytes as u32),
        LinkLayer::Other(_) => None,
    }
}

impl<B: Bar0 + UarMap, C: Clock, A: DmaAllocator> Device<B, C, A> {
    /// QUERY_VPORT_STATE: (state, admin_state).
    pub fn query_vport_state(&mut self) -> Result<(u8, u8), DeviceError> {
        let r = ops::query_vport_state(&mut self.inb);
        self.exec(r)?;
        Ok(ops::parse_query_vport_state(&self.outb))
    }

    /// ACCESS_REG read of the PMTU register of 1-based `port`
    /// ([`ops::query_pmtu`]).
    pub fn query_pmtu(&mut self, port: u8) -> Result<ops::Pmtu, DeviceError> {
        let r = ops::query_pmtu(&mut self.inb, port);
        self.exec(r)?;
        Ok(ops::parse_pmtu(&self.outb))
    }

    /// QUERY_NIC_VPORT_CONTEXT of the own vport.
    pub fn query_nic_vport_context(&mut self) -> Result<ops::NicVportContext, DeviceError> {
        let r = ops::query_nic_vport_context(&mut self.inb);
        self.exec(r)?;
        let at = ops::QUERY_VPORT_CTX_OFFSET;
        let end = (at + ops::VPORT_CTX_LEN).min(self.outb.len());
        Ok(ops::parse_nic_vport_context(&self.outb[at..end]))
    }

    /// QUERY_HCA_VPORT_CONTEXT of the own vport on 1-based `port` (the
    /// port number is sent only on a two-port device, as linux does).
    pub fn query_hca_vport_context(
        &mut self,
        port: u8,
    ) -> Result<ops::HcaVportContext, DeviceError> {
        let p = (self.hca.num_ports == 2).then_some(port);
        let r = ops::query_hca_vport_context(&mut self.inb, p);
        self.exec(r)?;
        let at = ops::QUERY_HCA_VPORT_CTX_OFFSET;
        let end = (at + ops::HCA_VPORT_CTX_LEN).min(self.outb.len());
        Ok(ops::parse_hca_vport_context(&self.outb[at..end]))
    }
}
