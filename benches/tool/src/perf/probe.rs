//! Post real WRs into a memory-backed send queue of a given geometry (the
//! ring size and slot the sizing rules give), to read back the WQE the
//! post path actually built (DS count → WQE bytes, WQEBBs) and to time the
//! post path (`PostBench`-style loop: WQE stores, barrier, doorbell record,
//! sfence, 8-byte doorbell / BlueFlame copy into a RAM UAR page).

use crate::model::WqeOp;
use bareverbs::platform::{DmaAllocator, DmaBuf, MemUar, BF_OFFSET};
use bareverbs::qp::QpType;
use bareverbs::sq::{BlueFlame, SendFlags, SendOp, SendQueue, SendWr, Sge, SqConfig, SqSlot};
use bareverbs::wqe::DS_MASK;
use bareverbs_sim::dma::HeapDma;
use std::time::Instant;

/// Geometry and WR shape to probe.
#[derive(Clone, Copy, Debug)]
pub struct ProbeSpec {
    /// Operation.
    pub op: WqeOp,
    /// QP type (RC, UC or UD).
    pub qp_type: QpType,
    /// Ring size in WQEBBs (power of two, 1..=65536).
    pub ring_bbs: u32,
    /// `max_post` from the sizing (ring bytes / slot bytes).
    pub max_post: u32,
    /// `max_send_sge` the QP was created with.
    pub max_gs: u32,
    /// `max_inline_data` read back from the sizing.
    pub max_inline: u32,
    /// SGEs per posted WR.
    pub posted_sge: u32,
    /// Post inline.
    pub inline: bool,
    /// Payload bytes per WR (split over the SGEs).
    pub payload: u32,
    /// WRs per doorbell.
    pub batch: u32,
    /// Atomics allowed on the QP.
    pub atomics: bool,
    /// BlueFlame enabled (single-WR inline posts copy the WQE to the UAR).
    pub blueflame: bool,
}

/// What a probe found.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct ProbeResult {
    /// DS count of the first posted WQE, read from its control segment.
    pub ds: u32,
    /// WQEBBs the post advanced `cur_post` by, per WR.
    pub wqebbs: u32,
    /// Nanoseconds per posted WR (0 when not timed).
    pub post_ns: f64,
}

/// Times `n` single doorbell batches one by one (ns each, including the
/// clock read), for per-iteration CPU jitter in latency runs.
pub fn post_samples(spec: &ProbeSpec, n: usize) -> anyhow::Result<Vec<u64>> {
    let mut out = Vec::with_capacity(n);
    probe_with(spec, 0, 1, Some((&mut out, n)))?;
    Ok(out)
}

/// Posts one WR and reads the DS back; with `iters > 0` also times
/// `iters` WRs (best of `reps` runs).
pub fn probe(spec: &ProbeSpec, iters: u64, reps: u32) -> anyhow::Result<ProbeResult> {
    probe_with(spec, iters, reps, None)
}

type Samples<'a> = Option<(&'a mut Vec<u64>, usize)>;

fn probe_with(
    spec: &ProbeSpec,
    iters: u64,
    reps: u32,
    samples: Samples<'_>,
) -> anyhow::Result<ProbeResult> {
    run(spec, iters, reps, samples)
}

fn run(
    spec: &ProbeSpec,
    iters: u64,
    reps: u32,
    samples: Samples<'_>,
) -> anyhow::Result<ProbeResult> {
    // Queue storage is sized at run time from the ring (no size macro, no
    // big stack).
    let n = spec.ring_bbs as usize;
    let dma = HeapDma::new();
    let ring = dma
        .alloc(n * 64, 4096)
        .ok_or_else(|| anyhow::anyhow!("dma"))?;
    let dbrec = dma.alloc(64, 64).ok_or_else(|| anyhow::anyhow!("dma"))?;
    let cfg = sq_config(spec);
    // SAFETY: ring and dbrec are fresh allocations owned by `dma`, which
    // outlives the queue (both are dropped at the end of this function,
    // the queue first: it is declared later).
    let slots = vec![SqSlot::default(); n];
    let sq = unsafe { SendQueue::new(ring, dbrec, MemUar::default(), cfg, slots) }
        .ok_or_else(|| anyhow::anyhow!("bad SQ geometry"))?;
    let mut sq = sq;
    sq.enable();

    let k = spec.posted_sge.max(1);
    let payload = vec![0x5au8; (spec.payload as usize).max(64) + 64 * k as usize];
    let sgl = sge_list(spec, k, &payload);
    let base_flags = if spec.inline {
        SendFlags::INLINE
    } else {
        SendFlags::empty()
    };
    let mut wrs = vec![
        SendWr::new(0, send_op(spec.op), &sgl).with_flags(base_flags);
        spec.batch.max(1) as usize
    ];

    // 1. One WR: read its control segment back from the ring.
    let (ds, wqebbs) = read_back(&mut sq, &wrs, &ring, n)?;

    // 2a. Per-batch samples.
    if let Some((out, n)) = samples {
        sample_posts(&mut sq, &mut wrs, base_flags, wqebbs, out, n);
    }

    // 2b. Timed loop.
    let mut best = f64::INFINITY;
    if iters > 0 {
        best = time_posts(&mut sq, &mut wrs, base_flags, wqebbs, iters, reps);
    }
    drop(sq);
    drop(payload);
    Ok(ProbeResult {
        ds,
        wqebbs,
        post_ns: if iters > 0 { best } else { 0.0 },
    })
}

/// The memory-backed send queue a probe posts into.
type ProbeSq = SendQueue<MemUar, Vec<SqSlot>>;

/// The SQ configuration of `spec` (BlueFlame register at 0x800 of the RAM
/// UAR page).
fn sq_config(spec: &ProbeSpec) -> SqConfig {
    SqConfig::new(spec.qp_type, spec.max_post, spec.max_gs)
        .qpn(0x1234)
        .inline(spec.max_inline)
        .atomics(spec.atomics)
        .blueflame(BlueFlame {
            reg_offset: BF_OFFSET,
            buf_size: 256,
            enabled: spec.blueflame,
            prefer: false,
        })
}

/// The `k` SGEs of each WR, splitting the payload: inline ones point into
/// `payload` (64 bytes apart), the others name fake device addresses.
fn sge_list(spec: &ProbeSpec, k: u32, payload: &[u8]) -> Vec<Sge> {
    (0..k)
        .map(|i| {
            let len = spec.payload / k + u32::from(i < spec.payload % k);
            if spec.inline {
                Sge {
                    addr: payload.as_ptr() as u64 + i as u64 * 64,
                    length: len,
                    lkey: 0,
                }
            } else {
                Sge {
                    addr: 0x1000_0000 + i as u64 * 4096,
                    length: len.max(1),
                    lkey: 0x42,
                }
            }
        })
        .collect()
}

/// The work request of `op` toward a fixed fake remote buffer.
fn send_op(op: WqeOp) -> SendOp {
    let (raddr, rkey) = (0x2000_0000u64, 0x77u32);
    match op {
        WqeOp::Write => SendOp::Write {
            remote_addr: raddr,
            rkey,
        },
        WqeOp::Send => SendOp::Send,
        WqeOp::Read => SendOp::Read {
            remote_addr: raddr,
            rkey,
        },
        WqeOp::Atomic => SendOp::FetchAdd {
            remote_addr: raddr,
            rkey,
            add: 1,
        },
    }
}

/// Posts the first of `wrs` and reads its control segment back from the
/// `n`-WQEBB `ring`: (DS count, WQEBBs the post took); then retires it.
fn read_back(
    sq: &mut ProbeSq,
    wrs: &[SendWr<'_>],
    ring: &DmaBuf,
    n: usize,
) -> anyhow::Result<(u32, u32)> {
    let before = sq.cur_post();
    // SAFETY: non-inline SGEs name fake device addresses that the RAM UAR
    // never dereferences; inline SGEs point into the caller's `payload`,
    // alive for this call.
    unsafe { sq.post_send_raw(&wrs[..1]) }.map_err(|e| anyhow::anyhow!("post failed: {e}"))?;
    let wqebbs = sq.cur_post().wrapping_sub(before);
    let ds = read_ds(ring, before as usize % n);
    let last = sq.cur_post().wrapping_sub(wqebbs) as u16;
    // SAFETY: memory-backed ring that no device executes.
    let _ = unsafe { sq.retire(last) };
    Ok((ds, wqebbs))
}

/// Times `n` signaled batches of `wrs` one by one into `out` (ns each,
/// including the clock read), retiring after each.
#[inline(always)]
fn sample_posts(
    sq: &mut ProbeSq,
    wrs: &mut [SendWr<'_>],
    base_flags: SendFlags,
    wqebbs: u32,
    out: &mut Vec<u64>,
    n: usize,
) {
    for i in 0..n {
        for wr in wrs.iter_mut() {
            wr.flags = base_flags | SendFlags::SIGNALED;
            wr.wr_id = i as u64;
        }
        let t = Instant::now();
        // SAFETY: the SGEs are the caller's: fake device addresses the
        // RAM UAR never dereferences, or inline data alive while it runs.
        let r = unsafe { sq.post_send_raw(wrs) };
        out.push(t.elapsed().as_nanos() as u64);
        if r.is_err() || sq.outstanding() > 0 {
            let last = sq.cur_post().wrapping_sub(wqebbs) as u16;
            // SAFETY: memory-backed ring that no device executes.
            let _ = unsafe { sq.retire(last) };
        }
    }
}

/// The timed loop: posts `iters` WRs in batches of `wrs` (one signaled
/// every 16), retiring as the ring fills; the best ns per WR of `reps`
/// runs.
#[inline(always)]
fn time_posts(
    sq: &mut ProbeSq,
    wrs: &mut [SendWr<'_>],
    base_flags: SendFlags,
    wqebbs: u32,
    iters: u64,
    reps: u32,
) -> f64 {
    let mut best = f64::INFINITY;
    let n = wrs.len();
    for _ in 0..reps.max(1) {
        let mut posted = 0u64;
        let t = Instant::now();
        while posted < iters {
            for (j, wr) in wrs.iter_mut().enumerate() {
                let seq = posted + j as u64;
                wr.wr_id = seq;
                wr.flags = if (seq + 1).is_multiple_of(16) {
                    base_flags | SendFlags::SIGNALED
                } else {
                    base_flags
                };
            }
            // SAFETY: as in `sample_posts`.
            let r = unsafe { sq.post_send_raw(wrs) };
            let done = match r {
                Ok(()) => n,
                Err(e) => e.index,
            };
            posted += done as u64;
            if done < n || sq.outstanding() * 2 >= sq.config().max_post {
                let last = sq.cur_post().wrapping_sub(wqebbs) as u16;
                // SAFETY: memory-backed ring that no device executes.
                let _ = unsafe { sq.retire(last) };
            }
        }
        best = best.min(t.elapsed().as_nanos() as f64 / posted as f64);
    }
    best
}

/// DS count (low 6 bits of the big-endian `qpn_ds` word, bytes 4..8) of
/// the control segment in WQEBB `idx` of `ring`.
fn read_ds(ring: &DmaBuf, idx: usize) -> u32 {
    let mut w = [0u8; 4];
    // SAFETY: `idx * 64 + 8 <= ring.len` (idx < n, ring is n * 64 bytes);
    // a raw copy out of DMA memory, no reference into it.
    unsafe {
        core::ptr::copy_nonoverlapping(ring.cpu.as_ptr().add(idx * 64 + 4), w.as_mut_ptr(), 4)
    };
    u32::from_be_bytes(w) & DS_MASK
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A refused post reads as the core's Display text, not its Debug
    /// (`TooManySges { num: 1, max: Some(0) }`).
    #[test]
    fn refused_post_is_reported_in_words() {
        let spec = ProbeSpec {
            op: WqeOp::Write,
            qp_type: QpType::Rc,
            ring_bbs: 64,
            max_post: 16,
            max_gs: 0,
            max_inline: 0,
            posted_sge: 1,
            inline: false,
            payload: 64,
            batch: 1,
            atomics: false,
            blueflame: false,
        };
        let e = probe(&spec, 0, 1).unwrap_err().to_string();
        assert!(!e.contains("TooManySges"), "{e}");
        assert!(e.contains("1 SGEs, the queue allows 0"), "{e}");
    }
}
