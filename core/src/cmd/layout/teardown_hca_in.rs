//! `teardown_hca_in`: TEARDOWN_HCA's input (`mlx5_ifc.h`
//! `mlx5_ifc_teardown_hca_in_bits`; [ref §7.6](crate::reference) teardown).

use crate::cmd::bits::Field;

/// `profile` (`dw2[15:0]`, byte 0x0a): 0 graceful close, 2 prepare fast
/// teardown.
pub const PROFILE: Field = Field::new(2, 15, 0);
