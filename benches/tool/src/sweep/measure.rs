//! Measuring a row through the command path: the backend `--device`
//! names ([`measuring_backend`]) and one row's `write-lat` run
//! ([`measure_row`]), giving a [`Measured`].

use super::{SweepArgs, SweepRow};
use crate::perf::backend::PerfBackend;
use crate::perf::cmd_backend::{self as cmd, CmdOptions, QpRejected};
use crate::perf::config::PerfRunConfig;
use crate::perf::flags::{Conn, PerfTest};
use crate::perftest::stats::lat_stats_from_posted;
use bareverbs::sizing::{DeviceCaps, SendOps};

/// What measuring one row gave.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Measured {
    /// perftest t_typical of write-lat, ns (one-way).
    pub latency_ns: f64,
    /// Simulator counters per WQE: WQE bytes fetched, PCIe reads.
    pub per_wqe: Option<(f64, f64)>,
}
/// The command-path backend `--device` names (None for `model`).
pub(super) fn measuring_backend(args: &SweepArgs) -> anyhow::Result<Option<Box<dyn PerfBackend>>> {
    let mut opts = CmdOptions::new(&args.device);
    opts.blueflame = args.blueflame;
    if let Some(bdf) = args.device.strip_prefix("vfio:") {
        return cmd::vfio(bdf, opts).map(Some);
    }
    match args.device.as_str() {
        "model" => Ok(None),
        // The simulated ConnectX, measured through the command path.
        "fw-sim" | "sim" => cmd::fw_sim(1, opts, None).map(Some),
        d => Err(crate::device_arg::unknown_device(d)),
    }
}

/// Measures one row's one-way WRITE latency (ns, perftest t_typical)
/// through the command path; `None` when the device cannot create the QP.
pub(super) fn measure_row(
    be: &mut dyn PerfBackend,
    args: &SweepArgs,
    caps: DeviceCaps,
    row: &SweepRow,
) -> anyhow::Result<Option<Measured>> {
    let rdma = row.send_ops == "rdma";
    let cfg = PerfRunConfig {
        test: PerfTest::WriteLat,
        size: args.size as u64,
        iters: args.lat_iters,
        qps: 1,
        tx_depth: 1,
        post_list: 1,
        cq_mod: 100,
        inline_size: if row.inline { args.size } else { 0 },
        inline: row.inline,
        conn: Conn::Rc,
        sge: row.posted_sge,
        max_send_sge: row.max_send_sge,
        max_send_wr: row.max_send_wr,
        send_ops: rdma.then_some(SendOps::RDMA_ONLY),
        send_ops_name: row.send_ops.to_string(),
        loss: 0.0,
        seed: 1,
        duration: None,
        mtu: 4096,
        caps,
        events: false,
    };
    let rep = match be.run(&cfg) {
        Ok(r) => r,
        Err(e) if e.downcast_ref::<QpRejected>().is_some() => return Ok(None),
        Err(e) => {
            return Err(e.context(format!(
                "measuring wr {} sge {} posted {} ops {} inline {}",
                row.max_send_wr,
                row.max_send_sge,
                row.posted_sge,
                row.send_ops,
                if row.inline { "on" } else { "off" }
            )))
        }
    };
    anyhow::ensure!(
        rep.completed_err == 0 && rep.mismatches == 0,
        "wr {} sge {}: {} error completions, {} bytes arrived wrong",
        row.max_send_wr,
        row.max_send_sge,
        rep.completed_err,
        rep.mismatches
    );
    let s = lat_stats_from_posted(&rep.tposted, rep.tick_hz / 1e6, 2)
        .ok_or_else(|| anyhow::anyhow!("--lat-iters {} gives too few samples", args.lat_iters))?;
    let c = |k: &str| rep.counters.get(k).copied();
    let per_wqe = match (
        c("nic.wqes"),
        c("nic.wqe_bytes_fetched"),
        c("nic.pcie_reads"),
    ) {
        (Some(n), Some(b), Some(r)) if n > 0.0 => Some((b / n, r / n)),
        _ => None,
    };
    Ok(Some(Measured {
        latency_ns: s.t_typical * 1000.0,
        per_wqe,
    }))
}
