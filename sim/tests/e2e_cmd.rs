//! End to end through the firmware command interface on the simulator:
//! the core's bring-up (the code a VFIO host runs) on two simulated
//! ConnectX functions joined by a fabric, QUERY_HCA_CAP, PD / memory key /
//! CQ / QP created by command, RESET→INIT→RTR→RTS by command, then RDMA
//! WRITE, SEND/RECV and READ through the core's data-path queues over the
//! command-created rings, bytes verified at the far end; a QP moved to
//! error and flushed, reset and reused; teardown. Failure paths: an object
//! the data path cannot execute, and a memory key without remote rights.
//!
//! Expected values come from the operation performed (the bytes written),
//! the firmware configuration the test sets, or the [reference](bareverbs::reference) (statuses,
//! §5.6; states, §6.1) — never from the driver's own output.

use bareverbs::cmd::ops::HwQpState;
use bareverbs::cmd::{op, CmdStatus};
use bareverbs::cq::CompletionQueue;
use bareverbs::cqe::{CqeSize, WcOpcode, WcStatus, WorkCompletion};
use bareverbs::device::{
    AddressPath, CqHandle, DeviceConfig, DeviceError, Init2Rtr, Mkey, QpHandle, QpSpec, Rst2Init,
    Rtr2Rts,
};
use bareverbs::mr::{Access, MemoryRegion};
use bareverbs::platform::{DmaAllocator, DmaBuf, BF_OFFSET};
use bareverbs::queue_pair::QueuePair;
use bareverbs::rq::RqSlot;
use bareverbs::rq::{RecvWr, RqConfig};
use bareverbs::sizing::QpType;
use bareverbs::sq::SqSlot;
use bareverbs::sq::{BlueFlame, SendFlags, SendOp, SendWr, SqConfig};
use bareverbs_sim::fw::{bring_up_on, failure, reason, FwConfig, SimDevice, SimUar};
use bareverbs_sim::{Device as SimNic, Fabric};

const BUF: usize = 64 * 1024;
const ALL: Access = Access::LOCAL_WRITE
    .union(Access::REMOTE_WRITE)
    .union(Access::REMOTE_READ)
    .union(Access::REMOTE_ATOMIC);

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
    qp: QueuePair<SimUar, [SqSlot; 64], [RqSlot; 64]>,
    cq: CompletionQueue<256>,
}

/// An InfiniBand port: QPs here are routed by LID, the LID the driver
/// reads from the HCA vport context (the fabric assigns it).
fn ib_fw() -> FwConfig {
    let mut fw = FwConfig::default();
    fw.caps.port_type = 0;
    fw
}

/// The port's LID as the driver reads it (QUERY_HCA_VPORT_CONTEXT).
fn lid(s: &mut Side) -> u16 {
    s.d.devinfo().unwrap().ports[0].lid.unwrap()
}

fn side(fabric: &Fabric, access: Access) -> Side {
    let (mut d, nic) = bring_up_on(fabric, ib_fw(), DeviceConfig::default()).unwrap();
    let pd = d.alloc_pd().unwrap();
    let buf = d.allocator().alloc(BUF, 4096).unwrap();
    // SAFETY: the test's own buffer, freed only after teardown.
    let mkey = unsafe { d.create_mkey(pd, &buf, access) }.unwrap();
    // SAFETY: `buf` is the key's buffer; it is freed only after teardown.
    let mr = unsafe { mkey.memory_region(&buf) }.unwrap();
    let cq = d.create_cq(256, CqeSize::B64).unwrap();
    let qp = d
        .create_qp(QpSpec {
            qp_type: QpType::Rc,
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
    // 256-byte halves (ref §4.2).
    let half = 1usize << (s.d.hca_caps().log_bf_reg_size - 1);
    let sqc = SqConfig::new(QpType::Rc, 32, 1)
        .inline(64)
        .atomics(true)
        .blueflame(BlueFlame {
            reg_offset: BF_OFFSET,
            buf_size: half,
            enabled: true,
            prefer: false,
        });
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
                [SqSlot::default(); 64],
                [RqSlot::default(); 64],
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
fn write_send_read_error_reset_reuse_teardown_by_command() {
    let fabric = Fabric::new(3);
    let mut a = side(&fabric, ALL);
    let mut b = side(&fabric, ALL);

    // Caps came from QUERY_HCA_CAP: FwConfig's log_max_qp_sz 15 →
    // 32768 WQEBBs; max_wqe_sz_sq 1024 (ref §3.11).
    let caps = a.d.device_caps();
    assert_eq!(
        caps.max_send_wqebb,
        1 << FwConfig::default().caps.log_max_qp_sz
    );
    assert_eq!(caps.max_sq_desc_sz, 1024);
    // Each side's driver numbers are the simulated NIC's numbers.
    assert_ne!(a.nic.lid(), b.nic.lid());
    assert_eq!(
        a.nic.qp_state(a.qp.qpn()),
        Some(bareverbs::qp::QpState::Reset)
    );

    let mut qa = queues(&mut a);
    let mut qb = queues(&mut b);
    let (la, lb) = (lid(&mut a), lid(&mut b));
    assert_eq!((la, lb), (a.nic.lid(), b.nic.lid()), "the fabric's LIDs");
    let (an, bn) = (a.qp.qpn(), b.qp.qpn());
    connect(&mut a, &mut qa, bn, lb, (0x10, 0x20));
    connect(&mut b, &mut qb, an, la, (0x20, 0x10));
    assert_eq!(a.d.query_qp(&mut a.qp).unwrap().state, HwQpState::Rts);
    assert_eq!(a.nic.qp_state(an), Some(bareverbs::qp::QpState::Rts));

    // RDMA WRITE, 5000 bytes: A[0..] → B[8192..].
    let data = pattern(1, 5000);
    put(&a, 0, &data);
    post_signaled(&a, &mut qa, 11, write_to(&b, 8192), 0, 5000);
    let wc = one(&mut qa);
    assert_eq!(
        (wc.wr_id, wc.status, wc.opcode),
        (11, WcStatus::Success, WcOpcode::RdmaWrite)
    );
    assert_eq!(get(&b, 8192, 5000), data, "WRITE bytes at the responder");

    // SEND / RECV: B posts a receive, A sends 3000 bytes.
    recv(&b, &mut qb, 21, 16384, 4096);
    let data = pattern(2, 3000);
    put(&a, 4096 * 2, &data);
    post_signaled(&a, &mut qa, 12, SendOp::Send, 8192, 3000);
    let wc = one(&mut qa);
    assert_eq!(
        (wc.wr_id, wc.status, wc.opcode),
        (12, WcStatus::Success, WcOpcode::Send)
    );
    let wc = one(&mut qb);
    assert_eq!(
        (wc.wr_id, wc.status, wc.opcode, wc.byte_len, wc.qp_num),
        (21, WcStatus::Success, WcOpcode::Recv, 3000, bn)
    );
    assert_eq!(
        get(&b, 16384, 3000),
        data,
        "SEND bytes in the receive buffer"
    );

    // RDMA READ, 2000 bytes: B[24576..] → A[32768..].
    let data = pattern(3, 2000);
    put(&b, 24576, &data);
    post_signaled(&a, &mut qa, 13, read_from(&b, 24576), 32768, 2000);
    let wc = one(&mut qa);
    assert_eq!(
        (wc.wr_id, wc.status, wc.opcode, wc.byte_len),
        (13, WcStatus::Success, WcOpcode::RdmaRead, 2000)
    );
    assert_eq!(get(&a, 32768, 2000), data, "READ bytes at the requester");

    // An inline WRITE goes through BlueFlame (64-byte chunks on the UAR,
    // then the flush), still landing byte for byte.
    let data = pattern(4, 48);
    put(&a, 40960, &data);
    let sge = [a.mr.sge(40960, 48).unwrap()];
    let wr = SendWr::new(14, write_to(&b, 49152), &sge)
        .with_flags(SendFlags::SIGNALED | SendFlags::INLINE);
    post(&a, &mut qa, wr);
    assert_eq!(one(&mut qa).status, WcStatus::Success);
    assert_eq!(get(&b, 49152, 48), data, "inline WRITE via BlueFlame");
    let bf = a.nic.qp_counters(an).unwrap().bf_writes;
    assert!(bf >= 1, "the inline post used BlueFlame ({bf} BF writes)");

    // Error and flush: with the fabric paused, A posts a receive and a
    // WRITE, then 2ERR_QP by command. Both complete, exactly once, with
    // WR_FLUSH_ERR (ref §5.6), in posting order per queue.
    fabric.set_auto_progress(false);
    recv(&a, &mut qa, 31, 0, 64);
    post_signaled(&a, &mut qa, 32, write_to(&b, 0), 0, 64);
    a.d.qp_to_err(&mut a.qp).unwrap();
    fabric.set_auto_progress(true);
    fabric.run_until_idle();
    assert_eq!(a.nic.qp_state(an), Some(bareverbs::qp::QpState::Err));
    let mut wcs = poll_all(&mut qa);
    wcs.sort_by_key(|w| w.wr_id);
    let got: Vec<(u64, WcStatus)> = wcs.iter().map(|w| (w.wr_id, w.status)).collect();
    assert_eq!(
        got,
        vec![(31, WcStatus::WrFlushErr), (32, WcStatus::WrFlushErr)]
    );
    assert!(poll_all(&mut qb).is_empty(), "nothing reached B's CQ");

    // Back to RESET (both ends, since B's PSNs moved on) and reused.
    for (s, q) in [(&mut a, &mut qa), (&mut b, &mut qb)] {
        s.d.qp_to_reset(&mut s.qp).unwrap();
        // SAFETY: the QP was moved to RESET by command just before.
        unsafe {
            q.qp.sq.reset();
            q.qp.rq.as_mut().unwrap().reset();
        }
        assert_eq!(s.d.query_qp(&mut s.qp).unwrap().state, HwQpState::Reset);
    }
    connect(&mut a, &mut qa, bn, lb, (0x500, 0x700));
    connect(&mut b, &mut qb, an, la, (0x700, 0x500));
    recv(&a, &mut qa, 41, 0, 4096);
    let data = pattern(5, 1500);
    put(&b, 0, &data);
    post_signaled(&b, &mut qb, 42, SendOp::Send, 0, 1500);
    assert_eq!(one(&mut qb).status, WcStatus::Success);
    let wc = one(&mut qa);
    assert_eq!(
        (wc.wr_id, wc.status, wc.byte_len),
        (41, WcStatus::Success, 1500)
    );
    assert_eq!(get(&a, 0, 1500), data, "SEND after reset and reuse");

    // Teardown: queues first, then every object by command, then the HCA.
    drop((qa, qb));
    for s in [a, b] {
        let Side { d, buf, .. } = s;
        let (rep, bar, _clock, alloc) = d.teardown();
        assert_eq!(rep.first_error, None);
        assert_eq!(rep.pages_leaked, 0);
        assert!(bar.fw().objects().is_empty());
        // SAFETY: the key over `buf` was destroyed at teardown.
        unsafe { alloc.free(buf) };
        assert_eq!(alloc.0.allocated_bytes(), 0, "every DMA byte returned");
    }
}

#[test]
fn remote_rights_of_a_command_created_key_are_enforced() {
    let fabric = Fabric::new(5);
    let mut a = side(&fabric, ALL);
    let read_only = ALL.difference(Access::REMOTE_WRITE.union(Access::REMOTE_ATOMIC));
    let mut b = side(&fabric, read_only);
    let mut qa = queues(&mut a);
    let mut qb = queues(&mut b);
    let (an, bn, la, lb) = (a.qp.qpn(), b.qp.qpn(), lid(&mut a), lid(&mut b));
    connect(&mut a, &mut qa, bn, lb, (1, 2));
    connect(&mut b, &mut qb, an, la, (2, 1));

    // READ is granted (rr), WRITE is not (no rw): REM_ACCESS_ERR, and the
    // target bytes stay as they were.
    put(&b, 0, &[7u8; 256]);
    post_signaled(&a, &mut qa, 1, read_from(&b, 0), 0, 256);
    assert_eq!(one(&mut qa).status, WcStatus::Success);
    assert_eq!(get(&a, 0, 256), vec![7u8; 256]);
    put(&a, 0, &[9u8; 256]);
    post_signaled(&a, &mut qa, 2, write_to(&b, 0), 0, 256);
    let wc = one(&mut qa);
    assert_eq!((wc.wr_id, wc.status), (2, WcStatus::RemAccessErr));
    assert_eq!(
        get(&b, 0, 256),
        vec![7u8; 256],
        "a refused WRITE changes nothing"
    );
    assert_eq!(a.nic.qp_state(an), Some(bareverbs::qp::QpState::Err));
    drop((qa, qb));
}

#[test]
fn objects_the_data_path_cannot_run_are_refused_by_command() {
    let fabric = Fabric::new(9);
    let (mut d, _nic) = bring_up_on(&fabric, FwConfig::default(), DeviceConfig::default()).unwrap();
    // 128-byte CQEs pass firmware's checks (cqe_sz ≤ 1) but the simulated
    // data path writes 64-byte CQEs only: the command fails, typed, and no
    // CQ exists afterwards.
    let e = d.create_cq(64, CqeSize::B128).unwrap_err();
    assert_eq!(
        e,
        DeviceError::Cmd(failure(
            op::CREATE_CQ,
            CmdStatus::BadParam,
            reason::DATA_PATH
        ))
    );
    {
        let bar = d.bar();
        let f = bar.fw();
        assert!(f.objects().cqs.is_empty());
        assert_eq!(f.refusals, vec!["128-byte CQEs are not simulated"]);
    }
    // The 64-byte variant of the same request works.
    assert!(d.create_cq(64, CqeSize::B64).is_ok());
    let (rep, ..) = d.teardown();
    assert_eq!(rep.first_error, None);
}

mod selftest {
    use super::*;
    use bareverbs::selftest::{SelfTestError, SelfTestOptions, Step};
    use bareverbs_sim::FaultPlan;

    fn no_objects_left(d: &SimDevice) {
        let bar = d.bar();
        let f = bar.fw();
        let o = f.objects();
        assert!(o.qps.is_empty() && o.cqs.is_empty() && o.mkeys.is_empty() && o.pds.is_empty());
    }

    #[test]
    fn loopback_selftest_moves_and_verifies_bytes_with_doorbell_and_blueflame() {
        for bf in [false, true] {
            let fabric = Fabric::new(1);
            let (mut d, nic) =
                bring_up_on(&fabric, FwConfig::default(), DeviceConfig::default()).unwrap();
            let before = d.allocator().0.allocated_bytes();
            let opts = SelfTestOptions {
                blueflame: bf,
                ..Default::default()
            };
            let r = d.loopback_selftest(opts).unwrap();
            assert_eq!(r.verified_bytes, (4096, 1000, 4096));
            assert_eq!(r.completions, 4);
            assert_ne!(r.qpns.0, r.qpns.1);
            // The traffic really crossed the simulated NIC: 4096 B WRITE +
            // 1000 B SEND + 4096 B READ response were placed by it.
            let c = nic.counters();
            assert!(c.cqes >= 4, "{c:?}");
            assert_eq!(c.bf_writes > 0, bf, "BlueFlame used iff asked ({c:?})");
            no_objects_left(&d);
            assert_eq!(d.allocator().0.allocated_bytes(), before, "buffers freed");
            let (rep, ..) = d.teardown();
            assert_eq!(rep.first_error, None);
        }
    }

    #[test]
    fn a_port_that_drops_everything_fails_the_write_step_typed_and_cleans_up() {
        let fabric = Fabric::new(2);
        fabric.set_faults(FaultPlan::lossy(1.0));
        let (mut d, _nic) =
            bring_up_on(&fabric, FwConfig::default(), DeviceConfig::default()).unwrap();
        let e = d.loopback_selftest(SelfTestOptions::default()).unwrap_err();
        match e {
            SelfTestError::Completion { step, wc } => {
                assert_eq!(step, Step::Write);
                // retry_count 7 exhausted (ref §5.6 TRANSPORT_RETRY_EXC).
                assert_eq!(wc.status, WcStatus::RetryExcErr);
            }
            other => panic!("unexpected {other}"),
        }
        assert!(
            e.to_string()
                .starts_with("RDMA WRITE: completion RETRY_EXC_ERR"),
            "{e}"
        );
        no_objects_left(&d);
    }

    #[test]
    fn a_device_without_force_loopback_rc_is_refused_before_anything_is_created() {
        let fabric = Fabric::new(4);
        let fw = FwConfig {
            roce_cap_byte0: 0x0c, // fl only while RoCE is disabled
            ..FwConfig::default()
        };
        let (mut d, _nic) = bring_up_on(&fabric, fw, DeviceConfig::default()).unwrap();
        assert_eq!(d.force_loopback_rc(), Some(false));
        let before = d.bar().fw().log.len();
        let e = d.loopback_selftest(SelfTestOptions::default()).unwrap_err();
        assert_eq!(e, SelfTestError::LoopbackUnsupported);
        assert!(e.to_string().contains("fl_rc_qp_when_roce_enabled"), "{e}");
        assert_eq!(d.bar().fw().log.len(), before, "no command was sent");
        no_objects_left(&d);
    }

    #[test]
    fn a_device_that_never_completes_times_out_on_the_device_clock() {
        let fabric = Fabric::new(3);
        fabric.set_auto_progress(false); // nothing runs unless driven
        let (mut d, _nic) =
            bring_up_on(&fabric, FwConfig::default(), DeviceConfig::default()).unwrap();
        let opts = SelfTestOptions {
            timeout_us: 500,
            ..Default::default()
        };
        let e = d.loopback_selftest(opts).unwrap_err();
        match e {
            SelfTestError::Timeout {
                step,
                what,
                waited_us,
            } => {
                assert_eq!((step, what), (Step::Write, "WRITE"));
                assert!(waited_us >= 500);
            }
            other => panic!("unexpected {other}"),
        }
        no_objects_left(&d);
    }
}
