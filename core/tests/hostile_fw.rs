//! The device as an adversary, and the core fixes that go with it, through
//! the public API only: command-queue geometry (from the caller or the
//! init segment) that would make slots share or overlap entries, volatile
//! copies of device-writable memory, sizing at extreme capabilities and
//! page sizes, and `MemUar` offsets that overflow.
//!
//! Expected values come from the [reference](bareverbs::reference) (§7.2 geometry rules, §7.3 entry
//! size, §3.5 RQ sizing) or from the arithmetic of the request, never from the
//! driver's own output.

use bareverbs::cmd::initseg::{
    CmdqGeometry, InitSeg, InitSegError, CMDIF_REV_FW_SUB, CMDQ_ADDR_L_SZ,
};
use bareverbs::cmd::queue::{CmdQueue, CmdqSetupError, SlotKind};
use bareverbs::cmd::Bar0;
use bareverbs::platform::{DmaAllocator, DmaBuf, MemUar, Uar};
use bareverbs::sizing::{
    cq_layout, qp_layout, rq_layout, srq_layout, DeviceCaps, Limit, QpCaps, QpType, Stage,
};
use core::cell::RefCell;
use core::ptr::NonNull;

/// Zeroed, aligned test memory (IOVA = CPU address); `live` counts blocks.
#[derive(Default)]
struct Dma(RefCell<Vec<(usize, Vec<u64>)>>);

impl Dma {
    fn live(&self) -> usize {
        self.0.borrow().len()
    }
}

// SAFETY: every block is fresh zeroed memory of at least `len` bytes at the
// requested alignment, owned here and never handed out twice.
unsafe impl DmaAllocator for Dma {
    fn alloc(&self, len: usize, align: usize) -> Option<DmaBuf> {
        let align = align.max(8);
        let mut v = vec![0u64; (len.max(1) + align).div_ceil(8)];
        let base = v.as_mut_ptr().cast::<u8>();
        let p = base.wrapping_add(base.align_offset(align));
        self.0.borrow_mut().push((p as usize, v));
        Some(DmaBuf {
            cpu: NonNull::new(p)?,
            iova: p as u64,
            len,
        })
    }
    unsafe fn free(&self, buf: DmaBuf) {
        let mut v = self.0.borrow_mut();
        if let Some(i) = v.iter().position(|(p, _)| *p == buf.cpu.as_ptr() as usize) {
            v.swap_remove(i);
        }
    }
}

/// A BAR0 with a programmable init segment that records writes.
struct Regs {
    cmdif: u32,
    l_sz: u32,
    writes: Vec<(usize, u32)>,
}

impl Regs {
    fn with_geometry(log_sz: u32, log_stride: u32) -> Self {
        Regs {
            cmdif: 5 << 16,
            l_sz: (log_sz & 0xf) << 4 | (log_stride & 0xf),
            writes: Vec::new(),
        }
    }
}

// SAFETY: plain memory model of a few registers; no other memory touched.
unsafe impl Bar0 for Regs {
    fn read32(&self, off: usize) -> u32 {
        match off {
            CMDIF_REV_FW_SUB => self.cmdif,
            CMDQ_ADDR_L_SZ => self.l_sz,
            _ => 0,
        }
    }
    fn write32(&mut self, off: usize, v: u32) {
        self.writes.push((off, v));
    }
}

// ---- finding 2: command-queue geometry ----------------------------------

/// Geometries that would make two slots share an entry (one slot; an
/// entry past the page aliasing slot 0) or overlap entries (stride below
/// the 64-byte entry) are refused by `CmdQueue::new` itself, before any
/// memory is allocated or any register written ([ref §7.2, §7.3](bareverbs::reference)).
#[test]
fn cmdq_new_refuses_geometry_that_shares_or_overlaps_entries() {
    let cases = [
        (0u8, 6u8, InitSegError::TooFewSlots { log_sz: 0 }),
        (5, 5, InitSegError::StrideTooSmall { log_stride: 5 }),
        (1, 0, InitSegError::StrideTooSmall { log_stride: 0 }),
        (
            5,
            8,
            InitSegError::QueueTooLarge {
                log_sz: 5,
                log_stride: 8,
            },
        ),
        (6, 6, InitSegError::TooManySlots { log_sz: 6 }),
        (
            2,
            200,
            InitSegError::QueueTooLarge {
                log_sz: 2,
                log_stride: 200,
            },
        ),
        (255, 255, InitSegError::TooManySlots { log_sz: 255 }),
    ];
    for (log_sz, log_stride, want) in cases {
        let dma = Dma::default();
        let mut bar = Regs::with_geometry(0, 0);
        let g = CmdqGeometry { log_sz, log_stride };
        let e = CmdQueue::new(&dma, &mut bar, g).unwrap_err();
        assert_eq!(e, CmdqSetupError::Geometry(want), "{g:?}");
        assert_eq!(dma.live(), 0, "nothing allocated for {g:?}");
        assert!(bar.writes.is_empty(), "no register written for {g:?}");
    }
}

/// The limits themselves are accepted: 2 slots (regular + pages), 32
/// slots of 64 bytes, 2 slots of 2 KiB: the two slots used are distinct
/// and inside the page.
#[test]
fn cmdq_new_accepts_the_boundary_geometries_with_distinct_slots() {
    for (log_sz, log_stride) in [(1u8, 6u8), (5, 6), (5, 7), (1, 11), (4, 8)] {
        let dma = Dma::default();
        let mut bar = Regs::with_geometry(0, 0);
        let q = CmdQueue::new(&dma, &mut bar, CmdqGeometry { log_sz, log_stride }).unwrap();
        let (r, p) = (
            q.slot_index(SlotKind::Regular),
            q.slot_index(SlotKind::Pages),
        );
        assert_eq!(r, 0);
        assert_eq!(p, (1u8 << log_sz) - 1, "page slot = last slot (ref §7.2)");
        assert_ne!(r, p);
        assert!(((p as usize) << log_stride) + 64 <= 4096);
        // SAFETY: the queue was never handed to a device.
        unsafe { q.free(&dma) };
    }
}

/// The init segment may report any 4-bit values; one slot is refused at
/// validation (it used to pass and make both slot kinds entry 0).
#[test]
fn init_segment_with_one_command_slot_is_refused() {
    let bar = Regs::with_geometry(0, 6);
    assert_eq!(
        InitSeg(&bar).validate(),
        Err(InitSegError::TooFewSlots { log_sz: 0 })
    );
    let bar = Regs::with_geometry(1, 6);
    assert_eq!(
        InitSeg(&bar).validate(),
        Ok(CmdqGeometry {
            log_sz: 1,
            log_stride: 6
        })
    );
    let bar = Regs::with_geometry(15, 15);
    assert_eq!(
        InitSeg(&bar).validate(),
        Err(InitSegError::TooManySlots { log_sz: 15 })
    );
}

// ---- finding 3: volatile copies of device-writable memory ----------------

/// The body of `fn name` in `src` (from its signature to the next line
/// that closes a top-level item).
fn body<'a>(src: &'a str, name: &str) -> &'a str {
    let start = src
        .find(&format!("fn {name}("))
        .unwrap_or_else(|| panic!("fn {name} not found"));
    let rest = &src[start..];
    let end = rest.find("\n}\n").unwrap_or(rest.len());
    &rest[..end]
}

/// Whether a copy is volatile is not observable from a test's point of
/// view (the bytes are the same), so this pins it in the source: the DMA
/// copy helpers every command-queue, mailbox and EQE read goes through
/// use volatile accesses (bytes, or 8-byte words where aligned), never
/// `copy_nonoverlapping` /
/// `write_bytes` (a memcpy the compiler may split, merge or assume
/// stable while the device rewrites the memory).
#[test]
fn dma_copies_of_device_memory_are_volatile() {
    let q = include_str!("../src/cmd/queue.rs");
    for (f, access) in [
        ("dma_read", "load_volatile"),
        ("dma_write", "store_volatile"),
        ("dma_zero", "zero_volatile"),
        ("zero_volatile", "write_volatile"),
        ("store_volatile", "write_volatile"),
        ("load_volatile", "read_volatile"),
        ("dma_load8", "read_volatile"),
    ] {
        let b = body(q, f);
        assert!(b.contains(access), "{f} must use {access}");
        assert!(
            !b.contains("copy_nonoverlapping") && !b.contains("write_bytes"),
            "{f} must not memcpy/memset device memory"
        );
    }
    // The EQ ring is read through those helpers only.
    let eq = include_str!("../src/cmd/eq.rs");
    assert!(!eq.contains("copy_nonoverlapping") && !eq.contains("read_unaligned"));
    let pages = include_str!("../src/cmd/pages.rs");
    assert!(!pages.contains("copy_nonoverlapping"));
}

/// The volatile copies return the same bytes as before (round trip over
/// odd offsets and lengths, and out-of-range requests refused).
#[test]
fn dma_copies_keep_the_bytes() {
    use bareverbs::cmd::queue::{dma_read, dma_write, dma_zero};
    let dma = Dma::default();
    let buf = dma.alloc(1000, 64).unwrap();
    let pat: Vec<u8> = (0..1000u32).map(|i| (i * 7 + 3) as u8).collect();
    // SAFETY: test memory, no device.
    unsafe {
        assert!(dma_write(&buf, 0, &pat));
        let mut got = vec![0u8; 333];
        assert!(dma_read(&buf, 17, &mut got));
        assert_eq!(got, pat[17..350]);
        dma_zero(&buf, 990, 100);
        let mut tail = [1u8; 10];
        assert!(dma_read(&buf, 990, &mut tail));
        assert_eq!(tail, [0; 10]);
        assert!(!dma_read(&buf, 999, &mut [0u8; 2]));
        assert!(!dma_read(&buf, usize::MAX, &mut [0u8; 2]));
        assert!(!dma_write(&buf, usize::MAX - 1, &[0u8; 4]));
        dma.free(buf);
    }
}

// ---- finding 8: sizing at extreme capabilities, page sizes ---------------

const EXTREMES: [u32; 9] = [
    0,
    1,
    2,
    15,
    16,
    1 << 31,
    (1 << 31) + 1,
    u32::MAX - 1,
    u32::MAX,
];

/// `rq_layout` never panics, whatever the request and caps; when it
/// succeeds the geometry is the [ref §3.5](bareverbs::reference) one (power-of-two WQE of at
/// least 16 bytes per SGE, a ring holding every requested WR, consistent
/// byte count); when the rounded numbers cannot be held it says so.
#[test]
fn rq_layout_is_total_over_extreme_caps() {
    for wr in EXTREMES {
        for sge in EXTREMES {
            for cap_wr in EXTREMES {
                for desc in EXTREMES {
                    let caps = DeviceCaps {
                        max_recv_wr: cap_wr,
                        max_rq_desc_sz: desc,
                        ..DeviceCaps::DEFAULT
                    };
                    let req = QpCaps::new(QpType::Rc).recv(wr, sge);
                    let r = std::panic::catch_unwind(|| rq_layout(&req, &caps));
                    let r = r.unwrap_or_else(|_| {
                        panic!("rq_layout panicked: wr {wr} sge {sge} caps {cap_wr}/{desc}")
                    });
                    match r {
                        Ok(l) if wr == 0 => assert_eq!(l.wqe_cnt, 0),
                        Ok(l) => {
                            assert!(l.wqe_size.is_power_of_two());
                            assert!(l.wqe_size as u64 >= 16 * sge.max(1) as u64);
                            assert!(l.wqe_size <= desc);
                            assert_eq!(1u64 << l.wqe_shift, l.wqe_size as u64);
                            assert!(l.wqe_cnt as u64 >= wr as u64);
                            assert!(l.max_post >= wr && l.max_post <= l.wqe_cnt);
                            assert_eq!(l.buf_bytes, l.wqe_cnt as u64 * l.wqe_size as u64);
                        }
                        Err(e) => {
                            assert_eq!(e.stage, Stage::Rq);
                            assert!(e.requested > e.allowed, "{e}");
                            let _ = e.to_string();
                        }
                    }
                }
            }
        }
    }
}

/// The case of the finding: caps and request at `u32::MAX` (2^32 WRs
/// after rounding, more than the 32-bit ring counters hold) → a typed
/// error, not an overflow panic / a zero-entry ring.
#[test]
fn rq_of_u32_max_wrs_is_a_typed_error() {
    let caps = DeviceCaps {
        max_recv_wr: u32::MAX,
        ..DeviceCaps::DEFAULT
    };
    let req = QpCaps::new(QpType::Rc).recv(u32::MAX, 1);
    let e = rq_layout(&req, &caps).unwrap_err();
    assert_eq!((e.stage, e.limit), (Stage::Rq, Limit::SizeOverflow));
    assert_eq!(e.requested, 1 << 32, "rup2(u32::MAX)");
    // The largest representable ring still sizes.
    let req = QpCaps::new(QpType::Rc).recv(1 << 31, 1);
    let l = rq_layout(&req, &caps).unwrap();
    assert_eq!((l.wqe_cnt, l.max_post, l.wqe_size), (1 << 31, 1 << 31, 16));
    // And the QP layout passes the error through.
    let req = QpCaps::new(QpType::Rc).recv(u32::MAX, 1);
    assert_eq!(
        qp_layout(&req, &caps).unwrap_err().limit,
        Limit::SizeOverflow
    );
}

/// SRQ sizing at `max_wr = u32::MAX` with unlimited caps: a typed error
/// instead of a truncated `srq_max` of 0.
#[test]
fn srq_of_u32_max_wrs_is_a_typed_error() {
    let caps = DeviceCaps {
        max_srq_recv_wr: u32::MAX,
        max_recv_wr: u32::MAX,
        ..DeviceCaps::DEFAULT
    };
    for wr in EXTREMES {
        for sge in [0, 1, 31, 32, u32::MAX] {
            let r = std::panic::catch_unwind(|| srq_layout(wr, sge, &caps))
                .unwrap_or_else(|_| panic!("srq_layout panicked: {wr} {sge}"));
            if let Ok(l) = r {
                assert!(l.srq_max as u64 > wr as u64, "{wr}: {l:?}");
                assert!(l.srq_max.is_power_of_two());
            }
        }
    }
    let e = srq_layout(u32::MAX, 1, &caps).unwrap_err();
    assert_eq!(e.limit, Limit::SizeOverflow);
}

/// `page_size == 0` (or not a power of two) is a typed error in every
/// layout that page-aligns its allocation, not a division by zero.
#[test]
fn page_size_zero_is_a_typed_error() {
    for page in [0u32, 3, 4095, 6000] {
        let caps = DeviceCaps {
            page_size: page,
            ..DeviceCaps::DEFAULT
        };
        let req = QpCaps::new(QpType::Rc).send(16, 1, 0).recv(16, 1);
        let e = qp_layout(&req, &caps).unwrap_err();
        assert_eq!((e.limit, e.requested), (Limit::PageSize, page as u64));
        assert_eq!(
            cq_layout(100, 64, &caps).unwrap_err().limit,
            Limit::PageSize
        );
        assert_eq!(
            srq_layout(100, 1, &caps).unwrap_err().limit,
            Limit::PageSize
        );
        assert!(e.to_string().contains("page size"));
    }
    // Powers of two still work (4 KiB and 64 KiB pages).
    for page in [4096u32, 65536] {
        let caps = DeviceCaps {
            page_size: page,
            ..DeviceCaps::DEFAULT
        };
        let req = QpCaps::new(QpType::Rc).send(16, 1, 0).recv(16, 1);
        let l = qp_layout(&req, &caps).unwrap();
        assert_eq!(l.alloc_bytes % page as u64, 0);
        assert!(l.alloc_bytes >= l.total_bytes);
    }
    assert_eq!(bareverbs::sizing::align_up(100, 0), 100);
    assert_eq!(bareverbs::sizing::align_up(u64::MAX - 1, 4096), u64::MAX);
}

// ---- finding 8: MemUar offsets ------------------------------------------

/// Offsets whose end overflows `usize` are ignored like any other
/// out-of-range offset: no panic, nothing written.
#[test]
fn mem_uar_ignores_offsets_that_overflow() {
    let mut u = MemUar::filled(0xee);
    for off in [
        usize::MAX,
        usize::MAX - 3,
        usize::MAX - 7,
        usize::MAX - 63,
        4096,
        4093,
    ] {
        u.write64(off, [1; 8]);
        u.write32(off, [2; 4]);
        u.write_bf(off, &[3; 64]);
    }
    assert!(u.bytes().iter().all(|&b| b == 0xee));
    // In range still stores.
    u.write64(4088, [9; 8]);
    assert_eq!(&u.bytes()[4088..], &[9; 8]);
}
