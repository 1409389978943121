//! `teardown_hca_out`: TEARDOWN_HCA's output (`mlx5_ifc.h`
//! `mlx5_ifc_teardown_hca_out_bits`).

use crate::cmd::bits::Field;

/// `state` (`dw3[0:0]`, bit 0 of byte 0x0f; `force_state` in older
/// headers): 1 = the fast teardown failed.
pub const STATE: Field = Field::new(3, 0, 0);
