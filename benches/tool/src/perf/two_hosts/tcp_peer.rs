//! [`TcpPeer`]: the [`PeerLink`] of a two-host run over perftest's TCP
//! exchange.

use crate::perf::engine::{PeerLink, Role};
use crate::perf::report::PeerRun;
use crate::perf::run::{PerfArgs, PerfRunConfig, PerfRunReport, PerfTest, PortAttrs};
use crate::perftest::format::Endpoint;

/// The out-of-band link to the peer host over TCP.
pub struct TcpPeer {
    role: Role,
}

impl TcpPeer {
    /// Connects to the peer (client) or waits for it (server) and runs
    /// perftest's exchange up to the key messages.
    pub fn establish(
        _test: PerfTest,
        _args: &PerfArgs,
        _cfg: &PerfRunConfig,
        role: Role,
        _port: Option<PortAttrs>,
    ) -> anyhow::Result<TcpPeer> {
        let _ = TcpPeer { role };
        anyhow::bail!("not implemented yet")
    }
}

impl PeerLink for TcpPeer {
    fn cycle_buffer(&self) -> usize {
        4096
    }
    fn peer_is_bareverbs(&self) -> bool {
        self.role == Role::Client
    }
    fn keys(&mut self, _mine: &[Endpoint]) -> anyhow::Result<Vec<Endpoint>> {
        anyhow::bail!("not implemented yet")
    }
    fn ready(&mut self, _mine: &[Endpoint]) -> anyhow::Result<()> {
        anyhow::bail!("not implemented yet")
    }
    fn peer_spoke(&mut self) -> anyhow::Result<bool> {
        anyhow::bail!("not implemented yet")
    }
    fn finish(&mut self, _cfg: &PerfRunConfig, _rep: &PerfRunReport) -> anyhow::Result<PeerRun> {
        anyhow::bail!("not implemented yet")
    }
}
