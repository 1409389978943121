//! Capabilities: QUERY_HCA_CAP, SET_HCA_CAP, the capability types and
//! the RoCE capability bits ([ref §7.6](crate::reference)). The general
//! capability fields are [`crate::cmd::caps`].

use super::{hdr, simple, Req, HDR_LEN};
use crate::cmd::layout::{qpc, roce_cap};
use crate::cmd::op;

/// Capability area in QUERY_HCA_CAP output / SET_HCA_CAP input. [ref §7.6](crate::reference).
pub const CAP_OFFSET: usize = 0x10;

/// Bytes of the capability area. [ref §7.6](crate::reference).
pub const CAP_LEN: usize = 0x1000;

/// Capability type ([ref §7.6](crate::reference)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u16)]
#[non_exhaustive]
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

/// The RoCE capability fields the driver uses (cap type 4; the positions
/// are [`roce_cap`]'s). [ref §7.14](crate::reference).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RoceCaps {
    /// The RoCE UDP source port may be set by software.
    pub sw_r_roce_src_udp_port: bool,
    /// RC QPs may use force-loopback (`fl`) while RoCE is disabled.
    pub fl_rc_qp_when_roce_disabled: bool,
    /// RC QPs may use force-loopback (`fl`) while RoCE is enabled.
    pub fl_rc_qp_when_roce_enabled: bool,
    /// `qp_ts_format`: the timestamp formats QPs may use (0 free-running
    /// only, 1 real-time only, 2 both).
    pub qp_ts_format: u8,
    /// `l3_type` bits (1 IPv4, 2 IPv6).
    pub l3_type: u8,
    /// `roce_version` bits (bit 0 v1, bit 2 v2).
    pub roce_version: u8,
    /// GID table entries per port (`roce_address_table_size`).
    pub roce_address_table_size: u16,
}

/// Parses the RoCE capability area (QUERY_HCA_CAP output from
/// [`CAP_OFFSET`]); short input reads as zeros.
pub fn parse_roce_caps(cap: &[u8]) -> RoceCaps {
    let mut page = [0u8; roce_cap::LEN];
    let n = cap.len().min(roce_cap::LEN);
    page[..n].copy_from_slice(&cap[..n]);
    let g = |f: crate::cmd::bits::Field| f.get(&page, 0);
    RoceCaps {
        sw_r_roce_src_udp_port: g(roce_cap::SW_R_ROCE_SRC_UDP_PORT) != 0,
        fl_rc_qp_when_roce_disabled: g(roce_cap::FL_RC_QP_WHEN_ROCE_DISABLED) != 0,
        fl_rc_qp_when_roce_enabled: g(roce_cap::FL_RC_QP_WHEN_ROCE_ENABLED) != 0,
        qp_ts_format: g(roce_cap::QP_TS_FORMAT) as u8,
        l3_type: g(roce_cap::L3_TYPE) as u8,
        roce_version: g(roce_cap::ROCE_VERSION) as u8,
        roce_address_table_size: g(roce_cap::ROCE_ADDRESS_TABLE_SIZE) as u16,
    }
}

/// The `qpc.ts_format` a QP whose CQs ask for no particular timestamp
/// gets, by the kernel's rule (`qp.c` `get_ts_format`): free-running when
/// the RoCE capability `qp_ts_format` allows it (cap 0 or 2), else
/// DEFAULT (cap 1, real-time only). [ref §7.14](crate::reference).
pub const fn qp_ts_format(cap: u8) -> u8 {
    let fr = cap as u32 == roce_cap::TS_CAP_FREE_RUNNING
        || cap as u32 == roce_cap::TS_CAP_FREE_RUNNING_AND_REAL_TIME;
    if fr {
        qpc::TS_FORMAT_FREE_RUNNING as u8
    } else {
        qpc::TS_FORMAT_DEFAULT as u8
    }
}

/// The SET_HCA_CAP of the RoCE page that turns `sw_r_roce_src_udp_port`
/// on, as the vendor's `handle_hca_cap_roce` does: `None` when the
/// current value is already 1 or the maximum is 0; else the current page
/// (`cur`, at most [`roce_cap::LEN`] bytes) sent back with the bit set,
/// op_mod 8. [ref §7.14](crate::reference).
pub fn set_roce_src_udp_port(b: &mut [u8], cur: &[u8], max: &[u8]) -> Option<Req> {
    let on = |c: &[u8]| roce_cap::SW_R_ROCE_SRC_UDP_PORT.get(c, 0) == 1;
    if on(cur) || !on(max) {
        return None;
    }
    let mut page = [0u8; roce_cap::LEN];
    let n = cur.len().min(roce_cap::LEN);
    page[..n].copy_from_slice(&cur[..n]);
    roce_cap::SW_R_ROCE_SRC_UDP_PORT.set(&mut page, 0, 1);
    Some(set_hca_cap(b, CapType::Roce, &page))
}

impl CapType {
    /// QUERY_HCA_CAP's op_mod for this page: `(type << 1) | current`
    /// (`HCA_CAP_OPMOD_GET_CUR` = 1, `GET_MAX` = 0). [ref §7.6](crate::reference).
    pub const fn query_op_mod(self, current: bool) -> u16 {
        (self as u16) << 1 | current as u16
    }
    /// SET_HCA_CAP's op_mod for this page: `type << 1`. [ref §7.6](crate::reference).
    pub const fn set_op_mod(self) -> u16 {
        (self as u16) << 1
    }
}

/// What a QUERY/SET_HCA_CAP op_mod names: the page's type code (bits
/// 15:1, compare with `CapType::X as u16`) and the current bit (bit 0).
/// The inverse of [`CapType::query_op_mod`]. [ref §7.6](crate::reference).
pub const fn cap_op_mod_parts(op_mod: u16) -> (u16, bool) {
    (op_mod >> 1, op_mod & 1 == 1)
}

/// QUERY_HCA_CAP (0x100), op_mod = (type << 1) | current. [ref §7.6](crate::reference).
pub fn query_hca_cap(b: &mut [u8], cap: CapType, current: bool) -> Req {
    let mut r = simple(b, op::QUERY_HCA_CAP, cap.query_op_mod(current));
    r.out_len = CAP_OFFSET + CAP_LEN;
    r
}

/// SET_HCA_CAP (0x109), op_mod = type << 1, capability copied from `caps`
/// (at most 4096 bytes) to byte 0x10. [ref §7.6](crate::reference) step 8.
pub fn set_hca_cap(b: &mut [u8], cap: CapType, caps: &[u8]) -> Req {
    let in_len = CAP_OFFSET + CAP_LEN;
    hdr(b, op::SET_HCA_CAP, cap.set_op_mod(), in_len);
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
