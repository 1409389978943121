//! The perftest-like driver and the cost model, through `run_perf`.

use bareverbs_sim::perf::{loopback_write_rate_detail, run_perf, PerfConfig, TestKind};

#[test]
fn write_bw_4k_8qps_1pct_loss_seed7_all_ok() {
    let cfg = PerfConfig {
        kind: TestKind::WriteBw,
        size: 4096,
        iterations: 20000,
        num_qps: 8,
        loss: 0.01,
        seed: 7,
        ..PerfConfig::default()
    };
    let r = run_perf(&cfg);
    println!(
        "write-bw: posted {} ok {} err {} mismatches {} bw {:.2} Gb/s {:.3} Mpps retransmits {} wall {:.2}s",
        r.posted, r.completed_ok, r.completed_err, r.mismatches, r.bw_gbps, r.msg_rate_mpps,
        r.requester.retransmits, r.wall_s
    );
    assert_eq!(r.posted, 8 * 20000);
    assert_eq!(r.completed_ok, r.posted);
    assert_eq!(r.completed_err, 0);
    assert_eq!(r.mismatches, 0);
    assert!(r.requester.retransmits > 0);
    // Modelled bandwidth cannot exceed the 100 Gb/s link.
    assert!(r.bw_gbps > 0.0 && r.bw_gbps <= 100.0);
}

#[test]
fn latency_tests_produce_samples_and_correct_data() {
    for kind in [
        TestKind::WriteLat,
        TestKind::SendLat,
        TestKind::ReadLat,
        TestKind::AtomicLat,
    ] {
        let r = run_perf(&PerfConfig {
            kind,
            size: 64,
            iterations: 200,
            ..PerfConfig::default()
        });
        assert_eq!(r.completed_ok, 200, "{kind:?}");
        assert_eq!(r.mismatches, 0, "{kind:?}");
        assert_eq!(r.lat_samples_ns.len(), 200);
        let avg = r.lat_samples_ns.iter().sum::<f64>() / 200.0;
        // At least the wire latency t_base (600 ns), well under 10 µs.
        assert!(avg > 600.0 && avg < 10_000.0, "{kind:?} {avg}");
    }
}

#[test]
fn bigger_wqes_fetch_more_bytes_and_take_longer() {
    // PERF_AND_SIM §2.3: k posted SGEs → W = 32 + 16k bytes → more WQE
    // bytes fetched and (k − 1) extra gathers → more latency.
    let run = |k: u32| {
        run_perf(&PerfConfig {
            kind: TestKind::WriteLat,
            // 64 bytes per SGE, so the first gather is the same size.
            size: 64 * k,
            iterations: 100,
            max_send_sge: k,
            posted_sges: k,
            ..PerfConfig::default()
        })
    };
    let (r1, r16) = (run(1), run(16));
    let per = |r: &bareverbs_sim::perf::PerfReport| {
        r.requester.wqe_bytes_fetched as f64 / r.completed_ok as f64
    };
    // 1 SGE: 48 B → 1 WQEBB; 16 SGEs: 288 B → 5 WQEBBs (64 B each).
    assert_eq!(per(&r1), 64.0);
    assert_eq!(per(&r16), 320.0);
    let avg = |r: &bareverbs_sim::perf::PerfReport| {
        r.lat_samples_ns.iter().sum::<f64>() / r.lat_samples_ns.len() as f64
    };
    let delta = avg(&r16) - avg(&r1);
    // beta * 256 extra bytes + 15 * t_sge = 76.8 + 165 = 241.8 ns (±1 ns of rounding).
    assert!((delta - 241.8).abs() < 2.0, "delta {delta}");
}

#[test]
fn loopback_rate_is_measured() {
    let (cpu, wall) = loopback_write_rate_detail(50_000);
    println!("loopback 64-byte WRITE: {cpu:.0} ops/CPU-s, {wall:.0} ops/wall-s");
    assert!(cpu > 0.0 && wall > 0.0);
}

#[test]
fn qp_context_cache_misses_when_qps_exceed_capacity() {
    let run = |cap: u32| {
        let params = bareverbs_sim::ModelParams {
            qpc_cache_qps: cap,
            ..Default::default()
        };
        run_perf(&PerfConfig {
            kind: TestKind::WriteBw,
            size: 64,
            iterations: 100,
            num_qps: 4,
            tx_depth: 1,
            params,
            ..PerfConfig::default()
        })
    };
    let (small, big) = (run(2), run(8));
    assert_eq!(small.completed_ok, 400);
    // Round-robin over 4 QPs with room for 2 contexts: every WQE misses.
    assert_eq!(small.requester.qpc_misses, 400);
    // Room for all: only the first WQE of each QP misses.
    assert_eq!(big.requester.qpc_misses, 4);
    assert!(small.msg_rate_mpps < big.msg_rate_mpps);
}
