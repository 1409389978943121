//! Every operation through the core's public API on the simulator: the
//! bytes that arrive and the completions, as a user writes them.
//! Expected values come from the bytes the test wrote and from the
//! [reference](bareverbs::reference) (opcodes §5.4/§5.7/§5.8, syndromes §5.6).

use bareverbs::cqe::{WcFlags, WcOpcode, WcStatus, WorkCompletion};
use bareverbs::mr::Access;
use bareverbs::qp::QpType;
use bareverbs::rq::RecvWr;
use bareverbs::sq::{SendFlags, SendOp, SendWr, Sge, UdDest};
use bareverbs::wqe::{AddressVector, Be16, Be32};
use bareverbs_sim::harness::{connect, ud_to_rts, ConnOpts, Endpoint, EpConfig};
use bareverbs_sim::{Device, Fabric};

type Ep = Endpoint<256, 256, 1024>;

fn ep(d: &Device, ty: QpType) -> Ep {
    let cfg = EpConfig {
        max_send_sge: 4,
        max_recv_sge: 4,
        ..EpConfig::new(ty)
    };
    Ep::new(d, &cfg).unwrap()
}

fn rc_pair(ty: QpType) -> (Fabric, Ep, Ep) {
    let f = Fabric::new(3);
    let (da, db) = (f.add_device(), f.add_device());
    let (mut a, mut b) = (ep(&da, ty), ep(&db, ty));
    connect(&mut a, &mut b, &ConnOpts::default()).unwrap();
    (f, a, b)
}

fn recv(e: &mut Ep, wr_id: u64, parts: &[(u64, u32)]) {
    let sgl: Vec<Sge> = parts.iter().map(|&(o, l)| e.sge(o, l)).collect();
    let sgl = &sgl[..];
    // SAFETY: the SGEs are inside the endpoint's registered buffer.
    unsafe { e.post_recv_raw(&[RecvWr { wr_id, sgl }]) }.unwrap();
}

fn post(e: &mut Ep, wr: SendWr<'_>) {
    let mrs = [*e.mr()];
    e.post_send(&[wr], &mrs).unwrap();
}

fn one(e: &mut Ep) -> WorkCompletion {
    let v = e.drain();
    assert_eq!(v.len(), 1, "{v:?}");
    v[0]
}

fn bytes(n: usize, seed: u8) -> Vec<u8> {
    (0..n).map(|i| (i as u8).wrapping_mul(13) ^ seed).collect()
}

#[test]
fn send_scatters_over_several_sges() {
    let (_f, mut a, mut b) = rc_pair(QpType::Rc);
    let msg = bytes(300, 1);
    a.write(0, &msg);
    // Three receive SGEs of 100, 50 and 200 bytes in different places.
    recv(&mut b, 77, &[(1000, 100), (3000, 50), (5000, 200)]);
    let ss = [a.sge(0, 120), a.sge(120, 180)];
    post(
        &mut a,
        SendWr::new(5, SendOp::Send, &ss).with_flags(SendFlags::SIGNALED),
    );
    let wc = one(&mut a);
    assert_eq!(
        (wc.wr_id, wc.status, wc.opcode),
        (5, WcStatus::Success, WcOpcode::Send)
    );
    let r = one(&mut b);
    assert_eq!(
        (r.wr_id, r.status, r.opcode),
        (77, WcStatus::Success, WcOpcode::Recv)
    );
    assert_eq!(r.byte_len, 300);
    assert_eq!(r.src_qp, a.qpn());
    assert_eq!(b.read(1000, 100), msg[..100]);
    assert_eq!(b.read(3000, 50), msg[100..150]);
    assert_eq!(b.read(5000, 150), msg[150..]);
    // Nothing beyond: the byte after each piece is still zero.
    assert_eq!(b.read(1100, 1), [0]);
    assert_eq!(b.read(3050, 1), [0]);
    assert_eq!(b.read(5150, 50), vec![0; 50]);
}

#[test]
fn send_imm_inline_and_invalidate() {
    let (_f, mut a, mut b) = rc_pair(QpType::Rc);
    let msg = bytes(40, 9);
    a.write(64, &msg);
    recv(&mut b, 1, &[(0, 64)]);
    let s = [a.sge(64, 40)];
    post(
        &mut a,
        SendWr::new(2, SendOp::SendImm { imm: 0xdead_beef }, &s)
            .with_flags(SendFlags::SIGNALED | SendFlags::INLINE),
    );
    assert_eq!(one(&mut a).status, WcStatus::Success);
    let r = one(&mut b);
    assert_eq!(r.byte_len, 40);
    assert!(r.wc_flags.contains(WcFlags::WITH_IMM));
    assert_eq!(u32::from_be(r.imm_data), 0xdead_beef);
    assert_eq!(b.read(0, 40), msg);
    // SEND with invalidate of b's own rkey: the region stops working.
    recv(&mut b, 3, &[(0, 64)]);
    let rkey = b.mr().rkey();
    post(
        &mut a,
        SendWr::new(
            4,
            SendOp::SendInv {
                invalidate_rkey: rkey,
            },
            &s,
        )
        .with_flags(SendFlags::SIGNALED),
    );
    assert_eq!(one(&mut a).status, WcStatus::Success);
    let r = one(&mut b);
    assert!(r.wc_flags.contains(WcFlags::WITH_INV));
    assert_eq!(r.invalidated_rkey, rkey);
    // A WRITE through the invalidated key is a remote access error.
    post(
        &mut a,
        SendWr::new(
            5,
            SendOp::Write {
                remote_addr: b.addr(0),
                rkey,
            },
            &s,
        )
        .with_flags(SendFlags::SIGNALED),
    );
    assert_eq!(one(&mut a).status, WcStatus::RemAccessErr);
}

#[test]
fn write_and_write_imm_move_exact_bytes() {
    let (_f, mut a, mut b) = rc_pair(QpType::Rc);
    let msg = bytes(5000, 3);
    a.write(0, &msg);
    let s = [a.sge(0, 2000), a.sge(2000, 3000)];
    post(
        &mut a,
        SendWr::new(
            1,
            SendOp::Write {
                remote_addr: b.addr(7),
                rkey: b.mr().rkey(),
            },
            &s,
        )
        .with_flags(SendFlags::SIGNALED),
    );
    let wc = one(&mut a);
    assert_eq!(
        (wc.status, wc.opcode),
        (WcStatus::Success, WcOpcode::RdmaWrite)
    );
    assert_eq!(b.read(0, 7), vec![0; 7]);
    assert_eq!(b.read(7, 5000), msg);
    assert_eq!(b.read(5007, 16), vec![0; 16]);
    // WRITE with immediate consumes a receive and reports the length.
    recv(&mut b, 9, &[(20000, 8)]);
    let s = [a.sge(0, 100)];
    post(
        &mut a,
        SendWr::new(
            2,
            SendOp::WriteImm {
                remote_addr: b.addr(10000),
                rkey: b.mr().rkey(),
                imm: 0x0102_0304,
            },
            &s,
        )
        .with_flags(SendFlags::SIGNALED),
    );
    assert!(one(&mut a).wc_flags.contains(WcFlags::WITH_IMM));
    let r = one(&mut b);
    assert_eq!(
        (r.wr_id, r.opcode, r.byte_len),
        (9, WcOpcode::RecvRdmaWithImm, 100)
    );
    assert_eq!(u32::from_be(r.imm_data), 0x0102_0304);
    assert_eq!(b.read(10000, 100), msg[..100]);
    assert_eq!(b.read(20000, 8), vec![0; 8]); // the receive buffer is untouched
}

#[test]
fn read_and_atomics() {
    let (_f, mut a, b) = rc_pair(QpType::Rc);
    let msg = bytes(777, 5);
    b.write(100, &msg);
    let s = [a.sge(0, 300), a.sge(1000, 477)];
    post(
        &mut a,
        SendWr::new(
            1,
            SendOp::Read {
                remote_addr: b.addr(100),
                rkey: b.mr().rkey(),
            },
            &s,
        )
        .with_flags(SendFlags::SIGNALED),
    );
    let wc = one(&mut a);
    assert_eq!(
        (wc.status, wc.opcode, wc.byte_len),
        (WcStatus::Success, WcOpcode::RdmaRead, 777)
    );
    assert_eq!(a.read(0, 300), msg[..300]);
    assert_eq!(a.read(1000, 477), msg[300..]);
    assert_eq!(a.read(300, 1), [0]);
    // Atomics: 64-bit big-endian values in memory.
    b.write(4096, &40u64.to_be_bytes());
    let r = [a.sge(2048, 8)];
    post(
        &mut a,
        SendWr::new(
            2,
            SendOp::FetchAdd {
                remote_addr: b.addr(4096),
                rkey: b.mr().rkey(),
                add: 2,
            },
            &r,
        )
        .with_flags(SendFlags::SIGNALED),
    );
    let wc = one(&mut a);
    assert_eq!(
        (wc.status, wc.opcode, wc.byte_len),
        (WcStatus::Success, WcOpcode::FetchAdd, 8)
    );
    assert_eq!(a.read(2048, 8), 40u64.to_be_bytes());
    assert_eq!(b.read(4096, 8), 42u64.to_be_bytes());
    post(
        &mut a,
        SendWr::new(
            3,
            SendOp::CompSwap {
                remote_addr: b.addr(4096),
                rkey: b.mr().rkey(),
                compare: 42,
                swap: 7,
            },
            &r,
        )
        .with_flags(SendFlags::SIGNALED),
    );
    assert_eq!(one(&mut a).opcode, WcOpcode::CompSwap);
    assert_eq!(b.read(4096, 8), 7u64.to_be_bytes());
    assert_eq!(a.read(2048, 8), 42u64.to_be_bytes());
    // A failed compare leaves memory alone and returns the value.
    post(
        &mut a,
        SendWr::new(
            4,
            SendOp::CompSwap {
                remote_addr: b.addr(4096),
                rkey: b.mr().rkey(),
                compare: 1,
                swap: 9,
            },
            &r,
        )
        .with_flags(SendFlags::SIGNALED),
    );
    assert_eq!(one(&mut a).status, WcStatus::Success);
    assert_eq!(b.read(4096, 8), 7u64.to_be_bytes());
    assert_eq!(a.read(2048, 8), 7u64.to_be_bytes());
}

#[test]
fn misaligned_atomic_is_remote_invalid_request() {
    let (_f, mut a, b) = rc_pair(QpType::Rc);
    let r = [a.sge(0, 8)];
    post(
        &mut a,
        SendWr::new(
            1,
            SendOp::FetchAdd {
                remote_addr: b.addr(4),
                rkey: b.mr().rkey(),
                add: 1,
            },
            &r,
        )
        .with_flags(SendFlags::SIGNALED),
    );
    let wc = one(&mut a);
    assert_eq!(wc.status, WcStatus::RemInvReqErr);
    assert_eq!(b.read(0, 16), vec![0; 16]);
}

#[test]
fn uc_write_and_send() {
    let (_f, mut a, mut b) = rc_pair(QpType::Uc);
    let msg = bytes(64, 8);
    a.write(0, &msg);
    let s = [a.sge(0, 64)];
    post(
        &mut a,
        SendWr::new(
            1,
            SendOp::Write {
                remote_addr: b.addr(128),
                rkey: b.mr().rkey(),
            },
            &s,
        )
        .with_flags(SendFlags::SIGNALED),
    );
    assert_eq!(one(&mut a).status, WcStatus::Success);
    assert_eq!(b.read(128, 64), msg);
    recv(&mut b, 5, &[(512, 64)]);
    post(
        &mut a,
        SendWr::new(2, SendOp::Send, &s).with_flags(SendFlags::SIGNALED),
    );
    assert_eq!(one(&mut a).status, WcStatus::Success);
    let r = one(&mut b);
    assert_eq!((r.wr_id, r.byte_len), (5, 64));
    assert_eq!(b.read(512, 64), msg);
}

fn av(dlid: u16, grh: bool) -> AddressVector {
    AddressVector {
        key: [0; 8],
        dqp_dct: Be32::new(0),
        stat_rate_sl: 0,
        fl_mlid: 0,
        rlid: Be16::new(dlid),
        reserved0: [0; 4],
        rmac: [0; 6],
        tclass: 0,
        hop_limit: 0,
        grh_gid_fl: Be32::new(if grh { 1 << 30 } else { 0 }),
        rgid: [0; 16],
    }
}

#[test]
fn ud_send_with_qkey_and_grh() {
    let f = Fabric::new(1);
    let (da, db) = (f.add_device(), f.add_device());
    let (mut a, mut b) = (ep(&da, QpType::Ud), ep(&db, QpType::Ud));
    ud_to_rts(&mut a, 0x1111).unwrap();
    ud_to_rts(&mut b, 0x2222).unwrap();
    let msg = bytes(100, 4);
    a.write(0, &msg);
    // The receive buffer needs 40 bytes for the GRH in front (IBA UD).
    recv(&mut b, 8, &[(0, 140)]);
    recv(&mut b, 9, &[(1000, 140)]);
    let av = av(db.lid(), true);
    let s = [a.sge(0, 100)];
    // Wrong Q_Key: silently dropped at the receiver, success at the sender.
    let bad = SendWr::new(1, SendOp::Send, &s)
        .with_flags(SendFlags::SIGNALED)
        .with_ud(UdDest {
            av: &av,
            remote_qpn: b.qpn(),
            remote_qkey: 0x9999,
        });
    post(&mut a, bad);
    assert_eq!(one(&mut a).status, WcStatus::Success);
    assert!(b.drain().is_empty());
    let good = SendWr::new(2, SendOp::Send, &s)
        .with_flags(SendFlags::SIGNALED)
        .with_ud(UdDest {
            av: &av,
            remote_qpn: b.qpn(),
            remote_qkey: 0x2222,
        });
    post(&mut a, good);
    assert_eq!(one(&mut a).status, WcStatus::Success);
    let r = one(&mut b);
    assert_eq!((r.wr_id, r.byte_len, r.src_qp), (8, 140, a.qpn()));
    assert!(r.wc_flags.contains(WcFlags::GRH));
    assert_eq!(b.read(40, 100), msg);
}

#[test]
fn unsignaled_success_gives_no_cqe_and_is_retired_by_a_later_one() {
    let (_f, mut a, b) = rc_pair(QpType::Rc);
    let s = [a.sge(0, 16)];
    for i in 0..5 {
        post(
            &mut a,
            SendWr::new(
                i,
                SendOp::Write {
                    remote_addr: b.addr(0),
                    rkey: b.mr().rkey(),
                },
                &s,
            ),
        );
    }
    assert!(a.drain().is_empty());
    assert_eq!(a.qp().sq.outstanding(), 5);
    post(
        &mut a,
        SendWr::new(
            9,
            SendOp::Write {
                remote_addr: b.addr(0),
                rkey: b.mr().rkey(),
            },
            &s,
        )
        .with_flags(SendFlags::SIGNALED),
    );
    assert_eq!(one(&mut a).wr_id, 9);
    assert_eq!(a.qp().sq.outstanding(), 0);
}

#[test]
fn srq_receives_and_limit_event() {
    use bareverbs::queue_pair::{QpSet, QueuePair};
    use bareverbs::rq::{SharedReceiveQueue, SrqConfig};
    use bareverbs_sim::{AsyncEvent, QpInit};
    let f = Fabric::new(2);
    let (da, db) = (f.add_device(), f.add_device());
    let mut a = ep(&da, QpType::Rc);
    // b: a QP whose receives come from an SRQ of 8 slots, limit 2.
    let pd = db.alloc_pd();
    let cq = db.create_cq(64, 1).unwrap();
    let srqh = db.create_srq(pd, 8, 5, 2).unwrap();
    let qh = db
        .create_qp(&QpInit {
            qp_type: QpType::Rc,
            pd,
            send_cq: cq.cqn,
            recv_cq: cq.cqn,
            srq: Some(srqh.srqn),
            sq_wqebbs: 64,
            rq_wqes: 0,
            rq_wqe_shift: 4,
            uidx: 0,
        })
        .unwrap();
    db.set_uidx(qh.qpn, qh.qpn);
    // SAFETY: ring and record belong to this SRQ alone.
    let mut srq = unsafe {
        SharedReceiveQueue::new(
            srqh.ring,
            srqh.dbrec,
            SrqConfig {
                wqe_shift: 5,
                max_gs: 1,
                nwqes: 8,
                wait_queue: false,
            },
            [bareverbs::rq::SrqSlot::default(); 8],
        )
    }
    .unwrap();
    let buf = db.alloc(4096).unwrap();
    let mr = db.reg_mr(pd, buf, Access::LOCAL_WRITE).unwrap();
    for i in 0..4u64 {
        let s = [mr.sge(i * 256, 256).unwrap()];
        // SAFETY: inside the registered buffer.
        unsafe {
            srq.post_recv_raw(&[RecvWr {
                wr_id: 100 + i,
                sgl: &s,
            }])
        }
        .unwrap();
    }
    // Connect a <-> b by hand (b has no Endpoint).
    use bareverbs::qp::{QpAttrMask as M, QpState};
    use bareverbs_sim::QpAttr;
    let mut at = QpAttr {
        qp_state: QpState::Init,
        qp_access_flags: Access::empty(),
        ..QpAttr::default()
    };
    db.modify_qp(
        qh.qpn,
        &at,
        M::STATE | M::PKEY_INDEX | M::PORT | M::ACCESS_FLAGS,
    )
    .unwrap();
    at.qp_state = QpState::Rtr;
    at.dlid = da.lid();
    at.dest_qp_num = a.qpn();
    at.rq_psn = 0x1234;
    db.modify_qp(
        qh.qpn,
        &at,
        M::STATE
            | M::AV
            | M::PATH_MTU
            | M::DEST_QPN
            | M::RQ_PSN
            | M::MAX_DEST_RD_ATOMIC
            | M::MIN_RNR_TIMER,
    )
    .unwrap();
    bareverbs_sim::harness::to_rts(&mut a, db.lid(), qh.qpn, &ConnOpts::default()).unwrap();
    let msg = bytes(200, 6);
    a.write(0, &msg);
    let s = [a.sge(0, 200)];
    for i in 0..3 {
        post(
            &mut a,
            SendWr::new(i, SendOp::Send, &s).with_flags(SendFlags::SIGNALED),
        );
    }
    assert_eq!(a.drain().len(), 3);
    // SAFETY: the CQ memory comes from the device.
    let mut bcq = unsafe {
        bareverbs::cq::CompletionQueue::<64>::new(
            cq.ring,
            cq.dbrec,
            cq.cqn,
            bareverbs::cqe::CqeSize::B64,
            1,
        )
    }
    .unwrap();
    // SAFETY: sq ring/record of the QP, used only through this queue.
    let sq = unsafe {
        bareverbs::sq::SendQueue::new(
            qh.sq_ring.unwrap(),
            qh.dbrec,
            qh.uar,
            bareverbs::sq::SqConfig::new(QpType::Rc, 16, 1).qpn(qh.qpn),
            [bareverbs::sq::SqSlot::default(); 64],
        )
    }
    .unwrap();
    let mut qps = [QueuePair::<_, _, [bareverbs::rq::RqSlot; 1]> {
        qpn: qh.qpn,
        uidx: qh.qpn,
        cqe_version: 1,
        sq,
        rq: None,
    }];
    let mut set = QpSet {
        qps: &mut qps,
        srq: Some(&mut srq),
    };
    let mut wc = [WorkCompletion::default(); 8];
    let n = bcq.poll(&mut set, &mut wc).unwrap();
    assert_eq!(n, 3);
    let ids: Vec<u64> = wc[..3].iter().map(|w| w.wr_id).collect();
    assert_eq!(ids, [100, 101, 102]);
    for (i, w) in wc[..3].iter().enumerate() {
        assert_eq!((w.status, w.byte_len), (WcStatus::Success, 200));
        // SAFETY: inside the live buffer.
        let got =
            unsafe { std::slice::from_raw_parts(buf.cpu.as_ptr().add(i * 256), 200).to_vec() };
        assert_eq!(got, msg);
    }
    // 4 posted, 3 consumed: 1 left < limit 2 → one SRQ limit event.
    assert!(db
        .take_events()
        .contains(&AsyncEvent::SrqLimit { srqn: srqh.srqn }));
}
