//! `bareverbs pingpong`: libibverbs' `ibv_rc_pingpong` on bareverbs — the
//! link check of two hosts. The same flags (`-p -d -i -s -m -r -n -l -e
//! -g -c`), the same address exchange ([`message`], [`peer`]: a stock
//! `ibv_rc_pingpong` on the other host works), the same lines and report.
//! The client sends first; each side sends `-n` messages of `-s` bytes
//! and receives as many (one RC SEND each way per iteration), over the
//! send-latency engine of `perf send-lat` in perftest's server/client
//! roles.
//!
//! | module | owns |
//! | --- | --- |
//! | `message` | the 52-byte address message and its lines |
//! | `peer` | the exchange as the engine's peer link |
//! | `report` | the report lines and the JSON object |

pub mod message;
pub mod peer;
pub mod report;

use crate::args::usage_error;
use crate::perf::engine::Role;
use crate::perf::run::{backend, PerfArgs, PerfTest};
use anyhow::Context as _;
use peer::PingpongPeer;
use std::process::ExitCode;

/// `ibv_rc_pingpong`'s flags (its defaults), with bareverbs' device
/// choice in `-d`.
#[derive(Clone, Debug, clap::Args)]
pub struct PingpongArgs {
    /// The server to connect to; without it, wait for a client.
    #[arg(value_name = "HOST")]
    pub host: Option<String>,
    /// TCP port of the address exchange.
    #[arg(short = 'p', long = "port", default_value_t = 18515)]
    pub port: u16,
    /// The device: `vfio:BDF` (a ConnectX through VFIO) or `fw-sim` with
    /// `--wire` (a simulated ConnectX on the simulator's UDP wire).
    #[arg(short = 'd', long = "ib-dev", default_value = "fw-sim")]
    pub device: String,
    /// Port of the device (a ConnectX function has port 1).
    #[arg(short = 'i', long = "ib-port", default_value_t = 1)]
    pub ib_port: u8,
    /// Bytes of each message.
    #[arg(short = 's', long = "size", default_value_t = 4096)]
    pub size: u32,
    /// Path MTU (256, 512, 1024, 2048 or 4096).
    #[arg(short = 'm', long = "mtu", default_value_t = 1024)]
    pub mtu: u32,
    /// Receives `ibv_rc_pingpong` keeps posted. At most one message is
    /// in flight each way, so the number changes nothing on the wire:
    /// accepted (1 or more) for the command line's sake; the engine keeps
    /// its own receive ring.
    #[arg(short = 'r', long = "rx-depth", default_value_t = 500)]
    pub rx_depth: u32,
    /// Exchanges.
    #[arg(short = 'n', long = "iters", default_value_t = 1000)]
    pub iters: u32,
    /// Service level (0 only: the path's SL is not configurable yet).
    #[arg(short = 'l', long = "sl", default_value_t = 0)]
    pub sl: u8,
    /// Sleep on CQ events instead of polling.
    #[arg(short = 'e', long = "events")]
    pub events: bool,
    /// Source GID index (RoCE: required, e.g. 3 for RoCE v2 over IPv4).
    #[arg(short = 'g', long = "gid-idx")]
    pub gid_idx: Option<u16>,
    /// Check every received message byte for byte. Both sides must be
    /// bareverbs run with `-c` (what it sends carries its tags; a stock
    /// `ibv_rc_pingpong` sends its own 0x7b fill and echoes what it got).
    #[arg(short = 'c', long = "chk")]
    pub chk: bool,
    /// `--device fw-sim`: the UDP address of the simulated port.
    #[arg(long, value_name = "ADDR:PORT")]
    pub wire: Option<std::net::SocketAddrV4>,
    /// This port's IP address, programmed into the GID table (VFIO).
    #[arg(long)]
    pub ip: Option<std::net::IpAddr>,
    /// The peer port's MAC address (RoCE; default: from its GID).
    #[arg(long, value_parser = crate::args::mac)]
    pub dmac: Option<[u8; 6]>,
    /// Seed of the simulated device.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// One JSON object on stdout instead of text.
    #[arg(long)]
    pub json: bool,
}

/// The `perf send-lat` flags that run `a`'s exchanges.
fn perf_args(a: &PingpongArgs) -> anyhow::Result<PerfArgs> {
    use clap::Parser as _;
    #[derive(clap::Parser)]
    struct P {
        #[command(flatten)]
        a: PerfArgs,
    }
    let mut v: Vec<String> = vec![
        "perf".into(),
        "--device".into(),
        a.device.clone(),
        "-s".into(),
        a.size.to_string(),
        "-n".into(),
        a.iters.to_string(),
        "-m".into(),
        a.mtu.to_string(),
        "-p".into(),
        a.port.to_string(),
        "--seed".into(),
        a.seed.to_string(),
    ];
    let mut opt = |flag: &str, val: Option<String>| {
        if let Some(x) = val {
            v.push(flag.into());
            v.push(x);
        }
    };
    opt("-x", a.gid_idx.map(|g| g.to_string()));
    opt("--wire", a.wire.map(|w| w.to_string()));
    opt("--ip", a.ip.map(|i| i.to_string()));
    opt(
        "--dmac",
        a.dmac.map(|m| {
            m.iter()
                .map(|b| format!("{b:02x}"))
                .collect::<Vec<_>>()
                .join(":")
        }),
    );
    if a.events {
        v.push("-e".into());
    }
    if let Some(h) = &a.host {
        v.push(h.clone());
    }
    Ok(P::try_parse_from(v)
        .map_err(|e| usage_error(e.to_string()))?
        .a)
}

/// What `a` asks for that this command cannot do, as a usage error.
fn refusal(a: &PingpongArgs) -> Option<String> {
    if a.ib_port != 1 {
        return Some(format!(
            "-i {}: a ConnectX function has port 1 only",
            a.ib_port
        ));
    }
    if a.sl != 0 {
        return Some(format!(
            "-l {}: only service level 0 is supported (the path's SL is not configurable yet)",
            a.sl
        ));
    }
    if a.rx_depth == 0 {
        return Some("-r 0: at least one receive must be posted".into());
    }
    if a.iters == 0 || a.size == 0 {
        return Some("-n and -s must be at least 1".into());
    }
    if a.device == "fw-sim" && a.wire.is_none() {
        return Some(
            "-d fw-sim reaches another host only over the simulator's UDP wire: add --wire ADDR:PORT"
                .into(),
        );
    }
    if a.device != "fw-sim" && !a.device.starts_with("vfio:") {
        return Some(format!(
            "-d {}: pingpong needs a device that reaches another host (vfio:BDF, or fw-sim with --wire)",
            a.device
        ));
    }
    None
}

/// Runs `bareverbs pingpong`: exit 0 when every message went both ways
/// (and, with `-c`, arrived as sent), 1 when the run failed, a usage
/// error (2) for flags it cannot honour.
pub fn run(a: &PingpongArgs) -> anyhow::Result<ExitCode> {
    if let Some(why) = refusal(a) {
        return Err(usage_error(why));
    }
    let pa = perf_args(a)?;
    let test = PerfTest::SendLat;
    let port = crate::perf::rules::port_attrs(&pa.device)?;
    let cfgs = crate::perf::rules::configs_on_port(test, &pa, port)
        .map_err(|e| usage_error(format!("{e:#}")))?;
    let cfg = &cfgs[0];
    let mut be = backend(&pa)?;
    if let Some(why) = be.refuse(cfg, &pa) {
        return Err(usage_error(why));
    }
    let print = !a.json;
    let mut link = match &a.host {
        Some(h) => PingpongPeer::client(h, a.port, a.chk, print),
        None => PingpongPeer::server(a.port, a.chk, print)?,
    };
    let role = link.role();
    debug_assert!(role != Role::Loopback);
    let run = be
        .run_half(cfg, role, &mut link)
        .context("ibv_rc_pingpong's exchange");
    let out = report::Outcome::of(a, role, link.addresses, run);
    if a.json {
        crate::outln!("{}", serde_json::to_string(&out.json())?);
    } else {
        crate::out!("{}", out.text());
    }
    if let Some(f) = &out.failure {
        crate::eoutln!("error: {f}");
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
