//! `mbox_out`: the header fields common to every command output
//! (`mlx5_ifc.h` `mlx5_ifc_mbox_out_bits`: `status`, `syndrome`;
//! [ref §7.5](crate::reference)) and the object-number dword of the
//! CREATE/ALLOC outputs.

use crate::cmd::bits::Field;

/// `status` (`dw0[31:24]`): 0 = OK, else a [`crate::cmd::CmdStatus`].
pub const STATUS: Field = Field::new(0, 31, 24);
/// `syndrome` (`dw1`): the firmware's reason code for a failed command.
pub const SYNDROME: Field = Field::new(1, 31, 0);
/// The whole dword 2 of an ALLOC_PD/ALLOC_UAR/CREATE_{MKEY,CQ,QP,SRQ}
/// output, reserved bits 31:24 included; the object number proper is
/// [`super::cmd_in::OBJ_ID`] (`dw2[23:0]`).
pub const OBJ_ID_DWORD: Field = Field::new(2, 31, 0);
