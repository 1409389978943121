//! The input of the QP transitions RST2INIT_QP, INIT2RTR_QP and
//! RTR2RTS_QP outside its [`super::qpc`]: the three `mlx5_ifc.h`
//! structures `mlx5_ifc_rst2init_qp_in_bits`,
//! `mlx5_ifc_init2rtr_qp_in_bits` and `mlx5_ifc_rtr2rts_qp_in_bits` share
//! this layout ([ref §6.3, §7.11](crate::reference)). The QP number is
//! [`super::cmd_in::OBJ_ID`].

use crate::cmd::bits::Field;

/// `opt_param_mask` (`dw4`, byte 0x10): the optional qpc fields the
/// transition sets, one bit each.
pub const OPT_PARAM_MASK: Field = Field::new(4, 31, 0);
