//! `manage_pages_in`: MANAGE_PAGES's input (`mlx5_ifc.h`
//! `mlx5_ifc_manage_pages_in_bits`; [ref §7.7](crate::reference)).

use crate::cmd::bits::Field;

/// `function_id` (`dw2[15:0]`, byte 0x0a).
pub const FUNCTION_ID: Field = Field::new(2, 15, 0);
/// `input_num_entries` (`dw3`, byte 0x0c): pages given (GIVE) or asked
/// back (TAKE).
pub const INPUT_NUM_ENTRIES: Field = Field::new(3, 31, 0);
/// Byte offset of `pas[]`: the BE64 page addresses a GIVE carries.
pub const PAS: usize = 0x10;
