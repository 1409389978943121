//! The HCA vport context of an InfiniBand port:
//! QUERY_HCA_VPORT_CONTEXT and the fields `ibv_devinfo` shows.

use super::{hdr, Req, HDR_LEN};
use crate::cmd::bits::Field;
use crate::cmd::layout::hca_vport;
use crate::cmd::op;

/// Byte offset of `hca_vport_context` in QUERY_HCA_VPORT_CONTEXT's output.
pub const QUERY_HCA_VPORT_CTX_OFFSET: usize = 0x10;

/// Bytes of `hca_vport_context` read (the fields parsed end at 0x6c; linux
/// `mlx5_ifc.h` hca_vport_context is 0x100 bytes).
pub const HCA_VPORT_CTX_LEN: usize = 0x100;

/// QUERY_HCA_VPORT_CONTEXT (0x762) of the own vport on 1-based `port`
/// (linux `drivers/net/ethernet/mellanox/mlx5/core/vport.c`
/// mlx5_query_hca_vport_context: `port_num` in `dw2[19:16]`, set only on
/// two-port devices; `None` leaves it 0).
pub fn query_hca_vport_context(b: &mut [u8], port: Option<u8>) -> Req {
    let in_len = HDR_LEN;
    hdr(b, op::QUERY_HCA_VPORT_CONTEXT, 0, in_len);
    // The function's own vport.
    hca_vport::IN_OTHER_VPORT.set(b, 0, 0);
    hca_vport::IN_VPORT_NUMBER.set(b, 0, 0);
    if let Some(p) = port {
        hca_vport::IN_PORT_NUM.set(b, 0, p as u32);
    }
    Req {
        opcode: op::QUERY_HCA_VPORT_CONTEXT,
        in_len,
        out_len: QUERY_HCA_VPORT_CTX_OFFSET + HCA_VPORT_CTX_LEN,
    }
}

/// The `hca_vport_context` fields `ibv_devinfo` shows for an InfiniBand
/// port (linux `mlx5_ifc.h` hca_vport_context; `mlx5_query_hca_port` in
/// `drivers/infiniband/hw/mlx5/main.c` copies them into ib_port_attr).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HcaVportContext {
    /// Physical port state (`dw8[15:12]`; 5 = LinkUp).
    pub port_physical_state: u8,
    /// Port state (`dw8[7:4]`).
    pub port_state: u8,
    /// Vport state (`dw8[3:0]`): the IB port state the kernel reports
    /// (1 Down, 2 Init, 3 Armed, 4 Active).
    pub vport_state: u8,
    /// System image GUID (byte 0x28).
    pub system_image_guid: u64,
    /// Port GUID (byte 0x30).
    pub port_guid: u64,
    /// Node GUID (byte 0x38).
    pub node_guid: u64,
    /// Capability mask 1 (byte 0x40).
    pub cap_mask1: u32,
    /// LID (`dw24[31:16]`).
    pub lid: u16,
    /// InitTypeReply (`dw24[11:8]`).
    pub init_type_reply: u8,
    /// LMC (`dw24[7:5]`).
    pub lmc: u8,
    /// Subnet timeout (`dw24[4:0]`).
    pub subnet_timeout: u8,
    /// Subnet manager LID (`dw25[31:16]`).
    pub sm_lid: u16,
    /// Subnet manager SL (`dw25[15:12]`).
    pub sm_sl: u8,
    /// Q_Key violation counter (`dw26[31:16]`).
    pub qkey_violation_counter: u16,
    /// P_Key violation counter (`dw26[15:0]`).
    pub pkey_violation_counter: u16,
}

/// Parses a `hca_vport_context` (starting at byte 0 of `ctx`); short input
/// reads as zeros.
pub fn parse_hca_vport_context(ctx: &[u8]) -> HcaVportContext {
    use hca_vport as h;
    let f = |field: Field| field.get(ctx, 0);
    HcaVportContext {
        port_physical_state: f(h::PORT_PHYSICAL_STATE) as u8,
        port_state: f(h::PORT_STATE) as u8,
        vport_state: f(h::VPORT_STATE) as u8,
        system_image_guid: h::SYSTEM_IMAGE_GUID.get(ctx, 0),
        port_guid: h::PORT_GUID.get(ctx, 0),
        node_guid: h::NODE_GUID.get(ctx, 0),
        cap_mask1: f(h::CAP_MASK1),
        lid: f(h::LID) as u16,
        init_type_reply: f(h::INIT_TYPE_REPLY) as u8,
        lmc: f(h::LMC) as u8,
        subnet_timeout: f(h::SUBNET_TIMEOUT) as u8,
        sm_lid: f(h::SM_LID) as u16,
        sm_sl: f(h::SM_SL) as u8,
        qkey_violation_counter: f(h::QKEY_VIOLATION_COUNTER) as u16,
        pkey_violation_counter: f(h::PKEY_VIOLATION_COUNTER) as u16,
    }
}
