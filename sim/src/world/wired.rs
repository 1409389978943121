//! How a world uses its wire ([`crate::udp_wire`]): the LIDs a wired
//! peer's QPs are connected with, the wall clock, packets out as
//! datagrams, and what arrives admitted as a RoCE port admits it.

use super::{Event, World};
use crate::udp_wire::codec::{decode_body, encode_body, Header, FRAGMENT_BYTES, HEADER_BYTES};
use crate::udp_wire::{
    wire_addr_of_gid, wire_gid, wire_mac, WireStats, POLL_BATCH, POLL_BYTES, POLL_DELIVER,
    WIRE_DEV_BASE, WIRE_LID_BASE,
};
use crate::wire::Packet;
use std::io::ErrorKind;
use std::net::{SocketAddr, SocketAddrV4};

impl World {
    /// The LID a connected QP's context holds for the peer at (`rgid`,
    /// `rmac`) over the wire, if the fabric is wired and the GID names a
    /// wired address whose MAC is `rmac`.
    pub(crate) fn wire_lid(&mut self, rgid: &[u8; 16], rmac: &[u8; 6]) -> Option<u16> {
        let w = self.wire.as_mut()?;
        let addr = wire_addr_of_gid(rgid)?;
        if wire_mac(addr) != *rmac || addr == w.addr() {
            return None;
        }
        Some(WIRE_LID_BASE + w.peer(addr)?)
    }

    /// The wired peer device of LID `lid`, if it names one.
    pub(crate) fn wire_dev_of_lid(&self, lid: u16) -> Option<u16> {
        let w = self.wire.as_ref()?;
        let k = lid.checked_sub(WIRE_LID_BASE)?;
        ((k as usize) < w.peers.len()).then_some(WIRE_DEV_BASE + k)
    }

    /// Moves the clock up to the wall clock (a wired fabric).
    pub(crate) fn follow_wall_clock(&mut self) {
        if let Some(w) = &self.wire {
            self.now = self.now.max(w.now());
        }
    }

    /// Sends `pkt`, addressed to a wired peer, as datagrams.
    pub(crate) fn wire_out(&mut self, pkt: Packet) {
        let Some(w) = self.wire.as_mut() else {
            return;
        };
        let Some(&peer) = w.peers.get((pkt.dst_dev - WIRE_DEV_BASE) as usize) else {
            return;
        };
        let body = encode_body(&pkt.body);
        let count = body.len().div_ceil(FRAGMENT_BYTES).max(1);
        let Ok(count) = u16::try_from(count) else {
            w.stats.send_errors += 1;
            return;
        };
        w.next_id = w.next_id.wrapping_add(1);
        let mut h = Header {
            src_gid: w.gid,
            dst_gid: wire_gid(peer),
            dst_mac: wire_mac(peer),
            src_qpn: pkt.src_qpn,
            dst_qpn: pkt.dst_qpn,
            id: w.next_id,
            index: 0,
            count,
        };
        w.stats.packets_tx += 1;
        let mut d = Vec::with_capacity(HEADER_BYTES + FRAGMENT_BYTES.min(body.len()));
        for (i, part) in body.chunks(FRAGMENT_BYTES).enumerate() {
            h.index = i as u16;
            d.clear();
            h.put(&mut d);
            d.extend_from_slice(part);
            match w.sock.send_to(&d, peer) {
                Ok(_) => w.stats.datagrams_tx += 1,
                Err(_) => w.stats.send_errors += 1,
            }
        }
    }

    /// Takes what arrived off the socket: each whole packet that passes
    /// the port's checks is delivered now. Returns the packets delivered.
    pub(crate) fn wire_poll(&mut self) -> usize {
        let mut delivered = 0;
        let mut bytes = 0;
        for _ in 0..POLL_BATCH {
            if delivered >= POLL_DELIVER || bytes >= POLL_BYTES {
                break;
            }
            let Some(w) = self.wire.as_mut() else {
                return delivered;
            };
            let (n, from) = match w.sock.recv_from(&mut w.buf) {
                Ok(x) => x,
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(_) => break,
            };
            w.stats.datagrams_rx += 1;
            let SocketAddr::V4(from) = from else {
                w.stats.dropped_bad += 1;
                continue;
            };
            let now = w.now();
            let Some((h, part)) = Header::take(&w.buf[..n]) else {
                w.stats.dropped_bad += 1;
                continue;
            };
            let part = part.to_vec();
            let Some(body) = w.reasm.add(from, h, &part, now) else {
                continue;
            };
            bytes += body.len();
            if let Some(pkt) = self.admit_wired(from, &h, &body) {
                self.follow_wall_clock();
                let at = self.now;
                self.schedule(at, Event::Deliver(pkt));
                delivered += 1;
            }
        }
        delivered
    }

    /// The packet of a whole body from `from`, if the port takes it (see
    /// the module's checks); counts the refusal otherwise.
    fn admit_wired(&mut self, from: SocketAddrV4, h: &Header, body: &[u8]) -> Option<Packet> {
        let w = self.wire.as_ref()?;
        let dev = w.dev;
        let bad = wire_addr_of_gid(&h.src_gid) != Some(from);
        let decoded = if bad { None } else { decode_body(body) };
        let Some(body) = decoded else {
            self.wire_count(|s| s.dropped_bad += 1);
            return None;
        };
        let table = &self.devs.get(dev as usize)?.roce_gids;
        let gid_known = table.iter().any(|(g, _)| *g == h.dst_gid);
        if !gid_known {
            self.wire_count(|s| s.dropped_gid += 1);
            return None;
        }
        if !table
            .iter()
            .any(|(g, m)| *g == h.dst_gid && *m == h.dst_mac)
        {
            self.wire_count(|s| s.dropped_mac += 1);
            return None;
        }
        // Only a peer some QP was connected to has a number; the QP must
        // be connected to this sender's QP.
        let qp = |k: u16| {
            h.dst_qpn
                .checked_sub(crate::world::QPN_BASE)
                .and_then(|qi| self.devs.get(dev as usize)?.qps.get(qi as usize)?.as_ref())
                .is_some_and(|q| {
                    q.attr.dlid == WIRE_LID_BASE + k && q.attr.dest_qp_num == h.src_qpn
                })
        };
        let Some(k) = self.wire.as_ref()?.known_peer(from).filter(|&k| qp(k)) else {
            self.wire_count(|s| s.dropped_qpn += 1);
            return None;
        };
        self.wire_count(|s| s.packets_rx += 1);
        Some(Packet {
            src_dev: WIRE_DEV_BASE + k,
            src_qpn: h.src_qpn,
            dst_dev: dev,
            dst_qpn: h.dst_qpn,
            body,
        })
    }

    fn wire_count(&mut self, f: impl FnOnce(&mut WireStats)) {
        if let Some(w) = self.wire.as_mut() {
            f(&mut w.stats);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::udp_wire::codec::{encode_body, Header};
    use crate::udp_wire::{wire_gid, WireSocket};
    use crate::wire::Body;
    use crate::Fabric;
    use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};

    /// Well-formed datagrams from many strangers (each from the address
    /// its source GID names, to this port's GID and MAC) name no QP
    /// connected to them: each is dropped as such, and none takes one of
    /// the port's peer numbers, which only a connected QP hands out.
    #[test]
    fn strangers_are_dropped_and_take_no_peer_slot() {
        let fabric = Fabric::new(1);
        let nic = fabric.add_device();
        let sock = WireSocket::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0)).unwrap();
        let (port, gid, mac) = (sock.addr(), sock.gid(), sock.mac());
        nic.set_roce_gid(3, gid, mac);
        fabric.join_wire(&nic, sock).unwrap();
        let n = 40;
        for i in 0..n {
            let s = UdpSocket::bind("127.0.0.1:0").unwrap();
            let std::net::SocketAddr::V4(from) = s.local_addr().unwrap() else {
                unreachable!()
            };
            let h = Header {
                src_gid: wire_gid(from),
                dst_gid: gid,
                dst_mac: mac,
                src_qpn: 0x100 + i,
                dst_qpn: 0x100,
                id: 1,
                index: 0,
                count: 1,
            };
            let mut d = Vec::new();
            h.put(&mut d);
            d.extend_from_slice(&encode_body(&Body::Ack { psn: 1 }));
            s.send_to(&d, port).unwrap();
        }
        let t = std::time::Instant::now();
        while fabric.wire_stats().unwrap().dropped_qpn < n as u64 {
            fabric.step();
            assert!(t.elapsed().as_secs() < 10, "{:?}", fabric.wire_stats());
        }
        let st = fabric.wire_stats().unwrap();
        assert_eq!(
            (st.dropped_bad, st.packets_rx, st.peers),
            (0, 0, 0),
            "{st:?}"
        );
    }
}
