//! The raw loopback rate of the simulator itself ([`loopback_write_rate`]).
//!
//! perftest's tests on the simulator are `bareverbs perf … --device sim`
//! (the bench crate's one perftest engine over this crate's devices).

use crate::device::Fabric;
use crate::harness::{connect, ConnOpts, Endpoint, EpConfig};
use bareverbs::cqe::{Completion, WcStatus};
use bareverbs::qp::QpType;
use bareverbs::sq::{RdmaOp, RdmaWr};
use std::time::Instant;

/// CPU time of the calling thread in ns (Linux `/proc/thread-self/schedstat`,
/// first field), when available.
fn thread_cpu_ns() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    s.split_whitespace().next()?.parse().ok()
}

/// Measures the simulator's own speed: `n` loopback 64-byte RDMA WRITEs
/// end to end, one at a time: each one signaled WRITE posted through the
/// core's fixed-operation post with its SGE checked against the registered
/// buffer ([`Endpoint::post_rdma`]) → doorbell → fetch and execute →
/// responder write → ACK → CQE (the fused path of `transport::fast`) →
/// polled through the core's lean poller ([`Endpoint::poll_completions`]),
/// every completion checked for success.
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
    let (remote_addr, rkey) = (b.addr(0), b.mr().rkey());
    let mut wc = [Completion::default(); 4];
    let cpu0 = thread_cpu_ns();
    let start = Instant::now();
    let mut ok = 0u64;
    for i in 0..n {
        // One signaled 64-byte RDMA WRITE, its SGE checked against the
        // registered buffer (the checks and WQE of `post_send`).
        let wr = RdmaWr {
            wr_id: i,
            remote_addr,
            rkey,
            sgl: &sge,
            signaled: true,
        };
        if a.post_rdma(RdmaOp::Write, &[wr]).is_err() {
            break;
        }
        let k = a.poll_completions(&mut wc);
        ok += wc[..k]
            .iter()
            .filter(|w| w.status() == WcStatus::Success)
            .count() as u64;
    }
    let wall = start.elapsed().as_secs_f64();
    let cpu = match (cpu0, thread_cpu_ns()) {
        (Some(a), Some(b)) if b > a => (b - a) as f64 * 1e-9,
        _ => wall,
    };
    (ok as f64 / cpu.max(1e-9), ok as f64 / wall.max(1e-9))
}
