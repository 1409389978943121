//! Objects of one [`Context`] handed to another are refused (issue 29).
//!
//! Two functions on one fabric number their objects alike (the same PD,
//! CQ and QP numbers, the same user index 1, keys and IOVAs from the same
//! ranges), so a foreign object would not fail on the device: its numbers
//! name this context's objects. Each creation that takes an object checks
//! it belongs to the context ([`Error::ForeignObject`], nothing created),
//! and each post checks every SGE is in the queue's protection domain
//! (`ForeignSge`, the WR writes nothing, the WRs before it are posted).
//! Each test makes the same objects on both contexts first, so the
//! foreign object's numbers are valid on the wrong device too (the case
//! the firmware cannot catch: the old code accepted every one of them).
//! Expected values come from the operations performed and the firmware
//! model's object table, never from the driver's output.

use bareverbs::cmd::ops::IbMtu;
use bareverbs::cqe::{WcStatus, WorkCompletion};
use bareverbs::device::DeviceConfig;
use bareverbs::rq::RecvErrorKind;
use bareverbs::sizing::QpType;
use bareverbs::sq::{PostErrorKind, SendOp};
use bareverbs::verbs::*;
use bareverbs_sim::fw::{bring_up_on, FakeClock, FwConfig, SharedDma, SimBar, SimUar};
use bareverbs_sim::Fabric;

type Qp<'a> = QueuePair<'a, SimUar, 64, 16>;
type Ctx = Context<SimBar, FakeClock, SharedDma>;

/// Two contexts over two functions of one fabric, and their firmware.
fn two(seed: u64) -> (Ctx, Ctx, SimBar, SimBar) {
    let fabric = Fabric::new(seed);
    let (da, _) = bring_up_on(&fabric, FwConfig::default(), DeviceConfig::default()).unwrap();
    let (db, _) = bring_up_on(&fabric, FwConfig::default(), DeviceConfig::default()).unwrap();
    let (fa, fb) = (da.bar().clone(), db.bar().clone());
    (Context::new(da), Context::new(db), fa, fb)
}

/// (PDs, mkeys, CQs, QPs, SRQs) in a function's firmware.
fn objects(bar: &SimBar) -> (usize, usize, usize, usize, usize) {
    let fw = bar.fw();
    let o = fw.objects();
    (
        o.pds.len(),
        o.mkeys.len(),
        o.cqs.len(),
        o.qps.len(),
        o.srqs.len(),
    )
}

fn cap() -> QpCap {
    QpCap::new(16, 16, 2, 2)
}

fn rc<'a>(cq: &'a CompletionQueue<'a>) -> QpInitAttr<'a> {
    QpInitAttr::new(QpType::Rc, cq, cq, cap())
}

/// Loopback RC onto itself.
fn up(qp: &mut Qp) {
    let rights = Access::REMOTE_WRITE | Access::REMOTE_READ;
    qp.to_init(&InitAttr::new(1, rights)).unwrap();
    let rtr = RtrAttr::new(IbMtu::Mtu1024, qp.qp_num(), 0, AddressHandle::loopback(1));
    qp.to_rtr(&rtr).unwrap();
    qp.to_rts(&RtsAttr::new(0)).unwrap();
}

fn foreign(what: &'static str) -> Error {
    Error::ForeignObject { what }
}

/// `reg_mr` over another context's buffer would have this device write
/// its own memory at that buffer's IOVA (and, once the buffer is freed by
/// its allocator, memory no one owns): refused, no key made.
#[test]
fn reg_mr_refuses_a_buffer_of_another_context() {
    let (a, b, fw_a, _) = two(29);
    let pa = a.alloc_pd().unwrap();
    let ba = a.alloc_buffer(4096).unwrap();
    let bb = b.alloc_buffer(4096).unwrap();
    assert_eq!(ba.iova(), bb.iova(), "twins: the same IOVA on both");
    let before = objects(&fw_a);
    let e = a.reg_mr(&pa, &bb, Access::LOCAL_WRITE).unwrap_err();
    assert_eq!(e, foreign("buffer"));
    assert_eq!(e.to_string(), "the buffer belongs to another Context");
    assert_eq!(objects(&fw_a), before, "no CREATE_MKEY on A");
    assert_eq!(bb.keys(), 0);
}

#[test]
fn reg_mr_refuses_a_pd_of_another_context() {
    let (a, b, fw_a, _) = two(30);
    let (pa, pb) = (a.alloc_pd().unwrap(), b.alloc_pd().unwrap());
    assert_eq!(pa.pdn(), pb.pdn(), "twins: the same PD number on both");
    let ba = a.alloc_buffer(4096).unwrap();
    let before = objects(&fw_a);
    let e = a.reg_mr(&pb, &ba, Access::LOCAL_WRITE).unwrap_err();
    assert_eq!(e, foreign("PD"));
    assert_eq!(objects(&fw_a), before, "no CREATE_MKEY on A");
    assert_eq!(ba.keys(), 0);
}

/// The user-index collision: both functions number user indices from 1,
/// so a QP of B reporting to A's CQ would have B's CQEs retire the WRs of
/// A's QP in flight (and A's CQEs B's). It is refused at creation.
#[test]
fn create_qp_refuses_a_send_cq_of_another_context() {
    let (a, b, fw_a, fw_b) = two(31);
    let pa = a.alloc_pd().unwrap();
    let ca = a.create_cq(64).unwrap();
    let _qa: Qp = a.create_qp(&pa, &rc(&ca)).unwrap();
    let (pb, cb) = (b.alloc_pd().unwrap(), b.create_cq(64).unwrap());
    let before = (objects(&fw_a), objects(&fw_b));
    let e = b
        .create_qp::<64, 16>(&pb, &QpInitAttr::new(QpType::Rc, &ca, &cb, cap()))
        .unwrap_err();
    assert_eq!(e, foreign("send CQ"));
    assert_eq!(e.to_string(), "the send CQ belongs to another Context");
    // Both sides on A's CQ: the send CQ is named first.
    let e = b.create_qp::<64, 16>(&pb, &rc(&ca)).unwrap_err();
    assert_eq!(e, foreign("send CQ"));
    assert_eq!((objects(&fw_a), objects(&fw_b)), before, "no CREATE_QP");
    // B's own CQ works, and B's QP takes the user index A's has.
    let _qb: Qp = b.create_qp(&pb, &rc(&cb)).unwrap();
}

#[test]
fn create_qp_refuses_a_receive_cq_of_another_context() {
    let (a, b, _, _) = two(32);
    let (_pa, ca) = (a.alloc_pd().unwrap(), a.create_cq(64).unwrap());
    let (pb, cb) = (b.alloc_pd().unwrap(), b.create_cq(64).unwrap());
    assert_eq!(ca.cqn(), cb.cqn(), "twins: the same CQ number on both");
    let e = b
        .create_qp::<64, 16>(&pb, &QpInitAttr::new(QpType::Rc, &cb, &ca, cap()))
        .unwrap_err();
    assert_eq!(e, foreign("receive CQ"));
}

#[test]
fn create_qp_refuses_a_pd_of_another_context() {
    let (a, b, fw_a, _) = two(33);
    let (pa, ca) = (a.alloc_pd().unwrap(), a.create_cq(64).unwrap());
    let pb = b.alloc_pd().unwrap();
    assert_eq!(pa.pdn(), pb.pdn(), "twins: the same PD number on both");
    let before = objects(&fw_a);
    let e = a.create_qp::<64, 16>(&pb, &rc(&ca)).unwrap_err();
    assert_eq!(e, foreign("PD"));
    assert_eq!(objects(&fw_a), before, "no CREATE_QP on A");
}

#[test]
fn create_qp_refuses_an_srq_of_another_context() {
    let (a, b, _, fw_b) = two(34);
    let (pa, _ca) = (a.alloc_pd().unwrap(), a.create_cq(64).unwrap());
    let srq_a = a.create_srq::<64>(&pa, 16, 1).unwrap();
    let (pb, cb) = (b.alloc_pd().unwrap(), b.create_cq(64).unwrap());
    let srq_b = b.create_srq::<64>(&pb, 16, 1).unwrap();
    assert_eq!(srq_a.srqn(), srq_b.srqn(), "twins: the same SRQ number");
    let before = objects(&fw_b);
    let e = b
        .create_qp::<64, 16>(&pb, &rc(&cb).with_srq(&srq_a))
        .unwrap_err();
    assert_eq!(e, foreign("SRQ"));
    assert_eq!(objects(&fw_b), before, "no CREATE_QP on B");
}

#[test]
fn create_srq_refuses_a_pd_of_another_context() {
    let (a, b, fw_a, _) = two(35);
    let (pa, pb) = (a.alloc_pd().unwrap(), b.alloc_pd().unwrap());
    assert_eq!(pa.pdn(), pb.pdn(), "twins: the same PD number on both");
    let before = objects(&fw_a);
    let e = a.create_srq::<64>(&pb, 16, 1).unwrap_err();
    assert_eq!(e, foreign("PD"));
    assert_eq!(objects(&fw_a), before, "no CREATE_SRQ on A");
}

/// An SGE of B's region posted on A's QP: B's key and IOVA mean A's
/// memory (or nothing) to A's device. Refused before anything of the WR
/// is written; the WR before it is posted and completes.
#[test]
fn post_send_refuses_an_sge_of_another_context() {
    let (a, b, _, _) = two(36);
    let pa = a.alloc_pd().unwrap();
    let ba = a.alloc_buffer(4096).unwrap();
    let rights = Access::LOCAL_WRITE | Access::REMOTE_WRITE;
    let ma = a.reg_mr(&pa, &ba, rights).unwrap();
    let pb = b.alloc_pd().unwrap();
    let bb = b.alloc_buffer(4096).unwrap();
    let mb = b.reg_mr(&pb, &bb, rights).unwrap();
    let ca = a.create_cq(64).unwrap();
    let mut qa: Qp = a.create_qp(&pa, &rc(&ca)).unwrap();
    up(&mut qa);
    let t = ma.remote(2048, 64).unwrap();
    let write = SendOp::Write {
        remote_addr: t.addr,
        rkey: t.rkey,
    };
    let good = [ma.sge(0, 64).unwrap()];
    let mixed = [ma.sge(0, 32).unwrap(), mb.sge(0, 32).unwrap()];
    let e = qa
        .post_send(&[
            SendWr::new(1, write, &good).signaled(),
            SendWr::new(2, write, &mixed).signaled(),
        ])
        .unwrap_err();
    assert_eq!((e.index, e.kind), (1, PostErrorKind::ForeignSge { sge: 1 }));
    assert_eq!(qa.send_outstanding(), 1, "only the first WR was posted");
    let mut wc = [WorkCompletion::default(); 4];
    assert_eq!(ca.poll(&mut qa, &mut wc).unwrap(), 1);
    assert_eq!((wc[0].wr_id, wc[0].status), (1, WcStatus::Success));
}

#[test]
fn send_batch_push_refuses_an_sge_of_another_context() {
    let (a, b, _, _) = two(37);
    let pa = a.alloc_pd().unwrap();
    let ba = a.alloc_buffer(4096).unwrap();
    let rights = Access::LOCAL_WRITE | Access::REMOTE_WRITE;
    let ma = a.reg_mr(&pa, &ba, rights).unwrap();
    let pb = b.alloc_pd().unwrap();
    let bb = b.alloc_buffer(4096).unwrap();
    let mb = b.reg_mr(&pb, &bb, rights).unwrap();
    let ca = a.create_cq(64).unwrap();
    let mut qa: Qp = a.create_qp(&pa, &rc(&ca)).unwrap();
    up(&mut qa);
    let t = ma.remote(2048, 64).unwrap();
    let write = SendOp::Write {
        remote_addr: t.addr,
        rkey: t.rkey,
    };
    let mut batch = qa.send_batch();
    batch
        .push(&SendWr::new(1, write, &[ma.sge(0, 64).unwrap()]).signaled())
        .unwrap();
    let e = batch.push(&SendWr::new(2, write, &[mb.sge(0, 64).unwrap()]).signaled());
    assert_eq!(e, Err(PostErrorKind::ForeignSge { sge: 0 }));
    assert_eq!(batch.built(), 1, "the refused push wrote nothing");
    batch.ring();
    let mut wc = [WorkCompletion::default(); 4];
    assert_eq!(ca.poll(&mut qa, &mut wc).unwrap(), 1);
    assert_eq!((wc[0].wr_id, wc[0].status), (1, WcStatus::Success));
}

#[test]
fn post_recv_refuses_an_sge_of_another_context() {
    let (a, b, _, _) = two(38);
    let pa = a.alloc_pd().unwrap();
    let ba = a.alloc_buffer(4096).unwrap();
    let ma = a.reg_mr(&pa, &ba, Access::LOCAL_WRITE).unwrap();
    let pb = b.alloc_pd().unwrap();
    let bb = b.alloc_buffer(4096).unwrap();
    let mb = b.reg_mr(&pb, &bb, Access::LOCAL_WRITE).unwrap();
    let ca = a.create_cq(64).unwrap();
    let mut qa: Qp = a.create_qp(&pa, &rc(&ca)).unwrap();
    qa.to_init(&InitAttr::new(1, Access::REMOTE_WRITE)).unwrap();
    let e = qa
        .post_recv(&[
            RecvWr::new(1, &[ma.sge(0, 64).unwrap()]),
            RecvWr::new(2, &[mb.sge(0, 64).unwrap()]),
        ])
        .unwrap_err();
    assert_eq!((e.index, e.kind), (1, RecvErrorKind::ForeignSge { sge: 0 }));
    assert_eq!(
        e.kind.to_string(),
        "SGE 0 names a region outside the queue's protection domain \
         (another PD, or another Context's)"
    );
}

#[test]
fn srq_post_recv_refuses_an_sge_of_another_context() {
    let (a, b, _, _) = two(39);
    let pa = a.alloc_pd().unwrap();
    let ba = a.alloc_buffer(4096).unwrap();
    let ma = a.reg_mr(&pa, &ba, Access::LOCAL_WRITE).unwrap();
    let pb = b.alloc_pd().unwrap();
    let bb = b.alloc_buffer(4096).unwrap();
    let mb = b.reg_mr(&pb, &bb, Access::LOCAL_WRITE).unwrap();
    let srq = a.create_srq::<64>(&pa, 16, 2).unwrap();
    let two_sges = [ma.sge(0, 64).unwrap(), mb.sge(0, 64).unwrap()];
    let e = srq
        .post_recv(&[
            RecvWr::new(1, &[ma.sge(64, 64).unwrap()]),
            RecvWr::new(2, &two_sges),
        ])
        .unwrap_err();
    assert_eq!((e.index, e.kind), (1, RecvErrorKind::ForeignSge { sge: 1 }));
}

/// The rule is the queue's protection domain: a region of another PD of
/// the same context is refused at post too (the device would fail the WR
/// with a local protection error and move the QP to ERR).
#[test]
fn posts_refuse_an_sge_of_another_pd_of_the_same_context() {
    let (a, _b, _, _) = two(40);
    let (p1, p2) = (a.alloc_pd().unwrap(), a.alloc_pd().unwrap());
    let buf = a.alloc_buffer(4096).unwrap();
    let rights = Access::LOCAL_WRITE | Access::REMOTE_WRITE;
    let m1 = a.reg_mr(&p1, &buf, rights).unwrap();
    let m2 = a.reg_mr(&p2, &buf, rights).unwrap();
    let cq = a.create_cq(64).unwrap();
    let mut qp: Qp = a.create_qp(&p1, &rc(&cq)).unwrap();
    up(&mut qp);
    let t = m1.remote(2048, 64).unwrap();
    let write = SendOp::Write {
        remote_addr: t.addr,
        rkey: t.rkey,
    };
    let e = qp
        .post_send(&[SendWr::new(1, write, &[m2.sge(0, 64).unwrap()])])
        .unwrap_err();
    assert_eq!((e.index, e.kind), (0, PostErrorKind::ForeignSge { sge: 0 }));
    assert_eq!(qp.send_outstanding(), 0);
    let e = qp
        .post_recv(&[RecvWr::new(2, &[m2.sge(0, 64).unwrap()])])
        .unwrap_err();
    assert_eq!(e.kind, RecvErrorKind::ForeignSge { sge: 0 });
    // The QP's own PD is accepted.
    qp.post_send(&[SendWr::new(3, write, &[m1.sge(0, 64).unwrap()]).signaled()])
        .unwrap();
    let mut wc = [WorkCompletion::default(); 4];
    assert_eq!(cq.poll(&mut qp, &mut wc).unwrap(), 1);
    assert_eq!((wc[0].wr_id, wc[0].status), (3, WcStatus::Success));
}

/// `get_cq_event` matches events by CQ number, which both functions hand
/// out alike: a CQ of another context in its slice would take (and
/// consume) this context's event. Refused.
#[test]
fn get_cq_event_refuses_a_cq_of_another_context() {
    let (a, b, _, _) = two(41);
    let _ca = a.create_cq_on(16, 1).unwrap();
    let cb = b.create_cq_on(16, 1).unwrap();
    let e = a.get_cq_event(1, 0, &[&cb]).unwrap_err();
    assert_eq!(e, foreign("CQ"));
}
