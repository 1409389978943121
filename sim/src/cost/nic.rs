//! The closed-form NIC cost of one posted WQE (perf ref §2.3), the model
//! `bareverbs sweep` and the `model` backend of `bareverbs perf` print:
//! how many bytes the NIC fetches over PCIe, in how many transactions,
//! whether BlueFlame applies, the modeled latency with its terms, and the
//! message-rate bound.
//!
//! ```text
//! L = t_post + t_db
//!   + (bf ? t_mmio_line * WQEBBs : t_rd(64 * WQEBBs * B))   WQE fetch
//!   + (inline ? 0 : t_rd(len_1) + (k-1) * t_sge)            payload gather
//!   + miss_iotlb * t_iotlb + miss_qpc * t_rd(64)
//!   + t_base (+ roce_extra) + t_remote
//! t_rd(n) = t_rd0 + beta * max(0, n - 64)
//! bf = bf_reg_size > 0 && B == 1 && (inline || prefer_bf) && W <= bf_max
//! ```
//!
//! The WQE-fetch and gather terms are [`super::fetch_ns`] and
//! [`super::gather_ns`]; this module decides their inputs (BlueFlame,
//! `len_1`) from the posted WQE and adds the misses, the base and the
//! rate bound.

use super::{fetch_ns, gather_ns, ModelParams};

/// Operation of a posted WQE.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[allow(clippy::exhaustive_enums)] // closed: the cost model's WQE shapes; every consumer must cost each one
pub enum WqeOp {
    /// RDMA WRITE (ctrl + raddr + data/inline).
    Write,
    /// SEND (ctrl + data/inline).
    Send,
    /// RDMA READ (ctrl + raddr + data; the NIC writes the payload).
    Read,
    /// Atomic (ctrl + raddr + atomic + data; 8 B).
    Atomic,
}

/// The shape of one posted WQE and how it is rung: what the model needs.
/// (Unlike [`super::WqeShape`], BlueFlame and the gather lengths are not
/// decided yet: [`wqe_cost`] decides them.)
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct WqeShape {
    /// Operation.
    pub op: WqeOp,
    /// DS count (16-B units) of the posted WQE (from the ctrl segment).
    pub ds: u32,
    /// 64-B WQEBBs the WQE occupies, `ceil(16*ds/64)`.
    pub wqebbs: u32,
    /// Data segments posted (k); 0 for inline.
    pub posted_sge: u32,
    /// Payload carried inline in the WQE.
    pub inline: bool,
    /// Message payload bytes.
    pub payload_bytes: u32,
    /// WRs per doorbell (B).
    pub batch: u32,
    /// SQ ring bytes (footprint F).
    pub ring_bytes: u64,
    /// Ring slot (stride) bytes (S).
    pub slot_bytes: u32,
    /// Active QPs (Q).
    pub active_qps: u32,
    /// Measured CPU post cost in ns per WR (replaces `t_post + t_db/B`
    /// when present).
    pub post_ns: Option<f64>,
}

impl WqeShape {
    /// Posted WQE bytes, `16 * ds`.
    pub fn wqe_bytes(&self) -> u32 {
        16 * self.ds
    }
}

/// What the NIC side costs for one WQE, per the model.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct NicCost {
    /// Posted through BlueFlame (WQE pushed by MMIO; no WQE fetch).
    pub bf: bool,
    /// BlueFlame would be allowed for a single-WR post of this WQE.
    pub bf_eligible: bool,
    /// CPU→NIC MMIO bytes per doorbell (64 × WQEBBs for BF, 8 otherwise).
    pub mmio_bytes: u32,
    /// CPU→NIC MWr TLPs per doorbell.
    pub mmio_tlps: u32,
    /// Bytes the NIC DMA-reads to fetch the WQE (64 × WQEBBs × B; 0 for BF).
    pub wqe_fetch_bytes: u32,
    /// Bytes the NIC DMA-reads to gather the payload (0 inline).
    pub payload_fetch_bytes: u32,
    /// NIC MRd requests per WR: WQE fetch (amortised over the batch) +
    /// one per gathered SGE.
    pub pcie_reads: f64,
    /// PCIe wire bytes of those reads incl. TLP headers (P_r, P_c, C_rc).
    pub pcie_read_wire_bytes: f64,
    /// Modeled one-way latency (ns) of an idle ping-pong step.
    pub latency_ns: f64,
    /// Latency terms: post+db, WQE, payload, misses, base.
    pub terms: LatencyTerms,
    /// Message-rate bound (Mpps) from CPU, MMIO, DMA and link limits.
    pub rate_bound_mpps: f64,
    /// Which bound wins (`cpu`, `mmio`, `dma`, `link`).
    pub rate_limiter: &'static str,
}

/// Breakdown of [`NicCost::latency_ns`].
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct LatencyTerms {
    /// CPU: build + doorbell.
    pub cpu_ns: f64,
    /// WQE delivery: MMIO lines (BF) or DMA fetch.
    pub wqe_ns: f64,
    /// Payload gather reads.
    pub payload_ns: f64,
    /// Cache misses (IOTLB, QPC), amortised.
    pub miss_ns: f64,
    /// Wire + NIC pipeline + remote side.
    pub base_ns: f64,
}

/// What [`wqe_cost`] decides about a posted WQE before costing it.
struct Delivery {
    /// WRs per doorbell, at least 1 (B).
    b: u32,
    /// BlueFlame allowed for a single-WR post.
    bf_eligible: bool,
    /// Delivered by BlueFlame.
    bf: bool,
    /// Data segments gathered (0 inline).
    k: u32,
    /// Bytes of the WQE fetch (0 for BlueFlame).
    wqe_fetch: u32,
    /// Bytes of the payload gather.
    payload_fetch: u32,
    /// Bytes of the first gather read.
    len1: u32,
}

impl Delivery {
    /// perf ref §2.3's BlueFlame rule and the fetch and gather sizes.
    fn of(p: &ModelParams, w: &WqeShape) -> Self {
        let b = w.batch.max(1);
        let wqe_bytes = w.wqe_bytes();
        let bf_eligible = p.bf_max_bytes > 0
            && (w.inline || p.prefer_bf)
            && w.ds > 1
            && wqe_bytes <= p.bf_max_bytes;
        let bf = bf_eligible && b == 1;
        let k = if w.inline { 0 } else { w.posted_sge };
        let wqe_fetch = if bf { 0 } else { 64 * w.wqebbs * b };
        // READ/atomic: the local NIC writes the payload, it gathers nothing.
        let gathers = matches!(w.op, WqeOp::Write | WqeOp::Send);
        let payload_fetch = if w.inline || !gathers {
            0
        } else {
            w.payload_bytes
        };
        let len1 = if k == 0 {
            0
        } else {
            w.payload_bytes.div_ceil(k).max(1)
        };
        Delivery {
            b,
            bf_eligible,
            bf,
            k,
            wqe_fetch,
            payload_fetch,
            len1,
        }
    }

    /// The decided shape [`fetch_ns`] and [`gather_ns`] cost. A payload
    /// posted without data segments still pays the first read (`t_rd(0)`):
    /// `sges` is at least 1.
    fn shape(&self, w: &WqeShape) -> super::WqeShape {
        super::WqeShape {
            wqebbs: w.wqebbs,
            batch: self.b,
            blueflame: self.bf,
            inline: w.inline,
            sges: self.k.max(1),
            first_len: self.len1,
        }
    }
}

/// The model's cost of one WQE of shape `w` under parameters `p`.
pub fn wqe_cost(p: &ModelParams, w: &WqeShape) -> NicCost {
    let d = Delivery::of(p, w);
    let terms = latency_terms(p, w, &d);
    let latency_ns = terms.cpu_ns + terms.wqe_ns + terms.payload_ns + terms.miss_ns + terms.base_ns;
    let (pcie_reads, rd_wire) = pcie_reads(p, &d);
    let (mmio_bytes, mmio_tlps) = if d.bf {
        (64 * w.wqebbs, w.wqebbs)
    } else {
        (8, 1)
    };
    let (rate_bound_mpps, rate_limiter) = rate_bound(p, w, &d, terms.cpu_ns);
    NicCost {
        bf: d.bf,
        bf_eligible: d.bf_eligible,
        mmio_bytes,
        mmio_tlps,
        wqe_fetch_bytes: d.wqe_fetch,
        payload_fetch_bytes: d.payload_fetch,
        pcie_reads,
        pcie_read_wire_bytes: rd_wire,
        latency_ns,
        terms,
        rate_bound_mpps,
        rate_limiter,
    }
}

/// The latency terms: CPU, WQE delivery, payload gather, misses, base.
fn latency_terms(p: &ModelParams, w: &WqeShape, d: &Delivery) -> LatencyTerms {
    let b = d.b;
    // CPU side.
    let cpu_ns = match w.post_ns {
        Some(ns) => ns,
        None => p.t_post_ns + p.t_db_ns / b as f64,
    };
    // WQE delivery.
    let wqe_ns = fetch_ns(p, &d.shape(w));
    // Payload gather (pipelined reads after the first).
    let payload_ns = if d.payload_fetch == 0 {
        0.0
    } else {
        gather_ns(p, &d.shape(w))
    };
    // Misses: IOTLB when the ring outgrows the IOTLB reach (a new page
    // every page/slot posts), QPC when more QPs than the cache holds.
    let mut miss_ns = 0.0;
    if p.iommu && !d.bf && w.ring_bytes > p.iotlb_reach_bytes && p.iommu_page_bytes > 0 {
        miss_ns += p.t_iotlb_ns * (w.slot_bytes as f64 / p.iommu_page_bytes as f64).min(1.0);
    }
    if w.active_qps > p.qpc_cache_qps && w.active_qps > 0 {
        let miss = 1.0 - p.qpc_cache_qps as f64 / w.active_qps as f64;
        miss_ns += miss * p.t_rd(64);
    }
    let base_ns = match w.op {
        WqeOp::Write | WqeOp::Send => p.base_ns() + p.t_remote_ns,
        // Request out, remote NIC reads memory, response back, local write.
        WqeOp::Read | WqeOp::Atomic => {
            2.0 * p.base_ns() + p.t_rd(w.payload_bytes.max(8).into()) + p.t_remote_ns
        }
    };
    LatencyTerms {
        cpu_ns,
        wqe_ns,
        payload_ns,
        miss_ns,
        base_ns,
    }
}

/// PCIe read requests per WR and their wire bytes.
fn pcie_reads(p: &ModelParams, d: &Delivery) -> (f64, f64) {
    let (b, k, payload_fetch) = (d.b, d.k, d.payload_fetch);
    let pcie_reads =
        if d.bf { 0.0 } else { 1.0 / b as f64 } + if payload_fetch > 0 { k as f64 } else { 0.0 };
    let mut rd_wire = if d.bf {
        0.0
    } else {
        p.read_wire_bytes(d.wqe_fetch) / b as f64
    };
    if payload_fetch > 0 && k > 0 {
        let per = payload_fetch / k;
        rd_wire += (0..k)
            .map(|i| p.read_wire_bytes(per + u32::from(i < payload_fetch % k)))
            .sum::<f64>();
    }
    (pcie_reads, rd_wire)
}

/// Message-rate bound (Mpps) and which limit sets it: CPU, MMIO, DMA or
/// link.
fn rate_bound(p: &ModelParams, w: &WqeShape, d: &Delivery, cpu_ns: f64) -> (f64, &'static str) {
    let cpu = 1e3 / cpu_ns.max(1e-3);
    let mmio = if d.bf {
        p.mmio_lines_per_us / w.wqebbs as f64
    } else {
        p.mmio_lines_per_us * d.b as f64
    };
    let dma_bytes = (64 * w.wqebbs + d.payload_fetch) as f64;
    let dma = p.dma_read_mbps / dma_bytes.max(1.0);
    let pkts = w.payload_bytes.div_ceil(p.mtu.max(1)).max(1);
    let wire = (w.payload_bytes + pkts * p.wire_header_bytes) as f64;
    let link = p.link_gbps * 1e3 / 8.0 / wire;
    let mut bound = (cpu, "cpu");
    for (v, n) in [(mmio, "mmio"), (dma, "dma"), (link, "link")] {
        if v < bound.0 {
            bound = (v, n);
        }
    }
    bound
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(k: u32) -> WqeShape {
        let ds = 2 + k;
        WqeShape {
            op: WqeOp::Write,
            ds,
            wqebbs: (16 * ds).div_ceil(64),
            posted_sge: k,
            inline: false,
            payload_bytes: 64,
            batch: 1,
            ring_bytes: 64 * 1024,
            slot_bytes: 64,
            active_qps: 1,
            post_ns: None,
        }
    }

    /// perf ref §2.3 sanity table: model deltas relative to k = 1 are
    /// 0 / 52 / 242 / 495 ns for k = 1 / 4 / 16 / 32 (t_sge = 11, beta 0.3):
    /// k=4: fetch 128 B vs 64 → +64*0.3 = 19.2, + 3*11 = 33 → 52.2.
    /// k=16: W = 288 → 5 BBs = 320 B → +256*0.3 = 76.8, + 15*11 = 165 → 241.8.
    /// k=32: W = 544 → 9 BBs = 576 B → +512*0.3 = 153.6, + 31*11 = 341 → 494.6.
    /// (Ring and payload held constant; payload 64 B so len_1 <= 64 and the
    /// first gather read costs t_rd0 for every k.)
    #[test]
    fn blog_deltas() {
        let p = ModelParams::default();
        let l1 = wqe_cost(&p, &write(1)).latency_ns;
        for (k, want) in [(4, 52.2), (16, 241.8), (32, 494.6)] {
            let d = wqe_cost(&p, &write(k)).latency_ns - l1;
            assert!((d - want).abs() < 1e-6, "k={k}: {d} vs {want}");
        }
    }

    #[test]
    fn blueflame_rule() {
        let p = ModelParams::default();
        // Inline WRITE, 2 B payload: ds = 2 + ceil(6/16) = 3 → 48 B → BF.
        let mut w = write(0);
        w.inline = true;
        w.ds = 3;
        w.wqebbs = 1;
        w.payload_bytes = 2;
        let c = wqe_cost(&p, &w);
        assert!(c.bf && c.bf_eligible);
        assert_eq!(c.wqe_fetch_bytes, 0);
        assert_eq!(c.mmio_bytes, 64);
        assert_eq!(c.pcie_reads, 0.0);
        // Same WQE in a batch of 16: no BF, one 16*64 = 1024 B fetch.
        w.batch = 16;
        let c = wqe_cost(&p, &w);
        assert!(!c.bf && c.bf_eligible);
        assert_eq!(c.wqe_fetch_bytes, 1024);
        // 16-SGE non-inline: never BF (not inline, and 288 B > 256).
        let c = wqe_cost(&p, &write(16));
        assert!(!c.bf_eligible);
        assert_eq!(c.pcie_reads, 17.0);
    }
}
