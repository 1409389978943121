//! A resolved run configuration ([`PerfRunConfig`]: one message size of
//! one test) and the QP request perftest makes for it ([`qp_request`]).
//! A leaf beside [`super::flags`]: the backends and the engine read it,
//! [`super::rules`] builds it.

use super::flags::{Conn, PerfTest};
use bareverbs::sizing::{DeviceCaps, QpCaps, QpType, SendOps};

/// A resolved run configuration (one message size).
#[derive(Clone, Debug, serde::Serialize)]
pub struct PerfRunConfig {
    /// Test.
    pub test: PerfTest,
    /// Message bytes.
    pub size: u64,
    /// Iterations (per QP).
    pub iters: u64,
    /// QPs.
    pub qps: u32,
    /// TX depth.
    pub tx_depth: u32,
    /// WRs per doorbell.
    pub post_list: u32,
    /// CQ moderation.
    pub cq_mod: u32,
    /// Max inline bytes requested for the QP.
    pub inline_size: u32,
    /// This message size is posted inline.
    pub inline: bool,
    /// Connection.
    pub conn: Conn,
    /// Posted SGEs.
    pub sge: u32,
    /// QP max_send_sge.
    pub max_send_sge: u32,
    /// QP max_send_wr.
    pub max_send_wr: u32,
    /// Send-op set (None = classic).
    #[serde(skip)]
    pub send_ops: Option<SendOps>,
    /// Send-op set name.
    pub send_ops_name: String,
    /// Loss probability.
    pub loss: f64,
    /// Seed.
    pub seed: u64,
    /// Duration mode, seconds.
    pub duration: Option<u64>,
    /// MTU.
    pub mtu: u32,
    /// Device capabilities used for sizing.
    #[serde(skip)]
    pub caps: DeviceCaps,
    /// Completions by CQ event (`-e`): armed CQs, sleeping on the
    /// completion vector, instead of busy polling.
    pub events: bool,
}

fn sizing_type(c: Conn) -> QpType {
    c.into()
}

/// The QP request perftest would make for `cfg`.
pub fn qp_request(cfg: &PerfRunConfig) -> QpCaps {
    let q =
        QpCaps::new(sizing_type(cfg.conn)).send(cfg.max_send_wr, cfg.max_send_sge, cfg.inline_size);
    match cfg.send_ops {
        Some(o) => q.ops(o),
        None => q,
    }
}
