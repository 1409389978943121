//! Capabilities: QUERY_HCA_CAP, SET_HCA_CAP, the capability types and
//! the RoCE capability bits ([ref §7.6](crate::reference)). The general
//! capability fields are [`crate::cmd::caps`].

use super::{hdr, simple, Req, HDR_LEN};
use crate::cmd::op;

/// Capability area in QUERY_HCA_CAP output / SET_HCA_CAP input. [ref §7.6](crate::reference).
pub const CAP_OFFSET: usize = 0x10;

/// Bytes of the capability area. [ref §7.6](crate::reference).
pub const CAP_LEN: usize = 0x1000;

/// Capability type ([ref §7.6](crate::reference)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u16)]
pub enum CapType {
    /// 0 general.
    General = 0,
    /// 2 ODP.
    Odp = 2,
    /// 3 atomic.
    Atomic = 3,
    /// 4 RoCE.
    Roce = 4,
    /// 0x20 general-2.
    General2 = 0x20,
}

/// The RoCE capability bits the driver uses (cap type 4, dword 0; linux
/// `mlx5_ifc.h` roce_cap: roce_apm bit 31, sw_r_roce_src_udp_port bit 27,
/// fl_rc_qp_when_roce_disabled bit 26, fl_rc_qp_when_roce_enabled bit 25).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RoceCaps {
    /// The RoCE UDP source port may be set by software.
    pub sw_r_roce_src_udp_port: bool,
    /// RC QPs may use force-loopback (`fl`) while RoCE is disabled.
    pub fl_rc_qp_when_roce_disabled: bool,
    /// RC QPs may use force-loopback (`fl`) while RoCE is enabled.
    pub fl_rc_qp_when_roce_enabled: bool,
}

/// Parses the RoCE capability area (QUERY_HCA_CAP output from
/// [`CAP_OFFSET`]); short input reads as zeros.
pub fn parse_roce_caps(cap: &[u8]) -> RoceCaps {
    let b0 = cap.first().copied().unwrap_or(0);
    RoceCaps {
        sw_r_roce_src_udp_port: b0 & 0x08 != 0,
        fl_rc_qp_when_roce_disabled: b0 & 0x04 != 0,
        fl_rc_qp_when_roce_enabled: b0 & 0x02 != 0,
    }
}

/// QUERY_HCA_CAP (0x100), op_mod = (type << 1) | current. [ref §7.6](crate::reference).
pub fn query_hca_cap(b: &mut [u8], cap: CapType, current: bool) -> Req {
    let mut r = simple(b, op::QUERY_HCA_CAP, ((cap as u16) << 1) | current as u16);
    r.out_len = CAP_OFFSET + CAP_LEN;
    r
}

/// SET_HCA_CAP (0x109), op_mod = type << 1, capability copied from `caps`
/// (at most 4096 bytes) to byte 0x10. [ref §7.6](crate::reference) step 8.
pub fn set_hca_cap(b: &mut [u8], cap: CapType, caps: &[u8]) -> Req {
    let in_len = CAP_OFFSET + CAP_LEN;
    hdr(b, op::SET_HCA_CAP, (cap as u16) << 1, in_len);
    let n = caps.len().min(CAP_LEN);
    if let Some(d) = b.get_mut(CAP_OFFSET..CAP_OFFSET + n) {
        d.copy_from_slice(&caps[..n]);
    }
    Req {
        opcode: op::SET_HCA_CAP,
        in_len,
        out_len: HDR_LEN,
    }
}
