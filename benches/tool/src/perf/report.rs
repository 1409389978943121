//! What a backend returns for one run ([`PerfRunReport`]): counts,
//! rates, time stamps, WQE geometry, counters and the two endpoints. A
//! leaf: the engine fills it, `run` prints it.

use crate::model::NicCost;
use crate::perftest::format::Endpoint;
use std::collections::BTreeMap;

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
    /// Bytes that did not arrive as sent (a message not received counts
    /// all its bytes).
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
    /// A two-host run: the peer host and what it reported.
    pub peer: Option<PeerRun>,
    /// The source GID index this host's QPs sent from (a two-host run on
    /// a port that uses one).
    pub sgid_index: Option<u16>,
    /// The test's time on the run's clock, from the engine starting it to
    /// the last completion (ns).
    pub run_ns: u64,
}

/// The peer host of a two-host run, as the out-of-band exchange showed it.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct PeerRun {
    /// This host's role: `"client"` or `"server"`.
    pub role: &'static str,
    /// The version the peer announced (perftest's version string).
    pub version: String,
    /// The peer is bareverbs (its messages carry bareverbs' tags, so what
    /// it wrote or holds was checked byte for byte); `false` for perftest.
    pub bareverbs: bool,
    /// The bandwidth report the peer sent (perftest's `xchg_bw_reports`),
    /// if the test exchanges one.
    pub bw: Option<PeerBw>,
}

/// A bandwidth report as perftest exchanges it (`struct bw_report_data`).
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct PeerBw {
    /// Message bytes.
    pub size: u64,
    /// Iterations.
    pub iters: u64,
    /// Peak bandwidth, in the run's unit (MB/s or Gb/s).
    pub bw_peak: f64,
    /// Average bandwidth, in the run's unit.
    pub bw_avg: f64,
    /// Average message rate, Mpps.
    pub msg_rate_avg: f64,
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
