//! Fault plans: a link-down window and a responder stall delay work but
//! lose nothing; every WR still completes once with the right bytes.

use bareverbs::cqe::WcStatus;
use bareverbs::qp::QpType;
use bareverbs::sq::{SendFlags, SendOp, SendWr};
use bareverbs_sim::harness::{connect, ConnOpts, Endpoint, EpConfig};
use bareverbs_sim::{Fabric, FaultPlan, Stall, Window};

type Ep = Endpoint<64, 64, 256>;

fn setup(f: &Fabric) -> (Ep, Ep) {
    let (da, db) = (f.add_device(), f.add_device());
    let mut a = Ep::new(&da, &EpConfig::new(QpType::Rc)).unwrap();
    let mut b = Ep::new(&db, &EpConfig::new(QpType::Rc)).unwrap();
    let o = ConnOpts {
        timeout: 5, // 131 µs
        retry_cnt: 7,
        ..ConnOpts::default()
    };
    connect(&mut a, &mut b, &o).unwrap();
    (a, b)
}

fn write_all(f: &Fabric, a: &mut Ep, b: &Ep, n: u64) -> u64 {
    let t0 = f.now_ns();
    for i in 0..n {
        a.write(i as usize * 64, &[i as u8 + 1; 64]);
        let s = [a.sge(i * 64, 64)];
        let wr = SendWr::new(
            i,
            SendOp::Write {
                remote_addr: b.addr(i * 64),
                rkey: b.mr().rkey(),
            },
            &s,
        )
        .with_flags(SendFlags::SIGNALED);
        a.post_send(&[wr], &[*a.mr()]).unwrap();
    }
    f.run_until_idle();
    let v = a.drain();
    assert_eq!(
        v.iter().map(|w| w.wr_id).collect::<Vec<_>>(),
        (0..n).collect::<Vec<_>>()
    );
    assert!(v.iter().all(|w| w.status == WcStatus::Success));
    for i in 0..n {
        assert_eq!(b.read(i as usize * 64, 64), vec![i as u8 + 1; 64]);
    }
    f.now_ns() - t0
}

#[test]
fn link_down_window_is_survived_by_retransmission() {
    let f = Fabric::new(4);
    f.set_auto_progress(false);
    let (mut a, b) = setup(&f);
    let now = f.now_ns();
    f.set_faults(FaultPlan {
        link_down: vec![Window {
            start_ns: now,
            end_ns: now + 300_000,
        }],
        ..FaultPlan::default()
    });
    let took = write_all(&f, &mut a, &b, 8);
    assert!(took >= 300_000, "completion waited for the link: {took}");
    assert!(a.dev().qp_counters(a.qpn()).unwrap().timeouts >= 1);
}

#[test]
fn responder_stall_delays_without_loss() {
    let f = Fabric::new(4);
    f.set_auto_progress(false);
    let (mut a, b) = setup(&f);
    let now = f.now_ns();
    f.set_faults(FaultPlan {
        stalls: vec![Stall {
            device: b.dev().index(),
            window: Window {
                start_ns: now,
                end_ns: now + 50_000,
            },
        }],
        ..FaultPlan::default()
    });
    let took = write_all(&f, &mut a, &b, 4);
    assert!(took >= 50_000, "{took}");
    assert_eq!(a.dev().qp_counters(a.qpn()).unwrap().retransmits, 0);
}

#[test]
fn delayed_and_duplicated_packets() {
    let f = Fabric::new(12);
    f.set_auto_progress(false);
    let (mut a, b) = setup(&f);
    f.set_faults(FaultPlan {
        delay: 0.3,
        delay_ns: 20_000,
        duplicate: 0.3,
        ..FaultPlan::default()
    });
    write_all(&f, &mut a, &b, 32);
}

#[test]
fn reset_and_reconnect_after_error_still_retransmits() {
    use bareverbs::qp::{QpAttrMask as M, QpState};
    use bareverbs_sim::QpAttr;
    let f = Fabric::new(21);
    f.set_auto_progress(false);
    let (mut a, mut b) = setup(&f);
    for e in [&mut a, &mut b] {
        e.modify(
            &QpAttr {
                qp_state: QpState::Err,
                ..QpAttr::default()
            },
            M::STATE,
        )
        .unwrap();
        e.modify(
            &QpAttr {
                qp_state: QpState::Reset,
                ..QpAttr::default()
            },
            M::STATE,
        )
        .unwrap();
        let _ = e.drain();
    }
    connect(
        &mut a,
        &mut b,
        &ConnOpts {
            timeout: 5,
            ..ConnOpts::default()
        },
    )
    .unwrap();
    f.set_faults(FaultPlan::lossy(0.2));
    write_all(&f, &mut a, &b, 16);
}
