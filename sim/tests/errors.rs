//! Every error path: the completion (status, syndrome → status per
//! [ref §5.6](bareverbs::reference), vendor syndrome) and the QP state afterwards; flush order; CQ
//! overrun; RNR and transport retries; state-machine violations.

use bareverbs::cqe::{WcStatus, WorkCompletion};
use bareverbs::mr::Access;
use bareverbs::qp::{QpAttrMask as M, QpState, QpTransitionError, QpType};
use bareverbs::rq::RecvWr;
use bareverbs::sq::{PostErrorKind, SendFlags, SendOp, SendWr, Sge};
use bareverbs_sim::harness::{connect, to_rts, ConnOpts, Endpoint, EpConfig};
use bareverbs_sim::{vendor, AsyncEvent, Device, Fabric, QpAttr, SimError};

type Ep = Endpoint<256, 256, 1024>;

fn ep(d: &Device, ty: QpType) -> Ep {
    Ep::new(d, &EpConfig::new(ty)).unwrap()
}

fn pair_with(o: &ConnOpts) -> (Fabric, Ep, Ep) {
    let f = Fabric::new(11);
    let (da, db) = (f.add_device(), f.add_device());
    let (mut a, mut b) = (ep(&da, QpType::Rc), ep(&db, QpType::Rc));
    connect(&mut a, &mut b, o).unwrap();
    (f, a, b)
}

fn pair() -> (Fabric, Ep, Ep) {
    pair_with(&ConnOpts::default())
}

fn recv(e: &mut Ep, wr_id: u64, off: u64, len: u32) {
    let s = [e.sge(off, len)];
    // SAFETY: inside the endpoint's registered buffer.
    unsafe { e.post_recv_raw(&[RecvWr { wr_id, sgl: &s }]) }.unwrap();
}

fn write_wr<'a>(b: &Ep, wr_id: u64, sgl: &'a [Sge], roff: u64, signaled: bool) -> SendWr<'a> {
    let w = SendWr::new(
        wr_id,
        SendOp::Write {
            remote_addr: b.addr(roff),
            rkey: b.mr().rkey(),
        },
        sgl,
    );
    if signaled {
        w.with_flags(SendFlags::SIGNALED)
    } else {
        w
    }
}

/// Control segment per [ref §1.2](bareverbs::reference).
fn ctrl(idx: u16, opcode: u8, qpn: u32, ds: u8, fm_ce_se: u8) -> [u8; 16] {
    let mut c = [0u8; 16];
    c[0..4].copy_from_slice(&(((idx as u32) << 8) | opcode as u32).to_be_bytes());
    c[4..8].copy_from_slice(&((qpn << 8) | ds as u32).to_be_bytes());
    c[11] = fm_ce_se;
    c
}

fn expect_err(wc: &WorkCompletion, status: WcStatus, vendor_synd: u8) {
    assert_eq!(wc.status, status, "{wc:?}");
    assert_eq!(wc.vendor_err, vendor_synd as u32, "{wc:?}");
}

#[test]
fn bad_opcode_ds_and_type_give_local_qp_op_error() {
    // ref §1.6: 0x07 is no send opcode; §1.1: DS 0 and DS past the
    // ring are malformed; §1.7: READ is not a UD operation.
    let cases: Vec<(QpType, [u8; 16], u32)> = vec![
        (QpType::Rc, ctrl(0, 0x07, 0, 1, 0x08), 1),
        (QpType::Rc, ctrl(0, 0x0a, 0, 0, 0x08), 1),
        (QpType::Rc, ctrl(0, 0x08, 0, 3, 0x08), 1), // WRITE without room for raddr+data is fine; see below
        (QpType::Ud, ctrl(0, 0x10, 0, 5, 0x08), 2),
    ];
    for (i, (ty, mut c, bbs)) in cases.into_iter().enumerate() {
        let f = Fabric::new(1);
        let d = f.add_device();
        let mut a: Endpoint<4, 16, 64> = Endpoint::new(&d, &EpConfig::new(ty)).unwrap();
        let mut b: Endpoint<4, 16, 64> = Endpoint::new(&d, &EpConfig::new(ty)).unwrap();
        if ty == QpType::Ud {
            bareverbs_sim::harness::ud_to_rts(&mut a, 1).unwrap();
        } else {
            connect(&mut a, &mut b, &ConnOpts::default()).unwrap();
        }
        let ds = c[7] as u32;
        c[4..8].copy_from_slice(&((a.qpn() << 8) | ds).to_be_bytes());
        let mut wqe = vec![0u8; 64 * bbs as usize];
        wqe[..16].copy_from_slice(&c);
        if i == 2 {
            // A WRITE whose DS (3) is fine but whose data names lkey 0:
            // a local protection error, not an opcode error.
            wqe[16..24].copy_from_slice(&b.addr(0).to_be_bytes());
            wqe[24..28].copy_from_slice(&b.mr().rkey().to_be_bytes());
            wqe[32..36].copy_from_slice(&8u32.to_be_bytes());
            wqe[36..40].copy_from_slice(&0x4242u32.to_be_bytes());
        }
        a.post_raw_wqe(&wqe, bbs);
        let v = a.drain();
        assert_eq!(v.len(), 1, "case {i}: {v:?}");
        if i == 2 {
            expect_err(&v[0], WcStatus::LocProtErr, vendor::LOCAL_PROT);
        } else {
            expect_err(&v[0], WcStatus::LocQpOpErr, vendor::LOCAL_QP_OP);
        }
        // RC: the QP goes to ERR; UD send errors stop the SQ only (SQE).
        let want = if ty == QpType::Ud {
            QpState::Sqe
        } else {
            QpState::Err
        };
        assert_eq!(d.qp_state(a.qpn()), Some(want), "case {i}");
    }
}

#[test]
fn ds_larger_than_ring_is_an_error() {
    let f = Fabric::new(1);
    let d = f.add_device();
    let mut a: Endpoint<4, 16, 64> = Endpoint::new(&d, &EpConfig::new(QpType::Rc)).unwrap();
    let mut b: Endpoint<4, 16, 64> = Endpoint::new(&d, &EpConfig::new(QpType::Rc)).unwrap();
    connect(&mut a, &mut b, &ConnOpts::default()).unwrap();
    // DS 63 = 1008 bytes (16 WQEBBs) in a 256-byte ring (4 WQEBBs):
    // larger than the ring, so it can never be fetched whole.
    let c = ctrl(0, 0x0a, a.qpn(), 63, 0x08);
    let mut wqe = vec![0u8; 256];
    wqe[..16].copy_from_slice(&c);
    a.post_raw_wqe(&wqe, 4);
    let v = a.drain();
    expect_err(&v[0], WcStatus::LocQpOpErr, vendor::LOCAL_QP_OP);
    // The rest of the posted WQEBBs are flushed.
    for w in &v[1..] {
        expect_err(w, WcStatus::WrFlushErr, vendor::FLUSH);
    }
    assert_eq!(d.qp_state(a.qpn()), Some(QpState::Err));
}

#[test]
fn local_protection_on_bad_lkey_or_bounds() {
    let (_f, mut a, b) = pair();
    let bad = [Sge {
        addr: a.addr(0),
        length: 8,
        lkey: a.mr().lkey() ^ 0xff,
    }];
    // SAFETY: the device checks the SGE; nothing is read outside regions.
    unsafe { a.post_send_raw(&[write_wr(&b, 1, &bad, 0, false)]) }.unwrap();
    let v = a.drain();
    assert_eq!(v.len(), 1, "an error always completes, even unsignaled");
    expect_err(&v[0], WcStatus::LocProtErr, vendor::LOCAL_PROT);
    assert_eq!(v[0].wr_id, 1);
    assert_eq!(a.dev().qp_state(a.qpn()), Some(QpState::Err));
    assert_eq!(b.read(0, 8), vec![0; 8]);
}

#[test]
fn local_bounds_violation() {
    let (_f, mut a, b) = pair();
    let past = [Sge {
        addr: a.addr(a.buf().len as u64 - 4),
        length: 8,
        lkey: a.mr().lkey(),
    }];
    // SAFETY: the device checks the SGE against the region.
    unsafe { a.post_send_raw(&[write_wr(&b, 2, &past, 0, true)]) }.unwrap();
    expect_err(&a.drain()[0], WcStatus::LocProtErr, vendor::LOCAL_PROT);
}

#[test]
fn remote_access_errors_move_both_sides() {
    // Bad rkey, out of bounds, and a QP without REMOTE_WRITE.
    for case in 0..3 {
        let o = ConnOpts {
            access: if case == 2 {
                Access::REMOTE_READ
            } else {
                Access::REMOTE_WRITE | Access::REMOTE_READ | Access::REMOTE_ATOMIC
            },
            ..ConnOpts::default()
        };
        let (_f, mut a, b) = pair_with(&o);
        a.write(0, &[0xab; 32]);
        let s = [a.sge(0, 32)];
        let (addr, rkey) = match case {
            0 => (b.addr(0), b.mr().rkey() ^ 0x100),
            1 => (b.addr(b.buf().len as u64 - 16), b.mr().rkey()),
            _ => (b.addr(0), b.mr().rkey()),
        };
        let wr = SendWr::new(
            3,
            SendOp::Write {
                remote_addr: addr,
                rkey,
            },
            &s,
        );
        a.post_send(&[wr], &[*a.mr()]).unwrap();
        let v = a.drain();
        assert_eq!(v.len(), 1, "case {case}");
        expect_err(&v[0], WcStatus::RemAccessErr, vendor::REMOTE_ACCESS);
        assert_eq!(a.dev().qp_state(a.qpn()), Some(QpState::Err));
        assert_eq!(b.dev().qp_state(b.qpn()), Some(QpState::Err));
        // No byte was written anywhere in the responder's buffer.
        assert!(
            b.read(0, b.buf().len).iter().all(|&x| x == 0),
            "case {case}"
        );
    }
}

#[test]
fn receive_too_small_is_local_length_at_responder() {
    let (_f, mut a, mut b) = pair();
    recv(&mut b, 50, 0, 16);
    recv(&mut b, 51, 100, 16);
    let s = [a.sge(0, 64)];
    a.post_send(
        &[SendWr::new(4, SendOp::Send, &s).with_flags(SendFlags::SIGNALED)],
        &[*a.mr()],
    )
    .unwrap();
    let va = a.drain();
    expect_err(&va[0], WcStatus::RemInvReqErr, vendor::REMOTE_INVAL_REQ);
    let vb = b.drain();
    assert_eq!(vb.len(), 2, "{vb:?}");
    assert_eq!(vb[0].wr_id, 50);
    expect_err(&vb[0], WcStatus::LocLenErr, vendor::LOCAL_LENGTH);
    // The second receive is flushed (the responder QP is in ERR).
    assert_eq!(vb[1].wr_id, 51);
    expect_err(&vb[1], WcStatus::WrFlushErr, vendor::FLUSH);
    assert!(b.read(0, 16).iter().all(|&x| x == 0));
}

#[test]
fn rnr_retry_exhaustion_and_rnr_recovery() {
    // rnr_retry 2: three tries, then RNR_RETRY_EXC (0x16).
    let o = ConnOpts {
        rnr_retry: 2,
        min_rnr_timer: 1,
        ..ConnOpts::default()
    };
    let (_f, mut a, _b) = pair_with(&o);
    let s = [a.sge(0, 8)];
    a.post_send(
        &[SendWr::new(1, SendOp::Send, &s).with_flags(SendFlags::SIGNALED)],
        &[*a.mr()],
    )
    .unwrap();
    let v = a.drain();
    expect_err(&v[0], WcStatus::RnrRetryExcErr, vendor::RNR_RETRY_EXC);
    assert_eq!(a.dev().qp_counters(a.qpn()).unwrap().rnr_naks, 3);

    // rnr_retry 7 = infinite: the send waits until a receive is posted.
    let o = ConnOpts {
        rnr_retry: 7,
        min_rnr_timer: 1,
        ..ConnOpts::default()
    };
    let (f, mut a, mut b) = pair_with(&o);
    f.set_horizon_ns(2_000_000); // 2 ms of RNR retries per run
    a.write(0, b"rnr!");
    let s = [a.sge(0, 4)];
    a.post_send(
        &[SendWr::new(2, SendOp::Send, &s).with_flags(SendFlags::SIGNALED)],
        &[*a.mr()],
    )
    .unwrap();
    assert!(a.drain().is_empty());
    assert!(a.dev().qp_counters(a.qpn()).unwrap().rnr_naks > 10);
    recv(&mut b, 9, 0, 64);
    f.run_until_idle();
    assert_eq!(a.drain()[0].status, WcStatus::Success);
    let r = b.drain();
    assert_eq!((r[0].wr_id, r[0].byte_len), (9, 4));
    assert_eq!(b.read(0, 4), b"rnr!");
}

#[test]
fn transport_retry_exhaustion_and_flush_order() {
    // timeout 4 (65.5 µs), retry_cnt 3: 4 transmissions, then 0x15.
    let o = ConnOpts {
        timeout: 4,
        retry_cnt: 3,
        ..ConnOpts::default()
    };
    let (f, mut a, mut b) = pair_with(&o);
    // Two receives on the responder, then it goes to ERR: its RQ flushes
    // in order, and it drops every request from then on.
    recv(&mut b, 70, 0, 8);
    recv(&mut b, 71, 8, 8);
    b.modify(
        &QpAttr {
            qp_state: QpState::Err,
            ..QpAttr::default()
        },
        M::STATE,
    )
    .unwrap();
    let vb = b.drain();
    assert_eq!(vb.iter().map(|w| w.wr_id).collect::<Vec<_>>(), [70, 71]);
    for w in &vb {
        expect_err(w, WcStatus::WrFlushErr, vendor::FLUSH);
    }
    f.set_auto_progress(false);
    let s = [a.sge(0, 8)];
    let wrs = [
        write_wr(&b, 1, &s, 0, true),
        write_wr(&b, 2, &s, 8, false),
        write_wr(&b, 3, &s, 16, true),
    ];
    a.post_send(&wrs, &[*a.mr()]).unwrap();
    let t0 = f.now_ns();
    f.run_until_idle();
    let v = a.drain();
    assert_eq!(
        v.iter().map(|w| w.wr_id).collect::<Vec<_>>(),
        [1, 2, 3],
        "{v:?}"
    );
    expect_err(&v[0], WcStatus::RetryExcErr, vendor::RETRY_EXC);
    expect_err(&v[1], WcStatus::WrFlushErr, vendor::FLUSH);
    expect_err(&v[2], WcStatus::WrFlushErr, vendor::FLUSH);
    let c = a.dev().qp_counters(a.qpn()).unwrap();
    assert_eq!(c.timeouts, 4);
    // 4 timeouts of 4.096 µs × 2^4 each.
    assert!(f.now_ns() - t0 >= 4 * 4096 * 16);
    // Posting in ERR still works and flushes immediately.
    f.set_auto_progress(true);
    a.post_send(&[write_wr(&b, 4, &s, 0, false)], &[*a.mr()])
        .unwrap();
    let v = a.drain();
    assert_eq!(v.len(), 1);
    expect_err(&v[0], WcStatus::WrFlushErr, vendor::FLUSH);
}

#[test]
fn cq_overrun_is_detected_and_reported() {
    let f = Fabric::new(5);
    let d = f.add_device();
    let mut a: Endpoint<64, 16, 4> = Endpoint::new(&d, &EpConfig::new(QpType::Rc)).unwrap();
    let mut b: Endpoint<64, 16, 4> = Endpoint::new(&d, &EpConfig::new(QpType::Rc)).unwrap();
    connect(&mut a, &mut b, &ConnOpts::default()).unwrap();
    let s = [a.sge(0, 8)];
    for i in 0..6 {
        let wr = SendWr::new(
            i,
            SendOp::Write {
                remote_addr: b.addr(0),
                rkey: b.mr().rkey(),
            },
            &s,
        )
        .with_flags(SendFlags::SIGNALED);
        a.post_send(&[wr], &[*a.mr()]).unwrap();
    }
    let ev = d.take_events();
    assert!(ev.contains(&AsyncEvent::CqError { cqn: a.cqn() }), "{ev:?}");
    assert!(ev.contains(&AsyncEvent::QpFatal { qpn: a.qpn() }), "{ev:?}");
    assert!(d.cq_in_error(a.cqn()));
    assert_eq!(d.qp_state(a.qpn()), Some(QpState::Err));
    // The four CQEs written before the overrun are intact and in order;
    // nothing was overwritten.
    let v = a.drain();
    assert_eq!(
        v.iter().map(|w| (w.wr_id, w.status)).collect::<Vec<_>>(),
        (0..4).map(|i| (i, WcStatus::Success)).collect::<Vec<_>>()
    );
}

#[test]
fn state_machine_is_enforced() {
    let f = Fabric::new(9);
    let d = f.add_device();
    let mut a = ep(&d, QpType::Rc);
    let mut b = ep(&d, QpType::Rc);
    // Posting in RESET: refused by the core (qp_state_max_gs = -1).
    let s = [a.sge(0, 8)];
    let e = a
        .post_send(&[write_wr(&b, 1, &s, 0, true)], &[*a.mr()])
        .unwrap_err();
    assert!(matches!(
        e.kind,
        PostErrorKind::TooManySges { max: None, .. }
    ));
    // Illegal transitions and missing attributes are refused.
    let err = d
        .modify_qp(
            a.qpn(),
            &QpAttr {
                qp_state: QpState::Rts,
                ..QpAttr::default()
            },
            M::STATE | M::SQ_PSN,
        )
        .unwrap_err();
    assert_eq!(
        err,
        SimError::Transition(QpTransitionError::Illegal {
            from: QpState::Reset,
            to: QpState::Rts
        })
    );
    let err = d
        .modify_qp(
            a.qpn(),
            &QpAttr {
                qp_state: QpState::Init,
                ..QpAttr::default()
            },
            M::STATE | M::PORT,
        )
        .unwrap_err();
    assert!(matches!(
        err,
        SimError::Transition(QpTransitionError::Missing { .. })
    ));
    // A doorbell for a QP that is not in RTS is ignored; the WQE runs once
    // the QP reaches RTS.
    b.write(0, &[0; 8]);
    a.write(0, &[7; 8]);
    let mut wqe = [0u8; 64];
    wqe[..16].copy_from_slice(&ctrl(0, 0x08, a.qpn(), 3, 0x08));
    wqe[16..24].copy_from_slice(&b.addr(0).to_be_bytes());
    wqe[24..28].copy_from_slice(&b.mr().rkey().to_be_bytes());
    wqe[32..36].copy_from_slice(&8u32.to_be_bytes());
    wqe[36..40].copy_from_slice(&a.mr().lkey().to_be_bytes());
    wqe[40..48].copy_from_slice(&a.addr(0).to_be_bytes());
    a.post_raw_wqe(&wqe, 1);
    assert!(a.drain().is_empty());
    assert!(d.qp_counters(a.qpn()).unwrap().ignored_doorbells >= 1);
    assert_eq!(b.read(0, 8), [0; 8]);
    to_rts(&mut b, d.lid(), a.qpn(), &ConnOpts::default()).unwrap();
    to_rts(&mut a, d.lid(), b.qpn(), &ConnOpts::default()).unwrap();
    assert_eq!(a.drain().len(), 1);
    assert_eq!(b.read(0, 8), [7; 8]);
    // CUR_STATE must match.
    let err = d
        .modify_qp(
            a.qpn(),
            &QpAttr {
                qp_state: QpState::Rts,
                cur_qp_state: QpState::Sqd,
                ..QpAttr::default()
            },
            M::STATE | M::CUR_STATE,
        )
        .unwrap_err();
    assert_eq!(err, SimError::CurStateMismatch);
    // Any state -> RESET: the host queues reset too and posting stops.
    a.modify(
        &QpAttr {
            qp_state: QpState::Reset,
            ..QpAttr::default()
        },
        M::STATE,
    )
    .unwrap();
    assert_eq!(d.qp_state(a.qpn()), Some(QpState::Reset));
    assert!(a
        .post_send(&[write_wr(&b, 1, &s, 0, true)], &[*a.mr()])
        .is_err());
}

#[test]
fn doorbell_before_record_is_counted_and_not_executed() {
    use bareverbs::platform::{Uar, BF_OFFSET};
    let (_f, mut a, b) = pair();
    // A correct post: the record covers the WQE.
    let s = [a.sge(0, 8)];
    a.post_send(&[write_wr(&b, 1, &s, 0, true)], &[*a.mr()])
        .unwrap();
    assert_eq!(a.drain().len(), 1);
    assert_eq!(a.dev().qp_counters(a.qpn()).unwrap().stale_dbrec, 0);
    // A doorbell for WQE index 1 while the record still says 1 (nothing
    // new posted): counted, nothing executes.
    let mut db = [0u8; 8];
    db[..4].copy_from_slice(&((1u32 << 8) | 0x08).to_be_bytes());
    db[4..].copy_from_slice(&((a.qpn() << 8) | 3).to_be_bytes());
    a.uar_mut().write64(BF_OFFSET, db);
    assert!(a.drain().is_empty());
    assert_eq!(a.dev().qp_counters(a.qpn()).unwrap().stale_dbrec, 1);
}

#[test]
fn ud_send_error_moves_to_sqe_and_receives_keep_working() {
    use bareverbs::sq::UdDest;
    use bareverbs::wqe::{AddressVector, Be16, Be32};
    use bareverbs_sim::harness::ud_to_rts;
    let f = Fabric::new(2);
    let d = f.add_device();
    let (mut a, mut b) = (ep(&d, QpType::Ud), ep(&d, QpType::Ud));
    ud_to_rts(&mut a, 5).unwrap();
    ud_to_rts(&mut b, 5).unwrap();
    let av = AddressVector {
        key: [0; 8],
        dqp_dct: Be32::new(0),
        stat_rate_sl: 0,
        fl_mlid: 0,
        rlid: Be16::new(d.lid()),
        reserved0: [0; 4],
        rmac: [0; 6],
        tclass: 0,
        hop_limit: 0,
        grh_gid_fl: Be32::new(0),
        rgid: [0; 16],
    };
    // b sends with a bad lkey: LOC_PROT, b's QP goes to SQE (not ERR).
    let bad = [Sge {
        addr: b.addr(0),
        length: 8,
        lkey: 0x4242,
    }];
    let wr = SendWr::new(1, SendOp::Send, &bad)
        .with_flags(SendFlags::SIGNALED)
        .with_ud(UdDest {
            av: &av,
            remote_qpn: a.qpn(),
            remote_qkey: 5,
        });
    // SAFETY: the device checks the SGE against its regions.
    unsafe { b.post_send_raw(&[wr]) }.unwrap();
    expect_err(&b.drain()[0], WcStatus::LocProtErr, vendor::LOCAL_PROT);
    assert_eq!(b.dev().qp_state(b.qpn()), Some(QpState::Sqe));
    // b still receives.
    recv(&mut b, 7, 0, 200);
    a.write(0, b"still here");
    let s = [a.sge(0, 10)];
    let wr = SendWr::new(2, SendOp::Send, &s)
        .with_flags(SendFlags::SIGNALED)
        .with_ud(UdDest {
            av: &av,
            remote_qpn: b.qpn(),
            remote_qkey: 5,
        });
    a.post_send(&[wr], &[*a.mr()]).unwrap();
    assert_eq!(a.drain()[0].status, WcStatus::Success);
    let r = b.drain();
    assert_eq!(
        (r[0].wr_id, r[0].status, r[0].byte_len),
        (7, WcStatus::Success, 50)
    );
    assert_eq!(b.read(40, 10), b"still here");
    // SQE -> RTS: sending works again.
    b.modify(
        &QpAttr {
            qp_state: QpState::Rts,
            ..QpAttr::default()
        },
        M::STATE,
    )
    .unwrap();
    recv(&mut a, 8, 100, 200);
    let s = [b.sge(40, 10)];
    let wr = SendWr::new(3, SendOp::Send, &s)
        .with_flags(SendFlags::SIGNALED)
        .with_ud(UdDest {
            av: &av,
            remote_qpn: a.qpn(),
            remote_qkey: 5,
        });
    b.post_send(&[wr], &[*b.mr()]).unwrap();
    assert_eq!(b.drain()[0].status, WcStatus::Success);
    assert_eq!(a.read(140, 10), b"still here");
}

#[test]
fn objects_over_bad_device_addresses_are_refused() {
    use bareverbs_sim::{Pd, QpInit};
    let f = Fabric::new(1);
    let d = f.add_device();
    let pd = d.alloc_pd();
    let ring = d.alloc(4096).unwrap();
    let rec = d.alloc(8).unwrap();
    // Inside allocations: accepted.
    let cqn = d.create_cq_at(64, 1, ring.iova, rec.iova).unwrap();
    // One byte past the ring's allocation, or an address nobody mapped.
    assert_eq!(
        d.create_cq_at(128, 1, ring.iova, rec.iova),
        Err(SimError::BadAddress)
    );
    assert_eq!(
        d.create_cq_at(64, 1, 0x1000, rec.iova),
        Err(SimError::BadAddress)
    );
    let init = QpInit {
        qp_type: QpType::Rc,
        pd,
        send_cq: cqn,
        recv_cq: cqn,
        srq: None,
        sq_wqebbs: 64,
        rq_wqes: 64,
        rq_wqe_shift: 4,
        uidx: 0,
    };
    let sq = d.alloc(64 * 64).unwrap();
    let rq = d.alloc(64 * 16).unwrap();
    let qrec = d.alloc(8).unwrap();
    assert_eq!(
        d.create_qp_at(&init, Some(sq.iova + 64), Some(rq.iova), qrec.iova),
        Err(SimError::BadAddress)
    );
    assert_eq!(
        d.create_qp_at(&init, Some(sq.iova), Some(rq.iova), 0xdead_0000),
        Err(SimError::BadAddress)
    );
    assert_eq!(
        d.create_qp_at(
            &QpInit { pd: Pd(99), ..init },
            Some(sq.iova),
            Some(rq.iova),
            qrec.iova
        ),
        Err(SimError::NoSuchObject)
    );
    assert!(d
        .create_qp_at(&init, Some(sq.iova), Some(rq.iova), qrec.iova)
        .is_ok());
    // Memory regions too.
    assert_eq!(
        d.reg_mr_range(pd, ring.iova + 4000, 200, Access::LOCAL_WRITE),
        Err(SimError::BadAddress)
    );
}
