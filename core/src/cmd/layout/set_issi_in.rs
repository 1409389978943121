//! `set_issi_in`: SET_ISSI's input (`mlx5_ifc.h`
//! `mlx5_ifc_set_issi_in_bits`; [ref §7.6](crate::reference) step 5).

use crate::cmd::bits::Field;

/// `current_issi` (`dw2[15:0]`, byte 0x0a): the ISSI to use.
pub const CURRENT_ISSI: Field = Field::new(2, 15, 0);
