//! The fused RC RDMA WRITE: a doorbell covering one single-packet WRITE,
//! executed from fetch to completion in one call when nothing else can
//! happen in between.
//!
//! The general path fetches the WQE into a scratch copy, parses it,
//! gathers the payload into a buffer, puts a request packet on the event
//! queue, holds a retransmission timer aside, executes the request at the
//! responder (which queues an ACK), and completes the WQE when the ACK
//! arrives. When the world holds no other event, no fault can strike the
//! packets, and the device runs until idle right after the fetch (auto
//! progress), the order of those steps is fixed and nothing else runs
//! between them: [`World::fast_doorbell`] applies their effects directly
//! — the same counters, PSNs, timer generation, event sequence numbers,
//! port occupancy, QP-context cache, memory, trace entries, CQE and
//! virtual time — without copies, packets, allocation or the event queue.
//!
//! Every precondition is checked before anything changes; when one fails
//! the caller runs the general path, which then behaves exactly as if the
//! fused path did not exist. The twin tests (`tests/fast_path.rs`) run
//! randomized operations with and without it and compare everything
//! observable.

use super::{psn_diff, transport_timeout_ns, PSN_MASK};
use crate::cost::ceil_u64;
use crate::objects::Qp;
use crate::world::{Dev, FastParts, TraceEvent, TraceKind, World, QPN_BASE};
use bareverbs::mr::Access;
use bareverbs::qp::{QpState, QpType};
use bareverbs::wqe::{
    CtrlSeg, DataSeg, FmCeSe, Opcode, RaddrSeg, DS_BYTES, INLINE_SEG, SEND_WQE_BB,
};
use std::mem::{offset_of, size_of};

/// The mlx5 opcode of RDMA WRITE.
const OP_WRITE: u8 = Opcode::RdmaWrite as u8;
/// DS of the fused shape: control, remote-address and one data segment.
const FAST_DS: u8 =
    ((size_of::<CtrlSeg>() + size_of::<RaddrSeg>() + size_of::<DataSeg>()) / DS_BYTES) as u8;
/// Offset of the remote-address segment in the fused shape.
const RADDR_AT: usize = size_of::<CtrlSeg>();
/// Offset of the data segment in the fused shape.
const DATA_AT: usize = RADDR_AT + size_of::<RaddrSeg>();
/// The inline flag of a data entry's byte count.
const INLINE_BIT: u32 = INLINE_SEG;
/// Bytes of one WQEBB.
const WQEBB: u64 = SEND_WQE_BB as u64;

/// Big-endian u32 at `b[i..i + 4]`.
#[inline(always)]
fn be32(b: &[u8; 48], i: usize) -> u32 {
    u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
}

/// Big-endian u64 at `b[i..i + 8]`.
#[inline(always)]
fn be64(b: &[u8; 48], i: usize) -> u64 {
    (be32(b, i) as u64) << 32 | be32(b, i + 4) as u64
}

/// `x as f64` (the same value) through the signed conversion, a single
/// instruction, where it is exact.
#[inline(always)]
fn u64_f64(x: u64) -> f64 {
    if x < 1 << 63 {
        x as i64 as f64
    } else {
        x as f64
    }
}

/// The requester's side of a fused WRITE: the covered WQE and its source.
struct FastWqe {
    /// The send counter of the doorbell record.
    pi: u16,
    /// The WQE's index (the fetched position).
    idx: u16,
    signaled: bool,
    raddr: u64,
    rkey: u32,
    /// Payload bytes (1..=MTU).
    len: u32,
    /// The payload in a registered region of the requester.
    src: *mut u8,
}

/// The responder's side of a fused WRITE.
struct FastTarget {
    /// Device index.
    dd: usize,
    /// QP index.
    qi2: u32,
    /// The payload's destination in a region granting REMOTE_WRITE.
    dst: *mut u8,
    /// The responder's own QP number.
    r_qpn: u32,
}

/// A fused WRITE that passed every check: what the commit applies.
struct FastWrite {
    /// The requester's QP index.
    qi: u32,
    wqe: FastWqe,
    /// The request's PSN and the responder's QP number it is sent to.
    psn: u32,
    dqpn: u32,
    target: FastTarget,
    /// The WQE index BlueFlame delivered is this one; BlueFlame brought
    /// the whole WQE; the QP context missed the cache.
    bf: bool,
    by_bf: bool,
    qpc_miss: bool,
    /// The doorbell's time; the request's departure, link time and
    /// arrival; the ACK's departure and arrival.
    now0: u64,
    depart1: u64,
    wire1: u64,
    t1: u64,
    depart2: u64,
    t_ack: u64,
    /// The transport timeout, if any.
    timer: Option<u64>,
    /// The send CQ and the QP's user index.
    scq: usize,
    uidx: u32,
    /// Link bytes of the DMA reads of a doorbell record, one WQEBB and a
    /// QP context, and of the gather.
    rd_wire: [u64; 3],
    gather_rd_wire: u64,
}

/// The WQE the doorbell record of requester QP `q` (number `qpn`, on
/// device `dev`) covers beyond the fetched position, when it is the only
/// one, the QP can send it at once, and it has the fused shape with a
/// source the QP's PD owns.
#[inline(always)]
fn fast_wqe(dev: &Dev, q: &Qp, qpn: u32) -> Option<FastWqe> {
    // SAFETY: dbrec was translated at QP creation to 8 bytes of live
    // DMA memory; a raw volatile read of the send counter word.
    let pi = u32::from_be_bytes(unsafe { std::ptr::read_volatile(q.dbrec.add(4).cast()) }) as u16;
    let idx = q.sq_fetched;
    if pi.wrapping_sub(idx) != 1
        || q.qpn != qpn
        || q.ty != QpType::Rc
        || q.state != QpState::Rts
        || q.sq_blocked
        || !q.pend.is_empty()
        || q.rnr_wait
        || q.timer_gen & 1 == 1
        || q.sq_nbb == 0
    {
        return None;
    }
    let off = (idx as usize & (q.sq_nbb as usize - 1)) * WQEBB as usize;
    // SAFETY: the ring was translated at QP creation to sq_nbb * 64
    // bytes of live DMA memory; `off` is the offset of a WQEBB inside
    // it and the 48 bytes read lie in that WQEBB. A by-value copy (as
    // the general path's fetch), no reference into DMA memory.
    let w: [u8; 48] = unsafe { std::ptr::read_unaligned(q.sq_ring.add(off).cast()) };
    if w[CtrlSeg::OPCODE_BYTE] != OP_WRITE || w[CtrlSeg::DS_BYTE] != FAST_DS {
        return None;
    }
    let signaled = w[CtrlSeg::FM_CE_SE_BYTE] & FmCeSe::CQ_UPDATE.bits() != 0;
    let raddr = be64(&w, RADDR_AT + offset_of!(RaddrSeg, raddr));
    let rkey = be32(&w, RADDR_AT + offset_of!(RaddrSeg, rkey));
    let len = be32(&w, DATA_AT + offset_of!(DataSeg, byte_count));
    let lkey = be32(&w, DATA_AT + offset_of!(DataSeg, lkey));
    let laddr = be64(&w, DATA_AT + offset_of!(DataSeg, addr));
    // One pointer entry of 1..=MTU bytes: one packet, one gather (no
    // MTU is below 256 bytes).
    if len & INLINE_BIT != 0 || len == 0 || (len > 256 && len > q.attr.mtu_bytes()) {
        return None;
    }
    let n = len as u64;
    let src = dev
        .mr(lkey)
        .filter(|m| m.pd == q.pd)
        .and_then(|m| m.range(laddr, n))?;
    Some(FastWqe {
        pi,
        idx,
        signaled,
        raddr,
        rkey,
        len,
        src,
    })
}

/// The responder of requester QP `q` (number `qpn`) for a WRITE of `n`
/// bytes at `raddr` under `rkey` with PSN `psn`: reached by LID and QPN,
/// executing, connected back to this QP, expecting exactly this PSN, and
/// granting the write.
#[inline(always)]
fn fast_target(devs: &[Dev], q: &Qp, qpn: u32, psn: u32, w: &FastWqe) -> Option<FastTarget> {
    let (rkey, raddr, n) = (w.rkey, w.raddr, w.len as u64);
    let dqpn = q.attr.dest_qp_num;
    let dd = devs.iter().position(|x| x.lid == q.attr.dlid)?;
    let rdev = &devs[dd];
    let qi2 = dqpn.checked_sub(QPN_BASE)?;
    let Some(Some(r)) = rdev.qps.get(qi2 as usize) else {
        return None;
    };
    if !r.state.rq_executes()
        || r.ty != QpType::Rc
        || r.attr.dest_qp_num != qpn
        || psn_diff(psn, r.epsn) != 0
        || !r.attr.qp_access_flags.contains(Access::REMOTE_WRITE)
    {
        return None;
    }
    let dst = rdev
        .mr(rkey)
        .filter(|m| m.pd == r.pd && m.access.contains(Access::REMOTE_WRITE))
        .and_then(|m| m.range(raddr, n))?;
    Some(FastTarget {
        dd,
        qi2,
        dst,
        r_qpn: r.qpn,
    })
}

impl World {
    /// Handles an 8-byte send doorbell of QP `qpn` naming WQE index
    /// `wqe_index` as `sq_doorbell` would, when the one WQE the doorbell
    /// record covers beyond the fetched position is a fused RC WRITE
    /// (control, remote-address and one pointer data segment of at most
    /// one MTU) and every precondition holds; returns false, having
    /// changed nothing, otherwise.
    ///
    /// On success the world is as `sq_doorbell` leaves it: the doorbell
    /// accounted, the WQE fetched and executed, the CQE written, and the
    /// event loop run until idle (it finds nothing to do).
    #[inline]
    pub(super) fn fast_doorbell(&mut self, d: u16, qpn: u32, wqe_index: u16) -> bool {
        if !self.fast_ok() {
            return false;
        }
        let any_error = self.any_error;
        let Some(f) = self.fast_plan(d, qpn) else {
            return false;
        };
        // Commit. The doorbell (host time, counters, the record's check),
        // then at the doorbell's time the fetch, the gather, the request on
        // the wire and the timer armed.
        self.fast_commit_requester(d, wqe_index, &f);
        // SAFETY: `src..src+len` lies inside a registered region of the
        // requester and `dst..dst+len` inside one of the responder granting
        // REMOTE_WRITE (both checked by `fast_plan`), whose memory was
        // translated at registration. `copy` is a memmove: with overlapping
        // ranges the result is that of gathering first and placing later.
        unsafe { std::ptr::copy(f.wqe.src, f.target.dst, f.wqe.len as usize) };
        self.fast_commit_responder(&f);
        self.fast_complete(d, qpn, any_error, &f);
        true
    }

    /// Every precondition of the fused WRITE of QP `qpn` on device `d`,
    /// checked before anything changes (only the memo of length terms may
    /// be refilled), with the times and costs the commit applies.
    #[inline(always)]
    fn fast_plan(&mut self, d: u16, qpn: u32) -> Option<FastWrite> {
        let FastParts {
            params: p,
            costs: k,
            len_costs,
            devs,
            now,
            horizon_ns,
            ..
        } = self.fast_parts();
        let rd_wire = k.rd_wire?;
        let dev = devs.get(d as usize)?;
        let qi = qpn.checked_sub(QPN_BASE)?;
        let Some(Some(q)) = dev.qps.get(qi as usize) else {
            return None;
        };
        // The host's post and doorbell, then the device's fetch.
        let now0 = *now + k.cpu_post;
        let wqe = fast_wqe(dev, q, qpn)?;
        let n = wqe.len as u64;
        let psn = q.next_psn;
        let dqpn = q.attr.dest_qp_num;
        let target = fast_target(devs, q, qpn, psn, &wqe)?;
        let (dd, rdev) = (target.dd, &devs[target.dd]);
        // The fetch as `process_sq` costs it: BlueFlame delivered the WQE
        // or one DMA read, then a QP-context read on a cache miss.
        let bf = q.bf_index == Some(wqe.idx);
        let by_bf = bf && WQEBB <= p.bf_max_bytes as u64;
        let mut fetch_ns = if by_bf {
            p.t_mmio_line_ns * 1.0
        } else {
            k.t_rd_wqebb
        };
        let qpc_miss = !q.in_qpc;
        if qpc_miss {
            fetch_ns += k.t_rd_qpc;
        }
        // Times as the general path computes them: the request leaves
        // after fetch and gather, serialised on the requester's port; the
        // ACK leaves when the request is placed, on the responder's port.
        // Event times are never earlier than the clock when scheduled.
        let lc = len_costs.get(p, n);
        let ready = ceil_u64(u64_f64(now0) + fetch_ns + lc.gather);
        let wire1 = lc.wire_req;
        let depart1 = ready.max(dev.tx_free);
        let t1 = (depart1 + k.t_base).max(now0);
        let tx_free_r = if dd == d as usize {
            depart1 + wire1
        } else {
            rdev.tx_free
        };
        let depart2 = t1.max(tx_free_r);
        let t_ack = (depart2 + k.t_base).max(t1);
        // Both arrivals run in this run-until-idle.
        if t_ack > now0.saturating_add(horizon_ns) {
            return None;
        }
        let timer = transport_timeout_ns(q.attr.timeout);
        if let Some(to) = timer {
            // The retransmission timer must not fire before the ACK.
            if now0 + to <= t_ack {
                return None;
            }
        }
        // The CQE must fit (an overrun is the general path's business).
        let (scq, uidx) = (q.scq, q.uidx);
        if wqe.signaled {
            let Some(Some(cq)) = dev.cqs.get(scq) else {
                return None;
            };
            if cq.error || cq.used() >= cq.ncqe {
                return None;
            }
        }
        Some(FastWrite {
            qi,
            wqe,
            psn,
            dqpn,
            target,
            bf,
            by_bf,
            qpc_miss,
            now0,
            depart1,
            wire1,
            t1,
            depart2,
            t_ack,
            timer,
            scq,
            uidx,
            rd_wire,
            gather_rd_wire: lc.rd_wire,
        })
    }

    /// The requester's effects of the fused WRITE `f` (doorbell naming
    /// `wqe_index`): the clock at the doorbell, the QP-context cache, the
    /// port, the QP's fetch position, PSN and timer, and the counters.
    #[inline(always)]
    fn fast_commit_requester(&mut self, d: u16, wqe_index: u16, f: &FastWrite) {
        let FastParts {
            params: p,
            devs,
            now,
            ..
        } = self.fast_parts();
        let (qi, psn, n) = (f.qi, f.psn, f.wqe.len as u64);
        *now = f.now0;
        let dev = &mut devs[d as usize];
        if f.qpc_miss || dev.lru_head != Some(qi) {
            dev.qpc_touch(qi, p.qpc_cache_qps);
        }
        dev.tx_free = f.depart1 + f.wire1;
        let Dev {
            qps, counters: dc, ..
        } = dev;
        let q = qps[qi as usize].as_mut().expect("qp");
        if f.bf {
            q.bf_index = None;
        }
        q.sq_fetched = f.wqe.idx.wrapping_add(1);
        q.next_psn = (psn + 1) & PSN_MASK;
        if f.timer.is_some() {
            // Armed (odd), then disarmed by the ACK (even).
            q.timer_gen = (q.timer_gen | 1) + 3;
        }
        q.retry_left = q.attr.retry_cnt;
        q.rnr_left = q.attr.rnr_retry;
        // The doorbell record names the WQE (ref §4.3).
        let ahead = f.wqe.pi.wrapping_sub(wqe_index);
        let stale = u64::from(ahead == 0 || ahead > 0x8000);
        // DMA reads: the doorbell record, the WQE unless BlueFlame brought
        // it, the QP context on a miss, the payload.
        let [wire_dbrec, wire_fetch, wire_qpc] = f.rd_wire;
        let (fetched, miss) = (u64::from(!f.by_bf), u64::from(f.qpc_miss));
        let qpc = p.qpc_bytes as u64;
        let reads = 2 + fetched + miss;
        let read_bytes = 4 + fetched * WQEBB + miss * qpc + n;
        let read_wire = wire_dbrec + fetched * wire_fetch + miss * wire_qpc + f.gather_rd_wire;
        for c in [dc, &mut q.counters] {
            c.doorbells += 1;
            c.stale_dbrec += stale;
            c.pcie_reads += reads;
            c.pcie_read_bytes += read_bytes;
            c.pcie_wire_bytes += read_wire;
            c.wqe_bytes_fetched += fetched * WQEBB;
            c.wqes += 1;
            c.qpc_misses += miss;
            c.packets_tx += 1;
            c.payload_tx_bytes += n;
        }
    }

    /// The responder's effects of the fused WRITE `f`: its port (the ACK),
    /// its expected PSN and receive time, and the counters.
    #[inline(always)]
    fn fast_commit_responder(&mut self, f: &FastWrite) {
        let FastParts {
            params: p,
            costs: k,
            devs,
            ..
        } = self.fast_parts();
        let (psn, n) = (f.psn, f.wqe.len as u64);
        let rv = &mut devs[f.target.dd];
        rv.tx_free = f.depart2 + k.wire_ack;
        let Dev {
            qps, counters: rc, ..
        } = rv;
        let r = qps[f.target.qi2 as usize].as_mut().expect("qp");
        r.epsn = (psn + 1) & PSN_MASK;
        r.nak_sent = false;
        r.last_rx_ns = f.t1;
        let write_wire = p.tlp_req_overhead as u64 + n;
        for c in [rc, &mut r.counters] {
            c.pcie_writes += 1;
            c.pcie_write_bytes += n;
            c.pcie_wire_bytes += write_wire;
            c.payload_rx_bytes += n;
            c.packets_tx += 1;
        }
    }

    /// The end of the fused WRITE `f` of QP `qpn`: its trace entries, the
    /// clock at the ACK's arrival, the event sequence numbers its events
    /// would have taken, the ERR scan's note (`any_error` as it was before
    /// the fetch) and the CQE.
    #[inline(always)]
    fn fast_complete(&mut self, d: u16, qpn: u32, any_error: bool, f: &FastWrite) {
        let FastParts { trace: tr, now, .. } = self.fast_parts();
        let (psn, t1, t_ack) = (f.psn, f.t1, f.t_ack);
        let ack_psn = psn & PSN_MASK;
        if let Some(v) = tr.as_mut() {
            // The request sent at the doorbell and placed at t1, the ACK
            // sent then and arriving at t_ack (the CQE is traced below).
            let dd = f.target.dd as u16;
            v.extend_from_slice(&[
                TraceEvent::new(f.now0, TraceKind::Send, d, qpn, psn),
                TraceEvent::new(t1, TraceKind::Arrive, dd, f.dqpn, psn),
                TraceEvent::new(t1, TraceKind::Send, dd, f.target.r_qpn, ack_psn),
                TraceEvent::new(t_ack, TraceKind::Arrive, d, qpn, ack_psn),
            ]);
        }
        *now = t_ack;
        self.bump_seq(if f.timer.is_some() { 3 } else { 2 });
        self.fast_runs += 1;
        if any_error {
            // The general path's run after the fetch scans QPs in ERR
            // before any event (so before the payload lands, which may
            // rewrite a doorbell record): their receives are all flushed
            // (`fast_ok`), so the scan flushes nothing and only notes
            // whether any QP is still in ERR.
            self.any_error = self
                .devs
                .iter()
                .any(|v| v.qps.iter().flatten().any(|q| q.state == QpState::Err));
        }
        if f.wqe.signaled {
            let c = Self::req_cqe(OP_WRITE, qpn, f.wqe.idx, f.uidx, 0);
            self.put_cqe(d, f.scq, c, false);
            if let Some(q) = self.qp(d, f.qi) {
                q.counters.cqes += 1;
            }
            // As after the ACK's event: a CQ the payload made look full
            // (its doorbell record inside the written range) overruns
            // here, and its QPs go to ERR now.
            self.settle();
        }
    }
}
