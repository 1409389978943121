//! `query_vport_state_out`: QUERY_VPORT_STATE's output (`mlx5_ifc.h`
//! `mlx5_ifc_query_vport_state_out_bits`).

use crate::cmd::bits::Field;

/// `admin_state` (`dw3[7:4]`, high nibble of byte 0x0f).
pub const ADMIN_STATE: Field = Field::new(3, 7, 4);
/// `state` (`dw3[3:0]`, low nibble of byte 0x0f): 1 = up, 0 = down.
pub const STATE: Field = Field::new(3, 3, 0);
