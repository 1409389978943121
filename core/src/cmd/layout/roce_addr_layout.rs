//! `roce_addr_layout`: one GID table entry as SET_ROCE_ADDRESS and
//! QUERY_ROCE_ADDRESS carry it (`mlx5_ifc.h`
//! `mlx5_ifc_roce_addr_layout_bits`; [ref §7.15](crate::reference)),
//! relative to the start of the entry.

use crate::cmd::bits::Field;

/// Bytes of the entry.
pub const LEN: usize = 0x20;
/// `source_l3_address`: the 16-byte GID in wire order, at byte 0.
pub const SOURCE_L3_ADDRESS: usize = 0x00;
/// `vlan_valid` (`dw4[28]`).
pub const VLAN_VALID: Field = Field::new(4, 28, 28);
/// `vlan_id` (`dw4[27:16]`).
pub const VLAN_ID: Field = Field::new(4, 27, 16);
/// `source_mac_47_32` (`dw4[15:0]`): the MAC's first two bytes; the six
/// MAC bytes are bytes 0x12..0x18 in wire order.
pub const SOURCE_MAC_47_32: Field = Field::new(4, 15, 0);
/// `source_mac_31_0` (`dw5`): the MAC's last four bytes.
pub const SOURCE_MAC_31_0: Field = Field::new(5, 31, 0);
/// `roce_l3_type` (`dw6[11:8]`): [`L3_TYPE_IPV4`] or [`L3_TYPE_IPV6`].
pub const ROCE_L3_TYPE: Field = Field::new(6, 11, 8);
/// `roce_version` (`dw6[7:0]`): [`ROCE_VERSION_1`] or [`ROCE_VERSION_2`].
pub const ROCE_VERSION: Field = Field::new(6, 7, 0);
/// `MLX5_ROCE_VERSION_1`.
pub const ROCE_VERSION_1: u32 = 0;
/// `MLX5_ROCE_VERSION_2`.
pub const ROCE_VERSION_2: u32 = 2;
/// `MLX5_ROCE_L3_TYPE_IPV4`.
pub const L3_TYPE_IPV4: u32 = 0;
/// `MLX5_ROCE_L3_TYPE_IPV6`.
pub const L3_TYPE_IPV6: u32 = 1;
