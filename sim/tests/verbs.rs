//! The safe verbs layer on the simulated ConnectX: objects are created and
//! destroyed by firmware command in the order their borrows impose, a
//! leaked object never lets memory the device may reach be freed, and the
//! safe posting calls refuse what would let the device write where it must
//! not. Expected values come from the operations performed, the firmware
//! model's own object table and allocator, and the verbs rules — never from
//! the driver's output.

use bareverbs::cmd::ops::{HwQpState, IbMtu};
use bareverbs::cqe::{Completion, WcOpcode, WcStatus, WorkCompletion};
use bareverbs::device::DeviceConfig;
use bareverbs::rq::RecvErrorKind;
use bareverbs::sizing::QpType;
use bareverbs::sq::{PostErrorKind, SendOp};
use bareverbs::verbs::*;
use bareverbs_sim::dma::HeapDma;
use bareverbs_sim::fw::{bring_up_on, FwConfig, SimBar, SimDevice, SimUar};
use bareverbs_sim::{Device as SimNic, Fabric};
use std::sync::Arc;

type Qp<'a> = QueuePair<'a, SimUar, 64, 16>;

struct Dev {
    dev: SimDevice,
    nic: SimNic,
    bar: SimBar,
    dma: Arc<HeapDma>,
}

fn dev(fabric: &Fabric) -> Dev {
    let (dev, nic) = bring_up_on(fabric, FwConfig::default(), DeviceConfig::default()).unwrap();
    let bar = dev.bar().clone();
    let dma = dev.allocator().0.clone();
    Dev { dev, nic, bar, dma }
}

fn counts(bar: &SimBar) -> (usize, usize, usize, usize) {
    let fw = bar.fw();
    let o = fw.objects();
    (o.pds.len(), o.mkeys.len(), o.cqs.len(), o.qps.len())
}

fn rc_attr<'a>(cq: &'a CompletionQueue<'a>) -> QpInitAttr<'a> {
    QpInitAttr::new(QpType::Rc, cq, cq, QpCap::new(16, 16, 1, 1))
}

/// Force-loopback RC onto itself (the QP's own number and port).
fn up(qp: &mut Qp, lid: u16) {
    let me = qp.qp_num();
    up_to(qp, me, lid);
}

/// Force-loopback RC toward QP `peer` on the same port.
fn up_to(qp: &mut Qp, peer: u32, lid: u16) {
    let all = Access::REMOTE_WRITE | Access::REMOTE_READ | Access::REMOTE_ATOMIC;
    qp.to_init(&InitAttr::new(1, all)).unwrap();
    let ah = AddressHandle {
        force_loopback: true,
        ..AddressHandle::ib(1, lid)
    };
    let mut rtr = RtrAttr::new(IbMtu::Mtu1024, peer, 0, ah);
    rtr.max_dest_rd_atomic = 4;
    qp.to_rtr(&rtr).unwrap();
    let mut rts = RtsAttr::new(0);
    rts.max_rd_atomic = 4;
    qp.to_rts(&rts).unwrap();
}

#[test]
fn objects_die_in_borrow_order_and_context_tears_down() {
    let fabric = Fabric::new(1);
    let d = dev(&fabric);
    let before = d.dma.allocated_bytes();
    let (bar, dma) = (d.bar.clone(), d.dma.clone());
    let ctx = Context::new(d.dev);
    {
        let pd = ctx.alloc_pd().unwrap();
        let buf = ctx.alloc_buffer(8192).unwrap();
        assert_eq!(dma.allocated_bytes(), before + 8192, "two whole pages");
        let mr = ctx.reg_mr(&pd, &buf, Access::LOCAL_WRITE).unwrap();
        assert_eq!(buf.keys(), 1);
        let cq = ctx.create_cq(32).unwrap();
        assert_eq!(
            cq.cqe(),
            63,
            "ibv_create_cq: next power of two above cqe, minus one"
        );
        let qp: Qp = ctx.create_qp(&pd, &rc_attr(&cq)).unwrap();
        assert_eq!(counts(&bar), (1, 1, 1, 1));
        assert_eq!(qp.state(), HwQpState::Reset);
        drop(qp);
        assert_eq!(counts(&bar), (1, 1, 1, 0), "DESTROY_QP on drop");
        drop(cq);
        drop(mr);
        assert_eq!(counts(&bar), (1, 0, 0, 0), "DESTROY_CQ, DESTROY_MKEY");
        assert_eq!(buf.keys(), 0);
        drop(buf);
        assert_eq!(dma.allocated_bytes(), before, "buffer and rings returned");
    }
    assert_eq!(counts(&bar), (0, 0, 0, 0), "DEALLOC_PD on drop");
    drop(ctx);
    assert_eq!(bar.fw().pages_held(), 0, "teardown reclaimed every page");
}

#[test]
fn a_leaked_region_pins_its_buffer() {
    let fabric = Fabric::new(1);
    let d = dev(&fabric);
    let (bar, dma) = (d.bar.clone(), d.dma.clone());
    let ctx = Context::new(d.dev);
    let pd = ctx.alloc_pd().unwrap();
    let before = dma.allocated_bytes();
    let buf = ctx.alloc_buffer(4096).unwrap();
    let mr = ctx.reg_mr(&pd, &buf, Access::LOCAL_WRITE).unwrap();
    std::mem::forget(mr);
    drop(buf);
    assert_eq!(counts(&bar).1, 1, "the key is still live on the device");
    assert_eq!(
        dma.allocated_bytes(),
        before + 4096,
        "memory a live key covers is never freed"
    );
}

#[test]
fn a_cq_with_a_leaked_qp_is_not_destroyed() {
    let fabric = Fabric::new(1);
    let d = dev(&fabric);
    let bar = d.bar.clone();
    let ctx = Context::new(d.dev);
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(32).unwrap();
    let qp: Qp = ctx.create_qp(&pd, &rc_attr(&cq)).unwrap();
    std::mem::forget(qp);
    drop(cq);
    assert_eq!(
        counts(&bar).2,
        1,
        "the device may still write CQEs: ring kept"
    );
}

#[test]
fn create_qp_sizes_from_verbs_caps_and_names_mismatches() {
    let fabric = Fabric::new(1);
    let d = dev(&fabric);
    let ctx = Context::new(d.dev);
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(32).unwrap();
    // RC, classic op set, 1 SGE: a 256-byte slot (192 B overhead + 16 B
    // gather + 64-byte rounding) → 16 WRs × 4 WQEBBs = 64 WQEBBs, inline
    // read back 256 − 192 − 4 = 60 (ref §3.2–§3.4).
    let qp: Qp = ctx.create_qp(&pd, &rc_attr(&cq)).unwrap();
    let cap = qp.cap();
    assert_eq!((cap.max_send_wr, cap.max_recv_wr), (16, 16));
    assert_eq!(cap.max_inline_data, 60);
    drop(qp);
    let e = ctx
        .create_qp::<32, 16>(&pd, &rc_attr(&cq))
        .map(|_| ())
        .unwrap_err();
    assert_eq!(
        e,
        Error::Storage {
            queue: "send",
            need: 64,
            have: 32
        }
    );
    let big = QpInitAttr::new(QpType::Rc, &cq, &cq, QpCap::new(65536, 1, 16, 1));
    let e = ctx.create_qp::<64, 16>(&pd, &big).map(|_| ()).unwrap_err();
    assert!(matches!(e, Error::Sizing(_)), "{e}");
    // A CQ of 63 entries cannot hold 64 WRs' completions (ref §3.7).
    let many = QpInitAttr::new(QpType::Rc, &cq, &cq, QpCap::new(32, 32, 1, 1));
    let e = ctx
        .create_qp::<128, 32>(&pd, &many)
        .map(|_| ())
        .unwrap_err();
    assert!(e.to_string().contains("CQ"), "{e}");
}

#[test]
fn safe_posts_refuse_device_writes_outside_writable_regions() {
    let fabric = Fabric::new(1);
    let d = dev(&fabric);
    let lid = d.nic.lid();
    let ctx = Context::new(d.dev);
    let pd = ctx.alloc_pd().unwrap();
    let ro_buf = ctx.alloc_buffer(4096).unwrap();
    let rw_buf = ctx.alloc_buffer(4096).unwrap();
    let ro = ctx.reg_mr(&pd, &ro_buf, Access::REMOTE_READ).unwrap();
    let rw = ctx
        .reg_mr(&pd, &rw_buf, Access::LOCAL_WRITE | Access::REMOTE_WRITE)
        .unwrap();
    let cq = ctx.create_cq(64).unwrap();
    let mut qp: Qp = ctx.create_qp(&pd, &rc_attr(&cq)).unwrap();
    let remote = rw.remote(0, 64).unwrap();
    let read = SendOp::Read {
        remote_addr: remote.addr,
        rkey: remote.rkey,
    };
    // Before RTS nothing may be posted (the provider's state check).
    let e = qp
        .post_send(&[SendWr::new(1, read, &[rw.sge(0, 8).unwrap()])])
        .unwrap_err();
    assert_eq!(e.kind, PostErrorKind::TooManySges { num: 1, max: None });
    up(&mut qp, lid);
    // READ into a region without LOCAL_WRITE: refused, nothing posted.
    let e = qp
        .post_send(&[SendWr::new(2, read, &[ro.sge(0, 64).unwrap()])])
        .unwrap_err();
    assert_eq!(
        (e.index, e.kind),
        (0, PostErrorKind::SgeOutOfBounds { sge: 0 })
    );
    assert_eq!(qp.send_outstanding(), 0);
    // An atomic's 8-byte result needs 8 bytes.
    let fadd = SendOp::FetchAdd {
        remote_addr: remote.addr,
        rkey: remote.rkey,
        add: 1,
    };
    let e = qp
        .post_send(&[SendWr::new(3, fadd, &[rw.sge(8, 4).unwrap()])])
        .unwrap_err();
    assert_eq!(e.kind, PostErrorKind::SgeOutOfBounds { sge: 0 });
    // Window binds are not offered by the safe API.
    let inv = SendOp::LocalInv { invalidate_rkey: 0 };
    let e = qp.post_send(&[SendWr::new(4, inv, &[])]).unwrap_err();
    assert!(matches!(e.kind, PostErrorKind::OpNotAllowed { .. }));
    // A receive into a read-only region: refused.
    let e = qp
        .post_recv(&[RecvWr::new(5, &[ro.sge(0, 64).unwrap()])])
        .unwrap_err();
    assert_eq!(e.kind, RecvErrorKind::SgeOutOfBounds { sge: 0 });
    // The good prefix of a batch is posted: READ then a refused READ.
    ro_buf.write(0, &[0xab; 64]).unwrap();
    let src = ro.remote(0, 64).unwrap();
    let good = SendOp::Read {
        remote_addr: src.addr,
        rkey: src.rkey,
    };
    let sg_ok = [rw.sge(64, 64).unwrap()];
    let sg_bad = [ro.sge(0, 8).unwrap()];
    let e = qp
        .post_send(&[
            SendWr::new(6, good, &sg_ok).signaled(),
            SendWr::new(7, good, &sg_bad).signaled(),
        ])
        .unwrap_err();
    assert_eq!(e.index, 1);
    let mut wc = [WorkCompletion::default(); 4];
    assert_eq!(cq.poll(&mut qp, &mut wc).unwrap(), 1);
    assert_eq!((wc[0].wr_id, wc[0].status), (6, WcStatus::Success));
    let mut got = [0u8; 64];
    rw_buf.read(64, &mut got).unwrap();
    assert_eq!(got, [0xab; 64]);
}

/// A safe batch applies `post_send`'s checks to each push (a refused push
/// writes nothing and the batch goes on), and what it built runs: a READ,
/// an inline WRITE and a fetch-and-add pushed around three refusals all
/// complete with the bytes the operations give.
#[test]
fn a_safe_send_batch_checks_each_push_and_runs_what_it_built() {
    let fabric = Fabric::new(1);
    let d = dev(&fabric);
    let lid = d.nic.lid();
    let ctx = Context::new(d.dev);
    let pd = ctx.alloc_pd().unwrap();
    let ro_buf = ctx.alloc_buffer(4096).unwrap();
    let rw_buf = ctx.alloc_buffer(4096).unwrap();
    let ro = ctx.reg_mr(&pd, &ro_buf, Access::REMOTE_READ).unwrap();
    let all = Access::LOCAL_WRITE | Access::REMOTE_WRITE | Access::REMOTE_ATOMIC;
    let rw = ctx.reg_mr(&pd, &rw_buf, all).unwrap();
    let cq = ctx.create_cq(64).unwrap();
    let mut qp: Qp = ctx.create_qp(&pd, &rc_attr(&cq)).unwrap();
    let src = ro.remote(0, 64).unwrap();
    let read = SendOp::Read {
        remote_addr: src.addr,
        rkey: src.rkey,
    };
    // Before RTS every push is refused, as post_send refuses it.
    {
        let mut b = qp.send_batch();
        let e = b.push(&SendWr::new(1, read, &[rw.sge(0, 8).unwrap()]));
        assert_eq!(e, Err(PostErrorKind::TooManySges { num: 1, max: None }));
        assert_eq!(b.built(), 0);
        b.ring();
    }
    up(&mut qp, lid);
    ro_buf.write(0, &[0xab; 64]).unwrap();
    rw_buf.write(1024, &41u64.to_be_bytes()).unwrap();
    rw_buf.write(2048, &[7; 32]).unwrap();
    let w = rw.remote(3072, 32).unwrap();
    let write = SendOp::Write {
        remote_addr: w.addr,
        rkey: w.rkey,
    };
    let t = rw.remote(1024, 8).unwrap();
    let fadd = SendOp::FetchAdd {
        remote_addr: t.addr,
        rkey: t.rkey,
        add: 1,
    };
    let inl = bareverbs::sq::SendFlags::INLINE;
    let mut b = qp.send_batch();
    b.push(&SendWr::new(10, read, &[rw.sge(64, 64).unwrap()]).signaled())
        .unwrap();
    // READ into a read-only region, a local invalidate, a 4-byte atomic
    // result: refused, nothing written, the batch goes on.
    let e = b.push(&SendWr::new(11, read, &[ro.sge(0, 64).unwrap()]));
    assert_eq!(e, Err(PostErrorKind::SgeOutOfBounds { sge: 0 }));
    let inv = SendOp::LocalInv { invalidate_rkey: 0 };
    let e = b.push(&SendWr::new(12, inv, &[]));
    assert!(
        matches!(e, Err(PostErrorKind::OpNotAllowed { .. })),
        "{e:?}"
    );
    let e = b.push(&SendWr::new(13, fadd, &[rw.sge(8, 4).unwrap()]));
    assert_eq!(e, Err(PostErrorKind::SgeOutOfBounds { sge: 0 }));
    b.push(
        &SendWr::new(14, write, &[rw.sge(2048, 32).unwrap()])
            .signaled()
            .with_flags(inl),
    )
    .unwrap();
    b.push(&SendWr::new(15, fadd, &[rw.sge(0, 8).unwrap()]).signaled())
        .unwrap();
    assert_eq!(b.built(), 3);
    b.ring();
    let mut wc = [WorkCompletion::default(); 8];
    let n = cq.poll(&mut qp, &mut wc).unwrap();
    let got: Vec<_> = wc[..n].iter().map(|c| (c.wr_id, c.status)).collect();
    assert_eq!(
        got,
        [
            (10, WcStatus::Success),
            (14, WcStatus::Success),
            (15, WcStatus::Success)
        ]
    );
    let mut back = [0u8; 64];
    rw_buf.read(64, &mut back).unwrap();
    assert_eq!(back, [0xab; 64]);
    let mut wrote = [0u8; 32];
    rw_buf.read(3072, &mut wrote).unwrap();
    assert_eq!(wrote, [7; 32]);
    let mut old = [0u8; 8];
    rw_buf.read(0, &mut old).unwrap();
    assert_eq!(
        u64::from_be_bytes(old),
        41,
        "fetch-and-add returns the old value"
    );
    rw_buf.read(1024, &mut old).unwrap();
    assert_eq!(u64::from_be_bytes(old), 42);
}

#[test]
fn atomic_and_inline_through_the_safe_api() {
    let fabric = Fabric::new(1);
    let d = dev(&fabric);
    let lid = d.nic.lid();
    let ctx = Context::new(d.dev);
    let pd = ctx.alloc_pd().unwrap();
    let buf = ctx.alloc_buffer(4096).unwrap();
    let all = Access::LOCAL_WRITE | Access::REMOTE_WRITE | Access::REMOTE_ATOMIC;
    let mr = ctx.reg_mr(&pd, &buf, all).unwrap();
    let cq = ctx.create_cq(64).unwrap();
    let mut qp: Qp = ctx.create_qp(&pd, &rc_attr(&cq)).unwrap();
    up(&mut qp, lid);
    buf.write(1024, &41u64.to_be_bytes()).unwrap();
    let t = mr.remote(1024, 8).unwrap();
    let fadd = SendOp::FetchAdd {
        remote_addr: t.addr,
        rkey: t.rkey,
        add: 1,
    };
    qp.post_send(&[SendWr::new(1, fadd, &[mr.sge(0, 8).unwrap()]).signaled()])
        .unwrap();
    // Inline WRITE of 32 bytes (within the 60 read back).
    buf.write(2048, &[7; 32]).unwrap();
    let w = mr.remote(3072, 32).unwrap();
    let write = SendOp::Write {
        remote_addr: w.addr,
        rkey: w.rkey,
    };
    let inl = bareverbs::sq::SendFlags::INLINE;
    qp.post_send(&[SendWr::new(2, write, &[mr.sge(2048, 32).unwrap()])
        .signaled()
        .with_flags(inl)])
        .unwrap();
    let mut wc = [WorkCompletion::default(); 4];
    assert_eq!(cq.poll(&mut qp, &mut wc).unwrap(), 2);
    assert_eq!(wc[0].status, WcStatus::Success);
    assert_eq!(wc[1].status, WcStatus::Success);
    let mut old = [0u8; 8];
    buf.read(0, &mut old).unwrap();
    assert_eq!(
        u64::from_be_bytes(old),
        41,
        "fetch-and-add returns the old value"
    );
    buf.read(1024, &mut old).unwrap();
    assert_eq!(u64::from_be_bytes(old), 42);
    let mut got = [0u8; 32];
    buf.read(3072, &mut got).unwrap();
    assert_eq!(got, [7; 32]);
    // Inline larger than the read-back max: refused.
    let e = qp
        .post_send(&[SendWr::new(3, write, &[mr.sge(0, 61).unwrap()]).with_flags(inl)])
        .unwrap_err();
    assert_eq!(e.kind, PostErrorKind::InlineTooLarge { len: 61, max: 60 });
    // The same two WRs again, polled in lean form: the atomic reports its
    // 8 bytes, both their opcodes.
    qp.post_send(&[SendWr::new(4, fadd, &[mr.sge(0, 8).unwrap()]).signaled()])
        .unwrap();
    qp.post_send(&[SendWr::new(5, write, &[mr.sge(2048, 32).unwrap()])
        .signaled()
        .with_flags(inl)])
        .unwrap();
    let mut cs = [Completion::default(); 4];
    assert_eq!(cq.poll_completions(&mut qp, &mut cs).unwrap(), 2);
    let got: Vec<_> = cs[..2]
        .iter()
        .map(|c| (c.wr_id(), c.status(), c.opcode(), c.byte_len()))
        .collect();
    assert_eq!(
        got,
        [
            (4, WcStatus::Success, WcOpcode::FetchAdd, 8),
            (5, WcStatus::Success, WcOpcode::RdmaWrite, 0)
        ]
    );
    assert_eq!(cq.poll_completions(&mut qp, &mut cs).unwrap(), 0);
    buf.read(1024, &mut old).unwrap();
    assert_eq!(u64::from_be_bytes(old), 43);
}

#[test]
fn buffers_check_their_bounds() {
    let fabric = Fabric::new(1);
    let d = dev(&fabric);
    let ctx = Context::new(d.dev);
    let buf = ctx.alloc_buffer(100).unwrap();
    assert!(buf.write(90, &[0; 10]).is_ok());
    assert_eq!(
        buf.write(91, &[0; 10]),
        Err(Error::OutOfBounds {
            offset: 91,
            len: 10,
            size: 100
        })
    );
    assert!(buf.read(usize::MAX, &mut [0; 2]).is_err());
    let pd = ctx.alloc_pd().unwrap();
    let mr = ctx.reg_mr(&pd, &buf, Access::LOCAL_WRITE).unwrap();
    assert!(mr.sge(0, 100).is_some());
    assert!(mr.sge(1, 100).is_none());
    assert!(mr.sge(u64::MAX, 2).is_none());
    assert!(mr.remote(50, 51).is_none());
}

#[test]
fn transition_attributes_are_range_checked() {
    let fabric = Fabric::new(1);
    let d = dev(&fabric);
    let ctx = Context::new(d.dev);
    let pd = ctx.alloc_pd().unwrap();
    let cq = ctx.create_cq(32).unwrap();
    let mut qp: Qp = ctx.create_qp(&pd, &rc_attr(&cq)).unwrap();
    qp.to_init(&InitAttr::new(1, Access::empty())).unwrap();
    let rtr = RtrAttr::new(IbMtu::Mtu1024, 1 << 24, 0, AddressHandle::ib(1, 1));
    assert_eq!(
        qp.to_rtr(&rtr),
        Err(Error::InvalidAttr {
            attr: "dest_qp_num",
            value: 1 << 24,
            max: 0xff_ffff
        })
    );
    assert_eq!(
        qp.state(),
        HwQpState::Init,
        "a refused transition sends nothing"
    );
    // RTS straight from INIT is refused by the driver's state table.
    assert!(qp.to_rts(&RtsAttr::new(0)).is_err());
}

#[test]
fn error_reset_reuse_with_stale_completions_in_the_cq() {
    let fabric = Fabric::new(1);
    let d = dev(&fabric);
    let lid = d.nic.lid();
    let ctx = Context::new(d.dev);
    let pd = ctx.alloc_pd().unwrap();
    let buf = ctx.alloc_buffer(4096).unwrap();
    let mr = ctx
        .reg_mr(&pd, &buf, Access::LOCAL_WRITE | Access::REMOTE_WRITE)
        .unwrap();
    let cq = ctx.create_cq(64).unwrap();
    let mut qp: Qp = ctx.create_qp(&pd, &rc_attr(&cq)).unwrap();
    up(&mut qp, lid);
    let sg = [mr.sge(0, 64).unwrap()];
    for id in 10..20 {
        qp.post_recv(&[RecvWr::new(id, &sg)]).unwrap();
    }
    // ERR flushes the ten receives into the CQ; nobody polls them.
    qp.to_err().unwrap();
    qp.to_reset().unwrap();
    assert_eq!(qp.state(), HwQpState::Reset);
    up(&mut qp, lid);
    // Reused: the full receive queue is available again.
    for id in 30..46 {
        qp.post_recv(&[RecvWr::new(id, &sg)]).unwrap();
    }
    let t = mr.remote(1024, 64).unwrap();
    let write = SendOp::Write {
        remote_addr: t.addr,
        rkey: t.rkey,
    };
    qp.post_send(&[SendWr::new(77, write, &sg).signaled()])
        .unwrap();
    let mut wc = [WorkCompletion::default(); 32];
    let n = cq.poll(&mut qp, &mut wc).unwrap();
    assert_eq!(
        n, 1,
        "only the new WRITE completes: stale flushes were dropped"
    );
    assert_eq!((wc[0].wr_id, wc[0].status), (77, WcStatus::Success));
}

/// The device moves an RC QP to ERR when one of its WRs fails (a WRITE
/// whose rkey grants no remote write: remote access error at the
/// requester; the responder that refused it goes to ERR too). `state()`
/// is the driver's cached view and still says RTS after the error
/// completion; `query_qp` reads the device's state (ERR, as firmware's
/// object table has it) and refreshes the cache, after which the QP is
/// held in ERR: posts are flushed as after `to_err`, and reset → reuse
/// works. A healthy QP beside them reports RTS and the attributes it was
/// brought up with.
#[test]
fn query_qp_reports_err_after_a_failed_rc_wr() {
    let fabric = Fabric::new(1);
    let d = dev(&fabric);
    let lid = d.nic.lid();
    let bar = d.bar.clone();
    let ctx = Context::new(d.dev);
    let pd = ctx.alloc_pd().unwrap();
    let buf = ctx.alloc_buffer(4096).unwrap();
    // Readable remotely, not writable remotely.
    let mr = ctx
        .reg_mr(&pd, &buf, Access::LOCAL_WRITE | Access::REMOTE_READ)
        .unwrap();
    let cq = ctx.create_cq(64).unwrap();
    let mut good: Qp = ctx.create_qp(&pd, &rc_attr(&cq)).unwrap();
    let mut bad: Qp = ctx.create_qp(&pd, &rc_attr(&cq)).unwrap();
    let mut peer: Qp = ctx.create_qp(&pd, &rc_attr(&cq)).unwrap();
    up(&mut good, lid);
    up_to(&mut bad, peer.qp_num(), lid);
    up_to(&mut peer, bad.qp_num(), lid);
    let fw_state = |qpn: u32| bar.fw().objects().qps[&qpn].state;

    // A healthy QP: RTS, and what `up` gave it.
    let a = good.query_qp().unwrap();
    assert_eq!(a.qp_state, HwQpState::Rts);
    assert_eq!(a.path_mtu, Some(IbMtu::Mtu1024));
    assert_eq!(a.dest_qp_num, good.qp_num(), "loopback onto itself");
    assert_eq!((a.sq_psn, a.rq_psn, a.port_num), (0, 0, 1));
    assert_eq!(good.state(), HwQpState::Rts);

    // A WRITE the responder refuses: remote access error.
    let t = mr.remote(0, 64).unwrap();
    let write = SendOp::Write {
        remote_addr: t.addr,
        rkey: t.rkey,
    };
    let sg = [mr.sge(1024, 64).unwrap()];
    bad.post_send(&[SendWr::new(9, write, &sg).signaled()])
        .unwrap();
    let mut wc = [WorkCompletion::default(); 8];
    let n = cq.poll(&mut bad, &mut wc).unwrap();
    assert_eq!(n, 1);
    assert_eq!((wc[0].wr_id, wc[0].status), (9, WcStatus::RemAccessErr));
    // The cached view has not seen the device's move to ERR.
    assert_eq!(bad.state(), HwQpState::Rts);

    let a = bad.query_qp().unwrap();
    assert_eq!(a.qp_state, HwQpState::Err, "the device moved it to ERR");
    assert_eq!(fw_state(bad.qp_num()), HwQpState::Err, "firmware agrees");
    assert_eq!(bad.state(), HwQpState::Err, "query refreshed the cache");
    // The responder that refused the WRITE went to ERR as well.
    assert_eq!(peer.state(), HwQpState::Rts);
    assert_eq!(peer.query_qp().unwrap().qp_state, HwQpState::Err);
    assert_eq!(peer.state(), HwQpState::Err);
    // The healthy QP is untouched.
    assert_eq!(good.query_qp().unwrap().qp_state, HwQpState::Rts);
    assert_eq!(good.state(), HwQpState::Rts);

    // Held in ERR: a send is flushed, as after `to_err`.
    let sg2 = [mr.sge(2048, 64).unwrap()];
    let read = SendOp::Read {
        remote_addr: t.addr,
        rkey: t.rkey,
    };
    bad.post_send(&[SendWr::new(10, read, &sg2).signaled()])
        .unwrap();
    let n = cq.poll(&mut bad, &mut wc).unwrap();
    assert_eq!(n, 1);
    assert_eq!((wc[0].wr_id, wc[0].status), (10, WcStatus::WrFlushErr));

    // ERR → RESET → reuse (now onto itself).
    bad.to_reset().unwrap();
    assert_eq!(bad.query_qp().unwrap().qp_state, HwQpState::Reset);
    up(&mut bad, lid);
    assert_eq!(bad.query_qp().unwrap().qp_state, HwQpState::Rts);
    bad.post_send(&[SendWr::new(11, read, &sg2).signaled()])
        .unwrap();
    let n = cq.poll(&mut bad, &mut wc).unwrap();
    assert_eq!((n, wc[0].wr_id, wc[0].status), (1, 11, WcStatus::Success));
}

#[test]
fn an_srq_shared_by_two_qps() {
    let fabric = Fabric::new(1);
    let d = dev(&fabric);
    let (lid, bar) = (d.nic.lid(), d.bar.clone());
    let ctx = Context::new(d.dev);
    let pd = ctx.alloc_pd().unwrap();
    let buf = ctx.alloc_buffer(8192).unwrap();
    let mr = ctx.reg_mr(&pd, &buf, Access::LOCAL_WRITE).unwrap();
    let cq = ctx.create_cq(64).unwrap();
    // A region without LOCAL_WRITE (a receive naming it is refused). Like
    // every region an SRQ's receives name, it must outlive the SRQ.
    let ro_buf = ctx.alloc_buffer(4096).unwrap();
    let ro = ctx.reg_mr(&pd, &ro_buf, Access::REMOTE_READ).unwrap();
    // max_wr 16: 2 × 16 + 1 = 33 fits the device, so the SRQ gets a wait
    // queue and rup2(33) = 64 slots; read back max_wr = rup2(17) − 1 = 31
    // (ref §3.8).
    let srq = ctx.create_srq::<64>(&pd, 16, 1).unwrap();
    assert_eq!((srq.max_wr(), srq.max_sge()), (31, 1));
    let attr = rc_attr(&cq).with_srq(&srq);
    let mut q1: Qp = ctx.create_qp(&pd, &attr).unwrap();
    let mut q2: Qp = ctx.create_qp(&pd, &attr).unwrap();
    up(&mut q1, lid);
    up(&mut q2, lid);
    let slots: Vec<_> = (0..4u64).map(|i| mr.sge(i * 256, 256).unwrap()).collect();
    for (i, s) in slots.iter().enumerate() {
        srq.post_recv(&[RecvWr::new(100 + i as u64, std::slice::from_ref(s))])
            .unwrap();
    }
    // A refused receive: nothing posted.
    let e = srq
        .post_recv(&[RecvWr::new(9, &[ro.sge(0, 8).unwrap()])])
        .unwrap_err();
    assert_eq!(e.kind, RecvErrorKind::SgeOutOfBounds { sge: 0 });
    buf.write(4096, &[0x11; 64]).unwrap();
    let src = [mr.sge(4096, 64).unwrap()];
    for (k, q) in [&mut q1, &mut q2].into_iter().enumerate() {
        for j in 0..2 {
            q.post_send(&[SendWr::new(10 * k as u64 + j, SendOp::Send, &src).signaled()])
                .unwrap();
        }
    }
    let mut wc = [WorkCompletion::default(); 16];
    let n = cq.poll_any(&mut [&mut q1, &mut q2], &mut wc).unwrap();
    assert_eq!(n, 8, "4 sends + 4 receives");
    let mut recv: Vec<u64> = wc[..n]
        .iter()
        .filter(|w| w.wr_id >= 100)
        .map(|w| {
            assert_eq!((w.status, w.byte_len), (WcStatus::Success, 64));
            w.wr_id
        })
        .collect();
    recv.sort();
    assert_eq!(recv, [100, 101, 102, 103], "each receive exactly once");
    drop((q1, q2));
    drop(srq);
    assert!(bar.fw().objects().srqs.is_empty(), "DESTROY_SRQ on drop");
}

#[test]
fn resetting_a_qp_frees_the_srq_slots_of_its_dropped_receives() {
    let fabric = Fabric::new(1);
    let d = dev(&fabric);
    let lid = d.nic.lid();
    let ctx = Context::new(d.dev);
    let pd = ctx.alloc_pd().unwrap();
    let buf = ctx.alloc_buffer(8192).unwrap();
    let mr = ctx.reg_mr(&pd, &buf, Access::LOCAL_WRITE).unwrap();
    let cq = ctx.create_cq(64).unwrap();
    // max_wr 4: 2 × 4 + 1 = 9 fits, so a wait queue and rup2(9) = 16
    // slots; read back max_wr = rup2(5) − 1 = 7 (ref §3.8).
    let srq = ctx.create_srq::<16>(&pd, 4, 1).unwrap();
    let max = srq.max_wr() as u64;
    assert_eq!(max, 7);
    let attr = rc_attr(&cq).with_srq(&srq);
    let mut qp: Qp = ctx.create_qp(&pd, &attr).unwrap();
    up(&mut qp, lid);
    let sg: Vec<_> = (0..max).map(|i| mr.sge(i * 256, 256).unwrap()).collect();
    let post = |id: u64| srq.post_recv(&[RecvWr::new(id, &[sg[(id % max) as usize]])]);
    let full = |r: Result<(), bareverbs::rq::RecvError>| {
        matches!(r.map_err(|e| e.kind), Err(RecvErrorKind::QueueFull { .. }))
    };
    for id in 100..100 + max {
        post(id).unwrap();
    }
    assert!(full(post(999)), "max_wr receives fill the SRQ");
    // A loopback SEND consumes the SRQ's oldest receive (100); its
    // responder completion stays in the CQ, unpolled (the send itself is
    // unsignaled), when the QP is reset: the CQE is dropped, and the SRQ
    // slot it names must go back to the free list.
    let src = [mr.sge(4096, 64).unwrap()];
    qp.post_send(&[SendWr::new(1, SendOp::Send, &src)]).unwrap();
    qp.to_reset().unwrap();
    let mut wc = [WorkCompletion::default(); 32];
    assert_eq!(cq.poll(&mut qp, &mut wc).unwrap(), 0, "the CQE was dropped");
    post(200).expect("the consumed slot is free again");
    assert!(full(post(201)), "exactly one slot was freed");
    // The SRQ still works: its max_wr receives (not the dropped one) are
    // consumed by max_wr sends, after which it takes max_wr receives again.
    up(&mut qp, lid);
    for j in 0..max {
        qp.post_send(&[SendWr::new(j, SendOp::Send, &src).signaled()])
            .unwrap();
    }
    let mut got = 0;
    let mut recv = Vec::new();
    while got < 2 * max as usize {
        let n = cq.poll(&mut qp, &mut wc[got..]).unwrap();
        assert!(n > 0, "every send and receive completes");
        got += n;
    }
    for w in &wc[..got] {
        assert_eq!(w.status, WcStatus::Success);
        if w.wr_id >= 100 {
            recv.push(w.wr_id);
        }
    }
    recv.sort();
    let want: Vec<u64> = (101..100 + max).chain([200]).collect();
    assert_eq!(recv, want, "each live receive exactly once");
    for id in 300..300 + max {
        post(id).expect("the SRQ takes max_wr receives again");
    }
    assert!(full(post(999)));
    drop(qp);
    drop(srq);
}

#[test]
fn dropping_a_qp_frees_the_srq_slots_of_its_unpolled_receives() {
    let fabric = Fabric::new(1);
    let d = dev(&fabric);
    let lid = d.nic.lid();
    let ctx = Context::new(d.dev);
    let pd = ctx.alloc_pd().unwrap();
    let buf = ctx.alloc_buffer(8192).unwrap();
    let mr = ctx.reg_mr(&pd, &buf, Access::LOCAL_WRITE).unwrap();
    let cq = ctx.create_cq(64).unwrap();
    // max_wr 4: 16 slots, read back max_wr 7 (ref §3.8).
    let srq = ctx.create_srq::<16>(&pd, 4, 1).unwrap();
    let max = srq.max_wr() as u64;
    let attr = rc_attr(&cq).with_srq(&srq);
    let mut q1: Qp = ctx.create_qp(&pd, &attr).unwrap();
    let mut q2: Qp = ctx.create_qp(&pd, &attr).unwrap();
    up(&mut q1, lid);
    up(&mut q2, lid);
    let sg = [mr.sge(0, 256).unwrap()];
    let post = |id: u64| srq.post_recv(&[RecvWr::new(id, &sg)]);
    for id in 100..100 + max {
        post(id).unwrap();
    }
    // Q1 receives one SEND through the SRQ and is destroyed with that
    // completion unpolled: the CQE goes with it, and its SRQ slot goes
    // back to the free list for Q2, which goes on using the SRQ.
    let src = [mr.sge(4096, 64).unwrap()];
    q1.post_send(&[SendWr::new(1, SendOp::Send, &src)]).unwrap();
    drop(q1);
    let mut wc = [WorkCompletion::default(); 16];
    assert_eq!(cq.poll(&mut q2, &mut wc).unwrap(), 0, "the CQE was dropped");
    post(200).expect("the consumed slot is free again");
    assert!(matches!(
        post(201).map_err(|e| e.kind),
        Err(RecvErrorKind::QueueFull { .. })
    ));
    drop(q2);
    drop(srq);
}

#[test]
fn a_cq_refuses_completions_for_a_qp_that_does_not_report_to_it() {
    let fabric = Fabric::new(1);
    let (da, db) = (dev(&fabric), dev(&fabric));
    let lid_b = db.nic.lid();
    let (a, b) = (Context::new(da.dev), Context::new(db.dev));
    let (pa, pb) = (a.alloc_pd().unwrap(), b.alloc_pd().unwrap());
    let bb = b.alloc_buffer(4096).unwrap();
    let mb = b
        .reg_mr(&pb, &bb, Access::LOCAL_WRITE | Access::REMOTE_WRITE)
        .unwrap();
    let (ca, cb) = (a.create_cq(32).unwrap(), b.create_cq(32).unwrap());
    let mut qa: Qp = a.create_qp(&pa, &rc_attr(&ca)).unwrap();
    let mut qb: Qp = b.create_qp(&pb, &rc_attr(&cb)).unwrap();
    // Two functions: the same QPN and user index on each.
    assert_eq!(qa.qp_num(), qb.qp_num());
    up(&mut qb, lid_b);
    let t = mb.remote(1024, 64).unwrap();
    let write = SendOp::Write {
        remote_addr: t.addr,
        rkey: t.rkey,
    };
    qb.post_send(&[SendWr::new(5, write, &[mb.sge(0, 64).unwrap()]).signaled()])
        .unwrap();
    let mut wc = [WorkCompletion::default(); 4];
    let e = cb.poll(&mut qa, &mut wc).unwrap_err();
    assert!(
        matches!(
            e,
            bareverbs::cq::PollError::UnknownQp { completions: 0, .. }
        ),
        "{e:?}"
    );
    assert_eq!(qb.send_outstanding(), 1, "nothing of B's QP was retired");
}

#[test]
fn raw_factories_refuse_storage_that_disagrees_with_the_geometry() {
    use bareverbs::cqe::CqeSize;
    let fabric = Fabric::new(1);
    let mut d = dev(&fabric);
    let cq = d.dev.create_cq(256, CqeSize::B64).unwrap();
    // SAFETY: both attempts are refused before any queue object exists.
    let e = unsafe { cq.completion_queue::<128>() }.unwrap_err();
    assert_eq!(
        e,
        bareverbs::cq::CqError::EntriesDisagree {
            queue: 128,
            created: 256
        }
    );
    // SAFETY: as above; the one queue built is dropped before teardown.
    assert!(unsafe { cq.completion_queue::<256>() }.is_ok());
}

#[test]
fn stale_or_foreign_handles_destroy_nothing() {
    use bareverbs::device::{DeviceError, Pd};
    use bareverbs::platform::DmaAllocator;
    let fabric = Fabric::new(1);
    let reuse = FwConfig {
        reuse_mkey_index: true,
        ..FwConfig::default()
    };
    let (mut d, _nic) = bring_up_on(&fabric, reuse, DeviceConfig::default()).unwrap();
    let bar = d.bar().clone();
    let pd = d.alloc_pd().unwrap();
    let buf = d.allocator().alloc(4096, 4096).unwrap();
    let rights = Access::LOCAL_WRITE;
    // SAFETY: the test's own buffer (no ring), freed by teardown's allocator.
    let k1 = unsafe { d.create_mkey(pd, &buf, rights) }.unwrap();
    let stale = k1;
    d.destroy_mkey(k1).unwrap();
    // SAFETY: as above.
    let k2 = unsafe { d.create_mkey(pd, &buf, rights) }.unwrap();
    assert_eq!(k2.index(), stale.index(), "firmware reused the index");
    // The stale copy names the old variant: refused, the new key survives.
    assert_eq!(
        d.destroy_mkey(stale),
        Err(DeviceError::NotOurs {
            what: "mkey",
            number: stale.key()
        })
    );
    assert_eq!(counts(&bar).1, 1, "the new key is still live");
    // A PD number this driver never allocated: refused, nothing sent.
    let foreign = Pd(pd.0 ^ 0x40);
    assert!(matches!(
        d.dealloc_pd(foreign),
        Err(DeviceError::NotOurs { what: "PD", .. })
    ));
    assert_eq!(counts(&bar).0, 1);
    d.destroy_mkey(k2).unwrap();
    d.dealloc_pd(pd).unwrap();
    let _ = d.teardown();
}
