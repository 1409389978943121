//! Terms of the cost model precomputed for the simulator's fused fast
//! path: those of the parameters alone ([`FastCosts`]) and those of the
//! last payload length ([`LenCosts`]), each the exact value the general
//! path computes per operation.

use super::params::dma_read_wire;
use super::round::{ceil_u64, round_u64, trunc_u64};
use super::ModelParams;

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
    /// and a QP context ([`Counters::dma_read`](super::Counters::dma_read)); `None` when completions
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
