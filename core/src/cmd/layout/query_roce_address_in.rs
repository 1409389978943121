//! `query_roce_address_in`: QUERY_ROCE_ADDRESS's input (`mlx5_ifc.h`
//! `mlx5_ifc_query_roce_address_in_bits`; [ref §7.15](crate::reference)),
//! relative to the start of the message.

use crate::cmd::bits::Field;

/// Bytes of the input.
pub const LEN: usize = 0x10;
/// `roce_address_index` (`dw2[31:16]`).
pub const ROCE_ADDRESS_INDEX: Field = Field::new(2, 31, 16);
/// `vhca_port_num` (`dw2[3:0]`).
pub const VHCA_PORT_NUM: Field = Field::new(2, 3, 0);
