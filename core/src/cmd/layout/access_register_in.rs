//! `access_register_in`/`access_register_out`: ACCESS_REG's input and
//! output (`mlx5_ifc.h` `mlx5_ifc_access_register_in_bits`,
//! `mlx5_ifc_access_register_out_bits`; [ref §7.6](crate::reference)
//! step 7).

use crate::cmd::bits::Field;

/// `register_id` (`dw2[15:0]`, byte 0x0a of the input).
pub const REGISTER_ID: Field = Field::new(2, 15, 0);
/// `argument` (`dw3`, byte 0x0c of the input).
pub const ARGUMENT: Field = Field::new(3, 31, 0);
/// Byte offset of `register_data[]`, the same in the input and the
/// output.
pub const REGISTER_DATA: usize = 0x10;
