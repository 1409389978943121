//! The UDP wire between two fabrics in two threads: each thread brings up
//! its own simulated ConnectX by firmware command, wires its port at a UDP
//! address on loopback and programs its GID table with the wire's GID; the
//! QPs connect over RoCE v2 paths (the peer's GID and MAC, as a key
//! exchange would give them). Every byte is verified, nothing is lost or
//! duplicated under a lossy fault plan, and what a real RoCE NIC drops
//! (a GID it does not hold, a QP that is not connected to the sender) is
//! dropped and counted, so the requester's retries run out.

use bareverbs::cmd::ops::{IbMtu, RoceAddress, RoceVersion};
use bareverbs::cqe::{WcOpcode, WcStatus, WorkCompletion};
use bareverbs::device::DeviceConfig;
use bareverbs::sizing::QpType;
use bareverbs::sq::SendOp;
use bareverbs::verbs::*;
use bareverbs_sim::fw::{bring_up_wired, FwConfig, SimUar};
use bareverbs_sim::{Fabric, FaultPlan, WireSocket, WireStats};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::time::{Duration, Instant};

type Qp<'a> = QueuePair<'a, SimUar, 64, 16>;
type Ctx =
    Context<bareverbs_sim::fw::SimBar, bareverbs_sim::fw::FakeClock, bareverbs_sim::fw::SharedDma>;

/// The GID index each side sends from (RoCE v2).
const SGID: u16 = 3;
/// Bytes of each side's buffer.
const BUF: usize = 1 << 20;
/// The longest a test waits for anything.
const LIMIT: Duration = Duration::from_secs(20);

/// What a side tells the other: its QP and the buffer it exposes.
#[derive(Clone, Copy, Debug)]
struct Hello {
    qpn: u32,
    gid: [u8; 16],
    mac: [u8; 6],
    addr: u64,
    rkey: u32,
}

/// What `s` tells the peer of `qp` and of all of `mr`.
fn hello(s: &Side, qp: &Qp, mr: &MemoryRegion) -> Hello {
    let r = mr.remote(0, BUF as u64).unwrap();
    Hello {
        qpn: qp.qp_num(),
        gid: s.gid,
        mac: s.mac,
        addr: r.addr,
        rkey: r.rkey,
    }
}

/// One wired side: its fabric, its device as a verbs context, its wire
/// identity.
struct Side {
    fabric: Fabric,
    c: Ctx,
    gid: [u8; 16],
    mac: [u8; 6],
}

/// A wired device on a new fabric; its GID entry is programmed unless
/// `program` is false (a port whose table does not hold its wire GID).
fn side(seed: u64, program: bool) -> Side {
    let fabric = Fabric::new(seed);
    let sock = WireSocket::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0)).unwrap();
    let w = bring_up_wired(&fabric, sock, FwConfig::default(), DeviceConfig::default()).unwrap();
    let (d, gid, mac) = (w.dev, w.gid, w.mac);
    let c = Context::new(d);
    // A port that does not hold its wire GID holds another one at the
    // same index (so its QPs can still send from it).
    let mut held = gid;
    if !program {
        held[15] ^= 0x5a;
    }
    let e = RoceAddress {
        gid: held,
        mac,
        vlan: None,
        version: RoceVersion::V2,
    };
    // SAFETY: programs a GID entry no QP uses yet.
    unsafe { c.with_device(|d| d.set_gid(SGID, &e)) }.unwrap();
    Side {
        fabric,
        c,
        gid,
        mac,
    }
}

/// Brings `qp` to INIT, where receives can be posted.
fn to_init(qp: &mut Qp) {
    let rights = Access::REMOTE_WRITE | Access::REMOTE_READ | Access::REMOTE_ATOMIC;
    qp.to_init(&InitAttr::new(1, rights)).unwrap();
}

/// How long a requester keeps trying: `(retry_cnt, timeout)`.
///
/// Each wire test runs alone (see [`one_at_a_time`]) but shares the
/// machine with other test binaries, and a debug build takes tens of
/// milliseconds to move a MiB: a run that must succeed waits ~67 ms per
/// try (timeout 14, as perftest), seven times; a run whose packets are
/// dropped on purpose gives up after three tries of ~1 ms.
#[derive(Clone, Copy)]
enum Patience {
    /// Must succeed.
    Succeed,
    /// Must succeed with 5 % of the packets lost each way: shorter
    /// tries, so retransmits are quick.
    Lossy,
    /// Every packet is dropped: give up fast.
    GiveUp,
}

impl Patience {
    /// The fault plan both sides run with.
    fn faults(self) -> Option<FaultPlan> {
        matches!(self, Patience::Lossy).then(|| FaultPlan::lossy(0.05))
    }
    fn retry_timeout(self) -> (u8, u8) {
        match self {
            Patience::Succeed => (7, 14),
            Patience::Lossy => (7, 12),
            Patience::GiveUp => (2, 8),
        }
    }
}

/// Wire tests spin two threads each: run them one at a time so that a
/// requester's retry timer never fires because its responder could not
/// get a core.
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// Brings `qp` from INIT to RTS toward `peer` (its QP `qpn`) over the wire.
fn connect(qp: &mut Qp, peer: &Hello, patience: Patience) {
    let (retry, timeout) = patience.retry_timeout();
    let ah = AddressHandle::roce(1, peer.gid, peer.mac, SGID as u8);
    let mut rtr = RtrAttr::new(IbMtu::Mtu1024, peer.qpn, 0, ah);
    rtr.max_dest_rd_atomic = 4;
    qp.to_rtr(&rtr).unwrap();
    let mut rts = RtsAttr::new(0);
    rts.retry_cnt = retry;
    rts.timeout = timeout; // 4.096 µs × 2^timeout
    rts.max_rd_atomic = 4;
    qp.to_rts(&rts).unwrap();
}

/// Polls `cq` for `n` completions, driving the fabric meanwhile.
fn completions(f: &Fabric, cq: &CompletionQueue, qp: &mut Qp, n: usize) -> Vec<WorkCompletion> {
    let mut out = Vec::new();
    let mut wc = [WorkCompletion::default(); 16];
    let t = Instant::now();
    while out.len() < n {
        f.step();
        let k = cq.poll(qp, &mut wc).unwrap();
        out.extend_from_slice(&wc[..k]);
        assert!(t.elapsed() < LIMIT, "{} of {n} completions", out.len());
    }
    out
}

/// Keeps the fabric running until the other side says it is done, then
/// takes in what is still in the socket (what the requester sent last
/// reached this host before it said so: loopback delivers at once).
fn serve(f: &Fabric, done: &Receiver<()>) {
    let t = Instant::now();
    while done.try_recv().is_err() {
        if !f.step() {
            std::thread::sleep(Duration::from_micros(20));
        }
        assert!(t.elapsed() < LIMIT, "the requester never finished");
    }
    while f.step() {}
}

/// What the responder thread ends with: its buffer and its wire's counts.
type Served = (Vec<u8>, WireStats);

/// Runs a responder thread (B) and a requester (A, this thread) over the
/// wire. B exposes its buffer (filled by `init_b`, with `recvs` receives
/// of 4 KiB posted); A runs `work` with its QP toward B and returns what
/// it finds. `tweak` may change the hello A connects with.
fn run_pair<R>(
    seed: u64,
    patience: Patience,
    b_programs_gid: bool,
    recvs: usize,
    init_b: fn(&mut [u8]),
    tweak: fn(&mut Hello),
    work: impl for<'c> FnOnce(&Side, &CompletionQueue, &mut Qp<'c>, &'c MemoryRegion<'c>, &Hello) -> R,
) -> (R, Served, WireStats) {
    let (to_a, from_b): (Sender<Hello>, Receiver<Hello>) = channel();
    let (to_b, from_a): (Sender<Hello>, Receiver<Hello>) = channel();
    let (done_tx, done_rx) = channel::<()>();
    let (ready_tx, ready_rx) = channel::<()>();
    let _alone = one_at_a_time();
    let faults = patience.faults();
    let faults_b = faults.clone();
    let b = std::thread::spawn(move || -> Served {
        let faults = faults_b;
        let s = side(seed + 1, b_programs_gid);
        if let Some(f) = faults {
            s.fabric.set_faults(f);
        }
        let rights = Access::LOCAL_WRITE
            | Access::REMOTE_WRITE
            | Access::REMOTE_READ
            | Access::REMOTE_ATOMIC;
        let pd = s.c.alloc_pd().unwrap();
        let buf = s.c.alloc_buffer(BUF).unwrap();
        let mut init = vec![0u8; BUF];
        init_b(&mut init);
        buf.write(0, &init).unwrap();
        let mr = s.c.reg_mr(&pd, &buf, rights).unwrap();
        let cq = s.c.create_cq(256).unwrap();
        let cap = QpCap::new(16, 16, 1, 1);
        let mut qp: Qp =
            s.c.create_qp(&pd, &QpInitAttr::new(QpType::Rc, &cq, &cq, cap))
                .unwrap();
        to_init(&mut qp);
        for i in 0..recvs {
            let sge = [mr.sge(i as u64 * 4096, 4096).unwrap()];
            qp.post_recv(&[RecvWr::new(i as u64, &sge)]).unwrap();
        }
        to_a.send(hello(&s, &qp, &mr)).unwrap();
        let a = from_a.recv().unwrap();
        connect(&mut qp, &a, Patience::Succeed);
        ready_tx.send(()).unwrap();
        serve(&s.fabric, &done_rx);
        let mut out = vec![0u8; BUF];
        buf.read(0, &mut out).unwrap();
        (out, s.fabric.wire_stats().unwrap())
    });
    let s = side(seed, true);
    if let Some(f) = faults {
        s.fabric.set_faults(f);
    }
    let rights = Access::LOCAL_WRITE | Access::REMOTE_WRITE | Access::REMOTE_READ;
    let pd = s.c.alloc_pd().unwrap();
    let buf = s.c.alloc_buffer(BUF).unwrap();
    let mr = s.c.reg_mr(&pd, &buf, rights).unwrap();
    let cq = s.c.create_cq(256).unwrap();
    let cap = QpCap::new(16, 16, 1, 1);
    let mut qp: Qp =
        s.c.create_qp(&pd, &QpInitAttr::new(QpType::Rc, &cq, &cq, cap))
            .unwrap();
    let mut peer = from_b.recv_timeout(LIMIT).unwrap();
    to_b.send(hello(&s, &qp, &mr)).unwrap();
    tweak(&mut peer);
    to_init(&mut qp);
    connect(&mut qp, &peer, patience);
    // B answers only once it is at RTS (as a key exchange's last message).
    ready_rx.recv_timeout(LIMIT).unwrap();
    let got = work(&s, &cq, &mut qp, &mr, &peer);
    done_tx.send(()).unwrap();
    let served = b.join().unwrap();
    (got, served, s.fabric.wire_stats().unwrap())
}

fn pattern(seed: u32, n: usize) -> Vec<u8> {
    (0..n as u32)
        .map(|i| (i.wrapping_mul(31) ^ seed) as u8)
        .collect()
}

fn no_tweak(_: &mut Hello) {}
fn zeros(_: &mut [u8]) {}

/// WRITE, SEND/RECV, READ and fetch-and-add across the wire, every byte
/// and value checked on both sides.
#[test]
fn every_operation_across_the_wire() {
    fn init(b: &mut [u8]) {
        b[512 * 1024..512 * 1024 + 4096].copy_from_slice(&pattern(7, 4096));
        b[900_000..900_008].copy_from_slice(&40u64.to_be_bytes());
    }
    let (wcs, (b, stats_b), stats_a) = run_pair(
        10,
        Patience::Succeed,
        true,
        1,
        init,
        no_tweak,
        |s, cq, qp, mr, peer| {
            let ba = mr.buffer();
            ba.write(0, &pattern(1, 4096)).unwrap();
            ba.write(8192, &pattern(2, 4096)).unwrap();
            let w = SendOp::Write {
                remote_addr: peer.addr + 65536,
                rkey: peer.rkey,
            };
            let rd = SendOp::Read {
                remote_addr: peer.addr + 512 * 1024,
                rkey: peer.rkey,
            };
            let fa = SendOp::FetchAdd {
                remote_addr: peer.addr + 900_000,
                rkey: peer.rkey,
                add: 2,
            };
            let src = [mr.sge(0, 4096).unwrap()];
            let snd = [mr.sge(8192, 4096).unwrap()];
            let dst = [mr.sge(16384, 4096).unwrap()];
            let old = [mr.sge(32768, 8).unwrap()];
            qp.post_send(&[
                SendWr::new(1, w, &src).signaled(),
                SendWr::new(2, SendOp::Send, &snd).signaled(),
                SendWr::new(3, rd, &dst).signaled(),
                SendWr::new(4, fa, &old).signaled(),
            ])
            .unwrap();
            let wcs = completions(&s.fabric, cq, qp, 4);
            let mut read = vec![0u8; 4096];
            ba.read(16384, &mut read).unwrap();
            assert_eq!(read, pattern(7, 4096), "READ brought B's bytes");
            let mut v = [0u8; 8];
            ba.read(32768, &mut v).unwrap();
            assert_eq!(
                u64::from_be_bytes(v),
                40,
                "fetch-and-add returned the old value"
            );
            wcs
        },
    );
    let got: Vec<(u64, WcStatus)> = wcs.iter().map(|w| (w.wr_id, w.status)).collect();
    assert_eq!(
        got,
        (1..=4).map(|i| (i, WcStatus::Success)).collect::<Vec<_>>()
    );
    assert_eq!(wcs[3].opcode, WcOpcode::FetchAdd);
    assert_eq!(
        &b[65536..65536 + 4096],
        &pattern(1, 4096)[..],
        "WRITE landed"
    );
    assert_eq!(
        &b[..4096],
        &pattern(2, 4096)[..],
        "SEND landed in the receive"
    );
    assert_eq!(&b[900_000..900_008], &42u64.to_be_bytes());
    assert!(
        stats_a.packets_tx >= 4 && stats_b.packets_rx >= 4,
        "{stats_a:?} {stats_b:?}"
    );
    assert_eq!(
        stats_b.dropped_bad + stats_b.dropped_gid + stats_b.dropped_qpn,
        0
    );
}

/// A 1 MiB WRITE crosses as 18 datagrams and is put back together.
#[test]
fn a_large_write_is_fragmented_and_reassembled() {
    let (wc, (b, stats_b), stats_a) = run_pair(
        20,
        Patience::Succeed,
        true,
        0,
        zeros,
        no_tweak,
        |s, cq, qp, mr, peer| {
            let data = pattern(3, BUF);
            mr.buffer().write(0, &data).unwrap();
            let w = SendOp::Write {
                remote_addr: peer.addr,
                rkey: peer.rkey,
            };
            qp.post_send(&[SendWr::new(7, w, &[mr.sge(0, BUF as u32).unwrap()]).signaled()])
                .unwrap();
            completions(&s.fabric, cq, qp, 1)[0]
        },
    );
    assert_eq!(
        (wc.wr_id, wc.status),
        (7, WcStatus::Success),
        "{stats_a:?} {stats_b:?}"
    );
    assert_eq!(b, pattern(3, BUF));
    assert!(stats_a.datagrams_tx >= 18, "{stats_a:?}");
    assert_eq!(stats_b.dropped_incomplete, 0);
}

/// With 5 % of the packets lost each way, RC retransmission still
/// delivers every byte of 300 WRITEs, each completion exactly once.
#[test]
fn a_lossy_wire_loses_nothing() {
    let ((ids, retries), (b, _), _) = run_pair(
        30,
        Patience::Lossy,
        true,
        0,
        zeros,
        no_tweak,
        |s, cq, qp, mr, peer| {
            let n = 300usize;
            let mut ids = Vec::new();
            for i in 0..n {
                let off = (i % 200) * 4096;
                mr.buffer().write(off, &pattern(i as u32, 4096)).unwrap();
                let w = SendOp::Write {
                    remote_addr: peer.addr + off as u64,
                    rkey: peer.rkey,
                };
                qp.post_send(&[
                    SendWr::new(i as u64, w, &[mr.sge(off as u64, 4096).unwrap()]).signaled(),
                ])
                .unwrap();
                // One at a time: the slot's bytes stay until it completed.
                for wc in completions(&s.fabric, cq, qp, 1) {
                    assert_eq!(wc.status, WcStatus::Success, "{wc:?}");
                    ids.push(wc.wr_id);
                }
            }
            (ids, s.fabric.wire_stats().unwrap().packets_tx)
        },
    );
    assert_eq!(ids, (0..300u64).collect::<Vec<_>>(), "each once, in order");
    for i in 100..300usize {
        let off = (i % 200) * 4096;
        assert_eq!(
            &b[off..off + 4096],
            &pattern(i as u32, 4096)[..],
            "WRITE {i}"
        );
    }
    assert!(
        retries > 300,
        "losses were retransmitted ({retries} packets)"
    );
}

/// A GID the peer's table does not hold, or a QP that is not connected
/// to the sender, is dropped by the peer's port: the requester's retries
/// run out, and nothing is written.
#[test]
fn what_a_roce_nic_drops_is_dropped() {
    fn write<'c>(
        s: &Side,
        cq: &CompletionQueue,
        qp: &mut Qp<'c>,
        mr: &'c MemoryRegion<'c>,
        peer: &Hello,
    ) -> WcStatus {
        mr.buffer().write(0, &pattern(9, 256)).unwrap();
        let w = SendOp::Write {
            remote_addr: peer.addr,
            rkey: peer.rkey,
        };
        qp.post_send(&[SendWr::new(1, w, &[mr.sge(0, 256).unwrap()]).signaled()])
            .unwrap();
        completions(&s.fabric, cq, qp, 1)[0].status
    }
    // B never programmed its wire GID.
    let (st, (b, stats_b), sa) = run_pair(40, Patience::GiveUp, false, 0, zeros, no_tweak, write);
    assert_eq!(st, WcStatus::RetryExcErr);
    assert!(stats_b.dropped_gid > 0, "{stats_b:?} {sa:?}");
    assert_eq!(&b[..256], &[0u8; 256][..]);
    // A names a QP of B that does not exist.
    fn other_qp(h: &mut Hello) {
        h.qpn += 1;
    }
    let (st, (b, stats_b), _) = run_pair(50, Patience::GiveUp, true, 0, zeros, other_qp, write);
    assert_eq!(st, WcStatus::RetryExcErr);
    assert!(stats_b.dropped_qpn > 0, "{stats_b:?}");
    assert_eq!(&b[..256], &[0u8; 256][..]);
}

/// A port's GID names its UDP address, and peers check each datagram's
/// source against it: an unspecified address would name no one, so it is
/// refused when the socket is bound.
#[test]
fn an_unspecified_address_is_refused() {
    let e =
        WireSocket::bind(SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0)).expect_err("0.0.0.0 refused");
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
    assert!(e.to_string().contains("0.0.0.0"), "{e}");
}
