//! `bareverbs budget`: exact mlx5 memory per QP and per node ([ref §3](bareverbs::reference)).
//!
//! Sizes a QP (and optionally its CQ) with [`bareverbs::sizing`] on a device
//! described by `--caps FILE` (TOML, keys = [`DeviceCaps`] field names, missing
//! keys default to [`DeviceCaps::DEFAULT`]), prints a small table or one JSON
//! object, and on failure explains which limit was hit and what to change —
//! the suggestions are found by re-running the real sizing functions.
//! `--table` prints the memory-per-QP table next to the "64 B + 16 B per SGE"
//! rule of thumb.
//!
//! Layout: this module holds the arguments, the request they describe and
//! [`run`]; `caps` loads the device limits, `report` computes and renders
//! the outcome, `suggest` finds what to change when a request does not fit,
//! `table` prints the memory-per-QP table.

use std::path::PathBuf;

use anyhow::anyhow;
use bareverbs::sizing::*;

mod caps;
mod report;
mod suggest;
mod table;
#[cfg(test)]
mod tests;

pub use caps::{caps_from_toml, device_caps, load_caps};
pub use report::{compute, BudgetOutcome};
pub use suggest::suggestions;
pub use table::{estimate_ring_bytes, table};

/// Arguments of `bareverbs budget`.
#[derive(clap::Args, Debug, Clone)]
pub struct BudgetArgs {
    /// QP type: rc, uc, ud, raw (raw_packet), xrc.
    #[arg(long, default_value = "rc", value_parser = parse_qp_type)]
    pub qp_type: QpType,
    /// Send work requests (0 = no send queue).
    #[arg(long, default_value_t = 0)]
    pub max_send_wr: u32,
    /// Gather entries per send WR.
    #[arg(long, default_value_t = 1)]
    pub max_send_sge: u32,
    /// Inline bytes per send WR (a size: decimal, `0x` hex, `K`/`M`/`G`).
    #[arg(long, default_value_t = 0, value_parser = crate::args::byte_size_u32)]
    pub max_inline_data: u32,
    /// Receive work requests (0 = no receive queue).
    #[arg(long, default_value_t = 0)]
    pub max_recv_wr: u32,
    /// Scatter entries per receive WR.
    #[arg(long, default_value_t = 1)]
    pub max_recv_sge: u32,
    /// Send operations the QP will post, e.g. `write,send,read` (default: the
    /// provider's classic set for the QP type).
    #[arg(long)]
    pub send_ops: Option<String>,
    /// Size a CQ of this many entries shared by the QP's send and receive
    /// completions, and check it covers every outstanding WR.
    #[arg(long)]
    pub cqe: Option<u32>,
    /// CQE size in bytes (64 or 128).
    #[arg(long, default_value_t = 64, value_parser = crate::args::byte_size_u32)]
    pub cqe_size: u32,
    /// Number of identical QPs on the node (each with its own CQ if --cqe).
    #[arg(long)]
    pub qps: Option<u64>,
    /// Device limits: TOML file whose keys are DeviceCaps field names.
    #[arg(long)]
    pub caps: Option<PathBuf>,
    /// Size against this device's limits, read by QUERY_HCA_CAP: `sim` /
    /// `fw-sim` (the simulated ConnectX) or `vfio:DDDD:BB:DD.F` (default:
    /// `--caps FILE`, else the default device, whose limits the simulated
    /// ConnectX reports too).
    #[arg(long, conflicts_with = "caps")]
    pub device: Option<String>,
    /// JSON on stdout instead of text.
    #[arg(long)]
    pub json: bool,
    /// Print the memory-per-QP table (max_send_wr × max_send_sge).
    #[arg(long)]
    pub table: bool,
}

fn parse_qp_type(s: &str) -> Result<QpType, String> {
    QpType::parse(s).ok_or_else(|| format!("unknown QP type {s:?} (rc, uc, ud, raw, xrc)"))
}

/// The QP request the arguments describe.
pub fn request(args: &BudgetArgs) -> anyhow::Result<QpCaps> {
    let mut req = QpCaps::new(args.qp_type)
        .send(args.max_send_wr, args.max_send_sge, args.max_inline_data)
        .recv(args.max_recv_wr, args.max_recv_sge);
    if let Some(list) = &args.send_ops {
        let ops = SendOps::parse(list).map_err(|bad| anyhow!("unknown send op {bad:?}"))?;
        req = req.ops(ops);
    }
    Ok(req)
}

/// Run `bareverbs budget`; returns the process exit code (0 fits, 1 does not).
pub fn run(args: &BudgetArgs) -> anyhow::Result<i32> {
    let caps = match &args.device {
        Some(d) => device_caps(&crate::device_arg::parse_device(d)?)?,
        None => load_caps(args.caps.as_deref())?,
    };
    if args.table {
        crate::out!("{}", table(args, &caps));
        return Ok(0);
    }
    let out = compute(args, &caps)?;
    if args.json {
        let v = crate::envelope::envelope("budget", out.json);
        crate::outln!("{}", serde_json::to_string_pretty(&v)?);
    } else if out.code == 0 {
        crate::out!("{}", out.text);
    } else {
        crate::eout!("{}", out.text);
    }
    Ok(out.code)
}
