//! The simulator's devices as adversaries: CQEs the simulated device wrote
//! are rewritten in the ring before the host polls them (repeated and
//! phantom counters), and QPs go through error → reset → reuse with their
//! flush CQEs still in the CQ. Every posted WR completes exactly once or
//! the bad CQE is a typed error; the queues keep working.

use bareverbs::cq::{CompletionReject, PollError};
use bareverbs::cqe::{WcStatus, WorkCompletion};
use bareverbs::qp::{QpAttrMask as M, QpState, QpType};
use bareverbs::sq::{SendFlags, SendOp, SendWr, Sge};
use bareverbs_sim::harness::{connect, ConnOpts, Endpoint, EpConfig};
use bareverbs_sim::{Fabric, QpAttr};

const CQ: usize = 128;
type Ep = Endpoint<64, 64, CQ>;

fn pair() -> (Fabric, Ep, Ep) {
    let f = Fabric::new(5);
    let (da, db) = (f.add_device(), f.add_device());
    let mut a = Ep::new(&da, &EpConfig::new(QpType::Rc)).unwrap();
    let mut b = Ep::new(&db, &EpConfig::new(QpType::Rc)).unwrap();
    connect(&mut a, &mut b, &ConnOpts::default()).unwrap();
    (f, a, b)
}

/// Posts one signaled RDMA WRITE of 8 bytes from `a` offset `off` to `b`
/// at the same offset (`bad_rkey`: a remote access error).
fn write(a: &mut Ep, b: &Ep, wr_id: u64, off: u64, bad_rkey: bool) {
    let s: [Sge; 1] = [a.sge(off, 8)];
    let rkey = b.mr().rkey() ^ if bad_rkey { 0x100 } else { 0 };
    let wr = SendWr::new(
        wr_id,
        SendOp::Write {
            remote_addr: b.addr(off),
            rkey,
        },
        &s,
    )
    .with_flags(SendFlags::SIGNALED);
    let mr = *a.mr();
    a.post_send(&[wr], &[mr]).unwrap();
}

/// Overwrites the `wqe_counter` of the CQE at consumer position `pos` of
/// `e`'s CQ (as a buggy or hostile device would have written it).
fn rewrite_counter(e: &Ep, pos: u32, counter: u16) {
    let ring = e.cq().ring();
    let off = (pos as usize & (CQ - 1)) * 64 + 60;
    for (i, b) in counter.to_be_bytes().iter().enumerate() {
        // SAFETY: inside the live CQ ring; raw volatile store.
        unsafe { core::ptr::write_volatile(ring.cpu.as_ptr().add(off + i), *b) };
    }
}

fn counter_at(e: &Ep, pos: u32) -> u16 {
    let ring = e.cq().ring();
    let off = (pos as usize & (CQ - 1)) * 64 + 60;
    // SAFETY: inside the live CQ ring; raw volatile loads.
    let b = unsafe {
        [
            core::ptr::read_volatile(ring.cpu.as_ptr().add(off)),
            core::ptr::read_volatile(ring.cpu.as_ptr().add(off + 1)),
        ]
    };
    u16::from_be_bytes(b)
}

/// Polls everything, keeping completions and errors.
fn drain(e: &mut Ep) -> (Vec<WorkCompletion>, Vec<PollError>) {
    let (mut wcs, mut errs) = (Vec::new(), Vec::new());
    let mut out = [WorkCompletion::default(); 8];
    for _ in 0..256 {
        match e.try_poll(&mut out) {
            Ok(0) => break,
            Ok(n) => wcs.extend_from_slice(&out[..n]),
            Err(x) => {
                wcs.extend_from_slice(&out[..x.completions()]);
                errs.push(x);
            }
        }
    }
    (wcs, errs)
}

fn ids(w: &[WorkCompletion]) -> Vec<u64> {
    w.iter().map(|w| w.wr_id).collect()
}

fn why(e: &PollError) -> CompletionReject {
    match e {
        PollError::Rejected { why, .. } => *why,
        other => panic!("expected Rejected, got {other:?}"),
    }
}

fn reset(e: &mut Ep) {
    e.modify(
        &QpAttr {
            qp_state: QpState::Reset,
            ..QpAttr::default()
        },
        M::STATE,
    )
    .unwrap();
}

#[test]
fn rewritten_cqes_on_a_live_cq_are_rejected_and_the_qp_keeps_working() {
    let (_f, mut a, b) = pair();
    a.write(0, &[0x11; 64]);
    let ci = a.cq().consumer_index();
    write(&mut a, &b, 1, 0, false);
    write(&mut a, &b, 2, 8, false);
    // The second CQE repeats the first one's counter.
    let first = counter_at(&a, ci);
    rewrite_counter(&a, ci + 1, first);
    let (wcs, errs) = drain(&mut a);
    assert_eq!(ids(&wcs), [1]);
    assert_eq!(errs.len(), 1);
    assert_eq!(why(&errs[0]), CompletionReject::NotInFlight);
    assert_eq!(a.sq().outstanding(), 1, "WR 2 is not reported done");
    // A phantom counter far ahead of anything posted.
    write(&mut a, &b, 3, 16, false);
    let c = counter_at(&a, ci + 2);
    rewrite_counter(&a, ci + 2, c.wrapping_add(40));
    let (wcs, errs) = drain(&mut a);
    assert!(wcs.is_empty());
    assert_eq!(why(&errs[0]), CompletionReject::NotInFlight);
    assert_eq!(a.sq().outstanding(), 2);
    // An honest completion retires everything up to its WR, once.
    write(&mut a, &b, 4, 24, false);
    let (wcs, errs) = drain(&mut a);
    assert_eq!((ids(&wcs), errs.len()), (vec![4], 0));
    assert_eq!(wcs[0].status, WcStatus::Success);
    assert_eq!(a.sq().outstanding(), 0);
    // The device executed every WRITE (the CQEs lied, not the data path).
    assert_eq!(b.read(0, 32), vec![0x11; 32]);
    // The queue is whole: a long run completes exactly once each.
    for k in 0..100u64 {
        write(&mut a, &b, 100 + k, (k % 8) * 8, false);
        let (wcs, errs) = drain(&mut a);
        assert_eq!((ids(&wcs), errs.len()), (vec![100 + k], 0));
    }
}

/// A QP whose first WRITE fails (remote access): the rest are flushed, the
/// CQ holds the flush CQEs; the host polls only the first completion.
fn errored_pair() -> (Fabric, Ep, Ep) {
    let (f, mut a, b) = pair();
    write(&mut a, &b, 1, 0, true);
    write(&mut a, &b, 2, 8, false);
    write(&mut a, &b, 3, 16, false);
    assert_eq!(a.dev().qp_state(a.qpn()), Some(QpState::Err));
    let mut out = [WorkCompletion::default(); 1];
    assert_eq!(a.try_poll(&mut out), Ok(1));
    assert_eq!((out[0].wr_id, out[0].status), (1, WcStatus::RemAccessErr));
    (f, a, b)
}

fn reconnect_and_run(a: &mut Ep, b: &mut Ep) {
    reset(b);
    connect(a, b, &ConnOpts::default()).unwrap();
    for id in 10..14u64 {
        write(a, b, id, (id - 10) * 8, false);
    }
    let (wcs, errs) = drain(a);
    assert_eq!((ids(&wcs), errs.len()), (vec![10, 11, 12, 13], 0));
    assert!(wcs.iter().all(|w| w.status == WcStatus::Success));
    assert_eq!(a.sq().outstanding(), 0);
}

#[test]
fn error_reset_reuse_purges_the_stale_flushes() {
    let (_f, mut a, mut b) = errored_pair();
    let ci = a.cq().consumer_index();
    reset(&mut a); // cleans the CQ: the two flush CQEs are dropped
    assert_eq!(a.cq().consumer_index(), ci + 2);
    assert_eq!(a.cq().read_dbrec(0), ci + 2);
    reconnect_and_run(&mut a, &mut b);
}

#[test]
fn without_clean_stale_flushes_are_rejected_and_never_wedge() {
    let (_f, mut a, mut b) = errored_pair();
    // Device QP to RESET and host queues reset, the CQ left as it is.
    a.dev()
        .modify_qp(
            a.qpn(),
            &QpAttr {
                qp_state: QpState::Reset,
                ..QpAttr::default()
            },
            M::STATE,
        )
        .unwrap();
    a.reset_host_queues();
    let (wcs, errs) = drain(&mut a);
    assert!(wcs.is_empty(), "{wcs:?}");
    assert_eq!(errs.len(), 2);
    assert!(errs.iter().all(|e| why(e) == CompletionReject::NotInFlight));
    assert_eq!(a.sq().outstanding(), 0);
    reconnect_and_run(&mut a, &mut b);
}
