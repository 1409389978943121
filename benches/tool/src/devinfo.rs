//! `bareverbs devinfo [-d DEV] [-i PORT] [-l] [-v] [--json]`: device
//! attributes as `ibv_devinfo` prints them (rdma-core
//! `libibverbs/examples/devinfo.c`), obtained by running the real bring-up
//! and QUERY_HCA_CAP, QUERY_ADAPTER, vport-context and port queries through
//! the command interface ([ref §7](bareverbs::reference)), with the values the mlx5 kernel
//! driver derives from them.
//!
//! Without `-v` it prints the lines `ibv_devinfo` always prints: `hca_id`,
//! `transport`, `fw_ver`, `node_guid`, `sys_image_guid`, `vendor_id`,
//! `vendor_part_id`, `hw_ver`, `board_id` (when the device names one),
//! `phys_port_cnt`, and per port `state`, `max_mtu`, `active_mtu`,
//! `sm_lid`, `port_lid`, `port_lmc`, `link_layer`. `-v` adds the device
//! and port attributes of `ibv_devinfo -v` that the capabilities and
//! queries determine (`max_mr_size` … `max_srq_sge`, `max_msg_sz`, and on
//! InfiniBand ports the vport context's counters, SL, timeouts and
//! physical state); the rest of `ibv_devinfo -v` (capability flags, ODP,
//! TSO, RSS, GIDs, widths, speeds) needs data bareverbs does not query and
//! is not printed. A value the device did not report prints as
//! `unknown` (JSON `null`).

use std::fmt::Write as _;

use bareverbs::cmd::ops::IbMtu;
use bareverbs::device::{DevInfo, LinkLayer, PortInfo, PortState};
use serde_json::{json, Value};

use crate::args::usage_error;
use crate::device_arg::Device;
use bareverbs::error::Chain;

/// Arguments of `bareverbs devinfo` (`ibv_devinfo`'s options).
#[derive(clap::Args, Debug, Clone)]
pub struct DevinfoArgs {
    /// The device (`ibv_devinfo -d`): `sim` (default; the simulated
    /// ConnectX), `fw-sim` (the same device) or `vfio:DDDD:BB:DD.F`.
    #[arg(
        short = 'd',
        long = "device",
        visible_alias = "ib-dev",
        default_value = "sim"
    )]
    pub device: String,
    /// Only this port (`ibv_devinfo -i`); a port the device does not have
    /// is refused.
    #[arg(short = 'i', long = "ib-port", value_parser = crate::args::positive_u32)]
    pub port: Option<u32>,
    /// List the devices (`ibv_devinfo -l`) and exit.
    #[arg(short = 'l', long = "list")]
    pub list: bool,
    /// Print every attribute bareverbs knows (`ibv_devinfo -v`).
    #[arg(short = 'v', long = "verbose")]
    pub verbose: bool,
    /// JSON on stdout instead of text (every attribute, as with -v).
    #[arg(long)]
    pub json: bool,
    /// Also run the loopback self-test (as `bareverbs selftest`).
    #[arg(long)]
    pub selftest: bool,
    /// With --selftest: ring doorbells through BlueFlame.
    #[arg(long)]
    pub blueflame: bool,
}

impl DevinfoArgs {
    /// The parsed `--device` (an unknown name is bad input).
    pub fn device(&self) -> anyhow::Result<Device> {
        crate::device_arg::parse_device(&self.device)
    }
}

/// Queries `device` (`sim`, `fw-sim` or `vfio:BDF`; `sim` and `fw-sim`
/// are the same simulated device, queried through its firmware).
pub fn query(device: &str) -> anyhow::Result<DevInfo> {
    query_device(&crate::device_arg::parse_device(device)?)
}

/// [`query`] on a parsed device.
pub fn query_device(device: &Device) -> anyhow::Result<DevInfo> {
    device.require_device("devinfo")?;
    match device {
        Device::Sim | Device::FwSim => bareverbs_sim::fw::devinfo_sim()
            .map_err(|e| anyhow::anyhow!("simulated bring-up failed: {}", Chain::new(&e))),
        Device::Vfio(bdf) => {
            bareverbs_vfio::devinfo_vfio(bdf).map_err(|e| anyhow::anyhow!("{}", Chain::new(&e)))
        }
        Device::Model => unreachable!("refused by require_device"),
    }
}

/// The devices `-l` lists: `sim` and every PCI function bound to
/// `vfio-pci` whose vendor is Mellanox (0x15b3), as `vfio:BDF`.
pub fn list_devices() -> Vec<String> {
    let mut out = vec!["sim".to_string()];
    let mut vfio = Vec::new();
    if let Ok(rd) = std::fs::read_dir("/sys/bus/pci/drivers/vfio-pci") {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if !name.contains(':') {
                continue;
            }
            let vendor = std::fs::read_to_string(format!("/sys/bus/pci/devices/{name}/vendor"))
                .unwrap_or_default();
            if vendor.trim() == "0x15b3" {
                vfio.push(format!("vfio:{name}"));
            }
        }
    }
    vfio.sort();
    out.extend(vfio);
    out
}

/// `ibv_devinfo -l`: `N HCA(s) found:`, a tab and a name per line, a
/// blank line.
pub fn list_text(names: &[String]) -> String {
    let n = names.len();
    let mut s = format!("{n} HCA{} found:\n", if n != 1 { "s" } else { "" });
    for d in names {
        let _ = writeln!(s, "\t{d}");
    }
    s.push('\n');
    s
}

/// Keeps only port `port` (1-based), refusing a port the device does not
/// have as `ibv_devinfo` does ("Invalid port requested for device"), as
/// bad input.
pub fn select_port(d: &mut DevInfo, device: &Device, port: Option<u32>) -> anyhow::Result<()> {
    let Some(p) = port else { return Ok(()) };
    let n = d.phys_port_cnt;
    if p == 0 || p > n as u32 || !d.ports.iter().any(|q| q.port as u32 == p) {
        return Err(usage_error(format!(
            "Invalid port requested for device: -i {p}, but {device} has {n} port{}",
            if n == 1 { "" } else { "s" }
        )));
    }
    d.ports.retain(|q| q.port as u32 == p);
    Ok(())
}

/// `ibv_devinfo`'s port state text (`port_state_str`).
fn state_str(s: PortState) -> &'static str {
    match s {
        PortState::Down => "PORT_DOWN",
        PortState::Init => "PORT_INIT",
        PortState::Armed => "PORT_ARMED",
        PortState::Active => "PORT_ACTIVE",
        PortState::Other(_) | _ => "invalid state",
    }
}

/// An MTU as `ibv_devinfo` prints it: bytes and the `ibv_mtu` code,
/// `4096 (5)`; `None` for an unknown MTU.
fn mtu(m: Option<IbMtu>) -> Option<String> {
    m.map(|m| format!("{} ({})", m.bytes(), m.code()))
}

/// `ibv_devinfo`'s link layer text (`link_layer_str`).
fn link_str(l: LinkLayer) -> &'static str {
    match l {
        LinkLayer::InfiniBand => "InfiniBand",
        LinkLayer::Ethernet => "Ethernet",
        LinkLayer::Other(_) | _ => "Unknown",
    }
}

/// `ibv_devinfo`'s physical state text (`port_phy_state_str`).
fn phys_state_str(v: u8) -> &'static str {
    match v {
        1 => "SLEEP",
        2 => "POLLING",
        3 => "DISABLED",
        4 => "PORT_CONFIGURATION TRAINNING",
        5 => "LINK_UP",
        6 => "LINK_ERROR_RECOVERY",
        7 => "PHY TEST",
        _ => "invalid physical state",
    }
}

/// A GUID as `ibv_devinfo` prints it: four groups of four hex digits.
pub fn guid_str(g: u64) -> String {
    format!(
        "{:04x}:{:04x}:{:04x}:{:04x}",
        (g >> 48) & 0xffff,
        (g >> 32) & 0xffff,
        (g >> 16) & 0xffff,
        g & 0xffff
    )
}

/// mlx5 devices are InfiniBand-transport devices (`IBV_TRANSPORT_IB`, 0)
/// on InfiniBand and Ethernet (RoCE) ports alike.
const TRANSPORT: (&str, u8) = ("InfiniBand", 0);

fn or_unknown<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(|| "unknown".to_string(), |v| v.to_string())
}

/// One JSON object with `ibv_devinfo`'s field names (the keys of
/// `docs/json-commands.md`, section `devinfo`), without the envelope.
pub fn to_json(d: &DevInfo, device: &Device) -> Value {
    let ports: Vec<Value> = d.ports.iter().map(port_json).collect();
    json!({
        "device": device.name(),
        "hca_id": device.name(),
        "transport": TRANSPORT.0,
        "transport_enum": TRANSPORT.1,
        "fw_ver": d.fw_ver.to_string(),
        "node_guid": d.node_guid.map(guid_str),
        "sys_image_guid": d.sys_image_guid.map(guid_str),
        "vendor_id": d.vendor_id,
        "vendor_part_id": d.vendor_part_id,
        "hw_ver": d.hw_ver,
        "board_id": d.adapter.as_ref().and_then(|a| a.board_id()),
        "phys_port_cnt": d.phys_port_cnt,
        "max_mr_size": d.max_mr_size,
        "page_size_cap": d.page_size_cap,
        "max_qp": d.max_qp,
        "max_qp_wr": d.max_qp_wr,
        "max_sge": d.max_sge,
        "max_sge_rd": d.max_sge_rd,
        "max_cq": d.max_cq,
        "max_cqe": d.max_cqe,
        "max_mr": d.max_mr,
        "max_pd": d.max_pd,
        "max_qp_rd_atom": d.max_qp_rd_atom,
        "max_res_rd_atom": d.max_res_rd_atom,
        "max_qp_init_rd_atom": d.max_qp_init_rd_atom,
        "max_srq": d.max_srq,
        "max_srq_wr": d.max_srq_wr,
        "max_srq_sge": d.max_srq_sge,
        "ports": ports,
    })
}

fn port_json(p: &PortInfo) -> Value {
    json!({
        "port": p.port,
        "state": state_str(p.state),
        "state_enum": p.state.code(),
        // Bytes (numbers, for programs) and ibv_mtu codes.
        "max_mtu": p.max_mtu,
        "max_mtu_enum": p.max_ib_mtu().map(IbMtu::code),
        "active_mtu": p.active_mtu,
        "active_mtu_enum": p.active_ib_mtu().map(IbMtu::code),
        "sm_lid": p.sm_lid,
        "port_lid": p.lid,
        "port_lmc": p.lmc,
        "link_layer": link_str(p.link_layer),
        "max_msg_sz": p.max_msg_sz,
        "ib": p.ib.map(|ib| json!({
            "bad_pkey_cntr": ib.bad_pkey_cntr,
            "qkey_viol_cntr": ib.qkey_viol_cntr,
            "sm_sl": ib.sm_sl,
            "subnet_timeout": ib.subnet_timeout,
            "init_type_reply": ib.init_type_reply,
            "phys_state": phys_state_str(ib.phys_state),
            "phys_state_enum": ib.phys_state,
        })),
    })
}

/// The text `ibv_devinfo` (with `verbose`: `ibv_devinfo -v`) prints for
/// this device, line for line in its format (`print_hca_cap`).
pub fn to_text(d: &DevInfo, device: &Device, verbose: bool) -> String {
    let mut s = String::new();
    let w = &mut s;
    let _ = writeln!(w, "hca_id:\t{device}");
    let _ = writeln!(w, "\ttransport:\t\t\t{} ({})", TRANSPORT.0, TRANSPORT.1);
    let _ = writeln!(w, "\tfw_ver:\t\t\t\t{}", d.fw_ver);
    let _ = writeln!(
        w,
        "\tnode_guid:\t\t\t{}",
        or_unknown(d.node_guid.map(guid_str))
    );
    let _ = writeln!(
        w,
        "\tsys_image_guid:\t\t\t{}",
        or_unknown(d.sys_image_guid.map(guid_str))
    );
    let _ = writeln!(
        w,
        "\tvendor_id:\t\t\t{}",
        or_unknown(d.vendor_id.map(|v| format!("0x{v:04x}")))
    );
    let _ = writeln!(w, "\tvendor_part_id:\t\t\t{}", or_unknown(d.vendor_part_id));
    let _ = writeln!(
        w,
        "\thw_ver:\t\t\t\t{}",
        or_unknown(d.hw_ver.map(|v| format!("0x{v:X}")))
    );
    // ibv_devinfo prints board_id only when the device names one.
    if let Some(b) = d.adapter.as_ref().and_then(|a| a.board_id()) {
        let _ = writeln!(w, "\tboard_id:\t\t\t{b}");
    }
    let _ = writeln!(w, "\tphys_port_cnt:\t\t\t{}", d.phys_port_cnt);
    if verbose {
        let _ = writeln!(w, "\tmax_mr_size:\t\t\t0x{:x}", d.max_mr_size);
        let _ = writeln!(
            w,
            "\tpage_size_cap:\t\t\t{}",
            or_unknown(d.page_size_cap.map(|v| format!("0x{v:x}")))
        );
        let _ = writeln!(w, "\tmax_qp:\t\t\t\t{}", d.max_qp);
        let _ = writeln!(w, "\tmax_qp_wr:\t\t\t{}", d.max_qp_wr);
        let _ = writeln!(w, "\tmax_sge:\t\t\t{}", d.max_sge);
        let _ = writeln!(w, "\tmax_sge_rd:\t\t\t{}", d.max_sge_rd);
        let _ = writeln!(w, "\tmax_cq:\t\t\t\t{}", d.max_cq);
        let _ = writeln!(w, "\tmax_cqe:\t\t\t{}", d.max_cqe);
        let _ = writeln!(w, "\tmax_mr:\t\t\t\t{}", d.max_mr);
        let _ = writeln!(w, "\tmax_pd:\t\t\t\t{}", d.max_pd);
        let _ = writeln!(w, "\tmax_qp_rd_atom:\t\t\t{}", d.max_qp_rd_atom);
        let _ = writeln!(w, "\tmax_res_rd_atom:\t\t{}", d.max_res_rd_atom);
        let _ = writeln!(w, "\tmax_qp_init_rd_atom:\t\t{}", d.max_qp_init_rd_atom);
        let _ = writeln!(w, "\tmax_srq:\t\t\t{}", d.max_srq);
        if d.max_srq != 0 {
            let _ = writeln!(w, "\tmax_srq_wr:\t\t\t{}", d.max_srq_wr);
            let _ = writeln!(w, "\tmax_srq_sge:\t\t\t{}", d.max_srq_sge);
        }
    }
    for p in &d.ports {
        let _ = writeln!(w, "\t\tport:\t{}", p.port);
        let _ = writeln!(
            w,
            "\t\t\tstate:\t\t\t{} ({})",
            state_str(p.state),
            p.state.code()
        );
        let _ = writeln!(w, "\t\t\tmax_mtu:\t\t{}", or_unknown(mtu(p.max_ib_mtu())));
        let _ = writeln!(
            w,
            "\t\t\tactive_mtu:\t\t{}",
            or_unknown(mtu(p.active_ib_mtu()))
        );
        let _ = writeln!(w, "\t\t\tsm_lid:\t\t\t{}", or_unknown(p.sm_lid));
        let _ = writeln!(w, "\t\t\tport_lid:\t\t{}", or_unknown(p.lid));
        let _ = writeln!(
            w,
            "\t\t\tport_lmc:\t\t{}",
            or_unknown(p.lmc.map(|v| format!("0x{v:02x}")))
        );
        let _ = writeln!(w, "\t\t\tlink_layer:\t\t{}", link_str(p.link_layer));
        if verbose {
            let _ = writeln!(w, "\t\t\tmax_msg_sz:\t\t0x{:x}", p.max_msg_sz);
            if let Some(ib) = p.ib {
                let _ = writeln!(w, "\t\t\tbad_pkey_cntr:\t\t0x{:x}", ib.bad_pkey_cntr);
                let _ = writeln!(w, "\t\t\tqkey_viol_cntr:\t\t0x{:x}", ib.qkey_viol_cntr);
                let _ = writeln!(w, "\t\t\tsm_sl:\t\t\t{}", ib.sm_sl);
                let _ = writeln!(w, "\t\t\tsubnet_timeout:\t\t{}", ib.subnet_timeout);
                let _ = writeln!(w, "\t\t\tinit_type_reply:\t{}", ib.init_type_reply);
                let _ = writeln!(
                    w,
                    "\t\t\tphys_state:\t\t{} ({})",
                    phys_state_str(ib.phys_state),
                    ib.phys_state
                );
            }
        }
        w.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envelope::{assert_documented, envelope};

    fn sim() -> DevInfo {
        query("sim").unwrap()
    }

    /// The lines ibv_devinfo always prints, in its order, with its format
    /// strings (devinfo.c print_hca_cap, `\t` runs as written there) and
    /// the values the rules give for the default simulated device: fw
    /// 16.35.2000; GUID = MAC 02:00:00:00:00:01 with 03:00 inserted; OUI
    /// 0x02c9; PCI id 0x1017 = 4119, revision 0; one Ethernet port, vport
    /// up → PORT_ACTIVE (4); PMTU 1522 → RoCE MTU 1024 (3), max 10000 →
    /// 4096 (5); LIDs 0 on Ethernet.
    #[test]
    fn default_text_is_ibv_devinfo_lines() {
        let want = "hca_id:\tsim\n\
            \ttransport:\t\t\tInfiniBand (0)\n\
            \tfw_ver:\t\t\t\t16.35.2000\n\
            \tnode_guid:\t\t\t0200:0003:0000:0001\n\
            \tsys_image_guid:\t\t\t0200:0003:0000:0001\n\
            \tvendor_id:\t\t\t0x02c9\n\
            \tvendor_part_id:\t\t\t4119\n\
            \thw_ver:\t\t\t\t0x0\n\
            \tboard_id:\t\t\tBAREVERBS_SIM01\n\
            \tphys_port_cnt:\t\t\t1\n\
            \t\tport:\t1\n\
            \t\t\tstate:\t\t\tPORT_ACTIVE (4)\n\
            \t\t\tmax_mtu:\t\t4096 (5)\n\
            \t\t\tactive_mtu:\t\t1024 (3)\n\
            \t\t\tsm_lid:\t\t\t0\n\
            \t\t\tport_lid:\t\t0\n\
            \t\t\tport_lmc:\t\t0x00\n\
            \t\t\tlink_layer:\t\tEthernet\n\
            \n";
        assert_eq!(to_text(&sim(), &Device::Sim, false), want);
    }

    /// -v adds the device attributes after phys_port_cnt and max_msg_sz
    /// per port; the values from the mlx5 kernel rules on the simulated
    /// caps (log_max_qp 18, log_max_qp_sz 15, descriptors 1024/512,
    /// log_max_ra_* 4, log_max_srq 23 / log_max_srq_sz 15, log_pg_sz 12,
    /// log_max_msg 30).
    #[test]
    fn verbose_text_adds_what_the_caps_determine() {
        let t = to_text(&sim(), &Device::Sim, true);
        for line in [
            "\tphys_port_cnt:\t\t\t1\n\tmax_mr_size:\t\t\t0xffffffffffffffff\n",
            "\tpage_size_cap:\t\t\t0xfffffffffffff000\n",
            "\tmax_qp:\t\t\t\t262144\n",
            "\tmax_qp_wr:\t\t\t32768\n",
            "\tmax_sge:\t\t\t30\n",
            "\tmax_sge_rd:\t\t\t30\n",
            "\tmax_cqe:\t\t\t4194303\n",
            "\tmax_qp_rd_atom:\t\t\t16\n",
            "\tmax_res_rd_atom:\t\t4194304\n",
            "\tmax_qp_init_rd_atom:\t\t16\n",
            "\tmax_srq:\t\t\t8388608\n\tmax_srq_wr:\t\t\t32767\n\tmax_srq_sge:\t\t\t31\n",
            "\t\t\tlink_layer:\t\tEthernet\n\t\t\tmax_msg_sz:\t\t0x40000000\n\n",
        ] {
            assert!(t.contains(line), "{line:?} missing in\n{t}");
        }
        assert!(
            !t.contains("phys_state"),
            "an Ethernet port has no IB vport context"
        );
    }

    /// An InfiniBand port: state and LIDs from the HCA vport context; -v
    /// adds its counters, SL, timeouts and physical state.
    #[test]
    fn ib_port_text() {
        let mut cfg = bareverbs_sim::fw::FwConfig {
            port_mtu: 4096,
            port_max_mtu: 4096,
            lid: 0x11,
            sm_lid: 2,
            lmc: 1,
            ..Default::default()
        };
        cfg.caps.port_type = 0;
        let d = bareverbs_sim::fw::devinfo_sim_with(cfg).unwrap();
        let t = to_text(&d, &Device::Sim, true);
        for line in [
            "\t\t\tmax_mtu:\t\t4096 (5)\n\t\t\tactive_mtu:\t\t4096 (5)\n",
            "\t\t\tsm_lid:\t\t\t2\n\t\t\tport_lid:\t\t17\n\t\t\tport_lmc:\t\t0x01\n",
            "\t\t\tlink_layer:\t\tInfiniBand\n",
            "\t\t\tsubnet_timeout:\t\t18\n",
            "\t\t\tphys_state:\t\tLINK_UP (5)\n",
        ] {
            assert!(t.contains(line), "{line:?} missing in\n{t}");
        }
    }

    #[test]
    fn list_and_port_selection() {
        assert_eq!(list_text(&["sim".into()]), "1 HCA found:\n\tsim\n\n");
        assert_eq!(
            list_text(&["sim".into(), "vfio:0000:3b:00.0".into()]),
            "2 HCAs found:\n\tsim\n\tvfio:0000:3b:00.0\n\n"
        );
        assert_eq!(list_devices()[0], "sim");
        let mut d = sim();
        select_port(&mut d, &Device::Sim, Some(1)).unwrap();
        assert_eq!(d.ports.len(), 1);
        let e = select_port(&mut d, &Device::Sim, Some(2)).unwrap_err();
        assert!(crate::args::is_usage(&e));
        assert_eq!(
            e.to_string(),
            "Invalid port requested for device: -i 2, but sim has 1 port"
        );
        let mut cfg = bareverbs_sim::fw::FwConfig::default();
        cfg.caps.num_ports = 2;
        let mut d = bareverbs_sim::fw::devinfo_sim_with(cfg).unwrap();
        select_port(&mut d, &Device::FwSim, Some(2)).unwrap();
        assert_eq!(d.ports.iter().map(|p| p.port).collect::<Vec<_>>(), [2]);
        assert!(to_text(&d, &Device::FwSim, false).contains("\t\tport:\t2\n"));
        assert!(!to_text(&d, &Device::FwSim, false).contains("\t\tport:\t1\n"));
    }

    /// `model` is no device; unknown names are refused with the shared
    /// message.
    #[test]
    fn devices_refused() {
        let e = query("model").unwrap_err();
        assert!(crate::args::is_usage(&e));
        assert!(e.to_string().contains("cost model only"), "{e}");
        let e = query("nic").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("unknown device \"nic\" (--device)"),
            "{e}"
        );
        assert_eq!(query("fw-sim").unwrap(), sim());
    }

    /// Unknown values print as `unknown` / `null`, never 0.
    #[test]
    fn unknown_values_print_unknown() {
        let mut d = sim();
        d.node_guid = None;
        d.vendor_id = None;
        d.adapter = None;
        for p in d.ports.iter_mut() {
            p.active_mtu = None;
            p.max_mtu = None;
            p.lid = None;
        }
        let j = to_json(&d, &Device::Sim);
        assert!(j["ports"][0]["active_mtu"].is_null());
        assert!(j["ports"][0]["port_lid"].is_null());
        assert!(j["node_guid"].is_null() && j["vendor_id"].is_null());
        assert!(j["board_id"].is_null());
        let t = to_text(&d, &Device::Sim, false);
        assert!(t.contains("\tactive_mtu:\t\tunknown\n"), "{t}");
        assert!(t.contains("\tnode_guid:\t\t\tunknown\n"), "{t}");
        assert!(t.contains("\tport_lid:\t\tunknown\n"), "{t}");
        assert!(
            !t.contains("board_id"),
            "ibv_devinfo omits an unreadable board_id"
        );
        assert_eq!(mtu(Some(IbMtu::Mtu4096)).unwrap(), "4096 (5)");
    }

    /// The JSON object's keys are the documented ones (with and without
    /// an InfiniBand port, with the self-test).
    #[test]
    fn json_keys_match_the_doc() {
        let j = envelope("devinfo", to_json(&sim(), &Device::Sim));
        assert_documented("devinfo", &j);
        assert_eq!(j["max_sge"], 30);
        assert_eq!(j["node_guid"], "0200:0003:0000:0001");
        assert_eq!(j["ports"][0]["state_enum"], 4);
        assert_eq!(j["ports"][0]["active_mtu_enum"], 3);
        let mut cfg = bareverbs_sim::fw::FwConfig::default();
        cfg.caps.port_type = 0;
        cfg.port_mtu = 2048;
        let d = bareverbs_sim::fw::devinfo_sim_with(cfg).unwrap();
        let mut j = envelope("devinfo", to_json(&d, &Device::Sim));
        assert_documented("devinfo", &j);
        assert_eq!(j["ports"][0]["ib"]["phys_state_enum"], 5);
        let o = bareverbs::selftest::SelfTestOptions::default();
        let r = crate::selftest::run("sim", o).unwrap();
        j["selftest"] = crate::selftest::to_json(&r, "sim", &o);
        assert_documented("devinfo", &j);
    }
}
