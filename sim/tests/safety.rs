//! The simulator's safe API cannot be made to touch memory outside its DMA
//! allocations: forged `DmaBuf`s, guest-provided address/length overflows.

use bareverbs::cmd::ops::{self, MkeyParams};
use bareverbs::mr::Access;
use bareverbs::platform::{DmaAllocator, DmaBuf};
use bareverbs::qp::QpType;
use bareverbs::sq::{SendFlags, SendOp, SendWr};
use bareverbs_sim::harness::{connect, ConnOpts, Endpoint, EpConfig};
use bareverbs_sim::{Fabric, SimError};
use std::ptr::NonNull;

/// `reg_mr` takes the region's CPU address from the simulator's DMA
/// translation of the IOVA, not from the caller's `buf.cpu`.
#[test]
fn reg_mr_ignores_a_forged_cpu_pointer() {
    let f = Fabric::new(1);
    let d = f.add_device();
    let pd = d.alloc_pd();
    let real = d.alloc(4096).unwrap();
    let mut decoy = vec![0xeeu8; 4096];
    let forged = DmaBuf {
        cpu: NonNull::new(decoy.as_mut_ptr()).unwrap(),
        iova: real.iova,
        len: real.len,
    };
    let mr = d.reg_mr(pd, forged, Access::LOCAL_WRITE).unwrap();
    let sge = mr.sge(16, 64).unwrap();
    // SAFETY: pointer arithmetic inside the live 4 KiB allocation.
    let want = unsafe { real.cpu.as_ptr().add(16) };
    assert_eq!(mr.cpu_of(&sge).map(NonNull::as_ptr), Some(want));
    assert!(decoy.iter().all(|&b| b == 0xee));
}

/// A forged `DmaBuf` whose range leaves the allocation is refused.
#[test]
fn reg_mr_refuses_ranges_outside_one_allocation() {
    let f = Fabric::new(1);
    let d = f.add_device();
    let pd = d.alloc_pd();
    let real = d.alloc(4096).unwrap();
    for (iova, len) in [
        (real.iova, real.len + 1),
        (real.iova + 1, real.len),
        (real.iova, usize::MAX),
        (u64::MAX - 8, 64),
    ] {
        let forged = DmaBuf {
            cpu: real.cpu,
            iova,
            len,
        };
        assert!(
            matches!(
                d.reg_mr(pd, forged, Access::empty()),
                Err(SimError::BadAddress)
            ),
            "iova {iova:#x} len {len:#x}"
        );
    }
}

/// End to end: an inline WRITE from a region registered with a forged CPU
/// pointer sends the bytes of the registered device memory. Before, the
/// core read the inline payload through the forged pointer (here a decoy,
/// in general any address), and the responder wrote those bytes.
#[test]
fn inline_send_from_a_forged_region_reads_the_allocation() {
    let f = Fabric::new(3);
    let (da, db) = (f.add_device(), f.add_device());
    let mut a: Endpoint<64, 64, 256> = Endpoint::new(&da, &EpConfig::new(QpType::Rc)).unwrap();
    let mut b: Endpoint<64, 64, 256> = Endpoint::new(&db, &EpConfig::new(QpType::Rc)).unwrap();
    connect(&mut a, &mut b, &ConnOpts::default()).unwrap();
    a.write(0, &[0x11; 32]);
    let mut decoy = vec![0xeeu8; 4096];
    let forged = DmaBuf {
        cpu: NonNull::new(decoy.as_mut_ptr()).unwrap(),
        ..a.buf()
    };
    let mr = a.dev().reg_mr(a.pd(), forged, Access::LOCAL_WRITE).unwrap();
    let sge = [mr.sge(0, 32).unwrap()];
    let op = SendOp::Write {
        remote_addr: b.addr(0),
        rkey: b.mr().rkey(),
    };
    let wr = SendWr::new(7, op, &sge).with_flags(SendFlags::SIGNALED | SendFlags::INLINE);
    a.post_send(&[wr], &[mr]).unwrap();
    let wcs = a.drain();
    assert_eq!(wcs.len(), 1);
    assert_eq!(b.read(0, 32), vec![0x11; 32]);
    assert!(decoy.iter().all(|&x| x == 0xee));
}

/// CREATE_MKEY with a guest length whose page span overflows 64 bits is a
/// bad parameter (before: an arithmetic-overflow panic in the firmware model).
#[test]
fn create_mkey_with_an_overflowing_span_fails_cleanly() {
    let (_f, mut d, scratch) = bareverbs_sim::fuzzing::fw::setup().unwrap();
    let r = ops::alloc_pd(d.input());
    // SAFETY: a PD owns no memory; it is left to teardown, which destroys
    // it only through firmware (the driver does not track it).
    let pd = ops::parse_obj_id(unsafe { d.run(r) }.unwrap());
    let all = Access::LOCAL_WRITE | Access::REMOTE_WRITE | Access::REMOTE_READ;
    for (start, len) in [(0x1fff, u64::MAX), (u64::MAX - 0xfff, u64::MAX - 0x10)] {
        let req = ops::create_mkey(
            d.input(),
            &MkeyParams {
                pd,
                access: all,
                start_addr: start,
                len,
                pages_iova: scratch.iova,
                npages: 2,
                log_page_size: 12,
                variant: 0,
            },
        );
        // SAFETY: firmware must refuse it (asserted). Had it succeeded, the
        // key would name `scratch`, which outlives the device (freed after
        // teardown below), and the model reaches memory only through
        // HeapDma::translate.
        assert!(
            unsafe { d.run(req) }.is_err(),
            "start {start:#x} len {len:#x}"
        );
    }
    let (_rep, _bar, _clock, alloc) = d.teardown();
    // SAFETY: the function is torn down; nothing names the scratch buffer.
    unsafe { alloc.free(scratch) };
}

/// CREATE_MKEY with large MTT pages: the firmware model refuses a page
/// size below 4 KiB and pages that are not consecutive at the declared
/// size, and accepts the well-formed key over the same buffer.
#[test]
fn create_mkey_checks_its_page_size_and_page_list() {
    let (_f, mut d, scratch) = bareverbs_sim::fuzzing::fw::setup().unwrap();
    let r = ops::alloc_pd(d.input());
    // SAFETY: as in the test above.
    let pd = ops::parse_obj_id(unsafe { d.run(r) }.unwrap());
    let all = Access::LOCAL_WRITE | Access::REMOTE_WRITE | Access::REMOTE_READ;
    let key = |log_page_size: u8, npages: usize| MkeyParams {
        pd,
        access: all,
        start_addr: scratch.iova,
        len: 4096,
        pages_iova: scratch.iova & !((1u64 << log_page_size) - 1),
        npages,
        log_page_size,
        variant: 0,
    };
    // 2 KiB pages: not a page size an MTT key takes.
    let req = ops::create_mkey(d.input(), &key(11, 2));
    // SAFETY: refused (asserted); the scratch buffer outlives the device.
    assert!(unsafe { d.run(req) }.is_err(), "log_page_size 11");
    // Two entries of 4 KiB with the second not following the first.
    let req = ops::create_mkey(
        d.input(),
        &MkeyParams {
            len: 8192,
            ..key(12, 2)
        },
    );
    let next = ops::PAS_OFFSET + 8;
    d.input()[next..next + 8].copy_from_slice(&((scratch.iova + 0x8000) | 3).to_be_bytes());
    // SAFETY: as above.
    assert!(unsafe { d.run(req) }.is_err(), "pages not consecutive");
    // A 64 KiB page whose entry is not aligned to 64 KiB.
    let req = ops::create_mkey(
        d.input(),
        &MkeyParams {
            pages_iova: (scratch.iova & !0xffff) + 0x1000,
            ..key(16, 1)
        },
    );
    // SAFETY: as above.
    assert!(
        unsafe { d.run(req) }.is_err(),
        "entry not aligned to its page size"
    );
    // The same buffer as one 64 KiB page: accepted.
    let req = ops::create_mkey(d.input(), &key(16, 1));
    // SAFETY: a key over the scratch buffer, which outlives the device
    // (freed after teardown); nothing posts through it.
    assert!(unsafe { d.run(req) }.is_ok(), "log_page_size 16");
    let (_rep, _bar, _clock, alloc) = d.teardown();
    // SAFETY: the function is torn down; nothing names the scratch buffer.
    unsafe { alloc.free(scratch) };
}

/// Issue 29: the safe registration calls must not put a memory key over
/// memory a driver queue owns. Before, `Device::reg_mr` (and
/// `reg_mr_range`) keyed any live allocation, the endpoint's own SQ ring
/// included: a peer's RDMA WRITE under that rkey then replaced the WQEs
/// the core had posted (and [`bareverbs::sq::SendQueue::new`]'s contract,
/// "the device must only read" the ring, was broken by safe code). Every
/// ring and doorbell record of a QP and of its CQ is tried, whole and in
/// part; each must be refused with [`SimError::DriverMemory`] naming the
/// allocation it overlaps. Were one accepted, the peer's WRITE is done and
/// the test fails showing what it did to the ring.
#[test]
fn reg_mr_refuses_driver_rings_and_records() {
    let f = Fabric::new(29);
    let (da, db) = (f.add_device(), f.add_device());
    let mut a: Endpoint<64, 64, 256> = Endpoint::new(&da, &EpConfig::new(QpType::Rc)).unwrap();
    let mut b: Endpoint<64, 64, 256> = Endpoint::new(&db, &EpConfig::new(QpType::Rc)).unwrap();
    connect(&mut a, &mut b, &ConnOpts::default()).unwrap();
    // One WRITE from a, so that a's SQ ring holds a real WQE.
    let sge = [a.sge(0, 64)];
    let op = SendOp::Write {
        remote_addr: b.addr(0),
        rkey: b.mr().rkey(),
    };
    let wr = SendWr::new(9, op, &sge).with_flags(SendFlags::SIGNALED);
    a.post_send(&[wr], &[*a.mr()]).unwrap();
    assert_eq!(a.drain().len(), 1);
    let rights = Access::LOCAL_WRITE | Access::REMOTE_WRITE | Access::REMOTE_READ;
    let driver = [
        ("SQ ring", a.sq_ring()),
        ("RQ ring", a.rq_ring()),
        ("QP doorbell record", a.dbrec()),
        ("CQ ring", a.cq().ring()),
        ("CQ doorbell record", a.cq().dbrec()),
    ];
    for (what, ring) in driver {
        // Its last bytes (at most 8) only, as a range a caller might pick.
        let off = ring.len - ring.len.min(8);
        let part = DmaBuf {
            // SAFETY: `off < ring.len`: inside the live allocation.
            cpu: unsafe { NonNull::new_unchecked(ring.cpu.as_ptr().add(off)) },
            iova: ring.iova + off as u64,
            len: ring.len - off,
        };
        for r in [ring, part] {
            let res = a.dev().reg_mr(a.pd(), r, rights);
            let by_range = &a.dev().reg_mr_range(a.pd(), r.iova, r.len as u64, rights);
            let key = match (&res, by_range) {
                (Ok(mr), _) => Some(mr.rkey()),
                (_, Ok(k)) => Some(*k),
                _ => None,
            };
            if let Some(rkey) = key {
                // The hole: b WRITEs 0xab over the keyed ring bytes.
                let before = host_bytes(r);
                let n = r.len.min(64);
                b.write(0, &vec![0xab; n]);
                let sge = [b.sge(0, n as u32)];
                let op = SendOp::Write {
                    remote_addr: r.iova,
                    rkey,
                };
                let wr = SendWr::new(1, op, &sge).with_flags(SendFlags::SIGNALED);
                b.post_send(&[wr], &[*b.mr()]).unwrap();
                let wcs = b.drain();
                let after = host_bytes(r);
                panic!(
                    "a key over a's {what} ({} bytes at {:#x}) was granted; b's WRITE \
                     completed {:?} and the {what} went from {:02x?} to {:02x?}",
                    r.len,
                    r.iova,
                    wcs.iter().map(|w| w.status).collect::<Vec<_>>(),
                    &before[..n.min(16)],
                    &after[..n.min(16)],
                );
            }
            check_refusal(what, ring, res.map(|_| ()));
            check_refusal(what, ring, by_range.map(|_| ()));
        }
    }
}

/// Copies `r`'s bytes out of the (live, device-allocated) memory.
fn host_bytes(r: DmaBuf) -> Vec<u8> {
    let mut v = vec![0u8; r.len];
    // SAFETY: `r` is a range of one live allocation of the endpoint's
    // device (its rings and records live as long as the endpoint); a raw
    // copy, no reference into DMA memory is kept.
    unsafe { std::ptr::copy(r.cpu.as_ptr(), v.as_mut_ptr(), r.len) };
    v
}

/// `res` is the typed refusal naming `alloc`, the allocation of `what`.
fn check_refusal(what: &str, alloc: DmaBuf, res: Result<(), SimError>) {
    assert_eq!(
        res,
        Err(SimError::DriverMemory {
            iova: alloc.iova,
            len: alloc.len as u64,
        }),
        "{what}"
    );
}

/// The other safe way to give a queue's memory a key (issue 29): put a
/// queue over host memory (`create_cq_at`, `create_qp_at`) that is keyed,
/// or that another queue owns. Memory made a queue's is never keyed by a
/// safe call afterwards, memory a key covered never becomes a queue's, and
/// the rings the device made for an endpoint are neither.
#[test]
fn queues_over_host_memory_and_keys_exclude_each_other() {
    let f = Fabric::new(1);
    let d = f.add_device();
    let pd = d.alloc_pd();
    let (ring, rec) = (d.alloc(4096).unwrap(), d.alloc(8).unwrap());
    let cqn = d.create_cq_at(64, 1, ring.iova, rec.iova).unwrap();
    let owned = |b: DmaBuf| SimError::DriverMemory {
        iova: b.iova,
        len: b.len as u64,
    };
    assert_eq!(
        d.reg_mr_range(pd, ring.iova + 64, 64, Access::REMOTE_WRITE),
        Err(owned(ring))
    );
    assert_eq!(
        d.reg_mr(pd, rec, Access::REMOTE_WRITE).map(|_| ()),
        Err(owned(rec))
    );
    // A registered payload buffer cannot become a ring or a record.
    let buf = d.alloc(4096).unwrap();
    let rec2 = d.alloc(8).unwrap();
    d.reg_mr(pd, buf, Access::REMOTE_WRITE).unwrap();
    let keyed = SimError::KeyedMemory {
        iova: buf.iova,
        len: 4096,
    };
    assert_eq!(d.create_cq_at(64, 1, buf.iova, rec2.iova), Err(keyed));
    let init = bareverbs_sim::QpInit {
        qp_type: QpType::Rc,
        pd,
        send_cq: cqn,
        recv_cq: cqn,
        srq: None,
        sq_wqebbs: 64,
        rq_wqes: 0,
        rq_wqe_shift: 4,
        uidx: 0,
    };
    assert_eq!(
        d.create_qp_at(&init, Some(buf.iova), None, rec2.iova),
        Err(keyed)
    );
    // Refused whole: `rec2` was not claimed, so it can still be keyed.
    assert!(d.reg_mr(pd, rec2, Access::REMOTE_WRITE).is_ok());
    // A CQ over an endpoint's SQ ring (its CQEs would land in the ring).
    let ep: Endpoint = Endpoint::new(&d, &EpConfig::new(QpType::Rc)).unwrap();
    let rec3 = d.alloc(8).unwrap();
    assert_eq!(
        d.create_cq_at(64, 1, ep.sq_ring().iova, rec3.iova),
        Err(owned(ep.sq_ring()))
    );
    // The endpoint's own buffer is a payload buffer, keyed by the endpoint.
    assert!(d.reg_mr(pd, ep.buf(), Access::REMOTE_READ).is_ok());
}
