//! The tool's side of the NIC cost model: the [`NicModel`] trait that
//! `bareverbs sweep` and the `model` backend of `bareverbs perf`
//! ([`crate::perf::model_backend`]) talk to, its one implementation
//! [`PcieModel`], and [`load_model`], which reads parameter overrides from
//! a TOML file (`--model FILE`).
//!
//! The model itself — every parameter with its default and source
//! ([`ModelParams`], [`ModelParams::describe`]), perf ref §2.3's formula
//! (`t_rd`, WQE fetch, payload gather, the BlueFlame rule, the latency
//! terms, the message-rate bound) and the types it speaks in ([`WqeShape`],
//! [`WqeOp`], [`NicCost`], [`LatencyTerms`]) — is the simulator's,
//! [`bareverbs_sim::cost`]; the same parameters drive the virtual time of
//! the `sim` and `fw-sim` backends.

use crate::args::UsageExt as _;
use anyhow::Context as _;
use std::path::Path;

pub use bareverbs_sim::cost::nic::{LatencyTerms, NicCost, WqeOp, WqeShape};
pub use bareverbs_sim::cost::ModelParams;

/// The NIC-side cost model the sweep and perf tools use.
pub trait NicModel {
    /// Short name printed in headers.
    fn name(&self) -> &str;
    /// Parameter lines (`name = value unit  [source]`) for headers.
    fn describe(&self) -> Vec<String>;
    /// Cost of one WQE of shape `w`.
    fn wqe(&self, w: &WqeShape) -> NicCost;
}

/// The default model: perf ref §2.3 with [`ModelParams`]
/// ([`bareverbs_sim::cost::nic::wqe_cost`]).
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
        bareverbs_sim::cost::nic::wqe_cost(&self.params, w)
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

    #[test]
    fn toml_override() {
        let p: ModelParams = toml::from_str("t_rd0_ns = 600.0\nroce = true\n").unwrap();
        assert_eq!(p.t_rd0_ns, 600.0);
        assert!(p.roce);
        assert_eq!(p.t_sge_ns, 11.0);
        assert!(toml::from_str::<ModelParams>("bogus = 1").is_err());
    }

    /// The tool's file keys for the TLP fields are `tlp_req_bytes`,
    /// `tlp_cpl_bytes` and `rcb_bytes`.
    #[test]
    fn toml_tlp_keys() {
        let text = "tlp_req_bytes = 24\ntlp_cpl_bytes = 20\nrcb_bytes = 64\n";
        let p: ModelParams = toml::from_str(text).unwrap();
        assert_eq!(
            (p.tlp_req_overhead, p.tlp_cpl_overhead, p.read_cpl_bytes),
            (24, 20, 64)
        );
    }

    /// The tool's model is the simulator's formula: blog-table delta of
    /// perf ref §2.3 through the trait (k = 4 vs k = 1: 52.2 ns).
    #[test]
    fn trait_calls_the_sims_formula() {
        let m = PcieModel::default();
        let w = |k: u32| WqeShape {
            op: WqeOp::Write,
            ds: 2 + k,
            wqebbs: (16 * (2 + k)).div_ceil(64),
            posted_sge: k,
            inline: false,
            payload_bytes: 64,
            batch: 1,
            ring_bytes: 64 * 1024,
            slot_bytes: 64,
            active_qps: 1,
            post_ns: None,
        };
        let d = m.wqe(&w(4)).latency_ns - m.wqe(&w(1)).latency_ns;
        assert!((d - 52.2).abs() < 1e-6, "{d}");
        assert_eq!(
            m.wqe(&w(4)),
            bareverbs_sim::cost::nic::wqe_cost(&m.params, &w(4))
        );
        assert_eq!(m.describe(), m.params.describe());
    }
}
