//! The PCIe / NIC cost model (perf ref §2.3) and the counters the
//! simulator keeps per QP and per device.
//!
//! Every default in [`ModelParams`] names its source ((V) read in the
//! primary source, (S) secondary, (U) unverified placeholder, as in
//! perf ref §0); the simulator uses
//! them for the virtual time of each step (WQE fetch, payload gather, wire,
//! CQE write) and [`latency_ns`] evaluates the one-way latency formula
//!
//! ```text
//! L = t_post + t_db
//!   + (bf ? t_mmio_line * WQEBBs : t_rd(64 * WQEBBs * B))   # WQE fetch
//!   + (inline ? 0 : t_rd(len_1) + (k - 1) * t_sge)          # payload gather
//!   + t_base                                                # wire + NIC + remote write
//! t_rd(n) = t_rd0 + beta * max(0, n - 64)
//! ```

use serde::{Deserialize, Serialize};

/// Parameters of the cost model. `Default` gives the documented values;
/// the struct is serde-friendly so a tool can load it from a file.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ModelParams {
    /// CPU time to build one WQE (ns). 40 ns: UCX `UCT_RC_MLX5_IFACE_OVERHEAD`
    /// (rc_mlx5), perf ref §1a (V).
    pub t_post_ns: f64,
    /// CPU time of the 8-byte doorbell + sfence (ns). 40 ns: UCX
    /// `UCT_IB_SEND_OVERHEAD_VALUE` "db:40ns", perf ref §1a (V).
    pub t_db_ns: f64,
    /// CPU time to poll and parse one CQE (ns). 20 ns: UCX "cqe:20ns", perf ref §1a (V).
    pub t_cqe_ns: f64,
    /// Round trip of a 64-byte DMA read (ns). 350 ns: UCX "wqe_fetch:350ns";
    /// pcie-bench measures 533–653 ns, perf ref §2.3 (V).
    pub t_rd0_ns: f64,
    /// Extra time per byte of a larger DMA read (ns/B). 0.30: pcie-bench slope
    /// 64 B → 2 KB, perf ref §2.3 (V).
    pub beta_ns_per_byte: f64,
    /// Each extra gather read in flight (ns). 11 ns: fitted to the blog table
    /// (range 10–12), perf ref §2.3 (fit).
    pub t_sge_ns: f64,
    /// One 64-byte write-combined line on the link (ns). 5.7 ns = 1 / 175 M
    /// lines/s, KALIA-ATC16 §5.2.1 (PCIe 3 x16), perf ref §2.3 (V).
    pub t_mmio_line_ns: f64,
    /// IOTLB miss penalty (ns). 300 ns: pcie-bench iommu-nosp, perf ref §2.3 (V).
    /// (Kept for the tools; the simulator does not model an IOTLB.)
    pub t_iotlb_ns: f64,
    /// Wire + NIC pipeline + remote DMA write, one way (ns). 600 ns: UCX
    /// latency constant for EDR/HDR/NDR (add 200 for RoCE), perf ref §2.3 (V).
    pub t_base_ns: f64,
    /// Largest WQE a BlueFlame write may carry (bytes). 256: rdma-core
    /// `bf->buf_size`, UCX `UCT_IB_MLX5_MAX_BB 4`, perf ref §2.3 (V).
    pub bf_max_bytes: u32,
    /// Link rate (Gb/s, decimal). 100: KALIA-ATC16 §2.2 "100 Gb/s per
    /// port", perf ref §1b (V).
    pub link_gbps: f64,
    /// PCIe request TLP overhead (bytes). 26: KALIA-ATC16 (P_r), perf ref §2.3 (V).
    pub tlp_req_overhead: u32,
    /// PCIe completion TLP overhead (bytes). 22: KALIA-ATC16 (P_c), perf ref §2.3 (V).
    pub tlp_cpl_overhead: u32,
    /// Read completions combine at this many bytes. 128: KALIA-ATC16 (C_rc),
    /// perf ref §2.3 (V).
    pub read_cpl_bytes: u32,
    /// QP contexts the NIC caches. 256: the low end of "a few hundred"
    /// connected QPs before NIC state misses, KALIA-ATC16 §4.2.1 (V);
    /// ScaleRPC notes ~400 on CX3 (S). perf ref §2.3.
    pub qpc_cache_qps: u32,
    /// Bytes fetched on a QP-context miss. 256: placeholder (U) (the
    /// context layout in [ref §7.11](bareverbs::reference) is 232 bytes of qpc, rounded up).
    pub qpc_bytes: u32,
}

impl Default for ModelParams {
    fn default() -> Self {
        ModelParams {
            t_post_ns: 40.0,
            t_db_ns: 40.0,
            t_cqe_ns: 20.0,
            t_rd0_ns: 350.0,
            beta_ns_per_byte: 0.30,
            t_sge_ns: 11.0,
            t_mmio_line_ns: 5.7,
            t_iotlb_ns: 300.0,
            t_base_ns: 600.0,
            bf_max_bytes: 256,
            link_gbps: 100.0,
            tlp_req_overhead: 26,
            tlp_cpl_overhead: 22,
            read_cpl_bytes: 128,
            qpc_cache_qps: 256,
            qpc_bytes: 256,
        }
    }
}

/// `x.ceil() as u64` (same result for every `x`, NaN and infinities
/// included) without a call to the software `ceil` on targets without
/// SSE4.1's rounding instruction.
#[inline]
pub(crate) fn ceil_u64(x: f64) -> u64 {
    if (0.0..I64_LIMIT).contains(&x) {
        // Signed conversions are single instructions; 0 <= t < 2^63.
        // SAFETY: 0 <= x < 2^63: finite, and its truncation fits an i64.
        let t: i64 = unsafe { x.to_int_unchecked() };
        if (t as f64) < x {
            (t + 1) as u64
        } else {
            t as u64
        }
    } else {
        let t = x as u64;
        if (t as f64) < x {
            t.saturating_add(1)
        } else {
            t
        }
    }
}

/// `x as u64` (truncation, saturating; same result for every `x`, NaN
/// included) through the single-instruction signed conversion where it is
/// exact.
#[inline]
pub(crate) fn trunc_u64(x: f64) -> u64 {
    if (0.0..I64_LIMIT).contains(&x) {
        // SAFETY: 0 <= x < 2^63: finite, and its truncation fits an i64.
        let t: i64 = unsafe { x.to_int_unchecked() };
        t as u64
    } else {
        x as u64
    }
}

/// 2^63 as an `f64`: below it, `as i64` is exact truncation.
const I64_LIMIT: f64 = 9_223_372_036_854_775_808.0;

/// `x.round() as u64` (half away from zero; same result for every `x`)
/// without a call to the software `round`.
#[inline]
pub(crate) fn round_u64(x: f64) -> u64 {
    if (0.0..I64_LIMIT).contains(&x) {
        let t = x as i64;
        // Exact: x and its truncation are within 2^63 and share an
        // exponent range, so the difference is representable.
        if x - t as f64 >= 0.5 {
            (t + 1) as u64
        } else {
            t as u64
        }
    } else {
        x.round() as u64
    }
}

impl ModelParams {
    /// Time of one DMA read of `n` bytes: `t_rd0 + beta * max(0, n - 64)`.
    pub fn t_rd(&self, n: u64) -> f64 {
        self.t_rd0_ns + self.beta_ns_per_byte * n.saturating_sub(64) as f64
    }
    /// Serialisation time of `bytes` on the link (ns).
    pub fn t_wire(&self, bytes: u64) -> f64 {
        bytes as f64 * 8.0 / self.link_gbps
    }
}

/// Link bytes of one DMA read of `n` bytes: the request TLP and the
/// completions of `read_cpl_bytes` each (at least one).
#[inline]
pub(crate) fn dma_read_wire(p: &ModelParams, n: u64) -> u64 {
    let cpls = n.div_ceil(p.read_cpl_bytes as u64).max(1);
    p.tlp_req_overhead as u64 + n + cpls * p.tlp_cpl_overhead as u64
}

/// Terms of the cost model that depend on the parameters alone, computed
/// once per parameter change for the fused fast path (each the exact value
/// the general path computes per operation).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct FastCosts {
    /// `round(t_post + t_db)`: host time of one post and doorbell.
    pub cpu_post: u64,
    /// `t_rd(64)`: the DMA fetch of one WQEBB.
    pub t_rd_wqebb: f64,
    /// `t_rd(qpc_bytes)`: a QP-context fetch.
    pub t_rd_qpc: f64,
    /// `t_base` truncated to whole ns, as packets arrive.
    pub t_base: u64,
    /// `ceil(t_wire(64))`: an ACK on the link.
    pub wire_ack: u64,
    /// Link bytes of a DMA read of 4 bytes (a doorbell record), one WQEBB,
    /// and a QP context ([`Counters::dma_read`]); `None` when completions
    /// are configured as 0 bytes (the general path divides by it).
    pub rd_wire: Option<[u64; 3]>,
}

impl FastCosts {
    /// The terms of `p`.
    pub fn new(p: &ModelParams) -> Self {
        let rd = |n: u64| (p.read_cpl_bytes != 0).then(|| dma_read_wire(p, n));
        let rd_wire = (|| Some([rd(4)?, rd(64)?, rd(p.qpc_bytes as u64)?]))();
        FastCosts {
            cpu_post: round_u64(p.t_post_ns + p.t_db_ns),
            t_rd_wqebb: p.t_rd(64),
            t_rd_qpc: p.t_rd(p.qpc_bytes as u64),
            t_base: trunc_u64(p.t_base_ns),
            wire_ack: ceil_u64(p.t_wire(64)),
            rd_wire,
        }
    }
}

/// `(sges - 1) as f64` for one gather entry.
const ONE_SGE_EXTRA: f64 = 0.0;

/// The payload-length terms of a fused WRITE, for the last length seen (a
/// memo, emptied whenever the parameters change; length 0 is never fused).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct LenCosts {
    /// The payload length the terms are for (0: none yet).
    pub len: u64,
    /// `t_rd(len) + 0 * t_sge`: the gather of one entry.
    pub gather: f64,
    /// `ceil(t_wire(len + 64))`: the request on the link.
    pub wire_req: u64,
    /// Link bytes of the gather's DMA read ([`dma_read_wire`]).
    pub rd_wire: u64,
}

impl LenCosts {
    /// The terms for payload length `n` (1 or more) under `p`, which must be
    /// the parameters since the memo was last emptied, with completions of
    /// nonzero size.
    #[inline]
    pub fn get(&mut self, p: &ModelParams, n: u64) -> LenCosts {
        if self.len != n {
            *self = Self::compute(p, n);
        }
        *self
    }

    #[cold]
    fn compute(p: &ModelParams, n: u64) -> LenCosts {
        LenCosts {
            len: n,
            // The general path's `t_rd(first) + (sges - 1) * t_sge` with
            // one entry: `0.0 * t_sge` is kept (it is NaN for an infinite
            // `t_sge`, and -0.0 for a negative one).
            gather: p.t_rd(n) + ONE_SGE_EXTRA * p.t_sge_ns,
            wire_req: ceil_u64(p.t_wire(n + 64)),
            rd_wire: dma_read_wire(p, n),
        }
    }
}

/// What one posted WQE looks like to the cost model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct WqeShape {
    /// WQEBBs of the WQE (ceil(DS·16 / 64)).
    pub wqebbs: u32,
    /// WQEs rung by the same doorbell (B).
    pub batch: u32,
    /// Delivered by BlueFlame (no DMA fetch).
    pub blueflame: bool,
    /// Payload inline in the WQE (no gather).
    pub inline: bool,
    /// Data (pointer) segments k.
    pub sges: u32,
    /// Bytes of the first gather entry.
    pub first_len: u32,
}

/// Time the NIC spends fetching a WQE (ns).
pub fn fetch_ns(p: &ModelParams, s: &WqeShape) -> f64 {
    if s.blueflame {
        p.t_mmio_line_ns * s.wqebbs as f64
    } else {
        p.t_rd(64 * s.wqebbs as u64 * s.batch.max(1) as u64)
    }
}

/// Time the NIC spends gathering the payload (ns).
pub fn gather_ns(p: &ModelParams, s: &WqeShape) -> f64 {
    if s.inline || s.sges == 0 {
        0.0
    } else {
        p.t_rd(s.first_len as u64) + (s.sges - 1) as f64 * p.t_sge_ns
    }
}

/// The one-way latency formula of perf ref §2.3 (no cache misses).
pub fn latency_ns(p: &ModelParams, s: &WqeShape) -> f64 {
    p.t_post_ns + p.t_db_ns + fetch_ns(p, s) + gather_ns(p, s) + p.t_base_ns
}

/// Counters kept per QP and per device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    /// 8-byte doorbell writes.
    pub doorbells: u64,
    /// BlueFlame writes (one per doorbell delivered by BlueFlame).
    pub bf_writes: u64,
    /// 64-byte BlueFlame chunks.
    pub bf_chunks: u64,
    /// WQEs executed (fetched by DMA or taken from BlueFlame).
    pub wqes: u64,
    /// Bytes of WQEs fetched by DMA read.
    pub wqe_bytes_fetched: u64,
    /// PCIe read requests the NIC issued (WQE fetch, gathers, doorbell
    /// records, remote READ sources).
    pub pcie_reads: u64,
    /// Bytes the NIC read over PCIe (payload of the completions).
    pub pcie_read_bytes: u64,
    /// PCIe write transactions the NIC issued (scatters, CQEs).
    pub pcie_writes: u64,
    /// Bytes the NIC wrote over PCIe.
    pub pcie_write_bytes: u64,
    /// PCIe bytes on the link including TLP overheads (both directions).
    pub pcie_wire_bytes: u64,
    /// Payload bytes sent on the wire (including retransmissions).
    pub payload_tx_bytes: u64,
    /// Payload bytes received and placed.
    pub payload_rx_bytes: u64,
    /// Packets (messages) sent on the wire, including ACKs and NAKs.
    pub packets_tx: u64,
    /// Retransmitted requests.
    pub retransmits: u64,
    /// CQEs written.
    pub cqes: u64,
    /// Error CQEs written (including flushes).
    pub err_cqes: u64,
    /// RNR NAKs sent (responder) or received (requester).
    pub rnr_naks: u64,
    /// Transport timeouts.
    pub timeouts: u64,
    /// Doorbells ignored (unknown QP, QP not ready).
    pub ignored_doorbells: u64,
    /// QP-context cache misses (context fetched by DMA read).
    pub qpc_misses: u64,
    /// Doorbells whose WQE the doorbell record did not cover yet (the
    /// record must be written before the MMIO, [ref §4.3](bareverbs::reference)).
    pub stale_dbrec: u64,
}

impl Counters {
    /// Adds `o` field by field.
    pub fn add(&mut self, o: &Counters) {
        self.doorbells += o.doorbells;
        self.bf_writes += o.bf_writes;
        self.bf_chunks += o.bf_chunks;
        self.wqes += o.wqes;
        self.wqe_bytes_fetched += o.wqe_bytes_fetched;
        self.pcie_reads += o.pcie_reads;
        self.pcie_read_bytes += o.pcie_read_bytes;
        self.pcie_writes += o.pcie_writes;
        self.pcie_write_bytes += o.pcie_write_bytes;
        self.pcie_wire_bytes += o.pcie_wire_bytes;
        self.payload_tx_bytes += o.payload_tx_bytes;
        self.payload_rx_bytes += o.payload_rx_bytes;
        self.packets_tx += o.packets_tx;
        self.retransmits += o.retransmits;
        self.cqes += o.cqes;
        self.err_cqes += o.err_cqes;
        self.rnr_naks += o.rnr_naks;
        self.timeouts += o.timeouts;
        self.ignored_doorbells += o.ignored_doorbells;
        self.qpc_misses += o.qpc_misses;
        self.stale_dbrec += o.stale_dbrec;
    }
    /// Records one DMA read of `n` bytes (one MRd, completions of
    /// `read_cpl_bytes` each).
    #[inline]
    pub fn dma_read(&mut self, p: &ModelParams, n: u64) {
        self.pcie_reads += 1;
        self.pcie_read_bytes += n;
        self.pcie_wire_bytes += dma_read_wire(p, n);
    }
    /// Records one DMA write of `n` bytes (one MWr).
    #[inline]
    pub fn dma_write(&mut self, p: &ModelParams, n: u64) {
        self.pcie_writes += 1;
        self.pcie_write_bytes += n;
        self.pcie_wire_bytes += p.tlp_req_overhead as u64 + n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blog_table_deltas() {
        // perf ref §2.3 sanity table: k SGEs posted, non-inline, no BF.
        let p = ModelParams::default();
        let shape = |k: u32| WqeShape {
            wqebbs: (32 + 16 * k).div_ceil(64),
            batch: 1,
            blueflame: false,
            inline: false,
            sges: k,
            first_len: 64,
        };
        let base = latency_ns(&p, &shape(1));
        let d4 = latency_ns(&p, &shape(4)) - base;
        let d16 = latency_ns(&p, &shape(16)) - base;
        // 64 extra fetched bytes * 0.3 + 3 * 11 = 52.2 ns.
        assert!((d4 - (64.0 * 0.3 + 33.0)).abs() < 1e-9);
        assert!((d16 - (256.0 * 0.3 + 165.0)).abs() < 1e-9);
    }

    #[test]
    fn params_roundtrip_json() {
        let p = ModelParams::default();
        let s = serde_json::to_string(&p).unwrap();
        let q: ModelParams = serde_json::from_str(&s).unwrap();
        assert_eq!(p, q);
        let partial: ModelParams = serde_json::from_str(r#"{"t_base_ns": 800.0}"#).unwrap();
        assert_eq!(partial.t_base_ns, 800.0);
        assert_eq!(partial.t_rd0_ns, 350.0);
    }
}

#[cfg(test)]
mod ceil_tests {
    use super::{ceil_u64, round_u64, trunc_u64};

    #[test]
    fn ceil_u64_matches_std() {
        let xs = [
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            -1.5,
            -0.5,
            -0.0,
            0.0,
            0.25,
            1.0,
            1.0000001,
            2.5,
            600.0,
            4503599627370495.5,
            9007199254740993.0,
            18446744073709549568.0,
            18446744073709551616.0,
            1e30,
        ];
        for x in xs {
            assert_eq!(ceil_u64(x), x.ceil() as u64, "{x}");
            assert_eq!(trunc_u64(x), x as u64, "{x}");
            assert_eq!(round_u64(x), x.round() as u64, "{x}");
        }
        for x in [
            0.5,
            1.5,
            2.4999999999999996,
            0.49999999999999994,
            80.0,
            79.5,
        ] {
            assert_eq!(round_u64(x), x.round() as u64, "{x}");
        }
        let mut v = 0.0f64;
        for i in 0..100_000u64 {
            v += 0.37 + (i % 7) as f64 * 0.011;
            assert_eq!(ceil_u64(v), v.ceil() as u64, "{v}");
            assert_eq!(round_u64(v), v.round() as u64, "{v}");
            let w = v * 1e13;
            assert_eq!(ceil_u64(w), w.ceil() as u64, "{w}");
            assert_eq!(trunc_u64(w), w as u64, "{w}");
            assert_eq!(round_u64(w), w.round() as u64, "{w}");
        }
    }
}
