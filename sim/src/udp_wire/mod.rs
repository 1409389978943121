//! The UDP wire: one simulated port joined to simulated ports of other
//! fabrics (other threads, other processes) over UDP, a RoCE v2-like
//! link with one datagram per packet (fragmented above
//! [`codec::FRAGMENT_BYTES`](self)), in wall-clock time.
//!
//! A port is wired at a UDP address ([`WireSocket::bind`]); its GID and
//! MAC follow from that address ([`wire_gid`], [`wire_mac`]), so a peer
//! that knows the GID knows where to send. Connected RoCE QPs (RC, UC)
//! whose destination GID and MAC name no port of the local fabric but a
//! wired address are routed over the wire: their packets (requests,
//! ACKs, NAKs, READ and atomic responses) leave as datagrams after the
//! fabric's fault plan decided their fate (loss, duplication, delay),
//! and what arrives is checked as a RoCE NIC checks it before the
//! transport sees it: the destination GID must be in the port's GID
//! table with the destination MAC, the destination QP must exist and be
//! connected to the sender's QP; anything else is dropped and counted
//! ([`WireStats`]). A wrong PSN is the transport's to answer (sequence
//! NAK, duplicate handling), as on a local path. Datagrams are untrusted:
//! malformed ones are dropped, never a panic. UD over the wire is not
//! modelled (UD address vectors route by LID inside one fabric).
//!
//! Time: once a fabric is wired its clock follows the wall clock
//! (nanoseconds since the join, on top of the virtual time before it);
//! events run when wall time reaches them, CPU costs are real (the
//! model's `spend` no longer moves the clock), and waiting means
//! waiting.
//!
//! | file | owns |
//! | --- | --- |
//! | `address` | the GID and MAC of a wired address |
//! | `codec` | the datagram header and the encoded packet body |
//! | `reassembly` | fragments back into packets, with bounded memory |
//! | `mod.rs` | the socket ([`WireSocket`]), the joined wire in the world, sending, receiving and its checks, [`WireStats`] |

mod address;
mod codec;
mod reassembly;

pub use address::{wire_addr_of_gid, wire_gid, wire_mac, wire_mac_of_gid};

use crate::wire::Packet;
use crate::world::{Event, World};
use codec::{decode_body, encode_body, Header, FRAGMENT_BYTES, HEADER_BYTES};
use reassembly::Reassembly;
use std::io::ErrorKind;
use std::net::{SocketAddr, SocketAddrV4, UdpSocket};
use std::time::Instant;

/// Device numbers of wired peers inside a world: peer `k` is
/// `WIRE_DEV_BASE + k` (above any local device).
pub(crate) const WIRE_DEV_BASE: u16 = 0xf000;
/// The LID a connected QP's context holds for wired peer `k`:
/// `WIRE_LID_BASE + k` (internal to the simulator, never on the wire).
pub(crate) const WIRE_LID_BASE: u16 = 0xf000;
/// Wired peers one fabric may talk to.
const MAX_PEERS: usize = 0x0ffe;
/// Most datagrams one poll takes off the socket.
const POLL_BATCH: usize = 4096;
/// Most whole packets one poll delivers: each is stamped with the wall
/// time it was taken in, and its events run before the socket is read
/// again (a poll that kept reading while a peer retransmits would never
/// return, and its clock would stand still).
const POLL_DELIVER: usize = 16;
/// Body bytes after which a poll returns (a few large packets are as much
/// work as many small ones).
const POLL_BYTES: usize = 256 << 10;
/// Socket buffer bytes asked for (the kernel may cap them).
#[cfg(target_os = "linux")]
const SOCKET_BUFFER: i32 = 8 << 20;

/// A bound UDP socket for a wired port: bind it first (port 0 picks a
/// free port) to learn the address, the GID and the MAC the port will
/// have, then join a fabric's device with it ([`Fabric::join_wire`]).
///
/// [`Fabric::join_wire`]: crate::Fabric::join_wire
pub struct WireSocket {
    sock: UdpSocket,
    addr: SocketAddrV4,
}

impl WireSocket {
    /// Binds a non-blocking UDP socket at `addr`.
    pub fn bind(addr: SocketAddrV4) -> std::io::Result<WireSocket> {
        let sock = UdpSocket::bind(addr)?;
        sock.set_nonblocking(true)?;
        grow_buffers(&sock);
        let addr = match sock.local_addr()? {
            SocketAddr::V4(a) => a,
            SocketAddr::V6(_) => {
                return Err(std::io::Error::new(
                    ErrorKind::InvalidInput,
                    "the wire is IPv4",
                ))
            }
        };
        Ok(WireSocket { sock, addr })
    }
    /// The bound address.
    pub fn addr(&self) -> SocketAddrV4 {
        self.addr
    }
    /// The GID of the port wired here.
    pub fn gid(&self) -> [u8; 16] {
        wire_gid(self.addr)
    }
    /// The MAC of the port wired here.
    pub fn mac(&self) -> [u8; 6] {
        wire_mac(self.addr)
    }
}

/// Larger socket buffers, so that a window of messages in flight is not
/// dropped by the kernel before the peer polls (best effort).
#[cfg(target_os = "linux")]
fn grow_buffers(sock: &UdpSocket) {
    use std::os::fd::AsRawFd;
    let v: i32 = SOCKET_BUFFER;
    for opt in [libc::SO_RCVBUF, libc::SO_SNDBUF] {
        // SAFETY: setsockopt on a socket this process owns, with a
        // pointer to a live i32 and its size; failure changes nothing.
        unsafe {
            libc::setsockopt(
                sock.as_raw_fd(),
                libc::SOL_SOCKET,
                opt,
                (&v as *const i32).cast(),
                std::mem::size_of::<i32>() as libc::socklen_t,
            );
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn grow_buffers(_sock: &UdpSocket) {}

/// What the wire did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct WireStats {
    /// Packets sent.
    pub packets_tx: u64,
    /// Datagrams sent.
    pub datagrams_tx: u64,
    /// Datagrams the socket refused (a full buffer: lost).
    pub send_errors: u64,
    /// Datagrams received.
    pub datagrams_rx: u64,
    /// Packets received whole and handed to the transport.
    pub packets_rx: u64,
    /// Datagrams or packets that did not decode (or whose source GID does
    /// not name the address they came from).
    pub dropped_bad: u64,
    /// Packets to a GID not in the port's table.
    pub dropped_gid: u64,
    /// Packets to a GID of the table but another MAC.
    pub dropped_mac: u64,
    /// Packets to no QP, or to a QP not connected to the sender's.
    pub dropped_qpn: u64,
    /// Packets whose fragments did not all arrive in time.
    pub dropped_incomplete: u64,
}

/// A wired port inside a world.
pub(crate) struct Wire {
    sock: UdpSocket,
    addr: SocketAddrV4,
    gid: [u8; 16],
    /// The wired device.
    dev: u16,
    /// Peer addresses by peer number.
    peers: Vec<SocketAddrV4>,
    /// Wall clock since the join, and the world's time then.
    clock: Instant,
    offset: u64,
    next_id: u32,
    reasm: Reassembly,
    stats: WireStats,
    buf: Vec<u8>,
}

impl Wire {
    /// The wire of device `dev` over `sock`, its clock starting at `now`.
    pub(crate) fn new(sock: WireSocket, dev: u16, now: u64) -> Wire {
        Wire {
            gid: sock.gid(),
            addr: sock.addr,
            sock: sock.sock,
            dev,
            peers: Vec::new(),
            clock: Instant::now(),
            offset: now,
            next_id: 0,
            reasm: Reassembly::default(),
            stats: WireStats::default(),
            buf: vec![0; 65536],
        }
    }

    /// The peer number of `addr`, added if new (`None`: too many peers).
    fn peer(&mut self, addr: SocketAddrV4) -> Option<u16> {
        if let Some(k) = self.peers.iter().position(|&p| p == addr) {
            return Some(k as u16);
        }
        if self.peers.len() >= MAX_PEERS {
            return None;
        }
        self.peers.push(addr);
        Some((self.peers.len() - 1) as u16)
    }

    /// The wall-clock time of the world.
    pub(crate) fn now(&self) -> u64 {
        self.offset + self.clock.elapsed().as_nanos() as u64
    }

    /// The wired address.
    pub(crate) fn addr(&self) -> SocketAddrV4 {
        self.addr
    }

    /// The statistics so far.
    pub(crate) fn stats(&self) -> WireStats {
        let mut s = self.stats;
        s.dropped_incomplete = self.reasm.dropped;
        s
    }
}

impl World {
    /// The LID a connected QP's context holds for the peer at (`rgid`,
    /// `rmac`) over the wire, if the fabric is wired and the GID names a
    /// wired address whose MAC is `rmac`.
    pub(crate) fn wire_lid(&mut self, rgid: &[u8; 16], rmac: &[u8; 6]) -> Option<u16> {
        let w = self.wire.as_mut()?;
        let addr = wire_addr_of_gid(rgid)?;
        if wire_mac(addr) != *rmac || addr == w.addr {
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
