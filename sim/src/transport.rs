//! The transport engine: send-queue fetch and execution (requester),
//! request execution (responder), RC acknowledgements, RNR NAK, the
//! retransmission timer, UC and UD, error completions and flushes.
//!
//! Messages are modelled as one wire event each; a message of `len` bytes
//! consumes `max(1, ceil(len / path_mtu))` PSNs as its packets would, so
//! PSN arithmetic matches the wire. RC uses go-back-N: a gap makes the
//! responder NAK (PSN sequence error) once, and the requester resends from
//! the NAK'd PSN; lost ACKs are recovered by the transport timer
//! (4.096 µs × 2^timeout) and the responder re-ACKs duplicates. READ
//! duplicates are re-executed, atomic duplicates replayed from a cache.
//!
//! Atomics operate on big-endian 64-bit values in memory, and the original
//! value is written big-endian to the local buffer (ConnectX byte order).

use crate::cost::ceil_u64;
use crate::objects::Qp;
use crate::world::{cnt2, vendor, Event, TraceKind, World};
use bareverbs::cqe::Cqe64;
use bareverbs::cqe::Syndrome;
use bareverbs::mr::Access;
use bareverbs::qp::{QpState, QpType};
use bareverbs::wqe::{DataEntry, QpType as WqeQpType, RecvWqe, SendWqe, INVALID_LKEY};
use std::collections::VecDeque;
use std::rc::Rc;

mod fast;

/// RNR NAK timer values by code (µs ×100 to keep integers: code → ns).
/// IBA table: 0 = 655.36 ms, 1 = 0.01 ms … 31 = 491.52 ms (perf ref §3).
pub const RNR_TIMER_NS: [u64; 32] = [
    655_360_000,
    10_000,
    20_000,
    30_000,
    40_000,
    60_000,
    80_000,
    120_000,
    160_000,
    240_000,
    320_000,
    480_000,
    640_000,
    960_000,
    1_280_000,
    1_920_000,
    2_560_000,
    3_840_000,
    5_120_000,
    7_680_000,
    10_240_000,
    15_360_000,
    20_480_000,
    30_720_000,
    40_960_000,
    61_440_000,
    81_920_000,
    122_880_000,
    163_840_000,
    245_760_000,
    327_680_000,
    491_520_000,
];

/// Transport timeout for exponent `t`: 4.096 µs × 2^t (0 = infinite).
pub const fn transport_timeout_ns(t: u8) -> Option<u64> {
    if t == 0 {
        None
    } else {
        Some(4096u64 << (t as u32 & 31))
    }
}

const PSN_MASK: u32 = 0x00ff_ffff;

/// Signed distance `a - b` in 24-bit PSN space.
fn psn_diff(a: u32, b: u32) -> i32 {
    ((a.wrapping_sub(b) << 8) as i32) >> 8
}

/// What a request message carries.
#[derive(Debug)]
pub(crate) enum Req {
    Send {
        data: Vec<u8>,
        imm: Option<[u8; 4]>,
        inv: Option<u32>,
    },
    Write {
        raddr: u64,
        rkey: u32,
        data: Vec<u8>,
        imm: Option<[u8; 4]>,
    },
    Read {
        raddr: u64,
        rkey: u32,
        len: u32,
    },
    Atomic {
        raddr: u64,
        rkey: u32,
        cs: bool,
        swap_add: u64,
        compare: u64,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Nak {
    Rnr(u8),
    Seq,
    RemAccess,
    InvReq,
    RemOp,
}

#[derive(Clone, Debug)]
pub(crate) enum Body {
    Req {
        psn: u32,
        npkts: u32,
        req: Rc<Req>,
        ud_qkey: Option<u32>,
        grh: bool,
        solicited: bool,
    },
    Ack {
        psn: u32,
    },
    Nak {
        psn: u32,
        nak: Nak,
    },
    ReadResp {
        psn: u32,
        data: Rc<Vec<u8>>,
    },
    AtomicResp {
        psn: u32,
        orig: u64,
    },
}

/// A message on the wire.
#[derive(Clone, Debug)]
pub(crate) struct Packet {
    pub src_dev: u16,
    pub src_qpn: u32,
    pub dst_dev: u16,
    pub dst_qpn: u32,
    pub body: Body,
}

impl Packet {
    pub fn psn(&self) -> u32 {
        match &self.body {
            Body::Req { psn, .. }
            | Body::Ack { psn }
            | Body::Nak { psn, .. }
            | Body::ReadResp { psn, .. }
            | Body::AtomicResp { psn, .. } => *psn,
        }
    }
}

/// An SQ WQE the device has fetched and not yet completed.
#[derive(Debug)]
pub(crate) struct Pending {
    pub wqe_counter: u16,
    pub opcode: u8,
    pub signaled: bool,
    pub psn: u32,
    pub npkts: u32,
    pub req: Option<Rc<Req>>,
    pub solicited: bool,
    /// Local buffers a READ response / atomic result is scattered to.
    pub local: Vec<(*mut u8, u32)>,
    pub byte_cnt: u32,
    pub done: bool,
    pub err: Option<u8>,
}

/// Responder resources for duplicate atomics: (psn, original value).
#[derive(Debug, Default)]
pub(crate) struct RespCache {
    atomics: VecDeque<(u32, u64)>,
}

impl RespCache {
    fn find(&self, psn: u32) -> Option<u64> {
        self.atomics
            .iter()
            .find(|(p, _)| *p == psn)
            .map(|(_, v)| *v)
    }
    fn push(&mut self, psn: u32, v: u64) {
        if self.atomics.len() >= 64 {
            self.atomics.pop_front();
        }
        self.atomics.push_back((psn, v));
    }
}

fn wqe_type(t: QpType) -> WqeQpType {
    match t {
        QpType::Rc => WqeQpType::Rc,
        QpType::Uc => WqeQpType::Uc,
        QpType::Ud => WqeQpType::Ud,
        QpType::RawPacket => WqeQpType::RawPacket,
        QpType::XrcSend | QpType::XrcRecv => WqeQpType::Xrc,
    }
}

/// Whether the QP type allows mlx5 opcode `op` ([ref §1.7](bareverbs::reference)).
fn op_allowed(t: QpType, op: u8) -> bool {
    match t {
        QpType::Rc => matches!(
            op,
            0x00 | 0x01 | 0x08 | 0x09 | 0x0a | 0x0b | 0x10 | 0x11 | 0x12
        ),
        QpType::Uc => matches!(op, 0x00 | 0x08 | 0x09 | 0x0a | 0x0b),
        QpType::Ud => matches!(op, 0x00 | 0x0a | 0x0b),
        _ => false,
    }
}

/// Reads `n` bytes of DMA memory at `p` into a vector.
///
/// # Safety
/// `p` must be valid for reads of `n` bytes (a range checked against a
/// memory region or an object created through the DMA table).
unsafe fn dma_read(p: *const u8, n: usize) -> Vec<u8> {
    let mut v = vec![0u8; n];
    // SAFETY: forwarded contract; `v` is fresh host memory.
    unsafe { std::ptr::copy(p, v.as_mut_ptr(), n) };
    v
}

/// Writes `src` to DMA memory at `p`.
///
/// # Safety
/// `p` must be valid for writes of `src.len()` bytes (checked range).
unsafe fn dma_write(p: *mut u8, src: &[u8]) {
    // SAFETY: forwarded contract; `copy` tolerates overlap with the source.
    unsafe { std::ptr::copy(src.as_ptr(), p, src.len()) };
}

fn rd_be32(p: *const u8) -> u32 {
    // SAFETY: callers pass doorbell-record words translated at creation.
    u32::from_be_bytes(unsafe { std::ptr::read_volatile(p.cast::<[u8; 4]>()) })
}

impl World {
    pub(crate) fn qp(&mut self, d: u16, qi: u32) -> Option<&mut Qp> {
        self.devs
            .get_mut(d as usize)?
            .qps
            .get_mut(qi as usize)?
            .as_mut()
    }

    fn find_qp(&self, d: u16, qpn: u32) -> Option<u32> {
        let qi = qpn.checked_sub(crate::world::QPN_BASE)?;
        let dev = self.devs.get(d as usize)?;
        matches!(dev.qps.get(qi as usize), Some(Some(_))).then_some(qi)
    }

    fn dev_by_lid(&self, lid: u16) -> Option<u16> {
        self.devs
            .iter()
            .position(|x| x.lid == lid)
            .map(|i| i as u16)
    }

    // ------------------------------------------------------------------
    // Doorbells and SQ fetch.

    /// An 8-byte send doorbell (or the end of a BlueFlame write) naming
    /// `qpn` with WQE index `wqe_index`.
    pub(crate) fn sq_doorbell(&mut self, d: u16, qpn: u32, wqe_index: u16, bf_chunks: u32) {
        // One WRITE in the common shape runs fused when nothing else can
        // happen before it completes (see `fast`).
        if bf_chunks == 0 && self.fast_doorbell(d, qpn, wqe_index) {
            return;
        }
        self.devs[d as usize].counters.doorbells += 1;
        let Some(qi) = self.find_qp(d, qpn) else {
            self.devs[d as usize].counters.ignored_doorbells += 1;
            return;
        };
        // The host spent t_post + t_db on this post (round(t_post + t_db)).
        let cpu = self.costs().cpu_post;
        if !self.auto_progress {
            self.run_until(self.now + cpu);
        } else {
            self.now += cpu;
        }
        {
            let q = self.qp(d, qi).expect("found");
            q.counters.doorbells += 1;
            if bf_chunks > 0 {
                q.bf_index = Some(wqe_index);
                q.counters.bf_writes += 1;
                q.counters.bf_chunks += bf_chunks as u64;
            }
        }
        if bf_chunks > 0 {
            let dv = &mut self.devs[d as usize].counters;
            dv.bf_writes += 1;
            dv.bf_chunks += bf_chunks as u64;
        }
        // The doorbell names the last WQE of the batch; the doorbell
        // record must already cover it (ref §4.3 step 4 before step 6).
        if let Some(q) = self.qp(d, qi) {
            let pi = rd_be32(q.dbrec.wrapping_add(4)) as u16;
            let ahead = pi.wrapping_sub(wqe_index);
            if ahead == 0 || ahead > 0x8000 {
                q.counters.stale_dbrec += 1;
                self.devs[d as usize].counters.stale_dbrec += 1;
            }
        }
        self.process_sq(d, qi);
        self.settle();
        if self.auto_progress {
            self.run_until_idle();
        }
    }

    /// Fetches and executes every posted SQ WQE the QP state allows.
    pub(crate) fn process_sq(&mut self, d: u16, qi: u32) {
        let p = *self.params();
        let Some(q) = self.qp(d, qi) else { return };
        if q.sq_nbb == 0 {
            return;
        }
        match q.state {
            QpState::Rts => {}
            QpState::Err | QpState::Sqe => {
                self.flush_sq_posted(d, qi);
                return;
            }
            _ => {
                // RESET/INIT/RTR/SQD: the doorbell is ignored; posted WQEs
                // wait for RTS.
                q.counters.ignored_doorbells += 1;
                self.devs[d as usize].counters.ignored_doorbells += 1;
                return;
            }
        }
        // The producer counter from the doorbell record (one DMA read).
        let pi = rd_be32(q.dbrec.wrapping_add(4)) as u16;
        cnt2(self, d, qi, |c, p| c.dma_read(p, 4));
        let mut first_in_batch = true;
        let mut guard = 0u32;
        let limit = self.pass_limit;
        loop {
            let q = self.qp(d, qi).expect("qp");
            if q.state != QpState::Rts || q.sq_blocked {
                break;
            }
            let avail = pi.wrapping_sub(q.sq_fetched);
            if avail == 0 || guard >= limit {
                break;
            }
            guard += 1;
            let nbb = q.sq_nbb;
            let ring_bytes = nbb as usize * 64;
            let idx = q.sq_fetched;
            let off = (idx as usize & (nbb as usize - 1)) * 64;
            // SAFETY: the ring was translated at QP creation to sq_nbb * 64
            // bytes of live DMA memory; off + 8 <= ring_bytes.
            let raw_ds = unsafe { std::ptr::read_volatile(q.sq_ring.add(off + 7)) };
            let ds = raw_ds & 0x3f;
            let mut bbs = (ds as u32 * 16).div_ceil(64).max(1) as u16;
            if bbs as u32 > nbb {
                // Larger than the whole ring: never complete. It fails as
                // one WQEBB (LOCAL_QP_OP in exec_wqe) and stops the SQ.
                bbs = 1;
            }
            if bbs > avail {
                // The record does not cover the whole WQE yet.
                break;
            }
            let q = self.qp(d, qi).expect("qp");
            let bf = q.bf_index == Some(idx);
            if bf {
                q.bf_index = None;
            }
            let wbytes = bbs as u64 * 64;
            q.sq_fetched = idx.wrapping_add(bbs);
            // Cost: BlueFlame delivered the WQE, or one DMA read per batch.
            let fetch = if bf && wbytes <= p.bf_max_bytes as u64 {
                p.t_mmio_line_ns * bbs as f64
            } else if first_in_batch {
                p.t_rd(wbytes)
            } else {
                p.beta_ns_per_byte * wbytes as f64
            };
            if !(bf && wbytes <= p.bf_max_bytes as u64) {
                cnt2(self, d, qi, |c, p| {
                    c.wqe_bytes_fetched += wbytes;
                    if first_in_batch {
                        c.dma_read(p, wbytes)
                    } else {
                        c.pcie_read_bytes += wbytes;
                        c.pcie_wire_bytes += wbytes
                            + wbytes.div_ceil(p.read_cpl_bytes as u64) * p.tlp_cpl_overhead as u64;
                    }
                });
                first_in_batch = false;
            }
            cnt2(self, d, qi, |c, _| c.wqes += 1);
            // QP-context cache: a miss costs one context read first.
            let mut fetch = fetch;
            if self.devs[d as usize].qpc_touch(qi, p.qpc_cache_qps) {
                fetch += p.t_rd(p.qpc_bytes as u64);
                let n = p.qpc_bytes as u64;
                cnt2(self, d, qi, |c, p| {
                    c.qpc_misses += 1;
                    c.dma_read(p, n);
                });
            }
            let len = (raw_ds as usize * 16).min(ring_bytes).max(64);
            let mut local = std::mem::take(&mut self.scratch);
            local.resize(63 * 16 + 64, 0);
            let take = len.min(local.len());
            let first = take.min(ring_bytes - off);
            let q = self.qp(d, qi).expect("qp");
            // SAFETY: both copies stay inside the ring (first <= ring_bytes
            // - off, the remainder < ring_bytes); `local` is host memory.
            unsafe {
                std::ptr::copy_nonoverlapping(q.sq_ring.add(off), local.as_mut_ptr(), first);
                if take > first {
                    std::ptr::copy_nonoverlapping(
                        q.sq_ring,
                        local.as_mut_ptr().add(first),
                        take - first,
                    );
                }
            }
            self.exec_wqe(d, qi, &local[..take], idx, fetch, ring_bytes);
            self.scratch = local;
        }
    }

    /// Validates and executes one WQE (bytes copied out of the ring).
    fn exec_wqe(&mut self, d: u16, qi: u32, bytes: &[u8], idx: u16, fetch_ns: f64, ring: usize) {
        let p = *self.params();
        let q = self.qp(d, qi).expect("qp");
        let ty = q.ty;
        let opcode = bytes.get(3).copied().unwrap_or(0);
        let signaled = bytes.get(11).is_some_and(|b| b & 0x08 != 0);
        let solicited = bytes.get(11).is_some_and(|b| b & 0x02 != 0);
        let mut pend = Pending {
            wqe_counter: idx,
            opcode,
            signaled,
            psn: 0,
            npkts: 0,
            req: None,
            solicited,
            local: Vec::new(),
            byte_cnt: 0,
            done: false,
            err: None,
        };
        let ds_bytes = bytes.get(7).copied().unwrap_or(0) as usize * 16;
        if ds_bytes > ring {
            pend.err = Some(Syndrome::LocalQpOpErr.as_u8());
            return self.push_pending(d, qi, pend);
        }
        let wqe = match SendWqe::parse(bytes, wqe_type(ty)) {
            Ok(w) => w,
            Err(_) => {
                pend.err = Some(Syndrome::LocalQpOpErr.as_u8());
                return self.push_pending(d, qi, pend);
            }
        };
        if !op_allowed(ty, opcode) {
            pend.err = Some(Syndrome::LocalQpOpErr.as_u8());
            return self.push_pending(d, qi, pend);
        }
        if opcode == 0x00 {
            // NOP: completes in order, no transport.
            pend.done = true;
            return self.push_pending(d, qi, pend);
        }
        let pd = q.pd;
        let mtu = q.attr.mtu_bytes();
        let is_read = opcode == 0x10;
        let is_atomic = opcode == 0x11 || opcode == 0x12;
        // Gather (SEND/WRITE) or collect local scatter targets (READ/atomic).
        let mut data = self.buf_pool.pop().unwrap_or_default();
        let mut sges = 0u32;
        let mut first_len = 0u32;
        let mut inline = false;
        let mut total: u64 = 0;
        let dev = &self.devs[d as usize];
        for e in wqe.data_entries() {
            match e {
                DataEntry::Inline(il) => {
                    if is_read || is_atomic {
                        pend.err = Some(Syndrome::LocalQpOpErr.as_u8());
                        break;
                    }
                    inline = true;
                    let start = data.len();
                    data.resize(start + il.len as usize, 0);
                    il.payload.copy_to(&mut data[start..]);
                    total += il.len as u64;
                }
                DataEntry::Ptr(s) => {
                    let len = s.byte_count.get() as u64;
                    let lkey = s.lkey.get();
                    let addr = s.addr.get();
                    if len == 0 {
                        continue;
                    }
                    sges += 1;
                    if sges == 1 {
                        first_len = len as u32;
                    }
                    total += len;
                    if total > 1 << 31 {
                        pend.err = Some(Syndrome::LocalLengthErr.as_u8());
                        break;
                    }
                    let need = if is_read || is_atomic {
                        Access::LOCAL_WRITE
                    } else {
                        Access::empty()
                    };
                    let ptr = dev
                        .mr(lkey)
                        .filter(|m| m.pd == pd && m.access.contains(need));
                    let Some(ptr) = ptr.and_then(|m| m.range(addr, len)) else {
                        pend.err = Some(Syndrome::LocalProtErr.as_u8());
                        break;
                    };
                    if is_read || is_atomic {
                        pend.local.push((ptr, len as u32));
                    } else {
                        let start = data.len();
                        data.reserve(len as usize);
                        // SAFETY: `ptr..ptr+len` lies inside a registered
                        // region whose memory was translated at registration;
                        // the destination is the reserved, unused tail of
                        // `data` (capacity >= start + len), and every byte
                        // of it is written before the length covers it.
                        unsafe {
                            std::ptr::copy(ptr, data.as_mut_ptr().add(start), len as usize);
                            data.set_len(start + len as usize);
                        }
                    }
                }
            }
        }
        if pend.err.is_some() {
            return self.push_pending(d, qi, pend);
        }
        if is_atomic && total != 8 {
            pend.err = Some(Syndrome::LocalLengthErr.as_u8());
            return self.push_pending(d, qi, pend);
        }
        // Gather cost and counters.
        let gather = if inline || sges == 0 {
            0.0
        } else {
            p.t_rd(first_len as u64) + (sges - 1) as f64 * p.t_sge_ns
        };
        if !is_read && !is_atomic && !inline {
            let n = sges as u64;
            let bytes_read = data.len() as u64;
            cnt2(self, d, qi, |c, p| {
                if n > 0 {
                    c.pcie_reads += n;
                    c.pcie_read_bytes += bytes_read;
                    c.pcie_wire_bytes += n * p.tlp_req_overhead as u64
                        + bytes_read
                        + bytes_read.div_ceil(p.read_cpl_bytes as u64).max(n)
                            * p.tlp_cpl_overhead as u64;
                }
            });
        }
        let imm_raw = wqe.ctrl.imm.raw();
        let req = match opcode {
            0x0a => Req::Send {
                data,
                imm: None,
                inv: None,
            },
            0x0b => Req::Send {
                data,
                imm: Some(imm_raw),
                inv: None,
            },
            0x01 => Req::Send {
                data,
                imm: None,
                inv: Some(u32::from_be_bytes(imm_raw)),
            },
            0x08 | 0x09 => {
                let r = wqe.raddr.unwrap_or_default();
                Req::Write {
                    raddr: r.raddr.get(),
                    rkey: r.rkey.get(),
                    data,
                    imm: (opcode == 0x09).then_some(imm_raw),
                }
            }
            0x10 => {
                let r = wqe.raddr.unwrap_or_default();
                pend.byte_cnt = total as u32;
                Req::Read {
                    raddr: r.raddr.get(),
                    rkey: r.rkey.get(),
                    len: total as u32,
                }
            }
            _ => {
                let r = wqe.raddr.unwrap_or_default();
                let a = wqe.atomic.unwrap_or_default();
                pend.byte_cnt = 8;
                Req::Atomic {
                    raddr: r.raddr.get(),
                    rkey: r.rkey.get(),
                    cs: opcode == 0x11,
                    swap_add: a.swap_add.get(),
                    compare: a.compare.get(),
                }
            }
        };
        let msg_len = match &req {
            Req::Send { data, .. } | Req::Write { data, .. } => data.len() as u32,
            Req::Read { len, .. } => *len,
            Req::Atomic { .. } => 8,
        };
        // Reuse a released request cell instead of allocating one.
        let req = match self.req_pool.pop() {
            Some(mut cell) => match Rc::get_mut(&mut cell) {
                Some(r) => {
                    *r = req;
                    cell
                }
                None => Rc::new(req),
            },
            None => Rc::new(req),
        };
        // Destination.
        let q = self.qp(d, qi).expect("qp");
        let (dlid, dqpn, ud_qkey, grh) = if ty == QpType::Ud {
            let av = wqe.av.unwrap_or_default();
            let grh = av.grh_gid_fl.get() & (1 << 30) != 0;
            let qkey = u32::from_be_bytes([av.key[0], av.key[1], av.key[2], av.key[3]]);
            (av.rlid.get(), av.dqp_dct.get() & PSN_MASK, Some(qkey), grh)
        } else {
            (q.attr.dlid, q.attr.dest_qp_num, None, q.attr.grh)
        };
        if ty == QpType::Ud && msg_len > mtu {
            pend.err = Some(Syndrome::LocalLengthErr.as_u8());
            return self.push_pending(d, qi, pend);
        }
        let npkts = msg_len.div_ceil(mtu).max(1);
        pend.psn = q.next_psn;
        pend.npkts = if ty == QpType::Ud { 1 } else { npkts };
        q.next_psn = (q.next_psn + pend.npkts) & PSN_MASK;
        pend.req = Some(req.clone());
        let reliable = ty == QpType::Rc;
        let src_qpn = q.qpn;
        let depart_cpu = self.now as f64 + fetch_ns + gather;
        let dst_dev = self.dev_by_lid(dlid);
        let psn = pend.psn;
        let npk = pend.npkts;
        let wqe_counter = pend.wqe_counter;
        // UC/UD complete once the message has left the port (not before:
        // the port serialises them, so their completions keep link pace);
        // with no route they complete at once.
        if !reliable && dst_dev.is_none() {
            pend.done = true;
        }
        self.push_pending(d, qi, pend);
        if let Some(dd) = dst_dev {
            let pkt = Packet {
                src_dev: d,
                src_qpn,
                dst_dev: dd,
                dst_qpn: dqpn,
                body: Body::Req {
                    psn,
                    npkts: npk,
                    req,
                    ud_qkey,
                    grh,
                    solicited,
                },
            };
            let sent = self.send_packet(d, qi, ceil_u64(depart_cpu), pkt, msg_len as u64, false);
            if !reliable {
                self.schedule(
                    sent,
                    Event::TxDone {
                        dev: d,
                        qi,
                        psn,
                        wqe_counter,
                    },
                );
            }
        }
        if reliable {
            self.arm_retry(d, qi, false);
        }
    }

    /// An unreliable message finished transmitting: its pending entry is
    /// done; completes what is at the head.
    pub(crate) fn tx_done(&mut self, d: u16, qi: u32, psn: u32, wqe_counter: u16) {
        let Some(q) = self.qp(d, qi) else { return };
        let Some(p) = q
            .pend
            .iter_mut()
            .find(|p| p.psn == psn && p.wqe_counter == wqe_counter && p.err.is_none())
        else {
            return;
        };
        p.done = true;
        self.drain(d, qi);
    }

    /// Transmits a packet from device `d`, serialising on its port.
    /// Returns when its last bit leaves the port.
    #[inline]
    fn send_packet(
        &mut self,
        d: u16,
        qi: u32,
        ready: u64,
        pkt: Packet,
        payload: u64,
        rexmit: bool,
    ) -> u64 {
        let wire = ceil_u64(self.params().t_wire(payload + 64));
        let dev = &mut self.devs[d as usize];
        let depart = ready.max(dev.tx_free);
        dev.tx_free = depart + wire;
        cnt2(self, d, qi, |c, _| {
            c.packets_tx += 1;
            c.payload_tx_bytes += payload;
            if rexmit {
                c.retransmits += 1;
            }
        });
        self.transmit(depart, pkt);
        depart + wire
    }

    /// Queues a fetched WQE and completes whatever is at the head.
    #[inline]
    fn push_pending(&mut self, d: u16, qi: u32, pend: Pending) {
        let q = self.qp(d, qi).expect("qp");
        if pend.err.is_some() {
            q.sq_blocked = true;
        }
        q.pend.push_back(pend);
        self.drain(d, qi);
    }

    /// Completes head entries that are done (CQE if signaled) and stops at
    /// the first that is not; an entry with an error completes with its
    /// syndrome and moves the QP to ERR (which flushes the rest).
    fn drain(&mut self, d: u16, qi: u32) {
        loop {
            let Some(q) = self.qp(d, qi) else { return };
            if q.state == QpState::Err {
                return;
            }
            let Some(head) = q.pend.front() else { return };
            if let Some(s) = head.err {
                let h = q.pend.pop_front().expect("head");
                let (qpn, uidx, scq, ty) = (q.qpn, q.uidx, q.scq, q.ty);
                self.emit_err(d, scq, true, qpn, uidx, h.opcode, h.wqe_counter, s);
                if matches!(ty, QpType::Ud | QpType::Uc) {
                    // UD/UC send errors stop only the send queue (SQE);
                    // receives keep working. IBA 10.3.1.
                    self.qp_to_sqe(d, qi);
                } else {
                    self.qp_to_error(d, qi);
                }
                return;
            }
            if !head.done {
                return;
            }
            let mut h = q.pend.pop_front().expect("head");
            if let Some(mut r) = h.req.take() {
                // Recycle the request cell and its payload buffer once no
                // packet holds them.
                if let Some(req) = Rc::get_mut(&mut r) {
                    if let Req::Send { data, .. } | Req::Write { data, .. } = req {
                        let mut data = std::mem::take(data);
                        if self.buf_pool.len() < 256 && data.capacity() <= 1 << 16 {
                            data.clear();
                            self.buf_pool.push(data);
                        }
                    }
                    if self.req_pool.len() < 256 {
                        self.req_pool.push(r);
                    }
                }
            }
            let Some(q) = self.qp(d, qi) else { return };
            if h.signaled {
                let (qpn, uidx, scq) = (q.qpn, q.uidx, q.scq);
                let c = Self::req_cqe(h.opcode, qpn, h.wqe_counter, uidx, h.byte_cnt);
                self.write_cqe(d, scq, c, false);
                if let Some(q) = self.qp(d, qi) {
                    q.counters.cqes += 1;
                }
            }
        }
    }

    /// The successful requester CQE (REQ, opcode 0) of send WQE `opcode`
    /// with counter `counter` on QP `qpn` (user index `uidx`). [ref §5.1](bareverbs::reference).
    #[inline]
    fn req_cqe(opcode: u8, qpn: u32, counter: u16, uidx: u32, byte_cnt: u32) -> Cqe64 {
        let mut c = Cqe64::default();
        c.set_sop_drop_qpn((opcode as u32) << 24 | qpn)
            .set_wqe_counter(counter)
            .set_srqn_uidx(uidx & PSN_MASK)
            .set_byte_cnt(byte_cnt)
            .set_op_own(0x00);
        c
    }

    /// Writes an error CQE (REQ_ERR 13 or RESP_ERR 14). [ref §5.5](bareverbs::reference).
    #[allow(clippy::too_many_arguments)]
    fn emit_err(
        &mut self,
        d: u16,
        cq: usize,
        req: bool,
        qpn: u32,
        uidx: u32,
        opcode: u8,
        counter: u16,
        s: u8,
    ) {
        let mut c = Cqe64::default();
        c.set_srqn_uidx(uidx & PSN_MASK)
            .set_syndrome(s)
            .set_vendor_err_synd(vendor::of(s))
            .set_sop_drop_qpn(if req { (opcode as u32) << 24 } else { 0 } | qpn)
            .set_wqe_counter(counter)
            .set_op_own(if req { 13 << 4 } else { 14 << 4 });
        self.write_cqe(d, cq, c, true);
        if let Some(qi) = self.find_qp(d, qpn) {
            if let Some(q) = self.qp(d, qi) {
                q.counters.cqes += 1;
                q.counters.err_cqes += 1;
            }
        }
    }

    /// Moves a QP to ERR and flushes every outstanding and posted WQE in
    /// order: fetched SQ WQEs, then posted ones, then the RQ. [ref §5.10](bareverbs::reference).
    pub(crate) fn qp_to_error(&mut self, d: u16, qi: u32) {
        let Some(q) = self.qp(d, qi) else { return };
        if q.state == QpState::Err {
            return;
        }
        let qpn = q.qpn;
        q.state = QpState::Err;
        q.timer_gen = (q.timer_gen | 1) + 1; // no timer armed
        q.rnr_wait = false;
        self.any_error = true;
        self.trace(TraceKind::QpError, d, qpn, 0);
        let q = self.qp(d, qi).expect("qp");
        let pend: Vec<Pending> = q.pend.drain(..).collect();
        let (uidx, scq) = (q.uidx, q.scq);
        for h in pend {
            let s = h.err.unwrap_or(Syndrome::WrFlushErr.as_u8());
            self.emit_err(d, scq, true, qpn, uidx, h.opcode, h.wqe_counter, s);
        }
        self.flush_sq_posted(d, qi);
        self.flush_rq(d, qi);
    }

    /// Moves a UD/UC QP to SQE: the rest of the send queue is flushed in
    /// order; the receive queue is untouched.
    fn qp_to_sqe(&mut self, d: u16, qi: u32) {
        let Some(q) = self.qp(d, qi) else { return };
        q.state = QpState::Sqe;
        q.timer_gen = (q.timer_gen | 1) + 1;
        let pend: Vec<Pending> = q.pend.drain(..).collect();
        let (qpn, uidx, scq) = (q.qpn, q.uidx, q.scq);
        for h in pend {
            self.emit_err(
                d,
                scq,
                true,
                qpn,
                uidx,
                h.opcode,
                h.wqe_counter,
                Syndrome::WrFlushErr.as_u8(),
            );
        }
        self.flush_sq_posted(d, qi);
    }

    /// Flushes SQ WQEs posted (doorbell record) but not yet fetched.
    fn flush_sq_posted(&mut self, d: u16, qi: u32) {
        let Some(q) = self.qp(d, qi) else { return };
        if q.sq_nbb == 0 {
            return;
        }
        let pi = rd_be32(q.dbrec.wrapping_add(4)) as u16;
        let (qpn, uidx, scq) = (q.qpn, q.uidx, q.scq);
        let mut guard = 0;
        let limit = self.pass_limit;
        loop {
            let q = self.qp(d, qi).expect("qp");
            let avail = pi.wrapping_sub(q.sq_fetched);
            if avail == 0 || guard >= limit {
                break;
            }
            guard += 1;
            let idx = q.sq_fetched;
            let off = (idx as usize & (q.sq_nbb as usize - 1)) * 64;
            // SAFETY: ctrl bytes of a slot inside the translated SQ ring.
            let (op, ds) = unsafe {
                (
                    std::ptr::read_volatile(q.sq_ring.add(off + 3)),
                    std::ptr::read_volatile(q.sq_ring.add(off + 7)) & 0x3f,
                )
            };
            let bbs = ((ds as u32 * 16).div_ceil(64).max(1) as u16).min(avail);
            q.sq_fetched = idx.wrapping_add(bbs);
            self.emit_err(
                d,
                scq,
                true,
                qpn,
                uidx,
                op,
                idx,
                Syndrome::WrFlushErr.as_u8(),
            );
        }
    }

    /// Whether [`Self::flush_rq`] of QP `q` would flush nothing.
    pub(crate) fn rq_flushed(q: &Qp) -> bool {
        q.rq_nwqe == 0 || q.srq.is_some() || rd_be32(q.dbrec) as u16 == q.rq_consumed
    }

    /// Flushes every posted receive WQE of a QP with its own RQ.
    pub(crate) fn flush_rq(&mut self, d: u16, qi: u32) {
        let Some(q) = self.qp(d, qi) else { return };
        if q.rq_nwqe == 0 || q.srq.is_some() {
            return;
        }
        let posted = rd_be32(q.dbrec) as u16;
        let (qpn, uidx, rcq) = (q.qpn, q.uidx, q.rcq);
        let mut guard = 0;
        let limit = self.pass_limit;
        loop {
            let q = self.qp(d, qi).expect("qp");
            if q.rq_consumed == posted || guard >= limit {
                break;
            }
            guard += 1;
            let c = q.rq_consumed;
            q.rq_consumed = c.wrapping_add(1);
            self.emit_err(d, rcq, false, qpn, uidx, 0, c, Syndrome::WrFlushErr.as_u8());
        }
    }

    // ------------------------------------------------------------------
    // Timers.

    #[inline]
    fn arm_retry(&mut self, d: u16, qi: u32, rearm: bool) {
        let Some(q) = self.qp(d, qi) else { return };
        let Some(to) = transport_timeout_ns(q.attr.timeout) else {
            return;
        };
        if q.rnr_wait {
            return;
        }
        if !rearm && q.timer_gen & 1 == 1 {
            return; // already armed (odd generation = armed)
        }
        q.timer_gen = (q.timer_gen | 1) + 2;
        let gen = q.timer_gen;
        let t = self.now + to;
        self.schedule_retry(t, d, qi, gen);
    }

    #[inline]
    fn disarm_retry(&mut self, d: u16, qi: u32) {
        if let Some(q) = self.qp(d, qi) {
            if q.timer_gen & 1 == 1 {
                q.timer_gen += 1;
            }
        }
        self.drop_stale_timer(d, qi);
    }

    pub(crate) fn retry_timer(&mut self, d: u16, qi: u32, gen: u64) {
        let Some(q) = self.qp(d, qi) else { return };
        if q.timer_gen != gen || q.state != QpState::Rts || q.rnr_wait {
            return;
        }
        q.timer_gen = (q.timer_gen | 1) + 1; // disarmed
        let Some(first) = q.pend.iter().position(|p| !p.done && p.err.is_none()) else {
            return;
        };
        let qpn = q.qpn;
        q.counters.timeouts += 1;
        self.devs[d as usize].counters.timeouts += 1;
        let psn = self.qp(d, qi).expect("qp").pend[first].psn;
        self.trace(TraceKind::Timeout, d, qpn, psn);
        let q = self.qp(d, qi).expect("qp");
        if q.retry_left == 0 {
            q.pend[first].err = Some(Syndrome::TransportRetryExcErr.as_u8());
            return self.drain(d, qi);
        }
        q.retry_left -= 1;
        self.resend_from(d, qi, first);
        self.arm_retry(d, qi, true);
    }

    pub(crate) fn rnr_timer(&mut self, d: u16, qi: u32, gen: u64) {
        let Some(q) = self.qp(d, qi) else { return };
        if q.timer_gen != gen || q.state != QpState::Rts || !q.rnr_wait {
            return;
        }
        q.rnr_wait = false;
        q.timer_gen = (q.timer_gen | 1) + 1;
        let qpn = q.qpn;
        let Some(first) = q.pend.iter().position(|p| !p.done && p.err.is_none()) else {
            return;
        };
        let psn = q.pend[first].psn;
        self.trace(TraceKind::RnrRetry, d, qpn, psn);
        self.resend_from(d, qi, first);
        self.arm_retry(d, qi, true);
    }

    /// Go-back-N: resends every incomplete request from entry `first`.
    fn resend_from(&mut self, d: u16, qi: u32, first: usize) {
        let q = self.qp(d, qi).expect("qp");
        let (src_qpn, dlid, dqpn, grh) = (q.qpn, q.attr.dlid, q.attr.dest_qp_num, q.attr.grh);
        let mut pkts = Vec::new();
        for p in q.pend.iter().skip(first) {
            if p.done || p.err.is_some() {
                continue;
            }
            if let Some(r) = &p.req {
                let len = match &**r {
                    Req::Send { data, .. } | Req::Write { data, .. } => data.len() as u64,
                    _ => 0,
                };
                pkts.push((p.psn, p.npkts, r.clone(), p.solicited, len));
            }
        }
        let Some(dd) = self.dev_by_lid(dlid) else {
            return;
        };
        let now = self.now;
        for (psn, npkts, req, solicited, len) in pkts {
            let pkt = Packet {
                src_dev: d,
                src_qpn,
                dst_dev: dd,
                dst_qpn: dqpn,
                body: Body::Req {
                    psn,
                    npkts,
                    req,
                    ud_qkey: None,
                    grh,
                    solicited,
                },
            };
            // A retransmission gathers the payload again.
            let t = now + ceil_u64(self.params().t_rd(len));
            self.send_packet(d, qi, t, pkt, len, true);
        }
    }

    // ------------------------------------------------------------------
    // Packet arrival.

    pub(crate) fn deliver(&mut self, pkt: Packet) {
        let d = pkt.dst_dev;
        self.trace(TraceKind::Arrive, d, pkt.dst_qpn, pkt.psn());
        let Some(qi) = self.find_qp(d, pkt.dst_qpn) else {
            return;
        };
        match pkt.body {
            Body::Req {
                psn,
                npkts,
                req,
                ud_qkey,
                grh,
                solicited,
            } => self.on_request(
                d,
                qi,
                pkt.src_dev,
                pkt.src_qpn,
                psn,
                npkts,
                req,
                ud_qkey,
                grh,
                solicited,
            ),
            Body::Ack { psn } => self.on_ack(d, qi, psn),
            Body::Nak { psn, nak } => self.on_nak(d, qi, psn, nak),
            Body::ReadResp { psn, data } => self.on_read_resp(d, qi, psn, &data),
            Body::AtomicResp { psn, orig } => self.on_atomic_resp(d, qi, psn, orig),
        }
    }

    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn reply(
        &mut self,
        d: u16,
        qi: u32,
        src_dev: u16,
        src_qpn: u32,
        body: Body,
        payload: u64,
        extra_ns: u64,
    ) {
        let my_qpn = self.qp(d, qi).map(|q| q.qpn).unwrap_or(0);
        let pkt = Packet {
            src_dev: d,
            src_qpn: my_qpn,
            dst_dev: src_dev,
            dst_qpn: src_qpn,
            body,
        };
        let t = self.now + extra_ns;
        self.send_packet(d, qi, t, pkt, payload, false);
    }

    #[allow(clippy::too_many_arguments)]
    fn on_request(
        &mut self,
        d: u16,
        qi: u32,
        src_dev: u16,
        src_qpn: u32,
        psn: u32,
        npkts: u32,
        req: Rc<Req>,
        ud_qkey: Option<u32>,
        grh: bool,
        solicited: bool,
    ) {
        let q = self.qp(d, qi).expect("qp");
        if !q.state.rq_executes() {
            return; // silently dropped (RESET/INIT/ERR)
        }
        let ty = q.ty;
        match ty {
            QpType::Rc => {
                if q.attr.dest_qp_num != src_qpn {
                    return;
                }
                let diff = psn_diff(psn, q.epsn);
                if diff > 0 {
                    if !q.nak_sent {
                        q.nak_sent = true;
                        let e = q.epsn;
                        self.reply(
                            d,
                            qi,
                            src_dev,
                            src_qpn,
                            Body::Nak {
                                psn: e,
                                nak: Nak::Seq,
                            },
                            0,
                            0,
                        );
                    }
                    return;
                }
                if diff < 0 {
                    return self.duplicate(d, qi, src_dev, src_qpn, psn, npkts, &req);
                }
            }
            QpType::Uc => {
                if psn != q.epsn {
                    // A gap: the message in progress is lost; resync.
                    q.epsn = (psn + npkts) & PSN_MASK;
                    if !matches!(&*req, Req::Send { .. } | Req::Write { .. }) {
                        return;
                    }
                }
            }
            QpType::Ud => {
                if ud_qkey != Some(q.attr.qkey) {
                    return; // Q_Key mismatch: silently dropped
                }
            }
            _ => return,
        }
        let res = self.execute(d, qi, src_qpn, psn, &req, grh, solicited);
        let q = self.qp(d, qi).expect("qp");
        match res {
            Ok(resp) => {
                if ty != QpType::Ud {
                    q.epsn = (psn + npkts) & PSN_MASK;
                    q.nak_sent = false;
                }
                if ty == QpType::Rc {
                    let last = (psn + npkts - 1) & PSN_MASK;
                    match resp {
                        Resp::Ack => {
                            self.reply(d, qi, src_dev, src_qpn, Body::Ack { psn: last }, 0, 0)
                        }
                        Resp::Read(data, cost) => {
                            let n = data.len() as u64;
                            self.reply(
                                d,
                                qi,
                                src_dev,
                                src_qpn,
                                Body::ReadResp {
                                    psn,
                                    data: Rc::new(data),
                                },
                                n,
                                cost,
                            )
                        }
                        Resp::Atomic(orig, cost) => self.reply(
                            d,
                            qi,
                            src_dev,
                            src_qpn,
                            Body::AtomicResp { psn, orig },
                            8,
                            cost,
                        ),
                    }
                }
            }
            Err(nak) => {
                if ty != QpType::Rc {
                    if matches!(nak, Nak::Rnr(_)) {
                        return; // UC/UD: dropped when no receive is posted
                    }
                    // UC/UD responder errors: the message is dropped.
                    return;
                }
                if let Nak::Rnr(_) = nak {
                    q.counters.rnr_naks += 1;
                    self.devs[d as usize].counters.rnr_naks += 1;
                }
                self.reply(d, qi, src_dev, src_qpn, Body::Nak { psn, nak }, 0, 0);
                if !matches!(nak, Nak::Rnr(_)) {
                    self.to_error.push((d, qi));
                }
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn duplicate(
        &mut self,
        d: u16,
        qi: u32,
        sd: u16,
        sq: u32,
        psn: u32,
        npkts: u32,
        req: &Rc<Req>,
    ) {
        match &**req {
            Req::Read { raddr, rkey, len } => {
                // Re-execute the READ (idempotent).
                if let Ok(data) = self
                    .remote_range(d, qi, *rkey, *raddr, *len as u64, Access::REMOTE_READ)
                    .map(|p| {
                        // SAFETY: checked range inside a registered region.
                        unsafe { dma_read(p, *len as usize) }
                    })
                {
                    let n = data.len() as u64;
                    self.reply(
                        d,
                        qi,
                        sd,
                        sq,
                        Body::ReadResp {
                            psn,
                            data: Rc::new(data),
                        },
                        n,
                        0,
                    );
                }
            }
            Req::Atomic { .. } => {
                let cached = self.qp(d, qi).and_then(|q| q.resp_cache.find(psn));
                if let Some(orig) = cached {
                    self.reply(d, qi, sd, sq, Body::AtomicResp { psn, orig }, 8, 0);
                }
            }
            _ => {
                let last = (psn + npkts - 1) & PSN_MASK;
                self.reply(d, qi, sd, sq, Body::Ack { psn: last }, 0, 0);
            }
        }
    }

    /// Checks an rkey access for this responder QP and returns the CPU
    /// pointer of the range.
    #[inline]
    fn remote_range(
        &self,
        d: u16,
        qi: u32,
        rkey: u32,
        addr: u64,
        len: u64,
        need: Access,
    ) -> Result<*mut u8, Nak> {
        let dev = &self.devs[d as usize];
        let q = dev.qps[qi as usize].as_ref().ok_or(Nak::RemAccess)?;
        if !q.attr.qp_access_flags.contains(need) {
            return Err(Nak::RemAccess);
        }
        let m = dev.mr(rkey).ok_or(Nak::RemAccess)?;
        if m.pd != q.pd || !m.access.contains(need) {
            return Err(Nak::RemAccess);
        }
        m.range(addr, len).ok_or(Nak::RemAccess)
    }

    #[allow(clippy::too_many_arguments)]
    fn execute(
        &mut self,
        d: u16,
        qi: u32,
        src_qpn: u32,
        psn: u32,
        req: &Req,
        grh: bool,
        solicited: bool,
    ) -> Result<Resp, Nak> {
        let p = *self.params();
        match req {
            Req::Send { data, imm, inv } => {
                let op = if imm.is_some() {
                    3
                } else if inv.is_some() {
                    4
                } else {
                    2
                };
                // The key to invalidate must name a valid region of this
                // QP's PD; it is invalidated once the message is placed.
                let inv_slot = match inv {
                    Some(k) => {
                        let dev = &self.devs[d as usize];
                        let pd = dev.qps[qi as usize].as_ref().map(|q| q.pd);
                        match dev.mr(*k) {
                            Some(m) if Some(m.pd) == pd => Some((*k >> 8) as usize),
                            _ => return Err(Nak::InvReq),
                        }
                    }
                    None => None,
                };
                let extra = imm.or(inv.map(|k| k.to_be_bytes()));
                let r = self.receive(d, qi, src_qpn, data, op, extra, grh, solicited)?;
                if let Some(i) = inv_slot {
                    if let Some(Some(m)) = self.devs[d as usize].mrs.get_mut(i) {
                        m.valid = false;
                    }
                }
                Ok(r)
            }
            Req::Write {
                raddr,
                rkey,
                data,
                imm,
            } => {
                if !data.is_empty() {
                    let ptr = self.remote_range(
                        d,
                        qi,
                        *rkey,
                        *raddr,
                        data.len() as u64,
                        Access::REMOTE_WRITE,
                    )?;
                    if let Some(imm) = imm {
                        // Check a receive exists before placing anything.
                        if !self.recv_available(d, qi) {
                            let code = self.qp(d, qi).map(|q| q.attr.min_rnr_timer).unwrap_or(0);
                            return Err(Nak::Rnr(code));
                        }
                        let _ = imm;
                    }
                    // SAFETY: checked range inside a registered region.
                    unsafe { dma_write(ptr, data) };
                    let n = data.len() as u64;
                    cnt2(self, d, qi, |c, p| {
                        c.dma_write(p, n);
                        c.payload_rx_bytes += n;
                    });
                    let now = self.now;
                    if let Some(q) = self.qp(d, qi) {
                        q.last_rx_ns = now;
                    }
                }
                if let Some(imm) = imm {
                    // Consumes a receive: CQE RESP_WR_IMM with the length.
                    return self.receive_imm_write(
                        d,
                        qi,
                        src_qpn,
                        data.len() as u32,
                        *imm,
                        solicited,
                    );
                }
                Ok(Resp::Ack)
            }
            Req::Read { raddr, rkey, len } => {
                let ptr = if *len == 0 {
                    std::ptr::null_mut()
                } else {
                    self.remote_range(d, qi, *rkey, *raddr, *len as u64, Access::REMOTE_READ)?
                };
                let data = if *len == 0 {
                    Vec::new()
                } else {
                    // SAFETY: checked range inside a registered region.
                    unsafe { dma_read(ptr, *len as usize) }
                };
                let n = *len as u64;
                cnt2(self, d, qi, |c, p| c.dma_read(p, n));
                Ok(Resp::Read(data, ceil_u64(p.t_rd(n))))
            }
            Req::Atomic {
                raddr,
                rkey,
                cs,
                swap_add,
                compare,
            } => {
                if raddr % 8 != 0 {
                    return Err(Nak::InvReq);
                }
                let ptr = self.remote_range(d, qi, *rkey, *raddr, 8, Access::REMOTE_ATOMIC)?;
                // SAFETY: 8 bytes inside a registered region (checked).
                let orig =
                    u64::from_be_bytes(unsafe { std::ptr::read_unaligned(ptr.cast::<[u8; 8]>()) });
                let new = if *cs {
                    if orig == *compare {
                        *swap_add
                    } else {
                        orig
                    }
                } else {
                    orig.wrapping_add(*swap_add)
                };
                // SAFETY: as above.
                unsafe { std::ptr::write_unaligned(ptr.cast::<[u8; 8]>(), new.to_be_bytes()) };
                cnt2(self, d, qi, |c, p| {
                    c.dma_read(p, 8);
                    c.dma_write(p, 8);
                });
                if let Some(q) = self.qp(d, qi) {
                    q.resp_cache.push(psn, orig);
                }
                Ok(Resp::Atomic(orig, ceil_u64(p.t_rd(8))))
            }
        }
    }

    fn recv_available(&self, d: u16, qi: u32) -> bool {
        let dev = &self.devs[d as usize];
        let Some(q) = dev.qps[qi as usize].as_ref() else {
            return false;
        };
        if let Some(si) = q.srq {
            let Some(Some(s)) = dev.srqs.get(si) else {
                return false;
            };
            !s.error && (rd_be32(s.dbrec) as u16).wrapping_sub(s.consumed) != 0
        } else if q.rq_nwqe > 0 {
            (rd_be32(q.dbrec) as u16).wrapping_sub(q.rq_consumed) != 0
        } else {
            false
        }
    }

    /// Takes the next receive WQE: returns (wqe counter, its data segments
    /// copied out, report-to uidx/srqn).
    fn take_recv(&mut self, d: u16, qi: u32) -> Option<(u16, Vec<RecvSeg>)> {
        if !self.recv_available(d, qi) {
            return None;
        }
        let dev = &mut self.devs[d as usize];
        let q = dev.qps[qi as usize].as_mut()?;
        let mut segs = Vec::new();
        if let Some(si) = q.srq {
            let s = dev.srqs.get_mut(si)?.as_mut()?;
            let slot = s.head_slot;
            if slot as u32 >= s.nslots {
                s.error = true;
                return None;
            }
            let stride = 1usize << s.shift;
            let mut buf = vec![0u8; stride];
            // SAFETY: slot < nslots, so the stride lies inside the SRQ ring
            // translated at creation.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    s.ring.add(slot as usize * stride),
                    buf.as_mut_ptr(),
                    stride,
                )
            };
            let w = RecvWqe::parse_srq(&buf).ok()?;
            for ds in w.data_segs() {
                if ds.lkey.get() == INVALID_LKEY {
                    break;
                }
                segs.push((ds.byte_count.get(), ds.lkey.get(), ds.addr.get()));
            }
            s.head_slot = w.next.map(|n| n.next_wqe_index.get()).unwrap_or(0);
            s.consumed = s.consumed.wrapping_add(1);
            let left = (rd_be32(s.dbrec) as u16).wrapping_sub(s.consumed) as u32;
            if s.limit > 0 && left < s.limit {
                s.limit = 0;
                dev.events
                    .push(crate::objects::AsyncEvent::SrqLimit { srqn: si as u32 });
            }
            Some((slot, segs))
        } else {
            let c = q.rq_consumed;
            let stride = 1usize << q.rq_shift;
            let slot = (c as usize) & (q.rq_nwqe as usize - 1);
            let mut buf = vec![0u8; stride];
            // SAFETY: slot < rq_nwqe: the stride lies inside the RQ ring.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    q.rq_ring.add(slot * stride),
                    buf.as_mut_ptr(),
                    stride,
                )
            };
            q.rq_consumed = c.wrapping_add(1);
            let w = RecvWqe::parse_rq(&buf, false).ok()?;
            for ds in w.data_segs() {
                if ds.lkey.get() == INVALID_LKEY {
                    break;
                }
                segs.push((ds.byte_count.get(), ds.lkey.get(), ds.addr.get()));
            }
            Some((c, segs))
        }
    }

    /// A SEND (op 2/3/4) arriving: scatter into the next receive WQE.
    #[allow(clippy::too_many_arguments)]
    fn receive(
        &mut self,
        d: u16,
        qi: u32,
        src_qpn: u32,
        data: &[u8],
        op: u8,
        extra: Option<[u8; 4]>,
        grh: bool,
        solicited: bool,
    ) -> Result<Resp, Nak> {
        let (ty, min_rnr, pd) = {
            let dev = &self.devs[d as usize];
            let q = dev.qps[qi as usize].as_ref().expect("qp");
            // Receive buffers are checked against the PD of the queue that
            // holds the WQE: the SRQ's when the QP uses one.
            let pd = match q.srq.and_then(|s| dev.srqs.get(s)).and_then(|s| s.as_ref()) {
                Some(s) => s.pd,
                None => q.pd,
            };
            (q.ty, q.attr.min_rnr_timer, pd)
        };
        let Some((counter, segs)) = self.take_recv(d, qi) else {
            return Err(Nak::Rnr(min_rnr));
        };
        // UD: the first 40 bytes of the buffer receive the GRH (or stay
        // unused), and byte_len counts them.
        let grh_len = if ty == QpType::Ud { 40usize } else { 0 };
        let mut msg = Vec::with_capacity(grh_len + data.len());
        msg.resize(grh_len, 0);
        msg.extend_from_slice(data);
        // Resolve every entry before writing anything.
        let dev = &self.devs[d as usize];
        let mut targets = Vec::new();
        let mut cap = 0u64;
        let mut prot = false;
        for (len, lkey, addr) in &segs {
            if *len == 0 {
                continue;
            }
            match dev
                .mr(*lkey)
                .filter(|m| m.pd == pd && m.access.contains(Access::LOCAL_WRITE))
                .and_then(|m| m.range(*addr, *len as u64))
            {
                Some(p) => {
                    targets.push((p, *len));
                    cap += *len as u64;
                }
                None => {
                    prot = true;
                    break;
                }
            }
        }
        let (qpn, uidx, rcq) = {
            let q = self.qp(d, qi).expect("qp");
            (q.qpn, q.uidx, q.rcq)
        };
        let fault = if prot {
            Some((Syndrome::LocalProtErr, Nak::RemOp))
        } else if (msg.len() as u64) > cap {
            Some((Syndrome::LocalLengthErr, Nak::InvReq))
        } else {
            None
        };
        if let Some((syn, nak)) = fault {
            self.emit_err(d, rcq, false, qpn, uidx, 0, counter, syn.as_u8());
            self.to_error.push((d, qi));
            return Err(nak);
        }
        let mut off = 0usize;
        for (p, len) in targets {
            if off >= msg.len() {
                break;
            }
            let n = (len as usize).min(msg.len() - off);
            // SAFETY: `p..p+len` was checked inside a registered region with
            // LOCAL_WRITE, and n <= len.
            unsafe { dma_write(p, &msg[off..off + n]) };
            off += n;
            cnt2(self, d, qi, |c, pp| c.dma_write(pp, n as u64));
        }
        let n = data.len() as u64;
        let now = self.now;
        if let Some(q) = self.qp(d, qi) {
            q.counters.payload_rx_bytes += n;
            q.last_rx_ns = now;
        }
        self.devs[d as usize].counters.payload_rx_bytes += n;
        let mut c = Cqe64::default();
        let mut rqpn = src_qpn & PSN_MASK;
        if grh && ty == QpType::Ud {
            rqpn |= 1 << 28;
        }
        c.set_flags_rqpn(rqpn)
            .set_srqn_uidx(uidx & PSN_MASK)
            .set_byte_cnt(msg.len() as u32)
            .set_sop_drop_qpn(qpn)
            .set_wqe_counter(counter)
            .set_op_own((op << 4) | if solicited { 2 } else { 0 });
        if let Some(x) = extra {
            c.as_bytes_mut()[36..40].copy_from_slice(&x);
        }
        self.write_cqe(d, rcq, c, false);
        if let Some(q) = self.qp(d, qi) {
            q.counters.cqes += 1;
        }
        Ok(Resp::Ack)
    }

    fn receive_imm_write(
        &mut self,
        d: u16,
        qi: u32,
        src_qpn: u32,
        len: u32,
        imm: [u8; 4],
        solicited: bool,
    ) -> Result<Resp, Nak> {
        let min_rnr = self.qp(d, qi).map(|q| q.attr.min_rnr_timer).unwrap_or(0);
        let Some((counter, _segs)) = self.take_recv(d, qi) else {
            return Err(Nak::Rnr(min_rnr));
        };
        let (qpn, uidx, rcq) = {
            let q = self.qp(d, qi).expect("qp");
            (q.qpn, q.uidx, q.rcq)
        };
        let mut c = Cqe64::default();
        c.set_flags_rqpn(src_qpn & PSN_MASK)
            .set_srqn_uidx(uidx & PSN_MASK)
            .set_byte_cnt(len)
            .set_sop_drop_qpn(qpn)
            .set_wqe_counter(counter)
            .set_op_own((1 << 4) | if solicited { 2 } else { 0 });
        c.as_bytes_mut()[36..40].copy_from_slice(&imm);
        self.write_cqe(d, rcq, c, false);
        Ok(Resp::Ack)
    }

    // ------------------------------------------------------------------
    // Requester side: responses.

    fn on_ack(&mut self, d: u16, qi: u32, psn: u32) {
        let Some(q) = self.qp(d, qi) else { return };
        if q.state != QpState::Rts && q.state != QpState::Sqd {
            return;
        }
        let mut progress = false;
        // By index: the queue is short and this runs for every ACK.
        for i in 0..q.pend.len() {
            let p = &mut q.pend[i];
            if p.done || p.err.is_some() {
                continue;
            }
            if p.opcode == 0x10 || p.opcode == 0x11 || p.opcode == 0x12 {
                break;
            }
            let last = (p.psn + p.npkts - 1) & PSN_MASK;
            if psn_diff(last, psn) <= 0 {
                p.done = true;
                progress = true;
            } else {
                break;
            }
        }
        if progress {
            self.progress(d, qi);
        }
    }

    /// Forward progress: reset the retry counter and the timer, complete.
    fn progress(&mut self, d: u16, qi: u32) {
        let q = self.qp(d, qi).expect("qp");
        q.retry_left = q.attr.retry_cnt;
        q.rnr_left = q.attr.rnr_retry;
        let more = (0..q.pend.len()).any(|i| {
            let p = &q.pend[i];
            !p.done && p.err.is_none()
        });
        if more {
            self.arm_retry(d, qi, true);
        } else {
            self.disarm_retry(d, qi);
        }
        self.drain(d, qi);
    }

    /// Marks every incomplete non-READ/atomic entry before PSN `psn` done
    /// (implicit acknowledgement). Returns the index of the entry at `psn`.
    fn implicit_ack(q: &mut Qp, psn: u32) -> Option<usize> {
        let mut at = None;
        for (i, p) in q.pend.iter_mut().enumerate() {
            if p.done || p.err.is_some() {
                continue;
            }
            if p.psn == psn {
                at = Some(i);
                break;
            }
            let last = (p.psn + p.npkts - 1) & PSN_MASK;
            if psn_diff(last, psn) < 0 {
                if p.opcode == 0x10 || p.opcode == 0x11 || p.opcode == 0x12 {
                    // A READ/atomic cannot be acknowledged implicitly here.
                    return None;
                }
                p.done = true;
            } else {
                return None;
            }
        }
        at
    }

    fn on_nak(&mut self, d: u16, qi: u32, psn: u32, nak: Nak) {
        let Some(q) = self.qp(d, qi) else { return };
        if q.state != QpState::Rts {
            return;
        }
        let Some(i) = Self::implicit_ack(q, psn) else {
            return;
        };
        match nak {
            Nak::Seq => {
                q.retry_left = q.attr.retry_cnt;
                self.resend_from(d, qi, i);
                self.arm_retry(d, qi, true);
                self.drain(d, qi);
            }
            Nak::Rnr(code) => {
                q.counters.rnr_naks += 1;
                if q.rnr_left == 0 {
                    q.pend[i].err = Some(Syndrome::RnrRetryExcErr.as_u8());
                    return self.drain(d, qi);
                }
                if q.attr.rnr_retry != 7 {
                    q.rnr_left -= 1;
                }
                q.rnr_wait = true;
                q.timer_gen = (q.timer_gen | 1) + 2;
                let gen = q.timer_gen;
                let t = self.now + RNR_TIMER_NS[(code & 31) as usize];
                self.schedule(t, Event::RnrTimer { dev: d, qi, gen });
                self.drain(d, qi);
            }
            Nak::RemAccess | Nak::InvReq | Nak::RemOp => {
                q.pend[i].err = Some(match nak {
                    Nak::RemAccess => Syndrome::RemoteAccessErr.as_u8(),
                    Nak::InvReq => Syndrome::RemoteInvalReqErr.as_u8(),
                    _ => Syndrome::RemoteOpErr.as_u8(),
                });
                self.drain(d, qi);
            }
        }
    }

    fn on_read_resp(&mut self, d: u16, qi: u32, psn: u32, data: &[u8]) {
        let Some(q) = self.qp(d, qi) else { return };
        if q.state != QpState::Rts {
            return;
        }
        let Some(i) = Self::implicit_ack(q, psn) else {
            return;
        };
        if q.pend[i].opcode != 0x10 {
            return;
        }
        let mut off = 0usize;
        let targets = q.pend[i].local.clone();
        for (p, len) in targets {
            if off >= data.len() {
                break;
            }
            let n = (len as usize).min(data.len() - off);
            // SAFETY: the target was checked against a registered region
            // with LOCAL_WRITE when the WQE was fetched.
            unsafe { dma_write(p, &data[off..off + n]) };
            off += n;
            cnt2(self, d, qi, |c, pp| c.dma_write(pp, n as u64));
        }
        let now = self.now;
        let q = self.qp(d, qi).expect("qp");
        q.pend[i].done = true;
        q.last_rx_ns = now;
        q.counters.payload_rx_bytes += data.len() as u64;
        self.progress(d, qi);
    }

    fn on_atomic_resp(&mut self, d: u16, qi: u32, psn: u32, orig: u64) {
        let Some(q) = self.qp(d, qi) else { return };
        if q.state != QpState::Rts {
            return;
        }
        let Some(i) = Self::implicit_ack(q, psn) else {
            return;
        };
        if !(q.pend[i].opcode == 0x11 || q.pend[i].opcode == 0x12) {
            return;
        }
        if let Some((p, _)) = q.pend[i].local.first().copied() {
            // SAFETY: 8 bytes checked inside a LOCAL_WRITE region at fetch.
            unsafe { std::ptr::write_unaligned(p.cast::<[u8; 8]>(), orig.to_be_bytes()) };
        }
        q.pend[i].done = true;
        cnt2(self, d, qi, |c, pp| c.dma_write(pp, 8));
        self.progress(d, qi);
    }
}

/// One receive data segment: (byte_count, lkey, addr).
type RecvSeg = (u32, u32, u64);

/// What a successful responder execution answers.
pub(crate) enum Resp {
    Ack,
    Read(Vec<u8>, u64),
    Atomic(u64, u64),
}
