//! `bareverbs perf post-recv`: posts receive WRs into a memory-backed
//! receive queue (RQ) or shared receive queue (SRQ) — data segments,
//! barrier, doorbell record once per batch — and reports the CPU cost per
//! WR. Completions are retired the way a poller would (oldest first:
//! [`RecvQueue::retire`] with the tail's counter, or
//! [`SharedReceiveQueue::retire`] with the slot, which returns it to the
//! free list), in bulk whenever half the queue is outstanding, so the ring
//! never fills.

use super::steps::timed_steps;
use crate::args::usage_error;
use bareverbs::platform::DmaAllocator;
use bareverbs::rq::{
    RecvError, RecvQueue, RecvWr, RqConfig, RqSlot, SharedReceiveQueue, SrqConfig, SrqSlot,
};
use bareverbs::sq::Sge;
use bareverbs_sim::dma::HeapDma;

/// Ring size of the benchmark queue, in receive WQEs (RQ) or slots (SRQ).
pub const RING_WQES: usize = 4096;

/// Which receive queue is posted to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
pub enum RecvQueueKind {
    /// A QP's own receive queue.
    Rq,
    /// A shared receive queue (free-list slots).
    Srq,
}

/// Parameters of a receive-post benchmark.
#[derive(Clone, Copy, Debug, clap::Args, serde::Serialize)]
pub struct RecvArgs {
    /// Queue posted to.
    #[arg(long, value_enum, default_value = "rq")]
    pub queue: RecvQueueKind,
    /// SGEs per WR.
    #[arg(long, default_value_t = 1)]
    pub sge: u32,
    /// WRs per doorbell-record update.
    #[arg(long, default_value_t = 16)]
    pub batch: u32,
    /// WRs to post in total.
    #[arg(long, default_value_t = 1_000_000)]
    pub iters: u64,
}

/// Result of a receive-post benchmark.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct RecvStats {
    /// Wall-clock nanoseconds per posted WR.
    pub ns_per_op: f64,
    /// WRs posted.
    pub ops: u64,
    /// Data segments per WQE (`max_gs`).
    pub max_gs: u32,
    /// Doorbell-record updates (post calls that posted at least one WR).
    pub doorbells: u64,
}

#[derive(Debug)]
enum Queue {
    Rq(Box<RecvQueue<[RqSlot; RING_WQES]>>),
    Srq(Box<SharedReceiveQueue<[SrqSlot; RING_WQES]>>),
}

/// A ready-to-post receive queue plus the memory it uses.
pub struct RecvBench {
    _dma: HeapDma,
    q: Queue,
    wrs: Vec<RecvWr<'static>>,
    args: RecvArgs,
    /// WRs posted so far.
    posted: u64,
    /// WRs retired so far (the oldest outstanding is `retired`).
    retired: u64,
    /// Retires the queue refused (must stay 0).
    rejected: u64,
    /// WRs that may be outstanding.
    capacity: u64,
    doorbells: u64,
    max_gs: u32,
}

/// The arguments, the queue's host-side state and the counters (never
/// the ring or the doorbell record).
impl std::fmt::Debug for RecvBench {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecvBench")
            .field("args", &self.args)
            .field("q", &self.q)
            .field("wrs", &self.wrs.len())
            .field("posted", &self.posted)
            .field("retired", &self.retired)
            .field("rejected", &self.rejected)
            .field("capacity", &self.capacity)
            .field("doorbells", &self.doorbells)
            .field("max_gs", &self.max_gs)
            .finish_non_exhaustive()
    }
}

impl RecvBench {
    /// Builds the queue for `args`. The geometry is the provider's for
    /// `sge` scatter entries: RQ stride `rup2(16·sge)`, SRQ WQE
    /// `rup2(16 + 16·sge)` (≥ 32), `max_gs` what the stride holds.
    pub fn new(args: RecvArgs) -> anyhow::Result<Self> {
        if !(1..=RING_WQES as u32 / 2).contains(&args.batch) {
            return Err(usage_error(format!(
                "--batch must be 1..={}",
                RING_WQES / 2
            )));
        }
        crate::device_arg::check_bench_sge(args.sge)?;
        let dma = HeapDma::new();
        let dbrec = dma.alloc(64, 64).ok_or_else(|| anyhow::anyhow!("dma"))?;
        let (q, capacity, max_gs) = match args.queue {
            RecvQueueKind::Rq => {
                let wqe = (16 * args.sge).next_power_of_two();
                let cfg = RqConfig {
                    wqe_shift: wqe.trailing_zeros(),
                    max_gs: wqe / 16,
                    max_post: RING_WQES as u32,
                };
                let ring = dma
                    .alloc(RING_WQES * wqe as usize, 4096)
                    .ok_or_else(|| anyhow::anyhow!("dma"))?;
                // SAFETY: ring and dbrec are fresh allocations owned by
                // `dma`, which lives in the returned struct alongside the
                // queue and is touched by nothing else.
                let mut rq =
                    unsafe { RecvQueue::new(ring, dbrec, cfg, [RqSlot::default(); RING_WQES]) }
                        .ok_or_else(|| anyhow::anyhow!("bad RQ geometry"))?;
                rq.enable();
                (Queue::Rq(Box::new(rq)), cfg.max_post as u64, cfg.max_gs)
            }
            RecvQueueKind::Srq => {
                let wqe = (16 + 16 * args.sge).next_power_of_two().max(32);
                let cfg = SrqConfig {
                    wqe_shift: wqe.trailing_zeros(),
                    max_gs: (wqe - 16) / 16,
                    nwqes: RING_WQES as u32,
                    wait_queue: false,
                };
                let ring = dma
                    .alloc(RING_WQES * wqe as usize, 4096)
                    .ok_or_else(|| anyhow::anyhow!("dma"))?;
                // SAFETY: as for the RQ above.
                let srq = unsafe {
                    SharedReceiveQueue::new(ring, dbrec, cfg, [SrqSlot::default(); RING_WQES])
                }
                .ok_or_else(|| anyhow::anyhow!("bad SRQ geometry"))?;
                // The free list's tail slot is never handed out.
                (Queue::Srq(Box::new(srq)), RING_WQES as u64 - 1, cfg.max_gs)
            }
        };
        let sgl: Vec<Sge> = (0..args.sge)
            .map(|i| Sge {
                addr: 0x1000_0000 + i as u64 * 4096,
                length: 4096,
                lkey: 0x42,
            })
            .collect();
        // The SGE list lives as long as the process (a benchmark fixture).
        let sgl: &'static [Sge] = Box::leak(sgl.into_boxed_slice());
        let wrs = vec![RecvWr { wr_id: 0, sgl }; args.batch as usize];
        Ok(RecvBench {
            _dma: dma,
            q,
            wrs,
            args,
            posted: 0,
            retired: 0,
            rejected: 0,
            capacity,
            doorbells: 0,
            max_gs,
        })
    }

    /// Retires every outstanding WR, oldest first, as a poller draining
    /// the CQ would. Kept out of line so instruction counters
    /// (`valgrind --tool=callgrind --toggle-collect='*RecvBench*post*'`)
    /// can leave it out.
    #[inline(never)]
    fn retire_all(&mut self) {
        match &mut self.q {
            Queue::Rq(rq) => {
                while self.retired < self.posted {
                    // The responder CQE's wqe_counter of the oldest WR.
                    // SAFETY: memory-backed ring that no device executes.
                    if unsafe { rq.retire(self.retired as u16) }.is_err() {
                        self.rejected += 1;
                    }
                    self.retired += 1;
                }
            }
            Queue::Srq(srq) => {
                while self.retired < self.posted {
                    // Retiring in order from a fresh SRQ relinks the free
                    // list in ring order, so the k-th WR sits in slot
                    // k mod RING_WQES.
                    let slot = (self.retired % RING_WQES as u64) as u16;
                    // SAFETY: memory-backed ring that no device executes.
                    if unsafe { srq.retire(slot) }.is_err() {
                        self.rejected += 1;
                    }
                    self.retired += 1;
                }
            }
        }
    }

    /// Posts one batch (one doorbell-record update); returns WRs posted.
    /// Kept out of line so instruction counters can isolate it.
    /// Each queue kind's post call is a function of its own ([`rq_call`],
    /// [`srq_call`]: named so that the toggle pattern, which they must not
    /// match, still counts them inside this one), so one's code does not
    /// change the other's.
    #[inline(never)]
    fn post(&mut self) -> usize {
        let n = self.wrs.len();
        let r = match &mut self.q {
            Queue::Rq(rq) => rq_call(rq, &self.wrs),
            Queue::Srq(srq) => srq_call(srq, &self.wrs),
        };
        match r {
            Ok(()) => n,
            Err(e) => e.index,
        }
    }

    /// Posts one batch and retires completions as a poller would; returns
    /// WRs posted.
    #[inline(never)]
    pub fn step(&mut self) -> u32 {
        let base = self.posted;
        for (k, wr) in self.wrs.iter_mut().enumerate() {
            wr.wr_id = base + k as u64;
        }
        let posted = self.post();
        self.doorbells += u64::from(posted > 0);
        self.posted += posted as u64;
        if posted < self.wrs.len() || (self.posted - self.retired) * 2 >= self.capacity {
            self.retire_all();
        }
        posted as u32
    }

    /// Runs `iters` WRs and reports.
    pub fn run(&mut self) -> anyhow::Result<RecvStats> {
        let (done, el) = timed_steps(self.args.iters, || self.step() as u64)
            .ok_or_else(|| anyhow::anyhow!("posting makes no progress"))?;
        anyhow::ensure!(
            self.rejected == 0,
            "{} retires refused: the benchmark lost track of the oldest WR",
            self.rejected
        );
        Ok(RecvStats {
            ns_per_op: el.as_nanos() as f64 / done as f64,
            ops: done,
            max_gs: self.max_gs,
            doorbells: self.doorbells,
        })
    }
}

/// One RQ post call (out of line, see [`RecvBench::post`]).
#[inline(never)]
fn rq_call(rq: &mut RecvQueue<[RqSlot; RING_WQES]>, wrs: &[RecvWr<'_>]) -> Result<(), RecvError> {
    // SAFETY: the SGEs name fake device addresses that the memory-backed
    // ring never hands to a device.
    unsafe { rq.post_recv_raw(wrs) }
}

/// One SRQ post call (out of line, see [`RecvBench::post`]).
#[inline(never)]
fn srq_call(
    srq: &mut SharedReceiveQueue<[SrqSlot; RING_WQES]>,
    wrs: &[RecvWr<'_>],
) -> Result<(), RecvError> {
    // SAFETY: as in `rq_call`.
    unsafe { srq.post_recv_raw(wrs) }
}
