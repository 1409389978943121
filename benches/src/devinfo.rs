//! `bareverbs devinfo [--device sim|vfio:BDF] [--json]`: device attributes
//! like `ibv_devinfo -v`, obtained by running the real bring-up and
//! QUERY_HCA_CAP / port queries through the command interface (FACTS §7).

use bareverbs::cmd::ops::IbMtu;
use bareverbs::device::{DevInfo, LinkLayer, PortState};
use serde_json::json;

/// The device to query.
pub fn query(device: &str) -> anyhow::Result<DevInfo> {
    if device == "sim" {
        return bareverbs_sim::fw::devinfo_sim()
            .map_err(|e| anyhow::anyhow!("simulated bring-up failed: {e}"));
    }
    if let Some(bdf) = device.strip_prefix("vfio:") {
        return bareverbs_vfio::devinfo_vfio(bdf).map_err(|e| anyhow::anyhow!("{e}"));
    }
    Err(crate::args::usage_error(format!(
        "unknown device {device:?}: use `sim` or `vfio:0000:BB:DD.F`"
    )))
}

fn state(s: PortState) -> String {
    match s {
        PortState::Down => "PORT_DOWN".into(),
        PortState::Active => "PORT_ACTIVE".into(),
        PortState::Other(v) => format!("PORT_STATE_{v}"),
    }
}

/// An MTU as `ibv_devinfo` prints it: bytes and the `ibv_mtu` code,
/// `4096 (5)`; `None` for an unknown MTU.
fn mtu(m: Option<IbMtu>) -> Option<String> {
    m.map(|m| format!("{} ({})", m.bytes(), m.code()))
}

fn link(l: LinkLayer) -> String {
    match l {
        LinkLayer::InfiniBand => "InfiniBand".into(),
        LinkLayer::Ethernet => "Ethernet".into(),
        LinkLayer::Other(v) => format!("unknown({v})"),
    }
}

/// One JSON object with the `ibv_devinfo` field names.
pub fn to_json(d: &DevInfo, device: &str) -> serde_json::Value {
    json!({
        "device": device,
        "fw_ver": d.fw_ver.to_string(),
        "max_qp": d.max_qp,
        "max_qp_wr": d.max_qp_wr,
        "max_sge": d.max_sge,
        "max_cq": d.max_cq,
        "max_cqe": d.max_cqe,
        "max_mr": d.max_mr,
        "max_pd": d.max_pd,
        "max_srq": d.max_srq,
        "max_srq_wr": d.max_srq_wr,
        "ports": d.ports.iter().map(|p| json!({
            "port": p.port,
            "state": state(p.state),
            "link_layer": link(p.link_layer),
            // Bytes (numbers, for programs) and ibv_mtu codes.
            "max_mtu": p.max_mtu,
            "max_mtu_enum": p.max_ib_mtu().map(|m| m as u8),
            "active_mtu": p.active_mtu,
            "active_mtu_enum": p.active_ib_mtu().map(|m| m as u8),
        })).collect::<Vec<_>>(),
    })
}

/// Human output in the style of `ibv_devinfo -v`.
pub fn to_text(d: &DevInfo, device: &str) -> String {
    let mut s = String::new();
    s += &format!("hca_id:\t{device}\n");
    s += &format!("\tfw_ver:\t\t\t\t{}\n", d.fw_ver);
    for (k, v) in [
        ("max_qp", d.max_qp),
        ("max_qp_wr", d.max_qp_wr),
        ("max_sge", d.max_sge),
        ("max_cq", d.max_cq),
        ("max_cqe", d.max_cqe),
        ("max_mr", d.max_mr),
        ("max_pd", d.max_pd),
        ("max_srq", d.max_srq),
        ("max_srq_wr", d.max_srq_wr),
    ] {
        s += &format!(
            "\t{k}:{}{v}\n",
            "\t".repeat(if k.len() < 7 { 4 } else { 3 })
        );
    }
    for p in &d.ports {
        s += &format!("\t\tport:\t{}\n", p.port);
        s += &format!("\t\t\tstate:\t\t\t{}\n", state(p.state));
        let unknown = || "unknown".to_string();
        s += &format!(
            "\t\t\tmax_mtu:\t\t{}\n",
            mtu(p.max_ib_mtu()).unwrap_or_else(unknown)
        );
        s += &format!(
            "\t\t\tactive_mtu:\t\t{}\n",
            mtu(p.active_ib_mtu()).unwrap_or_else(unknown)
        );
        s += &format!("\t\t\tlink_layer:\t\t{}\n", link(p.link_layer));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Caps come from the simulated firmware through QUERY_HCA_CAP: the
    /// values are the typical ConnectX-5 figures FACTS §3.11 quotes
    /// (log_max_qp 18, log_max_qp_sz 15, log_max_cq_sz 22).
    #[test]
    fn sim_devinfo_reports_caps_from_commands() {
        let d = query("sim").unwrap();
        let j = to_json(&d, "sim");
        assert_eq!(j["max_qp"], 1 << 18);
        assert_eq!(j["max_qp_wr"], 1 << 15);
        assert_eq!(j["max_cqe"], (1 << 22) - 1);
        assert!(!j["ports"].as_array().unwrap().is_empty());
        // The default model port is Ethernet with a 1522-byte hardware MTU
        // (1500-byte netdev): RoCE MTU 1024, ibv_mtu code 3.
        assert_eq!(j["ports"][0]["active_mtu"], 1024);
        assert_eq!(j["ports"][0]["active_mtu_enum"], 3);
        let t = to_text(&d, "sim");
        assert!(t.contains("\tactive_mtu:\t\t1024 (3)\n"), "{t}");
    }

    /// Unknown MTUs print as `null` / `unknown`.
    #[test]
    fn unknown_mtu_prints_unknown() {
        let mut d = query("sim").unwrap();
        for p in d.ports.iter_mut() {
            p.active_mtu = None;
            p.max_mtu = None;
        }
        let j = to_json(&d, "sim");
        assert!(j["ports"][0]["active_mtu"].is_null());
        let t = to_text(&d, "sim");
        assert!(t.contains("\tactive_mtu:\t\tunknown\n"), "{t}");
        assert_eq!(mtu(Some(IbMtu::Mtu4096)).unwrap(), "4096 (5)");
    }
}
