//! Endpoints as a user builds them: the core's [`QueuePair`] and
//! [`CompletionQueue`] over memory the simulated device created, plus a
//! registered buffer, and helpers that walk QPs through the state machine.

use crate::device::{Device, Pd, QpInit, SimError, SimUar};
use crate::objects::QpAttr;
use bareverbs::cq::CompletionQueue;
use bareverbs::cqe::{Completion, CqeSize, WorkCompletion};
use bareverbs::mr::{Access, MemoryRegion};
use bareverbs::platform::{DmaBuf, BF_OFFSET};
use bareverbs::qp::{QpAttrMask, QpState, QpType};
use bareverbs::queue_pair::QueuePair;
use bareverbs::rq::{RecvError, RecvQueue, RecvWr, RqConfig, RqSlot};
use bareverbs::sq::{
    BlueFlame, PostError, PostErrorKind, RdmaOp, RdmaWr, SendQueue, SendWr, Sge, SqConfig, SqSlot,
};

/// How to build an endpoint.
#[derive(Clone, Copy, Debug)]
pub struct EpConfig {
    /// QP type.
    pub qp_type: QpType,
    /// SGEs per send WR.
    pub max_send_sge: u32,
    /// Inline bytes per send WR.
    pub max_inline: u32,
    /// SGEs per receive WR.
    pub max_recv_sge: u32,
    /// Every WR signaled.
    pub sig_all: bool,
    /// Use BlueFlame for single inline posts (256-byte half registers).
    pub blueflame: bool,
    /// Bytes of the registered data buffer.
    pub buf_len: usize,
    /// Access flags of the data buffer's MR.
    pub mr_access: Access,
}

impl EpConfig {
    /// Defaults for `qp_type`: 1 SGE each way, 64 B inline, BlueFlame on,
    /// a 64 KiB buffer with every access right.
    pub fn new(qp_type: QpType) -> Self {
        EpConfig {
            qp_type,
            max_send_sge: 1,
            max_inline: 64,
            max_recv_sge: 1,
            sig_all: false,
            blueflame: true,
            buf_len: 64 * 1024,
            mr_access: Access::LOCAL_WRITE
                | Access::REMOTE_WRITE
                | Access::REMOTE_READ
                | Access::REMOTE_ATOMIC,
        }
    }
}

/// One QP with its CQ (send and receive completions share it) and a
/// registered buffer. `SQ` is the send ring in WQEBBs, `RQ` the receive
/// ring in WQEs, `CQ` the CQ entries.
///
/// The core's queues hold raw pointers into DMA memory the simulated device
/// allocated. The fields are private and no accessor hands out a `&mut` to
/// the core's queue types, so the queues can be neither moved out of the
/// endpoint nor swapped with another endpoint's: they live exactly as long
/// as the endpoint, which keeps the device (and with it that memory) alive,
/// and are dropped before it.
///
/// ```compile_fail
/// # use bareverbs::qp::QpType;
/// # use bareverbs_sim::harness::{Endpoint, EpConfig};
/// # let fabric = bareverbs_sim::Fabric::new(1);
/// # let dev = fabric.add_device();
/// let ep: Endpoint = Endpoint::new(&dev, &EpConfig::new(QpType::Rc)).unwrap();
/// let cq = ep.cq; // the CQ cannot be moved out of its endpoint
/// # let _ = cq;
/// ```
///
/// ```compile_fail
/// # use bareverbs::qp::QpType;
/// # use bareverbs_sim::harness::{Endpoint, EpConfig};
/// # let fabric = bareverbs_sim::Fabric::new(1);
/// # let (da, db) = (fabric.add_device(), bareverbs_sim::Fabric::new(2).add_device());
/// let mut a: Endpoint = Endpoint::new(&da, &EpConfig::new(QpType::Rc)).unwrap();
/// let mut b: Endpoint = Endpoint::new(&db, &EpConfig::new(QpType::Rc)).unwrap();
/// std::mem::swap(&mut a.qp, &mut b.qp); // nor swapped into another's
/// ```
///
/// ```
/// # use bareverbs::qp::QpType;
/// # use bareverbs_sim::harness::{Endpoint, EpConfig};
/// # let fabric = bareverbs_sim::Fabric::new(1);
/// # let dev = fabric.add_device();
/// let ep: Endpoint = Endpoint::new(&dev, &EpConfig::new(QpType::Rc)).unwrap();
/// assert_eq!(ep.cq().cqn(), ep.cqn()); // read-only access
/// ```
pub struct Endpoint<const SQ: usize = 256, const RQ: usize = 256, const CQ: usize = 1024> {
    qp: QueuePair<SimUar, [SqSlot; SQ], [RqSlot; RQ]>,
    cq: CompletionQueue<CQ>,
    pd: Pd,
    qpn: u32,
    cqn: u32,
    buf: DmaBuf,
    mr: MemoryRegion,
    cfg: EpConfig,
    sq_ring: DmaBuf,
    dbrec: DmaBuf,
    rq_ring: DmaBuf,
    /// Declared last so that it is dropped after the queues above.
    dev: Device,
}

/// The endpoint's numbers and configuration (not its memory).
impl<const SQ: usize, const RQ: usize, const CQ: usize> std::fmt::Debug for Endpoint<SQ, RQ, CQ> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("qpn", &self.qpn)
            .field("cqn", &self.cqn)
            .field("pd", &self.pd)
            .field("cfg", &self.cfg)
            .field("buf", &self.buf)
            .finish_non_exhaustive()
    }
}

/// Largest DS a WR of this endpoint may need.
fn wqe_ds(cfg: &EpConfig) -> u32 {
    let fixed = match cfg.qp_type {
        QpType::Ud => 4,
        _ => 3,
    };
    let inline_ds = if cfg.max_inline > 0 {
        (cfg.max_inline + 4).div_ceil(16)
    } else {
        0
    };
    fixed + cfg.max_send_sge.max(inline_ds)
}

impl<const SQ: usize, const RQ: usize, const CQ: usize> Endpoint<SQ, RQ, CQ> {
    /// Creates the CQ, QP and buffer on `dev` (QP in RESET).
    pub fn new(dev: &Device, cfg: &EpConfig) -> Result<Self, SimError> {
        let pd = dev.alloc_pd();
        let cqh = dev.create_cq(CQ as u32, 1)?;
        let rq_shift = (cfg.max_recv_sge.max(1) * 16)
            .next_power_of_two()
            .trailing_zeros();
        let h = dev.create_qp(&QpInit {
            qp_type: cfg.qp_type,
            pd,
            send_cq: cqh.cqn,
            recv_cq: cqh.cqn,
            srq: None,
            sq_wqebbs: SQ as u32,
            rq_wqes: RQ as u32,
            rq_wqe_shift: rq_shift,
            uidx: 0,
        })?;
        // The QP's user index is its QPN (CQE version 1 carries it).
        let qpn = h.qpn;
        dev.set_uidx(qpn, qpn);
        let ds = wqe_ds(cfg).min(63);
        let wqebbs = (ds * 16).div_ceil(64);
        let max_post = (SQ as u32 / wqebbs).max(1);
        let sqc = SqConfig::new(cfg.qp_type, max_post, cfg.max_send_sge)
            .qpn(qpn)
            .inline(cfg.max_inline)
            .sig_all(cfg.sig_all)
            .atomics(cfg.qp_type == QpType::Rc)
            .blueflame(if cfg.blueflame {
                BlueFlame {
                    reg_offset: BF_OFFSET,
                    buf_size: 256,
                    enabled: true,
                    prefer: false,
                }
            } else {
                BlueFlame::doorbell_only(BF_OFFSET)
            });
        let sq_ring = h.sq_ring.ok_or(SimError::BadSize)?;
        let rq_ring = h.rq_ring.ok_or(SimError::BadSize)?;
        // SAFETY: the rings and the doorbell record were allocated by the
        // device for this QP alone and stay allocated while the device
        // lives; the device only reads the SQ ring and the records.
        let sq = unsafe { SendQueue::new(sq_ring, h.dbrec, h.uar, sqc, [SqSlot::default(); SQ]) }
            .ok_or(SimError::BadSize)?;
        let rqc = RqConfig {
            wqe_shift: rq_shift,
            max_gs: cfg.max_recv_sge.max(1),
            max_post: RQ as u32,
        };
        // SAFETY: as above; the RQ uses word 0 of the same record.
        let rq = unsafe { RecvQueue::new(rq_ring, h.dbrec, rqc, [RqSlot::default(); RQ]) }
            .ok_or(SimError::BadSize)?;
        // SAFETY: ring and record come from the device's CQ creation and
        // are only written by the device under the CQ protocol.
        let mut cq = unsafe { CompletionQueue::new(cqh.ring, cqh.dbrec, cqh.cqn, CqeSize::B64, 1) }
            .map_err(|_| SimError::BadSize)?;
        cq.init_ring();
        let buf = dev.alloc(cfg.buf_len)?;
        let mr = dev.reg_mr(pd, buf, cfg.mr_access)?;
        Ok(Endpoint {
            dev: dev.clone(),
            pd,
            qpn,
            qp: QueuePair {
                qpn,
                uidx: qpn,
                cqe_version: 1,
                sq,
                rq: Some(rq),
            },
            cq,
            cqn: cqh.cqn,
            buf,
            mr,
            cfg: *cfg,
            sq_ring,
            dbrec: h.dbrec,
            rq_ring,
        })
    }

    /// The device.
    pub fn dev(&self) -> &Device {
        &self.dev
    }

    /// Protection domain.
    pub fn pd(&self) -> Pd {
        self.pd
    }

    /// QP number.
    pub fn qpn(&self) -> u32 {
        self.qpn
    }

    /// CQ number.
    pub fn cqn(&self) -> u32 {
        self.cqn
    }

    /// The configuration.
    pub fn cfg(&self) -> &EpConfig {
        &self.cfg
    }

    /// The data buffer (a description; its memory lives while the endpoint does).
    pub fn buf(&self) -> DmaBuf {
        self.buf
    }

    /// The data buffer's memory region.
    pub fn mr(&self) -> &MemoryRegion {
        &self.mr
    }

    /// The SQ ring (for tests that write raw WQEs).
    pub fn sq_ring(&self) -> DmaBuf {
        self.sq_ring
    }

    /// The QP doorbell record.
    pub fn dbrec(&self) -> DmaBuf {
        self.dbrec
    }

    /// The RQ ring.
    pub fn rq_ring(&self) -> DmaBuf {
        self.rq_ring
    }

    /// The core's queue pair (read-only).
    pub fn qp(&self) -> &QueuePair<SimUar, [SqSlot; SQ], [RqSlot; RQ]> {
        &self.qp
    }

    /// The core's send queue (read-only).
    pub fn sq(&self) -> &SendQueue<SimUar, [SqSlot; SQ]> {
        &self.qp.sq
    }

    /// The core's completion queue (read-only).
    pub fn cq(&self) -> &CompletionQueue<CQ> {
        &self.cq
    }

    /// Posts `wrs` on the send queue, checking every SGE against `mrs`
    /// ([`SendQueue::post_send`]).
    pub fn post_send(&mut self, wrs: &[SendWr<'_>], mrs: &[MemoryRegion]) -> Result<(), PostError> {
        self.qp.sq.post_send(wrs, mrs)
    }

    /// Posts a batch of one RDMA operation with pointer SGEs through the
    /// core's fixed-operation hot path ([`SendQueue::post_rdma_raw`]: the
    /// same engine, checks and WQEs as [`Self::post_send`]), after checking
    /// every SGE against the endpoint's buffer exactly as `post_send(wrs,
    /// &[*self.mr()])` does: each SGE of nonzero length must lie inside the
    /// buffer's region under its lkey, and a READ (the device writes it)
    /// needs `LOCAL_WRITE`. The first WR that fails is reported as
    /// [`PostErrorKind::SgeOutOfBounds`]; the WRs before it are posted.
    #[inline]
    pub fn post_rdma(&mut self, op: RdmaOp, wrs: &[RdmaWr<'_>]) -> Result<(), PostError> {
        let mr = &self.mr;
        let writable = op != RdmaOp::Read || mr.access().allows(Access::LOCAL_WRITE);
        let mut bad = None;
        'wrs: for (index, w) in wrs.iter().enumerate() {
            for (sge, s) in w.sgl.iter().enumerate() {
                if s.length != 0 && !(writable && mr.contains(s)) {
                    bad = Some(PostError {
                        index,
                        kind: PostErrorKind::SgeOutOfBounds { sge },
                    });
                    break 'wrs;
                }
            }
        }
        let upto = bad.map_or(wrs.len(), |e| e.index);
        // SAFETY: every SGE of wrs[..upto] lies inside the endpoint's
        // registered buffer (checked above, with LOCAL_WRITE where the
        // device writes), device memory that stays allocated and
        // registered while the endpoint — and so its queue and every WR on
        // it — lives, and that no Rust reference points into (the endpoint
        // reads and writes it by raw copies only). No SGE is inline.
        let r = unsafe { self.qp.sq.post_rdma_raw(op, &wrs[..upto]) };
        r.and(bad.map_or(Ok(()), Err))
    }

    /// Posts `wrs` on the send queue without SGE checks
    /// ([`SendQueue::post_send_raw`]).
    ///
    /// # Safety
    /// As [`SendQueue::post_send_raw`]: every SGE the device reads or writes
    /// must stay valid until its completion, and inline SGEs must point at
    /// readable host memory.
    pub unsafe fn post_send_raw(&mut self, wrs: &[SendWr<'_>]) -> Result<(), PostError> {
        // SAFETY: forwarded contract.
        unsafe { self.qp.sq.post_send_raw(wrs) }
    }

    /// Posts `wrs` on the receive queue ([`RecvQueue::post_recv_raw`]).
    ///
    /// # Safety
    /// As [`RecvQueue::post_recv_raw`]: every SGE must name memory the device
    /// may write until the WR completes.
    pub unsafe fn post_recv_raw(&mut self, wrs: &[RecvWr<'_>]) -> Result<(), RecvError> {
        let rq = self.qp.rq.as_mut().expect("an endpoint always has an RQ");
        // SAFETY: forwarded contract.
        unsafe { rq.post_recv_raw(wrs) }
    }

    /// The send queue's doorbell page (raw doorbell writes in tests).
    pub fn uar_mut(&mut self) -> &mut SimUar {
        self.qp.sq.uar_mut()
    }

    /// Modifies the QP on the device and mirrors the posting rules in the
    /// host queues (RQ enabled from INIT, SQ from RTS, both reset by RESET,
    /// which also purges the QP's unpolled CQEs from the CQ).
    pub fn modify(&mut self, attr: &QpAttr, mask: QpAttrMask) -> Result<(), SimError> {
        self.dev.modify_qp(self.qpn, attr, mask)?;
        match attr.qp_state {
            // As rdma-core: the QP's unpolled CQEs are purged too.
            // SAFETY: the simulated QP was just moved to RESET.
            QpState::Reset => unsafe { self.qp.reset(&mut [&mut self.cq]) },
            QpState::Init => {
                if let Some(rq) = self.qp.rq.as_mut() {
                    rq.enable();
                }
            }
            QpState::Rts => self.qp.sq.enable(),
            _ => {}
        }
        Ok(())
    }

    /// Writes raw WQE bytes at the send queue's producer position, updates
    /// the doorbell record and rings an 8-byte doorbell, bypassing the
    /// core's checks (for testing the device's validation). The host
    /// queue's counters advance as if one WR (`wr_id` 0) of `bbs` WQEBBs
    /// was posted; it is outstanding until its completion is polled.
    pub fn post_raw_wqe(&mut self, wqe: &[u8], bbs: u32) {
        use bareverbs::platform::Uar;
        let cur = self.qp.sq.cur_post();
        let ring = self.sq_ring;
        let n = ring.len;
        let start = (cur as usize & (SQ - 1)) * 64;
        for (i, b) in wqe.iter().enumerate() {
            // SAFETY: the offset is reduced modulo the ring length; raw
            // byte store into the live SQ ring.
            unsafe { *ring.cpu.as_ptr().add((start + i) % n) = *b };
        }
        let next = cur.wrapping_add(bbs);
        // SAFETY: word 1 of the live 8-byte doorbell record.
        unsafe {
            std::ptr::write_volatile(
                self.dbrec.cpu.as_ptr().add(4).cast::<[u8; 4]>(),
                (next & 0xffff).to_be_bytes(),
            )
        };
        // SAFETY: the WQE of `bbs` WQEBBs was written at the producer index
        // just above; the device's validation is what these tests exercise.
        unsafe { self.qp.sq.record_raw_post(0, bbs) };
        let mut first = [0u8; 8];
        let k = wqe.len().min(8);
        first[..k].copy_from_slice(&wqe[..k]);
        self.qp.sq.uar_mut().write64(BF_OFFSET, first);
    }

    /// Polls up to `out.len()` completions, reporting a rejected CQE as the
    /// core's [`bareverbs::cq::PollError`] (after the completions before it).
    pub fn try_poll(
        &mut self,
        out: &mut [WorkCompletion],
    ) -> Result<usize, bareverbs::cq::PollError> {
        self.cq.poll(&mut self.qp, out)
    }

    /// Resets the host queues only (the CQ is left as it is), as a driver
    /// that forgot to clean the CQ at RESET would: for hostile-CQ tests.
    pub fn reset_host_queues(&mut self) {
        // SAFETY: test support: callers move the simulated QP to RESET
        // first (or test a driver that forgot the CQ, which is the point).
        unsafe { self.qp.sq.reset() };
        if let Some(rq) = self.qp.rq.as_mut() {
            // SAFETY: as above.
            unsafe { rq.reset() };
        }
    }

    /// Polls up to `out.len()` completions.
    pub fn poll(&mut self, out: &mut [WorkCompletion]) -> usize {
        match self.cq.poll(&mut self.qp, out) {
            Ok(n) => n,
            Err(e) => e.completions(),
        }
    }

    /// Polls up to `out.len()` completions in the core's lean form
    /// ([`CompletionQueue::poll_completions`]: the same CQEs, checks and
    /// consumer index as [`Self::poll`], each completion written as
    /// `Completion::from(&wc)` of the [`WorkCompletion`] `poll` gives).
    /// A rejected CQE ends the poll after the completions before it, as in
    /// [`Self::poll`].
    #[inline]
    pub fn poll_completions(&mut self, out: &mut [Completion]) -> usize {
        match self.cq.poll_completions(&mut self.qp, out) {
            Ok(n) => n,
            Err(e) => e.completions(),
        }
    }

    /// Polls everything currently in the CQ.
    pub fn drain(&mut self) -> Vec<WorkCompletion> {
        let mut v = Vec::new();
        let mut wc = [WorkCompletion::default(); 64];
        loop {
            let n = self.poll(&mut wc);
            v.extend_from_slice(&wc[..n]);
            if n < wc.len() {
                return v;
            }
        }
    }

    /// An SGE for `[off, off + len)` of the buffer.
    pub fn sge(&self, off: u64, len: u32) -> Sge {
        self.mr
            .sge(off, len)
            .expect("SGE inside the endpoint buffer")
    }

    /// Device address of buffer byte `off`.
    pub fn addr(&self, off: u64) -> u64 {
        self.buf.iova + off
    }

    /// Writes `bytes` into the buffer at `off` (host side).
    pub fn write(&self, off: usize, bytes: &[u8]) {
        assert!(off
            .checked_add(bytes.len())
            .is_some_and(|end| end <= self.buf.len));
        // SAFETY: the range is inside the live buffer (asserted); no Rust
        // reference points into DMA memory.
        unsafe { std::ptr::copy(bytes.as_ptr(), self.buf.cpu.as_ptr().add(off), bytes.len()) };
    }

    /// Reads `len` bytes of the buffer at `off` (host side).
    pub fn read(&self, off: usize, len: usize) -> Vec<u8> {
        assert!(off.checked_add(len).is_some_and(|end| end <= self.buf.len));
        let mut v = vec![0u8; len];
        // SAFETY: as `write`.
        unsafe { std::ptr::copy(self.buf.cpu.as_ptr().add(off), v.as_mut_ptr(), len) };
        v
    }
}

/// Connection parameters for [`connect`].
#[derive(Clone, Copy, Debug)]
pub struct ConnOpts {
    /// Remote access granted on both QPs.
    pub access: Access,
    /// Path MTU (ibv_mtu, 1..=5).
    pub path_mtu: u8,
    /// Transport timeout exponent.
    pub timeout: u8,
    /// Transport retries.
    pub retry_cnt: u8,
    /// RNR retries (7 = infinite).
    pub rnr_retry: u8,
    /// Responder RNR timer code.
    pub min_rnr_timer: u8,
    /// Starting PSN (both directions use it).
    pub psn: u32,
}

impl Default for ConnOpts {
    fn default() -> Self {
        ConnOpts {
            access: Access::REMOTE_WRITE | Access::REMOTE_READ | Access::REMOTE_ATOMIC,
            path_mtu: 5,
            timeout: 8,
            retry_cnt: 7,
            rnr_retry: 7,
            min_rnr_timer: 1,
            psn: 0x1234,
        }
    }
}

/// Walks an RC/UC endpoint to RTS against a peer (LID, QPN).
pub fn to_rts<const S: usize, const R: usize, const C: usize>(
    ep: &mut Endpoint<S, R, C>,
    peer_lid: u16,
    peer_qpn: u32,
    o: &ConnOpts,
) -> Result<(), SimError> {
    use QpAttrMask as M;
    let rc = ep.cfg.qp_type == QpType::Rc;
    let mut a = QpAttr {
        qp_state: QpState::Init,
        qp_access_flags: o.access,
        port_num: 1,
        ..QpAttr::default()
    };
    ep.modify(&a, M::STATE | M::PKEY_INDEX | M::PORT | M::ACCESS_FLAGS)?;
    a.qp_state = QpState::Rtr;
    a.dlid = peer_lid;
    a.path_mtu = o.path_mtu;
    a.dest_qp_num = peer_qpn;
    a.rq_psn = o.psn;
    a.max_dest_rd_atomic = 16;
    a.min_rnr_timer = o.min_rnr_timer;
    let mut m = M::STATE | M::AV | M::PATH_MTU | M::DEST_QPN | M::RQ_PSN;
    if rc {
        m |= M::MAX_DEST_RD_ATOMIC | M::MIN_RNR_TIMER;
    }
    ep.modify(&a, m)?;
    a.qp_state = QpState::Rts;
    a.sq_psn = o.psn;
    a.timeout = o.timeout;
    a.retry_cnt = o.retry_cnt;
    a.rnr_retry = o.rnr_retry;
    a.max_rd_atomic = 16;
    let m = if rc {
        M::STATE | M::TIMEOUT | M::RETRY_CNT | M::RNR_RETRY | M::SQ_PSN | M::MAX_QP_RD_ATOMIC
    } else {
        M::STATE | M::SQ_PSN
    };
    ep.modify(&a, m)
}

/// Connects two RC or UC endpoints (possibly on the same device).
pub fn connect<const S: usize, const R: usize, const C: usize>(
    a: &mut Endpoint<S, R, C>,
    b: &mut Endpoint<S, R, C>,
    o: &ConnOpts,
) -> Result<(), SimError> {
    let (la, lb) = (a.dev.lid(), b.dev.lid());
    let (qa, qb) = (a.qpn, b.qpn);
    to_rts(a, lb, qb, o)?;
    to_rts(b, la, qa, o)
}

/// Walks a UD endpoint to RTS with Q_Key `qkey`.
pub fn ud_to_rts<const S: usize, const R: usize, const C: usize>(
    ep: &mut Endpoint<S, R, C>,
    qkey: u32,
) -> Result<(), SimError> {
    use QpAttrMask as M;
    let mut a = QpAttr {
        qp_state: QpState::Init,
        qkey,
        port_num: 1,
        ..QpAttr::default()
    };
    ep.modify(&a, M::STATE | M::PKEY_INDEX | M::PORT | M::QKEY)?;
    a.qp_state = QpState::Rtr;
    ep.modify(&a, M::STATE)?;
    a.qp_state = QpState::Rts;
    a.sq_psn = 0;
    ep.modify(&a, M::STATE | M::SQ_PSN)
}
