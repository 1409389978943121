//! The requester: send doorbells, SQ fetch, and the execution of one send
//! WQE: its checks, the gather of its payload (or the collection of the
//! local buffers a READ/atomic result lands in), its PSNs and the request
//! packet. Completion of the fetched WQEs is [`super::completion`]'s; their
//! acknowledgement and retransmission [`super::reliability`]'s.

use super::{rd_be32, PSN_MASK};
use crate::cost::{bf_delivers, ceil_u64, wqe_fetch_ns, ModelParams};
use crate::objects::{Pending, Qp};
use crate::wire::{Body, Packet, Req};
use crate::world::{cnt2, Dev, Event, World};
use bareverbs::cqe::Syndrome;
use bareverbs::mr::Access;
use bareverbs::qp::{QpState, QpType};
use bareverbs::wqe::{
    CtrlSeg, DataEntry, FmCeSe, Opcode, SendWqe, ATOMIC_SIZE, DS_BYTES, DS_MASK, MAX_WQE_BYTES,
    SEND_WQE_BB,
};
use std::rc::Rc;

/// Whether the QP type allows mlx5 opcode `op` ([ref §1.7](bareverbs::reference)).
fn op_allowed(t: QpType, op: u8) -> bool {
    match t {
        QpType::Rc => matches!(
            Opcode::from_u8(op),
            Some(
                Opcode::Nop
                    | Opcode::SendInval
                    | Opcode::RdmaWrite
                    | Opcode::RdmaWriteImm
                    | Opcode::Send
                    | Opcode::SendImm
                    | Opcode::RdmaRead
                    | Opcode::AtomicCs
                    | Opcode::AtomicFa
            )
        ),
        QpType::Uc => matches!(
            Opcode::from_u8(op),
            Some(
                Opcode::Nop
                    | Opcode::RdmaWrite
                    | Opcode::RdmaWriteImm
                    | Opcode::Send
                    | Opcode::SendImm
            )
        ),
        QpType::Ud => matches!(
            Opcode::from_u8(op),
            Some(Opcode::Nop | Opcode::Send | Opcode::SendImm)
        ),
        _ => false,
    }
}

/// The pending entry of the WQE at `idx` (`bytes` copied out of the
/// ring), from its control segment: opcode, signaled, solicited.
#[inline]
fn fetched(bytes: &[u8], idx: u16) -> Pending {
    let opcode = bytes.get(CtrlSeg::OPCODE_BYTE).copied().unwrap_or(0);
    let flags = bytes.get(CtrlSeg::FM_CE_SE_BYTE).copied();
    let signaled = flags.is_some_and(|b| b & FmCeSe::CQ_UPDATE.bits() != 0);
    let solicited = flags.is_some_and(|b| b & FmCeSe::SOLICITED.bits() != 0);
    Pending {
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
    }
}

/// Parses a fetched WQE for QP type `ty`: its size against the ring of
/// `ring` bytes, its format, and `opcode` against the QP type. `Err` is the
/// syndrome it completes with.
#[inline]
fn check_wqe(bytes: &[u8], ty: QpType, opcode: u8, ring: usize) -> Result<SendWqe<'_>, u8> {
    let ds_bytes = bytes.get(CtrlSeg::DS_BYTE).copied().unwrap_or(0) as usize * DS_BYTES;
    if ds_bytes > ring {
        return Err(Syndrome::LocalQpOpErr.as_u8());
    }
    let wqe = match SendWqe::parse(bytes, ty) {
        Ok(w) => w,
        Err(_) => {
            return Err(Syndrome::LocalQpOpErr.as_u8());
        }
    };
    if !op_allowed(ty, opcode) {
        return Err(Syndrome::LocalQpOpErr.as_u8());
    }
    Ok(wqe)
}

/// What the gather of one WQE's data entries found.
struct Gathered {
    /// Pointer entries of non-zero length.
    sges: u32,
    /// The length of the first of them.
    first_len: u32,
    /// Some entry was inline data.
    inline: bool,
    /// Bytes of all entries.
    total: u64,
}

/// Walks the data entries of `wqe` (a QP of PD `pd` on device `dev`):
/// SEND/WRITE payload is copied to `data`; with `to_local` (READ/atomic)
/// the checked local buffers are collected in `pend.local`. The first
/// failure sets `pend.err` and stops the walk.
#[inline]
fn gather(
    dev: &Dev,
    pd: u32,
    wqe: &SendWqe<'_>,
    to_local: bool,
    data: &mut Vec<u8>,
    pend: &mut Pending,
) -> Gathered {
    let mut sges = 0u32;
    let mut first_len = 0u32;
    let mut inline = false;
    let mut total: u64 = 0;
    for e in wqe.data_entries() {
        match e {
            DataEntry::Inline(il) => {
                if to_local {
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
                let need = if to_local {
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
                if to_local {
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
    Gathered {
        sges,
        first_len,
        inline,
        total,
    }
}

/// The request of send opcode `opcode` (not NOP) carrying the gathered
/// `data` (`total` bytes); a READ/atomic sets the byte count its
/// completion reports.
#[inline]
fn build_req(opcode: u8, wqe: &SendWqe<'_>, data: Vec<u8>, total: u64, pend: &mut Pending) -> Req {
    let imm_raw = wqe.ctrl.imm.raw();
    match Opcode::from_u8(opcode) {
        Some(Opcode::Send) => Req::Send {
            data,
            imm: None,
            inv: None,
        },
        Some(Opcode::SendImm) => Req::Send {
            data,
            imm: Some(imm_raw),
            inv: None,
        },
        Some(Opcode::SendInval) => Req::Send {
            data,
            imm: None,
            inv: Some(u32::from_be_bytes(imm_raw)),
        },
        Some(Opcode::RdmaWrite | Opcode::RdmaWriteImm) => {
            let r = wqe.raddr.unwrap_or_default();
            Req::Write {
                raddr: r.raddr.get(),
                rkey: r.rkey.get(),
                data,
                imm: (opcode == Opcode::RdmaWriteImm.bits()).then_some(imm_raw),
            }
        }
        Some(Opcode::RdmaRead) => {
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
            pend.byte_cnt = ATOMIC_SIZE;
            Req::Atomic {
                raddr: r.raddr.get(),
                rkey: r.rkey.get(),
                cs: opcode == Opcode::AtomicCs.bits(),
                swap_add: a.swap_add.get(),
                compare: a.compare.get(),
            }
        }
    }
}

/// The message length of a request (its PSN count follows from it).
#[inline]
fn msg_len(req: &Req) -> u32 {
    match req {
        Req::Send { data, .. } | Req::Write { data, .. } => data.len() as u32,
        Req::Read { len, .. } => *len,
        Req::Atomic { .. } => ATOMIC_SIZE,
    }
}

/// Where a request goes: destination LID and QPN, the UD Q_Key, GRH.
type Route = (u16, u32, Option<u32>, bool);

/// The route of a request of QP `q` (of type `ty`): a UD WQE names it in
/// its address vector, a connected QP's attributes hold it.
#[inline]
fn route(q: &Qp, ty: QpType, wqe: &SendWqe<'_>) -> Route {
    if ty == QpType::Ud {
        let av = wqe.av.unwrap_or_default();
        (av.rlid.get(), av.dqpn(), Some(av.qkey()), av.grh())
    } else {
        (q.attr.dlid, q.attr.dest_qp_num, None, q.attr.grh)
    }
}

impl World {
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
            let ring_bytes = nbb as usize * SEND_WQE_BB;
            let idx = q.sq_fetched;
            let off = (idx as usize & (nbb as usize - 1)) * SEND_WQE_BB;
            // SAFETY: the ring was translated at QP creation to sq_nbb * 64
            // bytes of live DMA memory; off + 8 <= ring_bytes.
            let raw_ds = unsafe { std::ptr::read_volatile(q.sq_ring.add(off + CtrlSeg::DS_BYTE)) };
            let ds = raw_ds as u32 & DS_MASK;
            let mut bbs = (ds * DS_BYTES as u32).div_ceil(SEND_WQE_BB as u32).max(1) as u16;
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
            let wbytes = bbs as u64 * SEND_WQE_BB as u64;
            q.sq_fetched = idx.wrapping_add(bbs);
            // Cost: BlueFlame delivered the WQE, or one DMA read per batch.
            let bf_delivered = bf_delivers(&p, bf, wbytes);
            let fetch = wqe_fetch_ns(&p, bf_delivered, first_in_batch, bbs, wbytes);
            if !bf_delivered {
                cnt2(self, d, qi, |c, p| c.wqe_fetch(p, wbytes, first_in_batch));
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
            let len = (raw_ds as usize * DS_BYTES)
                .min(ring_bytes)
                .max(SEND_WQE_BB);
            let mut local = std::mem::take(&mut self.scratch);
            local.resize(MAX_WQE_BYTES + SEND_WQE_BB, 0);
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
        let mut pend = fetched(bytes, idx);
        let (opcode, solicited) = (pend.opcode, pend.solicited);
        let wqe = match check_wqe(bytes, ty, opcode, ring) {
            Ok(w) => w,
            Err(s) => {
                pend.err = Some(s);
                return self.push_pending(d, qi, pend);
            }
        };
        if opcode == Opcode::Nop.bits() {
            // NOP: completes in order, no transport.
            pend.done = true;
            return self.push_pending(d, qi, pend);
        }
        let pd = q.pd;
        let mtu = q.attr.mtu_bytes();
        let is_read = opcode == Opcode::RdmaRead.bits();
        let is_atomic = opcode == Opcode::AtomicCs.bits() || opcode == Opcode::AtomicFa.bits();
        // Gather (SEND/WRITE) or collect local scatter targets (READ/atomic).
        let mut data = self.buf_pool.pop().unwrap_or_default();
        let to_local = is_read || is_atomic;
        let dev = &self.devs[d as usize];
        let g = gather(dev, pd, &wqe, to_local, &mut data, &mut pend);
        if pend.err.is_some() {
            return self.push_pending(d, qi, pend);
        }
        if is_atomic && g.total != 8 {
            pend.err = Some(Syndrome::LocalLengthErr.as_u8());
            return self.push_pending(d, qi, pend);
        }
        let gather = self.gather_cost(d, qi, &p, &g, to_local, data.len() as u64);
        let req = build_req(opcode, &wqe, data, g.total, &mut pend);
        let msg_len = msg_len(&req);
        let req = self.req_cell(req);
        // Destination.
        let q = self.qp(d, qi).expect("qp");
        let route = route(q, ty, &wqe);
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
        let sent = (src_qpn, route, msg_len, depart_cpu);
        self.send_request(d, qi, reliable, pend, req, solicited, sent);
    }

    /// The gather's cost (ns) and, for a SEND/WRITE gathered by DMA, its
    /// PCIe counters.
    #[inline]
    fn gather_cost(
        &mut self,
        d: u16,
        qi: u32,
        p: &ModelParams,
        g: &Gathered,
        to_local: bool,
        bytes_read: u64,
    ) -> f64 {
        // Gather cost and counters.
        let gather = if g.inline || g.sges == 0 {
            0.0
        } else {
            p.t_rd(g.first_len as u64) + (g.sges - 1) as f64 * p.t_sge_ns
        };
        if !to_local && !g.inline {
            let n = g.sges as u64;
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
        gather
    }

    /// `req` in a request cell: a released one reused, or a new one.
    #[inline]
    fn req_cell(&mut self, req: Req) -> Rc<Req> {
        // Reuse a released request cell instead of allocating one.
        match self.req_pool.pop() {
            Some(mut cell) => match Rc::get_mut(&mut cell) {
                Some(r) => {
                    *r = req;
                    cell
                }
                None => Rc::new(req),
            },
            None => Rc::new(req),
        }
    }

    /// Queues the fetched request `pend` (its PSNs assigned) and puts its
    /// packet on the wire: `sent` is (source QPN, route, message length,
    /// departure time from the CPU's view). An RC request arms the
    /// retransmission timer; an unreliable one completes once it has left
    /// the port.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn send_request(
        &mut self,
        d: u16,
        qi: u32,
        reliable: bool,
        mut pend: Pending,
        req: Rc<Req>,
        solicited: bool,
        sent: (u32, Route, u32, f64),
    ) {
        let (src_qpn, (dlid, dqpn, ud_qkey, grh), msg_len, depart_cpu) = sent;
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
}
