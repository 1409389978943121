//! `set_roce_address_in`: SET_ROCE_ADDRESS's input (`mlx5_ifc.h`
//! `mlx5_ifc_set_roce_address_in_bits`; [ref §7.15](crate::reference)),
//! relative to the start of the message; the entry is a
//! [`super::roce_addr_layout`] at [`ROCE_ADDRESS`].

use crate::cmd::bits::Field;

/// Bytes of the input.
pub const LEN: usize = 0x30;
/// `roce_address_index` (`dw2[31:16]`): the GID table index.
pub const ROCE_ADDRESS_INDEX: Field = Field::new(2, 31, 16);
/// `vhca_port_num` (`dw2[3:0]`): set only when the device has
/// `num_vhca_ports` > 0.
pub const VHCA_PORT_NUM: Field = Field::new(2, 3, 0);
/// Offset of the `roce_address` entry.
pub const ROCE_ADDRESS: usize = 0x10;
