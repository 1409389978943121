//! The key message of one QP (`struct pingpong_dest` as text) and
//! `ctx_hand_shake`: `KEY_PRINT_FMT` = `%04x:%04x:%06x:%06x:%08x:%016llx:%08x`
//! (LID, outstanding reads, QPN, PSN, rkey, address, SRQN; 58 characters
//! and the NUL, [`KEY_MSG_SIZE`]) or, with a GID, `KEY_PRINT_FMT_GID`,
//! the same six fields, the 16 GID bytes as `%02x:` each, then `%08x:`
//! SRQN with its trailing colon (107 characters and the NUL,
//! [`KEY_MSG_SIZE_GID`]). Both sides must agree on the form: perftest
//! reads with the form of its own GID index.

use super::stream::Oob;
use anyhow::{anyhow, bail};

/// Bytes of a key message without a GID (`KEY_MSG_SIZE`).
pub const KEY_MSG_SIZE: usize = 59;
/// Bytes of a key message with a GID (`KEY_MSG_SIZE_GID`).
pub const KEY_MSG_SIZE_GID: usize = 108;

/// One QP's key message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct KeyMessage {
    /// LID (0 on RoCE).
    pub lid: u16,
    /// Outstanding RDMA READs / atomics the QP allows.
    pub out_reads: u16,
    /// QP number (24 bits).
    pub qpn: u32,
    /// Start PSN (24 bits).
    pub psn: u32,
    /// Key of the buffer the peer accesses.
    pub rkey: u32,
    /// Address of that buffer.
    pub vaddr: u64,
    /// The GID (`None`: the form without one).
    pub gid: Option<[u8; 16]>,
    /// SRQ number (XRC/DC; 0 here).
    pub srqn: u32,
}

impl KeyMessage {
    /// The bytes perftest writes for this message (its NUL included).
    pub fn format(&self) -> anyhow::Result<Vec<u8>> {
        if self.qpn > 0xff_ffff || self.psn > 0xff_ffff {
            bail!("a QPN or PSN wider than 24 bits cannot be sent");
        }
        let mut s = format!(
            "{:04x}:{:04x}:{:06x}:{:06x}:{:08x}:{:016x}:",
            self.lid, self.out_reads, self.qpn, self.psn, self.rkey, self.vaddr
        );
        let size = match self.gid {
            None => {
                s.push_str(&format!("{:08x}", self.srqn));
                KEY_MSG_SIZE
            }
            Some(g) => {
                for b in g {
                    s.push_str(&format!("{b:02x}:"));
                }
                s.push_str(&format!("{:08x}:", self.srqn));
                KEY_MSG_SIZE_GID
            }
        };
        let mut b = s.into_bytes();
        b.push(0);
        debug_assert_eq!(b.len(), size);
        Ok(b)
    }

    /// Parses a message of the form `with_gid` says, as perftest's
    /// `ethernet_read_keys` reads it (hex fields separated by `:`, the
    /// text ending at the first NUL). A field missing, not hex, or wider
    /// than its field is an error.
    pub fn parse(b: &[u8], with_gid: bool) -> anyhow::Result<KeyMessage> {
        let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
        let text = std::str::from_utf8(&b[..end])
            .map_err(|_| anyhow!("the peer's key message is not text"))?;
        let bad = |why: &str| anyhow!("the peer's key message {text:?} {why}");
        let parts: Vec<&str> = text.split(':').collect();
        let want = if with_gid { 24 } else { 7 };
        if parts.len() < want || (!with_gid && parts.len() != 7) {
            return Err(bad(&format!("has {} fields, {want} expected", parts.len())));
        }
        let hex = |i: usize, max: u64| -> anyhow::Result<u64> {
            let f = parts[i].trim();
            let v =
                u64::from_str_radix(f, 16).map_err(|_| bad(&format!("field {i} is not hex")))?;
            if v > max {
                return Err(bad(&format!("field {i} is out of range")));
            }
            Ok(v)
        };
        let mut m = KeyMessage {
            lid: hex(0, 0xffff)? as u16,
            out_reads: hex(1, 0xffff)? as u16,
            qpn: hex(2, 0xff_ffff)? as u32,
            psn: hex(3, 0xff_ffff)? as u32,
            rkey: hex(4, 0xffff_ffff)? as u32,
            vaddr: hex(5, u64::MAX)?,
            gid: None,
            srqn: 0,
        };
        if with_gid {
            let mut g = [0u8; 16];
            for (k, b) in g.iter_mut().enumerate() {
                *b = hex(6 + k, 0xff)? as u8;
            }
            m.gid = Some(g);
            m.srqn = hex(22, 0xffff_ffff)? as u32;
        } else {
            m.srqn = hex(6, 0xffff_ffff)? as u32;
        }
        Ok(m)
    }
}

impl Oob {
    /// `ctx_hand_shake`: sends `ours`, returns the peer's message (read in
    /// the same form: with a GID iff `ours` has one).
    pub fn hand_shake(&mut self, ours: &KeyMessage) -> anyhow::Result<KeyMessage> {
        let mine = ours.format()?;
        let mut theirs = vec![0u8; mine.len()];
        self.exchange(&mine, &mut theirs)?;
        KeyMessage::parse(&theirs, ours.gid.is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_forms_as_perftest_prints_them() {
        let mut m = KeyMessage {
            lid: 0,
            out_reads: 0x10,
            qpn: 0x1234,
            psn: 0xabcdef,
            rkey: 0x1f00,
            vaddr: 0x7f00_0000_1000,
            gid: None,
            srqn: 0,
        };
        // sprintf(KEY_PRINT_FMT, ...), by hand.
        let want = b"0000:0010:001234:abcdef:00001f00:00007f0000001000:00000000\0";
        assert_eq!(m.format().unwrap(), want.to_vec());
        assert_eq!(KeyMessage::parse(want, false).unwrap(), m);
        m.gid = Some([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 168, 1, 10]);
        let want = b"0000:0010:001234:abcdef:00001f00:00007f0000001000:\
00:00:00:00:00:00:00:00:00:00:ff:ff:c0:a8:01:0a:00000000:\0";
        assert_eq!(m.format().unwrap(), want.to_vec());
        assert_eq!(want.len(), KEY_MSG_SIZE_GID);
        assert_eq!(KeyMessage::parse(want, true).unwrap(), m);
    }

    #[test]
    fn malformed_messages_are_errors() {
        for bad in [
            &b""[..],
            b"0000:0010:001234",
            b"zzzz:0010:001234:abcdef:00001f00:00007f0000001000:00000000\0",
            b"0000:0010:1001234:abcdef:00001f00:00007f0000001000:00000000\0",
            b"0000:0010:001234:abcdef:00001f00:00007f0000001000:00000000:1\0",
            &[0xff; 59][..],
        ] {
            assert!(KeyMessage::parse(bad, false).is_err(), "{bad:?}");
        }
        let short = b"0000:0010:001234:abcdef:00001f00:00007f0000001000:00:00:00000000:\0";
        assert!(KeyMessage::parse(short, true).is_err());
    }
}
