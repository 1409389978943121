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
