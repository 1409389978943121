//! `rmpc`: the receive memory pool context of CREATE_RMP (`mlx5_ifc.h`
//! `mlx5_ifc_rmpc_bits`; [ref §7.13](crate::reference)), relative to the
//! start of the context. Its work queue is a [`super::wq`] at [`WQ`].

use crate::cmd::bits::Field;

/// `state` (`dw0[23:20]`): [`STATE_RDY`] or [`STATE_ERR`].
pub const STATE: Field = Field::new(0, 23, 20);
/// `basic_cyclic_rcv_wqe` (`dw1[31]`).
pub const BASIC_CYCLIC_RCV_WQE: Field = Field::new(1, 31, 31);
/// Offset of the `wq` in the context (after 0x30 bytes).
pub const WQ: usize = 0x30;
/// `MLX5_RMPC_STATE_RDY`.
pub const STATE_RDY: u32 = 1;
/// `MLX5_RMPC_STATE_ERR`.
pub const STATE_ERR: u32 = 3;
