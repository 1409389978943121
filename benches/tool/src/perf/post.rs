//! `bareverbs perf post`: posts WRs into a memory-backed send queue with
//! the full doorbell sequence (WQE stores, barrier, doorbell record, 8-byte
//! doorbell or BlueFlame copy into a UAR page in RAM) and reports the CPU
//! cost per WR. Completions are retired the way a poller would (one
//! signaled WR every `signal_every`), so the ring never fills.

use super::steps::timed_steps;
use crate::args::usage_error;
use bareverbs::platform::{DmaAllocator, MemUar, BF_OFFSET};
use bareverbs::qp::QpType;
use bareverbs::sq::{
    BlueFlame, PostError, RdmaOp, RdmaWr, SendFlags, SendOp, SendQueue, SendWr, Sge, SqConfig,
    SqSlot,
};
use bareverbs_sim::dma::HeapDma;

/// Ring size of the benchmark queue, in WQEBBs.
pub const RING_BBS: usize = 4096;

/// The operation posted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
pub enum PerfOpcode {
    /// RDMA WRITE.
    Write,
    /// SEND.
    Send,
    /// RDMA READ.
    Read,
}

/// Parameters of a post benchmark.
#[derive(Clone, Copy, Debug, clap::Args, serde::Serialize)]
pub struct PostArgs {
    /// Operation to post.
    #[arg(long, value_enum, default_value = "write")]
    pub opcode: PerfOpcode,
    /// SGEs per WR.
    #[arg(long, default_value_t = 1)]
    pub sge: u32,
    /// Post inline with this many payload bytes instead of SGEs (a size:
    /// decimal, `0x` hex, `K`/`M`/`G`).
    #[arg(long, value_parser = crate::args::byte_size_u32)]
    pub inline: Option<u32>,
    /// WRs per doorbell.
    #[arg(long, default_value_t = 16)]
    pub batch: u32,
    /// One signaled WR every this many.
    #[arg(long = "signal-every", default_value_t = 16)]
    pub signal_every: u32,
    /// WRs to post in total.
    #[arg(long, default_value_t = 1_000_000)]
    pub iters: u64,
    /// Use BlueFlame copies for single-WR inline posts.
    #[arg(long)]
    pub blueflame: bool,
    /// Post through the general `post_send_raw` instead of the hot path.
    #[arg(long)]
    pub general: bool,
    /// Run the C comparison loop (`benches/tool/c/post_loop.c`, RDMA WRITE
    /// only, no inline) instead of the Rust post path, for instruction
    /// counts of both by the same method.
    #[arg(long = "c-loop")]
    pub c_loop: bool,
    /// Post through a [`SendBatch`](bareverbs::sq::SendBatch) (each WR
    /// pushed as the loop forms it, one doorbell per batch) instead of a
    /// list of WRs given to `post_rdma_raw` (RDMA WRITE/READ/SEND with
    /// pointer SGEs only).
    #[arg(
        long,
        help = "Post through a SendBatch (each WR pushed as the loop forms it, one \
                doorbell per batch) instead of a list of WRs given to `post_rdma_raw` \
                (RDMA WRITE/READ/SEND with pointer SGEs only)"
    )]
    pub pushed: bool,
    /// Call the post path through an out-of-line function
    /// (`post_rdma_once` / `post_send_once`), so instruction counters can
    /// count the post calls alone; without it the post is inlined into the
    /// benchmark loop as an application would have it.
    #[arg(long)]
    pub isolate: bool,
}

/// Result of a post benchmark.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct PostStats {
    /// Wall-clock nanoseconds per posted WR.
    pub ns_per_op: f64,
    /// WRs posted.
    pub ops: u64,
    /// WQEBBs per WR.
    pub wqebbs_per_wr: f64,
    /// Doorbells rung.
    pub doorbells: u64,
}

/// A ready-to-post send queue plus the memory it uses.
pub struct PostBench {
    _dma: HeapDma,
    sq: Box<SendQueue<MemUar, [SqSlot; RING_BBS]>>,
    wrs: Vec<SendWr<'static>>,
    rwrs: Vec<RdmaWr<'static>>,
    op: RdmaOp,
    to_signal: u32,
    payload: Vec<u8>,
    args: PostArgs,
    posted: u64,
    bbs_per_wr: u32,
}

/// The arguments, the send queue's host-side state and the counters
/// (never the ring, the doorbell record or the payload).
impl std::fmt::Debug for PostBench {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostBench")
            .field("args", &self.args)
            .field("sq", &self.sq)
            .field("op", &self.op)
            .field("wrs", &self.wrs.len())
            .field("rdma_wrs", &self.rwrs.len())
            .field("payload_bytes", &self.payload.len())
            .field("to_signal", &self.to_signal)
            .field("posted", &self.posted)
            .field("bbs_per_wr", &self.bbs_per_wr)
            .finish_non_exhaustive()
    }
}

impl PostBench {
    /// Builds the queue for `args`.
    pub fn new(args: PostArgs) -> anyhow::Result<Self> {
        if args.batch < 1 || args.signal_every < 1 {
            return Err(usage_error("batch and signal-every must be >= 1"));
        }
        crate::device_arg::check_bench_sge(args.sge)?;
        if args.pushed && (args.inline.is_some() || args.general) {
            return Err(usage_error(
                "--pushed posts pointer SGEs through a batch (no --inline, --general)",
            ));
        }
        let dma = HeapDma::new();
        let ring = dma
            .alloc(RING_BBS * 64, 4096)
            .ok_or_else(|| anyhow::anyhow!("dma"))?;
        let dbrec = dma.alloc(64, 64).ok_or_else(|| anyhow::anyhow!("dma"))?;
        let overhead = 32u32;
        let data = match args.inline {
            Some(n) => (4 + n).next_multiple_of(16),
            None => 16 * args.sge,
        };
        let slot = (overhead + data).next_multiple_of(64);
        if slot > 1024 {
            return Err(usage_error(format!("WQE of {slot} bytes exceeds 1024")));
        }
        let max_post = (RING_BBS as u32 * 64) / slot;
        let cfg = SqConfig::new(QpType::Rc, max_post, args.sge)
            .qpn(0x1234)
            .inline(slot - overhead - 4)
            .atomics(true)
            .blueflame(BlueFlame {
                reg_offset: BF_OFFSET,
                buf_size: 256,
                enabled: args.blueflame,
                prefer: false,
            });
        // SAFETY: ring and dbrec are fresh allocations owned by `dma`, which
        // lives in the returned struct alongside the queue.
        let mut sq = unsafe {
            SendQueue::new(
                ring,
                dbrec,
                MemUar::default(),
                cfg,
                [SqSlot::default(); RING_BBS],
            )
        }
        .ok_or_else(|| anyhow::anyhow!("bad geometry"))?;
        sq.enable();
        let payload = vec![0x5au8; 64 * 1024];
        let sgl: Vec<Sge> = (0..args.sge)
            .map(|i| match args.inline {
                Some(n) => Sge {
                    addr: payload.as_ptr() as u64 + i as u64 * 64,
                    length: n / args.sge + u32::from(i < n % args.sge),
                    lkey: 0,
                },
                None => Sge {
                    addr: 0x1000_0000 + i as u64 * 4096,
                    length: 4096,
                    lkey: 0x42,
                },
            })
            .collect();
        let base_ds = if args.opcode == PerfOpcode::Send {
            1
        } else {
            2
        };
        let bbs_per_wr = (base_ds * 16 + data).div_ceil(64);
        // The SGE list lives as long as the process (a benchmark fixture).
        let sgl: &'static [Sge] = Box::leak(sgl.into_boxed_slice());
        let op = match args.opcode {
            PerfOpcode::Write => SendOp::Write {
                remote_addr: 0x2000_0000,
                rkey: 0x77,
            },
            PerfOpcode::Send => SendOp::Send,
            PerfOpcode::Read => SendOp::Read {
                remote_addr: 0x2000_0000,
                rkey: 0x77,
            },
        };
        let wrs = vec![SendWr::new(0, op, sgl); args.batch.min(64) as usize];
        let rop = match args.opcode {
            PerfOpcode::Write => RdmaOp::Write,
            PerfOpcode::Send => RdmaOp::Send,
            PerfOpcode::Read => RdmaOp::Read,
        };
        let rwr = RdmaWr {
            wr_id: 0,
            remote_addr: 0x2000_0000,
            rkey: 0x77,
            sgl,
            signaled: false,
        };
        let rwrs = vec![rwr; args.batch.min(64) as usize];
        Ok(PostBench {
            _dma: dma,
            sq: Box::new(sq),
            wrs,
            rwrs,
            op: rop,
            to_signal: args.signal_every,
            payload,
            args,
            posted: 0,
            bbs_per_wr,
        })
    }

    /// Posts one batch (one doorbell) and retires completions as a poller
    /// would; returns WRs posted. Kept out of line so instruction counters
    /// (`valgrind --tool=callgrind --toggle-collect='*PostBench*step*'`)
    /// can isolate it.
    #[inline(never)]
    pub fn step(&mut self) -> u32 {
        self.step_inline()
    }

    /// [`step`](Self::step) inlined into the caller's loop (as the C
    /// loop's batch function is inlined into its own), for the timed runs
    /// of `perf post` and `perf compare-c`.
    #[inline(always)]
    pub fn step_inline(&mut self) -> u32 {
        let a = self.args;
        let n = self.wrs.len();
        let mut to_signal = self.to_signal;
        let r = if a.pushed {
            let (sgl, every, base) = (self.rwrs[0].sgl, a.signal_every, self.posted);
            if a.isolate {
                push_rdma_once(&mut self.sq, self.op, n, sgl, base, &mut to_signal, every)
            } else {
                push_rdma_shaped(&mut self.sq, self.op, n, sgl, base, &mut to_signal, every)
            }
        } else if a.inline.is_none() && !a.general {
            for (k, wr) in self.rwrs.iter_mut().enumerate() {
                to_signal -= 1;
                wr.wr_id = self.posted + k as u64;
                wr.signaled = to_signal == 0;
                if to_signal == 0 {
                    to_signal = a.signal_every;
                }
            }
            if a.isolate {
                post_rdma_once(&mut self.sq, self.op, &self.rwrs)
            } else {
                // SAFETY: the SGEs name fake device addresses that the
                // memory-backed UAR never dereferences.
                unsafe { self.sq.post_rdma_raw(self.op, &self.rwrs) }
            }
        } else {
            for (k, wr) in self.wrs.iter_mut().enumerate() {
                to_signal -= 1;
                let mut flags = SendFlags::empty();
                if a.inline.is_some() {
                    flags |= SendFlags::INLINE;
                }
                if to_signal == 0 {
                    flags |= SendFlags::SIGNALED;
                    to_signal = a.signal_every;
                }
                wr.wr_id = self.posted + k as u64;
                wr.flags = flags;
            }
            if a.isolate {
                post_send_once(&mut self.sq, &self.wrs)
            } else {
                // SAFETY: non-inline SGEs are never dereferenced; inline
                // SGEs point into `self.payload`, alive and readable.
                unsafe { self.sq.post_send_raw(&self.wrs) }
            }
        };
        let posted = match r {
            Ok(()) => n,
            Err(e) => e.index,
        };
        if posted == n || a.pushed {
            self.to_signal = to_signal;
        }
        self.posted += posted as u64;
        if posted < n || self.sq.outstanding() * 2 >= self.sq.config().max_post {
            // What a poll of the newest CQE does: retire everything posted.
            let last = self.sq.cur_post().wrapping_sub(self.bbs_per_wr) as u16;
            // SAFETY: memory-backed ring that no device executes.
            let _ = unsafe { self.sq.retire(last) };
        }
        posted as u32
    }

    /// Steps until `want` WRs are posted or a step posts none; returns the
    /// WRs posted. The steps are inlined into this loop (as the C loop's
    /// batch function is inlined into its own).
    #[inline(never)]
    pub fn steps(&mut self, want: u64) -> u64 {
        let mut done = 0u64;
        while done < want {
            let n = self.step_inline();
            if n == 0 {
                break;
            }
            done += n as u64;
        }
        done
    }

    /// Runs `iters` WRs and reports.
    pub fn run(&mut self) -> PostStats {
        let _ = &self.payload;
        let start_bbs = self.sq.cur_post();
        let (done, el) = timed_steps(self.args.iters, || self.step_inline() as u64)
            .expect("posting makes no progress");
        let bbs = self.sq.cur_post().wrapping_sub(start_bbs) as f64;
        PostStats {
            ns_per_op: el.as_nanos() as f64 / done as f64,
            ops: done,
            wqebbs_per_wr: bbs / done as f64,
            doorbells: self.sq.uar().doorbells + self.sq.uar().bf_chunks,
        }
    }
}

/// One `post_rdma_raw` call, out of line so instruction counters
/// (`valgrind --tool=callgrind --toggle-collect='*post_*_once*'`) count
/// only the post path, apart from the benchmark's own loop.
#[inline(never)]
pub fn post_rdma_once(
    sq: &mut SendQueue<MemUar, [SqSlot; RING_BBS]>,
    op: RdmaOp,
    wrs: &[RdmaWr<'_>],
) -> Result<(), bareverbs::sq::PostError> {
    // SAFETY: the benchmark's SGEs name fake device addresses that the
    // memory-backed UAR never dereferences.
    unsafe { sq.post_rdma_raw(op, wrs) }
}

/// Posts `n` WRs of `op` through one [`SendBatch`](bareverbs::sq::SendBatch),
/// each formed as it is pushed (`wr_id` from `base`, signaled by the
/// down-counter `to_signal`, reloaded with `every`); on a refusal the WRs
/// before it are posted and the down-counter counts only those.
#[inline(always)]
pub fn push_rdma(
    sq: &mut SendQueue<MemUar, [SqSlot; RING_BBS]>,
    op: RdmaOp,
    n: usize,
    sgl: &[Sge],
    base: u64,
    to_signal: &mut u32,
    every: u32,
) -> Result<(), PostError> {
    let mut t = *to_signal;
    let mut b = sq.batch();
    for k in 0..n as u64 {
        let signaled = t == 1;
        let wr = RdmaWr {
            wr_id: base + k,
            remote_addr: 0x2000_0000,
            rkey: 0x77,
            sgl,
            signaled,
        };
        // SAFETY: the benchmark's SGEs name fake device addresses that the
        // memory-backed UAR never dereferences.
        if let Err(kind) = unsafe { b.push_rdma(op, &wr) } {
            *to_signal = t;
            b.ring();
            return Err(PostError {
                index: k as usize,
                kind,
            });
        }
        t = if signaled { every } else { t - 1 };
    }
    *to_signal = t;
    b.ring();
    Ok(())
}

/// [`push_rdma`] out of line, one instance per operation, with the SGE
/// list's length a constant for 1 and 16 SGEs (as an application that
/// knows its shape has it), for `--isolate`.
#[inline(never)]
pub fn push_rdma_once(
    sq: &mut SendQueue<MemUar, [SqSlot; RING_BBS]>,
    op: RdmaOp,
    n: usize,
    sgl: &[Sge],
    base: u64,
    to_signal: &mut u32,
    every: u32,
) -> Result<(), PostError> {
    push_rdma_shaped(sq, op, n, sgl, base, to_signal, every)
}

/// [`push_rdma`] with `op` and, for 1 and 16 SGEs, the list's length
/// made constants.
#[inline(always)]
pub fn push_rdma_shaped(
    sq: &mut SendQueue<MemUar, [SqSlot; RING_BBS]>,
    op: RdmaOp,
    n: usize,
    sgl: &[Sge],
    base: u64,
    to_signal: &mut u32,
    every: u32,
) -> Result<(), PostError> {
    macro_rules! shaped {
        ($op:expr) => {
            if let Ok(one) = <&[Sge; 1]>::try_from(sgl) {
                push_rdma(sq, $op, n, one, base, to_signal, every)
            } else if let Ok(sixteen) = <&[Sge; 16]>::try_from(sgl) {
                push_rdma(sq, $op, n, sixteen, base, to_signal, every)
            } else {
                push_rdma(sq, $op, n, sgl, base, to_signal, every)
            }
        };
    }
    match op {
        RdmaOp::Write => shaped!(RdmaOp::Write),
        RdmaOp::Read => shaped!(RdmaOp::Read),
        RdmaOp::Send => shaped!(RdmaOp::Send),
    }
}

/// One `post_send_raw` call, out of line (as [`post_rdma_once`]).
#[inline(never)]
pub fn post_send_once(
    sq: &mut SendQueue<MemUar, [SqSlot; RING_BBS]>,
    wrs: &[SendWr<'_>],
) -> Result<(), bareverbs::sq::PostError> {
    // SAFETY: the benchmark's non-inline SGEs are never dereferenced; its
    // inline SGEs point into the bench's payload, alive and readable.
    unsafe { sq.post_send_raw(wrs) }
}
