//! `bareverbs perf write-lat|write-bw|send-lat|send-bw|read-lat|read-bw|atomic-lat`:
//! perftest-style tests. The transfer itself comes from a [`PerfBackend`];
//! statistics and output are perftest's ([`crate::perftest`]).
//!
//! Backends (`--device`): `sim` (default, [`super::sim_backend`]: two
//! simulated ConnectX joined by a fabric, modeled time); `model`
//! ([`ModelBackend`](super::model_backend::ModelBackend): timelines
//! computed from the [`NicModel`](crate::model::NicModel) plus
//! the *measured* CPU cost of posting into a memory-backed SQ); `vfio:BDF`
//! ([`super::cmd_backend`] over a ConnectX through VFIO: objects and QPs
//! created by firmware command, transfers measured on hardware); `fw-sim`
//! (the same command-path code on the simulator behind the firmware
//! command interface, modeled time).

use crate::budget::load_caps;
use crate::model::{load_model, NicCost};
use crate::perftest::format::{self as pf, Endpoint, HeaderInfo, Verb};
use crate::perftest::stats::{bw_average, bw_stats, lat_stats_from_posted, BwUnit, GBS_DIVISOR};
use anyhow::bail;
use bareverbs::sizing::{DeviceCaps, QpCaps, QpType, SendOps};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Which perftest binary is imitated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum PerfTest {
    /// ib_write_lat.
    WriteLat,
    /// ib_write_bw.
    WriteBw,
    /// ib_send_lat.
    SendLat,
    /// ib_send_bw.
    SendBw,
    /// ib_read_lat.
    ReadLat,
    /// ib_read_bw.
    ReadBw,
    /// ib_atomic_lat.
    AtomicLat,
}

impl PerfTest {
    /// Verb.
    pub fn verb(self) -> Verb {
        match self {
            PerfTest::WriteLat | PerfTest::WriteBw => Verb::Write,
            PerfTest::SendLat | PerfTest::SendBw => Verb::Send,
            PerfTest::ReadLat | PerfTest::ReadBw => Verb::Read,
            PerfTest::AtomicLat => Verb::Atomic,
        }
    }
    /// Bandwidth test.
    pub fn is_bw(self) -> bool {
        matches!(
            self,
            PerfTest::WriteBw | PerfTest::SendBw | PerfTest::ReadBw
        )
    }
}

/// Connection type (`-c`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[value(rename_all = "UPPER")]
pub enum Conn {
    /// Reliable connected.
    Rc,
    /// Unreliable connected.
    Uc,
    /// Unreliable datagram.
    Ud,
}

/// perftest flags (those that apply) plus bareverbs' own.
#[derive(Clone, Debug, clap::Args)]
pub struct PerfArgs {
    /// Message size in bytes (default 2 for latency, 65536 for bandwidth, 8 atomic).
    #[arg(short = 's', long = "size", value_parser = crate::args::perf_size)]
    pub size: Option<u64>,
    /// Run sizes from 2 till 2^23.
    #[arg(short = 'a', long = "all")]
    pub all: bool,
    /// Iterations (default 1000 latency, 5000 bandwidth).
    #[arg(short = 'n', long = "iters", allow_negative_numbers = true, value_parser = crate::args::count_u64)]
    pub iters: Option<u64>,
    /// Number of QPs.
    #[arg(short = 'q', long = "qp", default_value_t = 1, allow_negative_numbers = true, value_parser = crate::args::count_u32)]
    pub qps: u32,
    /// TX depth (default 1 latency, 128 bandwidth).
    #[arg(short = 't', long = "tx-depth", allow_negative_numbers = true, value_parser = crate::args::count_u32)]
    pub tx_depth: Option<u32>,
    /// Post list: WRs per doorbell.
    #[arg(short = 'l', long = "post_list", default_value_t = 1, allow_negative_numbers = true, value_parser = crate::args::positive_u32)]
    pub post_list: u32,
    /// CQ moderation: one signaled WR every N (perftest default 100; 1 for
    /// messages over 8192 B unless given; at most the TX depth).
    #[arg(short = 'Q', long = "cq-mod", allow_negative_numbers = true, value_parser = crate::args::count_u32)]
    pub cq_mod: Option<u32>,
    /// Max inline size (perftest defaults: WRITE 220, SEND RC/UC 236, UD 188).
    #[arg(short = 'I', long = "inline_size", allow_negative_numbers = true, value_parser = crate::args::byte_size_u32)]
    pub inline_size: Option<u32>,
    /// Connection type.
    #[arg(short = 'c', long = "connection", value_enum, default_value = "RC")]
    pub conn: Conn,
    /// Report Gb/sec instead of MB/sec.
    #[arg(long = "report_gbits")]
    pub report_gbits: bool,
    /// Run for this many seconds of wall-clock time instead of -n
    /// iterations (on the simulator too; its figures stay in modeled time).
    #[arg(short = 'D', long = "duration", allow_negative_numbers = true, value_parser = crate::args::count_u64)]
    pub duration: Option<u64>,
    /// Do not compute the peak bandwidth.
    #[arg(short = 'N', long = "noPeak")]
    pub no_peak: bool,
    /// Path MTU (perftest default: the port's active MTU; a larger request
    /// is lowered to it).
    #[arg(short = 'm', long = "mtu")]
    pub mtu: Option<u32>,
    /// SGEs posted per WR (the message is split over them).
    #[arg(long, default_value_t = 1)]
    pub sge: u32,
    /// max_send_sge of the QP (default: --sge).
    #[arg(long = "max-send-sge")]
    pub max_send_sge: Option<u32>,
    /// max_send_wr of the QP (default: TX depth, as perftest).
    #[arg(long = "max-send-wr")]
    pub max_send_wr: Option<u32>,
    /// Send-op set: `classic` (legacy create, 192 B overhead), `rdma`
    /// (write,send,read) or a list like `write,send,atomic`. Default: what
    /// perftest requests (rdma; +atomics for atomic-lat).
    #[arg(long = "send-ops")]
    pub send_ops: Option<String>,
    /// Packet loss probability on the wire.
    #[arg(long, default_value_t = 0.0)]
    pub loss: f64,
    /// Seed for the loss process.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Print one JSON object instead of perftest text.
    #[arg(long)]
    pub json: bool,
    /// `sim` (default), `model`, `fw-sim` (the command path on the
    /// simulator) or `vfio:BDF` (a ConnectX through VFIO).
    #[arg(long, default_value = "sim")]
    pub device: String,
    /// With `vfio:BDF` / `fw-sim`: copy single inline WQEs through the
    /// BlueFlame register (default: 8-byte doorbells only).
    #[arg(long)]
    pub blueflame: bool,
    /// NIC model parameters (TOML).
    #[arg(long)]
    pub model: Option<PathBuf>,
    /// Device capabilities (TOML, as `budget --caps`).
    #[arg(long)]
    pub caps: Option<PathBuf>,
}

/// A resolved run configuration (one message size).
#[derive(Clone, Debug, serde::Serialize)]
pub struct PerfRunConfig {
    /// Test.
    pub test: PerfTest,
    /// Message bytes.
    pub size: u64,
    /// Iterations (per QP).
    pub iters: u64,
    /// QPs.
    pub qps: u32,
    /// TX depth.
    pub tx_depth: u32,
    /// WRs per doorbell.
    pub post_list: u32,
    /// CQ moderation.
    pub cq_mod: u32,
    /// Max inline bytes requested for the QP.
    pub inline_size: u32,
    /// This message size is posted inline.
    pub inline: bool,
    /// Connection.
    pub conn: Conn,
    /// Posted SGEs.
    pub sge: u32,
    /// QP max_send_sge.
    pub max_send_sge: u32,
    /// QP max_send_wr.
    pub max_send_wr: u32,
    /// Send-op set (None = classic).
    #[serde(skip)]
    pub send_ops: Option<SendOps>,
    /// Send-op set name.
    pub send_ops_name: String,
    /// Loss probability.
    pub loss: f64,
    /// Seed.
    pub seed: u64,
    /// Duration mode, seconds.
    pub duration: Option<u64>,
    /// MTU.
    pub mtu: u32,
    /// Device capabilities used for sizing.
    #[serde(skip)]
    pub caps: DeviceCaps,
}

/// What a backend returns.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct PerfRunReport {
    /// Backend name.
    pub backend: String,
    /// Times are modeled, not measured on a NIC.
    pub modeled: bool,
    /// WRs posted.
    pub posted: u64,
    /// Successful completions (incl. unsignaled ones retired by a later CQE).
    pub completed_ok: u64,
    /// Error completions (incl. flushed).
    pub completed_err: u64,
    /// Messages that did not arrive intact at the responder.
    pub mismatches: u64,
    /// Message rate (Mpps).
    pub msg_rate_mpps: f64,
    /// Average bandwidth (Gb/s, decimal).
    pub bandwidth_gbps: f64,
    /// Ticks per second of the timestamps below.
    pub tick_hz: f64,
    /// Post timestamp of each iteration (ticks).
    #[serde(skip)]
    pub tposted: Vec<u64>,
    /// Completion timestamp of each iteration (ticks; BW tests).
    #[serde(skip)]
    pub tcompleted: Vec<u64>,
    /// Latency samples, ns (successive post deltas / rtt factor).
    #[serde(skip)]
    pub latency_samples_ns: Vec<f64>,
    /// Stamps past the ones kept above: a `-D` run keeps at most a fixed
    /// number of each kind (memory stays bounded however long it runs)
    /// and counts the rest here, with the last of each.
    #[serde(skip)]
    pub beyond: StampsBeyond,
    /// Modeled one-way latency of an idle step, ns.
    pub modeled_latency_ns: f64,
    /// Measured CPU ns per posted WR.
    pub post_ns: f64,
    /// Posted WQE bytes (read back from the SQ).
    pub wqe_bytes: u32,
    /// WQEBBs per WQE.
    pub wqebbs: u32,
    /// SQ ring bytes.
    pub ring_bytes: u64,
    /// NIC-side cost per WQE.
    pub nic: NicCost,
    /// Rate of the modeled link the transfers cross (Gb/s, decimal); 0
    /// when the backend does not know it (hardware).
    pub link_gbps: f64,
    /// Event counters.
    pub counters: BTreeMap<String, f64>,
    /// This side's QP (`local address` line); `None` when the backend has
    /// no QP to show (the zero state is printed).
    pub local: Option<Endpoint>,
    /// The peer QP (`remote address` line); as `local`.
    pub remote: Option<Endpoint>,
}

/// The stamps of a `-D` run past the kept ones ([`PerfRunReport::beyond`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StampsBeyond {
    /// Post stamps not kept.
    pub posted: u64,
    /// The last of them.
    pub last_posted: u64,
    /// Completion stamps not kept.
    pub completed: u64,
    /// The last of them.
    pub last_completed: u64,
    /// Latency samples not kept.
    pub samples: u64,
}

impl PerfRunReport {
    /// Completion stamps in all (kept and counted).
    pub fn completions(&self) -> u64 {
        self.tcompleted.len() as u64 + self.beyond.completed
    }
    /// The last completion stamp, if any.
    pub fn last_completion(&self) -> Option<u64> {
        if self.beyond.completed > 0 {
            Some(self.beyond.last_completed)
        } else {
            self.tcompleted.last().copied()
        }
    }
    /// Post stamps in all (kept and counted).
    pub fn posts(&self) -> u64 {
        self.tposted.len() as u64 + self.beyond.posted
    }
    /// The last post stamp, if any.
    pub fn last_post(&self) -> Option<u64> {
        if self.beyond.posted > 0 {
            Some(self.beyond.last_posted)
        } else {
            self.tposted.last().copied()
        }
    }
}

/// A source of transfers: the model, the simulator, or a NIC (or the
/// simulator) driven through the firmware command path.
pub trait PerfBackend {
    /// Name shown in the header.
    fn name(&self) -> String;
    /// What the header says about the times.
    fn timing_note(&self) -> String {
        "times are MODELED, not measured on a NIC".into()
    }
    /// Runs one configuration.
    fn run(&mut self, cfg: &PerfRunConfig) -> anyhow::Result<PerfRunReport>;
    /// Why this backend cannot honour `cfg` / `args` (a flag perftest
    /// accepts but this backend does not implement), if it cannot.
    fn refuse(&self, _cfg: &PerfRunConfig, _args: &PerfArgs) -> Option<String> {
        None
    }
    /// Header note lines about how this backend runs `cfg` (what `-D`
    /// means here, a lowered TX depth, what the figures' spread means).
    fn notes(&self, _cfg: &PerfRunConfig) -> Vec<String> {
        Vec::new()
    }
}

fn sizing_type(c: Conn) -> QpType {
    match c {
        Conn::Rc => QpType::Rc,
        Conn::Uc => QpType::Uc,
        Conn::Ud => QpType::Ud,
    }
}

/// The QP request perftest would make for `cfg`.
pub fn qp_request(cfg: &PerfRunConfig) -> QpCaps {
    let q =
        QpCaps::new(sizing_type(cfg.conn)).send(cfg.max_send_wr, cfg.max_send_sge, cfg.inline_size);
    match cfg.send_ops {
        Some(o) => q.ops(o),
        None => q,
    }
}

/// perftest's path MTU values (`set_mtu`).
pub const PERFTEST_MTUS: [u32; 5] = [256, 512, 1024, 2048, 4096];
/// perftest `MIN_ITER` / `MAX_ITER` (`-n`).
pub const ITERS_RANGE: (u64, u64) = (5, 4_294_967_296);
/// perftest `MIN_TX` / `MAX_TX` (`-t`).
pub const TX_RANGE: (u32, u32) = (1, 15000);
/// perftest `MIN_QP_NUM` / `MAX_QP_NUM` (`-q`).
pub const QP_RANGE: (u32, u32) = (1, 16384);
/// perftest `MIN_CQ_MOD` / `MAX_CQ_MOD` (`-Q`).
pub const CQ_MOD_RANGE: (u32, u32) = (1, 1024);
/// perftest `MAX_INLINE` (`-I` is 0..=this).
pub const MAX_INLINE: u32 = 1024;
/// perftest's largest `-s`: `UINT_MAX / 2`.
pub const MAX_MSG_SIZE: u64 = (u32::MAX / 2) as u64;
/// perftest `MSG_SIZE_CQ_MOD_LIMIT`: above it CQ moderation defaults to 1.
pub const MSG_SIZE_CQ_MOD_LIMIT: u64 = 8192;
/// perftest `DEF_CQ_MOD`.
pub const DEF_CQ_MOD: u32 = 100;

/// Refuses what perftest refuses (`perftest_parameters.c`: the option
/// parser, `change_conn_type`, `force_dependecies`, `set_mtu`), with
/// perftest's message.
pub fn perftest_rules(test: PerfTest, args: &PerfArgs) -> anyhow::Result<()> {
    let verb = test.verb();
    let bw = test.is_bw();
    match (args.conn, verb) {
        (Conn::Uc, Verb::Read | Verb::Atomic) => {
            bail!("UC connection not possible in READ/ATOMIC verbs")
        }
        (Conn::Ud, v) if v != Verb::Send => bail!("UD connection only possible in SEND verb"),
        _ => {}
    }
    if let Some(m) = args.mtu.filter(|m| !PERFTEST_MTUS.contains(m)) {
        bail!(
            "Invalid MTU - {}: please choose mtu from {{256,512,1024,2048,4096}}",
            m
        );
    }
    if let Some(n) = args.iters {
        if !(ITERS_RANGE.0..=ITERS_RANGE.1).contains(&n) {
            bail!(
                "Iteration num should be between {} and {}",
                ITERS_RANGE.0,
                ITERS_RANGE.1
            );
        }
    }
    if let Some(t) = args.tx_depth {
        if !(TX_RANGE.0..=TX_RANGE.1).contains(&t) {
            bail!(
                "Tx depth should be between {} and {}",
                TX_RANGE.0,
                TX_RANGE.1
            );
        }
    }
    if !(QP_RANGE.0..=QP_RANGE.1).contains(&args.qps) {
        bail!(
            "num of Qps should be between {} and {}",
            QP_RANGE.0,
            QP_RANGE.1
        );
    }
    if !bw && args.qps > 1 {
        bail!("Multiple QPs only available on bw tests");
    }
    if let Some(i) = args.inline_size {
        if i > MAX_INLINE {
            bail!("Max inline should be between 0 and {MAX_INLINE}");
        }
        if matches!(verb, Verb::Read | Verb::Atomic) {
            bail!("Inline feature not available on READ/Atomic verbs");
        }
    }
    if let Some(q) = args.cq_mod {
        if !(CQ_MOD_RANGE.0..=CQ_MOD_RANGE.1).contains(&q) {
            bail!(
                "CQ moderation should be between {} and {}",
                CQ_MOD_RANGE.0,
                CQ_MOD_RANGE.1
            );
        }
    }
    if let Some(sz) = args.size {
        if !(1..=MAX_MSG_SIZE).contains(&sz) {
            bail!("Message Size should be between 1 and {MAX_MSG_SIZE}");
        }
    }
    // -a sets the size to MAX_SIZE before this check in perftest.
    if verb == Verb::Atomic && (args.all || args.size.is_some_and(|s| s != 8)) {
        bail!("Message size cannot be changed for Atomic tests");
    }
    if args.post_list > 1 {
        if !bw {
            bail!("Post list is supported in BW tests only");
        }
        let iters = args.iters.unwrap_or(5000);
        if args.duration.is_none() && !iters.is_multiple_of(args.post_list as u64) {
            bail!("Number of iterations must be a multiple of post list size");
        }
        if let Some(q) = args.cq_mod {
            if !args.post_list.is_multiple_of(q) {
                bail!("Post list size must be a multiple of CQ moderation");
            }
        }
    }
    if let Some(d) = args.duration {
        if d == 0 {
            bail!("Duration period must be positive");
        }
        if args.all {
            bail!("Duration mode currently doesn't support running on all sizes.");
        }
    }
    Ok(())
}

/// Resolves `args` into one config per message size, with perftest's
/// rules ([`perftest_rules`]) and adjustments (TX depth at most the
/// iterations, CQ moderation 1 above 8192 B unless given and at most the
/// TX depth, the post list as CQ moderation, UD sizes capped at the MTU).
pub fn configs(test: PerfTest, args: &PerfArgs) -> anyhow::Result<Vec<PerfRunConfig>> {
    configs_on_port(test, args, None)
}

/// The port a perf run uses, from the same source as `bareverbs devinfo`
/// ([`crate::devinfo::query`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortAttrs {
    /// Active MTU, bytes.
    pub active_mtu: u32,
    /// The link layer is Ethernet (RoCE); else InfiniBand.
    pub ethernet: bool,
}

/// The port `bareverbs devinfo --device` reports for this perf device
/// (`sim` and `fw-sim` share the simulated firmware's port), or `None`
/// for `--device model`, which has no port.
pub fn port_attrs(device: &str) -> anyhow::Result<Option<PortAttrs>> {
    let name = match device {
        "sim" | "fw-sim" => "sim",
        d if d.starts_with("vfio:") => d,
        _ => return Ok(None),
    };
    let d = crate::devinfo::query(name)?;
    Ok(d.ports.first().map(|p| PortAttrs {
        active_mtu: p.active_mtu.unwrap_or(DEFAULT_MTU),
        ethernet: p.link_layer == bareverbs::device::LinkLayer::Ethernet,
    }))
}

/// MTU without a port to take it from (`--device model`).
const DEFAULT_MTU: u32 = 4096;

/// perftest `set_mtu`: the requested MTU, else the port's active MTU; a
/// request above the active MTU runs at the active MTU.
pub fn effective_mtu(args: &PerfArgs, port: Option<PortAttrs>) -> u32 {
    match (args.mtu, port) {
        (Some(m), Some(p)) => m.min(p.active_mtu),
        (Some(m), None) => m,
        (None, Some(p)) => p.active_mtu,
        (None, None) => DEFAULT_MTU,
    }
}

/// [`configs`] on `port` (its active MTU, see [`effective_mtu`]).
pub fn configs_on_port(
    test: PerfTest,
    args: &PerfArgs,
    port: Option<PortAttrs>,
) -> anyhow::Result<Vec<PerfRunConfig>> {
    perftest_rules(test, args)?;
    let eff_mtu = effective_mtu(args, port);
    let verb = test.verb();
    let bw = test.is_bw();
    let caps = load_caps(args.caps.as_deref())?;
    let ud = args.conn == Conn::Ud;
    let mtu = eff_mtu as u64;
    let sizes: Vec<u64> = if verb == Verb::Atomic {
        vec![8]
    } else if args.all {
        // perftest: UD runs the sizes up to the MTU.
        (1..=23)
            .map(|e| 1u64 << e)
            .filter(|&s| !ud || s <= mtu)
            .collect()
    } else {
        let s = args.size.unwrap_or(if bw { 65536 } else { 2 });
        // perftest check_link_and_mtu: a UD message is at most one MTU.
        vec![if ud { s.min(mtu) } else { s }]
    };
    // perftest ctx_set_max_inline: without -I, latency tests default to
    // 220 (WRITE), 236 (SEND RC/UC), 188 (SEND UD); bandwidth tests to 0.
    let inline_size = match verb {
        Verb::Read | Verb::Atomic => 0,
        _ => args.inline_size.unwrap_or(match (verb, args.conn) {
            _ if bw => 0,
            (Verb::Write, _) => 220,
            (_, Conn::Ud) => 188,
            _ => 236,
        }),
    };
    let (send_ops, send_ops_name) = match args.send_ops.as_deref() {
        Some("classic") => (None, "classic".to_string()),
        Some(list) => {
            let l = if list == "rdma" {
                "write,send,read"
            } else {
                list
            };
            let o = SendOps::parse(l).map_err(|b| anyhow::anyhow!("unknown send op {b:?}"))?;
            (Some(o), list.to_string())
        }
        None => {
            if verb == Verb::Atomic {
                (
                    Some(SendOps::RDMA_ONLY | SendOps::ATOMIC_FA | SendOps::ATOMIC_CS),
                    "write,send,read,atomic".into(),
                )
            } else {
                (Some(SendOps::RDMA_ONLY), "rdma".into())
            }
        }
    };
    anyhow::ensure!(args.sge >= 1, "--sge must be >= 1");
    anyhow::ensure!(args.post_list >= 1, "-l must be >= 1");
    let iters_default = if bw { 5000 } else { 1000 };
    let mut out = Vec::new();
    for size in sizes {
        let mut iters = args.iters.unwrap_or(iters_default);
        let mut tx_depth = args.tx_depth.unwrap_or(if bw { 128 } else { 1 });
        if let Some(d) = args.duration {
            // Rough count: the engine stops posting after D wall-clock seconds.
            iters = (d.saturating_mul(1_000_000)).clamp(5, 2_000_000);
        } else if tx_depth as u64 > iters {
            // perftest: the TX depth is at most the iteration count.
            tx_depth = iters as u32;
        }
        let mut cq_mod = args.cq_mod.unwrap_or(DEF_CQ_MOD);
        if size > MSG_SIZE_CQ_MOD_LIMIT && !ud && !args.all && args.cq_mod.is_none() {
            cq_mod = 1;
        }
        cq_mod = cq_mod.min(tx_depth);
        if args.post_list > 1 && args.cq_mod.is_none() {
            cq_mod = args.post_list;
        }
        out.push(PerfRunConfig {
            test,
            size,
            iters,
            qps: args.qps,
            tx_depth,
            post_list: args.post_list,
            cq_mod,
            inline_size,
            inline: inline_size > 0 && size <= inline_size as u64,
            conn: args.conn,
            sge: args.sge,
            max_send_sge: args.max_send_sge.unwrap_or(args.sge),
            max_send_wr: args.max_send_wr.unwrap_or(tx_depth.max(args.post_list)),
            send_ops,
            send_ops_name: send_ops_name.clone(),
            loss: args.loss,
            seed: args.seed,
            duration: args.duration,
            mtu: eff_mtu,
            caps,
        });
    }
    Ok(out)
}

/// Why a finished run's figures cannot be trusted: not all of its work
/// completed successfully, payload arrived corrupted, or a bandwidth
/// exceeds the link the backend models. `bw_gbps` are the bandwidths
/// derived from the report (Gb/s).
pub fn verdict(cfg: &PerfRunConfig, rep: &PerfRunReport, bw_gbps: &[f64]) -> Option<String> {
    // -D: as many as the time allowed (at least perftest's 5 iterations).
    let per_qp = if cfg.duration.is_some() { 5 } else { cfg.iters };
    let want = per_qp * if cfg.test.is_bw() { cfg.qps as u64 } else { 1 };
    if rep.posted == 0 {
        return Some(format!("nothing was posted ({want} WRs expected)"));
    }
    if rep.posted < want {
        return Some(format!("only {} of {want} WRs were posted", rep.posted));
    }
    if rep.completed_err > 0 || rep.completed_ok < rep.posted {
        return Some(format!(
            "only {} of {} posted WRs completed successfully ({} with an error status)",
            rep.completed_ok, rep.posted, rep.completed_err
        ));
    }
    if rep.mismatches > 0 && (cfg.conn == Conn::Rc || cfg.loss == 0.0) {
        return Some(format!(
            "{} payload bytes did not arrive as sent",
            rep.mismatches
        ));
    }
    if rep.link_gbps > 0.0 {
        let limit = rep.link_gbps * (1.0 + 1e-9);
        for &g in bw_gbps.iter().chain([rep.bandwidth_gbps].iter()) {
            if g > limit {
                return Some(format!(
                    "{g:.2} Gb/s exceeds the {} Gb/s link the backend models",
                    rep.link_gbps
                ));
            }
        }
    }
    None
}

/// A run's printed output and its verdict.
#[derive(Clone, Debug)]
pub struct PerfOutcome {
    /// perftest text or the JSON object (which carries `verdict` and, on
    /// failure, `error`).
    pub output: String,
    /// Why the figures cannot be trusted (the run must exit non-zero).
    pub failure: Option<String>,
}

/// The backend for `--device`.
pub fn backend(args: &PerfArgs) -> anyhow::Result<Box<dyn PerfBackend>> {
    use super::cmd_backend::{self as cmd, CmdOptions};
    let mut opts = CmdOptions::new(&args.device);
    opts.blueflame = args.blueflame;
    if let Some(bdf) = args.device.strip_prefix("vfio:") {
        // Errors are the VFIO host's own, actionable text.
        return cmd::vfio(bdf, opts);
    }
    match args.device.as_str() {
        "sim" => Ok(Box::new(super::sim_backend::SimBackend::new(
            args.seed,
            bareverbs_sim::ModelParams::default(),
        ))),
        // The command-path backend on the simulator (modeled time).
        "fw-sim" => cmd::fw_sim(args.seed, opts),
        // The closed-form NIC model alone (perf ref §2.3), no simulation.
        "model" => Ok(Box::new(super::model_backend::ModelBackend::new(
            load_model(args.model.as_deref())?,
            args.seed,
        ))),
        d => bail!("unknown --device {d:?} (expected sim, model, fw-sim or vfio:BDF)"),
    }
}

/// perftest's binary name of `test` (`ib_write_bw` …).
pub fn perftest_name(test: PerfTest) -> &'static str {
    match test {
        PerfTest::WriteLat => "ib_write_lat",
        PerfTest::WriteBw => "ib_write_bw",
        PerfTest::SendLat => "ib_send_lat",
        PerfTest::SendBw => "ib_send_bw",
        PerfTest::ReadLat => "ib_read_lat",
        PerfTest::ReadBw => "ib_read_bw",
        PerfTest::AtomicLat => "ib_atomic_lat",
    }
}

/// The statistics of one result (what its row printed).
#[derive(Default)]
struct Figures {
    bw: Option<crate::perftest::stats::BwStats>,
    lat: Option<crate::perftest::stats::LatStats>,
    /// `-D` latency: (t_avg µs, transactions per second).
    dur: Option<(f64, f64)>,
}

fn be_modeled(results: &[serde_json::Value]) -> Option<bool> {
    results.iter().find_map(|r| r["modeled"].as_bool())
}

/// One `results[]` object of the perf schema (docs/json.md): every key is
/// present for every backend; what a backend or a failed run cannot know
/// is `null`.
fn result_json(
    cfg: &PerfRunConfig,
    rep: Option<&PerfRunReport>,
    iterations: u64,
    fig: &Figures,
    unit: BwUnit,
    error: Option<&str>,
) -> serde_json::Value {
    use serde_json::{json, Value};
    let f = |x: f64| if x.is_finite() { json!(x) } else { Value::Null };
    let known = |x: f64| if x > 0.0 { f(x) } else { Value::Null };
    let ep = |e: Option<&Endpoint>| match e {
        Some(e) => json!({
            "lid": e.lid, "qpn": e.qpn, "psn": e.psn, "out_reads": e.out_reads,
            "rkey": e.rkey, "vaddr": e.vaddr, "gid": e.gid,
        }),
        None => json!({
            "lid": null, "qpn": null, "psn": null, "out_reads": null,
            "rkey": null, "vaddr": null, "gid": null,
        }),
    };
    const ENGINE: [&str; 9] = [
        "doorbells",
        "wrs_posted",
        "cqes_polled",
        "window",
        "slots",
        "posted_sge",
        "sq_max_post",
        "sq_wqebbs",
        "sq_slot_bytes",
    ];
    let mut counters = serde_json::Map::new();
    let mut device = serde_json::Map::new();
    for k in ENGINE {
        counters.insert(
            k.into(),
            rep.and_then(|r| r.counters.get(k))
                .map_or(Value::Null, |&v| f(v)),
        );
    }
    if let Some(r) = rep {
        for (k, &v) in &r.counters {
            if !ENGINE.contains(&k.as_str()) {
                device.insert(k.clone(), f(v));
            }
        }
    }
    let bw = fig.bw.as_ref();
    let lat = fig.lat.as_ref();
    let peak = bw.and_then(|s| (s.bw_peak > 0.0).then_some(s.bw_peak));
    json!({
        "size": cfg.size,
        "iterations": rep.map(|_| iterations),
        "verdict": if error.is_some() { "fail" } else { "ok" },
        "error": error,
        "modeled": rep.map(|r| r.modeled),
        "posted": rep.map(|r| r.posted),
        "completed_ok": rep.map(|r| r.completed_ok),
        "completed_err": rep.map(|r| r.completed_err),
        "mismatches": rep.map(|r| r.mismatches),
        "msg_rate_mpps": rep.map_or(Value::Null, |r| f(r.msg_rate_mpps)),
        "bandwidth_gbps": rep.map_or(Value::Null, |r| f(r.bandwidth_gbps)),
        "bw_unit": bw.map(|_| match unit { BwUnit::Gbps => "Gb/sec", BwUnit::MBps => "MiB/sec" }),
        "bw_peak": peak,
        "bw_avg": bw.map(|s| s.bw_avg),
        "t_min_usec": lat.map(|s| s.t_min),
        "t_max_usec": lat.map(|s| s.t_max),
        "t_typical_usec": lat.map(|s| s.t_typical),
        "t_avg_usec": lat.map(|s| s.t_avg).or(fig.dur.map(|d| d.0)),
        "t_stdev_usec": lat.map(|s| s.t_stdev),
        "t_p99_usec": lat.map(|s| s.p99),
        "t_p999_usec": lat.map(|s| s.p99_9),
        "tps_avg": fig.dur.map(|d| d.1),
        "post_ns": rep.map_or(Value::Null, |r| known(r.post_ns)),
        "wqe_bytes": rep.and_then(|r| (r.wqe_bytes > 0).then_some(r.wqe_bytes)),
        "wqebbs": rep.and_then(|r| (r.wqebbs > 0).then_some(r.wqebbs)),
        "ring_bytes": rep.and_then(|r| (r.ring_bytes > 0).then_some(r.ring_bytes)),
        "link_gbps": rep.map_or(Value::Null, |r| known(r.link_gbps)),
        "modeled_latency_ns": rep.map_or(Value::Null, |r| if r.modeled { known(r.modeled_latency_ns) } else { Value::Null }),
        "local": ep(rep.and_then(|r| r.local.as_ref())),
        "remote": ep(rep.and_then(|r| r.remote.as_ref())),
        "counters": counters,
        "device_counters": device,
    })
}

/// The perf object of the schema (docs/json.md): the envelope shared by
/// every command, then the perf keys. `backend` is the backend's name and
/// whether its times are modeled, when one was opened.
fn perf_json(
    test: PerfTest,
    args: &PerfArgs,
    backend: Option<(&str, Option<bool>)>,
    header: Option<serde_json::Value>,
    results: Vec<serde_json::Value>,
    error: Option<&str>,
) -> serde_json::Value {
    crate::envelope::envelope(
        &format!("perf {}", super::engine::test_name(test)),
        serde_json::json!({
            "test": perftest_name(test),
            "device": args.device,
            "backend": backend.map(|b| b.0),
            "modeled": backend.and_then(|b| b.1),
            "verdict": if error.is_some() { "fail" } else { "ok" },
            "error": error,
            "header": header,
            "results": results,
        }),
    )
}

/// The JSON of a run that failed before any result (the backend could
/// not be opened): the same keys, `results` empty.
pub fn failure_json(test: PerfTest, args: &PerfArgs, error: &str) -> String {
    perf_json(test, args, None, None, Vec::new(), Some(error)).to_string()
}

/// Runs a perftest-style test and returns its output (text or JSON); a
/// run whose figures cannot be trusted ([`verdict`]) is an error.
pub fn run(test: PerfTest, args: &PerfArgs) -> anyhow::Result<String> {
    let o = run_outcome(test, args)?;
    match o.failure {
        Some(f) => Err(anyhow::anyhow!("{f}")),
        None => Ok(o.output),
    }
}

/// Runs a perftest-style test: its output and verdict. Flags perftest
/// refuses, or that the backend does not implement, are errors before
/// anything runs.
pub fn run_outcome(test: PerfTest, args: &PerfArgs) -> anyhow::Result<PerfOutcome> {
    run_streaming(test, args, &mut |_| {})
}

/// As [`run_outcome`], handing each piece of perftest text to `out` as
/// soon as it exists (the header before the first run, each row as its
/// size completes), so `-a` shows its rows while it runs and a failure
/// leaves the rows before it on screen. The JSON object is built at the
/// end (it is one object).
pub fn run_streaming(
    test: PerfTest,
    args: &PerfArgs,
    out: &mut dyn FnMut(&str),
) -> anyhow::Result<PerfOutcome> {
    use crate::args::UsageExt as _;
    let port = port_attrs(&args.device)?;
    // Bad flags are usage errors (exit 2), found before anything runs.
    let cfgs = configs_on_port(test, args, port).usage()?;
    let mut be = backend(args)?;
    stream_on(test, args, port, &cfgs, &mut *be, out)
}

/// The body of [`run_streaming`] on a chosen backend `be`, for the
/// resolved configurations `cfgs` (one per message size) of `port`.
fn stream_on(
    test: PerfTest,
    args: &PerfArgs,
    port: Option<PortAttrs>,
    cfgs: &[PerfRunConfig],
    be: &mut dyn PerfBackend,
    out: &mut dyn FnMut(&str),
) -> anyhow::Result<PerfOutcome> {
    for cfg in cfgs {
        if let Some(why) = be.refuse(cfg, args) {
            return Err(crate::args::usage_error(why));
        }
    }
    let unit = if args.report_gbits {
        BwUnit::Gbps
    } else {
        BwUnit::MBps
    };
    let verb = test.verb();
    let mut text = String::new();
    let first = &cfgs[0];
    let h = HeaderInfo {
        verb,
        bw: test.is_bw(),
        post_list: first.post_list,
        device: format!("bareverbs-{}", args.device),
        num_qps: first.qps,
        connection: format!("{:?}", first.conn).to_uppercase(),
        tx_depth: first.tx_depth,
        cq_mod: first.cq_mod,
        // perftest: dynamic CQE polling unless an iteration run is shorter
        // than 3000; a fixed batch of 16, or 64 above 2048 QPs and 8 KiB.
        cqe_poll: if first.duration.is_none() && first.iters < 3000 {
            let big = cfgs.last().is_some_and(|c| c.size > 8192) || args.all;
            Some(if first.qps > 2048 && big { 64 } else { 16 })
        } else {
            None
        },
        mtu: first.mtu,
        link_type: if port.is_some_and(|p| p.ethernet) {
            "Ethernet"
        } else {
            "IB"
        }
        .into(),
        gid_index: port.filter(|p| p.ethernet).map(|_| 0),
        max_inline: first.inline_size,
        out_reads: 16,
        notes: vec![
            format!("Backend         : {} -- {}", be.name(), be.timing_note()),
            format!(
                "QP              : max_send_wr {} max_send_sge {} posted SGEs {} send ops {}",
                first.max_send_wr, first.max_send_sge, first.sge, first.send_ops_name
            ),
        ]
        .into_iter()
        .chain(be.notes(first))
        .collect(),
    };
    let mut emit = |text: &mut String, s: &str| {
        text.push_str(s);
        if !args.json {
            out(s);
        }
    };
    emit(&mut text, &pf::header(&h));
    let mut results = Vec::new();
    let mut failure = None;
    let dur = args.duration.is_some();
    let columns = if test.is_bw() {
        pf::bw_columns(unit)
    } else if dur {
        pf::RESULT_FMT_LAT_DUR
    } else {
        pf::RESULT_FMT_LAT
    };
    for (n, cfg) in cfgs.iter().enumerate() {
        let rep = match be.run(cfg) {
            Ok(r) => r,
            Err(e) => {
                let f = format!("{e:#}");
                results.push(result_json(
                    cfg,
                    None,
                    0,
                    &Figures::default(),
                    unit,
                    Some(&f),
                ));
                failure = Some(f);
                break;
            }
        };
        if n == 0 {
            // perftest prints both QPs, then the columns.
            let gid = h.gid_index.is_some();
            let zero = Endpoint {
                out_reads: h.out_reads,
                ..Default::default()
            };
            let l = rep.local.clone().unwrap_or_else(|| zero.clone());
            let r = rep.remote.clone().unwrap_or(zero);
            let mut s = pf::address(verb, false, &l, gid);
            s.push_str(&pf::address(verb, true, &r, gid));
            s.push_str(pf::RESULT_LINE);
            s.push_str(columns);
            s.push('\n');
            emit(&mut text, &s);
        }
        let iters = if test.is_bw() {
            rep.completions()
        } else {
            rep.latency_samples_ns.len() as u64 + rep.beyond.samples
        };
        let mut row = String::new();
        let mut bw_gbps = Vec::new();
        let mut fig = Figures::default();
        if rep.tposted.len() < 2 || (test.is_bw() && rep.tcompleted.is_empty()) {
            failure = verdict(cfg, &rep, &[]).or(Some("no completions".into()));
        } else if test.is_bw() {
            let s = if dur {
                // No peak in duration mode (perftest's noPeak): the
                // average from the first post, the last completion and
                // the count, which a -D run keeps whatever its length.
                let (first, last) = (rep.tposted[0], rep.last_completion().unwrap_or(0));
                bw_average(first, last, iters, cfg.size, rep.tick_hz, unit)
            } else {
                bw_stats(
                    &rep.tposted,
                    &rep.tcompleted,
                    cfg.size,
                    rep.tick_hz,
                    unit,
                    cfg.post_list as usize,
                    cfg.cq_mod as usize,
                    args.no_peak || iters > 20_000,
                )
            }
            .ok_or_else(|| anyhow::anyhow!("no completions"))?;
            row.push_str(&pf::bw_row(cfg.size, iters, &s));
            let to_gbps = unit.divisor() / GBS_DIVISOR;
            bw_gbps = vec![s.bw_peak * to_gbps, s.bw_avg * to_gbps];
            fig.bw = Some(s);
        } else if dur {
            let n = rep.posts().saturating_sub(1).max(1);
            let last = rep.last_post().unwrap_or(rep.tposted[0]);
            let span = last.saturating_sub(rep.tposted[0]) as f64 / rep.tick_hz;
            let t_avg = span * 1e6 / n as f64 / verb.rtt_factor() as f64;
            row.push_str(&pf::lat_dur_row(cfg.size, n, t_avg, n as f64 / span));
            fig.dur = Some((t_avg, n as f64 / span));
        } else {
            let s = lat_stats_from_posted(&rep.tposted, rep.tick_hz / 1e6, verb.rtt_factor())
                .ok_or_else(|| anyhow::anyhow!("too few samples"))?;
            row.push_str(&pf::lat_row(cfg.size, iters, &s));
            fig.lat = Some(s);
        }
        if failure.is_none() {
            failure = verdict(cfg, &rep, &bw_gbps);
        }
        let r = result_json(cfg, Some(&rep), iters, &fig, unit, failure.as_deref());
        results.push(r);
        if failure.is_some() {
            // No figure of a failed run is printed as a result.
            break;
        }
        emit(&mut text, &row);
    }
    emit(&mut text, pf::RESULT_LINE);
    if args.json {
        let top = perf_json(
            test,
            args,
            Some((&be.name(), be_modeled(&results))),
            Some(serde_json::to_value(&h)?),
            results,
            failure.as_deref(),
        );
        return Ok(PerfOutcome {
            output: serde_json::to_string(&top)?,
            failure,
        });
    }
    Ok(PerfOutcome {
        output: text,
        failure,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        a: PerfArgs,
    }

    fn args(v: &[&str]) -> PerfArgs {
        let mut all = vec!["t"];
        all.extend_from_slice(v);
        T::parse_from(all).a
    }

    #[test]
    fn write_lat_end_to_end() {
        let out = run(
            PerfTest::WriteLat,
            &args(&["--device", "model", "-n", "200"]),
        )
        .unwrap();
        assert!(out.contains("RDMA_Write Latency Test"));
        assert!(out.contains(pf::RESULT_FMT_LAT));
        assert!(out.contains("MODELED"));
        let j: serde_json::Value = serde_json::from_str(
            &run(
                PerfTest::WriteLat,
                &args(&["--device", "model", "-n", "200", "--json"]),
            )
            .unwrap(),
        )
        .unwrap();
        // Ping-pong: each of the 200 iterations is one WRITE each way.
        assert_eq!(j["results"][0]["posted"], 400);
        assert_eq!(j["results"][0]["completed_ok"], 400);
        assert_eq!(j["results"][0]["completed_err"], 0);
        assert_eq!(j["results"][0]["mismatches"], 0);
        assert!(j["results"][0]["msg_rate_mpps"].as_f64().unwrap() > 0.0);
        assert!(j["results"][0]["modeled_latency_ns"].as_f64().unwrap() > 500.0);
        // 2 B inline WRITE: 32 + align16(6) = 48 B.
        assert_eq!(j["results"][0]["wqe_bytes"], 48);
    }

    #[test]
    fn bw_and_loss() {
        let j: serde_json::Value = serde_json::from_str(
            &run(
                PerfTest::WriteBw,
                &args(&[
                    "--device",
                    "model",
                    "--report_gbits",
                    "-n",
                    "1000",
                    "--json",
                ]),
            )
            .unwrap(),
        )
        .unwrap();
        assert_eq!(j["results"][0]["posted"], 1000);
        let g = j["results"][0]["bandwidth_gbps"].as_f64().unwrap();
        assert!(g > 1.0 && g <= 100.0, "{g}");
        let j: serde_json::Value = serde_json::from_str(
            &run(
                PerfTest::SendBw,
                &args(&[
                    "--device", "model", "-c", "UD", "-s", "1024", "--loss", "0.5", "--seed", "7",
                    "--json",
                ]),
            )
            .unwrap(),
        )
        .unwrap();
        // Half of the 5000 datagrams are lost: their 1024 bytes each never
        // arrive (mismatches count bytes).
        let m = j["results"][0]["mismatches"].as_u64().unwrap();
        assert!(
            m.is_multiple_of(1024) && m / 1024 > 1000 && m / 1024 < 4000,
            "{m}"
        );
    }

    /// `vfio:BDF` opens the function through the VFIO host; on a machine
    /// without that ConnectX the error is the host crate's own actionable
    /// text (no such device / not Mellanox / not bound to vfio-pci / no
    /// VFIO), not a panic.
    #[test]
    fn vfio_and_bad_sizing() {
        for bdf in ["0000:00:00.0", "0000:ff:1f.7"] {
            let e = run(
                PerfTest::WriteLat,
                &args(&["--device", &format!("vfio:{bdf}")]),
            )
            .unwrap_err();
            let want = match bareverbs_vfio::VfioNic::open(bdf) {
                Err(v) => v.to_string(),
                Ok(_) => continue, // a real ConnectX there: nothing to check
            };
            assert_eq!(e.to_string(), want);
        }
        let e = run(PerfTest::WriteLat, &args(&["--device", "vfio:3b:00"])).unwrap_err();
        assert!(e.to_string().contains("bad PCI address"), "{e}");
        let e = run(
            PerfTest::WriteLat,
            &args(&["--device", "model", "--sge", "60", "--send-ops", "classic"]),
        )
        .unwrap_err();
        assert!(e.to_string().contains("QP creation fails"), "{e}");
    }

    /// `--device fw-sim`: perftest's header and row, the header naming the
    /// command path and modeled time.
    #[test]
    fn fw_sim_text_and_json() {
        let out = run(
            PerfTest::WriteLat,
            &args(&["--device", "fw-sim", "-n", "100"]),
        )
        .unwrap();
        assert!(out.contains("RDMA_Write Latency Test"));
        assert!(out.contains("bareverbs-cmd on fw-sim"), "{out}");
        assert!(out.contains("MODELED (virtual clock)"), "{out}");
        assert!(out.contains(pf::RESULT_FMT_LAT));
        let j: serde_json::Value = serde_json::from_str(
            &run(
                PerfTest::ReadBw,
                &args(&["--device", "fw-sim", "-n", "200", "-s", "1024", "--json"]),
            )
            .unwrap(),
        )
        .unwrap();
        assert_eq!(j["results"][0]["posted"], 200);
        assert_eq!(j["results"][0]["completed_ok"], 200);
        assert_eq!(j["results"][0]["mismatches"], 0);
        assert_eq!(j["modeled"], true);
        assert!(j["results"][0]["bw_avg"].as_f64().unwrap() > 0.0);
        let e = run(PerfTest::WriteLat, &args(&["--device", "nic"])).unwrap_err();
        assert!(e.to_string().contains("fw-sim"), "{e}");
    }

    /// The simulator issue's acceptance run: RDMA WRITE bandwidth, 4 KiB,
    /// 20000 iterations on each of 8 QPs, 1% packet loss, seed 7 — every
    /// posted WR completes OK and no payload byte arrives corrupted.
    #[test]
    fn sim_write_bw_with_loss_completes_everything() {
        let j: serde_json::Value = serde_json::from_str(
            &run(
                PerfTest::WriteBw,
                &args(&[
                    "--device", "sim", "-s", "4096", "-n", "20000", "-q", "8", "--loss", "0.01",
                    "--seed", "7", "--json",
                ]),
            )
            .unwrap(),
        )
        .unwrap();
        assert_eq!(j["results"][0]["posted"], 160_000);
        assert_eq!(j["results"][0]["completed_ok"], 160_000);
        assert_eq!(j["results"][0]["completed_err"], 0);
        assert_eq!(j["results"][0]["mismatches"], 0);
        assert!(j["results"][0]["msg_rate_mpps"].as_f64().unwrap() > 0.0);
    }

    fn err(test: PerfTest, v: &[&str]) -> String {
        format!("{:#}", run(test, &args(v)).unwrap_err())
    }

    fn json(test: PerfTest, v: &[&str]) -> (serde_json::Value, Option<String>) {
        let mut v = v.to_vec();
        v.push("--json");
        let o = run_outcome(test, &args(&v)).unwrap();
        (serde_json::from_str(&o.output).unwrap(), o.failure)
    }

    /// perftest `change_conn_type`: UD only with SEND, UC without READ and
    /// atomics — on every backend, before anything runs.
    #[test]
    fn connection_types_perftest_refuses() {
        use PerfTest::*;
        for dev in ["sim", "fw-sim", "model"] {
            for t in [WriteBw, WriteLat, ReadBw, ReadLat, AtomicLat] {
                let e = err(t, &["--device", dev, "-c", "UD", "-n", "100"]);
                assert_eq!(e, "UD connection only possible in SEND verb", "{t:?} {dev}");
            }
            for t in [ReadBw, ReadLat, AtomicLat] {
                let e = err(t, &["--device", dev, "-c", "UC", "-n", "100"]);
                assert_eq!(e, "UC connection not possible in READ/ATOMIC verbs");
            }
        }
    }

    /// perftest's option ranges (CHECK_VALUE_IN_RANGE and friends) and
    /// cross-checks (force_dependecies), with its messages.
    #[test]
    fn flags_perftest_refuses() {
        use PerfTest::*;
        let cases: &[(PerfTest, &[&str], &str)] = &[
            (WriteBw, &["-m", "99999"], "Invalid MTU - 99999"),
            (WriteBw, &["-m", "1500"], "{256,512,1024,2048,4096}"),
            (
                WriteBw,
                &["-s", "0"],
                "Message Size should be between 1 and 2147483647",
            ),
            (
                WriteBw,
                &["-s", "4294967296"],
                "Message Size should be between 1 and",
            ),
            (
                WriteBw,
                &["-t", "0"],
                "Tx depth should be between 1 and 15000",
            ),
            (
                WriteBw,
                &["-t", "15001"],
                "Tx depth should be between 1 and 15000",
            ),
            (
                WriteBw,
                &["-n", "4"],
                "Iteration num should be between 5 and 4294967296",
            ),
            (
                WriteBw,
                &["-q", "0"],
                "num of Qps should be between 1 and 16384",
            ),
            (
                WriteBw,
                &["-q", "16385"],
                "num of Qps should be between 1 and 16384",
            ),
            (
                WriteBw,
                &["-Q", "0"],
                "CQ moderation should be between 1 and 1024",
            ),
            (
                WriteBw,
                &["-Q", "1025"],
                "CQ moderation should be between 1 and 1024",
            ),
            (
                WriteBw,
                &["-I", "100000"],
                "Max inline should be between 0 and 1024",
            ),
            (WriteBw, &["-D", "0"], "Duration period must be positive"),
            (
                WriteBw,
                &["-D", "1", "-a"],
                "Duration mode currently doesn't support",
            ),
            (
                WriteBw,
                &["-l", "3", "-n", "1000"],
                "Number of iterations must be a multiple of post list size",
            ),
            (
                WriteBw,
                &["-l", "4", "-Q", "3", "-n", "1000"],
                "Post list size must be a multiple of CQ moderation",
            ),
            (
                ReadLat,
                &["-l", "16"],
                "Post list is supported in BW tests only",
            ),
            (
                ReadLat,
                &["-q", "2"],
                "Multiple QPs only available on bw tests",
            ),
            (
                WriteLat,
                &["-q", "2"],
                "Multiple QPs only available on bw tests",
            ),
            (
                ReadLat,
                &["-I", "64"],
                "Inline feature not available on READ/Atomic verbs",
            ),
            (
                ReadBw,
                &["-I", "0"],
                "Inline feature not available on READ/Atomic verbs",
            ),
            (
                AtomicLat,
                &["-s", "64"],
                "Message size cannot be changed for Atomic tests",
            ),
            (
                AtomicLat,
                &["-a"],
                "Message size cannot be changed for Atomic tests",
            ),
        ];
        for (t, v, want) in cases {
            let e = err(*t, v);
            assert!(e.contains(want), "{t:?} {v:?}: {e}");
        }
        // Accepted: -Q on a latency test (perftest takes it), atomic -s 8.
        run(ReadLat, &args(&["-Q", "1", "-n", "50"])).unwrap();
        run(AtomicLat, &args(&["-s", "8", "-n", "50"])).unwrap();
    }

    /// perftest's adjustments: the TX depth is at most -n, CQ moderation
    /// is 1 above 8192 B unless given and at most the TX depth, a post
    /// list sets it, UD messages are capped at the MTU.
    #[test]
    fn perftest_adjustments() {
        let c = configs(PerfTest::WriteBw, &args(&["-n", "50"])).unwrap();
        assert_eq!((c[0].tx_depth, c[0].cq_mod), (50, 1));
        let c = configs(PerfTest::WriteBw, &args(&["-s", "4096"])).unwrap();
        assert_eq!(c[0].cq_mod, 100);
        let c = configs(PerfTest::WriteBw, &args(&["-s", "4096", "-t", "16"])).unwrap();
        assert_eq!(c[0].cq_mod, 16);
        let c = configs(PerfTest::WriteBw, &args(&["-Q", "4"])).unwrap();
        assert_eq!(c[0].cq_mod, 4);
        let c = configs(PerfTest::WriteBw, &args(&["-l", "8", "-s", "64"])).unwrap();
        assert_eq!(c[0].cq_mod, 8);
        let c = configs(PerfTest::SendBw, &args(&["-c", "UD", "-m", "2048"])).unwrap();
        assert_eq!(c[0].size, 2048);
    }

    /// `--device sim` runs what the flags say: UC and UD QPs, the
    /// requested max_send_wr, post lists, CQ moderation, MTU.
    #[test]
    fn sim_honours_the_flags() {
        for (t, v) in [
            (PerfTest::WriteBw, ["-c", "UC", "-s", "4096"]),
            (PerfTest::SendBw, ["-c", "UD", "-s", "1024"]),
        ] {
            let mut a = vec!["-n", "1000"];
            a.extend_from_slice(&v);
            let (j, f) = json(t, &a);
            assert_eq!(f, None, "{v:?} {j}");
            assert_eq!(
                (
                    j["results"][0]["posted"].as_u64(),
                    j["results"][0]["completed_ok"].as_u64()
                ),
                (Some(1000), Some(1000))
            );
            assert_eq!(j["results"][0]["mismatches"], 0, "{v:?}");
        }
        // max_send_wr 512 (1 WQEBB per WQE): a 512-WQEBB ring.
        let (j, f) = json(PerfTest::WriteBw, &["--max-send-wr", "512", "-n", "1000"]);
        assert_eq!(f, None);
        assert_eq!(j["results"][0]["counters"]["sq_wqebbs"], 512.0);
        let c = |v: &[&str]| {
            let (j, f) = json(PerfTest::WriteBw, v);
            assert_eq!(f, None, "{j}");
            assert_eq!(j["verdict"], "ok");
            (
                j["results"][0]["device_counters"]["requester.doorbells"]
                    .as_f64()
                    .unwrap(),
                j["results"][0]["device_counters"]["requester.cqes"]
                    .as_f64()
                    .unwrap(),
            )
        };
        // -s 4096: perftest moderates by 100 (plus the window-filling WR).
        let (db, cqes) = c(&["-s", "4096", "-n", "1000"]);
        assert_eq!(db, 1000.0);
        assert!(cqes < 100.0, "{cqes}");
        let (_, cqes) = c(&["-s", "4096", "-n", "1000", "-Q", "1"]);
        assert_eq!(cqes, 1000.0);
        let (db, cqes) = c(&["-s", "4096", "-n", "1000", "-l", "4"]);
        assert_eq!((db, cqes), (250.0, 250.0));
    }

    /// Runs whose work did not all complete, or whose figures exceed the
    /// modeled link, fail (run errors; JSON carries the verdict).
    #[test]
    fn impossible_results_fail() {
        // Everything lost: the RC QP fails with retries exhausted, on
        // every backend.
        for dev in ["sim", "model"] {
            let e = err(
                PerfTest::WriteBw,
                &["--device", dev, "--loss", "1", "-n", "100"],
            );
            assert!(e.contains("RETRY_EXC_ERR"), "{dev}: {e}");
            let (j, f) = json(
                PerfTest::WriteBw,
                &["--device", dev, "--loss", "1", "-n", "100"],
            );
            assert!(f.is_some());
            assert_eq!(j["verdict"], "fail");
            assert!(
                j["error"].as_str().unwrap().contains("RETRY_EXC_ERR"),
                "{j}"
            );
            assert!(j["results"][0]["bw_avg"].is_null(), "{j}");
        }
        let e = err(
            PerfTest::WriteBw,
            &["--device", "fw-sim", "--loss", "1", "-n", "100"],
        );
        assert!(e.contains("RETRY_EXC_ERR") || e.contains("retry"), "{e}");
        // The QP is created with -I as max_inline_data (as perftest does):
        // 1024 B inline makes 1072-byte WQEs (ctrl 16 + raddr 16 + 4 +
        // 1024, rounded to 16), more than the device's 1024: refused
        // before anything runs, as a usage error (perftest: "Couldn't
        // create QP"). 512 B inline fits and runs.
        for dev in ["sim", "fw-sim", "model"] {
            let e = run(
                PerfTest::WriteBw,
                &args(&["--device", dev, "-I", "1024", "-s", "1024", "-n", "100"]),
            )
            .unwrap_err();
            assert!(crate::args::is_usage(&e), "{dev}: {e}");
            assert!(e.to_string().contains("1072-byte WQEs"), "{dev}: {e}");
            let (j, f) = json(
                PerfTest::WriteBw,
                &["--device", dev, "-I", "512", "-s", "512", "-n", "100"],
            );
            assert_eq!(f, None, "{dev}: {j}");
        }
        // A fabricated report over the link.
        let cfg = configs(PerfTest::WriteBw, &args(&["-n", "100"]))
            .unwrap()
            .remove(0);
        let rep = PerfRunReport {
            posted: 100,
            completed_ok: 100,
            link_gbps: 100.0,
            ..Default::default()
        };
        assert_eq!(verdict(&cfg, &rep, &[99.0, 98.0]), None);
        let v = verdict(&cfg, &rep, &[6553.6, 6525.9]).unwrap();
        assert!(v.contains("exceeds the 100 Gb/s link"), "{v}");
        let v = verdict(
            &cfg,
            &PerfRunReport {
                posted: 0,
                ..rep.clone()
            },
            &[],
        )
        .unwrap();
        assert!(v.contains("nothing was posted"), "{v}");
    }

    /// UC and UD complete once the message has left the port, so their
    /// bandwidth keeps to the 100 Gb/s link (it was 6553.6 Gb/s for UC
    /// 64 KiB and a 327 Gb/s peak for UD 4 KiB).
    #[test]
    fn unreliable_bandwidth_keeps_to_the_link() {
        for (t, v) in [
            (PerfTest::WriteBw, ["-c", "UC", "-s", "65536"]),
            (PerfTest::SendBw, ["-c", "UD", "-s", "4096"]),
            (PerfTest::WriteBw, ["-c", "RC", "-s", "65536"]),
        ] {
            let mut a = vec!["--device", "fw-sim", "-n", "500", "--report_gbits"];
            a.extend_from_slice(&v);
            let (j, f) = json(t, &a);
            assert_eq!(f, None, "{j}");
            let (peak, avg) = (
                j["results"][0]["bw_peak"].as_f64().unwrap(),
                j["results"][0]["bw_avg"].as_f64().unwrap(),
            );
            assert!(
                peak <= 100.0 && avg <= 100.0 && avg > 80.0,
                "{v:?}: {peak} {avg}"
            );
        }
    }

    /// The leaf keys of a perf JSON object: nested objects by dotted path,
    /// arrays of objects as `[]`, `device_counters` (a map) as one leaf.
    fn leaves(v: &serde_json::Value, path: &str, out: &mut std::collections::BTreeSet<String>) {
        match v {
            serde_json::Value::Object(m) if !path.ends_with("device_counters") => {
                for (k, x) in m {
                    let p = if path.is_empty() {
                        k.clone()
                    } else {
                        format!("{path}.{k}")
                    };
                    leaves(x, &p, out);
                }
            }
            serde_json::Value::Array(a) if a.first().is_some_and(|x| x.is_object()) => {
                for x in a {
                    leaves(x, &format!("{path}[]"), out);
                }
            }
            _ => {
                out.insert(path.to_string());
            }
        }
    }

    /// The keys docs/json.md documents (its "Envelope" and "perf" tables),
    /// without the rows that only name an object whose keys follow.
    fn documented_keys() -> std::collections::BTreeSet<String> {
        let doc = include_str!("../../../docs/json.md");
        let mut keys = std::collections::BTreeSet::new();
        let mut section = "";
        for line in doc.lines() {
            if let Some(h) = line.strip_prefix("## ") {
                section = if h == "Envelope" || h == "perf" {
                    "in"
                } else {
                    ""
                };
                continue;
            }
            if section.is_empty() {
                continue;
            }
            if let Some(rest) = line.strip_prefix("| `") {
                if let Some(end) = rest.find('`') {
                    keys.insert(rest[..end].to_string());
                }
            }
        }
        let all = keys.clone();
        keys.retain(|k| !all.iter().any(|o| o.starts_with(&format!("{k}."))));
        keys
    }

    /// `--json` is one versioned schema: every backend prints exactly the
    /// keys docs/json.md lists, for bandwidth and latency tests, and for
    /// a failed run; unknowns are null, perftest's test names.
    #[test]
    fn json_keys_are_the_documented_schema() {
        let doc = documented_keys();
        assert!(
            doc.contains("schema") && doc.contains("results[].bw_avg"),
            "{doc:?}"
        );
        for dev in ["sim", "fw-sim", "model"] {
            for (t, v) in [
                (PerfTest::WriteBw, vec!["-n", "100"]),
                (PerfTest::ReadLat, vec!["-n", "100"]),
                (PerfTest::WriteBw, vec!["-n", "100", "--loss", "1"]),
            ] {
                let mut a = vec!["--device", dev];
                a.extend(v.iter().copied());
                let (j, _) = json(t, &a);
                let mut got = std::collections::BTreeSet::new();
                leaves(&j, "", &mut got);
                assert_eq!(got, doc, "{dev} {t:?} {v:?}");
                assert_eq!(j["schema"], "bareverbs/1");
                assert_eq!(
                    j["command"],
                    format!("perf {}", crate::perf::engine::test_name(t))
                );
                assert_eq!(j["test"], perftest_name(t));
            }
            // Unknowns are null, not 0: a latency test has no BW figures.
            let (j, _) = json(PerfTest::ReadLat, &["--device", dev, "-n", "100"]);
            assert!(j["results"][0]["bw_avg"].is_null(), "{j}");
            assert!(j["results"][0]["t_avg_usec"].as_f64().unwrap() > 0.0);
        }
        assert_eq!(perftest_name(PerfTest::WriteBw), "ib_write_bw");
        // A backend that could not be opened: the same envelope, no results.
        let f: serde_json::Value =
            serde_json::from_str(&failure_json(PerfTest::WriteBw, &args(&[]), "x")).unwrap();
        assert_eq!(
            (f["schema"].as_str(), f["verdict"].as_str()),
            (Some("bareverbs/1"), Some("fail"))
        );
        assert!(f["backend"].is_null() && f["results"].as_array().unwrap().is_empty());
    }

    /// Memory and time stay bounded: -q 16384 is refused before anything
    /// is allocated (usage error naming the memory), -D bounds wall-clock
    /// time on the simulator, and -a streams each row as it completes, so
    /// a failure at 4 MiB leaves the rows before it printed.
    #[test]
    fn memory_and_time_are_bounded() {
        for dev in ["sim", "fw-sim", "model"] {
            let e = run(PerfTest::WriteBw, &args(&["--device", dev, "-q", "16384"])).unwrap_err();
            assert!(crate::args::is_usage(&e), "{dev}: {e}");
            assert!(
                e.to_string().contains("MiB of queue and buffer memory"),
                "{e}"
            );
        }
        let t = std::time::Instant::now();
        let (j, f) = json(PerfTest::WriteBw, &["-D", "1"]);
        let wall = t.elapsed().as_secs_f64();
        assert_eq!(f, None, "{j}");
        assert!((1.0..10.0).contains(&wall), "-D 1 took {wall} s");
        let r = &j["results"][0];
        assert_eq!(r["posted"], r["completed_ok"]);
        assert!(r["posted"].as_u64().unwrap() >= 5);
        // -a on fw-sim runs every size perftest's -a does (2 B .. 8 MiB:
        // memory keys take large pages above 2.4 MiB); a backend that
        // fails at 4 MiB leaves the rows before it printed, streamed one
        // by one, and the failure names the size.
        struct FailFrom(Box<dyn PerfBackend>, u64);
        impl PerfBackend for FailFrom {
            fn name(&self) -> String {
                self.0.name()
            }
            fn run(&mut self, cfg: &PerfRunConfig) -> anyhow::Result<PerfRunReport> {
                anyhow::ensure!(cfg.size < self.1, "injected failure at -s {}", cfg.size);
                self.0.run(cfg)
            }
        }
        let a = args(&["--device", "fw-sim", "-a", "-n", "5"]);
        let port = port_attrs(&a.device).unwrap();
        let cfgs = configs_on_port(PerfTest::WriteBw, &a, port).unwrap();
        let all = run(PerfTest::WriteBw, &a).unwrap();
        let sizes: Vec<u64> = all
            .lines()
            .filter_map(|l| l.split_whitespace().next()?.parse().ok())
            .collect();
        assert_eq!(sizes, (1..=23).map(|e| 1u64 << e).collect::<Vec<_>>());
        let mut be = FailFrom(backend(&a).unwrap(), 4 << 20);
        let mut streamed = Vec::new();
        let o = stream_on(PerfTest::WriteBw, &a, port, &cfgs, &mut be, &mut |s| {
            streamed.push(s.to_string())
        })
        .unwrap();
        let f = o.failure.unwrap();
        assert!(f.contains("-s 4194304"), "{f}");
        let text = streamed.concat();
        assert_eq!(text, o.output);
        let rows: Vec<u64> = text
            .lines()
            .filter_map(|l| l.split_whitespace().next()?.parse().ok())
            .collect();
        assert_eq!(rows, (1..=21).map(|e| 1u64 << e).collect::<Vec<_>>());
        // Each row was handed out on its own, as it completed.
        assert!(streamed.len() >= 2 + rows.len(), "{}", streamed.len());
    }
}
