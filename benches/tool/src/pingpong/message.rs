//! The address message `ibv_rc_pingpong` exchanges (libibverbs'
//! `examples/rc_pingpong.c`, `pp_client_exch_dest` / `pp_server_exch_dest`):
//! `sprintf("%04x:%06x:%06x:%s", lid, qpn, psn, wire_gid)` in a buffer
//! of `sizeof "0000:000000:000000:" + 32 hex digits + NUL` = 52 bytes,
//! always written whole (the NUL and whatever follows a shorter text
//! included). The wire GID (`examples/pingpong.c`, `gid_to_wire_gid`) is
//! the 16 GID bytes in order as 32 lower-case hex digits (four
//! big-endian 32-bit words printed with `%08x`). The client ends the
//! exchange with `"done"` and its NUL (5 bytes).

use anyhow::{anyhow, bail};

/// Bytes of the address message, NUL included.
pub const MESSAGE_BYTES: usize = 52;
/// The client's last message: `"done"` and its NUL.
pub const DONE: &[u8; 5] = b"done\0";

/// What one side tells the other.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Address {
    /// LID (0 on RoCE).
    pub lid: u16,
    /// QP number (24 bits).
    pub qpn: u32,
    /// Start PSN of the sender's send queue (24 bits).
    pub psn: u32,
    /// GID (zero without `-g`).
    pub gid: [u8; 16],
}

impl Address {
    /// The 52-byte message.
    pub fn encode(&self) -> [u8; MESSAGE_BYTES] {
        let mut gid = String::with_capacity(32);
        for b in self.gid {
            gid.push_str(&format!("{b:02x}"));
        }
        let text = format!(
            "{:04x}:{:06x}:{:06x}:{gid}",
            self.lid,
            self.qpn & 0xff_ffff,
            self.psn & 0xff_ffff
        );
        let mut m = [0u8; MESSAGE_BYTES];
        m[..text.len()].copy_from_slice(text.as_bytes());
        m
    }

    /// Parses a peer's message as `sscanf("%x:%x:%x:%s")` followed by
    /// `wire_gid_to_gid` would, but refusing what they would silently
    /// misread: no NUL, a field that is not hex or is wider than its
    /// format, a GID of other than 32 hex digits.
    pub fn decode(m: &[u8]) -> anyhow::Result<Address> {
        if m.len() != MESSAGE_BYTES {
            bail!(
                "the peer's address message is {} bytes, not {MESSAGE_BYTES}",
                m.len()
            );
        }
        let end = m
            .iter()
            .position(|&b| b == 0)
            .ok_or_else(|| anyhow!("the peer's address message has no NUL"))?;
        let text = std::str::from_utf8(&m[..end])
            .map_err(|_| anyhow!("the peer's address message is not text"))?;
        let mut parts = text.split(':');
        let mut field = |name: &str, max: u64| -> anyhow::Result<u64> {
            let f = parts
                .next()
                .ok_or_else(|| anyhow!("the peer's address message has no {name}: {text:?}"))?;
            let v = u64::from_str_radix(f, 16)
                .ok()
                .filter(|_| !f.is_empty() && f.len() <= 8)
                .ok_or_else(|| anyhow!("the peer's {name} {f:?} is not hex"))?;
            if v > max {
                bail!("the peer's {name} 0x{v:x} is wider than 0x{max:x}");
            }
            Ok(v)
        };
        let lid = field("LID", 0xffff)? as u16;
        let qpn = field("QPN", 0xff_ffff)? as u32;
        let psn = field("PSN", 0xff_ffff)? as u32;
        let g = parts
            .next()
            .ok_or_else(|| anyhow!("the peer's address message has no GID: {text:?}"))?;
        // Bytes, not characters: a multi-byte character must not reach
        // the slicing below.
        if g.len() != 32 || !g.bytes().all(|b| b.is_ascii_hexdigit()) || parts.next().is_some() {
            bail!("the peer's GID {g:?} is not 32 hex digits");
        }
        let mut gid = [0u8; 16];
        for (i, b) in gid.iter_mut().enumerate() {
            *b = u8::from_str_radix(&g[2 * i..2 * i + 2], 16)
                .map_err(|_| anyhow!("the peer's GID {g:?} is not hex"))?;
        }
        Ok(Address { lid, qpn, psn, gid })
    }

    /// `ibv_rc_pingpong`'s line for this address: `label` is `"local"`
    /// or `"remote"`; the GID as `inet_ntop(AF_INET6)` prints it.
    pub fn line(&self, label: &str) -> String {
        let pad = if label == "local" { "  " } else { " " };
        format!(
            "  {label} address:{pad}LID 0x{:04x}, QPN 0x{:06x}, PSN 0x{:06x}, GID {}\n",
            self.lid,
            self.qpn,
            self.psn,
            std::net::Ipv6Addr::from(self.gid)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A RoCE v2 GID of 192.168.1.7 (`::ffff:c0a8:107`).
    const GID: [u8; 16] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 168, 1, 7];

    #[test]
    fn the_message_is_rc_pingpongs_text_and_nul_in_52_bytes() {
        let a = Address {
            lid: 0x12,
            qpn: 0xab_cdef,
            psn: 0x4_5678,
            gid: GID,
        };
        let m = a.encode();
        // sizeof "0000:000000:000000:00000000000000000000000000000000"
        assert_eq!(MESSAGE_BYTES, "0000:000000:000000:".len() + 32 + 1);
        assert_eq!(
            &m[..51],
            b"0012:abcdef:045678:00000000000000000000ffffc0a80107"
        );
        assert_eq!(m[51], 0);
        assert_eq!(Address::decode(&m).unwrap(), a);
    }

    #[test]
    fn the_lines_are_rc_pingpongs() {
        let a = Address {
            lid: 0,
            qpn: 0x108,
            psn: 0x3e_a0c1,
            gid: GID,
        };
        assert_eq!(
            a.line("local"),
            "  local address:  LID 0x0000, QPN 0x000108, PSN 0x3ea0c1, GID ::ffff:192.168.1.7\n"
        );
        assert_eq!(
            a.line("remote"),
            "  remote address: LID 0x0000, QPN 0x000108, PSN 0x3ea0c1, GID ::ffff:192.168.1.7\n"
        );
        let fe80 = Address {
            gid: [
                0xfe, 0x80, 0, 0, 0, 0, 0, 0, 2, 0x11, 0x22, 0xff, 0xfe, 0x33, 0x44, 0x55,
            ],
            ..a
        };
        assert!(fe80
            .line("local")
            .ends_with("GID fe80::211:22ff:fe33:4455\n"));
    }

    #[test]
    fn bad_messages_are_refused_not_misread() {
        let good = Address {
            lid: 1,
            qpn: 2,
            psn: 3,
            gid: GID,
        }
        .encode();
        assert!(Address::decode(&good[..51]).is_err(), "short");
        let mut no_nul = good;
        no_nul[51] = b'0';
        assert!(Address::decode(&no_nul).is_err(), "no NUL");
        let mut bad_hex = good;
        bad_hex[5] = b'g';
        assert!(Address::decode(&bad_hex).is_err(), "QPN not hex");
        let mut short_gid = good;
        short_gid[50] = 0;
        assert!(Address::decode(&short_gid).is_err(), "31-digit GID");
        let wide = *b"10000:000001:000001:00000000000000000000ffffc0a8010\0";
        assert_eq!(wide.len(), MESSAGE_BYTES);
        let e = Address::decode(&wide).unwrap_err().to_string();
        assert!(e.contains("LID"), "{e}");
        let mut utf8 = good;
        utf8[19..21].copy_from_slice("é".as_bytes());
        utf8[22..24].copy_from_slice("é".as_bytes());
        assert!(Address::decode(&utf8).is_err(), "multi-byte GID text");
        let mut odd = good;
        odd[20..22].copy_from_slice("é".as_bytes());
        assert!(
            Address::decode(&odd).is_err(),
            "a character across a digit pair"
        );
        let mut text = [0u8; MESSAGE_BYTES];
        text[..4].copy_from_slice(b"zzzz");
        assert!(Address::decode(&text).is_err());
        for n in 0..=MESSAGE_BYTES {
            let mut m = good;
            m[n.min(MESSAGE_BYTES - 1)] ^= 0xa5;
            let _ = Address::decode(&m);
        }
    }
}
