//! Completion events: a completion EQ per MSI-X vector, CQs armed with
//! `req_notify`, events taken with `get_cq_event`, and a device that writes
//! events it should not (the driver drops and counts them).

use bareverbs::cmd::eq::event;
use bareverbs::cmd::layout::eqe;
use bareverbs::cmd::ops::IbMtu;
use bareverbs::cqe::{CqeSize, WcStatus, WorkCompletion};
use bareverbs::device::{DeviceConfig, DeviceError};
use bareverbs::sizing::QpType;
use bareverbs::sq::SendOp;
use bareverbs::verbs::*;
use bareverbs_sim::fw::{bring_up_on, FwConfig, SimUar};
use bareverbs_sim::Fabric;

type Qp<'a> = QueuePair<'a, SimUar, 64, 16>;
type Ctx =
    Context<bareverbs_sim::fw::SimBar, bareverbs_sim::fw::FakeClock, bareverbs_sim::fw::SharedDma>;

fn ctx(fabric: &Fabric) -> Ctx {
    let (d, _) = bring_up_on(fabric, FwConfig::default(), DeviceConfig::default()).unwrap();
    Context::new(d)
}

fn loopback(qp: &mut Qp) {
    qp.to_init(&InitAttr::new(1, Access::REMOTE_WRITE)).unwrap();
    let rtr = RtrAttr::new(IbMtu::Mtu1024, qp.qp_num(), 0, AddressHandle::loopback(1));
    qp.to_rtr(&rtr).unwrap();
    qp.to_rts(&RtsAttr::new(0)).unwrap();
}

fn write<'a>(qp: &mut Qp<'a>, mr: &'a MemoryRegion<'a>, wr_id: u64) {
    let t = mr.remote(2048, 64).unwrap();
    let op = SendOp::Write {
        remote_addr: t.addr,
        rkey: t.rkey,
    };
    qp.post_send(&[SendWr::new(wr_id, op, &[mr.sge(0, 64).unwrap()]).signaled()])
        .unwrap();
}

fn drain(cq: &CompletionQueue, qp: &mut Qp) -> Vec<u64> {
    let mut wc = [WorkCompletion::default(); 8];
    let n = cq.poll(qp, &mut wc).unwrap();
    wc[..n]
        .iter()
        .inspect(|w| assert_eq!(w.status, WcStatus::Success))
        .map(|w| w.wr_id)
        .collect()
}

/// An armed CQ gets one event for its next CQE, on its vector only; an
/// unarmed CQ gets none; re-arming gives the next.
#[test]
fn armed_cq_gets_one_event_per_arm_on_its_vector() {
    let fabric = Fabric::new(21);
    let c = ctx(&fabric);
    let pd = c.alloc_pd().unwrap();
    let buf = c.alloc_buffer(4096).unwrap();
    let mr = c
        .reg_mr(&pd, &buf, Access::LOCAL_WRITE | Access::REMOTE_WRITE)
        .unwrap();
    let cq = c.create_cq_on(32, 1).unwrap();
    let other = c.create_cq_on(32, 2).unwrap();
    assert_eq!((cq.comp_vector(), other.comp_vector()), (Some(1), Some(2)));
    let attr = QpInitAttr::new(QpType::Rc, &cq, &cq, QpCap::new(16, 16, 1, 1));
    let mut qp: Qp = c.create_qp(&pd, &attr).unwrap();
    loopback(&mut qp);

    // Not armed: the CQE arrives, no event.
    write(&mut qp, &mr, 1);
    assert_eq!(c.get_cq_event(1, 1000, &[&cq]).unwrap(), None);
    assert_eq!(drain(&cq, &mut qp), [1]);

    // Armed: one event, for this CQ, on vector 1 and not on vector 2.
    cq.req_notify(false).unwrap();
    other.req_notify(false).unwrap();
    write(&mut qp, &mr, 2);
    assert_eq!(c.get_cq_event(2, 1000, &[&other]).unwrap(), None);
    assert_eq!(c.get_cq_event(1, 1000, &[&other, &cq]).unwrap(), Some(1));
    assert_eq!(drain(&cq, &mut qp), [2]);
    // One arm, one event: the next CQE raises nothing until re-armed.
    write(&mut qp, &mr, 3);
    assert_eq!(c.get_cq_event(1, 1000, &[&cq]).unwrap(), None);
    assert_eq!(drain(&cq, &mut qp), [3]);
    cq.req_notify(false).unwrap();
    write(&mut qp, &mr, 4);
    assert_eq!(c.get_cq_event(1, 1000, &[&cq]).unwrap(), Some(0));
    assert_eq!(drain(&cq, &mut qp), [4]);
}

/// The completion EQ as the kernel creates it (`create_comp_eq`): its own
/// MSI-X vector in `intr`, no event subscriptions; vector 0 (control) and
/// a second EQ on a vector are refused before any command.
#[test]
fn completion_eqs_are_created_as_the_kernel_creates_them() {
    let fabric = Fabric::new(22);
    let (mut d, _) = bring_up_on(&fabric, FwConfig::default(), DeviceConfig::default()).unwrap();
    let eqn = d.create_comp_eq(3).unwrap();
    {
        let fw = d.bar().fw();
        let eq = &fw.objects().eqs[&eqn];
        assert_eq!((eq.intr, eq.mask), (3, 0));
        assert!(eq.armed, "armed after creation (mlx5_eq_enable)");
        assert_eq!(eq.log_size, 11, "1024 + 0x80 spare entries, rounded up");
    }
    assert_eq!(d.comp_eqn(3), Some(eqn));
    assert!(matches!(
        d.create_comp_eq(0),
        Err(DeviceError::Limit { .. })
    ));
    assert!(matches!(
        d.create_comp_eq(3),
        Err(DeviceError::BadPath { .. })
    ));
    assert!(matches!(
        d.create_cq_on(64, CqeSize::B64, Some(4)),
        Err(DeviceError::NoEventQueue { .. })
    ));
    let cq = d.create_cq_on(64, CqeSize::B64, Some(3)).unwrap();
    assert_eq!(d.bar().fw().objects().cqs[&cq.cqn()].eqn, eqn);
    let rep = d.teardown().0;
    assert!(rep.first_error.is_none(), "{rep:?}");
}

/// EQEs the device should not have written are dropped and counted: a
/// completion for a CQ the driver does not hold, for a CQ on another EQ,
/// and an event of another type; the real event after them is reported.
#[test]
fn bogus_completion_events_are_dropped_and_counted() {
    let fabric = Fabric::new(23);
    let (mut d, _) = bring_up_on(&fabric, FwConfig::default(), DeviceConfig::default()).unwrap();
    let e1 = d.create_comp_eq(1).unwrap();
    d.create_comp_eq(2).unwrap();
    let cq1 = d.create_cq_on(64, CqeSize::B64, Some(1)).unwrap();
    let cq2 = d.create_cq_on(64, CqeSize::B64, Some(2)).unwrap();
    let comp = |cqn: u32| {
        let mut e = [0u8; 64];
        e[eqe::EVENT_TYPE] = event::COMP;
        eqe::COMP_CQ_NUMBER.set(&mut e, 0, cqn);
        e
    };
    let mut port = [0u8; 64];
    port[eqe::EVENT_TYPE] = event::PORT_CHANGE;
    {
        let mut fw = d.bar().fw();
        for e in [comp(0xabcd), comp(cq2.cqn()), port, comp(cq1.cqn())] {
            assert!(fw.post_eqe_on(e1, e));
        }
    }
    let mut cqns = [0u32; 8];
    let got = d.poll_cq_events(1, &mut cqns).unwrap();
    assert_eq!((got.n, got.rejected, got.more), (1, 3, false));
    assert_eq!(cqns[0], cq1.cqn());
    assert_eq!(d.rejected_events(), 3);
    // Nothing left, and the EQ's consumer index was published.
    assert_eq!(d.poll_cq_events(1, &mut cqns).unwrap().n, 0);
    assert_eq!(d.bar().fw().objects().eqs[&e1].ci, 4);
    // A vector without an EQ is a typed error.
    assert!(matches!(
        d.poll_cq_events(5, &mut cqns),
        Err(DeviceError::NoEventQueue { .. })
    ));
}

/// A flooding device cannot keep one call going: a full slice stops it
/// with `more`, the rest comes on the next call.
#[test]
fn a_full_slice_stops_the_call_with_more() {
    let fabric = Fabric::new(24);
    let (mut d, _) = bring_up_on(&fabric, FwConfig::default(), DeviceConfig::default()).unwrap();
    let e = d.create_comp_eq(1).unwrap();
    let cq = d.create_cq_on(64, CqeSize::B64, Some(1)).unwrap();
    let mut entry = [0u8; 64];
    eqe::COMP_CQ_NUMBER.set(&mut entry, 0, cq.cqn());
    for _ in 0..5 {
        assert!(d.bar().fw().post_eqe_on(e, entry));
    }
    let mut cqns = [0u32; 3];
    let got = d.poll_cq_events(1, &mut cqns).unwrap();
    assert_eq!((got.n, got.more), (3, true));
    let got = d.poll_cq_events(1, &mut cqns).unwrap();
    assert_eq!((got.n, got.more), (2, false));
}

/// Arming a CQ that already holds unpolled CQEs raises its event at once
/// (the arm carries the consumer index, which hardware compares with its
/// producer index): a consumer that arms after its last poll cannot miss
/// a completion that slipped in between.
#[test]
fn arming_behind_unpolled_cqes_fires_at_once() {
    let fabric = Fabric::new(25);
    let c = ctx(&fabric);
    let pd = c.alloc_pd().unwrap();
    let buf = c.alloc_buffer(4096).unwrap();
    let mr = c
        .reg_mr(&pd, &buf, Access::LOCAL_WRITE | Access::REMOTE_WRITE)
        .unwrap();
    let cq = c.create_cq_on(32, 1).unwrap();
    let attr = QpInitAttr::new(QpType::Rc, &cq, &cq, QpCap::new(16, 16, 1, 1));
    let mut qp: Qp = c.create_qp(&pd, &attr).unwrap();
    loopback(&mut qp);
    write(&mut qp, &mr, 1);
    cq.req_notify(false).unwrap();
    assert_eq!(c.get_cq_event(1, 1000, &[&cq]).unwrap(), Some(0));
    assert_eq!(drain(&cq, &mut qp), [1]);
    // Polled empty, then armed: nothing until the next CQE.
    cq.req_notify(false).unwrap();
    assert_eq!(c.get_cq_event(1, 1000, &[&cq]).unwrap(), None);
}

/// An event for a CQ the call did not wait on is kept, not lost: the call
/// that waits on that CQ gets it. A CQ without a completion vector cannot
/// be armed (nothing could wait for its event).
#[test]
fn events_for_other_cqs_are_kept_for_their_waiter() {
    let fabric = Fabric::new(26);
    let c = ctx(&fabric);
    let pd = c.alloc_pd().unwrap();
    let buf = c.alloc_buffer(4096).unwrap();
    let mr = c
        .reg_mr(&pd, &buf, Access::LOCAL_WRITE | Access::REMOTE_WRITE)
        .unwrap();
    let cq = c.create_cq_on(32, 1).unwrap();
    let idle = c.create_cq_on(32, 1).unwrap();
    let attr = QpInitAttr::new(QpType::Rc, &cq, &cq, QpCap::new(16, 16, 1, 1));
    let mut qp: Qp = c.create_qp(&pd, &attr).unwrap();
    loopback(&mut qp);
    cq.req_notify(false).unwrap();
    idle.req_notify(false).unwrap();
    write(&mut qp, &mr, 1);
    assert_eq!(c.get_cq_event(1, 1000, &[&idle]).unwrap(), None);
    assert_eq!(c.get_cq_event(1, 1000, &[&idle, &cq]).unwrap(), Some(1));
    assert_eq!(drain(&cq, &mut qp), [1]);
    assert_eq!(
        c.get_cq_event(1, 1000, &[&cq]).unwrap(),
        None,
        "delivered once"
    );
    let plain = c.create_cq(32).unwrap();
    assert!(matches!(
        plain.req_notify(false),
        Err(Error::Unsupported { .. })
    ));
}
