//! The simulated world: devices, the fabric between their ports, the
//! deterministic event queue on virtual time, the fault plan, and the CQE
//! writer. Transport logic lives in [`crate::transport`].
//!
//! | file | what |
//! |---|---|
//! | `mod.rs` | `World`, its construction, parameters, fault plan and error settling |
//! | [`vendor`] | vendor syndromes of error CQEs |
//! | `trace.rs` | [`TraceEvent`], [`TraceKind`], trace recording |
//! | `events.rs` | the event queue and the event loop |
//! | `dev.rs` | one device's state and its QP-context cache |
//! | `fingerprint.rs` | the state fingerprint |
//! | `cqe_writer.rs` | writing a CQE into a CQ ring |
//! | `wired.rs` | the world on the UDP wire: wired LIDs, the wall clock, packets out as datagrams, arrivals checked as a RoCE port checks them |

mod cqe_writer;
mod dev;
mod events;
mod fingerprint;
mod trace;
pub mod vendor;
mod wired;

use crate::cost::{Counters, FastCosts, LenCosts, ModelParams};
use crate::fault::FaultPlan;
use crate::rng::Rng;
use crate::wire::Req;
use bareverbs::qp::QpState;
use std::collections::BinaryHeap;
use std::rc::Rc;

pub(crate) use dev::Dev;
pub(crate) use events::Event;
use events::{Deferred, Timed};
pub use trace::{TraceEvent, TraceKind};

/// Base of QP numbers on every device (qpn = base + table index).
pub const QPN_BASE: u32 = 0x100;

/// Disjoint borrows of a [`World`] for a fused path ([`World::fast_parts`]).
pub(crate) struct FastParts<'a> {
    pub params: &'a ModelParams,
    pub costs: &'a FastCosts,
    pub len_costs: &'a mut LenCosts,
    pub devs: &'a mut Vec<Dev>,
    pub trace: &'a mut Option<Vec<TraceEvent>>,
    pub now: &'a mut u64,
    pub horizon_ns: u64,
}

/// Applies `f` to the counters of device `d` and of its QP `qi`.
#[inline]
pub(crate) fn cnt2(w: &mut World, d: u16, qi: u32, f: impl Fn(&mut Counters, &ModelParams)) {
    let p = &w.params;
    let dev = &mut w.devs[d as usize];
    f(&mut dev.counters, p);
    if let Some(Some(q)) = dev.qps.get_mut(qi as usize) {
        f(&mut q.counters, p);
    }
}

/// The whole simulation.
pub(crate) struct World {
    pub now: u64,
    pub devs: Vec<Dev>,
    heap: BinaryHeap<Timed>,
    /// An event that is due no later than every heap entry (key, event).
    front: Option<(u64, u64, Event)>,
    deferred: Option<Deferred>,
    slab: Vec<Option<Event>>,
    free: Vec<u32>,
    seq: u64,
    /// The fault plan; written only through [`Self::set_faults`], which
    /// keeps `faults_clean` in step.
    faults: FaultPlan,
    /// `faults.is_clean()`.
    faults_clean: bool,
    pub rng: Rng,
    /// Cost-model parameters; written only through [`Self::set_params`],
    /// which keeps `costs` in step.
    params: ModelParams,
    /// The parameter-only terms of `params`.
    costs: FastCosts,
    /// The payload-length terms of the last fused WRITE under `params`.
    len_costs: LenCosts,
    pub auto_progress: bool,
    pub horizon_ns: u64,
    /// Most WQEs one pass over a work queue fetches or flushes:
    /// [`Fabric::set_pass_limit`].
    ///
    /// [`Fabric::set_pass_limit`]: crate::device::Fabric::set_pass_limit
    pub pass_limit: u32,
    pub trace: Option<Vec<TraceEvent>>,
    /// QPs to move to ERR once the current step finishes.
    pub to_error: Vec<(u16, u32)>,
    /// Some QP may be in ERR (receive posts there must be flushed).
    pub any_error: bool,
    /// Scratch buffer for WQE copies.
    pub scratch: Vec<u8>,
    /// Recycled payload buffers.
    pub buf_pool: Vec<Vec<u8>>,
    /// Recycled request cells (no other holder; payload moved out).
    pub req_pool: Vec<Rc<Req>>,
    /// Fused fast paths enabled ([`crate::Fabric::set_fast_paths`]).
    pub fast_paths: bool,
    /// Operations the fast paths executed.
    pub fast_runs: u64,
    /// The UDP wire, once a device of this fabric is wired
    /// ([`crate::Fabric::join_wire`]); the clock then follows wall time.
    pub(crate) wire: Option<Box<crate::udp_wire::Wire>>,
}

/// Default pass limit ([`Fabric::set_pass_limit`](crate::Fabric::set_pass_limit)):
/// a whole 16-bit counter span, so any doorbell-record value is followed to
/// its end.
pub const PASS_LIMIT_DEFAULT: u32 = 0x1_0000;

impl World {
    pub fn new(seed: u64) -> Self {
        World {
            now: 0,
            devs: Vec::new(),
            heap: BinaryHeap::new(),
            front: None,
            deferred: None,
            slab: Vec::new(),
            free: Vec::new(),
            seq: 0,
            faults: FaultPlan::default(),
            faults_clean: true,
            rng: Rng::new(seed),
            params: ModelParams::default(),
            costs: FastCosts::new(&ModelParams::default()),
            len_costs: LenCosts::default(),
            auto_progress: true,
            horizon_ns: 1_000_000_000,
            pass_limit: PASS_LIMIT_DEFAULT,
            trace: None,
            to_error: Vec::new(),
            any_error: false,
            scratch: Vec::new(),
            buf_pool: Vec::new(),
            req_pool: Vec::new(),
            fast_paths: true,
            fast_runs: 0,
            wire: None,
        }
    }

    /// The cost-model parameters.
    #[inline]
    pub fn params(&self) -> &ModelParams {
        &self.params
    }

    /// Replaces the fault plan.
    pub fn set_faults(&mut self, f: FaultPlan) {
        self.faults_clean = f.is_clean();
        self.faults = f;
    }

    /// Replaces the cost-model parameters.
    pub fn set_params(&mut self, p: ModelParams) {
        self.params = p;
        self.costs = FastCosts::new(&p);
        self.len_costs = LenCosts::default();
    }

    /// The parameter-only cost terms.
    #[inline]
    pub(crate) fn costs(&self) -> &FastCosts {
        &self.costs
    }

    /// The world split for a fused path: the parameters and their terms
    /// beside the mutable devices, trace and clock.
    #[inline]
    pub(crate) fn fast_parts(&mut self) -> FastParts<'_> {
        FastParts {
            params: &self.params,
            costs: &self.costs,
            len_costs: &mut self.len_costs,
            devs: &mut self.devs,
            trace: &mut self.trace,
            now: &mut self.now,
            horizon_ns: self.horizon_ns,
        }
    }

    /// Whether work fetched now runs alone until the world is idle again:
    /// auto progress, no event of any kind queued or held aside, no fault
    /// plan, no QP queued for ERR, and no receive of a QP in ERR waiting
    /// to be flushed (the next run would flush it first). The fused paths of [`crate::transport`]
    /// require it.
    #[inline]
    pub(crate) fn fast_ok(&self) -> bool {
        self.fast_paths
            && self.auto_progress
            && self.front.is_none()
            && self.deferred.is_none()
            && self.heap.is_empty()
            && self.to_error.is_empty()
            && self.faults_clean
            && (!self.any_error || self.error_rqs_flushed())
    }

    /// Whether [`Self::scan_error_rqs`] would flush nothing now.
    fn error_rqs_flushed(&self) -> bool {
        self.devs.iter().all(|d| {
            d.qps
                .iter()
                .flatten()
                .all(|q| q.state != QpState::Err || World::rq_flushed(q))
        })
    }

    /// Moves every QP queued in `to_error` to ERR (flushing), repeatedly,
    /// since flushing may overrun another CQ.
    pub fn settle(&mut self) {
        while let Some((d, qi)) = self.to_error.pop() {
            self.qp_to_error(d, qi);
        }
    }

    /// Receive WQEs posted to a QP already in ERR are flushed when the
    /// device next looks (there is no receive doorbell register).
    pub fn scan_error_rqs(&mut self) {
        if !self.any_error {
            return;
        }
        let mut seen = false;
        for d in 0..self.devs.len() {
            for qi in 0..self.devs[d].qps.len() {
                let is_err = matches!(&self.devs[d].qps[qi], Some(q) if q.state == QpState::Err);
                if is_err {
                    seen = true;
                    self.flush_rq(d as u16, qi as u32);
                }
            }
        }
        self.settle();
        // Clear the flag once no QP is in ERR (reset or destroyed since);
        // any later move to ERR sets it again.
        self.any_error = seen
            || self
                .devs
                .iter()
                .any(|d| d.qps.iter().flatten().any(|q| q.state == QpState::Err));
    }
}
