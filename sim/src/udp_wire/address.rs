//! A wired port's identity, derived from its UDP address alone so that a
//! peer knows it from the address: the GID ([`wire_gid`], and back,
//! [`wire_addr_of_gid`]) and the MAC ([`wire_mac`], [`wire_mac_of_gid`]).
//!
//! | bytes of the GID | value |
//! | --- | --- |
//! | 0..4 | `fd 62 76 77` (a unique-local IPv6 prefix, "bvw") |
//! | 4..10 | 0 |
//! | 10..14 | the IPv4 address |
//! | 14..16 | the UDP port, big-endian |
//!
//! The MAC is `02` (locally administered, unicast), then bytes 1..4 of
//! the IPv4 address and the port: unique for every port of every address
//! of one /8 (all of 127.0.0.0/8 on one machine).

use std::net::{Ipv4Addr, SocketAddrV4};

/// The first four bytes of every wire GID.
const PREFIX: [u8; 4] = [0xfd, 0x62, 0x76, 0x77];

/// The GID of the port wired at `addr`.
pub fn wire_gid(addr: SocketAddrV4) -> [u8; 16] {
    let mut g = [0u8; 16];
    g[..4].copy_from_slice(&PREFIX);
    g[10..14].copy_from_slice(&addr.ip().octets());
    g[14..].copy_from_slice(&addr.port().to_be_bytes());
    g
}

/// The UDP address a wire GID names (`None` for any other GID).
pub fn wire_addr_of_gid(gid: &[u8; 16]) -> Option<SocketAddrV4> {
    if gid[..4] != PREFIX || gid[4..10].iter().any(|&b| b != 0) {
        return None;
    }
    let ip = Ipv4Addr::new(gid[10], gid[11], gid[12], gid[13]);
    Some(SocketAddrV4::new(
        ip,
        u16::from_be_bytes([gid[14], gid[15]]),
    ))
}

/// The MAC of the port wired at `addr`.
pub fn wire_mac(addr: SocketAddrV4) -> [u8; 6] {
    let ip = addr.ip().octets();
    let p = addr.port().to_be_bytes();
    [0x02, ip[1], ip[2], ip[3], p[0], p[1]]
}

/// The MAC of the port a wire GID names (`None` for any other GID).
pub fn wire_mac_of_gid(gid: &[u8; 16]) -> Option<[u8; 6]> {
    wire_addr_of_gid(gid).map(wire_mac)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gid_and_mac_of_an_address() {
        let a = SocketAddrV4::new(Ipv4Addr::new(127, 0, 0, 1), 0x4d2e);
        let g = wire_gid(a);
        assert_eq!(
            g,
            [0xfd, 0x62, 0x76, 0x77, 0, 0, 0, 0, 0, 0, 127, 0, 0, 1, 0x4d, 0x2e]
        );
        assert_eq!(wire_addr_of_gid(&g), Some(a));
        assert_eq!(wire_mac(a), [0x02, 0, 0, 1, 0x4d, 0x2e]);
        assert_eq!(wire_mac_of_gid(&g), Some(wire_mac(a)));
        let mut other = g;
        other[5] = 1;
        assert_eq!(wire_addr_of_gid(&other), None);
        assert_eq!(wire_addr_of_gid(&[0; 16]), None);
        let b = SocketAddrV4::new(Ipv4Addr::new(127, 0, 0, 1), 0x4d2f);
        assert_ne!(wire_mac(a), wire_mac(b));
    }
}
