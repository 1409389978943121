//! `bareverbs budget`: exact mlx5 memory per QP and per node ([ref §3](bareverbs::reference)).
//!
//! Sizes a QP (and optionally its CQ) with [`bareverbs::sizing`] on a device
//! described by `--caps FILE` (TOML, keys = [`DeviceCaps`] field names, missing
//! keys default to [`DeviceCaps::DEFAULT`]), prints a small table or one JSON
//! object, and on failure explains which limit was hit and what to change —
//! the suggestions are found by re-running the real sizing functions.
//! `--table` prints the memory-per-QP table next to the "64 B + 16 B per SGE"
//! rule of thumb.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::args::UsageExt as _;
use anyhow::{anyhow, Context};
use bareverbs::sizing::*;
use serde::Deserialize;
use serde_json::{json, Value};

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

/// TOML mirror of [`DeviceCaps`]: every key optional.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct CapsFile {
    max_sq_desc_sz: Option<u32>,
    max_rq_desc_sz: Option<u32>,
    max_send_wqebb: Option<u32>,
    max_recv_wr: Option<u32>,
    max_srq_recv_wr: Option<u32>,
    max_sge: Option<u32>,
    max_cqe: Option<u32>,
    bf_reg_size: Option<u32>,
    cqe_version: Option<u32>,
    page_size: Option<u32>,
    cache_line_size: Option<u32>,
}

/// Parse device limits from TOML text (keys = [`DeviceCaps`] field names;
/// missing keys take [`DeviceCaps::DEFAULT`]; unknown keys are an error).
pub fn caps_from_toml(text: &str) -> anyhow::Result<DeviceCaps> {
    let f: CapsFile = toml::from_str(text)?;
    let d = DeviceCaps::DEFAULT;
    let caps = DeviceCaps {
        max_sq_desc_sz: f.max_sq_desc_sz.unwrap_or(d.max_sq_desc_sz),
        max_rq_desc_sz: f.max_rq_desc_sz.unwrap_or(d.max_rq_desc_sz),
        max_send_wqebb: f.max_send_wqebb.unwrap_or(d.max_send_wqebb),
        max_recv_wr: f.max_recv_wr.unwrap_or(d.max_recv_wr),
        max_srq_recv_wr: f.max_srq_recv_wr.unwrap_or(d.max_srq_recv_wr),
        // Without a max_sge key: the kernel's rule on the descriptor sizes.
        max_sge: f.max_sge.unwrap_or_else(|| {
            let desc = |v: u32| v.min(u16::MAX as u32) as u16;
            bareverbs::cmd::caps::HcaCaps {
                max_wqe_sz_sq: desc(f.max_sq_desc_sz.unwrap_or(d.max_sq_desc_sz)),
                max_wqe_sz_rq: desc(f.max_rq_desc_sz.unwrap_or(d.max_rq_desc_sz)),
                ..Default::default()
            }
            .max_sge()
        }),
        max_cqe: f.max_cqe.unwrap_or(d.max_cqe),
        bf_reg_size: f.bf_reg_size.unwrap_or(d.bf_reg_size),
        cqe_version: f.cqe_version.unwrap_or(d.cqe_version),
        page_size: f.page_size.unwrap_or(d.page_size),
        cache_line_size: f.cache_line_size.unwrap_or(d.cache_line_size),
    };
    if caps.max_sq_desc_sz == 0 || caps.page_size == 0 || caps.cache_line_size == 0 {
        anyhow::bail!("max_sq_desc_sz, page_size and cache_line_size must be non-zero");
    }
    Ok(caps)
}

/// Load device limits from `--caps FILE`, or the default device.
pub fn load_caps(path: Option<&Path>) -> anyhow::Result<DeviceCaps> {
    match path {
        None => Ok(DeviceCaps::DEFAULT),
        Some(p) => {
            // An unreadable or malformed file is bad input (exit status 2).
            let text = std::fs::read_to_string(p)
                .with_context(|| format!("reading {}", p.display()))
                .usage()?;
            caps_from_toml(&text)
                .with_context(|| format!("parsing {}", p.display()))
                .usage()
        }
    }
}

/// The sizing limits of `device` (`budget --device`), from its
/// QUERY_HCA_CAP and the host's page and cache-line sizes the bring-up
/// uses.
pub fn device_caps(device: &crate::device_arg::Device) -> anyhow::Result<DeviceCaps> {
    device.require_device("budget --device")?;
    let d = crate::devinfo::query_device(device)?;
    let host = bareverbs::device::DeviceConfig::default();
    Ok(d.caps.device_caps(host.page_size, host.cache_line_size))
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

fn ops_name(ops: SendOps) -> String {
    let mut s = String::new();
    for (name, _) in ops.iter_names() {
        if !s.is_empty() {
            s.push(',');
        }
        s.push_str(&name.to_ascii_lowercase());
    }
    s
}

/// Narrower op sets tried when the SQ does not fit (name for `--send-ops`, set).
fn narrower_sets() -> [(&'static str, SendOps); 2] {
    [
        ("write,send,read", SendOps::RDMA_ONLY),
        ("send", SendOps::SEND),
    ]
}

/// Largest `v` in `0..=hi` for which `fits(v)` holds, assuming monotonic; `None` if none.
fn largest_fitting(hi: u32, lo: u32, fits: impl Fn(u32) -> bool) -> Option<u32> {
    if !fits(lo) {
        return None;
    }
    let (mut lo, mut hi) = (lo, hi);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    Some(lo)
}

/// What to change so that `req` fits `caps`, each computed with the real
/// sizing functions (empty if nothing single-handedly fixes it).
pub fn suggestions(req: &QpCaps, err: &SizingError, caps: &DeviceCaps) -> Vec<String> {
    let fits = |r: &QpCaps| qp_layout(r, caps).is_ok();
    let mut out = Vec::new();
    match err.stage {
        Stage::Sq => {
            if let Some(wr) = largest_fitting(req.max_send_wr, 1, |w| {
                let mut r = *req;
                r.max_send_wr = w;
                fits(&r)
            }) {
                out.push(format!("lower max_send_wr to {wr}"));
            }
            if let Some(sge) = largest_fitting(req.max_send_sge, 0, |s| {
                let mut r = *req;
                r.max_send_sge = s;
                fits(&r)
            }) {
                out.push(format!("max_send_sge to {sge}"));
            }
            if req.max_inline_data > 0 {
                if let Some(inl) = largest_fitting(req.max_inline_data, 0, |i| {
                    let mut r = *req;
                    r.max_inline_data = i;
                    fits(&r)
                }) {
                    out.push(format!("max_inline_data to {inl}"));
                }
            }
            let cur = sq_overhead(req.qp_type, req.effective_ops());
            for (name, ops) in narrower_sets() {
                if sq_overhead(req.qp_type, ops) >= cur {
                    continue;
                }
                let r = req.ops(ops);
                if fits(&r) {
                    out.push(format!("restrict --send-ops to {name}"));
                    break;
                }
                if let Some(wr) = largest_fitting(req.max_send_wr, 1, |w| {
                    let mut r2 = r;
                    r2.max_send_wr = w;
                    fits(&r2)
                }) {
                    out.push(format!(
                        "restrict --send-ops to {name} and lower max_send_wr to {wr}"
                    ));
                    break;
                }
            }
        }
        Stage::Rq => {
            if let Some(wr) = largest_fitting(req.max_recv_wr, 1, |w| {
                let mut r = *req;
                r.max_recv_wr = w;
                fits(&r)
            }) {
                out.push(format!("lower max_recv_wr to {wr}"));
            }
            if let Some(sge) = largest_fitting(req.max_recv_sge, 0, |s| {
                let mut r = *req;
                r.max_recv_sge = s;
                fits(&r)
            }) {
                out.push(format!("max_recv_sge to {sge}"));
            }
        }
        Stage::Cq => {
            if err.limit == Limit::CqCoverage {
                out.push(format!(
                    "raise --cqe to at least {}",
                    cqe_for_outstanding(err.requested.min(u32::MAX as u64) as u32)
                ));
            } else if err.limit != Limit::CqeZero {
                out.push(format!(
                    "lower --cqe below {} (the CQ may hold {} entries)",
                    caps.max_cqe, caps.max_cqe
                ));
            } else {
                out.push("use --cqe 1 or more".to_string());
            }
        }
        Stage::Srq => {}
    }
    out
}

fn error_json(e: &SizingError, sugg: &[String]) -> Value {
    json!({
        "error": {
            "errno": e.errno(),
            "stage": e.stage.name(),
            "limit": e.limit.name(),
            "requested": e.requested,
            "allowed": e.allowed,
            "rejected_by": e.rejected_by.name(),
            "message": e.to_string(),
        },
        "suggestions": sugg,
    })
}

/// The outcome of a budget computation.
#[derive(Debug, Clone)]
pub struct BudgetOutcome {
    /// The JSON object `--json` prints.
    pub json: Value,
    /// Human-readable text.
    pub text: String,
    /// Process exit code: 0 = fits, 1 = a limit is exceeded.
    pub code: i32,
}

/// Compute the budget for `args` on `caps` (no I/O). SGE counts above
/// the device's `max_sge` are refused as bad input.
pub fn compute(args: &BudgetArgs, caps: &DeviceCaps) -> anyhow::Result<BudgetOutcome> {
    use crate::device_arg::check_sge;
    check_sge("--max-send-sge", args.max_send_sge, caps.max_sge)?;
    check_sge("--max-recv-sge", args.max_recv_sge, caps.max_sge)?;
    let req = request(args)?;
    let (l, cq) = match layouts(args, &req, caps) {
        Ok(v) => v,
        Err(e) => return Ok(failure(&req, &e, caps)),
    };
    let b = qp_budget(&l, cq.as_ref(), 1, caps);
    let mut j = qp_json(&l, req.effective_ops(), &b);
    let mut text = qp_text(&l, &req, &b, caps);
    if let Some(c) = &cq {
        add_cq(&mut j, &mut text, args.cqe, c, &l, caps);
    }
    let _ = writeln!(text, "per QP {} B", b.total_bytes);
    if let Some(n) = args.qps {
        let node = node_budget(&l, cq.as_ref(), 1, n, caps);
        j["qps"] = json!(n);
        j["node_bytes"] = json!(node);
        let _ = writeln!(
            text,
            "{n} QPs: {node} B ({:.1} MiB)",
            node as f64 / (1 << 20) as f64
        );
    }
    add_narrower_ops(&mut j, &mut text, &req, &l, caps);
    Ok(BudgetOutcome {
        json: j,
        text,
        code: 0,
    })
}

/// The outcome of a request that does not fit: the error, the suggestions
/// found for it, exit code 1.
fn failure(req: &QpCaps, e: &SizingError, caps: &DeviceCaps) -> BudgetOutcome {
    let sugg = suggestions(req, e, caps);
    let mut text = e.to_string();
    if !sugg.is_empty() {
        text.push_str(": ");
        text.push_str(&sugg.join(", or "));
    }
    text.push('\n');
    BudgetOutcome {
        json: error_json(e, &sugg),
        text,
        code: 1,
    }
}

/// The QP's layout and, with `--cqe`, the shared CQ's, which must cover
/// every send and receive WR the QP can have outstanding.
fn layouts(
    args: &BudgetArgs,
    req: &QpCaps,
    caps: &DeviceCaps,
) -> Result<(QpLayout, Option<CqLayout>), SizingError> {
    let l = qp_layout(req, caps)?;
    let cq = match args.cqe {
        None => None,
        Some(n) => {
            let c = cq_layout(n, args.cqe_size, caps)?;
            check_cq_covers(
                CqAttach::Shared {
                    cqe: c.reported_cqe,
                },
                l.sq.max_post,
                l.rq.max_post,
            )?;
            Some(c)
        }
    };
    Ok((l, cq))
}

/// The JSON of the QP's queues, buffer and doorbell (`--json`, without the
/// CQ, node and narrower-ops parts).
fn qp_json(l: &QpLayout, ops: SendOps, b: &QpBudget) -> Value {
    json!({
        "qp_type": l.qp_type.name(),
        "send_ops": ops_name(ops),
        "sq": {
            "overhead": l.sq.overhead,
            "wqe_size": l.sq.wqe_size,
            "wqe_cnt": l.sq.wqe_cnt,
            "wqe_shift": l.sq.wqe_shift,
            "max_post": l.sq.max_post,
            "max_gs": l.sq.max_gs,
            "max_inline_data": l.sq.max_inline_data,
            "bytes": l.sq.buf_bytes,
        },
        "rq": {
            "wqe_size": l.rq.wqe_size,
            "wqe_shift": l.rq.wqe_shift,
            "wqe_cnt": l.rq.wqe_cnt,
            "max_post": l.rq.max_post,
            "max_gs": l.rq.max_gs,
            "bytes": l.rq.buf_bytes,
        },
        "total_bytes": l.total_bytes,
        "sq_offset": l.sq_offset,
        "alloc_bytes": l.alloc_bytes,
        "doorbell_bytes": b.qp_doorbell_bytes,
        "qp_bytes": b.total_bytes,
    })
}

/// The text of the QP: its op set, the SQ/RQ table, buffer and doorbell.
fn qp_text(l: &QpLayout, req: &QpCaps, b: &QpBudget, caps: &DeviceCaps) -> String {
    let mut text = String::new();
    let _ = writeln!(
        text,
        "{} QP, send ops {} ({}-byte WQE overhead)",
        l.qp_type,
        if req.send_ops.is_some() {
            ops_name(req.effective_ops())
        } else {
            "classic".into()
        },
        l.sq.overhead
    );
    let _ = writeln!(
        text,
        "     {:>9} {:>8} {:>9} {:>7} {:>10} {:>12}",
        "wqe_size", "wqe_cnt", "max_post", "max_gs", "inline", "bytes"
    );
    let _ = writeln!(
        text,
        "  SQ {:>9} {:>8} {:>9} {:>7} {:>10} {:>12}",
        l.sq.wqe_size,
        l.sq.wqe_cnt,
        l.sq.max_post,
        l.sq.max_gs,
        l.sq.max_inline_data,
        l.sq.buf_bytes
    );
    let _ = writeln!(
        text,
        "  RQ {:>9} {:>8} {:>9} {:>7} {:>10} {:>12}",
        l.rq.wqe_size, l.rq.wqe_cnt, l.rq.max_post, l.rq.max_gs, "-", l.rq.buf_bytes
    );
    let _ = writeln!(
        text,
        "queue buffer {} B (SQ at offset {}), allocated {} B (page {} B)",
        l.total_bytes, l.sq_offset, l.alloc_bytes, caps.page_size
    );
    let _ = writeln!(
        text,
        "doorbell record {} B (one cache line per QP and per CQ)",
        b.qp_doorbell_bytes
    );
    text
}

/// Adds the CQ (`--cqe requested`, laid out as `c`) to the JSON and the text.
fn add_cq(
    j: &mut Value,
    text: &mut String,
    requested: Option<u32>,
    c: &CqLayout,
    l: &QpLayout,
    caps: &DeviceCaps,
) {
    j["cq"] = json!({
        "requested": requested,
        "ncqe": c.ncqe,
        "cqe": c.reported_cqe,
        "cqe_size": c.cqe_size,
        "buf_bytes": c.buf_bytes,
        "alloc_bytes": c.alloc_bytes,
        "outstanding": l.sq.max_post as u64 + l.rq.max_post as u64,
    });
    let _ = writeln!(
        text,
        "CQ {} entries ({} usable ≥ {} send + {} receive outstanding), {} B + {} B doorbell",
        c.ncqe, c.reported_cqe, l.sq.max_post, l.rq.max_post, c.alloc_bytes, caps.cache_line_size
    );
}

/// The lever: a narrower op set (only worth showing when it is narrower),
/// added to the JSON and the text.
fn add_narrower_ops(
    j: &mut Value,
    text: &mut String,
    req: &QpCaps,
    l: &QpLayout,
    caps: &DeviceCaps,
) {
    let cur = l.sq.overhead;
    if l.sq.wqe_size > 0 {
        for (name, o) in narrower_sets() {
            if sq_overhead(req.qp_type, o) < cur {
                if let Ok(s) = send_ops_saving(req, o, caps) {
                    let narrow = qp_layout(&req.ops(o), caps)
                        .map(|n| n.alloc_bytes)
                        .unwrap_or(0);
                    j["narrower_ops"] = json!({
                        "send_ops": name,
                        "alloc_bytes": narrow,
                        "saved_bytes": l.alloc_bytes as i64 - narrow as i64,
                        "classic_alloc_bytes": s.classic_bytes,
                    });
                    let _ = writeln!(
                        text,
                        "with --send-ops {name}: {narrow} B per QP queue buffer (saves {} B)",
                        l.alloc_bytes as i64 - narrow as i64
                    );
                }
                break;
            }
        }
    }
}

/// The "64 B + 16 B per SGE" rule of thumb for an SQ ring.
pub fn estimate_ring_bytes(max_send_wr: u32, max_send_sge: u32) -> u64 {
    max_send_wr as u64 * (64 + 16 * max_send_sge as u64)
}

/// The memory-per-QP table: max_send_wr 128/1024/8192/32768 × max_send_sge
/// 1/4/16, exact allocated bytes for the classic and the `write,send,read` op
/// sets (QP type, inline and receive side from `args`), beside the estimate.
pub fn table(args: &BudgetArgs, caps: &DeviceCaps) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "{} QP memory (allocated bytes; estimate = max_send_wr × (64 + 16·sge))",
        args.qp_type
    );
    let _ = writeln!(
        t,
        "{:>7} {:>4} {:>11} | {:>26} {:>6} | {:>26} {:>6}",
        "send_wr", "sge", "estimate", "classic ops", "ratio", "write,send,read", "ratio"
    );
    for wr in [128u32, 1024, 8192, 32768] {
        for sge in [1u32, 4, 16] {
            let est = estimate_ring_bytes(wr, sge);
            let base = QpCaps::new(args.qp_type)
                .send(wr, sge, args.max_inline_data)
                .recv(args.max_recv_wr, args.max_recv_sge);
            let cell = |r: QpCaps| match qp_layout(&r, caps) {
                Ok(l) => (
                    format!("{} ({}B WQE)", l.alloc_bytes, l.sq.wqe_size),
                    format!("{:.2}", l.alloc_bytes as f64 / est as f64),
                ),
                Err(e) => (
                    match e.limit {
                        Limit::MaxSendWqebb => format!("EINVAL {}>{} BBs", e.requested, e.allowed),
                        _ => format!("EINVAL {}", e.limit.name()),
                    },
                    "-".to_string(),
                ),
            };
            let (c, cr) = cell(base);
            let (n, nr) = cell(base.ops(SendOps::RDMA_ONLY));
            let _ = writeln!(
                t,
                "{wr:>7} {sge:>4} {est:>11} | {c:>26} {cr:>6} | {n:>26} {nr:>6}"
            );
        }
    }
    t
}

/// Run `bareverbs budget`; returns the process exit code (0 fits, 1 does not).
pub fn run(args: &BudgetArgs) -> anyhow::Result<i32> {
    let caps = match &args.device {
        Some(d) => device_caps(&crate::device_arg::parse_device(d)?)?,
        None => load_caps(args.caps.as_deref())?,
    };
    if args.table {
        print!("{}", table(args, &caps));
        return Ok(0);
    }
    let out = compute(args, &caps)?;
    if args.json {
        let v = crate::envelope::envelope("budget", out.json);
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else if out.code == 0 {
        print!("{}", out.text);
    } else {
        eprint!("{}", out.text);
    }
    Ok(out.code)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        b: BudgetArgs,
    }

    fn args(cmd: &str) -> BudgetArgs {
        T::parse_from(std::iter::once("budget").chain(cmd.split_whitespace())).b
    }

    /// [ref §3.9](bareverbs::reference) assumes 512-byte send descriptors.
    fn f39() -> DeviceCaps {
        caps_from_toml("max_sq_desc_sz = 512\nmax_rq_desc_sz = 512").unwrap()
    }

    #[test]
    fn caps_toml_defaults_and_unknown_keys() {
        let c = caps_from_toml("max_sq_desc_sz = 512\nmax_send_wqebb = 1024").unwrap();
        assert_eq!(c.max_sq_desc_sz, 512);
        assert_eq!(c.max_send_wqebb, 1024);
        assert_eq!(c.max_rq_desc_sz, DeviceCaps::DEFAULT.max_rq_desc_sz);
        assert_eq!(c.max_recv_wr, DeviceCaps::DEFAULT.max_recv_wr);
        assert!(caps_from_toml("max_sq_desk = 1").is_err());
    }

    #[test]
    fn json_rc_1024x16_facts() {
        // ref §3.9 row 1.
        let o = compute(
            &args("--qp-type rc --max-send-wr 1024 --max-send-sge 16"),
            &f39(),
        )
        .unwrap();
        assert_eq!(o.code, 0);
        let sq = &o.json["sq"];
        assert_eq!(sq["overhead"], 192);
        assert_eq!(sq["wqe_size"], 448);
        assert_eq!(sq["wqe_cnt"], 8192);
        assert_eq!(sq["max_post"], 1170);
        assert_eq!(sq["max_inline_data"], 252);
        assert_eq!(sq["bytes"], 524288);
        assert_eq!(o.json["rq"]["bytes"], 0);
        assert_eq!(o.json["alloc_bytes"], 524288);
    }

    #[test]
    fn json_error_65536x16_facts() {
        // ref §3.9 row 2: 524288 WQEBBs > 32768.
        let o = compute(&args("--max-send-wr 65536 --max-send-sge 16"), &f39()).unwrap();
        assert_eq!(o.code, 1);
        let e = &o.json["error"];
        assert_eq!(e["errno"], 22);
        assert_eq!(e["stage"], "sq");
        assert_eq!(e["limit"], "max_send_wqebb");
        assert_eq!(e["requested"], 524288);
        assert_eq!(e["allowed"], 32768);
        assert_eq!(
            e["message"],
            "SQ needs 524288 WQEBBs (65536 WRs × 448-byte WQEs); the device allows 32768"
        );
        // By the §3.4 rule the ring is rup2(wr × 448) bytes and may be at most
        // 32768 × 64 = 2 MiB, so wr ≤ floor(2097152 / 448) = 4681.
        assert!(o.text.contains("lower max_send_wr to 4681"), "{}", o.text);
    }

    #[test]
    fn narrower_ops_fix_the_limit_case() {
        // ref §3.9: RC 8193 × 1 fails (256-byte WQEs); RDMA-only WQEs are 64 B
        // (row "ops = RDMA only"), so 8193 WRs need rup2(8193·64)/64 = 16384 BBs.
        let o = compute(&args("--max-send-wr 8193 --max-send-sge 1"), &f39()).unwrap();
        assert_eq!(o.code, 1);
        assert!(o.text.contains("lower max_send_wr to 8192"), "{}", o.text);
        assert!(
            o.text.contains("restrict --send-ops to write,send,read"),
            "{}",
            o.text
        );
        let o = compute(
            &args("--max-send-wr 1024 --max-send-sge 1 --send-ops write,send,read"),
            &f39(),
        )
        .unwrap();
        assert_eq!(o.json["sq"]["overhead"], 32);
        assert_eq!(o.json["sq"]["wqe_size"], 64);
        assert_eq!(o.json["sq"]["bytes"], 65536);
        assert_eq!(o.json["sq"]["max_inline_data"], 28);
    }

    #[test]
    fn cq_coverage_and_node_budget() {
        // ref §3.9 / §3.5: RC 8192 × 1 → max_post 8192; RQ 1024 × 1 → 16384 B, max_post 1024.
        let o = compute(
            &args("--max-send-wr 8192 --max-send-sge 1 --max-recv-wr 1024 --max-recv-sge 1 --cqe 3000"),
            &f39(),
        )
        .unwrap();
        assert_eq!(o.code, 1);
        assert_eq!(o.json["error"]["limit"], "cq_coverage");
        assert_eq!(
            o.json["error"]["message"],
            "CQ with 4095 usable entries cannot hold 8192 send + 1024 receive outstanding WRs"
        );
        let o = compute(
            &args("--max-send-wr 8192 --max-send-sge 1 --max-recv-wr 1024 --max-recv-sge 1 --cqe 9216 --qps 10"),
            &f39(),
        )
        .unwrap();
        assert_eq!(o.code, 0, "{}", o.text);
        // 2 MiB SQ + 16 KiB RQ; CQ rup2(9217) = 16384 entries × 64 B = 1 MiB (§3.7); 64 B records (§4.1).
        let qp = 2097152 + 16384 + 64 + 1048576 + 64;
        assert_eq!(o.json["qp_bytes"], qp);
        assert_eq!(o.json["cq"]["ncqe"], 16384);
        assert_eq!(o.json["node_bytes"], 10 * qp);
    }

    #[test]
    fn table_marks_impossible_qps() {
        let t = table(&args("--qp-type rc"), &f39());
        // ref §3.9: 32768 × 16 at 448 B/WQE → 262144 BBs (over 32768).
        assert!(t.contains("EINVAL 262144>32768 BBs"), "{t}");
        assert_eq!(t.lines().count(), 2 + 12);
    }

    /// SGE counts above the device's max_sge (30 by the kernel rule for
    /// 1024/512-byte descriptors: min(512/16, (512 − 32)/16)) are refused
    /// as bad input, though 40–52 fit a 1024-byte descriptor; 16 / 256
    /// gives min(256/16, (512 − 32)/16) = 16.
    #[test]
    fn sge_above_the_device_max_is_refused() {
        let caps = DeviceCaps::DEFAULT;
        assert_eq!(caps.max_sge, 30);
        for n in [31u32, 40, 52] {
            let e = compute(
                &args(&format!("--max-send-wr 16 --max-send-sge {n}")),
                &caps,
            )
            .unwrap_err();
            assert!(crate::args::is_usage(&e));
            assert_eq!(
                e.to_string(),
                format!("--max-send-sge {n} exceeds the device's max_sge 30 (ibv_devinfo -v)")
            );
        }
        assert_eq!(
            compute(&args("--max-send-wr 16 --max-send-sge 30"), &caps)
                .unwrap()
                .code,
            0
        );
        let e = compute(&args("--max-recv-wr 16 --max-recv-sge 31"), &caps).unwrap_err();
        assert!(
            e.to_string().starts_with("--max-recv-sge 31 exceeds"),
            "{e}"
        );
        let c = caps_from_toml("max_rq_desc_sz = 256").unwrap();
        assert_eq!(c.max_sge, 16);
        assert_eq!(caps_from_toml("max_sge = 8").unwrap().max_sge, 8);
    }

    /// `--device sim` sizes against the simulated ConnectX's QUERY_HCA_CAP
    /// (1024/512 descriptors, 2^15 WQEBBs: the default device); `model` is
    /// no device.
    #[test]
    fn device_caps_from_the_simulator() {
        let d = device_caps(&crate::device_arg::Device::Sim).unwrap();
        assert_eq!(d, DeviceCaps::DEFAULT);
        assert!(device_caps(&crate::device_arg::Device::Model).is_err());
    }

    #[test]
    fn json_keys_match_the_doc() {
        use crate::envelope::{assert_documented, envelope};
        let caps = DeviceCaps::DEFAULT;
        let o = compute(
            &args("--max-send-wr 1024 --max-send-sge 4 --max-recv-wr 64 --cqe 2000 --qps 4"),
            &caps,
        )
        .unwrap();
        assert_documented("budget", &envelope("budget", o.json));
        let o = compute(&args("--max-send-wr 65536 --max-send-sge 16"), &caps).unwrap();
        assert_eq!(o.code, 1);
        assert_documented("budget", &envelope("budget", o.json));
    }
}
