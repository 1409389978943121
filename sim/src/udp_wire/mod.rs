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
//! | `mod.rs` | the socket ([`WireSocket`]), the joined wire's state, [`WireStats`] |
//!
//! How a world sends, receives and checks over it lives with the world
//! (`world/wired.rs`), so that this module depends on no part of it.

mod address;
pub(crate) mod codec;
pub(crate) mod reassembly;

pub use address::{wire_addr_of_gid, wire_gid, wire_mac, wire_mac_of_gid};

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
pub(crate) const POLL_BATCH: usize = 4096;
/// Most whole packets one poll delivers: each is stamped with the wall
/// time it was taken in, and its events run before the socket is read
/// again (a poll that kept reading while a peer retransmits would never
/// return, and its clock would stand still).
pub(crate) const POLL_DELIVER: usize = 16;
/// Body bytes after which a poll returns (a few large packets are as much
/// work as many small ones).
pub(crate) const POLL_BYTES: usize = 256 << 10;
/// Socket buffer bytes asked for (the kernel may cap them).
#[cfg(target_os = "linux")]
const SOCKET_BUFFER: i32 = 8 << 20;

/// A bound UDP socket for a wired port: bind it first (port 0 picks a
/// free port) to learn the address, the GID and the MAC the port will
/// have, then join a fabric's device with it ([`Fabric::join_wire`]).
///
/// [`Fabric::join_wire`]: crate::Fabric::join_wire
#[derive(Debug)]
pub struct WireSocket {
    sock: UdpSocket,
    addr: SocketAddrV4,
}

impl WireSocket {
    /// Binds a non-blocking UDP socket at `addr`, a specific IPv4 address
    /// (not 0.0.0.0: the port's GID names it).
    pub fn bind(addr: SocketAddrV4) -> std::io::Result<WireSocket> {
        // The port's GID names this address, and peers check that each
        // datagram comes from the address its source GID names: an
        // unspecified address would name no one.
        if addr.ip().is_unspecified() {
            return Err(std::io::Error::new(
                ErrorKind::InvalidInput,
                format!(
                    "{addr}: the wire needs the address peers send to (its GID names it), not 0.0.0.0"
                ),
            ));
        }
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
    /// Packets whose fragments were not put back together: not all in
    /// time, no room for another partial packet, or fragments that
    /// disagree.
    pub dropped_incomplete: u64,
    /// Peer addresses known: those a QP of this port was connected to.
    pub peers: u64,
}

/// A wired port inside a world.
pub(crate) struct Wire {
    pub(crate) sock: UdpSocket,
    addr: SocketAddrV4,
    pub(crate) gid: [u8; 16],
    /// The wired device.
    pub(crate) dev: u16,
    /// Peer addresses by peer number.
    pub(crate) peers: Vec<SocketAddrV4>,
    /// Wall clock since the join, and the world's time then.
    clock: Instant,
    offset: u64,
    pub(crate) next_id: u32,
    pub(crate) reasm: Reassembly,
    pub(crate) stats: WireStats,
    pub(crate) buf: Vec<u8>,
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
    pub(crate) fn peer(&mut self, addr: SocketAddrV4) -> Option<u16> {
        if let Some(k) = self.known_peer(addr) {
            return Some(k);
        }
        if self.peers.len() >= MAX_PEERS {
            return None;
        }
        self.peers.push(addr);
        Some((self.peers.len() - 1) as u16)
    }

    /// The peer number of `addr` if a QP was ever connected to it (what
    /// arrives from anyone else is not added: a sender cannot fill the
    /// table).
    pub(crate) fn known_peer(&self, addr: SocketAddrV4) -> Option<u16> {
        self.peers.iter().position(|&p| p == addr).map(|k| k as u16)
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
        s.peers = self.peers.len() as u64;
        s
    }
}
