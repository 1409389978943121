//! A lying firmware model against the core's bring-up and object code:
//! repeated and oversized object numbers, a one-slot command queue, an
//! event storm, and memory keys (unaligned buffers, reused indices).
//!
//! The lies are configured through the model ([`Faults`], [`FwConfig`]);
//! expected values come from what the test made firmware say, from the
//! [reference](bareverbs::reference) (§7.2 geometry, §7.12 key = index << 8 | mkey_7_0, §4.6 EQ
//! size), or from the buffers the test allocated — never from the driver's output.
//!
//! [`Faults`]: bareverbs_sim::fw::Faults

use bareverbs::cmd::initseg::InitSegError;
use bareverbs::cqe::CqeSize;
use bareverbs::device::{Device, DeviceConfig, DeviceError, QpSpec, SrqSpec};
use bareverbs::mr::Access;
use bareverbs::platform::DmaAllocator;
use bareverbs::qp::QpType;
use bareverbs_sim::dma::HeapDma;
use bareverbs_sim::fw::{bring_up_sim, FakeClock, FwConfig, SharedDma, SimBar, SimDevice};
use std::sync::Arc;

const ALL: Access = Access::LOCAL_WRITE
    .union(Access::REMOTE_WRITE)
    .union(Access::REMOTE_READ)
    .union(Access::REMOTE_ATOMIC);

fn rc_spec(pd: bareverbs::device::Pd, cqn: u32) -> QpSpec {
    QpSpec {
        qp_type: QpType::Rc,
        pd,
        send_cqn: cqn,
        recv_cqn: cqn,
        log_sq_size: 6,
        log_rq_size: 6,
        rq_wqe_shift: 5,
        srqn: None,
        user_index: 7,
        max_send_wr: 0,
        max_recv_wr: 0,
    }
}

fn lie_next(d: &SimDevice, number: u32) {
    d.bar().fw().faults.object_number_next = Some(number);
}

fn live_bytes(d: &SimDevice) -> usize {
    d.allocator().0.allocated_bytes()
}

// ---- finding 1: object numbers ------------------------------------------

/// The use-after-free of the finding: firmware gives a second CQ the
/// number of a live one. The second CQ must be refused (typed), the live
/// CQ's ring must stay allocated, and destroying the live CQ must destroy
/// the right firmware object. The refused CQ's memory is leaked, not
/// freed: firmware may have programmed it.
#[test]
fn a_repeated_cq_number_is_refused_and_the_live_cq_keeps_its_ring() {
    let mut d = bring_up_sim(FwConfig::default()).unwrap();
    let cq1 = d.create_cq(64, CqeSize::B64).unwrap();
    let before = live_bytes(&d);
    lie_next(&d, cq1.cqn());
    let e = d.create_cq(64, CqeSize::B64).unwrap_err();
    assert_eq!(
        e,
        DeviceError::DuplicateObjectNumber {
            what: "CQ",
            number: cq1.cqn()
        }
    );
    assert!(e.to_string().contains("already live"), "{e}");
    // The refused CQ's ring (one 4 KiB page for 64 × 64 B) and doorbell
    // record stay allocated.
    assert!(live_bytes(&d) >= before + 4096 + 64);
    let model_cqs: Vec<u32> = d.bar().fw().objects().cqs.keys().copied().collect();
    assert_eq!(model_cqs.len(), 2, "firmware made a second CQ");
    // The live CQ is intact and destroys as itself.
    assert!(d
        .allocator()
        .0
        .translate(cq1.ring().iova, cq1.ring().len)
        .is_some());
    let cqn = cq1.cqn();
    d.destroy_cq(cq1).unwrap();
    assert!(!d.bar().fw().objects().cqs.contains_key(&cqn));
    assert_eq!(d.bar().fw().objects().cqs.len(), 1, "the other CQ is left");
    // A CQ created afterwards (honest number) works as usual.
    let cq3 = d.create_cq(64, CqeSize::B64).unwrap();
    d.destroy_cq(cq3).unwrap();
    // Teardown destroys only what the driver owns; the firmware CQ it
    // refused is left to firmware, which then keeps the UAR in use.
    let (rep, ..) = d.teardown();
    assert!(
        matches!(
            rep.first_error,
            Some(bareverbs::cmd::CmdError::Failed {
                opcode: bareverbs::cmd::op::DEALLOC_UAR,
                ..
            })
        ),
        "{rep:?}"
    );
}

/// Every tracked kind refuses a number already live for that kind: PD,
/// memory key, QP, SRQ (and CQ above). Numbers are per kind: a QP may
/// share its number with a CQ.
#[test]
fn repeated_numbers_are_refused_for_every_object_kind() {
    let mut d = bring_up_sim(FwConfig::default()).unwrap();
    let pd = d.alloc_pd().unwrap();
    lie_next(&d, pd.0);
    assert_eq!(
        d.alloc_pd().unwrap_err(),
        DeviceError::DuplicateObjectNumber {
            what: "PD",
            number: pd.0
        }
    );

    let buf = d.allocator().alloc(8192, 4096).unwrap();
    let k = /* SAFETY: the test's own buffer, never a ring, freed after teardown. */ unsafe { d.create_mkey(pd, &buf, ALL) }.unwrap();
    lie_next(&d, k.index());
    assert_eq!(
        /* SAFETY: the test's own buffer, never a ring, freed after teardown. */
        unsafe { d.create_mkey(pd, &buf, ALL) }.unwrap_err(),
        DeviceError::DuplicateObjectNumber {
            what: "mkey",
            number: k.index()
        }
    );

    let cq = d.create_cq(256, CqeSize::B64).unwrap();
    let qp = d.create_qp(rc_spec(pd, cq.cqn())).unwrap();
    lie_next(&d, qp.qpn());
    assert_eq!(
        d.create_qp(rc_spec(pd, cq.cqn())).unwrap_err(),
        DeviceError::DuplicateObjectNumber {
            what: "QP",
            number: qp.qpn()
        }
    );
    // Same number, other kind: not a duplicate.
    lie_next(&d, cq.cqn());
    let qp2 = d.create_qp(rc_spec(pd, cq.cqn())).unwrap();
    assert_eq!(qp2.qpn(), cq.cqn());

    let spec = SrqSpec {
        pd,
        log_size: 5,
        wqe_shift: 6,
    };
    let srq = d.create_srq(spec).unwrap();
    lie_next(&d, srq.srqn());
    assert_eq!(
        d.create_srq(spec).unwrap_err(),
        DeviceError::DuplicateObjectNumber {
            what: "SRQ",
            number: srq.srqn()
        }
    );
    // The live objects are untouched: they destroy as themselves.
    let qpn = qp.qpn();
    d.destroy_qp(qp).unwrap();
    assert!(!d.bar().fw().objects().qps.contains_key(&qpn));
    d.destroy_srq(srq).unwrap();
    d.destroy_mkey(k).unwrap();
}

/// A number with the reserved bits 31:24 set does not fit the 24-bit
/// field (a QPN goes into `qpn_ds << 8`, [ref §1.2](bareverbs::reference)): refused, not masked.
#[test]
fn object_numbers_above_24_bits_are_refused() {
    let mut d = bring_up_sim(FwConfig::default()).unwrap();
    lie_next(&d, 0x0100_0003);
    assert_eq!(
        d.create_cq(64, CqeSize::B64).unwrap_err(),
        DeviceError::BadObjectNumber {
            what: "CQ",
            number: 0x0100_0003
        }
    );
    let cq = d.create_cq(64, CqeSize::B64).unwrap();
    let pd = d.alloc_pd().unwrap();
    lie_next(&d, 0xff00_0000 | cq.cqn());
    assert!(matches!(
        d.create_qp(rc_spec(pd, cq.cqn())).unwrap_err(),
        DeviceError::BadObjectNumber { what: "QP", .. }
    ));
    lie_next(&d, 0x8000_0000);
    assert!(matches!(
        d.alloc_pd().unwrap_err(),
        DeviceError::BadObjectNumber { what: "PD", .. }
    ));
}

/// ALLOC_UAR at bring-up answering a UAR index above 24 bits fails the
/// bring-up with a typed error.
#[test]
fn a_uar_index_above_24_bits_fails_bring_up() {
    let dma = Arc::new(HeapDma::new());
    let bar = SimBar::new(dma.clone(), FwConfig::default());
    // ALLOC_UAR is the first object command of bring-up.
    bar.fw().faults.object_number_next = Some(0x0100_0004);
    let e = Device::bring_up(
        bar,
        FakeClock::default(),
        SharedDma(dma),
        DeviceConfig::default(),
    )
    .unwrap_err();
    assert_eq!(
        e,
        DeviceError::BadObjectNumber {
            what: "UAR",
            number: 0x0100_0004
        }
    );
}

// ---- finding 2: geometry from the init segment --------------------------

/// A device reporting one command slot (log_cmdq_size 0) is refused at
/// bring-up: the regular and the page slot would be the same entry.
#[test]
fn a_one_slot_command_queue_is_refused_at_bring_up() {
    let e = bring_up_sim(FwConfig {
        log_cmdq_size: 0,
        ..FwConfig::default()
    })
    .unwrap_err();
    assert_eq!(
        e,
        DeviceError::InitSeg(InitSegError::TooFewSlots { log_sz: 0 })
    );
    // Two slots is enough.
    let d = bring_up_sim(FwConfig {
        log_cmdq_size: 1,
        ..FwConfig::default()
    })
    .unwrap();
    let (rep, ..) = d.teardown();
    assert_eq!(rep.first_error, None);
}

// ---- finding 4: an event storm ------------------------------------------

/// A device that refills the EQ every time the driver publishes its
/// consumer index never lets the ring run dry. `serve_events` must still
/// return, after at most one EQ's worth of entries (the async EQ has 256:
/// 32 + 0x80 spare rounded up, [ref §4.6, §7.6](bareverbs::reference)), saying more are pending.
/// Run on a thread with a deadline so the unbounded loop fails the test
/// instead of hanging it.
#[test]
fn serve_events_is_bounded_under_an_event_storm() {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut d = bring_up_sim(FwConfig::default()).unwrap();
        {
            let mut fw = d.bar().fw();
            fw.faults.eqe_storm = true;
            let mut n = 0;
            while fw.post_event(0x09) {
                n += 1;
            }
            assert_eq!(n, 256, "the ring is full");
        }
        let first = d.serve_events();
        let second = d.serve_events();
        d.bar().fw().faults.eqe_storm = false;
        let _ = tx.send((first, second));
    });
    let (first, second) = rx
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("serve_events did not return under an event storm");
    assert_eq!(first.handled, 256);
    assert!(first.more, "the storm left entries for the next call");
    assert_eq!(second.handled, 256);
    assert!(second.more);
}

/// The command wait serves events between polls: under a storm, with a
/// command firmware never completes, the wait still reaches its timeout
/// (each poll serves at most one EQ's worth) instead of spinning in the
/// event loop forever.
#[test]
fn a_command_wait_times_out_under_an_event_storm() {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let cfg = DeviceConfig {
            cmd_timeout_us: 1_000,
            cmd_poll_us: 100,
            ..DeviceConfig::default()
        };
        let mut d = bareverbs_sim::fw::bring_up_sim_with(FwConfig::default(), cfg).unwrap();
        {
            let mut fw = d.bar().fw();
            fw.faults.eqe_storm = true;
            fw.faults.hang_next = 1;
            while fw.post_event(0x09) {}
        }
        let r = d.create_cq(64, CqeSize::B64).map(|_| ());
        d.bar().fw().faults.eqe_storm = false;
        let _ = tx.send(r);
    });
    let r = rx
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("the command wait did not return under an event storm");
    assert!(
        matches!(
            r,
            Err(DeviceError::Cmd(bareverbs::cmd::CmdError::Timeout {
                opcode: bareverbs::cmd::op::CREATE_CQ,
                ..
            }))
        ),
        "{r:?}"
    );
}

/// Without a storm the same call drains what is there and reports no more.
#[test]
fn serve_events_drains_a_finite_burst() {
    let mut d = bring_up_sim(FwConfig::default()).unwrap();
    for _ in 0..10 {
        assert!(d.bar().fw().post_event(0x09));
    }
    let s = d.serve_events();
    assert_eq!((s.handled, s.more), (10, false));
    assert_eq!(d.serve_events().handled, 0);
}

// ---- finding 7: memory keys ---------------------------------------------

/// A buffer starting 0x800 into a page and 4096 bytes long touches two
/// pages: the MTT must list both ([ref §7.12](bareverbs::reference); the model checks
/// `((start & 0xfff) + len)` pages and refused the one-page MTT before).
#[test]
fn an_unaligned_buffer_gets_every_page_it_touches() {
    let mut d = bring_up_sim(FwConfig::default()).unwrap();
    let pd = d.alloc_pd().unwrap();
    let big = d.allocator().alloc(3 * 4096, 4096).unwrap();
    let buf = big.slice(0x800, 4096).unwrap();
    let k = /* SAFETY: the test's own buffer, never a ring, freed after teardown. */ unsafe { d.create_mkey(pd, &buf, ALL) }.unwrap();
    assert_eq!((k.addr(), k.len()), (big.iova + 0x800, 4096));
    let m = d.bar().fw().objects().mkeys[&k.index()].clone();
    assert_eq!(m.pages, vec![big.iova, big.iova + 4096]);
    assert_eq!((m.start, m.len), (big.iova + 0x800, 4096));
    // 1 byte at the last byte of a page: one page; 2 bytes across: two.
    let one = big.slice(0xfff, 1).unwrap();
    let k1 = /* SAFETY: the test's own buffer, never a ring, freed after teardown. */ unsafe { d.create_mkey(pd, &one, ALL) }.unwrap();
    assert_eq!(
        d.bar().fw().objects().mkeys[&k1.index()].pages,
        vec![big.iova]
    );
    let two = big.slice(0xfff, 2).unwrap();
    let k2 = /* SAFETY: the test's own buffer, never a ring, freed after teardown. */ unsafe { d.create_mkey(pd, &two, ALL) }.unwrap();
    assert_eq!(
        d.bar().fw().objects().mkeys[&k2.index()].pages,
        vec![big.iova, big.iova + 4096]
    );
}

/// Firmware reusing a destroyed key's index: the new key must not equal
/// the stale one (lkey/rkey = index << 8 | mkey_7_0, [ref §7.12](bareverbs::reference)), its
/// variant must be the one programmed into CREATE_MKEY, and no key is ever
/// MLX5_INVALID_LKEY 0x100 ([ref §2.1](bareverbs::reference)).
#[test]
fn a_reused_mkey_index_gets_a_new_variant() {
    let mut d = bring_up_sim(FwConfig {
        reuse_mkey_index: true,
        ..FwConfig::default()
    })
    .unwrap();
    let pd = d.alloc_pd().unwrap();
    let buf = d.allocator().alloc(4096, 4096).unwrap();
    let mut prev = /* SAFETY: the test's own buffer, never a ring, freed after teardown. */ unsafe { d.create_mkey(pd, &buf, ALL) }.unwrap();
    let mut seen = std::collections::HashSet::new();
    seen.insert(prev.key());
    for _ in 0..300 {
        let (idx, stale) = (prev.index(), prev.key());
        d.destroy_mkey(prev).unwrap();
        let k = /* SAFETY: the test's own buffer, never a ring, freed after teardown. */ unsafe { d.create_mkey(pd, &buf, ALL) }.unwrap();
        assert_eq!(k.index(), idx, "the model reuses the index");
        assert_ne!(k.key(), stale, "a stale key must not name the new key");
        assert_eq!(k.key() >> 8, k.index());
        assert_ne!(k.key() & 0xff, 0);
        assert_ne!(k.key(), 0x100);
        let m = d.bar().fw().objects().mkeys[&k.index()].clone();
        assert_eq!(m.variant as u32, k.key() & 0xff, "programmed in mkey_7_0");
        seen.insert(k.key());
        prev = k;
    }
    // 301 keys over one index: all 255 nonzero variants were used.
    assert_eq!(seen.len(), 255);
}

// ---- finding 7, end to end: a stale rkey on the data path ---------------

/// A stale memory key must not reach a new key's memory (finding 7):
/// firmware that reuses a destroyed key's index (`FwConfig::reuse_mkey_index`)
/// gives the next key the same index; with the variant byte rotating, the
/// old rkey differs from the new one, and the simulated responder — which
/// looks keys up by their full 32 bits — refuses the stale rkey with a
/// remote access error while the new rkey works. Built on the safe verbs
/// layer (two functions on a fabric, objects by command).
///
/// Expected values come from the operation performed (the bytes written)
/// and the [reference](bareverbs::reference) (§5.6 statuses, §7.12 key = index << 8 | mkey_7_0).
mod stale_rkey {
    use bareverbs::cmd::ops::{IbMtu, RoceAddress};
    use bareverbs::cqe::{WcStatus, WorkCompletion};
    use bareverbs::device::DeviceConfig;
    use bareverbs::sizing::QpType;
    use bareverbs::sq::SendOp;
    use bareverbs::verbs::*;
    use bareverbs_sim::fw::{bring_up_on, FwConfig, SimUar};
    use bareverbs_sim::Fabric;

    type Qp<'a> = QueuePair<'a, SimUar, 64, 16>;

    fn connect(qp: &mut Qp, peer_qpn: u32, peer: RoceAddress, sgid: u16) {
        let all = Access::REMOTE_WRITE | Access::REMOTE_READ;
        qp.to_init(&InitAttr::new(1, all)).unwrap();
        let ah = AddressHandle::roce(1, peer.gid, peer.mac, sgid as u8);
        qp.to_rtr(&RtrAttr::new(IbMtu::Mtu1024, peer_qpn, 0, ah))
            .unwrap();
        qp.to_rts(&RtsAttr::new(0)).unwrap();
    }

    fn one(cq: &CompletionQueue, qp: &mut Qp) -> WorkCompletion {
        let mut wc = [WorkCompletion::default(); 4];
        assert_eq!(cq.poll(qp, &mut wc).unwrap(), 1);
        wc[0]
    }

    #[test]
    fn a_stale_rkey_of_a_reused_mkey_index_is_refused_by_the_responder() {
        let fabric = Fabric::new(11);
        let reuse = FwConfig {
            reuse_mkey_index: true,
            ..FwConfig::default()
        };
        let (da, _) = bring_up_on(&fabric, FwConfig::default(), DeviceConfig::default()).unwrap();
        let (db, _) = bring_up_on(&fabric, reuse, DeviceConfig::default()).unwrap();
        let (a, b) = (Context::new(da), Context::new(db));
        let rights = Access::LOCAL_WRITE | Access::REMOTE_WRITE;
        let (pa, pb) = (a.alloc_pd().unwrap(), b.alloc_pd().unwrap());
        let (ba, bb) = (a.alloc_buffer(8192).unwrap(), b.alloc_buffer(8192).unwrap());
        let ma = a.reg_mr(&pa, &ba, rights).unwrap();
        // B destroys a key and makes a new one over the same buffer: the
        // model hands out the same index again.
        let stale = b.reg_mr(&pb, &bb, rights).unwrap();
        let old = stale.remote(1024, 512).unwrap();
        drop(stale);
        let fresh = b.reg_mr(&pb, &bb, rights).unwrap();
        assert_eq!(fresh.rkey() >> 8, old.rkey >> 8, "index reused by firmware");
        assert_ne!(fresh.rkey(), old.rkey, "the variant byte rotated");
        let (ca, cb) = (a.create_cq(32).unwrap(), b.create_cq(32).unwrap());
        let cap = QpCap::new(16, 16, 1, 1);
        let mut qa: Qp = a
            .create_qp(&pa, &QpInitAttr::new(QpType::Rc, &ca, &ca, cap))
            .unwrap();
        let mut qb: Qp = b
            .create_qp(&pb, &QpInitAttr::new(QpType::Rc, &cb, &cb, cap))
            .unwrap();
        let ga = a.add_ip_gids([10, 0, 0, 1].into()).unwrap();
        let gb = b.add_ip_gids([10, 0, 0, 2].into()).unwrap();
        let (addr_a, addr_b) = (a.gid(ga.v2).unwrap(), b.gid(gb.v2).unwrap());
        connect(&mut qa, qb.qp_num(), addr_b, ga.v2);
        connect(&mut qb, qa.qp_num(), addr_a, gb.v2);

        // The new key works: WRITE A[0..512] → B[0..512].
        let data: Vec<u8> = (0..512u32).map(|i| (i * 31 + 5) as u8).collect();
        ba.write(0, &data).unwrap();
        let t = fresh.remote(0, 512).unwrap();
        let write = SendOp::Write {
            remote_addr: t.addr,
            rkey: t.rkey,
        };
        qa.post_send(&[SendWr::new(1, write, &[ma.sge(0, 512).unwrap()]).signaled()])
            .unwrap();
        let wc = one(&ca, &mut qa);
        assert_eq!((wc.wr_id, wc.status), (1, WcStatus::Success));
        let mut got = vec![0u8; 512];
        bb.read(0, &mut got).unwrap();
        assert_eq!(got, data);

        // The stale key (same index, old variant) is refused and writes nothing.
        ba.write(4096, &[9; 512]).unwrap();
        let write = SendOp::Write {
            remote_addr: old.addr,
            rkey: old.rkey,
        };
        qa.post_send(&[SendWr::new(2, write, &[ma.sge(4096, 512).unwrap()]).signaled()])
            .unwrap();
        let wc = one(&ca, &mut qa);
        assert_eq!((wc.wr_id, wc.status), (2, WcStatus::RemAccessErr));
        bb.read(1024, &mut got).unwrap();
        assert_eq!(got, vec![0u8; 512], "stale key wrote nothing");
    }
}
