//! [`TcpPeer`]: the [`PeerLink`] of a two-host run over perftest's TCP
//! exchange ([`crate::perftest::sockets`]), in the order each perftest
//! test speaks it ([`Script`]).

use crate::perf::engine::{PeerLink, Role};
use crate::perf::report::{PeerBw, PeerRun};
use crate::perf::run::{PerfArgs, PerfRunConfig, PerfRunReport, PerfTest};
use crate::perftest::format::{Endpoint, Verb};
use crate::perftest::sockets::{BwReport, KeyMessage, Negotiate, Oob, SysData, Version};
use crate::perftest::stats::{bw_stats, BwUnit};
use anyhow::anyhow;
use std::time::Duration;

/// How long a client keeps trying to reach a server that is not
/// listening yet.
const CONNECT_PATIENCE: Duration = Duration::from_secs(30);

/// The order of a perftest test's exchange around the key messages and
/// the run (perftest 6.29, `RUN_REGULAR`, neither duplex nor RDMA CM):
///
/// | test | before the keys | after connecting | after the run |
/// | --- | --- | --- | --- |
/// | `ib_write_bw`, `ib_read_bw` | – | keys again, sync | sync, `xchg_bw_reports`, close |
/// | `ib_send_bw` | – | sync, keys again, sync | close |
/// | `ib_write_lat` | sync | keys again, sync | nothing |
/// | `ib_send_lat` | – | sync, keys again, sync | close |
/// | `ib_read_lat`, `ib_atomic_lat` | sync | keys again, sync | close |
///
/// "sync" is one `ctx_hand_shake` of QP 0's key message, "keys" one per
/// QP, "close" `ctx_close_connection` (a sync, then the socket closes).
/// Sources: `write_bw.c`, `read_bw.c`, `send_bw.c`, `write_lat.c`,
/// `send_lat.c`, `read_lat.c`, `atomic_lat.c` (the `main` of each).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Script {
    /// `ib_write_bw`, `ib_read_bw`.
    RdmaBw,
    /// `ib_send_bw`.
    SendBw,
    /// `ib_write_lat`.
    WriteLat,
    /// `ib_send_lat`.
    SendLat,
    /// `ib_read_lat`, `ib_atomic_lat`.
    ReadLat,
}

impl Script {
    /// The script of `test`.
    pub fn of(test: PerfTest) -> Script {
        match test {
            PerfTest::WriteBw | PerfTest::ReadBw => Script::RdmaBw,
            PerfTest::SendBw => Script::SendBw,
            PerfTest::WriteLat => Script::WriteLat,
            PerfTest::SendLat => Script::SendLat,
            PerfTest::ReadLat | PerfTest::AtomicLat => Script::ReadLat,
        }
    }
}

/// The out-of-band link to the peer host over TCP.
#[derive(Debug)]
pub struct TcpPeer {
    oob: Option<Oob>,
    role: Role,
    script: Script,
    peer: Version,
    sys: SysData,
    unit: BwUnit,
    no_peak: bool,
    /// QP 0's key message, sent in every sync.
    first: Option<KeyMessage>,
    /// The outstanding READs/atomics every key message announces: the
    /// peer sets its QPs' `max_rd_atomic` to it (perftest's
    /// `ctx_modify_qp_to_rts`), so it is what perftest would announce.
    out_reads: u32,
}

/// The most READs/atomics in flight per QP this host offers (the
/// negotiate block's `max_qp_rd_atom`, the key message's `out_reads` for
/// READ and atomic tests before the peer's limit lowers it).
const MAX_RD_ATOM: u32 = 16;

/// This host's page size and cache line (perftest's defaults:
/// `sysconf(_SC_PAGESIZE)` and the CPU's line).
const OURS: SysData = SysData {
    cycle_buffer: 4096,
    cache_line: 64,
};

/// What perftest calls the verb of `v` (`negotiate_params`).
fn verb_code(v: Verb) -> u32 {
    match v {
        Verb::Send => 0,
        Verb::Write => 2,
        Verb::Read => 4,
        Verb::Atomic => 5,
    }
}

impl TcpPeer {
    /// Connects to the peer (client: `args.host`, retrying for a while)
    /// or waits for it (server) on `args.port`, then runs perftest's
    /// exchange up to the key messages: versions (a peer before 5.70 is
    /// refused), cycle buffer and cache line, MTU, the negotiated
    /// parameters. Returns the link and the agreed MTU in bytes.
    pub fn establish(
        test: PerfTest,
        args: &PerfArgs,
        cfg: &PerfRunConfig,
        role: Role,
    ) -> anyhow::Result<(TcpPeer, u32)> {
        let mut oob = match (role, args.host.as_deref()) {
            (Role::Client, Some(h)) => Oob::connect(h, args.port, CONNECT_PATIENCE)?,
            (Role::Server, _) => Oob::listen(args.port)?,
            _ => {
                return Err(anyhow!(
                    "a two-host run is a client (HOST given) or a server"
                ))
            }
        };
        let peer = oob.exchange_versions()?;
        peer.check()?;
        let sys = oob.check_sys_data(&peer, OURS)?;
        let mtu = bareverbs::cmd::ops::IbMtu::from_bytes(cfg.mtu)
            .ok_or_else(|| anyhow!("MTU {} is not an IB MTU", cfg.mtu))?;
        let agreed = oob.check_mtu(&peer, mtu.code())?;
        let mtu_bytes = 128u32 << agreed;
        let n = Negotiate {
            verb: verb_code(test.verb()),
            tst: u32::from(test.is_bw()),
            atomic_type: u32::from(test.verb() == Verb::Atomic),
            report_fmt: if args.report_gbits { 0 } else { 1 },
            size: cfg.size,
            iters: cfg.iters,
            num_of_qps: cfg.qps,
            duration: 5,
            max_qp_rd_atom: MAX_RD_ATOM,
            ..Negotiate::default()
        };
        // perftest asks for its device's limit only for READ and atomic
        // tests (`ctx_set_out_reads`), 1 otherwise, and lowers it to the
        // peer's `max_qp_rd_atom` (`compare_ibv_device`).
        let wanted = if matches!(test.verb(), Verb::Read | Verb::Atomic) {
            MAX_RD_ATOM
        } else {
            1
        };
        let out_reads = oob.negotiate(&peer, &n, wanted)?;
        let link = TcpPeer {
            oob: Some(oob),
            role,
            script: Script::of(test),
            peer,
            sys,
            unit: if args.report_gbits {
                BwUnit::Gbps
            } else {
                BwUnit::MBps
            },
            no_peak: args.no_peak,
            first: None,
            out_reads,
        };
        Ok((link, mtu_bytes))
    }

    fn oob(&mut self) -> anyhow::Result<&mut Oob> {
        self.oob
            .as_mut()
            .ok_or_else(|| anyhow!("the connection to the peer is closed"))
    }

    /// One `ctx_hand_shake` of QP 0's key message.
    fn sync(&mut self) -> anyhow::Result<KeyMessage> {
        let m = self
            .first
            .ok_or_else(|| anyhow!("no key message to synchronise with"))?;
        self.oob()?.hand_shake(&m)
    }

    /// The key messages of `mine`, announcing the negotiated `out_reads`.
    fn key_messages(&self, mine: &[Endpoint]) -> Vec<KeyMessage> {
        let reads = self.out_reads.min(0xffff) as u16;
        mine.iter()
            .map(|e| KeyMessage {
                out_reads: reads,
                ..key_of(e)
            })
            .collect()
    }

    /// One `ctx_hand_shake` per QP.
    fn keys_round(&mut self, mine: &[KeyMessage]) -> anyhow::Result<Vec<KeyMessage>> {
        let oob = self.oob()?;
        mine.iter().map(|m| oob.hand_shake(m)).collect()
    }

    /// `ctx_close_connection`: a sync, then the socket closes.
    fn close(&mut self) -> anyhow::Result<()> {
        self.sync()?;
        self.oob = None;
        Ok(())
    }

    /// This host's bandwidth report of `rep` (perftest's `my_bw_rep`;
    /// zero on a server, which measures nothing of a WRITE or READ).
    fn bw_report(&self, cfg: &PerfRunConfig, rep: &PerfRunReport) -> BwReport {
        if self.role == Role::Server {
            return BwReport::default();
        }
        let s = bw_stats(
            &rep.tposted,
            &rep.tcompleted,
            cfg.size,
            rep.tick_hz,
            self.unit,
            cfg.post_list as usize,
            cfg.cq_mod as usize,
            self.no_peak || rep.completions() > 20_000,
        );
        BwReport {
            size: cfg.size,
            iters: rep.completions(),
            bw_peak: s.map_or(0.0, |s| s.bw_peak),
            bw_avg: s.map_or(0.0, |s| s.bw_avg),
            msg_rate_avg: s.map_or(0.0, |s| s.msg_rate_mpps),
        }
    }
}

/// The key message of `e` (with its GID unless the GID is zero: an
/// InfiniBand port without `-x`).
fn key_of(e: &Endpoint) -> KeyMessage {
    KeyMessage {
        lid: e.lid,
        out_reads: e.out_reads.min(0xffff) as u16,
        qpn: e.qpn,
        psn: e.psn,
        rkey: e.rkey,
        vaddr: e.vaddr,
        gid: (e.gid != [0; 16]).then_some(e.gid),
        srqn: 0,
    }
}

/// The endpoint a peer's key message names.
fn endpoint_of(k: &KeyMessage) -> Endpoint {
    Endpoint {
        lid: k.lid,
        qpn: k.qpn,
        psn: k.psn,
        out_reads: k.out_reads as u32,
        rkey: k.rkey,
        vaddr: k.vaddr,
        gid: k.gid.unwrap_or([0; 16]),
    }
}

impl PeerLink for TcpPeer {
    fn cycle_buffer(&self) -> usize {
        self.sys.cycle_buffer as usize
    }

    fn peer_is_bareverbs(&self) -> bool {
        self.peer.bareverbs
    }

    fn keys(&mut self, mine: &[Endpoint]) -> anyhow::Result<Vec<Endpoint>> {
        let keys = self.key_messages(mine);
        self.first = keys.first().copied();
        if matches!(self.script, Script::WriteLat | Script::ReadLat) {
            self.sync()?;
        }
        Ok(self.keys_round(&keys)?.iter().map(endpoint_of).collect())
    }

    fn ready(&mut self, mine: &[Endpoint]) -> anyhow::Result<()> {
        let keys = self.key_messages(mine);
        if matches!(self.script, Script::SendBw | Script::SendLat) {
            self.sync()?;
        }
        self.keys_round(&keys)?;
        // The hand shake after RTR (SEND tests: after the receives).
        self.sync()?;
        Ok(())
    }

    fn peer_spoke(&mut self) -> anyhow::Result<bool> {
        match self.oob.as_mut() {
            Some(o) => o.peer_spoke(),
            None => Ok(true),
        }
    }

    fn finish(&mut self, cfg: &PerfRunConfig, rep: &PerfRunReport) -> anyhow::Result<PeerRun> {
        let mut bw = None;
        match self.script {
            Script::RdmaBw => {
                self.sync()?;
                let ours = self.bw_report(cfg, rep);
                let peer = self.peer.clone();
                let theirs = self.oob()?.exchange_bw_reports(&peer, &ours)?;
                bw = Some(PeerBw {
                    size: theirs.size,
                    iters: theirs.iters,
                    bw_peak: theirs.bw_peak,
                    bw_avg: theirs.bw_avg,
                    msg_rate_avg: theirs.msg_rate_avg,
                });
                self.close()?;
            }
            Script::SendBw | Script::SendLat | Script::ReadLat => self.close()?,
            Script::WriteLat => self.oob = None,
        }
        Ok(PeerRun {
            role: if self.role == Role::Server {
                "server"
            } else {
                "client"
            },
            version: self.peer.text.clone(),
            bareverbs: self.peer.bareverbs,
            bw,
        })
    }
}
