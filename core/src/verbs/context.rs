//! [`Context`]: a brought-up device as the owner of every verbs object.

use super::qp::Modify;
use super::{
    Access, CompletionQueue, DmaBuffer, Error, MemoryRegion, Owner, ProtectionDomain, QpCap,
    QpInitAttr, QueuePair, SharedReceiveQueue,
};
use crate::cmd::ops::RoceAddress;
use crate::cmd::{Bar0, Clock};
use crate::cq::DynCompletionQueue;
use crate::cqe::CqeSize;
use crate::device::{
    CqHandle, Device, DeviceError, GidPair, Interrupts, LinkLayer, Mkey, Pd, PortInfo, QpHandle,
    QpSpec, SrqHandle, SrqSpec, TeardownReport, UarMap,
};
use crate::platform::{DmaAllocator, DmaBuf};
use crate::rq::{RqConfig, RqSlot, SrqConfig, SrqSlot};
use crate::sizing::{self, QpCaps, QpType};
use crate::sq::{SqConfig, SqSlot};
use core::cell::{Cell, RefCell};
use core::fmt;
use core::mem::ManuallyDrop;
use core::sync::atomic::{AtomicU64, Ordering};

/// The next identity a [`Context`] or [`ProtectionDomain`] takes: unique
/// in the process (contexts and PDs draw from one counter), never reused.
/// 64 bits do not run out (one id a nanosecond lasts 584 years); should
/// they, [`next_id`] refuses rather than wraps, so no two live objects
/// ever share an identity.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A fresh identity, or `None` once all 2^64 - 1 are taken.
fn next_id() -> Option<u64> {
    NEXT_ID
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_add(1))
        .ok()
}

/// A brought-up mlx5 function as the verbs layer sees it (`ibv_context`):
/// it owns the [`Device`], every object made through it borrows it, and
/// dropping it tears the function down ([`Device::teardown`]) once no
/// object is left.
///
/// Single-threaded: it is not `Sync` (commands go through one command
/// queue); move the whole context to move the device.
pub struct Context<B: Bar0 + UarMap, C: Clock, A: DmaAllocator> {
    dev: ManuallyDrop<RefCell<Device<B, C, A>>>,
    /// This context's identity, stored in every object made through it:
    /// an object of another context is refused ([`Error::ForeignObject`]).
    id: u64,
    next_uidx: Cell<u32>,
    /// Completion events taken for CQs a `get_cq_event` call did not wait
    /// on: (vector, CQ number), delivered later.
    pending: RefCell<heapless::Vec<(u16, u32), 64>>,
}

impl<B: Bar0 + UarMap, C: Clock, A: DmaAllocator> fmt::Debug for Context<B, C, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

fn log2(n: u32) -> u8 {
    n.max(1).trailing_zeros() as u8
}

impl<B: Bar0 + UarMap, C: Clock, A: DmaAllocator> Context<B, C, A> {
    /// Takes ownership of a brought-up device.
    ///
    /// # Panics
    /// When the process has used up the 2^64 - 1 context and PD
    /// identities (it cannot, in practice): an identity is never reused.
    pub fn new(dev: Device<B, C, A>) -> Self {
        let id = next_id().expect("context identities exhausted");
        Context {
            dev: ManuallyDrop::new(RefCell::new(dev)),
            id,
            next_uidx: Cell::new(1),
            pending: RefCell::new(heapless::Vec::new()),
        }
    }

    /// Tears the function down now and reports what teardown did.
    pub fn close(mut self) -> TeardownReport {
        // SAFETY: `self` is forgotten right after, so `dev` is never used
        // or dropped again.
        let dev = unsafe { ManuallyDrop::take(&mut self.dev) };
        core::mem::forget(self);
        dev.into_inner().teardown().0
    }

    /// The device's sizing limits (from QUERY_HCA_CAP).
    pub fn device_caps(&self) -> sizing::DeviceCaps {
        self.dev.borrow().device_caps()
    }

    /// The port's link layer: InfiniBand ports are addressed by LID
    /// ([`AddressHandle::ib`](super::AddressHandle::ib)), Ethernet ports
    /// by GID and MAC ([`AddressHandle::roce`](super::AddressHandle::roce)).
    pub fn link_layer(&self) -> LinkLayer {
        self.dev.borrow().link_layer()
    }

    /// Adds `ip` to the port's GID table as the kernel does for an address
    /// of its netdev ([`Device::add_ip_gids`]: RoCE v1 and v2 entries after
    /// the link-local defaults, so the first address's v2 entry is index
    /// 3), with the function's permanent MAC.
    pub fn add_ip_gids(&self, ip: core::net::IpAddr) -> Result<GidPair, Error> {
        Ok(self.dev.borrow_mut().add_ip_gids(ip, None, None)?)
    }

    /// GID table entry `index` as programmed (`ibv_query_gid_ex`): the
    /// GID, MAC and RoCE version a peer addresses this port by.
    pub fn gid(&self, index: u16) -> Option<RoceAddress> {
        self.dev.borrow().gid(index)
    }

    /// The GID index perftest uses without `-x`
    /// ([`Device::best_gid_index`]).
    pub fn best_gid_index(&self, prefer_ipv6: bool) -> Option<u16> {
        self.dev.borrow().best_gid_index(prefer_ipv6)
    }

    /// The port's attributes (`ibv_query_port`: state, MTU, LID on an
    /// InfiniBand port).
    pub fn query_port(&self) -> Result<PortInfo, Error> {
        let info = self.dev.borrow_mut().devinfo()?;
        info.ports.first().copied().ok_or(Error::Unsupported {
            what: "a device reporting no port",
        })
    }

    /// Runs `f` on the device. Commands sent this way are the caller's
    /// responsibility: they must not destroy, modify or reuse objects this
    /// context owns.
    ///
    /// # Safety
    /// `f` must not change the state of any object made through this
    /// context (no destroy, modify or command that touches their numbers),
    /// and must not keep anything it gets from the device past the call.
    pub unsafe fn with_device<R>(&self, f: impl FnOnce(&mut Device<B, C, A>) -> R) -> R {
        f(&mut self.dev.borrow_mut())
    }

    /// Allocates a protection domain (ALLOC_PD).
    pub fn alloc_pd(&self) -> Result<ProtectionDomain<'_>, Error> {
        let domain = next_id().ok_or(Error::Unsupported {
            what: "another PD once 2^64 - 1 identities were taken",
        })?;
        let pd = self.dev.borrow_mut().alloc_pd()?;
        Ok(ProtectionDomain::new(pd, self.id, domain, self))
    }

    /// Allocates `len` bytes of zeroed DMA memory (whole 4 KiB pages,
    /// page aligned), owned by the returned buffer.
    pub fn alloc_buffer(&self, len: usize) -> Result<DmaBuffer<'_>, Error> {
        let pages = len
            .max(1)
            .checked_next_multiple_of(4096)
            .ok_or(DeviceError::OutOfDmaMemory { what: "buffer" })?;
        let raw = self
            .dev
            .borrow()
            .allocator()
            .alloc(pages, 4096)
            .ok_or(DeviceError::OutOfDmaMemory { what: "buffer" })?;
        // SAFETY: freshly allocated from this context's allocator, unknown
        // to the device, referenced by nothing else; `len <= pages`.
        Ok(unsafe { DmaBuffer::from_raw(raw, len, self.id, self) })
    }

    /// Refuses an object `what` of another context (`ctx` is its
    /// context's identity).
    fn own(&self, ctx: u64, what: &'static str) -> Result<(), Error> {
        if ctx == self.id {
            Ok(())
        } else {
            Err(Error::ForeignObject { what })
        }
    }

    /// Registers `buf` in `pd` with `access` (CREATE_MKEY): the region
    /// borrows both. Both must be this context's
    /// ([`Error::ForeignObject`]).
    pub fn reg_mr<'a>(
        &'a self,
        pd: &'a ProtectionDomain<'a>,
        buf: &'a DmaBuffer<'a>,
        access: Access,
    ) -> Result<MemoryRegion<'a>, Error> {
        self.own(pd.ctx, "PD")?;
        self.own(buf.ctx, "buffer")?;
        let raw = buf.raw();
        // SAFETY: `raw` is `buf`'s memory, which `buf` owns (allocated by
        // `alloc_buffer`, never a ring); the returned region borrows `buf`
        // and destroys the key before the borrow ends (a region whose key
        // cannot be destroyed pins the buffer); DmaBuffer never hands out
        // references to its memory.
        let mkey = unsafe { self.dev.borrow_mut().create_mkey(pd.pd, &raw, access) }?;
        // SAFETY: `mkey` was just created over exactly `raw`, which is
        // `buf`'s memory, with `access`.
        Ok(unsafe { MemoryRegion::new(mkey, access, buf, pd.domain, self) })
    }

    /// Creates a completion queue with room for at least `cqe` completions
    /// (`ibv_create_cq`: the ring gets the next power of two above `cqe`,
    /// [`CompletionQueue::cqe`] reports the usable entries).
    pub fn create_cq(&self, cqe: u32) -> Result<CompletionQueue<'_>, Error> {
        self.make_cq(cqe, None)
    }

    /// [`Context::create_cq`] whose completion events arrive on MSI-X
    /// `vector` (`ibv_create_cq` with a completion channel and
    /// `comp_vector`): the vector's completion EQ is created with the first
    /// CQ that asks for it ([`Device::create_comp_eq`]). Arm the CQ with
    /// [`CompletionQueue::req_notify`] and wait with
    /// [`Context::get_cq_event`].
    pub fn create_cq_on(&self, cqe: u32, vector: u16) -> Result<CompletionQueue<'_>, Error> {
        {
            let mut d = self.dev.borrow_mut();
            if d.comp_eqn(vector).is_none() {
                d.create_comp_eq(vector)?;
            }
        }
        self.make_cq(cqe, Some(vector))
    }

    fn make_cq(&self, cqe: u32, vector: Option<u16>) -> Result<CompletionQueue<'_>, Error> {
        let l = sizing::cq_layout(cqe, 64, &self.device_caps())?;
        let h = self
            .dev
            .borrow_mut()
            .create_cq_on(l.ncqe, CqeSize::B64, vector)?;
        // SAFETY: the ring and record are this CQ's, allocated for it by
        // `create_cq`, page aligned; this is the only queue object over
        // them; the handle is kept (and the ring freed) by the returned
        // value, which drops the queue first.
        let q = unsafe {
            DynCompletionQueue::with_entries(
                h.ncqe as usize,
                h.ring,
                h.dbrec,
                h.cqn,
                h.cqe_size,
                h.cqe_version,
            )
        };
        match q {
            Ok(mut q) => {
                q.init_ring();
                Ok(CompletionQueue::new(
                    q,
                    h,
                    l.reported_cqe,
                    vector,
                    self.id,
                    self,
                ))
            }
            Err(e) => {
                self.destroy_cq(h);
                Err(e.into())
            }
        }
    }

    /// Creates a shared receive queue for `max_wr` receives of `max_sge`
    /// scatter entries (`ibv_create_srq`), sized as the vendor's provider
    /// sizes it ([`sizing::srq_provider_layout`]); `N` is its WQE slots
    /// (a mismatch is refused with the number to use). The read-back
    /// `max_wr`/`max_sge` are reported by the SRQ. `pd` must be this
    /// context's ([`Error::ForeignObject`]); every region the SRQ's WRs name
    /// must be in it.
    pub fn create_srq<'a, const N: usize>(
        &'a self,
        pd: &'a ProtectionDomain<'a>,
        max_wr: u32,
        max_sge: u32,
    ) -> Result<SharedReceiveQueue<'a, N>, Error> {
        self.own(pd.ctx, "PD")?;
        let l = sizing::srq_provider_layout(max_wr, max_sge.max(1), &self.device_caps())?;
        if l.srq_max as usize != N {
            return Err(Error::Storage {
                queue: "shared receive",
                need: l.srq_max,
                have: N as u32,
            });
        }
        let h = self.dev.borrow_mut().create_srq(SrqSpec {
            pd: pd.pd,
            log_size: log2(l.srq_max),
            wqe_shift: l.wqe_shift as u8,
        })?;
        let cfg = SrqConfig {
            wqe_shift: l.wqe_shift,
            max_gs: l.max_gs,
            nwqes: l.nwqes,
            wait_queue: l.waitq.is_some(),
        };
        // SAFETY: one queue object over this handle's ring, kept with the
        // handle by the returned value, which destroys the SRQ (freeing the
        // ring) only in its own drop.
        let Some(q) = (unsafe { h.shared_receive_queue(cfg, [SrqSlot::default(); N]) }) else {
            self.destroy_srq(h);
            return Err(Error::Unsupported {
                what: "an SRQ geometry the data path rejects",
            });
        };
        Ok(SharedReceiveQueue::new(
            q,
            h,
            l.ret_max_wr,
            l.ret_max_sge,
            (self.id, pd.domain),
            self,
        ))
    }

    /// Creates a queue pair from verbs capabilities: sizes it exactly as
    /// the vendor's provider does ([`sizing::qp_layout`] over this device's
    /// limits), creates it by command in RESET (refused when its CQs cannot
    /// hold a completion for every WR that can be outstanding), and builds
    /// its queues from that geometry. `SQ` and `RQ` are the send ring's
    /// WQEBBs and the receive ring's WQEs; a mismatch is refused with the
    /// numbers to use. [`QueuePair::cap`] reports the capacities read back.
    ///
    /// `pd`, both CQs and the SRQ must be this context's
    /// ([`Error::ForeignObject`]): another context's numbers name other
    /// objects here (every context numbers its QPs' user indices from 1,
    /// so a foreign CQ's completions would retire this QP's WRs). Every
    /// region the QP's WRs name must be in `pd`.
    pub fn create_qp<'a, const SQ: usize, const RQ: usize>(
        &'a self,
        pd: &'a ProtectionDomain<'a>,
        attr: &QpInitAttr<'a>,
    ) -> Result<QueuePair<'a, B::Uar, SQ, RQ>, Error> {
        self.own(pd.ctx, "PD")?;
        self.own(attr.send_cq.ctx, "send CQ")?;
        self.own(attr.recv_cq.ctx, "receive CQ")?;
        if let Some(s) = attr.srq {
            self.own(s.0.ctx(), "SRQ")?;
        }
        let c = attr.cap;
        if attr.qp_type.service_type().is_none() {
            return Err(Error::Unsupported {
                what: "this QP type in the verbs layer",
            });
        }
        let srq = attr.srq;
        let mut req = QpCaps::new(attr.qp_type)
            .send(c.max_send_wr, c.max_send_sge, c.max_inline_data)
            .recv(c.max_recv_wr.max(1), c.max_recv_sge.max(1));
        req.uses_srq = srq.is_some();
        let l = sizing::qp_layout(&req, &self.device_caps())?;
        let rq_need = if srq.is_some() {
            RQ as u32
        } else {
            l.rq.wqe_cnt
        };
        for (queue, need, have) in [("send", l.sq.wqe_cnt, SQ), ("receive", rq_need, RQ)] {
            if need as usize != have {
                return Err(Error::Storage {
                    queue,
                    need,
                    have: have as u32,
                });
            }
        }
        let uidx = self.next_uidx.get();
        self.next_uidx.set((uidx + 1) & 0xff_ffff);
        let mut dev = self.dev.borrow_mut();
        let hca = *dev.hca_caps();
        let h = dev.create_qp(QpSpec {
            qp_type: attr.qp_type,
            pd: pd.pd,
            send_cqn: attr.send_cq.cqn(),
            recv_cqn: attr.recv_cq.cqn(),
            log_sq_size: log2(l.sq.wqe_cnt),
            log_rq_size: log2(l.rq.wqe_cnt),
            rq_wqe_shift: (l.rq.wqe_shift as u8).max(4),
            srqn: srq.map(|s| s.0.srqn()),
            user_index: uidx,
            max_send_wr: l.sq.max_post,
            max_recv_wr: l.rq.max_post,
        })?;
        let uar = match dev.map_uar(h.uar_index) {
            Ok(u) => u,
            Err(e) => {
                drop(dev);
                self.destroy_qp(h);
                return Err(e.into());
            }
        };
        drop(dev);
        let sqc = SqConfig::from_layout(h.qpn, &l)
            .sig_all(attr.sq_sig_all)
            .atomics(attr.qp_type == QpType::Rc && hca.atomic);
        let rqc = RqConfig {
            wqe_shift: l.rq.wqe_shift.max(4),
            max_gs: l.rq.max_gs,
            max_post: l.rq.max_post,
        };
        let slots = ([SqSlot::default(); SQ], [RqSlot::default(); RQ]);
        // SAFETY: one queue object per handle; the handle is kept by the
        // returned QueuePair, which destroys the QP (freeing the rings)
        // only in its own drop, after which the queues are never used.
        let Some(inner) = (unsafe { h.queue_pair(uar, sqc, rqc, slots.0, slots.1) }) else {
            self.destroy_qp(h);
            return Err(Error::Unsupported {
                what: "a queue geometry the data path rejects",
            });
        };
        let cap = QpCap {
            max_send_wr: l.ret_max_send_wr,
            max_recv_wr: l.ret_max_recv_wr,
            max_send_sge: l.ret_max_send_sge,
            max_recv_sge: l.ret_max_recv_sge,
            max_inline_data: l.ret_max_inline_data,
        };
        Ok(QueuePair::new(
            inner,
            h,
            attr.qp_type,
            cap,
            hca.log_max_msg,
            attr.send_cq,
            attr.recv_cq,
            srq,
            pd.domain,
            self,
        ))
    }
}

impl<B: Bar0 + UarMap, C: Clock, A: DmaAllocator> Owner for Context<B, C, A> {
    unsafe fn free_dma(&self, raw: DmaBuf) {
        if let Ok(d) = self.dev.try_borrow() {
            // SAFETY: forwarded: `raw` came from this allocator and the
            // device no longer reaches it.
            unsafe { d.allocator().free(raw) };
        }
    }
    fn dealloc_pd(&self, pd: Pd) -> bool {
        self.dev
            .try_borrow_mut()
            .is_ok_and(|mut d| d.dealloc_pd(pd).is_ok())
    }
    fn destroy_mkey(&self, m: Mkey) -> bool {
        self.dev
            .try_borrow_mut()
            .is_ok_and(|mut d| d.destroy_mkey(m).is_ok())
    }
    fn destroy_cq(&self, h: CqHandle) -> bool {
        self.dev
            .try_borrow_mut()
            .is_ok_and(|mut d| d.destroy_cq(h).is_ok())
    }
    fn destroy_qp(&self, h: QpHandle) -> bool {
        self.dev
            .try_borrow_mut()
            .is_ok_and(|mut d| d.destroy_qp(h).is_ok())
    }
    fn destroy_srq(&self, h: SrqHandle) -> bool {
        self.dev
            .try_borrow_mut()
            .is_ok_and(|mut d| d.destroy_srq(h).is_ok())
    }
    fn modify_qp(&self, h: &mut QpHandle, m: Modify) -> Result<(), DeviceError> {
        let mut d = self.dev.borrow_mut();
        match m {
            Modify::Init(a) => d.rst2init(h, &a),
            Modify::Rtr(a) => d.init2rtr(h, &a),
            Modify::Rts(a) => d.rtr2rts(h, &a),
            Modify::Err => d.qp_to_err(h),
            Modify::Reset => d.qp_to_reset(h),
        }
    }
    fn query_qp(&self, h: &mut QpHandle) -> Result<crate::cmd::ops::QpQuery, DeviceError> {
        self.dev.borrow_mut().query_qp(h)
    }
    fn arm_cq(&self, cq: &mut DynCompletionQueue, solicited_only: bool) -> Result<(), DeviceError> {
        let mut d = self.dev.borrow_mut();
        let index = d.uar_index();
        let mut uar = d.map_uar(index)?;
        cq.arm(solicited_only, &mut uar);
        Ok(())
    }
    fn address_path(
        &self,
        ah: &super::AddressHandle,
        ty: QpType,
    ) -> Result<crate::cmd::ops::AddressPath, DeviceError> {
        let d = self.dev.borrow();
        let sgid = ah
            .grh
            .and_then(|g| d.gid(g.sgid_index as u16))
            .map(|a| a.version);
        ah.path(d.link_layer(), ty, sgid)
    }
}

impl<B: Bar0 + UarMap + Interrupts, C: Clock, A: DmaAllocator> Context<B, C, A> {
    /// Waits up to `timeout_us` for a completion event on `vector`
    /// (`ibv_get_cq_event`) and returns the index in `cqs` of the CQ it is
    /// for, with that CQ's event recorded as consumed (arm it again with
    /// [`CompletionQueue::req_notify`] before polling it empty). `None` is a
    /// timeout. The device's event is checked first: only a CQ this context
    /// holds on that vector's EQ counts ([`Device::poll_cq_events`]). An
    /// event for a CQ of this context that is not in `cqs` is kept (up to
    /// 64) and delivered by the first call that waits on that CQ. Every CQ
    /// in `cqs` must be this context's ([`Error::ForeignObject`]: events
    /// are matched by CQ number, which another context's CQ shares).
    pub fn get_cq_event(
        &self,
        vector: u16,
        timeout_us: u64,
        cqs: &[&CompletionQueue<'_>],
    ) -> Result<Option<usize>, Error> {
        for c in cqs {
            self.own(c.ctx, "CQ")?;
        }
        let held = |cqn: u32| cqs.iter().position(|c| c.cqn() == cqn);
        {
            let mut p = self.pending.borrow_mut();
            let found = p
                .iter()
                .enumerate()
                .find_map(|(k, &(v, c))| held(c).filter(|_| v == vector).map(|i| (k, i)));
            if let Some((k, i)) = found {
                p.remove(k);
                cqs[i].event_consumed();
                return Ok(Some(i));
            }
        }
        let start = self.dev.borrow_mut().clock_mut().now_us();
        let mut cqn = [0u32; 1];
        loop {
            let mut d = self.dev.borrow_mut();
            let spent = d.clock_mut().now_us().saturating_sub(start);
            if spent >= timeout_us {
                return Ok(None);
            }
            let got = d.wait_cq_events(vector, timeout_us - spent, &mut cqn)?;
            drop(d);
            if got.n == 0 {
                return Ok(None);
            }
            if let Some(i) = held(cqn[0]) {
                cqs[i].event_consumed();
                return Ok(Some(i));
            }
            // Another CQ's event: kept for the call that waits on it.
            if self.pending.borrow_mut().push((vector, cqn[0])).is_err() {
                return Err(Error::Unsupported {
                    what: "more undelivered completion events than get_cq_event keeps (64): \
                           wait with every armed CQ of the vector in the slice",
                });
            }
        }
    }
}

impl<B: Bar0 + UarMap, C: Clock, A: DmaAllocator> Drop for Context<B, C, A> {
    fn drop(&mut self) {
        // SAFETY: `dev` is taken once, here, and never used again.
        let dev = unsafe { ManuallyDrop::take(&mut self.dev) };
        let _ = dev.into_inner().teardown();
    }
}
