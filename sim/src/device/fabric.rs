//! The handle to the whole simulation ([`Fabric`]): adding devices, the
//! fault plan and cost parameters, driving virtual time, fast paths,
//! fingerprints and the trace.

use super::{Device, SimError};
use crate::cost::{Counters, ModelParams};
use crate::dma::HeapDma;
use crate::fault::FaultPlan;
use crate::udp_wire::{Wire, WireSocket, WireStats};
use crate::world::{Dev, TraceEvent, World};
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

/// A handle to the whole simulation. Cloning shares it.
#[derive(Clone)]
pub struct Fabric {
    w: Rc<RefCell<World>>,
}

/// The virtual time and device count, when the world is not busy (never
/// the devices' memory).
impl std::fmt::Debug for Fabric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("Fabric");
        if let Ok(w) = self.w.try_borrow() {
            d.field("now", &w.now).field("devices", &w.devs.len());
        }
        d.finish_non_exhaustive()
    }
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
            roce_gids: Vec::new(),
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
    /// Virtual time (ns); on a wired fabric, wall-clock time.
    pub fn now_ns(&self) -> u64 {
        let mut w = self.w.borrow_mut();
        w.follow_wall_clock();
        w.now
    }
    /// Runs events until none is left (or the horizon). Also flushes
    /// receives posted to QPs in ERR. Returns the events processed. On a
    /// wired fabric: what arrived and every event due by now, without
    /// waiting for later ones.
    pub fn run_until_idle(&self) -> u64 {
        self.w.borrow_mut().run_until_idle()
    }
    /// Runs the events of the next `ns` nanoseconds and advances the
    /// clock. On a wired fabric this takes `ns` of wall time, taking in
    /// what arrives meanwhile.
    pub fn run_for(&self, ns: u64) -> u64 {
        if !self.is_wall_clock() {
            let mut w = self.w.borrow_mut();
            let t = w.now + ns;
            return w.run_until(t);
        }
        let end = self.now_ns().saturating_add(ns);
        let mut n = 0;
        loop {
            let busy = self.step();
            n += u64::from(busy);
            if self.now_ns() >= end {
                return n;
            }
            if !busy {
                std::thread::sleep(std::time::Duration::from_micros(20));
            }
        }
    }
    /// Processes the earliest pending event, whenever it is due. Returns
    /// false when the queue is empty. On a wired fabric: takes in what
    /// arrived, then processes the earliest event if it is due by now;
    /// false when nothing happened.
    pub fn step(&self) -> bool {
        let mut w = self.w.borrow_mut();
        if w.wire.is_none() {
            return w.step(u64::MAX);
        }
        w.follow_wall_clock();
        let got = w.wire_poll();
        let t = w.now;
        w.step(t) || got > 0
    }
    /// Advances the clock by `ns` of host CPU time (events that fall due
    /// are processed on the next step or run). A wired fabric's clock is
    /// the wall clock, which the CPU time has moved already: no change.
    pub fn spend(&self, ns: u64) {
        let mut w = self.w.borrow_mut();
        if w.wire.is_none() {
            w.now += ns;
        }
    }
    /// Wires `dev` (a device of this fabric) to other fabrics over UDP
    /// through `sock` ([`crate::udp_wire`]); from now on the fabric's
    /// clock follows the wall clock. The port's GID and MAC are the
    /// socket's ([`WireSocket::gid`], [`WireSocket::mac`]): program the GID
    /// table with them. A fabric has one wire: a second join is refused
    /// ([`SimError::NumberUnavailable`]).
    pub fn join_wire(&self, dev: &Device, sock: WireSocket) -> Result<(), SimError> {
        let mut w = self.w.borrow_mut();
        if w.wire.is_some() {
            return Err(SimError::NumberUnavailable);
        }
        let now = w.now;
        w.wire = Some(Box::new(Wire::new(sock, dev.id, now)));
        Ok(())
    }
    /// Whether the fabric is wired (its clock is the wall clock).
    pub fn is_wall_clock(&self) -> bool {
        self.w.borrow().wire.is_some()
    }
    /// What the wire did so far (`None`: not wired).
    pub fn wire_stats(&self) -> Option<WireStats> {
        self.w.borrow().wire.as_ref().map(|x| x.stats())
    }
    /// The wired address (`None`: not wired).
    pub fn wire_addr(&self) -> Option<std::net::SocketAddrV4> {
        self.w.borrow().wire.as_ref().map(|x| x.addr())
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
