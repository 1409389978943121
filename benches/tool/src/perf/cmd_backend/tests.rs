//! The command-path backend over `bring_up_on` (the simulator behind
//! the firmware command interface). Expected WQE sizes come from the
//! segment rules ([ref §1.7](bareverbs::reference): ctrl 16, raddr 16, data 16 per SGE,
//! inline 4 + payload rounded to 16, atomic 16), not from the code.

use super::*;
use crate::perf::flags::{PerfArgs, PerfTest};
use crate::perf::report::PerfRunReport;
use crate::perf::rules::configs;

fn args(v: &[&str]) -> PerfArgs {
    let mut all = vec!["--device", "fw-sim"];
    all.extend_from_slice(v);
    crate::perf::flags::test_args(&all)
}

fn run(test: PerfTest, v: &[&str]) -> anyhow::Result<PerfRunReport> {
    let a = args(v);
    let mut opts = CmdOptions::new("fw-sim");
    opts.blueflame = a.blueflame;
    let mut be = fw_sim(a.seed, opts, None)?;
    let cfg = configs(test, &a)?.remove(0);
    be.run(&cfg)
}

/// Every WR completed OK, nothing arrived wrong.
fn clean(r: &PerfRunReport, posted: u64) {
    assert_eq!(r.posted, posted, "{r:?}");
    assert_eq!(r.completed_ok, posted);
    assert_eq!(r.completed_err, 0);
    assert_eq!(r.mismatches, 0);
    assert!(r.modeled);
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

#[test]
fn write_lat_ping_pong() {
    let r = run(PerfTest::WriteLat, &["-n", "50"]).unwrap();
    // 50 iterations, one WRITE each way per iteration.
    clean(&r, 100);
    assert_eq!(r.latency_samples_ns.len(), 50);
    assert_eq!(r.tposted.len(), 51);
    // 2 B inline (perftest's 220 B inline limit): ctrl 16 + raddr 16 +
    // align16(4 + 2) = 48 B, one WQEBB.
    assert_eq!((r.wqe_bytes, r.wqebbs), (48, 1));
    assert!(r.latency_samples_ns.iter().all(|&s| s > 0.0));
    assert!(r.post_ns > 0.0);
}

#[test]
fn send_lat_ping_pong() {
    let r = run(PerfTest::SendLat, &["-n", "40", "-s", "100"]).unwrap();
    clean(&r, 80);
    assert_eq!(r.latency_samples_ns.len(), 40);
    // 100 B inline SEND: ctrl 16 + align16(4 + 100) = 128 B, 2 WQEBBs.
    assert_eq!((r.wqe_bytes, r.wqebbs), (128, 2));
}

#[test]
fn read_and_atomic_lat() {
    let r = run(PerfTest::ReadLat, &["-n", "30", "-s", "300"]).unwrap();
    clean(&r, 30);
    assert_eq!(r.latency_samples_ns.len(), 30);
    // READ: ctrl + raddr + 1 data segment = 48 B.
    assert_eq!(r.wqe_bytes, 48);
    let a = run(PerfTest::AtomicLat, &["-n", "30"]).unwrap();
    clean(&a, 30);
    assert_eq!(a.latency_samples_ns.len(), 30);
    // Fetch-and-add: ctrl + raddr + atomic + data = 64 B.
    assert_eq!(a.wqe_bytes, 64);
    // A READ and an atomic are both one request/response round trip.
    assert!(mean(&a.latency_samples_ns) > 0.0);
}

#[test]
fn bandwidth_tests() {
    for (t, ds) in [
        (PerfTest::WriteBw, 3), // ctrl + raddr + data
        (PerfTest::SendBw, 2),  // ctrl + data
        (PerfTest::ReadBw, 3),
    ] {
        let r = run(
            t,
            &["-n", "300", "-s", "4096", "-t", "32", "-l", "4", "-Q", "2"],
        )
        .unwrap();
        clean(&r, 300);
        assert_eq!(r.tposted.len(), 300, "{t:?}");
        assert_eq!(r.tcompleted.len(), 300, "{t:?}");
        assert_eq!(r.wqe_bytes, 16 * ds, "{t:?}");
        // 4 WRs per doorbell.
        assert_eq!(r.counters["doorbells"], 75.0, "{t:?}");
        assert_eq!(r.counters["window"], 32.0);
        assert!(r.bandwidth_gbps > 0.0 && r.msg_rate_mpps > 0.0);
        // Completions never precede their posts.
        assert!(r.tposted.iter().zip(&r.tcompleted).all(|(p, c)| c >= p));
    }
}

/// The simulator's cost model charges one gather per posted SGE and
/// fetches the larger WQE: 16 SGEs take longer than 1, by at least
/// the 15 extra gathers (t_sge = 11 ns each, perf ref §2.3).
#[test]
fn latency_grows_with_posted_sges() {
    let one = run(
        PerfTest::WriteLat,
        &[
            "-n",
            "20",
            "-s",
            "256",
            "-I",
            "0",
            "--sge",
            "1",
            "--max-send-sge",
            "16",
        ],
    )
    .unwrap();
    let k16 = run(
        PerfTest::WriteLat,
        &["-n", "20", "-s", "256", "-I", "0", "--sge", "16"],
    )
    .unwrap();
    clean(&one, 40);
    clean(&k16, 40);
    // 1 SGE: 48 B; 16 SGEs: 32 + 16 * 16 = 288 B in 5 WQEBBs.
    assert_eq!((one.wqe_bytes, k16.wqe_bytes, k16.wqebbs), (48, 288, 5));
    let (l1, l16) = (mean(&one.latency_samples_ns), mean(&k16.latency_samples_ns));
    assert!(l16 > l1 + 15.0 * 11.0, "1 SGE {l1} ns, 16 SGEs {l16} ns");
}

#[test]
fn blueflame_only_when_asked() {
    let db = run(PerfTest::WriteLat, &["-n", "10"]).unwrap();
    let bf = run(PerfTest::WriteLat, &["-n", "10", "--blueflame"]).unwrap();
    assert_eq!(db.counters["nic.bf_writes"], 0.0);
    // Every WR is a single inline WQE: each one goes through BlueFlame.
    assert_eq!(bf.counters["nic.bf_writes"], 20.0);
    // The NIC does not fetch a BlueFlame'd WQE: faster.
    assert!(mean(&bf.latency_samples_ns) < mean(&db.latency_samples_ns));
}

#[test]
fn unreliable_transports() {
    let r = run(PerfTest::SendLat, &["-n", "20", "-c", "UD", "-s", "512"]).unwrap();
    clean(&r, 40);
    let r = run(PerfTest::WriteBw, &["-n", "100", "-c", "UC", "-s", "1024"]).unwrap();
    clean(&r, 100);
    let r = run(PerfTest::SendBw, &["-n", "100", "-c", "UD", "-s", "1024"]).unwrap();
    clean(&r, 100);
    // Lost UD datagrams are counted (size bytes each), not waited for.
    let r = run(
        PerfTest::SendBw,
        &[
            "-n", "200", "-c", "UD", "-s", "64", "--loss", "0.2", "--seed", "3",
        ],
    )
    .unwrap();
    assert_eq!(r.completed_ok, 200);
    assert!(
        r.mismatches > 0 && r.mismatches.is_multiple_of(64),
        "{}",
        r.mismatches
    );
}

#[test]
fn refusals_are_explained() {
    // Classic RC ops reserve 192 B per WQE: (1024 - 192) / 16 = 52 SGEs.
    let e = run(
        PerfTest::WriteLat,
        &["--sge", "60", "--send-ops", "classic"],
    )
    .unwrap_err();
    assert!(e.downcast_ref::<QpRejected>().is_some(), "{e}");
    assert!(e.to_string().contains("room for 52"), "{e}");
    // perftest's own refusals come first, with its messages.
    let e = run(PerfTest::ReadLat, &["-c", "UC"]).unwrap_err();
    assert!(
        e.to_string()
            .contains("UC connection not possible in READ/ATOMIC verbs"),
        "{e}"
    );
    // -q 2 runs two QP pairs, each through all its iterations.
    let r = run(PerfTest::WriteBw, &["-q", "2", "-n", "100", "-s", "1024"]).unwrap();
    clean(&r, 200);
    assert_eq!(r.tcompleted.len(), 200);
    let e = run(PerfTest::WriteLat, &["-c", "UD"]).unwrap_err();
    assert!(
        e.to_string()
            .contains("UD connection only possible in SEND verb"),
        "{e}"
    );
}

/// A WRITE that never arrives (every UC packet dropped) ends the run
/// with an error naming it, after the time limit — no hang.
#[test]
fn lost_transfer_times_out_with_a_name() {
    let e = run(PerfTest::WriteLat, &["-n", "5", "-c", "UC", "--loss", "1"]).unwrap_err();
    let t = e.to_string();
    assert!(t.contains("timed out after 5000 ms (virtual time)"), "{t}");
    assert!(t.contains("RDMA WRITE of iteration 0"), "{t}");
    // RC retries, then reports the failed WR by its status.
    let e = run(PerfTest::ReadLat, &["-n", "5", "--loss", "1"]).unwrap_err();
    assert!(e.to_string().contains("RETRY_EXC_ERR"), "{e}");
}

/// On a ConnectX bound to vfio-pci: `BAREVERBS_VFIO_BDF=0000:3b:00.0
/// cargo test -p bareverbs-tool -- --ignored hw_`.
#[test]
#[ignore = "needs a ConnectX bound to vfio-pci (BAREVERBS_VFIO_BDF)"]
fn hw_perf_over_vfio() {
    let Ok(bdf) = std::env::var("BAREVERBS_VFIO_BDF") else {
        eprintln!("BAREVERBS_VFIO_BDF not set; skipping");
        return;
    };
    let dev = format!("vfio:{bdf}");
    let mut be = vfio(&bdf, CmdOptions::new(&dev)).unwrap_or_else(|e| panic!("{e}"));
    for (t, v) in [
        (PerfTest::WriteLat, vec!["-n", "1000"]),
        (PerfTest::SendLat, vec!["-n", "1000"]),
        (PerfTest::ReadLat, vec!["-n", "1000"]),
        (PerfTest::AtomicLat, vec!["-n", "1000"]),
        (PerfTest::WriteBw, vec!["-n", "5000"]),
        (PerfTest::SendBw, vec!["-n", "5000"]),
        (PerfTest::ReadBw, vec!["-n", "5000"]),
    ] {
        let mut a = vec!["--device", dev.as_str()];
        a.extend(v);
        let cfg = configs(t, &crate::perf::flags::test_args(&a))
            .unwrap()
            .remove(0);
        let r = be.run(&cfg).unwrap_or_else(|e| panic!("{t:?}: {e:#}"));
        assert!(!r.modeled);
        assert_eq!(r.completed_ok, r.posted, "{t:?}");
        assert_eq!((r.completed_err, r.mismatches), (0, 0), "{t:?}");
        eprintln!(
            "{t:?}: {:.2} Gb/s, {:.3} Mpps, post {:.0} ns",
            r.bandwidth_gbps, r.msg_rate_mpps, r.post_ns
        );
    }
}
