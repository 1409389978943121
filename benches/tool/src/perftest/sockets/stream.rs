//! [`Oob`]: the TCP stream of perftest's out-of-band exchange and its one
//! rule: the client writes then reads, the server reads then writes
//! (`ctx_xchg_data_ethernet`, `ctx_hand_shake`).

use anyhow::{anyhow, bail, Context as _};
use std::io::{ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

/// The longest a single read of the exchange waits for the peer.
const READ_TIMEOUT: Duration = Duration::from_secs(120);

/// An established out-of-band connection to the peer host.
pub struct Oob {
    stream: TcpStream,
    client: bool,
}

/// Which side this is and the connection's two addresses (never a read
/// from the socket).
impl std::fmt::Debug for Oob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Oob")
            .field("client", &self.client)
            .field("local", &self.stream.local_addr().ok())
            .field("peer", &self.stream.peer_addr().ok())
            .finish()
    }
}

impl Oob {
    /// The server's side: waits on `listener` for one client (perftest
    /// listens with a backlog of 1 and accepts once), then stops
    /// listening.
    pub fn accept(listener: TcpListener) -> anyhow::Result<Oob> {
        let (stream, _) = listener
            .accept()
            .context("accepting the client's connection")?;
        Self::new(stream, false)
    }

    /// The server's side on TCP `port` of every local address.
    pub fn listen(port: u16) -> anyhow::Result<Oob> {
        let l = TcpListener::bind(("0.0.0.0", port))
            .with_context(|| format!("listening on TCP port {port}"))?;
        Self::accept(l)
    }

    /// The client's side: connects to `host`:`port`, retrying until
    /// `patience` has passed (the server may not be listening yet).
    pub fn connect(host: &str, port: u16, patience: Duration) -> anyhow::Result<Oob> {
        let until = Instant::now() + patience;
        loop {
            let addrs = (host, port)
                .to_socket_addrs()
                .with_context(|| format!("resolving {host}"))?;
            let mut last = None;
            for a in addrs {
                match TcpStream::connect_timeout(&a, Duration::from_secs(1)) {
                    Ok(s) => return Self::new(s, true),
                    Err(e) => last = Some(e),
                }
            }
            if Instant::now() >= until {
                let e = last.map_or("no address".to_string(), |e| e.to_string());
                bail!("couldn't connect to {host}:{port}: {e}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn new(stream: TcpStream, client: bool) -> anyhow::Result<Oob> {
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(READ_TIMEOUT))?;
        Ok(Oob { stream, client })
    }

    /// Whether this side is the client (it writes first).
    pub fn is_client(&self) -> bool {
        self.client
    }

    /// One exchange: `mine` goes to the peer and as many bytes come back
    /// into `theirs`, in the order of this side's role.
    pub fn exchange(&mut self, mine: &[u8], theirs: &mut [u8]) -> anyhow::Result<()> {
        if self.client {
            self.write(mine)?;
            self.read(theirs)
        } else {
            self.read(theirs)?;
            self.write(mine)
        }
    }

    /// Writes all of `b`.
    pub fn write(&mut self, b: &[u8]) -> anyhow::Result<()> {
        self.stream
            .write_all(b)
            .map_err(|e| anyhow!("writing {} bytes to the peer: {e}", b.len()))
    }

    /// Reads exactly `b.len()` bytes.
    pub fn read(&mut self, b: &mut [u8]) -> anyhow::Result<()> {
        self.stream.read_exact(b).map_err(|e| match e.kind() {
            ErrorKind::UnexpectedEof => {
                anyhow!(
                    "the peer closed the connection ({} bytes expected)",
                    b.len()
                )
            }
            ErrorKind::WouldBlock | ErrorKind::TimedOut => anyhow!(
                "the peer sent nothing for {} s ({} bytes expected)",
                READ_TIMEOUT.as_secs(),
                b.len()
            ),
            _ => anyhow!("reading {} bytes from the peer: {e}", b.len()),
        })
    }

    /// Whether the peer has sent something not read yet, or closed the
    /// connection (without blocking).
    pub fn peer_spoke(&mut self) -> anyhow::Result<bool> {
        self.stream.set_nonblocking(true)?;
        let mut b = [0u8; 1];
        let r = self.stream.peek(&mut b);
        self.stream.set_nonblocking(false)?;
        match r {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == ErrorKind::WouldBlock => Ok(false),
            Err(e) => Err(anyhow!("the connection to the peer failed: {e}")),
        }
    }
}
