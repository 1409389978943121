//! The function's own NIC vport: QUERY_VPORT_STATE, and the NIC vport
//! context (RoCE enable, MTU, GUIDs, MAC) of QUERY/MODIFY_NIC_VPORT_CONTEXT.

use super::{hdr, simple, Req, HDR_LEN};
use crate::cmd::layout::{modify_nic_vport_context_in, nic_vport, query_vport_state_out};
use crate::cmd::op;

/// QUERY_VPORT_STATE (0x750) for the function's own vport; output state
/// in the low nibble of byte 0x0f, admin state in the high nibble (linux
/// `mlx5_ifc.h` query_vport_state_out).
pub fn query_vport_state(b: &mut [u8]) -> Req {
    simple(b, op::QUERY_VPORT_STATE, 0)
}

/// QUERY_VPORT_STATE output: (state, admin_state); 1 = up, 0 = down
/// ([`query_vport_state_out`]).
pub fn parse_query_vport_state(out: &[u8]) -> (u8, u8) {
    (
        query_vport_state_out::STATE.get(out, 0) as u8,
        query_vport_state_out::ADMIN_STATE.get(out, 0) as u8,
    )
}

/// Byte offset of `nic_vport_context` in MODIFY_NIC_VPORT_CONTEXT's input
/// (after the 0x780-bit reserved area; linux `mlx5_ifc.h`
/// modify_nic_vport_context_in).
pub use modify_nic_vport_context_in::NIC_VPORT_CONTEXT as MODIFY_VPORT_CTX_OFFSET;

/// Byte offset of `nic_vport_context` in QUERY_NIC_VPORT_CONTEXT's output.
pub const QUERY_VPORT_CTX_OFFSET: usize = 0x10;

/// Bytes of `nic_vport_context` without its trailing address list.
pub const VPORT_CTX_LEN: usize = 0x100;

/// `field_select.roce_en` (bit 1 of the BE32 at byte 0x0c).
pub use modify_nic_vport_context_in::FIELD_SELECT_ROCE_EN;

/// MODIFY_NIC_VPORT_CONTEXT (0x755) setting only `roce_en` of the own
/// vport: field_select.roce_en at 0x0c, nic_vport_context at 0x100 with
/// roce_en in bit 0 of its first dword (linux `mlx5_ifc.h`
/// modify_nic_vport_context_in / nic_vport_context; [ref §7.6](crate::reference): VFIO sets
/// roce_en = 1 on Ethernet ports after INIT_HCA — without it the NIC
/// refuses RDMA QPs on the port and treats RoCE packets as plain Ethernet).
pub fn modify_nic_vport_roce(b: &mut [u8], enable: bool) -> Req {
    let in_len = MODIFY_VPORT_CTX_OFFSET + VPORT_CTX_LEN;
    hdr(b, op::MODIFY_NIC_VPORT_CONTEXT, 0, in_len);
    modify_nic_vport_context_in::FIELD_SELECT.set(b, 0, FIELD_SELECT_ROCE_EN);
    nic_vport::ROCE_EN.set(b, MODIFY_VPORT_CTX_OFFSET, enable as u32);
    Req {
        opcode: op::MODIFY_NIC_VPORT_CONTEXT,
        in_len,
        out_len: HDR_LEN,
    }
}

/// QUERY_NIC_VPORT_CONTEXT (0x754) of the own vport.
pub fn query_nic_vport_context(b: &mut [u8]) -> Req {
    hdr(b, op::QUERY_NIC_VPORT_CONTEXT, 0, HDR_LEN);
    Req {
        opcode: op::QUERY_NIC_VPORT_CONTEXT,
        in_len: HDR_LEN,
        out_len: QUERY_VPORT_CTX_OFFSET + VPORT_CTX_LEN,
    }
}

/// The `nic_vport_context` fields the driver uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NicVportContext {
    /// RoCE enabled on the vport (dw0 bit 0).
    pub roce_en: bool,
    /// Port MTU (bytes; bits 15:0 at byte 0x24).
    pub mtu: u16,
    /// System image GUID (64 bits at byte 0x28; linux
    /// `mlx5_query_nic_vport_system_image_guid`, what `ibv_devinfo` prints
    /// as `sys_image_guid` on an Ethernet port).
    pub system_image_guid: u64,
    /// Port GUID (64 bits at byte 0x30).
    pub port_guid: u64,
    /// Node GUID (64 bits at byte 0x38; linux
    /// `mlx5_query_nic_vport_node_guid`, `ibv_devinfo`'s `node_guid` on an
    /// Ethernet port).
    pub node_guid: u64,
    /// Permanent MAC address (mac_47_32 at 0xF6, mac_31_0 at 0xF8).
    pub permanent_mac: [u8; 6],
}

/// Parses a `nic_vport_context` (starting at byte 0 of `ctx`); short input
/// reads as zeros.
pub fn parse_nic_vport_context(ctx: &[u8]) -> NicVportContext {
    let mut permanent_mac = [0u8; 6];
    for (i, m) in permanent_mac.iter_mut().enumerate() {
        *m = ctx.get(nic_vport::PERMANENT_MAC + i).copied().unwrap_or(0);
    }
    NicVportContext {
        roce_en: nic_vport::ROCE_EN.get(ctx, 0) != 0,
        mtu: nic_vport::MTU.get(ctx, 0) as u16,
        system_image_guid: nic_vport::SYSTEM_IMAGE_GUID.get(ctx, 0),
        port_guid: nic_vport::PORT_GUID.get(ctx, 0),
        node_guid: nic_vport::NODE_GUID.get(ctx, 0),
        permanent_mac,
    }
}
