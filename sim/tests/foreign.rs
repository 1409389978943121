//! Objects of one [`Context`] handed to another are refused (issue 29).
//!
//! Two functions on one fabric number their objects alike (the same PD,
//! CQ and QP numbers, the same user index 1, keys and IOVAs from the same
//! ranges), so a foreign object would not fail on the device: its numbers
//! name this context's objects. Each creation that takes an object checks
//! it belongs to the context ([`Error::ForeignObject`], nothing created).
//! Each test makes the same objects on both contexts first, so the
//! foreign object's numbers are valid on the wrong device too (the case
//! the firmware cannot catch: the old code accepted every one of them).
//! Expected values come from the operations performed and the firmware
//! model's object table, never from the driver's output.

use bareverbs::device::DeviceConfig;
use bareverbs::sizing::QpType;
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
