//! [`PingpongPeer`]: the engine's [`PeerLink`] for `ibv_rc_pingpong`'s
//! exchange. The client connects, writes its address, reads the
//! server's, writes `"done"` and closes; then it connects its QP. The
//! server reads the client's address, connects its QP (to RTS) before it
//! answers with its own, and reads `"done"` (`rc_pingpong.c`,
//! `pp_client_exch_dest` / `pp_server_exch_dest`). Receives are posted
//! before either side sends its address, so the first SEND always finds
//! one.

use super::message::{Address, DONE, MESSAGE_BYTES};
use crate::perf::engine::{PeerLink, Role};
use crate::perf::report::PeerRun;
use crate::perf::run::{PerfRunConfig, PerfRunReport};
use crate::perftest::format::Endpoint;
use crate::perftest::sockets::Oob;
use anyhow::{anyhow, bail};
use std::net::TcpListener;
use std::time::Duration;

/// How long a client keeps trying to reach a server that is not
/// listening yet (stock `ibv_rc_pingpong` tries once).
const CONNECT_PATIENCE: Duration = Duration::from_secs(30);

/// Where the exchange stands.
enum State {
    /// The server listens; no client yet.
    Listening(TcpListener),
    /// The client will connect to this host and port.
    Connecting(String, u16),
    /// The server read the client's address; it answers in `ready`.
    Answering(Oob),
    /// Done: the connection is closed.
    Closed,
}

/// The stage and its addresses (the socket's own, never a read from it).
impl std::fmt::Debug for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            State::Listening(l) => f
                .debug_struct("Listening")
                .field("local", &l.local_addr().ok())
                .finish(),
            State::Connecting(host, port) => f
                .debug_struct("Connecting")
                .field("host", host)
                .field("port", port)
                .finish(),
            State::Answering(oob) => f.debug_tuple("Answering").field(oob).finish(),
            State::Closed => f.write_str("Closed"),
        }
    }
}

/// One side of `ibv_rc_pingpong`'s address exchange.
#[derive(Debug)]
pub struct PingpongPeer {
    state: State,
    /// The peer is bareverbs run with `-c`: what it sends carries
    /// bareverbs' tags and is checked.
    checked: bool,
    /// This host's address and the peer's, once exchanged.
    pub addresses: Option<(Address, Address)>,
    /// Prints each address line as soon as it is known (text output).
    print: bool,
}

impl PingpongPeer {
    /// The server's side: listens on TCP `port` now (so a client started
    /// right after finds it).
    pub fn server(port: u16, checked: bool, print: bool) -> anyhow::Result<PingpongPeer> {
        let l = TcpListener::bind(("0.0.0.0", port))
            .map_err(|e| anyhow!("Couldn't listen to port {port}: {e}"))?;
        Ok(Self::with(State::Listening(l), checked, print))
    }

    /// The client's side toward `host`:`port`.
    pub fn client(host: &str, port: u16, checked: bool, print: bool) -> PingpongPeer {
        Self::with(State::Connecting(host.into(), port), checked, print)
    }

    fn with(state: State, checked: bool, print: bool) -> PingpongPeer {
        PingpongPeer {
            state,
            checked,
            addresses: None,
            print,
        }
    }

    /// This side's role.
    pub fn role(&self) -> Role {
        match self.state {
            State::Connecting(..) => Role::Client,
            _ => Role::Server,
        }
    }

    fn show(&self, a: &Address, label: &str) {
        if self.print {
            use std::io::Write as _;
            let mut o = crate::output::stdout();
            let _ = o.write_all(a.line(label).as_bytes());
            let _ = o.flush();
        }
    }
}

/// The address of one of this host's endpoints.
fn address_of(e: &Endpoint) -> Address {
    Address {
        lid: e.lid,
        qpn: e.qpn,
        psn: e.psn,
        gid: e.gid,
    }
}

/// The endpoint a peer's address names (SEND only: no buffer, one READ).
fn endpoint_of(a: &Address) -> Endpoint {
    Endpoint {
        lid: a.lid,
        qpn: a.qpn,
        psn: a.psn,
        out_reads: 1,
        rkey: 0,
        vaddr: 0,
        gid: a.gid,
    }
}

impl PeerLink for PingpongPeer {
    fn cycle_buffer(&self) -> usize {
        // SEND only: the peer's memory is never addressed.
        0
    }

    fn peer_is_bareverbs(&self) -> bool {
        self.checked
    }

    fn keys(&mut self, mine: &[Endpoint]) -> anyhow::Result<Vec<Endpoint>> {
        let [me] = mine else {
            bail!("ibv_rc_pingpong connects one QP, not {}", mine.len());
        };
        let me = address_of(me);
        self.show(&me, "local");
        let mut theirs = [0u8; MESSAGE_BYTES];
        let state = std::mem::replace(&mut self.state, State::Closed);
        let peer = match state {
            State::Connecting(host, port) => {
                let mut o = Oob::connect(&host, port, CONNECT_PATIENCE)?;
                o.write(&me.encode())?;
                o.read(&mut theirs)?;
                o.write(DONE)?;
                Address::decode(&theirs)?
            }
            State::Listening(l) => {
                let mut o = Oob::accept(l)?;
                o.read(&mut theirs)?;
                let peer = Address::decode(&theirs)?;
                self.state = State::Answering(o);
                peer
            }
            State::Answering(_) | State::Closed => bail!("the address exchange ran twice"),
        };
        self.show(&peer, "remote");
        self.addresses = Some((me, peer));
        Ok(vec![endpoint_of(&peer)])
    }

    fn ready(&mut self, _mine: &[Endpoint]) -> anyhow::Result<()> {
        // The server's QP is at RTS: now it answers, and waits for "done".
        if let State::Answering(mut o) = std::mem::replace(&mut self.state, State::Closed) {
            let (me, _) = self
                .addresses
                .ok_or_else(|| anyhow!("no address to answer with"))?;
            o.write(&me.encode())?;
            let mut done = [0u8; DONE.len()];
            o.read(&mut done)?;
            if &done != DONE {
                bail!("the client ended the exchange with {done:?}, not \"done\"");
            }
        }
        Ok(())
    }

    fn peer_spoke(&mut self) -> anyhow::Result<bool> {
        // Nothing follows the exchange: the run ends when this side's
        // messages are done.
        Ok(true)
    }

    fn finish(&mut self, _cfg: &PerfRunConfig, _rep: &PerfRunReport) -> anyhow::Result<PeerRun> {
        Ok(PeerRun {
            role: match self.role() {
                Role::Client => "client",
                _ => "server",
            },
            version: "ibv_rc_pingpong".into(),
            bareverbs: self.checked,
            bw: None,
        })
    }
}
