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
        let k = self.wire.as_mut()?.peer(from)?;
        let connected = h
            .dst_qpn
            .checked_sub(crate::world::QPN_BASE)
            .and_then(|qi| self.devs.get(dev as usize)?.qps.get(qi as usize)?.as_ref())
            .is_some_and(|q| q.attr.dlid == WIRE_LID_BASE + k && q.attr.dest_qp_num == h.src_qpn);
        if !connected {
            self.wire_count(|s| s.dropped_qpn += 1);
            return None;
        }
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
