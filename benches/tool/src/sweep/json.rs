//! The sweep's JSON ([`to_json`], envelope `"command": "sweep"`) and the
//! device limits in it ([`caps_json`]).

use super::Sweep;
use bareverbs::sizing::DeviceCaps;

/// The device limits as JSON (the `budget --caps` keys).
pub fn caps_json(c: &DeviceCaps) -> serde_json::Value {
    serde_json::json!({
        "max_sq_desc_sz": c.max_sq_desc_sz,
        "max_rq_desc_sz": c.max_rq_desc_sz,
        "max_send_wqebb": c.max_send_wqebb,
        "max_recv_wr": c.max_recv_wr,
        "max_srq_recv_wr": c.max_srq_recv_wr,
        "max_sge": c.max_sge,
        "max_cqe": c.max_cqe,
        "bf_reg_size": c.bf_reg_size,
        "cqe_version": c.cqe_version,
        "page_size": c.page_size,
        "cache_line_size": c.cache_line_size,
    })
}

/// The sweep's JSON (envelope `"command": "sweep"`; keys in
/// docs/json-commands.md).
pub fn to_json(s: &Sweep) -> serde_json::Value {
    crate::envelope::envelope(
        "sweep",
        serde_json::json!({
            "rows": s.rows,
            "measured_on": s.measured_on,
            "model": s.model_name,
            "caps": caps_json(&s.caps),
        }),
    )
}
