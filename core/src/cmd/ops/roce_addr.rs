//! The RoCE GID table: SET_ROCE_ADDRESS, QUERY_ROCE_ADDRESS, the entry
//! they carry and the GIDs a port forms from its addresses
//! ([ref §7.15](crate::reference)).

use super::{hdr, Req, HDR_LEN};
use crate::cmd::layout::{
    query_roce_address_in, query_roce_address_out, roce_addr_layout as ral, set_roce_address_in,
};
use crate::cmd::op;

/// The RoCE version of a GID table entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(clippy::exhaustive_enums)] // closed: RoCE has two wire versions; callers pick a GID type by it
pub enum RoceVersion {
    /// RoCE v1 (`MLX5_ROCE_VERSION_1` = 0): GRH over Ethernet.
    V1,
    /// RoCE v2 (`MLX5_ROCE_VERSION_2` = 2): UDP/IP.
    V2,
}

/// One GID table entry. [ref §7.15](crate::reference).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RoceAddress {
    /// The GID (`source_l3_address`), wire order.
    pub gid: [u8; 16],
    /// The source MAC.
    pub mac: [u8; 6],
    /// The VLAN id (below 0x1000), if the entry is on a VLAN.
    pub vlan: Option<u16>,
    /// RoCE version.
    pub version: RoceVersion,
}

/// Whether `gid` is an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`: bytes
/// 0..10 zero, bytes 10..12 0xff), the kernel's `ipv6_addr_v4mapped`.
pub fn is_ipv4_mapped(gid: &[u8; 16]) -> bool {
    gid[..10].iter().all(|&b| b == 0) && gid[10] == 0xff && gid[11] == 0xff
}

/// The GID of an IPv4 address: `::ffff:a.b.c.d`.
pub fn gid_ipv4_mapped(ip: [u8; 4]) -> [u8; 16] {
    let mut g = [0u8; 16];
    g[10] = 0xff;
    g[11] = 0xff;
    g[12..].copy_from_slice(&ip);
    g
}

/// The link-local GID of a MAC (the default GID of a RoCE port):
/// `fe80::/64` with the modified EUI-64 interface id (the MAC split by
/// `ff:fe`, the universal/local bit of its first byte inverted).
pub fn gid_link_local_eui64(mac: [u8; 6]) -> [u8; 16] {
    let mut g = [0u8; 16];
    g[0] = 0xfe;
    g[1] = 0x80;
    g[8] = mac[0] ^ 0x02;
    g[9] = mac[1];
    g[10] = mac[2];
    g[11] = 0xff;
    g[12] = 0xfe;
    g[13..].copy_from_slice(&mac[3..]);
    g
}

/// The `roce_l3_type` of an entry as the kernel sets it (`set_roce_addr`):
/// RoCE v2 entries are IPv4 when the GID is IPv4-mapped, else IPv6; v1
/// entries leave it 0.
pub fn roce_l3_type(a: &RoceAddress) -> u32 {
    match a.version {
        RoceVersion::V1 => 0,
        RoceVersion::V2 if is_ipv4_mapped(&a.gid) => ral::L3_TYPE_IPV4,
        RoceVersion::V2 => ral::L3_TYPE_IPV6,
    }
}

/// Writes `a` as a `roce_addr_layout` at byte `at` of `b` (the bytes
/// there must be zero).
fn put_roce_addr(b: &mut [u8], at: usize, a: &RoceAddress) {
    if let Some(g) = b.get_mut(at + ral::SOURCE_L3_ADDRESS..at + ral::SOURCE_L3_ADDRESS + 16) {
        g.copy_from_slice(&a.gid);
    }
    if let Some(v) = a.vlan {
        ral::VLAN_VALID.set(b, at, 1);
        ral::VLAN_ID.set(b, at, v as u32);
    }
    let m = a.mac;
    ral::SOURCE_MAC_47_32.set(b, at, u32::from(u16::from_be_bytes([m[0], m[1]])));
    ral::SOURCE_MAC_31_0.set(b, at, u32::from_be_bytes([m[2], m[3], m[4], m[5]]));
    ral::ROCE_L3_TYPE.set(b, at, roce_l3_type(a));
    let v = match a.version {
        RoceVersion::V1 => ral::ROCE_VERSION_1,
        RoceVersion::V2 => ral::ROCE_VERSION_2,
    };
    ral::ROCE_VERSION.set(b, at, v);
}

/// SET_ROCE_ADDRESS (0x761): entry `index` of the port's GID table set to
/// `addr`, or cleared (all-zero entry) with `None`; `vhca_port_num` only
/// when `port` is given (devices with `num_vhca_ports` > 0).
/// [ref §7.15](crate::reference).
pub fn set_roce_address(
    b: &mut [u8],
    index: u16,
    port: Option<u8>,
    addr: Option<&RoceAddress>,
) -> Req {
    hdr(b, op::SET_ROCE_ADDRESS, 0, set_roce_address_in::LEN);
    set_roce_address_in::ROCE_ADDRESS_INDEX.set(b, 0, index as u32);
    if let Some(p) = port {
        set_roce_address_in::VHCA_PORT_NUM.set(b, 0, p as u32);
    }
    if let Some(a) = addr {
        put_roce_addr(b, set_roce_address_in::ROCE_ADDRESS, a);
    }
    Req {
        opcode: op::SET_ROCE_ADDRESS,
        in_len: set_roce_address_in::LEN,
        out_len: HDR_LEN,
    }
}

/// QUERY_ROCE_ADDRESS (0x760) of entry `index`. [ref §7.15](crate::reference).
pub fn query_roce_address(b: &mut [u8], index: u16, port: Option<u8>) -> Req {
    hdr(b, op::QUERY_ROCE_ADDRESS, 0, query_roce_address_in::LEN);
    query_roce_address_in::ROCE_ADDRESS_INDEX.set(b, 0, index as u32);
    if let Some(p) = port {
        query_roce_address_in::VHCA_PORT_NUM.set(b, 0, p as u32);
    }
    Req {
        opcode: op::QUERY_ROCE_ADDRESS,
        in_len: query_roce_address_in::LEN,
        out_len: query_roce_address_out::LEN,
    }
}

/// A GID table entry as read back: its fields as stored.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RoceAddressEntry {
    /// `source_l3_address`.
    pub gid: [u8; 16],
    /// Source MAC.
    pub mac: [u8; 6],
    /// `vlan_valid`.
    pub vlan_valid: bool,
    /// `vlan_id`.
    pub vlan_id: u16,
    /// `roce_l3_type`.
    pub l3_type: u8,
    /// `roce_version`.
    pub version: u8,
}

/// Parses a `roce_addr_layout` at byte `at` of `b` (QUERY_ROCE_ADDRESS's
/// output at [`query_roce_address_out::ROCE_ADDRESS`]); short input reads
/// as zeros.
pub fn parse_roce_address(b: &[u8], at: usize) -> RoceAddressEntry {
    let mut e = [0u8; ral::LEN];
    if let Some(s) = b.get(at..) {
        let n = s.len().min(ral::LEN);
        e[..n].copy_from_slice(&s[..n]);
    }
    let mut gid = [0u8; 16];
    gid.copy_from_slice(&e[ral::SOURCE_L3_ADDRESS..ral::SOURCE_L3_ADDRESS + 16]);
    let hi = (ral::SOURCE_MAC_47_32.get(&e, 0) as u16).to_be_bytes();
    let lo = ral::SOURCE_MAC_31_0.get(&e, 0).to_be_bytes();
    RoceAddressEntry {
        gid,
        mac: [hi[0], hi[1], lo[0], lo[1], lo[2], lo[3]],
        vlan_valid: ral::VLAN_VALID.get(&e, 0) == 1,
        vlan_id: ral::VLAN_ID.get(&e, 0) as u16,
        l3_type: ral::ROCE_L3_TYPE.get(&e, 0) as u8,
        version: ral::ROCE_VERSION.get(&e, 0) as u8,
    }
}
