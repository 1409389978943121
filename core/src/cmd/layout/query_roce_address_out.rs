//! `query_roce_address_out`: QUERY_ROCE_ADDRESS's output (`mlx5_ifc.h`
//! `mlx5_ifc_query_roce_address_out_bits`; [ref §7.15](crate::reference)):
//! the header, 8 reserved bytes, then the [`super::roce_addr_layout`] at
//! [`ROCE_ADDRESS`].

/// Bytes of the output.
pub const LEN: usize = 0x30;
/// Offset of the `roce_address` entry.
pub const ROCE_ADDRESS: usize = 0x10;
