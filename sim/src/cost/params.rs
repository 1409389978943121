//! The parameters of the cost model (perf ref §2.3's table): every
//! parameter with its default and its source, the one-line description of
//! each that the tools print ([`ModelParams::describe`]), and the
//! per-parameter derived terms (`t_rd`, wire time, read TLP bytes).

use serde::{Deserialize, Serialize};

/// Parameters of the cost model. `Default` gives the documented values;
/// the struct is serde-friendly so a tool can load any subset of it from a
/// file (`bareverbs sweep --model FILE`); an unknown field is an error.
///
/// Every default names its source ((V) read in the primary source, (S)
/// secondary, (U) unverified placeholder, (fit) fitted, as in perf ref §0).
/// The simulator's virtual time reads the CPU, DMA, BlueFlame, wire, TLP
/// and QP-context fields; the closed-form formula ([`super::nic`]) reads
/// all but `t_cqe_ns` and `qpc_bytes`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ModelParams {
    /// CPU time to build one WQE (ns). 40 ns: UCX `UCT_RC_MLX5_IFACE_OVERHEAD`
    /// (rc_mlx5), perf ref §1a (V).
    pub t_post_ns: f64,
    /// CPU time of the 8-byte doorbell + sfence (ns). 40 ns: UCX
    /// `UCT_IB_SEND_OVERHEAD_VALUE` "db:40ns", perf ref §1a (V).
    pub t_db_ns: f64,
    /// CPU time to poll and parse one CQE (ns). 20 ns: UCX "cqe:20ns", perf ref §1a (V).
    /// (The simulator's command-path backend; the closed-form formula
    /// does not use it.)
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
    /// (The closed-form formula's; the simulator does not model an IOTLB.)
    pub t_iotlb_ns: f64,
    /// IOTLB reach in bytes (4 KiB pages). 256 KiB: pcie-bench window
    /// sweep, perf ref §1c (V). (Closed-form formula only.)
    pub iotlb_reach_bytes: u64,
    /// IOMMU page size (bytes). 4096. (Closed-form formula only.)
    pub iommu_page_bytes: u64,
    /// Model IOTLB misses at all (VFIO always runs behind an IOMMU).
    /// Default on. (Closed-form formula only.)
    pub iommu: bool,
    /// Wire + NIC pipeline, one way, InfiniBand (ns). 600 ns: UCX latency
    /// constant for EDR/HDR/NDR, perf ref §2.3 (V). The simulator's virtual
    /// time takes it for the whole one-way step, remote DMA write included;
    /// the closed-form formula adds [`t_remote_ns`](Self::t_remote_ns) (and
    /// [`roce_extra_ns`](Self::roce_extra_ns) on RoCE) on top.
    pub t_base_ns: f64,
    /// Extra for RoCE (ns). 200 ns: UCX, perf ref §2.3 (V). (Closed-form
    /// formula only, when [`roce`](Self::roce) is set.)
    pub roce_extra_ns: f64,
    /// Link is RoCE (Ethernet) rather than IB. Default off. (Closed-form
    /// formula only.)
    pub roce: bool,
    /// Remote DMA write + CQE generation (ns). 250 ns: fitted so that an
    /// inline 2-byte WRITE on IB models perftest #131's 0.93 µs, perf ref
    /// §2.3 (fit). (Closed-form formula only.)
    pub t_remote_ns: f64,
    /// Largest WQE a BlueFlame write may carry (bytes). 256: rdma-core
    /// `bf->buf_size`, UCX `UCT_IB_MLX5_MAX_BB 4`, perf ref §2.3 (V).
    pub bf_max_bytes: u32,
    /// Use BlueFlame for non-inline single posts too (rdma-core
    /// `MLX5_POST_SEND_PREFER_BF`; perf ref §2.3's formula assumes off).
    /// Default off. (Closed-form formula only.)
    pub prefer_bf: bool,
    /// QP contexts the NIC caches. 256: the low end of "a few hundred"
    /// connected QPs before NIC state misses, KALIA-ATC16 §4.2.1 (V);
    /// ScaleRPC notes ~400 on CX3 (S). perf ref §2.3.
    pub qpc_cache_qps: u32,
    /// Bytes the simulator fetches on a QP-context miss. 256: placeholder (U)
    /// (the context layout in [ref §7.11](bareverbs::reference) is 232 bytes
    /// of qpc, rounded up). (The closed-form formula reads 64 bytes on a
    /// miss, `t_rd(64)`.)
    pub qpc_bytes: u32,
    /// WC MMIO line rate (M lines/s). 175: KALIA-ATC16 §5.2.1, perf ref §1b
    /// (V). (Closed-form formula's rate bound only.)
    pub mmio_lines_per_us: f64,
    /// Useful DMA read bandwidth (MB/s). 13443: KALIA-ATC16 §5.2.1, perf
    /// ref §1b (V). (Closed-form formula's rate bound only.)
    pub dma_read_mbps: f64,
    /// Link rate (Gb/s, decimal). 100: KALIA-ATC16 §2.2 "100 Gb/s per
    /// port", perf ref §1b (V).
    pub link_gbps: f64,
    /// Per-packet header bytes on the wire. 42: IBA LRH + BTH + RETH + ICRC
    /// + VCRC. (Closed-form formula's rate bound only.)
    pub wire_header_bytes: u32,
    /// Path MTU (bytes). 4096. (Closed-form formula's rate bound only.)
    pub mtu: u32,
    /// PCIe request TLP overhead (bytes). 26: KALIA-ATC16 (P_r), perf ref §2.3 (V).
    /// File key `tlp_req_bytes`.
    #[serde(rename = "tlp_req_bytes")]
    pub tlp_req_overhead: u32,
    /// PCIe completion TLP overhead (bytes). 22: KALIA-ATC16 (P_c), perf ref §2.3 (V).
    /// File key `tlp_cpl_bytes`.
    #[serde(rename = "tlp_cpl_bytes")]
    pub tlp_cpl_overhead: u32,
    /// Read completions combine at this many bytes. 128: KALIA-ATC16 (C_rc),
    /// perf ref §2.3 (V). File key `rcb_bytes`.
    #[serde(rename = "rcb_bytes")]
    pub read_cpl_bytes: u32,
    /// Transport timer exponent for RC retries (perftest `-u`, default 14).
    /// (The `model` backend of `bareverbs perf`.)
    pub qp_timeout: u32,
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
            qpc_bytes: 256,
            mmio_lines_per_us: 175.0,
            dma_read_mbps: 13443.0,
            link_gbps: 100.0,
            wire_header_bytes: 42,
            mtu: 4096,
            tlp_req_overhead: 26,
            tlp_cpl_overhead: 22,
            read_cpl_bytes: 128,
            qp_timeout: 14,
        }
    }
}

impl ModelParams {
    /// One line per parameter of the closed-form formula: value and source
    /// (perf ref §2.3 / §1), as the tools print them in their headers.
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
            format!("TLP headers   = P_r {} B, P_c {} B, RCB {} B  KALIA-ATC16 appendix (1c)", p.tlp_req_overhead, p.tlp_cpl_overhead, p.read_cpl_bytes),
        ]
    }

    /// Time of one DMA read of `n` bytes: `t_rd0 + beta * max(0, n - 64)`.
    pub fn t_rd(&self, n: u64) -> f64 {
        self.t_rd0_ns + self.beta_ns_per_byte * n.saturating_sub(64) as f64
    }

    /// Serialisation time of `bytes` on the link (ns).
    pub fn t_wire(&self, bytes: u64) -> f64 {
        bytes as f64 * 8.0 / self.link_gbps
    }

    /// Wire + NIC base latency of the closed-form formula for the
    /// configured link: `t_base (+ roce_extra on RoCE)`.
    pub fn base_ns(&self) -> f64 {
        self.t_base_ns + if self.roce { self.roce_extra_ns } else { 0.0 }
    }

    /// RC transport timer: 4.096 us * 2^timeout (rxe / IBA), ns.
    pub fn retry_timeout_ns(&self) -> f64 {
        4096.0 * f64::powi(2.0, self.qp_timeout as i32)
    }

    /// PCIe wire bytes of one read of `n` bytes as the closed-form formula
    /// counts them: one request TLP + `ceil(n/RCB)` completions, each with
    /// its header (the simulator's count of a read); a read of 0 bytes is
    /// no read.
    pub fn read_wire_bytes(&self, n: u32) -> f64 {
        if n == 0 {
            return 0.0;
        }
        dma_read_wire(self, u64::from(n)) as f64
    }
}

/// Link bytes of one DMA read of `n` bytes: the request TLP and the
/// completions of `read_cpl_bytes` each (at least one).
#[inline]
pub(crate) fn dma_read_wire(p: &ModelParams, n: u64) -> u64 {
    let cpls = n.div_ceil(p.read_cpl_bytes as u64).max(1);
    p.tlp_req_overhead as u64 + n + cpls * p.tlp_cpl_overhead as u64
}

/// Link bytes of `n` more bytes of a DMA read already requested (a later
/// WQE of one doorbell's fetch): its completions of `read_cpl_bytes`
/// each, no request TLP.
#[inline]
pub(crate) fn dma_read_more_wire(p: &ModelParams, n: u64) -> u64 {
    n + n.div_ceil(p.read_cpl_bytes as u64) * p.tlp_cpl_overhead as u64
}

#[cfg(test)]
mod tests {
    use super::*;

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
