//! `query_adapter_param_block`: the adapter identity QUERY_ADAPTER
//! returns (`mlx5_ifc.h` `mlx5_ifc_query_adapter_param_block_bits`), at
//! [`super::query_adapter_out::QUERY_ADAPTER_STRUCT`].

use crate::cmd::bits::Field;

/// `ieee_vendor_id` (`dw6[23:0]`: the low three bytes of the dword at
/// byte 0x18).
pub const IEEE_VENDOR_ID: Field = Field::new(6, 23, 0);
/// Byte offset of `vsd_contd_psid`, the board's PSID (after
/// `vsd_vendor_id` and 208 bytes of `vsd`); linux `mlx5_query_board_id`
/// copies it to the `board_id` sysfs file `ibv_devinfo` prints.
pub const VSD_CONTD_PSID: usize = 0xf0;
/// Bytes of `vsd_contd_psid`.
pub const VSD_CONTD_PSID_LEN: usize = 16;
/// Bytes of the whole block (`vsd_contd_psid` is its end).
pub const LEN: usize = 0x100;
