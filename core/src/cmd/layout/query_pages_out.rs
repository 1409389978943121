//! `query_pages_out`: QUERY_PAGES's output (`mlx5_ifc.h`
//! `mlx5_ifc_query_pages_out_bits`; [ref §7.7](crate::reference)).

use crate::cmd::bits::Field;

/// `function_id` (`dw2[15:0]`, byte 0x0a).
pub const FUNCTION_ID: Field = Field::new(2, 15, 0);
/// `num_pages` (`dw3`, byte 0x0c): signed; negative = firmware returns
/// pages.
pub const NUM_PAGES: Field = Field::new(3, 31, 0);
