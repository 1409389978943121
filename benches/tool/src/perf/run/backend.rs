//! The backend of `--device` ([`backend`]): `sim`, `fw-sim`, `model` or
//! `vfio:BDF`.

use super::{PerfArgs, PerfBackend};
use crate::model::load_model;
use anyhow::bail;

/// The backend for `--device`.
pub fn backend(args: &PerfArgs) -> anyhow::Result<Box<dyn PerfBackend>> {
    use crate::perf::cmd_backend::{self as cmd, CmdOptions};
    let mut opts = CmdOptions::new(&args.device);
    opts.blueflame = args.blueflame;
    opts.peer.gid_index = args.gid_index;
    opts.peer.ip = args.ip;
    opts.peer.dmac = args.dmac;
    if let Some(bdf) = args.device.strip_prefix("vfio:") {
        // Errors are the VFIO host's own, actionable text.
        return cmd::vfio(bdf, opts);
    }
    match args.device.as_str() {
        "sim" => Ok(Box::new(crate::perf::sim_backend::SimBackend::new(
            args.seed,
            bareverbs_sim::ModelParams::default(),
        ))),
        // The command-path backend on the simulator (modeled time).
        "fw-sim" => cmd::fw_sim(args.seed, opts, args.wire),
        // The closed-form NIC model alone (perf ref §2.3), no simulation.
        "model" => Ok(Box::new(crate::perf::model_backend::ModelBackend::new(
            load_model(args.model.as_deref())?,
            args.seed,
        ))),
        d => bail!("unknown --device {d:?} (expected sim, model, fw-sim or vfio:BDF)"),
    }
}
