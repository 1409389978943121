//! The HOST_ENDIANNESS register written through ACCESS_REG (linux
//! `struct mlx5_reg_host_endianness` in `include/linux/mlx5/driver.h`,
//! rdma-core `providers/mlx5/mlx5_vfio.h`: `u8 he; u8 rsvd[15]`;
//! [ref §7.6](crate::reference) step 7).

use crate::cmd::bits::Field;

/// `he` (`dw0[31:24]`, the register's first byte): 0x00 little-endian
/// host, 0x80 big-endian.
pub const HE: Field = Field::new(0, 31, 24);
/// Bytes of the register.
pub const LEN: usize = 0x10;
