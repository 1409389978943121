//! The C comparison post loop (`benches/tool/c/post_loop.c`, built by
//! `build.rs` against `mlx5dv.h` with the `c-loop` feature, which this
//! whole module needs) and the measurement behind `bareverbs perf
//! compare-c`, which interleaves Rust and C batches and reports ns/WR for
//! both and the ratio.

use super::post::{PerfOpcode, PostArgs, PostBench};
use std::time::Instant;

#[repr(C)]
#[derive(Clone, Copy)]
struct CSge {
    addr: u64,
    length: u32,
    lkey: u32,
}

#[repr(C)]
struct CSq {
    ring: *mut u8,
    ring_bbs: u32,
    max_post: u32,
    qpn: u32,
    cur_post: u32,
    head: u32,
    tail: u32,
    bf_offset: u32,
    bf_size: u32,
    dbrec: *mut u32,
    uar: *mut u8,
    wrid: *mut u64,
    wqe_head: *mut u32,
    doorbells: u64,
    to_signal: u32,
}

extern "C" {
    fn bv_c_run(
        sq: *mut CSq,
        iters: u64,
        batch: u32,
        sgl: *const CSge,
        nsge: u32,
        signal_every: u32,
    ) -> u64;
}

/// Every this many WRs one is signaled (as the Rust side's `--signal-every 16`).
const SIGNAL_EVERY: u32 = 16;

/// A C-posted send queue over heap memory (same geometry as `PostBench`:
/// 4096 WQEBBs, slot = align64(32 + 16 × SGEs)).
pub struct CPostQueue {
    sq: Box<CSq>,
    _ring: Vec<u128>,
    _dbrec: Box<[u32; 16]>,
    _uar: Box<[u8; 4096]>,
    _wrid: Vec<u64>,
    _wqe_head: Vec<u32>,
    sgl: Vec<CSge>,
    batch: u32,
}

/// The queue's geometry and counters (the C struct's plain fields, never
/// the ring, doorbell record or UAR they point to).
impl std::fmt::Debug for CPostQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CPostQueue")
            .field("ring_bbs", &self.sq.ring_bbs)
            .field("max_post", &self.sq.max_post)
            .field("qpn", &self.sq.qpn)
            .field("cur_post", &self.sq.cur_post)
            .field("doorbells", &self.sq.doorbells)
            .field("sges", &self.sgl.len())
            .field("batch", &self.batch)
            .finish_non_exhaustive()
    }
}

impl CPostQueue {
    /// RDMA WRITEs of `sge` SGEs, `batch` per doorbell.
    pub fn new(sge: u32, batch: u32) -> Self {
        let bbs = super::post::RING_BBS;
        let mut ring = vec![0u128; bbs * 4];
        let mut dbrec = Box::new([0u32; 16]);
        let mut uar = Box::new([0u8; 4096]);
        let mut wrid = vec![0u64; bbs];
        let mut wqe_head = vec![0u32; bbs];
        let slot = (32 + 16 * sge).next_multiple_of(64);
        let sq = Box::new(CSq {
            ring: ring.as_mut_ptr().cast(),
            ring_bbs: bbs as u32,
            max_post: (bbs as u32 * 64) / slot,
            qpn: 0x1234,
            cur_post: 0,
            head: 0,
            tail: 0,
            bf_offset: 0,
            bf_size: 256,
            dbrec: dbrec.as_mut_ptr(),
            uar: uar.as_mut_ptr(),
            wrid: wrid.as_mut_ptr(),
            wqe_head: wqe_head.as_mut_ptr(),
            doorbells: 0,
            to_signal: SIGNAL_EVERY,
        });
        let sgl = (0..sge)
            .map(|i| CSge {
                addr: 0x1000_0000 + i as u64 * 4096,
                length: 4096,
                lkey: 0x42,
            })
            .collect();
        CPostQueue {
            sq,
            _ring: ring,
            _dbrec: dbrec,
            _uar: uar,
            _wrid: wrid,
            _wqe_head: wqe_head,
            sgl,
            batch,
        }
    }

    /// Posts `iters` WRs; returns the number posted.
    pub fn run(&mut self, iters: u64) -> u64 {
        // SAFETY: every pointer in `sq` points into buffers owned by `self`
        // and sized as the C code expects (ring_bbs × 64 ring bytes,
        // ring_bbs wrid/wqe_head entries, 8-byte dbrec, 4 KiB UAR with
        // 0x800 + 2 × 256 in range); `sgl` has `sgl.len()` entries.
        unsafe {
            bv_c_run(
                &mut *self.sq,
                iters,
                self.batch,
                self.sgl.as_ptr(),
                self.sgl.len() as u32,
                SIGNAL_EVERY,
            )
        }
    }

    /// Doorbells rung so far.
    pub fn doorbells(&self) -> u64 {
        self.sq.doorbells
    }

    /// The ring bytes of WQEBB `idx` (for checks).
    pub fn wqebb(&self, idx: usize) -> [u8; 64] {
        let mut b = [0u8; 64];
        // SAFETY: idx is masked into the ring of ring_bbs × 64 bytes.
        unsafe {
            core::ptr::copy_nonoverlapping(
                self.sq.ring.add((idx % self.sq.ring_bbs as usize) * 64),
                b.as_mut_ptr(),
                64,
            )
        };
        b
    }
}

/// `bareverbs perf post --c-loop`: the C loop alone for `args` (RDMA
/// WRITE, pointer SGEs, one signaled WR in 16 as in every comparison).
pub fn run_c_loop(args: PostArgs) -> anyhow::Result<super::post::PostStats> {
    anyhow::ensure!(
        args.opcode == PerfOpcode::Write && args.inline.is_none() && !args.general,
        "--c-loop runs RDMA WRITEs with pointer SGEs only (no --inline, --general, --opcode)"
    );
    anyhow::ensure!(
        args.signal_every == SIGNAL_EVERY,
        "--c-loop signals one WR in {SIGNAL_EVERY} (the comparison's setting)"
    );
    anyhow::ensure!(
        (1..=16).contains(&args.sge) && args.batch >= 1,
        "--c-loop needs --sge 1..=16 and --batch >= 1"
    );
    let mut c = CPostQueue::new(args.sge, args.batch);
    let t = Instant::now();
    let ops = c.run(args.iters);
    let el = t.elapsed();
    Ok(super::post::PostStats {
        ns_per_op: el.as_nanos() as f64 / ops.max(1) as f64,
        ops,
        wqebbs_per_wr: (32 + 16 * args.sge).div_ceil(64) as f64,
        doorbells: c.doorbells(),
    })
}

/// One comparison case.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct CompareCase {
    /// Name.
    pub name: &'static str,
    /// SGEs per WRITE.
    pub sge: u32,
    /// WRs per doorbell.
    pub batch: u32,
}

/// The default cases: 1-SGE WRITE 16 per doorbell, 1 per doorbell, 16-SGE batched.
pub const CASES: [CompareCase; 3] = [
    CompareCase {
        name: "write 1 SGE, 16/doorbell",
        sge: 1,
        batch: 16,
    },
    CompareCase {
        name: "write 1 SGE, 1/doorbell",
        sge: 1,
        batch: 1,
    },
    CompareCase {
        name: "write 16 SGE, 16/doorbell",
        sge: 16,
        batch: 16,
    },
];

/// Median, minimum and maximum of a set of per-round figures.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct Spread {
    /// Median.
    pub median: f64,
    /// Smallest round.
    pub min: f64,
    /// Largest round.
    pub max: f64,
}

impl Spread {
    /// The spread of `v` (not empty).
    pub fn of(v: &[f64]) -> Spread {
        let mut s = v.to_vec();
        s.sort_by(f64::total_cmp);
        let n = s.len();
        let median = if n % 2 == 1 {
            s[n / 2]
        } else {
            (s[n / 2 - 1] + s[n / 2]) / 2.0
        };
        Spread {
            median,
            min: s[0],
            max: s[n - 1],
        }
    }
}

/// Result of one case: per-round nanoseconds per WR of each side and the
/// per-round ratio (each round times the Rust and the C loop back to
/// back, alternating which goes first).
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct CompareResult {
    /// Case.
    pub case: CompareCase,
    /// Rounds run.
    pub rounds: u32,
    /// Rust ns per WR, a list of WRs per `post_rdma_raw` call.
    pub rust_ns: Spread,
    /// Rust ns per WR, each WR pushed into a `SendBatch`.
    pub pushed_ns: Spread,
    /// C ns per WR.
    pub c_ns: Spread,
    /// Rust (list) ns / C ns, round by round.
    pub ratio: Spread,
    /// Rust (pushed) ns / C ns, round by round.
    pub pushed_ratio: Spread,
}

/// Interleaves `rounds` runs of `per_round` WRs each of the C loop and
/// both Rust forms (list and pushed), rotating which goes first, and
/// returns the per-round figures.
pub fn compare(case: CompareCase, rounds: u32, per_round: u64) -> anyhow::Result<CompareResult> {
    anyhow::ensure!(rounds >= 1, "--rounds must be at least 1");
    let bench = |pushed| {
        PostBench::new(PostArgs {
            opcode: PerfOpcode::Write,
            sge: case.sge,
            inline: None,
            batch: case.batch,
            signal_every: 16,
            iters: per_round,
            blueflame: false,
            general: false,
            pushed,
            c_loop: false,
            isolate: false,
        })
    };
    let (mut list, mut pushed) = (bench(false)?, bench(true)?);
    let mut c = CPostQueue::new(case.sge, case.batch);
    // Warm-up.
    let _ = list.run();
    let _ = pushed.run();
    c.run(per_round);
    let rust_round = |b: &mut PostBench| {
        let t = Instant::now();
        let done = b.steps(per_round);
        t.elapsed().as_nanos() as f64 / done.max(1) as f64
    };
    let mut fig = [Vec::new(), Vec::new(), Vec::new()];
    for r in 0..rounds {
        // Round r starts with runner r mod 3.
        for k in 0..3 {
            let who = (r as usize + k) % 3;
            let ns = match who {
                0 => rust_round(&mut list),
                1 => rust_round(&mut pushed),
                _ => {
                    let t = Instant::now();
                    let n = c.run(per_round);
                    t.elapsed().as_nanos() as f64 / n as f64
                }
            };
            fig[who].push(ns);
        }
    }
    let ratio = |v: &[f64]| -> Vec<f64> { v.iter().zip(&fig[2]).map(|(a, b)| a / b).collect() };
    Ok(CompareResult {
        case,
        rounds,
        rust_ns: Spread::of(&fig[0]),
        pushed_ns: Spread::of(&fig[1]),
        c_ns: Spread::of(&fig[2]),
        ratio: Spread::of(&ratio(&fig[0])),
        pushed_ratio: Spread::of(&ratio(&fig[1])),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The C loop builds the same WRITE WQE the rule says: ctrl with
    /// opcode 0x08, wqe index 0, qpn 0x1234, DS 3; raddr 0x20000000 /
    /// rkey 0x77; data seg 4096 B, lkey 0x42, addr 0x10000000.
    #[test]
    fn c_wqe_bytes() {
        let mut q = CPostQueue::new(1, 1);
        assert_eq!(q.run(1), 1);
        assert_eq!(q.doorbells(), 1);
        let b = q.wqebb(0);
        assert_eq!(&b[0..4], &[0, 0, 0, 0x08]);
        assert_eq!(&b[4..8], &[0, 0x12, 0x34, 3]);
        assert_eq!(&b[16..24], &0x2000_0000u64.to_be_bytes());
        assert_eq!(&b[24..28], &0x77u32.to_be_bytes());
        assert_eq!(&b[32..36], &4096u32.to_be_bytes());
        assert_eq!(&b[36..40], &0x42u32.to_be_bytes());
        assert_eq!(&b[40..48], &0x1000_0000u64.to_be_bytes());
        assert_eq!(b[11], 0, "WR 0 is unsignaled");
    }

    /// Every 16th WR (ids 15, 31, …) is signaled (CQ_UPDATE = 0x08 in
    /// fm_ce_se, [ref §1.3](bareverbs::reference)), across batches and calls.
    #[test]
    fn c_signals_every_sixteenth_wr() {
        let mut q = CPostQueue::new(1, 5);
        assert_eq!(q.run(40), 40);
        // 1 SGE: 3 DS → one WQEBB per WR, so WR k is WQEBB k.
        for k in 0..40 {
            let want = if (k + 1) % 16 == 0 { 0x08 } else { 0 };
            assert_eq!(q.wqebb(k)[11], want, "WR {k}");
        }
    }

    #[test]
    fn compare_runs() {
        let r = compare(CASES[0], 3, 2000).unwrap();
        assert!(r.rust_ns.min > 0.0 && r.c_ns.min > 0.0);
        assert!(r.ratio.min <= r.ratio.median && r.ratio.median <= r.ratio.max);
    }

    #[test]
    fn spread_is_median_min_max() {
        let s = Spread::of(&[3.0, 1.0, 2.0, 10.0]);
        assert_eq!((s.median, s.min, s.max), (2.5, 1.0, 10.0));
        let s = Spread::of(&[5.0, 1.0, 2.0]);
        assert_eq!((s.median, s.min, s.max), (2.0, 1.0, 5.0));
    }
}
