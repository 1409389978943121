//! What `bareverbs perf <test>` is asked for: which perftest binary is
//! imitated ([`PerfTest`]), the connection type ([`Conn`]) and the
//! command-line flags ([`PerfArgs`]: perftest's, where they apply, plus
//! bareverbs' own). A leaf: every other `perf` module may use it.

use crate::perftest::format::Verb;
use bareverbs::qp::QpType;
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

impl From<Conn> for QpType {
    /// The QP type of connection type `c` (the one place the tool maps it).
    fn from(c: Conn) -> QpType {
        match c {
            Conn::Rc => QpType::Rc,
            Conn::Uc => QpType::Uc,
            Conn::Ud => QpType::Ud,
        }
    }
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
    /// Sleep on CQ events (perftest's `-e`): arm the CQs and wait for the
    /// completion interrupt instead of polling (`--device fw-sim` or
    /// `vfio:BDF`).
    #[arg(short = 'e', long = "events")]
    pub events: bool,
    /// The server to connect to (perftest's client mode). Without it, a
    /// device that can reach another host waits for a client (server
    /// mode): `vfio:BDF`, or `fw-sim` with `--wire`.
    #[arg(value_name = "HOST")]
    pub host: Option<String>,
    /// TCP port of the out-of-band exchange (perftest's default 18515).
    #[arg(short = 'p', long = "port", default_value_t = DEF_PORT)]
    pub port: u16,
    /// Source GID index (perftest's `-x`; default: perftest's choice
    /// among the programmed entries, RoCE v2 IPv4 first).
    #[arg(short = 'x', long = "gid-index")]
    pub gid_index: Option<u16>,
    /// This port's IP address, programmed into the GID table as the
    /// kernel would (RoCE over VFIO, where no kernel fills it).
    #[arg(long)]
    pub ip: Option<std::net::IpAddr>,
    /// The peer port's MAC address (RoCE; default: derived from the
    /// peer's GID when its GID names it).
    #[arg(long, value_parser = crate::args::mac)]
    pub dmac: Option<[u8; 6]>,
    /// `--device fw-sim` only: join the simulated port to other
    /// processes' simulated ports over UDP, bound to this address.
    #[arg(long, value_name = "ADDR:PORT")]
    pub wire: Option<std::net::SocketAddrV4>,
    /// Run both sides on this device (the NIC's loopback), also where a
    /// peer host could be reached.
    #[arg(long, conflicts_with = "host")]
    pub loopback: bool,
}

/// perftest's default TCP port of the out-of-band exchange (`DEF_PORT`).
pub const DEF_PORT: u16 = 18515;

/// The perf flags of the command line `v` (without the program name), for
/// tests.
#[cfg(test)]
pub(crate) fn test_args(v: &[&str]) -> PerfArgs {
    use clap::Parser;
    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        a: PerfArgs,
    }
    let mut all = vec!["t"];
    all.extend_from_slice(v);
    T::parse_from(all).a
}
