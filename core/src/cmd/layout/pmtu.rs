//! `pmtu_reg`: the port MTU register read through ACCESS_REG (`mlx5_ifc.h`
//! `mlx5_ifc_pmtu_reg_bits`).

use crate::cmd::bits::Field;

/// `local_port`: the 1-based port.
pub const LOCAL_PORT: Field = Field::new(0, 23, 16);
/// `max_mtu`.
pub const MAX_MTU: Field = Field::new(1, 31, 16);
/// `admin_mtu`.
pub const ADMIN_MTU: Field = Field::new(2, 31, 16);
/// `oper_mtu`.
pub const OPER_MTU: Field = Field::new(3, 31, 16);
