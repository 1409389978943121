//! A perftest-like driver on the simulator ([`run_perf`]) and the raw
//! loopback rate of the simulator itself ([`loopback_write_rate`]).
//!
//! Bandwidth, message rate and latency are *modelled*: they come from the
//! virtual clock, which the cost model of PERF_AND_SIM §2.3 drives (CPU
//! post and doorbell time, WQE fetch by DMA or BlueFlame, payload gather,
//! link serialisation, wire latency, retransmissions). Payload bytes are
//! real: every completion is checked against the bytes that were sent.

use crate::cost::{Counters, ModelParams};
use crate::device::{Device, Fabric};
use crate::fault::FaultPlan;
use crate::harness::{connect, ConnOpts, Endpoint, EpConfig};
use bareverbs::cqe::{WcStatus, WorkCompletion};
use bareverbs::qp::QpType;
use bareverbs::rq::RecvWr;
use bareverbs::sq::{SendFlags, SendOp, SendWr, Sge};
use serde::{Deserialize, Serialize};
use std::time::Instant;

/// The test, as perftest's binaries name them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum TestKind {
    /// ib_write_bw.
    WriteBw,
    /// ib_write_lat.
    WriteLat,
    /// ib_send_bw.
    SendBw,
    /// ib_send_lat.
    SendLat,
    /// ib_read_bw.
    ReadBw,
    /// ib_read_lat.
    ReadLat,
    /// ib_atomic_lat (fetch-and-add).
    AtomicLat,
}

impl TestKind {
    fn is_lat(self) -> bool {
        matches!(
            self,
            TestKind::WriteLat | TestKind::SendLat | TestKind::ReadLat | TestKind::AtomicLat
        )
    }
}

/// A perf run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PerfConfig {
    /// Which test.
    pub kind: TestKind,
    /// Message size (bytes; atomics always 8).
    pub size: u32,
    /// Iterations per QP (perftest `-n`).
    pub iterations: u64,
    /// Number of QP pairs (perftest `-q`).
    pub num_qps: u32,
    /// Outstanding WRs per QP (perftest `-t`; latency tests use 1).
    pub tx_depth: u32,
    /// `max_send_sge` the QPs are created with (sets the WQE stride).
    pub max_send_sge: u32,
    /// SGEs each WR actually carries (the message is split evenly).
    pub posted_sges: u32,
    /// `max_inline_data`; messages up to this size are sent inline when
    /// [`inline`](Self::inline) is set.
    pub max_inline: u32,
    /// Send small messages inline.
    pub inline: bool,
    /// WRs per doorbell (perftest `-l`): whole lists are posted in one
    /// `post_send` call once the send window has room for all of them.
    pub post_list: u32,
    /// CQ moderation (perftest `-Q`): one signaled WR every `cq_mod`, plus
    /// the last one and any that fills the send window; a completion
    /// retires every earlier WR of its QP.
    pub cq_mod: u32,
    /// Path MTU in bytes (256, 512, 1024, 2048 or 4096).
    pub mtu: u32,
    /// Packet loss probability.
    pub loss: f64,
    /// Seed of the fault plan.
    pub seed: u64,
    /// Cost-model parameters.
    pub params: ModelParams,
}

impl Default for PerfConfig {
    fn default() -> Self {
        PerfConfig {
            kind: TestKind::WriteBw,
            size: 65536,
            iterations: 5000,
            num_qps: 1,
            tx_depth: 128,
            max_send_sge: 1,
            posted_sges: 1,
            max_inline: 0,
            inline: false,
            post_list: 1,
            cq_mod: 1,
            mtu: 4096,
            loss: 0.0,
            seed: 1,
            params: ModelParams::default(),
        }
    }
}

/// What a run measured.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PerfReport {
    /// WRs posted.
    pub posted: u64,
    /// Completions with status SUCCESS.
    pub completed_ok: u64,
    /// Completions with an error status.
    pub completed_err: u64,
    /// Payload bytes that did not arrive as sent.
    pub mismatches: u64,
    /// Modelled message rate (million messages per second of virtual time).
    pub msg_rate_mpps: f64,
    /// Modelled bandwidth, Gb/s (decimal: 10^9 bits per second).
    pub bw_gbps: f64,
    /// Virtual time the run took (ns).
    pub elapsed_ns: u64,
    /// Per-iteration modelled latency (ns); latency tests only. One-way for
    /// WRITE/SEND, round trip for READ/atomic (as perftest reports them).
    pub lat_samples_ns: Vec<f64>,
    /// Cost counters of the requester device.
    pub requester: Counters,
    /// Cost counters of the responder device.
    pub responder: Counters,
    /// Wall-clock seconds the simulation took.
    pub wall_s: f64,
    /// Why the run stopped early (QP creation or a post refused), if it did.
    pub error: Option<String>,
}

type Ep = Endpoint<4096, 1024, 8192>;

fn pattern(iter: u64, qp: u32) -> u8 {
    (iter.wrapping_mul(31) as u8) ^ (qp as u8).wrapping_mul(7) ^ 0x5a
}

/// Splits `size` bytes at `off` of `ep`'s buffer into `k` SGEs.
fn sges(ep: &Ep, off: u64, size: u32, k: u32) -> Vec<Sge> {
    let k = k.max(1).min(size.max(1));
    let base = size / k;
    let mut v = Vec::with_capacity(k as usize);
    let mut o = 0u32;
    for i in 0..k {
        let len = if i == k - 1 { size - o } else { base };
        v.push(ep.sge(off + o as u64, len));
        o += len;
    }
    v
}

/// Runs a perftest-like test on two simulated devices joined by the
/// fabric: `num_qps` RC QP pairs, the client on device 0 posting.
pub fn run_perf(cfg: &PerfConfig) -> PerfReport {
    let wall = Instant::now();
    let f = Fabric::new(cfg.seed);
    f.set_params(cfg.params);
    f.set_faults(FaultPlan::lossy(cfg.loss));
    f.set_auto_progress(false);
    let da = f.add_device();
    let db = f.add_device();
    let size = if cfg.kind == TestKind::AtomicLat {
        8
    } else {
        cfg.size.max(1)
    };
    let depth = if cfg.kind.is_lat() {
        1
    } else {
        cfg.tx_depth.clamp(1, 512)
    };
    let slots = depth as usize;
    let ecfg = EpConfig {
        max_send_sge: cfg.max_send_sge.max(cfg.posted_sges).max(1),
        max_inline: cfg.max_inline,
        max_recv_sge: 1,
        buf_len: (size as usize * slots).max(64),
        blueflame: true,
        ..EpConfig::new(QpType::Rc)
    };
    let path_mtu = match cfg.mtu {
        256 => 1,
        512 => 2,
        1024 => 3,
        2048 => 4,
        _ => 5,
    };
    let opts = ConnOpts {
        timeout: 10,
        path_mtu,
        ..ConnOpts::default()
    };
    let mut rep = PerfReport::default();
    let mut cl: Vec<Ep> = Vec::new();
    let mut sv: Vec<Ep> = Vec::new();
    let mk = |d: &Device| Ep::new(d, &ecfg).map_err(|e| format!("creating the QP: {e:?}"));
    for _ in 0..cfg.num_qps.max(1) {
        let pair = mk(&da).and_then(|mut a| {
            let mut b = mk(&db)?;
            connect(&mut a, &mut b, &opts).map_err(|e| format!("connecting the QPs: {e:?}"))?;
            Ok((a, b))
        });
        match pair {
            Ok((a, b)) => {
                cl.push(a);
                sv.push(b);
            }
            Err(e) => {
                rep.error = Some(e);
                rep.wall_s = wall.elapsed().as_secs_f64();
                return rep;
            }
        }
    }
    let nq = cl.len();
    let iters = cfg.iterations;
    let post_list = cfg.post_list.clamp(1, depth) as u64;
    let cq_mod = cfg.cq_mod.max(1) as u64;
    let mut posted = vec![0u64; nq];
    let mut done = vec![0u64; nq];
    let mut post_t = vec![0u64; nq];
    let is_send = matches!(cfg.kind, TestKind::SendBw | TestKind::SendLat);
    // Receives for SEND tests: one per slot, reposted on completion.
    if is_send {
        for (qi, b) in sv.iter_mut().enumerate() {
            for s in 0..slots {
                let sge = [b.sge((s as u64) * size as u64, size)];
                let _ = b.post_recv_raw_checked(&sge, s as u64, qi);
            }
        }
    }
    let t_start = f.now_ns();
    let mut wcs = [WorkCompletion::default(); 64];
    let p = cfg.params;
    loop {
        // Post whole lists (perftest `-l`) while the window has room.
        'post: for q in 0..nq {
            loop {
                let m = post_list.min(iters - posted[q]);
                if m == 0 || posted[q] + m - done[q] > depth as u64 {
                    break;
                }
                let mut ops = Vec::with_capacity(m as usize);
                let mut sgls = Vec::with_capacity(m as usize);
                for it in posted[q]..posted[q] + m {
                    let slot = (it % slots as u64) as usize;
                    let off = slot as u64 * size as u64;
                    let pat = pattern(it, q as u32);
                    let (a, b) = (&mut cl[q], &mut sv[q]);
                    let op = match cfg.kind {
                        TestKind::WriteBw | TestKind::WriteLat => {
                            a.fill(off as usize, size as usize, pat);
                            SendOp::Write {
                                remote_addr: b.addr(off),
                                rkey: b.mr().rkey(),
                            }
                        }
                        TestKind::SendBw | TestKind::SendLat => {
                            a.fill(off as usize, size as usize, pat);
                            SendOp::Send
                        }
                        TestKind::ReadBw | TestKind::ReadLat => {
                            b.fill(off as usize, size as usize, pat);
                            a.fill(off as usize, size as usize, !pat);
                            SendOp::Read {
                                remote_addr: b.addr(off),
                                rkey: b.mr().rkey(),
                            }
                        }
                        TestKind::AtomicLat => SendOp::FetchAdd {
                            remote_addr: b.addr(0),
                            rkey: b.mr().rkey(),
                            add: 1,
                        },
                    };
                    let k = if cfg.kind == TestKind::AtomicLat {
                        1
                    } else {
                        cfg.posted_sges
                    };
                    ops.push(op);
                    sgls.push(sges(a, off, size, k));
                }
                let a = &mut cl[q];
                let wrs: Vec<SendWr<'_>> = (0..m)
                    .map(|k| {
                        let it = posted[q] + k;
                        // Signal every cq_mod-th WR, the last one and any
                        // that fills the window (or it could never drain).
                        let signaled = (it + 1).is_multiple_of(cq_mod)
                            || it + 1 == iters
                            || it + 1 - done[q] >= depth as u64;
                        let mut flags = SendFlags::empty();
                        if signaled {
                            flags |= SendFlags::SIGNALED;
                        }
                        if cfg.inline
                            && size <= cfg.max_inline
                            && !matches!(
                                cfg.kind,
                                TestKind::ReadBw | TestKind::ReadLat | TestKind::AtomicLat
                            )
                        {
                            flags |= SendFlags::INLINE;
                        }
                        SendWr::new(it, ops[k as usize], &sgls[k as usize]).with_flags(flags)
                    })
                    .collect();
                post_t[q] = f.now_ns();
                if let Err(e) = a.post_send(&wrs, &[*a.mr()]) {
                    rep.error = Some(format!(
                        "post_send of WR {} on QP {:#x} refused: {e:?}",
                        posted[q],
                        a.qpn()
                    ));
                    break 'post;
                }
                posted[q] += m;
                rep.posted += m;
            }
        }
        if rep.error.is_some() {
            break;
        }
        if done.iter().all(|&d| d >= iters) {
            break;
        }
        // Progress the fabric until something completes.
        if !f.step() {
            // Nothing left to happen: count what never completed.
            break;
        }
        // Poll.
        for q in 0..nq {
            if is_send {
                let b = &mut sv[q];
                let n = b.poll(&mut wcs);
                for wc in &wcs[..n] {
                    if wc.status == WcStatus::Success {
                        let slot = wc.wr_id as usize;
                        let got = b.read(slot * size as usize, size as usize);
                        let _ = got;
                        let sge = [b.sge(slot as u64 * size as u64, size)];
                        let _ = b.post_recv_raw_checked(&sge, slot as u64, q);
                    }
                }
            }
            let a = &mut cl[q];
            let n = a.poll(&mut wcs);
            for wc in &wcs[..n] {
                f.spend(p.t_cqe_ns as u64);
                // A completion retires its WR and every earlier
                // (unsignaled) one of the QP.
                let upto = (wc.wr_id + 1).max(done[q]);
                if wc.status != WcStatus::Success {
                    rep.completed_err += upto - done[q];
                    done[q] = upto;
                    continue;
                }
                for it in done[q]..upto {
                    rep.completed_ok += 1;
                    let slot = (it % slots as u64) as usize;
                    let off = slot * size as usize;
                    let pat = pattern(it, q as u32);
                    let got = match cfg.kind {
                        TestKind::WriteBw
                        | TestKind::WriteLat
                        | TestKind::SendBw
                        | TestKind::SendLat => sv[q].read(off, size as usize),
                        TestKind::ReadBw | TestKind::ReadLat => a.read(off, size as usize),
                        TestKind::AtomicLat => {
                            // The fetched value is the number of earlier adds
                            // (big-endian in memory).
                            let v = a.read(0, 8);
                            let want = it.to_be_bytes();
                            rep.mismatches +=
                                v.iter().zip(want.iter()).filter(|(x, y)| x != y).count() as u64;
                            Vec::new()
                        }
                    };
                    rep.mismatches += got.iter().filter(|&&x| x != pat).count() as u64;
                    if cfg.kind.is_lat() {
                        let t0 = post_t[q];
                        let sample = match cfg.kind {
                            TestKind::WriteLat | TestKind::SendLat => {
                                sv[q].dev().qp_last_rx_ns(sv[q].qpn()).saturating_sub(t0) as f64
                            }
                            _ => {
                                (a.dev().cq_last_cqe_ns(a.cqn()).saturating_sub(t0)) as f64
                                    + p.t_cqe_ns
                            }
                        };
                        rep.lat_samples_ns.push(sample);
                    }
                }
                done[q] = upto;
            }
        }
    }
    let elapsed = f.now_ns().saturating_sub(t_start).max(1);
    rep.elapsed_ns = elapsed;
    let ops = rep.completed_ok as f64;
    rep.msg_rate_mpps = ops / (elapsed as f64 * 1e-9) / 1e6;
    rep.bw_gbps = ops * size as f64 * 8.0 / elapsed as f64;
    rep.requester = da.counters();
    rep.responder = db.counters();
    rep.wall_s = wall.elapsed().as_secs_f64();
    rep
}

impl Ep {
    fn fill(&self, off: usize, len: usize, b: u8) {
        let buf = self.buf();
        assert!(off.checked_add(len).is_some_and(|end| end <= buf.len));
        // SAFETY: inside the live buffer (asserted), raw write.
        unsafe { std::ptr::write_bytes(buf.cpu.as_ptr().add(off), b, len) };
    }
}

trait PostOne {
    fn post_recv_raw_checked(&mut self, sgl: &[Sge], wr_id: u64, _q: usize) -> bool;
}

impl PostOne for Ep {
    fn post_recv_raw_checked(&mut self, sgl: &[Sge], wr_id: u64, _q: usize) -> bool {
        // SAFETY: the SGEs come from `Endpoint::sge`, inside the endpoint's
        // registered buffer, which outlives the run.
        unsafe { self.post_recv_raw(&[RecvWr { wr_id, sgl }]) }.is_ok()
    }
}

/// CPU time of the calling thread in ns (Linux `/proc/thread-self/schedstat`,
/// first field), when available.
fn thread_cpu_ns() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    s.split_whitespace().next()?.parse().ok()
}

/// Measures the simulator's own speed: `n` loopback 64-byte RDMA WRITEs
/// end to end (post through the core → doorbell → fetch and execute →
/// responder write → ACK → CQE → poll through the core), one at a time.
/// Returns operations per second of the calling thread's CPU time (per
/// core, so other load on the machine does not distort it); falls back to
/// wall-clock time where the thread CPU clock is unavailable.
pub fn loopback_write_rate(n: u64) -> f64 {
    loopback_write_rate_detail(n).0
}

/// As [`loopback_write_rate`], returning (ops per CPU second, ops per
/// wall-clock second).
pub fn loopback_write_rate_detail(n: u64) -> (f64, f64) {
    let f = Fabric::new(1);
    let d = f.add_device();
    let cfg = EpConfig {
        blueflame: false,
        ..EpConfig::new(QpType::Rc)
    };
    let mut a: Endpoint<256, 256, 1024> = Endpoint::new(&d, &cfg).expect("endpoint");
    let mut b: Endpoint<256, 256, 1024> = Endpoint::new(&d, &cfg).expect("endpoint");
    connect(&mut a, &mut b, &ConnOpts::default()).expect("connect");
    let sge = [a.sge(0, 64)];
    let op = SendOp::Write {
        remote_addr: b.addr(0),
        rkey: b.mr().rkey(),
    };
    let mut wc = [WorkCompletion::default(); 4];
    let cpu0 = thread_cpu_ns();
    let start = Instant::now();
    let mut ok = 0u64;
    for i in 0..n {
        let wr = SendWr::new(i, op, &sge).with_flags(SendFlags::SIGNALED);
        if a.post_send(&[wr], &[*a.mr()]).is_err() {
            break;
        }
        let k = a.poll(&mut wc);
        ok += wc[..k]
            .iter()
            .filter(|w| w.status == WcStatus::Success)
            .count() as u64;
    }
    let wall = start.elapsed().as_secs_f64();
    let cpu = match (cpu0, thread_cpu_ns()) {
        (Some(a), Some(b)) if b > a => (b - a) as f64 * 1e-9,
        _ => wall,
    };
    (ok as f64 / cpu.max(1e-9), ok as f64 / wall.max(1e-9))
}
