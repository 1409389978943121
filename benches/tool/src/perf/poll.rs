//! `bareverbs perf poll`: CPU cost of polling CQEs from a memory-backed
//! completion queue, with `wr_id` recovery through a send queue
//! (`QueuePair` as the resolver) and one doorbell-record update per poll.
//! By default the lean path ([`CompletionQueue::poll_completions`] into
//! [`Completion`]s, timed in [`poll_once`]); `--full` measures the full
//! [`WorkCompletion`] path ([`CompletionQueue::poll`], in
//! [`poll_once_full`]); `--each` the callback form
//! ([`CompletionQueue::poll_each`], in [`poll_once_each`]: the consumer
//! reads each completion's `wr_id` and status, no output array). All are
//! out of line and named `poll_once*`, so
//! `valgrind --tool=callgrind --toggle-collect='*poll_once*'` isolates them.
//!
//! A fake device refills the ring between laps with requester CQEs whose
//! owner bit matches the next pass; only the `poll` calls are timed.

use bareverbs::cq::CompletionQueue;
use bareverbs::cqe::{Completion, Cqe64, CqeSize, WorkCompletion};
use bareverbs::platform::{DmaAllocator, DmaBuf, MemUar};
use bareverbs::qp::QpType;
use bareverbs::queue_pair::QueuePair;
use bareverbs::rq::RqSlot;
use bareverbs::sq::{SendOp, SendQueue, SendWr, Sge, SqConfig, SqSlot};
use bareverbs::wqe::Opcode;
use bareverbs_sim::dma::HeapDma;
use std::time::{Duration, Instant};

/// CQ entries of the benchmark queue.
pub const CQ_ENTRIES: usize = 4096;
const SQ_BBS: usize = 4096;

/// Parameters of a poll benchmark.
#[derive(Clone, Copy, Debug, clap::Args, serde::Serialize)]
pub struct PollArgs {
    /// CQEs requested per poll call.
    #[arg(long, default_value_t = 16)]
    pub batch: u32,
    /// CQEs to poll in total.
    #[arg(long, default_value_t = 1_000_000)]
    pub iters: u64,
    /// Measure the full `WorkCompletion` path (`poll`) instead of the lean
    /// `Completion` path (`poll_completions`).
    #[arg(long, conflicts_with = "each")]
    pub full: bool,
    /// Measure the callback form (`poll_each`, the consumer reading each
    /// completion's `wr_id` and status) instead of `poll_completions`.
    #[arg(long)]
    pub each: bool,
}

/// Result of a poll benchmark.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct PollStats {
    /// Nanoseconds per polled CQE (poll calls only).
    pub ns_per_op: f64,
    /// CQEs polled.
    pub ops: u64,
}

/// A CQ, a QP resolving its completions, and the fake device's state.
pub struct PollBench {
    _dma: HeapDma,
    cq: Box<CompletionQueue<CQ_ENTRIES>>,
    qp: Box<BenchQp>,
    ring: DmaBuf,
    produced: u64,
    args: PollArgs,
    /// What the `--each` consumer accumulated (kept so it is not dead).
    sink: EachSink,
}

/// The arguments, the queues' host-side state and the counters (never
/// the CQE ring or the doorbell records).
impl std::fmt::Debug for PollBench {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PollBench")
            .field("args", &self.args)
            .field("cq", &self.cq)
            .field("qp", &self.qp)
            .field("ring", &self.ring)
            .field("produced", &self.produced)
            .field("sink", &self.sink)
            .finish_non_exhaustive()
    }
}

impl PollBench {
    /// Builds the queues.
    pub fn new(args: PollArgs) -> anyhow::Result<Self> {
        anyhow::ensure!((1..=4096).contains(&args.batch), "--batch must be 1..=4096");
        let dma = HeapDma::new();
        let ring = dma
            .alloc(CQ_ENTRIES * 64, 4096)
            .ok_or_else(|| anyhow::anyhow!("dma"))?;
        let cq_db = dma.alloc(64, 64).ok_or_else(|| anyhow::anyhow!("dma"))?;
        let sq_ring = dma
            .alloc(SQ_BBS * 64, 4096)
            .ok_or_else(|| anyhow::anyhow!("dma"))?;
        let sq_db = dma.alloc(64, 64).ok_or_else(|| anyhow::anyhow!("dma"))?;
        // SAFETY: fresh allocations owned by `dma`, which lives in the
        // returned struct alongside the queues.
        let mut cq = unsafe { CompletionQueue::new(ring, cq_db, 1, CqeSize::B64, 1) }
            .map_err(|e| anyhow::anyhow!("{e:?}"))?;
        cq.init_ring();
        let cfg = SqConfig::new(QpType::Rc, SQ_BBS as u32, 1)
            .qpn(0x1234)
            .sig_all(true);
        // SAFETY: as above.
        let sq = unsafe {
            SendQueue::new(
                sq_ring,
                sq_db,
                MemUar::default(),
                cfg,
                [SqSlot::default(); SQ_BBS],
            )
        }
        .ok_or_else(|| anyhow::anyhow!("bad geometry"))?;
        let mut qp = QueuePair {
            qpn: 0x1234,
            uidx: 5,
            cqe_version: 1,
            sq,
            rq: None,
        };
        qp.sq.enable();
        Ok(PollBench {
            _dma: dma,
            cq: Box::new(cq),
            qp: Box::new(qp),
            ring,
            produced: 0,
            args,
            sink: EachSink::default(),
        })
    }

    /// The fake device writes one lap of requester CQEs, each completing
    /// one WR posted here first (completions are checked against the WRs
    /// in flight, so a CQE must name a posted WQE).
    fn refill(&mut self) {
        let sgl = [Sge {
            addr: 0x1000,
            length: 64,
            lkey: 1,
        }];
        for k in 0..CQ_ENTRIES as u64 {
            let wr = SendWr::new(self.produced + k, SendOp::Send, &sgl);
            // SAFETY: memory-backed ring that no device executes; the SGE
            // is never dereferenced (not inline). One 1-WQEBB WQE per CQE
            // below, so WQE counter == CQE counter.
            let _ = unsafe { self.qp.sq.post_send_raw(&[wr]) };
        }
        for k in 0..CQ_ENTRIES as u64 {
            let pi = self.produced + k;
            let mut c = Cqe64::ZERO;
            c.set_srqn_uidx(5);
            c.set_send_wqe_opcode_qpn(Opcode::RdmaWrite.bits(), 0x1234);
            c.set_wqe_counter(pi as u16);
            c.set_byte_cnt(64);
            c.set_op_own_parts(0, 0, false, ((pi / CQ_ENTRIES as u64) & 1) as u8);
            let slot = (pi as usize % CQ_ENTRIES) * 64;
            // SAFETY: 64 bytes inside the CQ ring owned by `_dma`; the
            // poller is not running while the "device" writes.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    c.as_bytes().as_ptr(),
                    self.ring.cpu.as_ptr().add(slot),
                    64,
                )
            };
        }
        self.produced += CQ_ENTRIES as u64;
    }

    /// Runs the benchmark.
    pub fn run(&mut self) -> PollStats {
        if self.args.full {
            let mut wcs = vec![WorkCompletion::default(); self.args.batch as usize];
            self.run_with(|cq, qp, want| poll_once_full(cq, qp, &mut wcs[..want]))
        } else if self.args.each {
            let mut sink = self.sink;
            let stats = self.run_with(|cq, qp, want| poll_once_each(cq, qp, want, &mut sink));
            self.sink = sink;
            stats
        } else {
            let mut cs = vec![Completion::default(); self.args.batch as usize];
            self.run_with(|cq, qp, want| poll_once(cq, qp, &mut cs[..want]))
        }
    }

    /// One lap for criterion: the fake device refills the ring, then the
    /// whole lap is polled `batch` CQEs per call under one clock reading
    /// (no per-call timer cost). Returns the time and the CQEs polled.
    pub fn timed_lap(&mut self) -> (Duration, u64) {
        self.refill();
        let batch = self.args.batch as usize;
        let mut done = 0usize;
        let t = Instant::now();
        if self.args.full {
            let mut wcs = [WorkCompletion::default(); 64];
            while done < CQ_ENTRIES {
                let want = batch.min(CQ_ENTRIES - done).min(64);
                let n = poll_once_full(&mut self.cq, &mut self.qp, &mut wcs[..want]);
                if n == 0 {
                    break;
                }
                done += n;
            }
        } else if self.args.each {
            while done < CQ_ENTRIES {
                let want = batch.min(CQ_ENTRIES - done).min(64);
                let n = poll_once_each(&mut self.cq, &mut self.qp, want, &mut self.sink);
                if n == 0 {
                    break;
                }
                done += n;
            }
        } else {
            let mut cs = [Completion::default(); 64];
            while done < CQ_ENTRIES {
                let want = batch.min(CQ_ENTRIES - done).min(64);
                let n = poll_once(&mut self.cq, &mut self.qp, &mut cs[..want]);
                if n == 0 {
                    break;
                }
                done += n;
            }
        }
        (t.elapsed(), done as u64)
    }

    /// The benchmark loop around `poll` (called with the queues and the
    /// number of CQEs to ask for; returns the number polled).
    fn run_with(
        &mut self,
        mut poll: impl FnMut(&mut CompletionQueue<CQ_ENTRIES>, &mut BenchQp, usize) -> usize,
    ) -> PollStats {
        let mut done = 0u64;
        let mut timed = Duration::ZERO;
        while done < self.args.iters {
            self.refill();
            let mut lap = 0usize;
            while lap < CQ_ENTRIES && done < self.args.iters {
                let want = (self.args.batch as usize).min(CQ_ENTRIES - lap);
                let t = Instant::now();
                let n = poll(&mut self.cq, &mut self.qp, want);
                timed += t.elapsed();
                if n == 0 {
                    break;
                }
                lap += n;
                done += n as u64;
            }
        }
        PollStats {
            ns_per_op: timed.as_nanos() as f64 / done as f64,
            ops: done,
        }
    }
}

/// The resolver of the benchmark: one RC QP with a 4096-WQEBB send queue.
pub type BenchQp = QueuePair<MemUar, [SqSlot; SQ_BBS], [RqSlot; 1]>;

/// One lean poll call (kept out of line so instruction counters can
/// isolate it).
#[inline(never)]
pub fn poll_once(
    cq: &mut CompletionQueue<CQ_ENTRIES>,
    qp: &mut BenchQp,
    out: &mut [Completion],
) -> usize {
    cq.poll_completions(qp, out).unwrap_or(0)
}

/// What the [`poll_once_each`] consumer keeps of the completions: the sum
/// of the successful ones' `wr_id`s and the count of the others.
#[derive(Clone, Copy, Debug, Default)]
pub struct EachSink {
    /// Sum of successful completions' `wr_id`s.
    pub wr_id_sum: u64,
    /// Completions with an error status.
    pub errors: u64,
}

/// One callback-form poll call (`poll_each`; the consumer reads `wr_id`
/// and status; out of line like [`poll_once`]).
#[inline(never)]
pub fn poll_once_each(
    cq: &mut CompletionQueue<CQ_ENTRIES>,
    qp: &mut BenchQp,
    max: usize,
    sink: &mut EachSink,
) -> usize {
    // Kept in locals while polling, as a consumer would.
    let (mut sum, mut errors) = (sink.wr_id_sum, sink.errors);
    let n = cq
        .poll_each(qp, max, |c| {
            if c.is_success() {
                sum = sum.wrapping_add(c.wr_id());
            } else {
                errors += 1;
            }
        })
        .unwrap_or(0);
    *sink = EachSink {
        wr_id_sum: sum,
        errors,
    };
    n
}

/// One full poll call (`WorkCompletion`s; out of line like [`poll_once`]).
#[inline(never)]
pub fn poll_once_full(
    cq: &mut CompletionQueue<CQ_ENTRIES>,
    qp: &mut BenchQp,
    out: &mut [WorkCompletion],
) -> usize {
    cq.poll(qp, out).unwrap_or(0)
}
