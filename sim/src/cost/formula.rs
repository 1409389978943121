//! The terms of perf ref §2.3's latency formula for a WQE whose delivery
//! is already decided (BlueFlame or doorbell, first gather length): the WQE
//! fetch, the payload gather, and the short idle latency built from them.
//! The closed-form model ([`super::nic`]) decides those inputs from a
//! posted WQE and evaluates its terms through these functions.

use super::ModelParams;

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

/// Whether a WQE of `wqe_bytes` whose doorbell was a BlueFlame write
/// (`bf_rung`) is delivered by that write, so never fetched: perf ref
/// §2.3's BlueFlame rule, at most `bf_max_bytes`.
#[inline]
pub(crate) fn bf_delivers(p: &ModelParams, bf_rung: bool, wqe_bytes: u64) -> bool {
    bf_rung && wqe_bytes <= p.bf_max_bytes as u64
}

/// The simulator's time to fetch one WQE of `wqebbs` WQEBBs (`wqe_bytes`
/// bytes), one WQE at a time: BlueFlame-delivered it costs its MMIO lines;
/// the first WQE of a doorbell's read costs a whole read, `t_rd`; each
/// later one of the same read only its bytes at `beta`. Over a batch this
/// sums to [`fetch_ns`]'s `t_rd(64 * WQEBBs * B)`.
#[inline]
pub(crate) fn wqe_fetch_ns(
    p: &ModelParams,
    bf_delivered: bool,
    first_in_batch: bool,
    wqebbs: u16,
    wqe_bytes: u64,
) -> f64 {
    if bf_delivered {
        p.t_mmio_line_ns * wqebbs as f64
    } else if first_in_batch {
        p.t_rd(wqe_bytes)
    } else {
        p.beta_ns_per_byte * wqe_bytes as f64
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
///
/// The short form, with `t_base` covering the remote write as in the
/// simulator's virtual time; [`super::nic::wqe_cost`] is the full one.
pub fn latency_ns(p: &ModelParams, s: &WqeShape) -> f64 {
    p.t_post_ns + p.t_db_ns + fetch_ns(p, s) + gather_ns(p, s) + p.t_base_ns
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
}
