//! `query_issi_out`: QUERY_ISSI's output (`mlx5_ifc.h`
//! `mlx5_ifc_query_issi_out_bits`; [ref §7.6](crate::reference) step 5).

use crate::cmd::bits::Field;

/// `current_issi` (`dw2[15:0]`, byte 0x0a).
pub const CURRENT_ISSI: Field = Field::new(2, 15, 0);
/// `supported_issi_dw0` (`dw27`, byte 0x6c, after 76 reserved bytes from
/// 0x20): bit `n` set = ISSI `n` supported.
pub const SUPPORTED_ISSI_DW0: Field = Field::new(27, 31, 0);
/// Bytes of the output (`supported_issi_dw0` is its last dword).
pub const LEN: usize = 0x70;
