//! Runs one perftest-like test on the simulator and prints the report.
//! Usage: perf_run [write-bw|write-lat|send-bw|send-lat|read-bw|read-lat|atomic-lat] [size] [iters] [qps] [loss] [max_send_sge]
use bareverbs_sim::perf::{run_perf, PerfConfig, TestKind};

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let kind = match a.get(1).map(String::as_str).unwrap_or("write-bw") {
        "write-lat" => TestKind::WriteLat,
        "send-bw" => TestKind::SendBw,
        "send-lat" => TestKind::SendLat,
        "read-bw" => TestKind::ReadBw,
        "read-lat" => TestKind::ReadLat,
        "atomic-lat" => TestKind::AtomicLat,
        _ => TestKind::WriteBw,
    };
    let num = |i: usize, d: f64| a.get(i).and_then(|s| s.parse().ok()).unwrap_or(d);
    let k = num(6, 1.0) as u32;
    let cfg = PerfConfig {
        kind,
        size: num(2, 4096.0) as u32,
        iterations: num(3, 5000.0) as u64,
        num_qps: num(4, 1.0) as u32,
        loss: num(5, 0.0),
        max_send_sge: k,
        posted_sges: k,
        ..PerfConfig::default()
    };
    let r = run_perf(&cfg);
    let avg = if r.lat_samples_ns.is_empty() {
        0.0
    } else {
        r.lat_samples_ns.iter().sum::<f64>() / r.lat_samples_ns.len() as f64
    };
    println!(
        "{kind:?} size {} qps {}: posted {} ok {} err {} mismatches {} | {:.2} Gb/s {:.3} Mpps | lat avg {:.1} ns | WQE bytes fetched {} retransmits {} | wall {:.2}s",
        cfg.size, cfg.num_qps, r.posted, r.completed_ok, r.completed_err, r.mismatches, r.bw_gbps,
        r.msg_rate_mpps, avg, r.requester.wqe_bytes_fetched, r.requester.retransmits, r.wall_s
    );
}
