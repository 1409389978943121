//! Registers through ACCESS_REG: the read/write op_mods, HOST_ENDIANNESS
//! (written at bring-up) and PMTU, the port MTU register
//! ([ref §7.6](crate::reference) step 7).

use super::{hdr, Req};
use crate::cmd::layout::{access_register_in, host_endianness_reg, pmtu};
use crate::cmd::op;

/// ACCESS_REG op_mod for a register write (linux `mlx5_ifc.h`
/// access_register_in; [ref §7.6](crate::reference) step 7).
pub const ACCESS_REG_WRITE: u16 = 0;

/// ACCESS_REG op_mod for a register read (linux `mlx5_ifc.h`
/// access_register_in).
pub const ACCESS_REG_READ: u16 = 1;

/// Offset of the register data in ACCESS_REG input and output ([ref §7.6](crate::reference)
/// step 7; linux `mlx5_ifc.h` access_register_in/out).
pub use access_register_in::REGISTER_DATA as REG_DATA;

/// Register id of HOST_ENDIANNESS for ACCESS_REG. [ref §7.6](crate::reference) step 7.
pub const REG_HOST_ENDIANNESS: u16 = 0x7004;

/// ACCESS_REG (0x805) write of HOST_ENDIANNESS: register id at byte 0x0a,
/// argument 0 at 0x0c ([`access_register_in`]), register data from 0x10
/// whose first byte is `he` ([`host_endianness_reg::HE`]: 0x00
/// little-endian host, 0x80 big-endian). [ref §7.6](crate::reference) step 7.
pub fn set_host_endianness(b: &mut [u8]) -> Req {
    let in_len = REG_DATA + host_endianness_reg::LEN;
    hdr(b, op::ACCESS_REG, 0, in_len);
    access_register_in::REGISTER_ID.set(b, 0, REG_HOST_ENDIANNESS as u32);
    access_register_in::ARGUMENT.set(b, 0, 0);
    let he = if cfg!(target_endian = "big") {
        0x80
    } else {
        0x00
    };
    host_endianness_reg::HE.set(b, REG_DATA, he);
    Req {
        opcode: op::ACCESS_REG,
        in_len,
        out_len: REG_DATA + host_endianness_reg::LEN,
    }
}

/// Register id of PMTU, the port MTU register (linux
/// `include/linux/mlx5/driver.h` MLX5_REG_PMTU).
pub const REG_PMTU: u16 = 0x5003;

/// Bytes of the PMTU register (linux `mlx5_ifc.h` pmtu_reg: four dwords).
pub const PMTU_LEN: usize = 0x10;

/// ACCESS_REG (0x805) read of PMTU for 1-based `port`, as linux
/// `drivers/net/ethernet/mellanox/mlx5/core/port.c` (mlx5_query_port_mtu)
/// issues it: op_mod 1 (read), register_id 0x5003 at byte 0x0a, argument 0
/// at 0x0c, register data from 0x10 with `local_port` in `dw0[23:16]`
/// (byte 0x11). Output: header, then the register image at 0x10, parsed by
/// [`parse_pmtu`].
pub fn query_pmtu(b: &mut [u8], port: u8) -> Req {
    let in_len = REG_DATA + PMTU_LEN;
    hdr(b, op::ACCESS_REG, ACCESS_REG_READ, in_len);
    access_register_in::REGISTER_ID.set(b, 0, REG_PMTU as u32);
    access_register_in::ARGUMENT.set(b, 0, 0);
    pmtu::LOCAL_PORT.set(b, REG_DATA, port as u32);
    Req {
        opcode: op::ACCESS_REG,
        in_len,
        out_len: REG_DATA + PMTU_LEN,
    }
}

/// The PMTU register (linux `mlx5_ifc.h` pmtu_reg). All MTUs are in bytes;
/// on an Ethernet port they are hardware MTUs (netdev MTU + 22, see
/// [`ETH_HW_MTU_OVERHEAD`](super::ETH_HW_MTU_OVERHEAD)), on an InfiniBand port the IB MTU.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pmtu {
    /// 1-based local port (`dw0[23:16]`).
    pub local_port: u8,
    /// Largest MTU the port supports (`dw1[31:16]`).
    pub max_mtu: u16,
    /// MTU the administrator configured (`dw2[31:16]`).
    pub admin_mtu: u16,
    /// MTU in effect (`dw3[31:16]`).
    pub oper_mtu: u16,
}

/// Parses an ACCESS_REG PMTU read output (register image at byte 0x10;
/// layout of linux `mlx5_ifc.h` pmtu_reg). Short outputs read as zero.
pub fn parse_pmtu(out: &[u8]) -> Pmtu {
    Pmtu {
        local_port: pmtu::LOCAL_PORT.get(out, REG_DATA) as u8,
        max_mtu: pmtu::MAX_MTU.get(out, REG_DATA) as u16,
        admin_mtu: pmtu::ADMIN_MTU.get(out, REG_DATA) as u16,
        oper_mtu: pmtu::OPER_MTU.get(out, REG_DATA) as u16,
    }
}
