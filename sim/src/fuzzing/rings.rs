//! Fuzz body `sim_rings`: arbitrary bytes in SQ and RQ rings and arbitrary
//! doorbell values (doorbell records, 8-byte doorbells, BlueFlame chunks,
//! CQ arm writes) must never panic the simulator; bad WQEs must become
//! error completions that the core's poller parses.
//!
//! Input layout (all optional, missing bytes read as zero):
//! * byte 0: QP type of the first endpoint (RC / UC / UD) and flags;
//! * 256 bytes: the first endpoint's SQ ring (4 WQEBBs);
//! * 64 bytes: its RQ ring (4 × 16-byte WQEs);
//! * then records of 12 bytes: op selector, 16-bit doorbell-record value,
//!   8-byte MMIO value, 1 byte of extra.

use crate::device::{Device, Fabric};
use crate::harness::{connect, ud_to_rts, ConnOpts, Endpoint, EpConfig};
use bareverbs::platform::{Uar, BF_OFFSET, CQ_DOORBELL};
use bareverbs::qp::QpType;
use bareverbs::wqe::DS_MASK;

type Ep = Endpoint<4, 4, 16>;

/// Most WQEs one pass over a queue handles in a fuzz run
/// ([`Fabric::set_pass_limit`]): four laps of the four-slot SQ and one CQ, so ring
/// wrap, stale slots and CQ overrun stay reachable, while a doorbell record
/// claiming 65,535 WQEs no longer costs each input milliseconds.
pub const PASS_LIMIT: u32 = 16;

/// Virtual time one run of the device may span ([`Fabric::set_horizon_ns`]):
/// 200 µs covers a transport timeout of 2 (16 µs) with its retry and RNR
/// waits of the 10 µs minimum timer many times over.
pub const HORIZON_NS: u64 = 200_000;

/// Virtual time a whole input may span: later rounds get what is left, so
/// an infinite-RNR input (`rnr_retry` 7) cannot spend 64 rounds × the
/// horizon retransmitting.
pub const INPUT_NS: u64 = 1_000_000;

fn take<'a>(data: &mut &'a [u8], n: usize) -> &'a [u8] {
    let k = n.min(data.len());
    let (a, b) = data.split_at(k);
    *data = b;
    a
}

fn put(buf: bareverbs::platform::DmaBuf, off: usize, bytes: &[u8]) {
    for (i, b) in bytes.iter().enumerate() {
        let o = (off + i) % buf.len;
        // SAFETY: `o < buf.len`: a raw byte store into live DMA memory
        // owned by this fuzz run.
        unsafe { *buf.cpu.as_ptr().add(o) = *b };
    }
}

/// Device addresses and keys of the two endpoints `sim_rings` builds
/// (deterministic), for seed generation: (a.buf iova, a lkey, b.buf iova,
/// b rkey, a qpn, b qpn).
pub fn layout(ty_byte: u8) -> Option<(u64, u32, u64, u32, u32, u32)> {
    let f = Fabric::new(ty_byte as u64);
    let d = f.add_device();
    let cfg = EpConfig {
        max_send_sge: 2,
        max_inline: 32,
        buf_len: 4096,
        ..EpConfig::new(QpType::Rc)
    };
    let a = Ep::new(&d, &cfg).ok()?;
    let b = Ep::new(&d, &cfg).ok()?;
    Some((
        a.buf().iova,
        a.mr().lkey(),
        b.buf().iova,
        b.mr().rkey(),
        a.qpn(),
        b.qpn(),
    ))
}

/// The first endpoint's QP type, from input byte 0.
fn qp_type(head: u8) -> QpType {
    match head % 3 {
        0 => QpType::Rc,
        1 => QpType::Uc,
        _ => QpType::Ud,
    }
}

/// The fabric of one run (seeded by input byte 0, lossy when its top bit
/// is set) and the virtual time by which the whole input must end.
fn fabric(head: u8) -> (Fabric, u64) {
    let f = Fabric::new(head as u64);
    f.set_horizon_ns(HORIZON_NS);
    let deadline = f.now_ns() + INPUT_NS;
    f.set_pass_limit(PASS_LIMIT);
    if head & 0x80 != 0 {
        f.set_faults(crate::fault::FaultPlan::lossy(0.3));
    }
    (f, deadline)
}

/// Two endpoints of type `ty` on `d`, connected (or both UD at RTS);
/// `None` when either cannot be built or brought up.
fn endpoints(d: &Device, ty: QpType, head: u8) -> Option<(Ep, Ep)> {
    let cfg = EpConfig {
        max_send_sge: 2,
        max_inline: 32,
        buf_len: 4096,
        blueflame: head & 0x40 != 0,
        ..EpConfig::new(ty)
    };
    let (Ok(mut a), Ok(mut b)) = (Ep::new(d, &cfg), Ep::new(d, &cfg)) else {
        return None;
    };
    let opts = ConnOpts {
        timeout: 2,
        retry_cnt: 1,
        rnr_retry: (head >> 3) & 7,
        min_rnr_timer: 1,
        ..ConnOpts::default()
    };
    let ok = if ty == QpType::Ud {
        ud_to_rts(&mut a, 0).is_ok() && ud_to_rts(&mut b, 0).is_ok()
    } else {
        connect(&mut a, &mut b, &opts).is_ok()
    };
    if !ok {
        return None;
    }
    Some((a, b))
}

/// The fuzz body.
pub fn sim_rings(data: &[u8]) {
    let mut data = data;
    let head = take(&mut data, 1).first().copied().unwrap_or(0);
    let ty = qp_type(head);
    let (f, deadline) = fabric(head);
    let d = f.add_device();
    let Some((mut a, mut b)) = endpoints(&d, ty, head) else {
        return;
    };
    put(a.sq_ring(), 0, take(&mut data, 256));
    put(a.rq_ring(), 0, take(&mut data, 64));
    put(b.rq_ring(), 0, take(&mut data, 64));
    let mut rounds = 0;
    while !data.is_empty() && rounds < 64 {
        rounds += 1;
        f.set_horizon_ns(deadline.saturating_sub(f.now_ns()).min(HORIZON_NS));
        let rec = take(&mut data, 12);
        let mut r = [0u8; 12];
        r[..rec.len()].copy_from_slice(rec);
        round(&f, &mut a, &mut b, &r);
    }
    f.set_horizon_ns(deadline.saturating_sub(f.now_ns()).min(HORIZON_NS));
    f.run_until_idle();
    let _ = a.drain();
    let _ = b.drain();
    let _ = d.take_events();
}

/// One 12-byte record `r`: op selector, doorbell-record value, MMIO
/// value, extra byte (see the module documentation).
fn round(f: &Fabric, a: &mut Ep, b: &mut Ep, r: &[u8; 12]) {
    let sel = r[0];
    let dbv = u16::from_be_bytes([r[1], r[2]]);
    let mut mmio = [0u8; 8];
    mmio.copy_from_slice(&r[3..11]);
    match sel % 8 {
        0 | 1 => {
            // Send doorbell record, then an 8-byte doorbell.
            put(a.dbrec(), 4, &(dbv as u32).to_be_bytes());
            a.uar_mut()
                .write64(BF_OFFSET + (sel as usize & 0x100), mmio);
        }
        2 => blueflame(a, dbv, mmio, r[11]),
        3 => {
            // Receive doorbell records of both QPs.
            put(a.dbrec(), 0, &(dbv as u32).to_be_bytes());
            put(b.dbrec(), 0, &((dbv >> 8) as u32).to_be_bytes());
        }
        4 => {
            // CQ consumer index / arm.
            let cq = a.cq().dbrec();
            put(cq, 0, &(dbv as u32).to_be_bytes());
            a.uar_mut().write64(CQ_DOORBELL, mmio);
        }
        5 => {
            // Overwrite a ring byte range.
            let off = r[1] as usize;
            put(a.sq_ring(), off, &r[3..11]);
        }
        6 => peer_doorbell(b, r, dbv, mmio),
        _ => {
            f.run_until_idle();
            let _ = a.drain();
            let _ = b.drain();
        }
    }
}

/// A BlueFlame write of 1..4 chunks (`extra % 4 + 1`) copied from `a`'s
/// SQ ring, each starting with `mmio`, after the send doorbell record.
fn blueflame(a: &mut Ep, dbv: u16, mmio: [u8; 8], extra: u8) {
    put(a.dbrec(), 4, &(dbv as u32).to_be_bytes());
    let n = 1 + (extra as usize % 4);
    let ring = a.sq_ring();
    let uar = a.uar_mut();
    for k in 0..n {
        let mut chunk = [0u8; 64];
        // SAFETY: the SQ ring is 256 bytes; k < 4.
        unsafe {
            std::ptr::copy_nonoverlapping(ring.cpu.as_ptr().add(k * 64), chunk.as_mut_ptr(), 64)
        };
        chunk[..8].copy_from_slice(&mmio);
        uar.write_bf(BF_OFFSET + k * 64, &chunk);
    }
    uar.flush();
}

/// Doorbell for the peer QP number (`b`'s) or a random one (record `r`).
fn peer_doorbell(b: &mut Ep, r: &[u8; 12], dbv: u16, mmio: [u8; 8]) {
    let mut m = mmio;
    let q = if r[11] & 1 == 0 {
        b.qpn()
    } else {
        u32::from_be_bytes([0, r[1], r[2], r[3]])
    };
    let ds = m[7] as u32 & DS_MASK;
    m[4..8].copy_from_slice(&((q << 8) | ds).to_be_bytes());
    put(b.dbrec(), 4, &(dbv as u32).to_be_bytes());
    b.uar_mut().write64(BF_OFFSET, m);
}
