//! `nic_vport_context` (`mlx5_ifc.h` `mlx5_ifc_nic_vport_context_bits`),
//! as QUERY/MODIFY_NIC_VPORT_CONTEXT carry it.

use crate::cmd::bits::{Field, Field64};

/// `roce_en`.
pub const ROCE_EN: Field = Field::new(0, 0, 0);
/// `mtu`.
pub const MTU: Field = Field::new(9, 15, 0);
/// `system_image_guid` (bit 0x140, after the 16-bit `mtu`).
pub const SYSTEM_IMAGE_GUID: Field64 = Field64::new(0x28);
/// `port_guid`.
pub const PORT_GUID: Field64 = Field64::new(0x30);
/// `node_guid`.
pub const NODE_GUID: Field64 = Field64::new(0x38);
/// Byte offset of `permanent_address`'s 6 MAC bytes (the low 48 bits of
/// the 64-bit field at 0xf4).
pub const PERMANENT_MAC: usize = 0xf6;
