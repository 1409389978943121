//! `manage_pages_out`: MANAGE_PAGES's output (`mlx5_ifc.h`
//! `mlx5_ifc_manage_pages_out_bits`; [ref §7.7](crate::reference)).

use crate::cmd::bits::Field;

/// `output_num_entries` (`dw2`, byte 0x08): pages a TAKE returned.
pub const OUTPUT_NUM_ENTRIES: Field = Field::new(2, 31, 0);
/// Byte offset of `pas[]`: the BE64 page addresses a TAKE returns.
pub const PAS: usize = 0x10;
