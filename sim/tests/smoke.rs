use bareverbs::qp::QpType;
use bareverbs::sq::{SendFlags, SendOp, SendWr};
use bareverbs_sim::harness::{connect, ConnOpts, Endpoint, EpConfig};
use bareverbs_sim::Fabric;

#[test]
fn loopback_write() {
    let f = Fabric::new(1);
    let d = f.add_device();
    let mut a: Endpoint = Endpoint::new(&d, &EpConfig::new(QpType::Rc)).unwrap();
    let mut b: Endpoint = Endpoint::new(&d, &EpConfig::new(QpType::Rc)).unwrap();
    connect(&mut a, &mut b, &ConnOpts::default()).unwrap();
    a.write(0, b"hello world");
    let sge = [a.sge(0, 11)];
    let wr = SendWr::new(
        7,
        SendOp::Write {
            remote_addr: b.addr(100),
            rkey: b.mr.rkey(),
        },
        &sge,
    )
    .with_flags(SendFlags::SIGNALED);
    a.qp.sq.post_send(&[wr], &[a.mr]).unwrap();
    let wcs = a.drain();
    println!("{wcs:?}");
    assert_eq!(wcs.len(), 1);
    assert_eq!(b.read(100, 11), b"hello world");
}

#[test]
fn rate_and_perf() {
    let r = bareverbs_sim::perf::loopback_write_rate(200_000);
    println!("loopback rate {r:.0} ops/s");
    let cfg = bareverbs_sim::perf::PerfConfig {
        size: 4096,
        iterations: 20000,
        num_qps: 8,
        loss: 0.01,
        seed: 7,
        ..Default::default()
    };
    let t = std::time::Instant::now();
    let rep = bareverbs_sim::perf::run_perf(&cfg);
    println!(
        "perf {:?} posted {} ok {} err {} mism {} bw {:.2} mpps {:.3} retx {} wall {:?}",
        cfg.kind,
        rep.posted,
        rep.completed_ok,
        rep.completed_err,
        rep.mismatches,
        rep.bw_gbps,
        rep.msg_rate_mpps,
        rep.requester.retransmits,
        t.elapsed()
    );
    assert_eq!(rep.completed_ok, rep.posted);
    assert_eq!(rep.posted, 160000);
}
