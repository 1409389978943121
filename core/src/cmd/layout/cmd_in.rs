//! `mbox_in`/`mbox_out`: the command header fields common to every message
//! (`opcode` and `op_mod` as [ref §7.5](crate::reference) lays them out)
//! and the object numbers most object commands carry in `dw2`.

use crate::cmd::bits::Field;

/// `opcode` (`dw0[31:16]`).
pub const OPCODE: Field = Field::new(0, 31, 16);
/// `op_mod` (`dw1[15:0]`).
pub const OP_MOD: Field = Field::new(1, 15, 0);
/// The object number (qpn, cqn, srqn, pd, uar, mkey index …) of
/// DESTROY/QUERY/MODIFY commands and of CREATE outputs (`dw2[23:0]`).
pub const OBJ_ID: Field = Field::new(2, 23, 0);
/// `eq_number`: the EQ of DESTROY_EQ's input and of CREATE_EQ's output
/// (`mlx5_ifc_destroy_eq_in_bits`, `mlx5_ifc_create_eq_out_bits`:
/// `dw2[7:0]`).
pub const EQ_NUMBER: Field = Field::new(2, 7, 0);
