//! NIC-side cost model: how many bytes the NIC fetches over PCIe for a
//! posted WQE, how many PCIe transactions that takes, whether BlueFlame
//! applies, and the resulting modeled latency and message-rate bound.
//!
//! `bareverbs sweep` and the `model` backend of `bareverbs perf`
//! ([`crate::perf::model_backend`]) only talk to the [`NicModel`] trait.
//! [`PcieModel`] is its one implementation. (The simulator, `bareverbs-sim`,
//! keeps its own copy of the formula in `bareverbs_sim::cost` for the virtual
//! time of the `sim` and `fw-sim` backends; it does not go through this
//! trait.) [`PcieModel`] evaluates perf ref §2.3's formula with the
//! parameters of its table, each
//! printed with its source ([`ModelParams::describe`]) and overridable
//! from a TOML file (`--model FILE`, [`load_model`]).
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

use crate::args::UsageExt as _;
use anyhow::Context as _;
use std::path::Path;

/// Operation of a posted WQE.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
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

/// The NIC-side cost model the sweep and perf tools use.
pub trait NicModel {
    /// Short name printed in headers.
    fn name(&self) -> &str;
    /// Parameter lines (`name = value unit  [source]`) for headers.
    fn describe(&self) -> Vec<String>;
    /// Cost of one WQE of shape `w`.
    fn wqe(&self, w: &WqeShape) -> NicCost;
}

/// Parameters of [`PcieModel`] (perf ref §2.3 table). Every field has
/// a default; a TOML file may set any subset.
#[derive(Clone, Debug, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ModelParams {
    /// Build one WQE (ns).
    pub t_post_ns: f64,
    /// 8-B doorbell + sfence (ns).
    pub t_db_ns: f64,
    /// 64-B DMA read round trip (ns).
    pub t_rd0_ns: f64,
    /// Extra ns per byte beyond 64 in one read.
    pub beta_ns_per_byte: f64,
    /// Each extra gather read in flight (ns).
    pub t_sge_ns: f64,
    /// One 64-B write-combined line on the link (ns).
    pub t_mmio_line_ns: f64,
    /// IOTLB miss penalty (ns).
    pub t_iotlb_ns: f64,
    /// IOTLB reach in bytes (4 KiB pages).
    pub iotlb_reach_bytes: u64,
    /// IOMMU page size (bytes).
    pub iommu_page_bytes: u64,
    /// Model IOTLB misses at all (VFIO always runs behind an IOMMU).
    pub iommu: bool,
    /// Wire + NIC pipeline, IB (ns).
    pub t_base_ns: f64,
    /// Extra for RoCE (ns).
    pub roce_extra_ns: f64,
    /// Link is RoCE (Ethernet) rather than IB.
    pub roce: bool,
    /// Remote DMA write + CQE generation (ns).
    pub t_remote_ns: f64,
    /// Largest WQE BlueFlame can carry (bytes).
    pub bf_max_bytes: u32,
    /// Use BlueFlame for non-inline single posts too (rdma-core
    /// `MLX5_POST_SEND_PREFER_BF`; perf ref §2.3's formula assumes off).
    pub prefer_bf: bool,
    /// QP-context cache capacity (QPs).
    pub qpc_cache_qps: u32,
    /// WC MMIO line rate (M lines/s).
    pub mmio_lines_per_us: f64,
    /// Useful DMA read bandwidth (MB/s).
    pub dma_read_mbps: f64,
    /// Link rate (Gb/s).
    pub link_gbps: f64,
    /// Per-packet header bytes on the wire.
    pub wire_header_bytes: u32,
    /// Path MTU (bytes).
    pub mtu: u32,
    /// PCIe request TLP header bytes (P_r).
    pub tlp_req_bytes: u32,
    /// PCIe completion TLP header bytes (P_c).
    pub tlp_cpl_bytes: u32,
    /// Read completion combining size (C_rc).
    pub rcb_bytes: u32,
    /// Transport timer exponent for RC retries (perftest `-u`, default 14).
    pub qp_timeout: u32,
}

impl Default for ModelParams {
    fn default() -> Self {
        ModelParams {
            t_post_ns: 40.0,
            t_db_ns: 40.0,
            t_rd0_ns: 350.0,
            beta_ns_per_byte: 0.30,
            t_sge_ns: 11.0,
            t_mmio_line_ns: 5.7,
            t_iotlb_ns: 300.0,
            iotlb_reach_bytes: 256 * 1024,
            iommu_page_bytes: 4096,
            iommu: true,
            t_base_ns: 600.0,
            roce_extra_ns: 200.0,
            roce: false,
            t_remote_ns: 250.0,
            bf_max_bytes: 256,
            prefer_bf: false,
            qpc_cache_qps: 256,
            mmio_lines_per_us: 175.0,
            dma_read_mbps: 13443.0,
            link_gbps: 100.0,
            wire_header_bytes: 42,
            mtu: 4096,
            tlp_req_bytes: 26,
            tlp_cpl_bytes: 22,
            rcb_bytes: 128,
            qp_timeout: 14,
        }
    }
}

impl ModelParams {
    /// One line per parameter: value and source (perf ref §2.3 / §1).
    pub fn describe(&self) -> Vec<String> {
        let p = self;
        vec![
            format!("t_post        = {:>7.1} ns   UCX rc_mlx5 UCT_RC_MLX5_IFACE_OVERHEAD 40e-9 (perf ref §1a)", p.t_post_ns),
            format!("t_db          = {:>7.1} ns   UCX ib_iface.h 'db:40ns' (1a)", p.t_db_ns),
            format!("t_rd0         = {:>7.1} ns   UCX wqe_fetch 350ns; pcie-bench 533-653 ns (1c)", p.t_rd0_ns),
            format!("beta          = {:>7.2} ns/B pcie-bench slope 64 B -> 2 KB (1c)", p.beta_ns_per_byte),
            format!("t_sge         = {:>7.1} ns   fitted to the blog table (2.3), pcie-bench ~19 ns/64 B", p.t_sge_ns),
            format!("t_mmio_line   = {:>7.1} ns   1/175 M lines/s, KALIA-ATC16 5.2.1", p.t_mmio_line_ns),
            format!("t_iotlb       = {:>7.1} ns   pcie-bench iommu-nosp 533 -> 826 ns (1c); iommu={}", p.t_iotlb_ns, p.iommu),
            format!("iotlb_reach   = {:>7} B    pcie-bench window sweep, 4 KiB pages (1c)", p.iotlb_reach_bytes),
            format!("t_base        = {:>7.1} ns   UCX wire latency EDR/HDR/NDR 600 ns (+{} RoCE; roce={})", p.t_base_ns, p.roce_extra_ns, p.roce),
            format!("t_remote      = {:>7.1} ns   remote DMA write + CQE; fit to perftest #131 inline 0.93 us (IB)", p.t_remote_ns),
            format!("bf_max        = {:>7} B    rdma-core bf buf_size 256, UCX MAX_BB 4 (1a); prefer_bf={}", p.bf_max_bytes, p.prefer_bf),
            format!("qpc_cache     = {:>7} QPs  KALIA-ATC16 4.2.1 'a few hundred' (1c)", p.qpc_cache_qps),
            format!("mmio rate     = {:>7.1} M lines/s KALIA-ATC16 5.2.1; dma_read = {} MB/s (5.2.1)", p.mmio_lines_per_us, p.dma_read_mbps),
            format!("link          = {:>7.1} Gb/s, {} B headers/packet, MTU {} (KALIA-ATC16 2.2; IBA LRH+BTH+RETH+ICRC+VCRC)", p.link_gbps, p.wire_header_bytes, p.mtu),
            format!("TLP headers   = P_r {} B, P_c {} B, RCB {} B  KALIA-ATC16 appendix (1c)", p.tlp_req_bytes, p.tlp_cpl_bytes, p.rcb_bytes),
        ]
    }

    /// `t_rd(n) = t_rd0 + beta * max(0, n - 64)`.
    pub fn t_rd(&self, n: u32) -> f64 {
        self.t_rd0_ns + self.beta_ns_per_byte * n.saturating_sub(64) as f64
    }

    /// Wire + NIC base latency for the configured link.
    pub fn base_ns(&self) -> f64 {
        self.t_base_ns + if self.roce { self.roce_extra_ns } else { 0.0 }
    }

    /// RC transport timer: 4.096 us * 2^timeout (rxe / IBA), ns.
    pub fn retry_timeout_ns(&self) -> f64 {
        4096.0 * f64::powi(2.0, self.qp_timeout as i32)
    }

    /// PCIe wire bytes of one read of `n` bytes (one request TLP +
    /// `ceil(n/RCB)` completions, each with its header).
    pub fn read_wire_bytes(&self, n: u32) -> f64 {
        if n == 0 {
            return 0.0;
        }
        let cpls = n.div_ceil(self.rcb_bytes);
        (self.tlp_req_bytes + n + cpls * self.tlp_cpl_bytes) as f64
    }
}

/// The default model: perf ref §2.3 with [`ModelParams`].
#[derive(Clone, Debug, Default)]
pub struct PcieModel {
    /// Parameters.
    pub params: ModelParams,
}

impl NicModel for PcieModel {
    fn name(&self) -> &str {
        "pcie-formula (perf ref §2.3)"
    }

    fn describe(&self) -> Vec<String> {
        self.params.describe()
    }

    fn wqe(&self, w: &WqeShape) -> NicCost {
        let p = &self.params;
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

        // CPU side.
        let cpu_ns = match w.post_ns {
            Some(ns) => ns,
            None => p.t_post_ns + p.t_db_ns / b as f64,
        };
        // WQE delivery.
        let wqe_ns = if bf {
            p.t_mmio_line_ns * w.wqebbs as f64
        } else {
            p.t_rd(wqe_fetch)
        };
        // Payload gather (pipelined reads after the first).
        let payload_ns = if payload_fetch == 0 {
            0.0
        } else {
            p.t_rd(len1) + (k.saturating_sub(1)) as f64 * p.t_sge_ns
        };
        // Misses: IOTLB when the ring outgrows the IOTLB reach (a new page
        // every page/slot posts), QPC when more QPs than the cache holds.
        let mut miss_ns = 0.0;
        if p.iommu && !bf && w.ring_bytes > p.iotlb_reach_bytes && p.iommu_page_bytes > 0 {
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
                2.0 * p.base_ns() + p.t_rd(w.payload_bytes.max(8)) + p.t_remote_ns
            }
        };
        let terms = LatencyTerms {
            cpu_ns,
            wqe_ns,
            payload_ns,
            miss_ns,
            base_ns,
        };
        let latency_ns = cpu_ns + wqe_ns + payload_ns + miss_ns + base_ns;

        // PCIe transactions per WR.
        let pcie_reads =
            if bf { 0.0 } else { 1.0 / b as f64 } + if payload_fetch > 0 { k as f64 } else { 0.0 };
        let mut rd_wire = if bf {
            0.0
        } else {
            p.read_wire_bytes(wqe_fetch) / b as f64
        };
        if payload_fetch > 0 && k > 0 {
            let per = payload_fetch / k;
            rd_wire += (0..k)
                .map(|i| p.read_wire_bytes(per + u32::from(i < payload_fetch % k)))
                .sum::<f64>();
        }
        let (mmio_bytes, mmio_tlps) = if bf {
            (64 * w.wqebbs, w.wqebbs)
        } else {
            (8, 1)
        };

        // Message-rate bounds (Mpps).
        let cpu = 1e3 / cpu_ns.max(1e-3);
        let mmio = if bf {
            p.mmio_lines_per_us / w.wqebbs as f64
        } else {
            p.mmio_lines_per_us * b as f64
        };
        let dma_bytes = (64 * w.wqebbs + payload_fetch) as f64;
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
        NicCost {
            bf,
            bf_eligible,
            mmio_bytes,
            mmio_tlps,
            wqe_fetch_bytes: wqe_fetch,
            payload_fetch_bytes: payload_fetch,
            pcie_reads,
            pcie_read_wire_bytes: rd_wire,
            latency_ns,
            terms,
            rate_bound_mpps: bound.0,
            rate_limiter: bound.1,
        }
    }
}

/// Model parameters from a TOML file (any subset of [`ModelParams`]'s
/// fields), or the defaults.
pub fn load_model(path: Option<&Path>) -> anyhow::Result<PcieModel> {
    let params = match path {
        None => ModelParams::default(),
        Some(p) => {
            // An unreadable or malformed file is bad input (exit status 2).
            let text = std::fs::read_to_string(p)
                .with_context(|| format!("reading {}", p.display()))
                .usage()?;
            toml::from_str(&text)
                .with_context(|| format!("parsing model {}", p.display()))
                .usage()?
        }
    };
    Ok(PcieModel { params })
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
        let m = PcieModel::default();
        let l1 = m.wqe(&write(1)).latency_ns;
        for (k, want) in [(4, 52.2), (16, 241.8), (32, 494.6)] {
            let d = m.wqe(&write(k)).latency_ns - l1;
            assert!((d - want).abs() < 1e-6, "k={k}: {d} vs {want}");
        }
    }

    #[test]
    fn blueflame_rule() {
        let m = PcieModel::default();
        // Inline WRITE, 2 B payload: ds = 2 + ceil(6/16) = 3 → 48 B → BF.
        let mut w = write(0);
        w.inline = true;
        w.ds = 3;
        w.wqebbs = 1;
        w.payload_bytes = 2;
        let c = m.wqe(&w);
        assert!(c.bf && c.bf_eligible);
        assert_eq!(c.wqe_fetch_bytes, 0);
        assert_eq!(c.mmio_bytes, 64);
        assert_eq!(c.pcie_reads, 0.0);
        // Same WQE in a batch of 16: no BF, one 16*64 = 1024 B fetch.
        w.batch = 16;
        let c = m.wqe(&w);
        assert!(!c.bf && c.bf_eligible);
        assert_eq!(c.wqe_fetch_bytes, 1024);
        // 16-SGE non-inline: never BF (not inline, and 288 B > 256).
        let c = m.wqe(&write(16));
        assert!(!c.bf_eligible);
        assert_eq!(c.pcie_reads, 17.0);
    }

    #[test]
    fn toml_override() {
        let p: ModelParams = toml::from_str("t_rd0_ns = 600.0\nroce = true\n").unwrap();
        assert_eq!(p.t_rd0_ns, 600.0);
        assert!(p.roce);
        assert_eq!(p.t_sge_ns, 11.0);
        assert!(toml::from_str::<ModelParams>("bogus = 1").is_err());
    }
}
