//! `modify_nic_vport_context_in`: MODIFY_NIC_VPORT_CONTEXT's input
//! outside its [`super::nic_vport`] context (`mlx5_ifc.h`
//! `mlx5_ifc_modify_nic_vport_context_in_bits` and its
//! `mlx5_ifc_modify_nic_vport_field_select_bits`).

use crate::cmd::bits::Field;

/// `field_select` (`dw3`, byte 0x0c): which context fields the command
/// sets, one bit each.
pub const FIELD_SELECT: Field = Field::new(3, 31, 0);
/// `field_select.roce_en`: bit 0x1e of the field-select structure, i.e.
/// bit 1 of the [`FIELD_SELECT`] word.
pub const FIELD_SELECT_ROCE_EN: u32 = 1 << 1;
/// Byte offset of `nic_vport_context` (bit 0x800: after the 0x780-bit
/// reserved area).
pub const NIC_VPORT_CONTEXT: usize = 0x100;
