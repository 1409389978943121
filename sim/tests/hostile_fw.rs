//! A lying firmware model against the core's bring-up and object code:
//! repeated and oversized object numbers, a one-slot command queue, an
//! event storm, and memory keys (unaligned buffers, reused indices).
//!
//! The lies are configured through the model ([`Faults`], [`FwConfig`]);
//! expected values come from what the test made firmware say, from FACTS
//! (§7.2 geometry, §7.12 key = index << 8 | mkey_7_0, §4.6 EQ size), or
//! from the buffers the test allocated — never from the driver's output.
//!
//! [`Faults`]: bareverbs_sim::fw::Faults

use bareverbs::cmd::initseg::InitSegError;
use bareverbs::cqe::CqeSize;
use bareverbs::device::{
    Device, DeviceConfig, DeviceError, MkeyAccess, QpServiceType, QpSpec, SrqSpec,
};
use bareverbs::platform::DmaAllocator;
use bareverbs_sim::dma::HeapDma;
use bareverbs_sim::fw::{bring_up_sim, FakeClock, FwConfig, SharedDma, SimBar, SimDevice};
use std::sync::Arc;

const ALL: MkeyAccess = MkeyAccess {
    local_read: true,
    local_write: true,
    remote_read: true,
    remote_write: true,
    atomic: true,
};

fn rc_spec(pd: bareverbs::device::Pd, cqn: u32) -> QpSpec {
    QpSpec {
        st: QpServiceType::Rc,
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
/// field (a QPN goes into `qpn_ds << 8`, FACTS §1.2): refused, not masked.
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
/// 32 + 0x80 spare rounded up, FACTS §4.6, §7.6), saying more are pending.
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
/// pages: the MTT must list both (FACTS §7.12; the model checks
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
/// the stale one (lkey/rkey = index << 8 | mkey_7_0, FACTS §7.12), its
/// variant must be the one programmed into CREATE_MKEY, and no key is ever
/// MLX5_INVALID_LKEY 0x100 (FACTS §2.1).
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
/// remote access error while the new rkey works. Helpers as in
/// `e2e_cmd.rs` (two functions on a fabric, objects by command).
///
/// Expected values come from the operation performed (the bytes written)
/// and FACTS (§5.6 statuses, §7.12 key = index << 8 | mkey_7_0).
#[allow(dead_code)]
mod stale_rkey {
    use bareverbs::cq::CompletionQueue;
    use bareverbs::cqe::{CqeSize, WcOpcode, WcStatus, WorkCompletion};
    use bareverbs::device::{
        AddressPath, CqHandle, DeviceConfig, Init2Rtr, Mkey, MkeyAccess, QpHandle, QpServiceType,
        QpSpec, Rst2Init, Rtr2Rts,
    };
    use bareverbs::mr::MemoryRegion;
    use bareverbs::platform::{DmaAllocator, DmaBuf, BF_OFFSET};
    use bareverbs::queue_pair::QueuePair;
    use bareverbs::rq::{RecvWr, RqConfig};
    use bareverbs::sizing::QpType;
    use bareverbs::sq::{BlueFlame, SendFlags, SendOp, SendWr, SqConfig};
    use bareverbs_sim::fw::{bring_up_on, FwConfig, SimDevice, SimUar};
    use bareverbs_sim::{Device as SimNic, Fabric};

    const BUF: usize = 64 * 1024;
    const ALL: MkeyAccess = MkeyAccess {
        local_read: true,
        local_write: true,
        remote_read: true,
        remote_write: true,
        atomic: true,
    };

    /// One function: driver, its simulated NIC, and objects made by command.
    struct Side {
        d: SimDevice,
        nic: SimNic,
        buf: DmaBuf,
        mkey: Mkey,
        mr: MemoryRegion,
        cq: CqHandle,
        qp: QpHandle,
    }

    /// The data-path queues over one side's command-created objects.
    struct Queues {
        qp: QueuePair<SimUar, [bareverbs::sq::SqSlot; 64], [bareverbs::rq::RqSlot; 64]>,
        cq: CompletionQueue<256>,
    }

    fn side(fabric: &Fabric, access: MkeyAccess, fw: FwConfig) -> Side {
        let (mut d, nic) = bring_up_on(fabric, fw, DeviceConfig::default()).unwrap();
        let pd = d.alloc_pd().unwrap();
        let buf = d.allocator().alloc(BUF, 4096).unwrap();
        let mkey = /* SAFETY: the test's own buffer, never a ring, freed after teardown. */ unsafe { d.create_mkey(pd, &buf, access) }.unwrap();
        // SAFETY: `buf` is the key's buffer; it is freed only after teardown.
        let mr = unsafe { mkey.memory_region(&buf) }.unwrap();
        let cq = d.create_cq(256, CqeSize::B64).unwrap();
        let qp = d
            .create_qp(QpSpec {
                st: QpServiceType::Rc,
                pd,
                send_cqn: cq.cqn(),
                recv_cqn: cq.cqn(),
                log_sq_size: 6,
                log_rq_size: 6,
                rq_wqe_shift: 5,
                srqn: None,
                user_index: 0x42,
                max_send_wr: 32,
                max_recv_wr: 64,
            })
            .unwrap();
        Side {
            d,
            nic,
            buf,
            mkey,
            mr,
            cq,
            qp,
        }
    }

    fn queues(s: &mut Side) -> Queues {
        let uar = s.d.map_uar(s.qp.uar_index()).unwrap();
        // bf_reg_size = 2^log_bf_reg_size (FwConfig default 9 → 512 B): two
        // 256-byte halves (FACTS §4.2).
        let half = 1usize << (s.d.hca_caps().log_bf_reg_size - 1);
        let sqc = SqConfig {
            qpn: 0,
            qp_type: QpType::Rc,
            max_post: 32,
            max_gs: 1,
            max_inline_data: 64,
            sig_all: false,
            atomics: true,
            bf: BlueFlame {
                reg_offset: BF_OFFSET,
                buf_size: half,
                enabled: true,
                prefer: false,
            },
        };
        let rqc = RqConfig {
            wqe_shift: 5,
            max_gs: 2,
            max_post: 64,
        };
        // SAFETY: one queue object per handle; the queues are dropped before
        // the objects are destroyed (teardown happens after `drop`).
        unsafe {
            let qp =
                s.qp.queue_pair(
                    uar,
                    sqc,
                    rqc,
                    [bareverbs::sq::SqSlot::default(); 64],
                    [bareverbs::rq::RqSlot::default(); 64],
                )
                .unwrap();
            let mut cq = s.cq.completion_queue::<256>().unwrap();
            cq.init_ring();
            Queues { qp, cq }
        }
    }

    /// RESET → INIT → RTR → RTS by command toward `peer` (LID-routed), and the
    /// host queues follow (RQ usable from INIT, SQ from RTS).
    fn connect(s: &mut Side, q: &mut Queues, peer_qpn: u32, peer_lid: u16, psn: (u32, u32)) {
        s.d.rst2init(
            &mut s.qp,
            &Rst2Init {
                port: 1,
                remote_read: true,
                remote_write: true,
                remote_atomic: true,
                ..Default::default()
            },
        )
        .unwrap();
        q.qp.rq.as_mut().unwrap().enable();
        s.d.init2rtr(
            &mut s.qp,
            &Init2Rtr {
                mtu: 3, // 1024 B: a 5000-byte message is 5 packets
                log_msg_max: 30,
                remote_qpn: peer_qpn,
                rq_psn: psn.0,
                log_rra_max: 2,
                min_rnr_nak: 1,
                path: AddressPath {
                    rlid: peer_lid,
                    port: 1,
                    ..Default::default()
                },
            },
        )
        .unwrap();
        s.d.rtr2rts(
            &mut s.qp,
            &Rtr2Rts {
                sq_psn: psn.1,
                retry_count: 7,
                rnr_retry: 7,
                ack_timeout: 14,
                log_sra_max: 2,
            },
        )
        .unwrap();
        q.qp.sq.enable();
    }

    fn pattern(seed: u8, n: usize) -> Vec<u8> {
        (0..n)
            .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
            .collect()
    }

    fn put(s: &Side, off: usize, bytes: &[u8]) {
        assert!(off + bytes.len() <= s.buf.len);
        // SAFETY: inside the live buffer; the device is idle (auto progress:
        // every post has completed when it returns).
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), s.buf.cpu.as_ptr().add(off), bytes.len())
        }
    }

    fn get(s: &Side, off: usize, n: usize) -> Vec<u8> {
        assert!(off + n <= s.buf.len);
        let mut v = vec![0u8; n];
        // SAFETY: as in `put`.
        unsafe { std::ptr::copy_nonoverlapping(s.buf.cpu.as_ptr().add(off), v.as_mut_ptr(), n) };
        v
    }

    fn poll_all(q: &mut Queues) -> Vec<WorkCompletion> {
        let mut out = Vec::new();
        let mut wc = [WorkCompletion::default(); 16];
        loop {
            let n = match q.cq.poll(&mut q.qp, &mut wc) {
                Ok(n) => n,
                Err(e) => panic!("poll: {e:?}"),
            };
            out.extend_from_slice(&wc[..n]);
            if n < wc.len() {
                return out;
            }
        }
    }

    fn post(s: &Side, q: &mut Queues, wr: SendWr<'_>) {
        q.qp.sq.post_send(&[wr], &[s.mr]).unwrap();
    }

    /// Posts one signaled WR whose single SGE is `[off, off + len)` of the
    /// side's buffer.
    fn post_signaled(s: &Side, q: &mut Queues, wr_id: u64, op: SendOp, off: u64, len: u32) {
        let sge = [s.mr.sge(off, len).unwrap()];
        post(
            s,
            q,
            SendWr::new(wr_id, op, &sge).with_flags(SendFlags::SIGNALED),
        );
    }

    /// RDMA WRITE / READ naming `off` of the peer's key.
    fn write_to(peer: &Side, off: u64) -> SendOp {
        SendOp::Write {
            remote_addr: peer.mkey.addr() + off,
            rkey: peer.mkey.key(),
        }
    }
    fn read_from(peer: &Side, off: u64) -> SendOp {
        SendOp::Read {
            remote_addr: peer.mkey.addr() + off,
            rkey: peer.mkey.key(),
        }
    }

    fn recv(s: &Side, q: &mut Queues, wr_id: u64, off: u64, len: u32) {
        let sge = [s.mr.sge(off, len).unwrap()];
        // SAFETY: the SGE lies inside the registered, live buffer.
        unsafe {
            q.qp.rq
                .as_mut()
                .unwrap()
                .post_recv_raw(&[RecvWr { wr_id, sgl: &sge }])
        }
        .unwrap();
    }

    fn one(q: &mut Queues) -> WorkCompletion {
        let wcs = poll_all(q);
        assert_eq!(wcs.len(), 1, "{wcs:?}");
        wcs[0]
    }

    #[test]
    fn a_stale_rkey_of_a_reused_mkey_index_is_refused_by_the_responder() {
        let fabric = Fabric::new(11);
        let mut a = side(&fabric, ALL, FwConfig::default());
        let reuse = FwConfig {
            reuse_mkey_index: true,
            ..FwConfig::default()
        };
        let mut b = side(&fabric, ALL, reuse);
        // B destroys its key and makes a new one over the same buffer: the
        // model hands out the same index again.
        let pd = b.qp.spec().pd;
        let stale = b.mkey;
        b.d.destroy_mkey(stale).unwrap();
        let fresh = /* SAFETY: the test's own buffer, never a ring, freed after teardown. */ unsafe { b.d.create_mkey(pd, &b.buf, ALL) }.unwrap();
        assert_eq!(fresh.index(), stale.index(), "index reused by firmware");
        assert_ne!(fresh.key(), stale.key(), "the variant byte rotated");
        b.mkey = fresh;
        // SAFETY: `b.buf` is the key's buffer; freed only after teardown.
        b.mr = unsafe { fresh.memory_region(&b.buf) }.unwrap();

        let mut qa = queues(&mut a);
        let mut qb = queues(&mut b);
        let (la, lb) = (a.nic.lid(), b.nic.lid());
        let (an, bn) = (a.qp.qpn(), b.qp.qpn());
        connect(&mut a, &mut qa, bn, lb, (0x10, 0x20));
        connect(&mut b, &mut qb, an, la, (0x20, 0x10));

        // The new key works: WRITE A[0..512] → B[0..512].
        let data = pattern(5, 512);
        put(&a, 0, &data);
        post_signaled(&a, &mut qa, 1, write_to(&b, 0), 0, 512);
        let wc = one(&mut qa);
        assert_eq!(
            (wc.wr_id, wc.status, wc.opcode),
            (1, WcStatus::Success, WcOpcode::RdmaWrite)
        );
        assert_eq!(get(&b, 0, 512), data);

        // The stale key (same index, old variant) is refused and writes nothing.
        put(&a, 4096, &pattern(9, 512));
        post_signaled(
            &a,
            &mut qa,
            2,
            SendOp::Write {
                remote_addr: stale.addr() + 1024,
                rkey: stale.key(),
            },
            4096,
            512,
        );
        let wc = one(&mut qa);
        assert_eq!((wc.wr_id, wc.status), (2, WcStatus::RemAccessErr));
        assert_eq!(
            get(&b, 1024, 512),
            vec![0u8; 512],
            "stale key wrote nothing"
        );
        drop((qa, qb));
    }
}
