//! The public face of the simulator: a [`Fabric`] (virtual clock, event
//! queue, fault plan, cost model) joining simulated [`Device`]s, each with
//! a DMA address space, object tables and UAR pages ([`SimUar`]).
//!
//! Objects are created through a Rust API on the device, or by firmware
//! commands ([`crate::fw::bring_up_on`], which fills the same tables under
//! the numbers firmware chose: the `*_as` methods). Every ring, doorbell
//! record and memory region is resolved through the device's DMA table
//! ([`HeapDma::translate`]) when it is created: an address that is not
//! inside a live allocation is refused and never dereferenced, and every
//! address a WQE names is checked against a memory region.

use crate::cost::{Counters, ModelParams};
use crate::dma::HeapDma;
use crate::fault::FaultPlan;
use crate::objects::{AsyncEvent, Cq, Mr, Qp, QpAttr, RespCache, Srq};
use crate::world::{Dev, TraceEvent, World, QPN_BASE};
use bareverbs::mr::{Access, MemoryRegion};
use bareverbs::platform::{DmaAllocator, DmaBuf, Uar, BF_OFFSET, CQ_DOORBELL};
use bareverbs::qp::{check_transition, QpAttrMask, QpState, QpTransitionError, QpType};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::fmt;
use std::ptr::NonNull;
use std::rc::Rc;
use std::sync::Arc;

/// Why the device refused a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SimError {
    /// An address range is not inside a live DMA allocation.
    BadAddress,
    /// A size is not a power of two, too small or too large.
    BadSize,
    /// No such object (QP, CQ, SRQ, PD).
    NoSuchObject,
    /// The modify-QP is not a legal transition with this mask.
    Transition(QpTransitionError),
    /// IBV_QP_CUR_STATE did not match the current state.
    CurStateMismatch,
    /// Out of memory in the DMA allocator.
    NoMemory,
    /// The object number asked for is taken or out of the table's range.
    NumberUnavailable,
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:?}")
    }
}

impl std::error::Error for SimError {}

/// A handle to the whole simulation. Cloning shares it.
#[derive(Clone)]
pub struct Fabric {
    w: Rc<RefCell<World>>,
}

impl Fabric {
    /// A fabric with no devices, default cost parameters, no faults and
    /// the random generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        Fabric {
            w: Rc::new(RefCell::new(World::new(seed))),
        }
    }
    /// Adds a device (one port, LID = index + 1).
    pub fn add_device(&self) -> Device {
        self.add_device_with_dma(Arc::new(HeapDma::new()))
    }
    /// Adds a device whose DMA address space is `dma` (shared with a
    /// firmware model, so command-created objects and the data path see
    /// the same memory).
    pub fn add_device_with_dma(&self, dma: Arc<HeapDma>) -> Device {
        let mut w = self.w.borrow_mut();
        let id = w.devs.len();
        w.devs.push(Dev {
            dma: dma.clone(),
            lid: id as u16 + 1,
            qps: Vec::new(),
            cqs: Vec::new(),
            srqs: Vec::new(),
            mrs: vec![None],
            next_pd: 1,
            events: Vec::new(),
            counters: Counters::default(),
            tx_free: 0,
            lru_head: None,
            lru_tail: None,
            lru_len: 0,
        });
        Device {
            w: self.w.clone(),
            id: id as u16,
            dma,
        }
    }
    /// Replaces the fault plan.
    pub fn set_faults(&self, f: FaultPlan) {
        self.w.borrow_mut().set_faults(f);
    }
    /// Replaces the cost-model parameters.
    pub fn set_params(&self, p: ModelParams) {
        self.w.borrow_mut().set_params(p);
    }
    /// The cost-model parameters.
    pub fn params(&self) -> ModelParams {
        *self.w.borrow().params()
    }
    /// With auto progress (the default) every doorbell runs the event loop
    /// until idle, so a post completes before the post call returns. Off,
    /// the caller drives time with [`run_until_idle`](Self::run_until_idle)
    /// or [`run_for`](Self::run_for).
    pub fn set_auto_progress(&self, on: bool) {
        self.w.borrow_mut().auto_progress = on;
    }
    /// How far past its start [`run_until_idle`](Self::run_until_idle) may
    /// move the clock (default 1 s of virtual time).
    pub fn set_horizon_ns(&self, ns: u64) {
        self.w.borrow_mut().horizon_ns = ns;
    }
    /// Most WQEs one pass over a work queue handles: a send queue's fetch
    /// after a doorbell, or the flush of a send or receive queue in ERR;
    /// the rest wait for the queue's next pass. The default,
    /// [`PASS_LIMIT_DEFAULT`](crate::world::PASS_LIMIT_DEFAULT), follows
    /// any 16-bit doorbell-record counter to its end, as the hardware
    /// does. A fuzz run lowers it so that a record claiming tens of
    /// thousands of WQEs on a four-slot ring costs a bounded amount of
    /// work per input (values below 1 are taken as 1).
    pub fn set_pass_limit(&self, wqes: u32) {
        self.w.borrow_mut().pass_limit = wqes.max(1);
    }
    /// Virtual time (ns).
    pub fn now_ns(&self) -> u64 {
        self.w.borrow().now
    }
    /// Runs events until none is left (or the horizon). Also flushes
    /// receives posted to QPs in ERR. Returns the events processed.
    pub fn run_until_idle(&self) -> u64 {
        self.w.borrow_mut().run_until_idle()
    }
    /// Runs the events of the next `ns` nanoseconds and advances the clock.
    pub fn run_for(&self, ns: u64) -> u64 {
        let mut w = self.w.borrow_mut();
        let t = w.now + ns;
        w.run_until(t)
    }
    /// Processes the earliest pending event, whenever it is due. Returns
    /// false when the queue is empty.
    pub fn step(&self) -> bool {
        let mut w = self.w.borrow_mut();
        w.step(u64::MAX)
    }
    /// Advances the clock by `ns` of host CPU time (events that fall due
    /// are processed on the next step or run).
    pub fn spend(&self, ns: u64) {
        self.w.borrow_mut().now += ns;
    }
    /// Events waiting in the queue.
    pub fn pending_events(&self) -> usize {
        self.w.borrow().pending_events()
    }
    /// With fast paths on (the default), work the general event-driven
    /// path would run alone from doorbell to completion (a single-packet
    /// RC WRITE with nothing else in flight, no fault plan, auto progress)
    /// is executed fused, with the same effects. Off, every operation takes
    /// the general path: for tests comparing the two.
    pub fn set_fast_paths(&self, on: bool) {
        self.w.borrow_mut().fast_paths = on;
    }
    /// Operations the fast paths have executed so far.
    pub fn fast_path_runs(&self) -> u64 {
        self.w.borrow().fast_runs
    }
    /// A description of the whole device-side state that behaviour depends
    /// on — clock, event queue keys, generator, every device's port,
    /// counters and QP-context cache, every QP context, every CQ's state
    /// and ring contents — without host addresses, so that two fabrics
    /// built and driven the same way compare equal. For twin tests.
    pub fn state_fingerprint(&self) -> String {
        self.w.borrow().fingerprint()
    }
    /// Starts recording the event trace (clears any previous one).
    pub fn enable_trace(&self) {
        self.w.borrow_mut().trace = Some(Vec::new());
    }
    /// The trace recorded so far.
    pub fn trace(&self) -> Vec<TraceEvent> {
        self.w.borrow().trace.clone().unwrap_or_default()
    }
}

/// A protection domain.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Pd(pub u32);

/// A CQ the device created: its number and the memory the host polls.
#[derive(Clone, Copy, Debug)]
pub struct CqHandle {
    /// CQ number.
    pub cqn: u32,
    /// The ring (`ncqe` × 64 bytes, entries initialised to op_own 0xF0).
    pub ring: DmaBuf,
    /// The 8-byte doorbell record.
    pub dbrec: DmaBuf,
    /// Entries.
    pub ncqe: u32,
}

/// An SRQ the device created.
#[derive(Clone, Copy, Debug)]
pub struct SrqHandle {
    /// SRQ number.
    pub srqn: u32,
    /// The ring (`nslots << wqe_shift` bytes).
    pub ring: DmaBuf,
    /// The 4-byte doorbell record.
    pub dbrec: DmaBuf,
}

/// What a QP is created with.
#[derive(Clone, Copy, Debug)]
pub struct QpInit {
    /// Transport type (RC, UC, UD).
    pub qp_type: QpType,
    /// Protection domain.
    pub pd: Pd,
    /// CQ of send completions.
    pub send_cq: u32,
    /// CQ of receive completions.
    pub recv_cq: u32,
    /// SRQ the receives come from (no RQ then).
    pub srq: Option<u32>,
    /// SQ ring size in WQEBBs (power of two; 0 = no SQ).
    pub sq_wqebbs: u32,
    /// RQ ring size in WQEs (power of two; 0 = no RQ).
    pub rq_wqes: u32,
    /// log2 of the RQ stride (≥ 4).
    pub rq_wqe_shift: u32,
    /// User index written in CQEs (CQE version 1).
    pub uidx: u32,
}

/// A QP the device created: number, ring memory, doorbell record and the
/// UAR to ring.
pub struct QpHandle {
    /// QP number.
    pub qpn: u32,
    /// SQ ring (`sq_wqebbs` × 64 bytes).
    pub sq_ring: Option<DmaBuf>,
    /// RQ ring.
    pub rq_ring: Option<DmaBuf>,
    /// The QP doorbell record (8 bytes: RCV word 0, SND word 1).
    pub dbrec: DmaBuf,
    /// The UAR page this QP's doorbells go to.
    pub uar: SimUar,
}

/// One simulated ConnectX (a handle; cloning shares it).
#[derive(Clone)]
pub struct Device {
    w: Rc<RefCell<World>>,
    id: u16,
    dma: Arc<HeapDma>,
}

fn pow2(n: u32) -> bool {
    n != 0 && n.is_power_of_two()
}

/// Largest table index an explicitly numbered object may take.
pub const MAX_PLACED_INDEX: usize = 1 << 16;

/// Puts `t` at index `idx` of a table (growing it), or at its end when
/// `idx` is `None`; refuses a live slot or an index past
/// [`MAX_PLACED_INDEX`]. Returns the index used.
fn place<T>(
    v: &mut Vec<Option<T>>,
    idx: Option<usize>,
    t: T,
    live: impl Fn(&T) -> bool,
) -> Result<usize, SimError> {
    let i = idx.unwrap_or(v.len());
    if i > MAX_PLACED_INDEX {
        return Err(SimError::NumberUnavailable);
    }
    if v.len() <= i {
        v.resize_with(i + 1, || None);
    }
    if matches!(&v[i], Some(x) if live(x)) {
        return Err(SimError::NumberUnavailable);
    }
    v[i] = Some(t);
    Ok(i)
}

/// The GID the simulator gives the port with LID `lid`: link-local
/// `fe80::<lid>`. An address path with a GRH and no LID is routed to the
/// device whose GID this is.
pub const fn sim_gid(lid: u16) -> [u8; 16] {
    let l = lid.to_be_bytes();
    [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, l[0], l[1]]
}

impl Device {
    /// Index of the device in the fabric.
    pub fn index(&self) -> usize {
        self.id as usize
    }
    /// The port's LID (what address vectors name).
    pub fn lid(&self) -> u16 {
        self.id + 1
    }
    /// The device's DMA allocator (device addresses are IOVAs translated
    /// through its table).
    pub fn dma(&self) -> &HeapDma {
        &self.dma
    }
    /// Allocates zeroed DMA memory.
    pub fn alloc(&self, len: usize) -> Result<DmaBuf, SimError> {
        self.dma.alloc(len, 64).ok_or(SimError::NoMemory)
    }
    /// A new UAR page handle (doorbells, BlueFlame, CQ arm).
    pub fn uar(&self) -> SimUar {
        SimUar {
            w: self.w.clone(),
            dev: self.id,
            bf: Vec::new(),
        }
    }
    fn translate_iova(&self, iova: u64, len: usize) -> Result<*mut u8, SimError> {
        self.dma
            .translate(iova, len)
            .map(|p| p.as_ptr())
            .ok_or(SimError::BadAddress)
    }
    fn translate(&self, buf: &DmaBuf) -> Result<*mut u8, SimError> {
        self.translate_iova(buf.iova, buf.len)
    }
    /// Allocates a protection domain.
    pub fn alloc_pd(&self) -> Pd {
        let mut w = self.w.borrow_mut();
        let d = &mut w.devs[self.id as usize];
        d.next_pd += 1;
        Pd(d.next_pd - 1)
    }

    /// Makes PD number `pd` (allocated elsewhere, e.g. by ALLOC_PD) valid
    /// on this device.
    pub fn adopt_pd(&self, pd: Pd) {
        let mut w = self.w.borrow_mut();
        let d = &mut w.devs[self.id as usize];
        d.next_pd = d.next_pd.max(pd.0.saturating_add(1));
    }

    /// Registers `[iova, iova + len)` of this device's DMA space under a
    /// new key (lkey = rkey) with `access` (`ibv_access_flags`). Returns
    /// the key.
    pub fn reg_mr_range(
        &self,
        pd: Pd,
        iova: u64,
        len: u64,
        access: Access,
    ) -> Result<u32, SimError> {
        self.reg_mr_translated(pd, iova, len, access)
            .map(|(key, _)| key)
    }

    /// [`Device::reg_mr_range`], also returning the CPU address the
    /// simulator's own DMA table gives for `iova`.
    fn reg_mr_translated(
        &self,
        pd: Pd,
        iova: u64,
        len: u64,
        access: Access,
    ) -> Result<(u32, NonNull<u8>), SimError> {
        let len_usize = usize::try_from(len).map_err(|_| SimError::BadAddress)?;
        let cpu = self
            .dma
            .translate(iova, len_usize)
            .ok_or(SimError::BadAddress)?;
        let mut w = self.w.borrow_mut();
        let d = &mut w.devs[self.id as usize];
        let idx = d.mrs.len() as u32;
        // Key = index << 8 | variant; never MLX5_INVALID_LKEY (0x100).
        let key = idx << 8 | ((idx.wrapping_mul(0x5b) + 0x42) & 0xff);
        d.mrs.push(Some(Mr {
            key,
            pd: pd.0,
            iova,
            len,
            cpu: cpu.as_ptr(),
            access,
            valid: true,
        }));
        Ok((key, cpu))
    }

    /// Registers a memory key chosen by the caller (as CREATE_MKEY does):
    /// WQEs name bytes `[va, va + len)` under `key`; they live at device
    /// address `dev_addr`, which must lie inside one live DMA allocation.
    /// The key's index (`key >> 8`) must be free.
    pub fn reg_mr_as(
        &self,
        key: u32,
        pd: Pd,
        va: u64,
        len: u64,
        dev_addr: u64,
        access: Access,
    ) -> Result<(), SimError> {
        let cpu = usize::try_from(len)
            .ok()
            .and_then(|l| self.dma.translate(dev_addr, l))
            .ok_or(SimError::BadAddress)?;
        let mut w = self.w.borrow_mut();
        let d = &mut w.devs[self.id as usize];
        let mr = Mr {
            key,
            pd: pd.0,
            iova: va,
            len,
            cpu: cpu.as_ptr(),
            access,
            valid: true,
        };
        place(&mut d.mrs, Some((key >> 8) as usize), mr, |m| m.valid)?;
        Ok(())
    }

    /// Removes the memory key with index `index` (DESTROY_MKEY).
    pub fn destroy_mr_index(&self, index: u32) {
        let mut w = self.w.borrow_mut();
        if let Some(slot) = w.devs[self.id as usize].mrs.get_mut(index as usize) {
            *slot = None;
        }
    }

    /// Registers the device range `[buf.iova, buf.iova + buf.len)` and
    /// returns the core's [`MemoryRegion`] for it.
    ///
    /// Only `buf.iova` and `buf.len` are used: the region's CPU address comes
    /// from the simulator's own DMA translation of the IOVA, never from
    /// `buf.cpu`, so a caller-built `DmaBuf` cannot point the region (and the
    /// host-side copies the core makes through it, such as inline sends) at
    /// memory outside the device's allocations. A range that is not inside
    /// one live allocation is refused with [`SimError::BadAddress`].
    pub fn reg_mr(&self, pd: Pd, buf: DmaBuf, access: Access) -> Result<MemoryRegion, SimError> {
        let len = buf.len as u64;
        let (key, cpu) = self.reg_mr_translated(pd, buf.iova, len, access)?;
        // SAFETY: `cpu` is the simulator's translation of `buf.iova`: byte i
        // of `[cpu, cpu + len)` is the live allocation byte the device reaches
        // at `iova + i` under `key`. The allocator keeps it valid until it is
        // freed, which the user must not do while the region is in use (the
        // contract of MemoryRegion::new, forwarded to the caller by
        // documentation).
        Ok(unsafe { MemoryRegion::new(cpu, buf.iova, len, key, key, access) })
    }

    /// Invalidates a key (deregistration).
    pub fn dereg_mr(&self, key: u32) {
        let mut w = self.w.borrow_mut();
        if let Some(Some(m)) = w.devs[self.id as usize].mrs.get_mut((key >> 8) as usize) {
            if m.key == key {
                m.valid = false;
            }
        }
    }

    /// Creates a CQ of `ncqe` 64-byte entries (power of two ≥ 2) with CQE
    /// version `cqe_version` (1: CQEs carry the user index), allocating its
    /// ring and doorbell record.
    pub fn create_cq(&self, ncqe: u32, cqe_version: u8) -> Result<CqHandle, SimError> {
        if !pow2(ncqe) || !(2..=1 << 22).contains(&ncqe) {
            return Err(SimError::BadSize);
        }
        let ring = self.alloc(ncqe as usize * 64)?;
        let dbrec = self.alloc(8)?;
        let cqn = self.create_cq_at(ncqe, cqe_version, ring.iova, dbrec.iova)?;
        Ok(CqHandle {
            cqn,
            ring,
            dbrec,
            ncqe,
        })
    }

    /// Creates a CQ over host-provided memory named by device addresses
    /// (as CREATE_CQ names its pages): the ring at `ring_iova` (`ncqe` × 64
    /// bytes) and the record at `dbrec_iova` (8 bytes). Both are resolved
    /// through the DMA table; a range outside a live allocation is refused
    /// with [`SimError::BadAddress`] and never touched. Every entry's
    /// op_own is initialised to 0xF0.
    pub fn create_cq_at(
        &self,
        ncqe: u32,
        cqe_version: u8,
        ring_iova: u64,
        dbrec_iova: u64,
    ) -> Result<u32, SimError> {
        self.cq_at(None, ncqe, cqe_version, ring_iova, dbrec_iova)
    }

    /// [`create_cq_at`](Self::create_cq_at) under the CQ number `cqn`
    /// chosen by the caller (CREATE_CQ's firmware), which must be free.
    pub fn create_cq_as(
        &self,
        cqn: u32,
        ncqe: u32,
        cqe_version: u8,
        ring_iova: u64,
        dbrec_iova: u64,
    ) -> Result<(), SimError> {
        self.cq_at(Some(cqn), ncqe, cqe_version, ring_iova, dbrec_iova)
            .map(|_| ())
    }

    fn cq_at(
        &self,
        cqn: Option<u32>,
        ncqe: u32,
        cqe_version: u8,
        ring_iova: u64,
        dbrec_iova: u64,
    ) -> Result<u32, SimError> {
        if !pow2(ncqe) || !(2..=1 << 22).contains(&ncqe) {
            return Err(SimError::BadSize);
        }
        let rp = self.translate_iova(ring_iova, ncqe as usize * 64)?;
        let dp = self.translate_iova(dbrec_iova, 8)?;
        for i in 0..ncqe as usize {
            // SAFETY: entry i's op_own byte lies inside the ring just
            // allocated and translated.
            unsafe { std::ptr::write_volatile(rp.add(i * 64 + 63), 0xF0) };
        }
        let mut w = self.w.borrow_mut();
        let d = &mut w.devs[self.id as usize];
        let cq = Cq {
            ring: rp,
            ncqe,
            dbrec: dp,
            cqe_version,
            pi: 0,
            error: false,
            armed: None,
            last_cqe_ns: 0,
        };
        let i = place(&mut d.cqs, cqn.map(|n| n as usize), cq, |_| true)?;
        Ok(i as u32)
    }

    /// Removes CQ `cqn` (DESTROY_CQ). Firmware refuses to destroy a CQ a
    /// QP still reports to, so no QP is left pointing at it.
    pub fn destroy_cq(&self, cqn: u32) {
        let mut w = self.w.borrow_mut();
        if let Some(slot) = w.devs[self.id as usize].cqs.get_mut(cqn as usize) {
            *slot = None;
        }
    }

    /// Whether CQ `cqn` is in error (overrun).
    pub fn cq_in_error(&self, cqn: u32) -> bool {
        let w = self.w.borrow();
        matches!(w.devs[self.id as usize].cqs.get(cqn as usize), Some(Some(c)) if c.error)
    }

    /// Virtual time of the last CQE written to CQ `cqn`.
    pub fn cq_last_cqe_ns(&self, cqn: u32) -> u64 {
        let w = self.w.borrow();
        match w.devs[self.id as usize].cqs.get(cqn as usize) {
            Some(Some(c)) => c.last_cqe_ns,
            _ => 0,
        }
    }

    /// Creates an SRQ of `nslots` WQEs (power of two) with stride
    /// `1 << wqe_shift`; `limit` arms the SRQ-limit event (0 = off).
    pub fn create_srq(
        &self,
        pd: Pd,
        nslots: u32,
        wqe_shift: u32,
        limit: u32,
    ) -> Result<SrqHandle, SimError> {
        if !pow2(nslots) || !(5..=16).contains(&wqe_shift) {
            return Err(SimError::BadSize);
        }
        let ring = self.alloc((nslots as usize) << wqe_shift)?;
        let dbrec = self.alloc(4)?;
        let rp = self.translate(&ring)?;
        let dp = self.translate(&dbrec)?;
        let mut w = self.w.borrow_mut();
        let d = &mut w.devs[self.id as usize];
        let srqn = d.srqs.len() as u32;
        d.srqs.push(Some(Srq {
            ring: rp,
            nslots,
            shift: wqe_shift,
            dbrec: dp,
            pd: pd.0,
            head_slot: 0,
            consumed: 0,
            limit,
            error: false,
        }));
        Ok(SrqHandle { srqn, ring, dbrec })
    }

    /// Creates SRQ `srqn` (chosen by the caller, as CREATE_SRQ's firmware
    /// does) over host memory named by device addresses: the ring at
    /// `ring_iova` (`nslots << wqe_shift` bytes) and the 4-byte record at
    /// `dbrec_iova`, both resolved through the DMA table.
    pub fn create_srq_as(
        &self,
        srqn: u32,
        pd: Pd,
        nslots: u32,
        wqe_shift: u32,
        ring_iova: u64,
        dbrec_iova: u64,
    ) -> Result<(), SimError> {
        if !pow2(nslots) || !(4..=16).contains(&wqe_shift) {
            return Err(SimError::BadSize);
        }
        let rp = self.translate_iova(ring_iova, (nslots as usize) << wqe_shift)?;
        let dp = self.translate_iova(dbrec_iova, 4)?;
        let mut w = self.w.borrow_mut();
        let d = &mut w.devs[self.id as usize];
        let srq = Srq {
            ring: rp,
            nslots,
            shift: wqe_shift,
            dbrec: dp,
            pd: pd.0,
            head_slot: 0,
            consumed: 0,
            limit: 0,
            error: false,
        };
        place(&mut d.srqs, Some(srqn as usize), srq, |_| true)?;
        Ok(())
    }

    /// Removes SRQ `srqn` (DESTROY_SRQ; firmware refuses while a QP uses it).
    pub fn destroy_srq(&self, srqn: u32) {
        let mut w = self.w.borrow_mut();
        if let Some(slot) = w.devs[self.id as usize].srqs.get_mut(srqn as usize) {
            *slot = None;
        }
    }

    /// Re-arms the SRQ limit event.
    pub fn arm_srq_limit(&self, srqn: u32, limit: u32) {
        let mut w = self.w.borrow_mut();
        if let Some(Some(s)) = w.devs[self.id as usize].srqs.get_mut(srqn as usize) {
            s.limit = limit;
        }
    }

    /// Checks a QP request against the device's tables: ring sizes,
    /// existing CQs / SRQ / PD. Returns whether the QP has its own RQ.
    fn check_qp_init(&self, init: &QpInit) -> Result<bool, SimError> {
        if init.sq_wqebbs != 0 && (!pow2(init.sq_wqebbs) || init.sq_wqebbs > 1 << 16) {
            return Err(SimError::BadSize);
        }
        let has_rq = init.srq.is_none() && init.rq_wqes != 0;
        if has_rq
            && (!pow2(init.rq_wqes)
                || init.rq_wqes > 1 << 16
                || !(4..=16).contains(&init.rq_wqe_shift))
        {
            return Err(SimError::BadSize);
        }
        {
            let w = self.w.borrow();
            let d = &w.devs[self.id as usize];
            let ok_cq = |c: u32| matches!(d.cqs.get(c as usize), Some(Some(_)));
            if !ok_cq(init.send_cq) || !ok_cq(init.recv_cq) {
                return Err(SimError::NoSuchObject);
            }
            if let Some(s) = init.srq {
                if !matches!(d.srqs.get(s as usize), Some(Some(_))) {
                    return Err(SimError::NoSuchObject);
                }
            }
            if init.pd.0 == 0 || init.pd.0 >= d.next_pd {
                return Err(SimError::NoSuchObject);
            }
        }
        Ok(has_rq)
    }

    /// Creates a QP in RESET, allocating its rings and doorbell record.
    pub fn create_qp(&self, init: &QpInit) -> Result<QpHandle, SimError> {
        let has_rq = self.check_qp_init(init)?;
        let sq_ring = if init.sq_wqebbs > 0 {
            Some(self.alloc(init.sq_wqebbs as usize * 64)?)
        } else {
            None
        };
        let rq_ring = if has_rq {
            Some(self.alloc((init.rq_wqes as usize) << init.rq_wqe_shift)?)
        } else {
            None
        };
        let dbrec = self.alloc(8)?;
        let qpn = self.create_qp_at(
            init,
            sq_ring.map(|b| b.iova),
            rq_ring.map(|b| b.iova),
            dbrec.iova,
        )?;
        Ok(QpHandle {
            qpn,
            sq_ring,
            rq_ring,
            dbrec,
            uar: self.uar(),
        })
    }

    /// Creates a QP in RESET over host-provided memory named by device
    /// addresses (as CREATE_QP names its pages and `dbr_addr`): the SQ ring
    /// (`sq_wqebbs` × 64 bytes), the RQ ring (`rq_wqes << rq_wqe_shift`
    /// bytes, unless the QP uses an SRQ) and the 8-byte doorbell record.
    /// Each range is resolved through the DMA table; a bad one is refused
    /// with [`SimError::BadAddress`] and never touched.
    pub fn create_qp_at(
        &self,
        init: &QpInit,
        sq_ring_iova: Option<u64>,
        rq_ring_iova: Option<u64>,
        dbrec_iova: u64,
    ) -> Result<u32, SimError> {
        self.qp_at(None, init, sq_ring_iova, rq_ring_iova, dbrec_iova)
    }

    /// [`create_qp_at`](Self::create_qp_at) under the QP number `qpn`
    /// chosen by the caller (CREATE_QP's firmware); it must be free and at
    /// least [`QPN_BASE`].
    pub fn create_qp_as(
        &self,
        qpn: u32,
        init: &QpInit,
        sq_ring_iova: Option<u64>,
        rq_ring_iova: Option<u64>,
        dbrec_iova: u64,
    ) -> Result<(), SimError> {
        let qi = qpn
            .checked_sub(QPN_BASE)
            .ok_or(SimError::NumberUnavailable)?;
        self.qp_at(Some(qi), init, sq_ring_iova, rq_ring_iova, dbrec_iova)
            .map(|_| ())
    }

    /// Removes QP `qpn` (DESTROY_QP): it leaves the QP-context cache, and
    /// packets or timers still naming it are dropped on arrival.
    pub fn destroy_qp(&self, qpn: u32) {
        let Some(qi) = qpn.checked_sub(QPN_BASE) else {
            return;
        };
        let mut w = self.w.borrow_mut();
        // A held-aside timer naming this slot goes to the heap first, where
        // it meets whatever QP holds the slot when it is due.
        w.flush_deferred();
        let d = &mut w.devs[self.id as usize];
        d.qpc_forget(qi);
        if let Some(slot) = d.qps.get_mut(qi as usize) {
            *slot = None;
        }
    }

    fn qp_at(
        &self,
        qi: Option<u32>,
        init: &QpInit,
        sq_ring_iova: Option<u64>,
        rq_ring_iova: Option<u64>,
        dbrec_iova: u64,
    ) -> Result<u32, SimError> {
        let has_rq = self.check_qp_init(init)?;
        let sqp = match (init.sq_wqebbs, sq_ring_iova) {
            (0, _) => std::ptr::null_mut(),
            (n, Some(a)) => self.translate_iova(a, n as usize * 64)?,
            (_, None) => return Err(SimError::BadAddress),
        };
        let rqp = match (has_rq, rq_ring_iova) {
            (false, _) => std::ptr::null_mut(),
            (true, Some(a)) => {
                self.translate_iova(a, (init.rq_wqes as usize) << init.rq_wqe_shift)?
            }
            (true, None) => return Err(SimError::BadAddress),
        };
        let dp = self.translate_iova(dbrec_iova, 8)?;
        let mut w = self.w.borrow_mut();
        let d = &mut w.devs[self.id as usize];
        let qi = match qi {
            Some(i) => {
                if matches!(d.qps.get(i as usize), Some(Some(_))) || i as usize > MAX_PLACED_INDEX {
                    return Err(SimError::NumberUnavailable);
                }
                i
            }
            None => d.qps.len() as u32,
        };
        let qpn = QPN_BASE + qi;
        let attr = QpAttr::default();
        let qp = Qp {
            qpn,
            uidx: init.uidx,
            ty: init.qp_type,
            state: QpState::Reset,
            pd: init.pd.0,
            sq_ring: sqp,
            sq_nbb: init.sq_wqebbs,
            sq_fetched: 0,
            bf_index: None,
            sq_blocked: false,
            rq_ring: rqp,
            rq_nwqe: if has_rq { init.rq_wqes } else { 0 },
            rq_shift: init.rq_wqe_shift,
            rq_consumed: 0,
            srq: init.srq.map(|s| s as usize),
            dbrec: dp,
            scq: init.send_cq as usize,
            rcq: init.recv_cq as usize,
            attr,
            next_psn: 0,
            pend: VecDeque::new(),
            retry_left: attr.retry_cnt,
            rnr_left: attr.rnr_retry,
            timer_gen: 0,
            rnr_wait: false,
            epsn: 0,
            nak_sent: false,
            resp_cache: RespCache::default(),
            last_rx_ns: 0,
            counters: Counters::default(),
            lru_prev: None,
            lru_next: None,
            in_qpc: false,
        };
        place(&mut d.qps, Some(qi as usize), qp, |_| true)?;
        Ok(qpn)
    }

    /// Modifies a QP: checks the transition (core `check_transition`),
    /// applies the masked attributes and the state's side effects (RESET
    /// clears the context; ERR flushes; RTS starts the send queue).
    pub fn modify_qp(&self, qpn: u32, attr: &QpAttr, mask: QpAttrMask) -> Result<(), SimError> {
        let mut w = self.w.borrow_mut();
        let d = self.id;
        let qi = qpn.checked_sub(QPN_BASE).ok_or(SimError::NoSuchObject)?;
        let q = w.qp(d, qi).ok_or(SimError::NoSuchObject)?;
        let from = q.state;
        let to = attr.qp_state;
        check_transition(q.ty, from, to, mask).map_err(SimError::Transition)?;
        if mask.contains(QpAttrMask::CUR_STATE) && attr.cur_qp_state != from {
            return Err(SimError::CurStateMismatch);
        }
        let a = &mut q.attr;
        let m = |f: QpAttrMask| mask.contains(f);
        if m(QpAttrMask::ACCESS_FLAGS) {
            a.qp_access_flags = attr.qp_access_flags;
        }
        if m(QpAttrMask::PKEY_INDEX) {
            a.pkey_index = attr.pkey_index;
        }
        if m(QpAttrMask::PORT) {
            a.port_num = attr.port_num;
        }
        if m(QpAttrMask::QKEY) {
            a.qkey = attr.qkey;
        }
        if m(QpAttrMask::AV) {
            a.dlid = attr.dlid;
            a.grh = attr.grh;
        }
        if m(QpAttrMask::PATH_MTU) {
            a.path_mtu = attr.path_mtu;
        }
        if m(QpAttrMask::TIMEOUT) {
            a.timeout = attr.timeout;
        }
        if m(QpAttrMask::RETRY_CNT) {
            a.retry_cnt = attr.retry_cnt & 7;
        }
        if m(QpAttrMask::RNR_RETRY) {
            a.rnr_retry = attr.rnr_retry & 7;
        }
        if m(QpAttrMask::RQ_PSN) {
            a.rq_psn = attr.rq_psn & 0xff_ffff;
        }
        if m(QpAttrMask::SQ_PSN) {
            a.sq_psn = attr.sq_psn & 0xff_ffff;
        }
        if m(QpAttrMask::MAX_QP_RD_ATOMIC) {
            a.max_rd_atomic = attr.max_rd_atomic;
        }
        if m(QpAttrMask::MAX_DEST_RD_ATOMIC) {
            a.max_dest_rd_atomic = attr.max_dest_rd_atomic;
        }
        if m(QpAttrMask::MIN_RNR_TIMER) {
            a.min_rnr_timer = attr.min_rnr_timer & 31;
        }
        if m(QpAttrMask::DEST_QPN) {
            a.dest_qp_num = attr.dest_qp_num & 0xff_ffff;
        }
        match to {
            QpState::Reset => {
                q.state = QpState::Reset;
                q.sq_fetched = 0;
                q.rq_consumed = 0;
                q.sq_blocked = false;
                q.bf_index = None;
                q.pend.clear();
                q.timer_gen = (q.timer_gen | 1) + 1;
                q.rnr_wait = false;
                q.nak_sent = false;
                q.resp_cache = RespCache::default();
            }
            QpState::Err => {
                w.qp_to_error(d, qi);
                w.settle();
            }
            QpState::Rtr => {
                if from == QpState::Init {
                    q.epsn = q.attr.rq_psn;
                }
                q.state = to;
            }
            QpState::Rts => {
                if from == QpState::Rtr {
                    q.next_psn = q.attr.sq_psn;
                }
                q.retry_left = q.attr.retry_cnt;
                q.rnr_left = q.attr.rnr_retry;
                q.state = to;
                // SQE → RTS resumes the send queue after the failed WQE.
                q.sq_blocked = false;
                // A doorbell rung before RTS is picked up now.
                w.process_sq(d, qi);
                w.settle();
                if w.auto_progress {
                    w.run_until_idle();
                }
            }
            _ => q.state = to,
        }
        Ok(())
    }

    /// Sets the user index CQEs of this QP carry (CQE version 1).
    pub fn set_uidx(&self, qpn: u32, uidx: u32) {
        let mut w = self.w.borrow_mut();
        if let Some(q) = qpn.checked_sub(QPN_BASE).and_then(|qi| w.qp(self.id, qi)) {
            q.uidx = uidx;
        }
    }

    /// The QP's current state.
    pub fn qp_state(&self, qpn: u32) -> Option<QpState> {
        let mut w = self.w.borrow_mut();
        let qi = qpn.checked_sub(QPN_BASE)?;
        w.qp(self.id, qi).map(|q| q.state)
    }

    /// The QP's attributes as the device holds them.
    pub fn qp_attr(&self, qpn: u32) -> Option<QpAttr> {
        let mut w = self.w.borrow_mut();
        let qi = qpn.checked_sub(QPN_BASE)?;
        w.qp(self.id, qi).map(|q| q.attr)
    }

    /// Takes the asynchronous events raised so far.
    pub fn take_events(&self) -> Vec<AsyncEvent> {
        std::mem::take(&mut self.w.borrow_mut().devs[self.id as usize].events)
    }

    /// Device-wide counters.
    pub fn counters(&self) -> Counters {
        self.w.borrow().devs[self.id as usize].counters
    }

    /// Counters of one QP.
    pub fn qp_counters(&self, qpn: u32) -> Option<Counters> {
        let mut w = self.w.borrow_mut();
        let qi = qpn.checked_sub(QPN_BASE)?;
        w.qp(self.id, qi).map(|q| q.counters)
    }

    /// Virtual time the QP's responder last placed data.
    pub fn qp_last_rx_ns(&self, qpn: u32) -> u64 {
        let mut w = self.w.borrow_mut();
        qpn.checked_sub(QPN_BASE)
            .and_then(|qi| w.qp(self.id, qi).map(|q| q.last_rx_ns))
            .unwrap_or(0)
    }
}

/// A UAR page of a simulated device. Doorbell writes at `0x800 + …` make
/// the device fetch and execute SQ WQEs; BlueFlame chunks are collected and
/// delivered on [`Uar::flush`]; an 8-byte write at 0x20 arms a CQ.
pub struct SimUar {
    w: Rc<RefCell<World>>,
    dev: u16,
    bf: Vec<u8>,
}

impl SimUar {
    fn doorbell(&mut self, first8: [u8; 8], bf_chunks: u32) {
        let word0 = u32::from_be_bytes([first8[0], first8[1], first8[2], first8[3]]);
        let qpn = u32::from_be_bytes([first8[4], first8[5], first8[6], first8[7]]) >> 8;
        let wqe_index = (word0 >> 8) as u16;
        // A doorbell rung from inside device processing cannot happen (the
        // device never calls back into the host); if the world is busy the
        // write is dropped rather than panicking.
        if let Ok(mut w) = self.w.try_borrow_mut() {
            w.sq_doorbell(self.dev, qpn, wqe_index, bf_chunks);
        }
    }
}

// SAFETY: every store is delivered to the simulated device in program
// order with its full width; nothing is written to host memory.
unsafe impl Uar for SimUar {
    fn write64(&mut self, offset: usize, bytes: [u8; 8]) {
        if offset == CQ_DOORBELL {
            let v = u64::from_be_bytes(bytes);
            let cqn = (v & 0xff_ffff) as usize;
            let cmd = (v >> 32) as u32;
            if let Ok(mut w) = self.w.try_borrow_mut() {
                if let Some(Some(cq)) = w.devs[self.dev as usize].cqs.get_mut(cqn) {
                    cq.armed = Some(cmd & (1 << 24) != 0);
                }
            }
        } else if offset >= BF_OFFSET {
            self.doorbell(bytes, 0);
        }
    }
    fn write32(&mut self, _offset: usize, _bytes: [u8; 4]) {}
    fn write_bf(&mut self, offset: usize, chunk: &[u8; 64]) {
        if offset >= BF_OFFSET && (offset - BF_OFFSET).is_multiple_of(256) {
            self.bf.clear();
        }
        if self.bf.len() < 1024 {
            self.bf.extend_from_slice(chunk);
        }
    }
    fn flush(&mut self) {
        if self.bf.len() >= 64 {
            let mut first = [0u8; 8];
            first.copy_from_slice(&self.bf[..8]);
            let chunks = (self.bf.len() / 64) as u32;
            self.bf.clear();
            self.doorbell(first, chunks);
        }
    }
}
