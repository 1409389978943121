//! Putting a packet's fragments back together ([`Reassembly`]), with
//! bounded memory: at most [`MAX_PARTIAL`] packets in progress and
//! [`MAX_PARTIAL_BYTES`] of their bytes; a packet not complete within
//! [`PARTIAL_TIMEOUT_NS`] is dropped, like one whose fragment was lost.

use super::codec::{Header, FRAGMENT_BYTES, MAX_PAYLOAD};
use std::net::SocketAddrV4;

/// Packets in progress at most.
pub(crate) const MAX_PARTIAL: usize = 256;
/// Bytes of packets in progress at most.
pub(crate) const MAX_PARTIAL_BYTES: usize = 256 << 20;
/// How long a packet may wait for its last fragment (ns of wall time).
pub(crate) const PARTIAL_TIMEOUT_NS: u64 = 1_000_000_000;

/// One packet in progress.
struct Partial {
    from: SocketAddrV4,
    header: Header,
    parts: Vec<Option<Vec<u8>>>,
    have: usize,
    bytes: usize,
    since: u64,
}

/// Packets in progress, by sender and packet id.
#[derive(Default)]
pub(crate) struct Reassembly {
    partial: Vec<Partial>,
    bytes: usize,
    /// Packets dropped incomplete (timeout, or no room).
    pub dropped: u64,
}

impl Reassembly {
    /// Adds fragment `data` of `h` from `from` at time `now`; the whole
    /// body once its last fragment is in (a one-fragment packet at once).
    /// A fragment that contradicts its packet (another count or header)
    /// drops the packet.
    pub fn add(&mut self, from: SocketAddrV4, h: Header, data: &[u8], now: u64) -> Option<Vec<u8>> {
        self.expire(now);
        if h.count == 1 {
            return Some(data.to_vec());
        }
        if h.count as usize > MAX_PAYLOAD / FRAGMENT_BYTES + 2 || data.len() > FRAGMENT_BYTES {
            return None;
        }
        let at = self
            .partial
            .iter()
            .position(|p| p.from == from && p.header.id == h.id);
        let i = match at {
            Some(i) => {
                let p = &self.partial[i];
                let same = Header {
                    index: p.header.index,
                    ..h
                } == p.header;
                if !same {
                    self.remove(i);
                    self.dropped += 1;
                    return None;
                }
                i
            }
            None => {
                if self.partial.len() >= MAX_PARTIAL || self.bytes + data.len() > MAX_PARTIAL_BYTES
                {
                    self.dropped += 1;
                    return None;
                }
                self.partial.push(Partial {
                    from,
                    header: h,
                    parts: vec![None; h.count as usize],
                    have: 0,
                    bytes: 0,
                    since: now,
                });
                self.partial.len() - 1
            }
        };
        if self.bytes + data.len() > MAX_PARTIAL_BYTES {
            self.remove(i);
            self.dropped += 1;
            return None;
        }
        let p = &mut self.partial[i];
        let slot = &mut p.parts[h.index as usize];
        if slot.is_none() {
            *slot = Some(data.to_vec());
            p.have += 1;
            p.bytes += data.len();
            self.bytes += data.len();
        }
        if p.have < p.parts.len() {
            return None;
        }
        let p = self.remove(i);
        Some(p.parts.into_iter().flatten().flatten().collect())
    }

    fn remove(&mut self, i: usize) -> Partial {
        let p = self.partial.swap_remove(i);
        self.bytes -= p.bytes;
        p
    }

    /// Drops the packets that waited too long.
    fn expire(&mut self, now: u64) {
        let mut i = 0;
        while i < self.partial.len() {
            if now.saturating_sub(self.partial[i].since) > PARTIAL_TIMEOUT_NS {
                self.remove(i);
                self.dropped += 1;
            } else {
                i += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn h(id: u32, index: u16, count: u16) -> Header {
        Header {
            src_gid: [1; 16],
            dst_gid: [2; 16],
            dst_mac: [3; 6],
            src_qpn: 1,
            dst_qpn: 2,
            id,
            index,
            count,
        }
    }

    #[test]
    fn fragments_in_any_order_repeats_and_timeouts() {
        let a = SocketAddrV4::new(Ipv4Addr::LOCALHOST, 1);
        let mut r = Reassembly::default();
        assert_eq!(r.add(a, h(1, 0, 1), b"one", 0), Some(b"one".to_vec()));
        assert_eq!(r.add(a, h(2, 2, 3), b"c", 0), None);
        assert_eq!(r.add(a, h(2, 0, 3), b"a", 0), None);
        assert_eq!(
            r.add(a, h(2, 0, 3), b"a", 0),
            None,
            "a repeat changes nothing"
        );
        assert_eq!(r.add(a, h(2, 1, 3), b"b", 0), Some(b"abc".to_vec()));
        assert_eq!(r.bytes, 0);
        // A packet missing a fragment expires.
        assert_eq!(r.add(a, h(3, 0, 2), b"x", 0), None);
        assert_eq!(
            r.add(a, h(4, 0, 1), b"y", PARTIAL_TIMEOUT_NS + 1),
            Some(b"y".to_vec())
        );
        assert_eq!(r.partial.len(), 0);
        assert_eq!(r.dropped, 1);
        // A fragment with another count drops its packet.
        assert_eq!(r.add(a, h(5, 0, 2), b"x", 0), None);
        assert_eq!(r.add(a, h(5, 1, 3), b"y", 0), None);
        assert_eq!(r.partial.len(), 0);
        // Bounded: no more than MAX_PARTIAL packets at once.
        for id in 0..(MAX_PARTIAL as u32 + 10) {
            let _ = r.add(a, h(100 + id, 0, 2), b"z", 0);
        }
        assert_eq!(r.partial.len(), MAX_PARTIAL);
    }
}
