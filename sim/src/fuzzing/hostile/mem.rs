//! The device-visible memory of one script ([`Mem`]), raw pointers into
//! it and volatile reads of it: nothing takes a reference into it.

use bareverbs::platform::DmaBuf;
use core::ptr::NonNull;

use super::{NCQE, RQ, SQ, SRQ};

/// Device-visible memory of the whole scenario.
#[repr(C, align(64))]
pub(super) struct Mem {
    pub(super) cq: [u8; NCQE * 64],
    pub(super) cq_db: [u8; 8],
    pub(super) sq: [[u8; SQ * 64]; 2],
    pub(super) qp_db: [[u8; 8]; 2],
    pub(super) rq: [u8; RQ * 16],
    pub(super) srq: [u8; SRQ * 32],
    pub(super) srq_db: [u8; 8],
}

pub(super) fn dma(p: *mut u8, len: usize) -> DmaBuf {
    DmaBuf {
        cpu: NonNull::new(p).expect("non-null"),
        iova: 0x1000,
        len,
    }
}

pub(super) fn peek<const L: usize>(p: *const u8) -> [u8; L] {
    let mut o = [0u8; L];
    for (i, b) in o.iter_mut().enumerate() {
        // SAFETY: callers pass pointers to L bytes inside `Mem`; raw
        // volatile reads, no reference into device-visible memory.
        *b = unsafe { core::ptr::read_volatile(p.add(i)) };
    }
    o
}

/// The control segment of the WQE at WQEBB counter `ctr` of QP `qp`.
pub(super) fn sq_ctrl(sq_p: *const u8, qp: usize, ctr: u16) -> [u8; 16] {
    peek::<16>(sq_p.wrapping_add(qp * SQ * 64 + (ctr as usize & (SQ - 1)) * 64))
}

/// Raw pointers to the fields of one [`Mem`], taken once: `Mem` is only
/// read through `peek`/raw pointers from then on.
#[derive(Clone, Copy)]
pub(super) struct Ptrs {
    pub(super) cq: *mut u8,
    pub(super) cq_db: *mut u8,
    pub(super) sq: *mut u8,
    pub(super) qp_db: *mut u8,
    pub(super) rq: *mut u8,
    pub(super) srq: *mut u8,
    pub(super) srq_db: *mut u8,
}

impl Mem {
    /// All of it zeroed.
    pub(super) fn zeroed() -> Mem {
        Mem {
            cq: [0; NCQE * 64],
            cq_db: [0; 8],
            sq: [[0; SQ * 64]; 2],
            qp_db: [[0; 8]; 2],
            rq: [0; RQ * 16],
            srq: [0; SRQ * 32],
            srq_db: [0; 8],
        }
    }

    /// Raw pointers into `self`; see [`Ptrs`].
    pub(super) fn ptrs(&mut self) -> Ptrs {
        let mp: *mut Mem = self;
        // SAFETY: field projections of a live `Mem`, no reference created.
        unsafe {
            Ptrs {
                cq: core::ptr::addr_of_mut!((*mp).cq).cast::<u8>(),
                cq_db: core::ptr::addr_of_mut!((*mp).cq_db).cast::<u8>(),
                sq: core::ptr::addr_of_mut!((*mp).sq).cast::<u8>(),
                qp_db: core::ptr::addr_of_mut!((*mp).qp_db).cast::<u8>(),
                rq: core::ptr::addr_of_mut!((*mp).rq).cast::<u8>(),
                srq: core::ptr::addr_of_mut!((*mp).srq).cast::<u8>(),
                srq_db: core::ptr::addr_of_mut!((*mp).srq_db).cast::<u8>(),
            }
        }
    }
}
