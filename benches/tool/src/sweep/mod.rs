//! `bareverbs sweep`: the max_send_wr × max_send_sge design space.
//!
//! For every (max_send_wr, max_send_sge, posted SGEs, send-op set, inline)
//! point: can the QP be created (exact provider sizing, [ref §3](bareverbs::reference), with the
//! error's reason when not), the SQ ring and slot bytes, the WQE the post
//! path really builds (posted into a memory-backed SQ of that exact
//! geometry and read back from the ring), the CPU cost to post it, and the
//! NIC side from a [`NicModel`]: bytes fetched, PCIe reads, BlueFlame,
//! modeled latency. Then the two published tables (perf ref §2) side
//! by side with the exact figures, and an SVG chart.
//!
//! With `--device fw-sim` or `--device vfio:BDF` every row whose QP the
//! device can create also gets a latency *measured* through bareverbs'
//! own command path ([`crate::perf::cmd_backend`]): `write-lat` with the
//! row's max_send_wr, max_send_sge, posted SGEs, send-op set and inline
//! setting (on the simulator in virtual time, on hardware in wall-clock
//! time).
//!
//! Files: this one owns the arguments, the row and sweep types and the
//! run itself ([`run_sweep`], [`run`]); `measure` the command-path
//! measurement of a row, `progress` the progress bar, `tables` the text
//! tables, `json` the JSON and `chart` the SVG.

mod chart;
mod json;
mod measure;
mod progress;
mod tables;
#[cfg(test)]
mod tests;

pub use chart::svg;
pub use json::{caps_json, to_json};
pub use measure::Measured;
pub use tables::{blog_latency_table, blog_memory_table, header, main_table};

use crate::args::{check_output_path, usage_error};
use crate::budget::load_caps;
use crate::model::{load_model, NicCost, NicModel, WqeOp, WqeShape};
use crate::perf::backend::PerfBackend;
use crate::perf::probe::{probe, ProbeSpec};
use anyhow::Context as _;
use bareverbs::qp::QpType as SqQpType;
use bareverbs::sizing::{sq_layout, DeviceCaps, QpCaps, QpType, SendOps, SqLayout};
use measure::{measure_row, measuring_backend};
use progress::Progress;
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Instant;

/// The blog's latency table: max_send_sge → µs at max_send_wr = 1024.
pub const BLOG_LATENCY_US: [(u32, f64); 4] = [(1, 2.01), (4, 2.06), (16, 2.31), (32, 2.52)];

/// Arguments of `bareverbs sweep`.
#[derive(Clone, Debug, clap::Args)]
pub struct SweepArgs {
    /// max_send_wr values.
    #[arg(long, value_delimiter = ',', default_values_t = [128u32, 1024, 8192, 32768])]
    pub wr: Vec<u32>,
    /// max_send_sge values.
    #[arg(long, value_delimiter = ',', default_values_t = [1u32, 4, 16, 30, 32])]
    pub sge: Vec<u32>,
    /// Payload bytes per WRITE (also the inline size requested for inline
    /// rows); perftest notation: `64`, `0x40`, `4K`, `1M`.
    #[arg(short = 's', long, default_value_t = 64, value_parser = crate::args::message_size_u32)]
    pub size: u32,
    /// WRs per doorbell for the post timing and the model (1 = latency test).
    #[arg(long, default_value_t = 1)]
    pub batch: u32,
    /// WRs posted per timing run (0 = do not time).
    #[arg(long, default_value_t = 100_000)]
    pub iters: u64,
    /// Timing runs per point (best is kept).
    #[arg(long, default_value_t = 3)]
    pub reps: u32,
    /// Model parameters (TOML; any subset of the model's fields).
    #[arg(long)]
    pub model: Option<PathBuf>,
    /// Device capabilities (TOML, as `budget --caps`).
    #[arg(long)]
    pub caps: Option<PathBuf>,
    /// JSON on stdout instead of the tables (`{"schema", "command",
    /// "rows", …}`, docs/json-commands.md).
    #[arg(long)]
    pub json: bool,
    /// Also write that JSON to PATH (the main job writes
    /// `target/sweep.json`).
    #[arg(long, value_name = "PATH")]
    pub json_file: Option<PathBuf>,
    /// Write an SVG chart to FILE.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Print every row (default: the main table shows max_send_wr 1024 in
    /// full and the other sizes as a compact memory/feasibility grid).
    #[arg(long)]
    pub all: bool,
    /// `model` (default: latency from the NIC model only, no device), or
    /// a device to also measure each feasible row's write latency on
    /// through bareverbs' command path: `fw-sim` (the simulated ConnectX;
    /// `sim` names the same device and, sweep measuring only through the
    /// command path, means the same here) or `vfio:DDDD:BB:DD.F`.
    #[arg(long, default_value = "model")]
    pub device: String,
    /// write-lat iterations per row when measuring (--device fw-sim|vfio:BDF).
    #[arg(long, default_value_t = 200)]
    pub lat_iters: u64,
    /// When measuring: copy single inline WQEs through BlueFlame (default:
    /// 8-byte doorbells only).
    #[arg(long)]
    pub blueflame: bool,
}

/// One sweep point.
#[derive(Clone, Debug, serde::Serialize)]
pub struct SweepRow {
    /// Requested max_send_wr.
    pub max_send_wr: u32,
    /// Requested max_send_sge.
    pub max_send_sge: u32,
    /// SGEs posted per WR.
    pub posted_sge: u32,
    /// `classic` (legacy create: all ops, 192 B overhead) or `rdma`
    /// (write,send,read: 32 B).
    pub send_ops: &'static str,
    /// Inline WRs (max_inline_data = size requested).
    pub inline: bool,
    /// SQ ring bytes.
    pub ring_bytes: Option<u64>,
    /// Ring slot (stride) bytes.
    pub slot_bytes: Option<u32>,
    /// `max_post` (WRs the ring holds at worst-case size).
    pub max_post: Option<u32>,
    /// Bytes of the WQE actually posted (16 × DS read back from the ring).
    pub wqe_bytes: Option<u32>,
    /// WQEBBs actually posted.
    pub wqebbs: Option<u32>,
    /// Measured ns per posted WR (memory-backed SQ, full doorbell sequence).
    pub post_ns: Option<f64>,
    /// NIC DMA bytes to fetch the WQE (per WR at batch 1).
    pub nic_fetch_bytes: Option<u32>,
    /// NIC DMA bytes to gather the payload.
    pub payload_fetch_bytes: Option<u32>,
    /// PCIe reads per WR.
    pub pcie_reads: Option<f64>,
    /// BlueFlame eligible (single-WR post).
    pub bf_eligible: Option<bool>,
    /// Modeled one-way latency, ns.
    pub modeled_latency_ns: Option<f64>,
    /// Modeled message-rate bound, Mpps.
    pub modeled_rate_mpps: Option<f64>,
    /// Why the QP cannot be created.
    pub error: Option<String>,
    /// One-way RDMA WRITE latency, ns, measured through the command path
    /// with `--device fw-sim|vfio:BDF` (perftest's t_typical of
    /// `write-lat`); `None` with `--device model` or when the device
    /// cannot create the row's QP.
    pub measured_latency_ns: Option<f64>,
    /// WQE bytes the simulated NIC fetched per WQE during that run
    /// (`--device fw-sim`: its counters; `None` otherwise).
    pub sim_fetch_bytes: Option<f64>,
    /// PCIe reads the simulated NIC issued per WQE during that run (WQE
    /// fetch and payload gather; `--device fw-sim` only).
    pub sim_pcie_reads: Option<f64>,
}
/// The result of a sweep.
#[derive(Debug)]
pub struct Sweep {
    /// Rows in sweep order.
    pub rows: Vec<SweepRow>,
    /// Device used.
    pub caps: DeviceCaps,
    /// Model header lines.
    pub model_lines: Vec<String>,
    /// Model name.
    pub model_name: String,
    /// Wall time of the sweep.
    pub secs: f64,
    /// Where `measured_latency_ns` was measured (None: not measured).
    pub measured_on: Option<String>,
}

/// Probe cache key: ring BBs, slot, posted SGEs, rdma-only, inline, max_post.
type ProbeKey = (u32, u32, u32, bool, bool, u32);

/// The QP request of one point (RC, send side only).
pub fn request(wr: u32, sge: u32, rdma_only: bool, inline: Option<u32>) -> QpCaps {
    let q = QpCaps::new(QpType::Rc).send(wr, sge, inline.unwrap_or(0));
    if rdma_only {
        q.ops(SendOps::RDMA_ONLY)
    } else {
        q
    }
}

/// Posted RC WRITE WQE bytes by the rules ([ref §1.7](bareverbs::reference), perf ref §2.3):
/// ctrl 16 + raddr 16 + 16 per SGE, or inline: 32 + align16(4 + payload).
pub fn rule_write_wqe_bytes(posted_sge: u32, inline: Option<u32>) -> u32 {
    match inline {
        Some(p) => 32 + (4 + p).next_multiple_of(16),
        None => 32 + 16 * posted_sge,
    }
}

/// The shape the model sees for a row.
fn shape(
    l: &SqLayout,
    wqe_bytes: u32,
    posted: u32,
    inline: bool,
    size: u32,
    batch: u32,
) -> WqeShape {
    WqeShape {
        op: WqeOp::Write,
        ds: wqe_bytes / 16,
        wqebbs: wqe_bytes.div_ceil(64),
        posted_sge: if inline { 0 } else { posted },
        inline,
        payload_bytes: size,
        batch,
        ring_bytes: l.buf_bytes,
        slot_bytes: l.wqe_size,
        active_qps: 1,
        post_ns: None,
    }
}

/// Refuses impossible option values before any work starts (each refusal
/// is a [`crate::args::UsageError`]).
pub fn check_args(args: &SweepArgs) -> anyhow::Result<()> {
    crate::device_arg::parse_device(&args.device)?;
    if let Some(&s) = args.sge.iter().find(|&&s| s == 0) {
        return Err(usage_error(format!(
            "--sge {s}: every row posts at least one SGE, so max_send_sge must be >= 1"
        )));
    }
    if args.wr.is_empty() || args.sge.is_empty() {
        return Err(usage_error("--wr and --sge need at least one value"));
    }
    if args.device != "model" && args.lat_iters < 5 {
        return Err(usage_error(
            "--lat-iters must be at least 5 (perftest MIN_ITER)",
        ));
    }
    Ok(())
}

/// Runs the sweep.
pub fn run_sweep(
    args: &SweepArgs,
    model: &dyn NicModel,
    caps: DeviceCaps,
) -> anyhow::Result<Sweep> {
    let t0 = Instant::now();
    check_args(args)?;
    let mut be = measuring_backend(args)?;
    let measured_on = be
        .as_ref()
        .map(|b| format!("{} -- {}", b.name(), b.timing_note()));
    let points = points(args);
    let mut progress = Progress::new(points.len());
    let mut cache: HashMap<ProbeKey, (u32, u32, f64)> = Default::default();
    let mut rows = Vec::with_capacity(points.len());
    for p in points {
        let row = sweep_point(args, model, caps, &mut cache, &mut be, p)?;
        progress.tick(&format!("wr {} sge {}/{}", p.wr, p.sge, p.posted));
        rows.push(row);
    }
    progress.finish();
    Ok(Sweep {
        rows,
        caps,
        model_lines: model.describe(),
        model_name: model.name().to_string(),
        secs: t0.elapsed().as_secs_f64(),
        measured_on,
    })
}

/// One point of the design space.
#[derive(Clone, Copy, Debug)]
struct Point {
    wr: u32,
    sge: u32,
    posted: u32,
    rdma: bool,
    inline: bool,
}

/// Every point, in sweep order: each max_send_wr, each max_send_sge, 1
/// and (when different) max_send_sge posted SGEs, classic then rdma-only
/// ops, inline off then on.
fn points(args: &SweepArgs) -> Vec<Point> {
    let mut points = Vec::new();
    for &wr in &args.wr {
        for &sge in &args.sge {
            let mut posted = vec![1];
            if sge != 1 {
                posted.push(sge);
            }
            for &p in &posted {
                for rdma in [false, true] {
                    for inline in [false, true] {
                        points.push(Point {
                            wr,
                            sge,
                            posted: p,
                            rdma,
                            inline,
                        });
                    }
                }
            }
        }
    }
    points
}

/// The row of point `p`: the exact sizing, or why the QP cannot be
/// created; then the posted WQE, its post cost, the model's NIC side and
/// (with a measuring backend `be`) the measured latency.
fn sweep_point(
    args: &SweepArgs,
    model: &dyn NicModel,
    caps: DeviceCaps,
    cache: &mut HashMap<ProbeKey, (u32, u32, f64)>,
    be: &mut Option<Box<dyn PerfBackend>>,
    p: Point,
) -> anyhow::Result<SweepRow> {
    let Point {
        wr,
        sge,
        posted,
        rdma,
        inline,
    } = p;
    let req = request(wr, sge, rdma, inline.then_some(args.size));
    let mut row = SweepRow {
        max_send_wr: wr,
        max_send_sge: sge,
        posted_sge: posted,
        send_ops: if rdma { "rdma" } else { "classic" },
        inline,
        ring_bytes: None,
        slot_bytes: None,
        max_post: None,
        wqe_bytes: None,
        wqebbs: None,
        post_ns: None,
        nic_fetch_bytes: None,
        payload_fetch_bytes: None,
        pcie_reads: None,
        bf_eligible: None,
        modeled_latency_ns: None,
        modeled_rate_mpps: None,
        error: None,
        measured_latency_ns: None,
        sim_fetch_bytes: None,
        sim_pcie_reads: None,
    };
    match sq_layout(&req, &caps) {
        Err(e) => row.error = Some(e.to_string()),
        Ok(l) => {
            row.ring_bytes = Some(l.buf_bytes);
            row.slot_bytes = Some(l.wqe_size);
            row.max_post = Some(l.max_post);
            let (ds, bbs, ns) = probe_cached(args, cache, &l, p)?;
            let wqe_bytes = 16 * ds;
            row.wqe_bytes = Some(wqe_bytes);
            row.wqebbs = Some(bbs);
            if args.iters > 0 {
                row.post_ns = Some(ns);
            }
            let c: NicCost =
                model.wqe(&shape(&l, wqe_bytes, posted, inline, args.size, args.batch));
            row.nic_fetch_bytes = Some(c.wqe_fetch_bytes);
            row.payload_fetch_bytes = Some(c.payload_fetch_bytes);
            row.pcie_reads = Some(c.pcie_reads);
            row.bf_eligible = Some(c.bf_eligible);
            row.modeled_latency_ns = Some(c.latency_ns);
            row.modeled_rate_mpps = Some(c.rate_bound_mpps);
            if let Some(b) = be.as_deref_mut() {
                if let Some(m) = measure_row(b, args, caps, &row)? {
                    row.measured_latency_ns = Some(m.latency_ns);
                    row.sim_fetch_bytes = m.per_wqe.map(|p| p.0);
                    row.sim_pcie_reads = m.per_wqe.map(|p| p.1);
                }
            }
        }
    }
    Ok(row)
}

/// (DS, WQEBBs, post ns) of point `p` on ring `l`: probed once per
/// distinct geometry and WR shape, then from `cache`.
fn probe_cached(
    args: &SweepArgs,
    cache: &mut HashMap<ProbeKey, (u32, u32, f64)>,
    l: &SqLayout,
    p: Point,
) -> anyhow::Result<(u32, u32, f64)> {
    let ring_bbs = l.wqe_cnt;
    let key = (ring_bbs, l.wqe_size, p.posted, p.rdma, p.inline, l.max_post);
    Ok(match cache.get(&key) {
        Some(v) => *v,
        None => {
            let spec = ProbeSpec {
                op: WqeOp::Write,
                qp_type: SqQpType::Rc,
                ring_bbs,
                max_post: l.max_post,
                max_gs: p.sge,
                max_inline: l.max_inline_data,
                posted_sge: p.posted,
                inline: p.inline,
                payload: args.size,
                batch: args.batch,
                atomics: !p.rdma,
                blueflame: true,
            };
            let r = probe(&spec, args.iters, args.reps)?;
            let v = (r.ds, r.wqebbs, r.post_ns);
            cache.insert(key, v);
            v
        }
    })
}

/// The row of one point, if the sweep has it.
fn find<'a>(
    s: &'a Sweep,
    wr: u32,
    sge: u32,
    posted: u32,
    ops: &str,
    inline: bool,
) -> Option<&'a SweepRow> {
    s.rows.iter().find(|r| {
        r.max_send_wr == wr
            && r.max_send_sge == sge
            && r.posted_sge == posted
            && r.send_ops == ops
            && r.inline == inline
    })
}
/// `bareverbs sweep`.
pub fn run(args: &SweepArgs) -> anyhow::Result<()> {
    let caps = load_caps(args.caps.as_deref())?;
    let model = load_model(args.model.as_deref())?;
    let json_stdout = args.json;
    // Output files are checked before the (long) sweep, not after it.
    check_args(args)?;
    if let Some(p) = &args.json_file {
        check_output_path("--json-file", p)?;
    }
    if let Some(p) = &args.svg {
        check_output_path("--svg", p)?;
    }
    let s = run_sweep(args, &model, caps)?;
    // The files first: a reader of stdout that goes away (`| head`) ends
    // the run at the first write to stdout (crate::output).
    let json = if json_stdout || args.json_file.is_some() {
        Some(serde_json::to_string_pretty(&to_json(&s))?)
    } else {
        None
    };
    if let (Some(p), Some(text)) = (&args.json_file, &json) {
        std::fs::write(p, text.clone() + "\n")
            .with_context(|| format!("writing {}", p.display()))?;
    }
    if let Some(p) = &args.svg {
        let wr = if args.wr.contains(&1024) {
            1024
        } else {
            args.wr[0]
        };
        std::fs::write(p, svg(&s, wr, &args.sge)?)
            .with_context(|| format!("writing {}", p.display()))?;
        crate::eoutln!("chart written to {}", p.display());
    }
    if let (true, Some(text)) = (json_stdout, &json) {
        crate::outln!("{text}");
    }
    if !json_stdout {
        let caps512 = DeviceCaps {
            max_sq_desc_sz: 512,
            ..caps
        };
        crate::out!("{}", header(&s, args));
        crate::out!("{}", main_table(&s, args));
        crate::out!("{}", blog_memory_table(&s, args));
        crate::out!("{}", blog_latency_table(&s, &caps512));
    }
    Ok(())
}
