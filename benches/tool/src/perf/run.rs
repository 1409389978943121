//! `bareverbs perf write-lat|write-bw|send-lat|send-bw|read-lat|read-bw|atomic-lat`:
//! perftest-style tests. The transfer itself comes from a [`PerfBackend`];
//! statistics and output are perftest's ([`crate::perftest`]).
//!
//! Backends (`--device`): `sim` (default, [`super::sim_backend`]: two
//! simulated ConnectX joined by a fabric, modeled time); `model`
//! ([`ModelBackend`](super::model_backend::ModelBackend): timelines
//! computed from the [`NicModel`](crate::model::NicModel) plus
//! the *measured* CPU cost of posting into a memory-backed SQ); `vfio:BDF`
//! ([`super::cmd_backend`] over a ConnectX through VFIO: objects and QPs
//! created by firmware command, transfers measured on hardware); `fw-sim`
//! (the same command-path code on the simulator behind the firmware
//! command interface, modeled time).

pub use super::backend::PerfBackend;
pub use super::config::{qp_request, PerfRunConfig};
pub use super::flags::{Conn, PerfArgs, PerfTest};
pub use super::report::{PerfRunReport, StampsBeyond};
pub use super::rules::{
    configs, configs_on_port, effective_mtu, perftest_rules, port_attrs, PortAttrs, CQ_MOD_RANGE,
    DEF_CQ_MOD, ITERS_RANGE, MAX_INLINE, MAX_MSG_SIZE, MSG_SIZE_CQ_MOD_LIMIT, PERFTEST_MTUS,
    QP_RANGE, TX_RANGE,
};
use crate::model::load_model;
use crate::perftest::format::{self as pf, Endpoint, HeaderInfo, Verb};
use crate::perftest::stats::{bw_average, bw_stats, lat_stats_from_posted, BwUnit, GBS_DIVISOR};
use anyhow::bail;

/// Why a finished run's figures cannot be trusted: not all of its work
/// completed successfully, payload arrived corrupted, or a bandwidth
/// exceeds the link the backend models. `bw_gbps` are the bandwidths
/// derived from the report (Gb/s).
pub fn verdict(cfg: &PerfRunConfig, rep: &PerfRunReport, bw_gbps: &[f64]) -> Option<String> {
    // -D: as many as the time allowed (at least perftest's 5 iterations).
    let per_qp = if cfg.duration.is_some() { 5 } else { cfg.iters };
    let want = per_qp * if cfg.test.is_bw() { cfg.qps as u64 } else { 1 };
    if rep.posted == 0 {
        return Some(format!("nothing was posted ({want} WRs expected)"));
    }
    if rep.posted < want {
        return Some(format!("only {} of {want} WRs were posted", rep.posted));
    }
    if rep.completed_err > 0 || rep.completed_ok < rep.posted {
        return Some(format!(
            "only {} of {} posted WRs completed successfully ({} with an error status)",
            rep.completed_ok, rep.posted, rep.completed_err
        ));
    }
    if rep.mismatches > 0 && (cfg.conn == Conn::Rc || cfg.loss == 0.0) {
        return Some(format!(
            "{} payload bytes did not arrive as sent",
            rep.mismatches
        ));
    }
    if rep.link_gbps > 0.0 {
        let limit = rep.link_gbps * (1.0 + 1e-9);
        for &g in bw_gbps.iter().chain([rep.bandwidth_gbps].iter()) {
            if g > limit {
                return Some(format!(
                    "{g:.2} Gb/s exceeds the {} Gb/s link the backend models",
                    rep.link_gbps
                ));
            }
        }
    }
    None
}

/// A run's printed output and its verdict.
#[derive(Clone, Debug)]
pub struct PerfOutcome {
    /// perftest text or the JSON object (which carries `verdict` and, on
    /// failure, `error`).
    pub output: String,
    /// Why the figures cannot be trusted (the run must exit non-zero).
    pub failure: Option<String>,
}

/// The backend for `--device`.
pub fn backend(args: &PerfArgs) -> anyhow::Result<Box<dyn PerfBackend>> {
    use super::cmd_backend::{self as cmd, CmdOptions};
    let mut opts = CmdOptions::new(&args.device);
    opts.blueflame = args.blueflame;
    if let Some(bdf) = args.device.strip_prefix("vfio:") {
        // Errors are the VFIO host's own, actionable text.
        return cmd::vfio(bdf, opts);
    }
    match args.device.as_str() {
        "sim" => Ok(Box::new(super::sim_backend::SimBackend::new(
            args.seed,
            bareverbs_sim::ModelParams::default(),
        ))),
        // The command-path backend on the simulator (modeled time).
        "fw-sim" => cmd::fw_sim(args.seed, opts),
        // The closed-form NIC model alone (perf ref §2.3), no simulation.
        "model" => Ok(Box::new(super::model_backend::ModelBackend::new(
            load_model(args.model.as_deref())?,
            args.seed,
        ))),
        d => bail!("unknown --device {d:?} (expected sim, model, fw-sim or vfio:BDF)"),
    }
}

/// perftest's binary name of `test` (`ib_write_bw` …).
pub fn perftest_name(test: PerfTest) -> &'static str {
    match test {
        PerfTest::WriteLat => "ib_write_lat",
        PerfTest::WriteBw => "ib_write_bw",
        PerfTest::SendLat => "ib_send_lat",
        PerfTest::SendBw => "ib_send_bw",
        PerfTest::ReadLat => "ib_read_lat",
        PerfTest::ReadBw => "ib_read_bw",
        PerfTest::AtomicLat => "ib_atomic_lat",
    }
}

/// The statistics of one result (what its row printed).
#[derive(Default)]
struct Figures {
    bw: Option<crate::perftest::stats::BwStats>,
    lat: Option<crate::perftest::stats::LatStats>,
    /// `-D` latency: (t_avg µs, transactions per second).
    dur: Option<(f64, f64)>,
}

fn be_modeled(results: &[serde_json::Value]) -> Option<bool> {
    results.iter().find_map(|r| r["modeled"].as_bool())
}

/// One `results[]` object of the perf schema (docs/json.md): every key is
/// present for every backend; what a backend or a failed run cannot know
/// is `null`.
fn result_json(
    cfg: &PerfRunConfig,
    rep: Option<&PerfRunReport>,
    iterations: u64,
    fig: &Figures,
    unit: BwUnit,
    error: Option<&str>,
) -> serde_json::Value {
    use serde_json::{json, Value};
    let f = |x: f64| if x.is_finite() { json!(x) } else { Value::Null };
    let known = |x: f64| if x > 0.0 { f(x) } else { Value::Null };
    let ep = |e: Option<&Endpoint>| match e {
        Some(e) => json!({
            "lid": e.lid, "qpn": e.qpn, "psn": e.psn, "out_reads": e.out_reads,
            "rkey": e.rkey, "vaddr": e.vaddr, "gid": e.gid,
        }),
        None => json!({
            "lid": null, "qpn": null, "psn": null, "out_reads": null,
            "rkey": null, "vaddr": null, "gid": null,
        }),
    };
    const ENGINE: [&str; 9] = [
        "doorbells",
        "wrs_posted",
        "cqes_polled",
        "window",
        "slots",
        "posted_sge",
        "sq_max_post",
        "sq_wqebbs",
        "sq_slot_bytes",
    ];
    let mut counters = serde_json::Map::new();
    let mut device = serde_json::Map::new();
    for k in ENGINE {
        counters.insert(
            k.into(),
            rep.and_then(|r| r.counters.get(k))
                .map_or(Value::Null, |&v| f(v)),
        );
    }
    if let Some(r) = rep {
        for (k, &v) in &r.counters {
            if !ENGINE.contains(&k.as_str()) {
                device.insert(k.clone(), f(v));
            }
        }
    }
    let bw = fig.bw.as_ref();
    let lat = fig.lat.as_ref();
    let peak = bw.and_then(|s| (s.bw_peak > 0.0).then_some(s.bw_peak));
    json!({
        "size": cfg.size,
        "iterations": rep.map(|_| iterations),
        "verdict": if error.is_some() { "fail" } else { "ok" },
        "error": error,
        "modeled": rep.map(|r| r.modeled),
        "posted": rep.map(|r| r.posted),
        "completed_ok": rep.map(|r| r.completed_ok),
        "completed_err": rep.map(|r| r.completed_err),
        "mismatches": rep.map(|r| r.mismatches),
        "msg_rate_mpps": rep.map_or(Value::Null, |r| f(r.msg_rate_mpps)),
        "bandwidth_gbps": rep.map_or(Value::Null, |r| f(r.bandwidth_gbps)),
        "bw_unit": bw.map(|_| match unit { BwUnit::Gbps => "Gb/sec", BwUnit::MBps => "MiB/sec" }),
        "bw_peak": peak,
        "bw_avg": bw.map(|s| s.bw_avg),
        "t_min_usec": lat.map(|s| s.t_min),
        "t_max_usec": lat.map(|s| s.t_max),
        "t_typical_usec": lat.map(|s| s.t_typical),
        "t_avg_usec": lat.map(|s| s.t_avg).or(fig.dur.map(|d| d.0)),
        "t_stdev_usec": lat.map(|s| s.t_stdev),
        "t_p99_usec": lat.map(|s| s.p99),
        "t_p999_usec": lat.map(|s| s.p99_9),
        "tps_avg": fig.dur.map(|d| d.1),
        "post_ns": rep.map_or(Value::Null, |r| known(r.post_ns)),
        "wqe_bytes": rep.and_then(|r| (r.wqe_bytes > 0).then_some(r.wqe_bytes)),
        "wqebbs": rep.and_then(|r| (r.wqebbs > 0).then_some(r.wqebbs)),
        "ring_bytes": rep.and_then(|r| (r.ring_bytes > 0).then_some(r.ring_bytes)),
        "link_gbps": rep.map_or(Value::Null, |r| known(r.link_gbps)),
        "modeled_latency_ns": rep.map_or(Value::Null, |r| if r.modeled { known(r.modeled_latency_ns) } else { Value::Null }),
        "local": ep(rep.and_then(|r| r.local.as_ref())),
        "remote": ep(rep.and_then(|r| r.remote.as_ref())),
        "counters": counters,
        "device_counters": device,
    })
}

/// The perf object of the schema (docs/json.md): the envelope shared by
/// every command, then the perf keys. `backend` is the backend's name and
/// whether its times are modeled, when one was opened.
fn perf_json(
    test: PerfTest,
    args: &PerfArgs,
    backend: Option<(&str, Option<bool>)>,
    header: Option<serde_json::Value>,
    results: Vec<serde_json::Value>,
    error: Option<&str>,
) -> serde_json::Value {
    crate::envelope::envelope(
        &format!("perf {}", super::engine::test_name(test)),
        serde_json::json!({
            "test": perftest_name(test),
            "device": args.device,
            "backend": backend.map(|b| b.0),
            "modeled": backend.and_then(|b| b.1),
            "verdict": if error.is_some() { "fail" } else { "ok" },
            "error": error,
            "header": header,
            "results": results,
        }),
    )
}

/// The JSON of a run that failed before any result (the backend could
/// not be opened): the same keys, `results` empty.
pub fn failure_json(test: PerfTest, args: &PerfArgs, error: &str) -> String {
    perf_json(test, args, None, None, Vec::new(), Some(error)).to_string()
}

/// Runs a perftest-style test and returns its output (text or JSON); a
/// run whose figures cannot be trusted ([`verdict`]) is an error.
pub fn run(test: PerfTest, args: &PerfArgs) -> anyhow::Result<String> {
    let o = run_outcome(test, args)?;
    match o.failure {
        Some(f) => Err(anyhow::anyhow!("{f}")),
        None => Ok(o.output),
    }
}

/// Runs a perftest-style test: its output and verdict. Flags perftest
/// refuses, or that the backend does not implement, are errors before
/// anything runs.
pub fn run_outcome(test: PerfTest, args: &PerfArgs) -> anyhow::Result<PerfOutcome> {
    run_streaming(test, args, &mut |_| {})
}

/// As [`run_outcome`], handing each piece of perftest text to `out` as
/// soon as it exists (the header before the first run, each row as its
/// size completes), so `-a` shows its rows while it runs and a failure
/// leaves the rows before it on screen. The JSON object is built at the
/// end (it is one object).
pub fn run_streaming(
    test: PerfTest,
    args: &PerfArgs,
    out: &mut dyn FnMut(&str),
) -> anyhow::Result<PerfOutcome> {
    use crate::args::UsageExt as _;
    let port = port_attrs(&args.device)?;
    // Bad flags are usage errors (exit 2), found before anything runs.
    let cfgs = configs_on_port(test, args, port).usage()?;
    let mut be = backend(args)?;
    stream_on(test, args, port, &cfgs, &mut *be, out)
}

/// The body of [`run_streaming`] on a chosen backend `be`, for the
/// resolved configurations `cfgs` (one per message size) of `port`.
fn stream_on(
    test: PerfTest,
    args: &PerfArgs,
    port: Option<PortAttrs>,
    cfgs: &[PerfRunConfig],
    be: &mut dyn PerfBackend,
    out: &mut dyn FnMut(&str),
) -> anyhow::Result<PerfOutcome> {
    for cfg in cfgs {
        if let Some(why) = be.refuse(cfg, args) {
            return Err(crate::args::usage_error(why));
        }
    }
    let unit = if args.report_gbits {
        BwUnit::Gbps
    } else {
        BwUnit::MBps
    };
    let verb = test.verb();
    let mut text = String::new();
    let h = header_info(test, args, port, cfgs, be);
    let mut emit = |text: &mut String, s: &str| {
        text.push_str(s);
        if !args.json {
            out(s);
        }
    };
    emit(&mut text, &pf::header(&h));
    let mut results = Vec::new();
    let mut failure = None;
    let columns = result_columns(test, unit, args.duration.is_some());
    for (n, cfg) in cfgs.iter().enumerate() {
        let rep = match be.run(cfg) {
            Ok(r) => r,
            Err(e) => {
                let f = format!("{e:#}");
                results.push(result_json(
                    cfg,
                    None,
                    0,
                    &Figures::default(),
                    unit,
                    Some(&f),
                ));
                failure = Some(f);
                break;
            }
        };
        if n == 0 {
            emit(&mut text, &addresses(verb, &h, &rep, columns));
        }
        let iters = if test.is_bw() {
            rep.completions()
        } else {
            rep.latency_samples_ns.len() as u64 + rep.beyond.samples
        };
        let row = result_row(test, args, cfg, &rep, iters, unit)?;
        failure = row.failure;
        if failure.is_none() {
            failure = verdict(cfg, &rep, &row.bw_gbps);
        }
        let r = result_json(cfg, Some(&rep), iters, &row.fig, unit, failure.as_deref());
        results.push(r);
        if failure.is_some() {
            // No figure of a failed run is printed as a result.
            break;
        }
        emit(&mut text, &row.text);
    }
    emit(&mut text, pf::RESULT_LINE);
    if args.json {
        let top = perf_json(
            test,
            args,
            Some((&be.name(), be_modeled(&results))),
            Some(serde_json::to_value(&h)?),
            results,
            failure.as_deref(),
        );
        return Ok(PerfOutcome {
            output: serde_json::to_string(&top)?,
            failure,
        });
    }
    Ok(PerfOutcome {
        output: text,
        failure,
    })
}

/// perftest's header of the run: the test, the first configuration's
/// settings, the port, and the backend's note lines.
fn header_info(
    test: PerfTest,
    args: &PerfArgs,
    port: Option<PortAttrs>,
    cfgs: &[PerfRunConfig],
    be: &dyn PerfBackend,
) -> HeaderInfo {
    let first = &cfgs[0];
    HeaderInfo {
        verb: test.verb(),
        bw: test.is_bw(),
        post_list: first.post_list,
        device: format!("bareverbs-{}", args.device),
        num_qps: first.qps,
        connection: format!("{:?}", first.conn).to_uppercase(),
        tx_depth: first.tx_depth,
        cq_mod: first.cq_mod,
        // perftest: dynamic CQE polling unless an iteration run is shorter
        // than 3000; a fixed batch of 16, or 64 above 2048 QPs and 8 KiB.
        cqe_poll: if first.duration.is_none() && first.iters < 3000 {
            let big = cfgs.last().is_some_and(|c| c.size > 8192) || args.all;
            Some(if first.qps > 2048 && big { 64 } else { 16 })
        } else {
            None
        },
        mtu: first.mtu,
        link_type: if port.is_some_and(|p| p.ethernet) {
            "Ethernet"
        } else {
            "IB"
        }
        .into(),
        gid_index: port.filter(|p| p.ethernet).map(|_| 0),
        max_inline: first.inline_size,
        out_reads: 16,
        notes: vec![
            format!("Backend         : {} -- {}", be.name(), be.timing_note()),
            format!(
                "QP              : max_send_wr {} max_send_sge {} posted SGEs {} send ops {}",
                first.max_send_wr, first.max_send_sge, first.sge, first.send_ops_name
            ),
        ]
        .into_iter()
        .chain(be.notes(first))
        .collect(),
    }
}

/// The result columns' heading line of `test` (`dur`: a `-D` run).
fn result_columns(test: PerfTest, unit: BwUnit, dur: bool) -> &'static str {
    if test.is_bw() {
        pf::bw_columns(unit)
    } else if dur {
        pf::RESULT_FMT_LAT_DUR
    } else {
        pf::RESULT_FMT_LAT
    }
}

/// What perftest prints before the first row: both QPs' address lines
/// (the zero state for a backend without QPs), then the columns.
fn addresses(verb: Verb, h: &HeaderInfo, rep: &PerfRunReport, columns: &str) -> String {
    // perftest prints both QPs, then the columns.
    let gid = h.gid_index.is_some();
    let zero = Endpoint {
        out_reads: h.out_reads,
        ..Default::default()
    };
    let l = rep.local.clone().unwrap_or_else(|| zero.clone());
    let r = rep.remote.clone().unwrap_or(zero);
    let mut s = pf::address(verb, false, &l, gid);
    s.push_str(&pf::address(verb, true, &r, gid));
    s.push_str(pf::RESULT_LINE);
    s.push_str(columns);
    s.push('\n');
    s
}

/// One result row: its text, the bandwidths it shows (Gb/s), its
/// statistics, and the failure of a run without enough stamps.
struct ResultRow {
    text: String,
    bw_gbps: Vec<f64>,
    fig: Figures,
    failure: Option<String>,
}

/// The row of one run `rep` of `cfg` over `iters` iterations: bandwidth,
/// `-D` latency or latency statistics, as perftest computes them.
fn result_row(
    test: PerfTest,
    args: &PerfArgs,
    cfg: &PerfRunConfig,
    rep: &PerfRunReport,
    iters: u64,
    unit: BwUnit,
) -> anyhow::Result<ResultRow> {
    let verb = test.verb();
    let dur = args.duration.is_some();
    let mut row = String::new();
    let mut bw_gbps = Vec::new();
    let mut fig = Figures::default();
    let mut failure = None;
    if rep.tposted.len() < 2 || (test.is_bw() && rep.tcompleted.is_empty()) {
        failure = verdict(cfg, rep, &[]).or(Some("no completions".into()));
    } else if test.is_bw() {
        let s = if dur {
            // No peak in duration mode (perftest's noPeak): the
            // average from the first post, the last completion and
            // the count, which a -D run keeps whatever its length.
            let (first, last) = (rep.tposted[0], rep.last_completion().unwrap_or(0));
            bw_average(first, last, iters, cfg.size, rep.tick_hz, unit)
        } else {
            bw_stats(
                &rep.tposted,
                &rep.tcompleted,
                cfg.size,
                rep.tick_hz,
                unit,
                cfg.post_list as usize,
                cfg.cq_mod as usize,
                args.no_peak || iters > 20_000,
            )
        }
        .ok_or_else(|| anyhow::anyhow!("no completions"))?;
        row.push_str(&pf::bw_row(cfg.size, iters, &s));
        let to_gbps = unit.divisor() / GBS_DIVISOR;
        bw_gbps = vec![s.bw_peak * to_gbps, s.bw_avg * to_gbps];
        fig.bw = Some(s);
    } else if dur {
        let n = rep.posts().saturating_sub(1).max(1);
        let last = rep.last_post().unwrap_or(rep.tposted[0]);
        let span = last.saturating_sub(rep.tposted[0]) as f64 / rep.tick_hz;
        let t_avg = span * 1e6 / n as f64 / verb.rtt_factor() as f64;
        row.push_str(&pf::lat_dur_row(cfg.size, n, t_avg, n as f64 / span));
        fig.dur = Some((t_avg, n as f64 / span));
    } else {
        let s = lat_stats_from_posted(&rep.tposted, rep.tick_hz / 1e6, verb.rtt_factor())
            .ok_or_else(|| anyhow::anyhow!("too few samples"))?;
        row.push_str(&pf::lat_row(cfg.size, iters, &s));
        fig.lat = Some(s);
    }
    Ok(ResultRow {
        text: row,
        bw_gbps,
        fig,
        failure,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        a: PerfArgs,
    }

    fn args(v: &[&str]) -> PerfArgs {
        let mut all = vec!["t"];
        all.extend_from_slice(v);
        T::parse_from(all).a
    }

    #[test]
    fn write_lat_end_to_end() {
        let out = run(
            PerfTest::WriteLat,
            &args(&["--device", "model", "-n", "200"]),
        )
        .unwrap();
        assert!(out.contains("RDMA_Write Latency Test"));
        assert!(out.contains(pf::RESULT_FMT_LAT));
        assert!(out.contains("MODELED"));
        let j: serde_json::Value = serde_json::from_str(
            &run(
                PerfTest::WriteLat,
                &args(&["--device", "model", "-n", "200", "--json"]),
            )
            .unwrap(),
        )
        .unwrap();
        // Ping-pong: each of the 200 iterations is one WRITE each way.
        assert_eq!(j["results"][0]["posted"], 400);
        assert_eq!(j["results"][0]["completed_ok"], 400);
        assert_eq!(j["results"][0]["completed_err"], 0);
        assert_eq!(j["results"][0]["mismatches"], 0);
        assert!(j["results"][0]["msg_rate_mpps"].as_f64().unwrap() > 0.0);
        assert!(j["results"][0]["modeled_latency_ns"].as_f64().unwrap() > 500.0);
        // 2 B inline WRITE: 32 + align16(6) = 48 B.
        assert_eq!(j["results"][0]["wqe_bytes"], 48);
    }

    #[test]
    fn bw_and_loss() {
        let j: serde_json::Value = serde_json::from_str(
            &run(
                PerfTest::WriteBw,
                &args(&[
                    "--device",
                    "model",
                    "--report_gbits",
                    "-n",
                    "1000",
                    "--json",
                ]),
            )
            .unwrap(),
        )
        .unwrap();
        assert_eq!(j["results"][0]["posted"], 1000);
        let g = j["results"][0]["bandwidth_gbps"].as_f64().unwrap();
        assert!(g > 1.0 && g <= 100.0, "{g}");
        let j: serde_json::Value = serde_json::from_str(
            &run(
                PerfTest::SendBw,
                &args(&[
                    "--device", "model", "-c", "UD", "-s", "1024", "--loss", "0.5", "--seed", "7",
                    "--json",
                ]),
            )
            .unwrap(),
        )
        .unwrap();
        // Half of the 5000 datagrams are lost: their 1024 bytes each never
        // arrive (mismatches count bytes).
        let m = j["results"][0]["mismatches"].as_u64().unwrap();
        assert!(
            m.is_multiple_of(1024) && m / 1024 > 1000 && m / 1024 < 4000,
            "{m}"
        );
    }

    /// `vfio:BDF` opens the function through the VFIO host; on a machine
    /// without that ConnectX the error is the host crate's own actionable
    /// text (no such device / not Mellanox / not bound to vfio-pci / no
    /// VFIO), not a panic.
    #[test]
    fn vfio_and_bad_sizing() {
        for bdf in ["0000:00:00.0", "0000:ff:1f.7"] {
            let e = run(
                PerfTest::WriteLat,
                &args(&["--device", &format!("vfio:{bdf}")]),
            )
            .unwrap_err();
            let want = match bareverbs_vfio::VfioNic::open(bdf) {
                Err(v) => v.to_string(),
                Ok(_) => continue, // a real ConnectX there: nothing to check
            };
            assert_eq!(e.to_string(), want);
        }
        let e = run(PerfTest::WriteLat, &args(&["--device", "vfio:3b:00"])).unwrap_err();
        assert!(e.to_string().contains("bad PCI address"), "{e}");
        let e = run(
            PerfTest::WriteLat,
            &args(&["--device", "model", "--sge", "60", "--send-ops", "classic"]),
        )
        .unwrap_err();
        assert!(e.to_string().contains("QP creation fails"), "{e}");
    }

    /// `--device fw-sim`: perftest's header and row, the header naming the
    /// command path and modeled time.
    #[test]
    fn fw_sim_text_and_json() {
        let out = run(
            PerfTest::WriteLat,
            &args(&["--device", "fw-sim", "-n", "100"]),
        )
        .unwrap();
        assert!(out.contains("RDMA_Write Latency Test"));
        assert!(out.contains("bareverbs-cmd on fw-sim"), "{out}");
        assert!(out.contains("MODELED (virtual clock)"), "{out}");
        assert!(out.contains(pf::RESULT_FMT_LAT));
        let j: serde_json::Value = serde_json::from_str(
            &run(
                PerfTest::ReadBw,
                &args(&["--device", "fw-sim", "-n", "200", "-s", "1024", "--json"]),
            )
            .unwrap(),
        )
        .unwrap();
        assert_eq!(j["results"][0]["posted"], 200);
        assert_eq!(j["results"][0]["completed_ok"], 200);
        assert_eq!(j["results"][0]["mismatches"], 0);
        assert_eq!(j["modeled"], true);
        assert!(j["results"][0]["bw_avg"].as_f64().unwrap() > 0.0);
        let e = run(PerfTest::WriteLat, &args(&["--device", "nic"])).unwrap_err();
        assert!(e.to_string().contains("fw-sim"), "{e}");
    }

    /// The simulator issue's acceptance run: RDMA WRITE bandwidth, 4 KiB,
    /// 20000 iterations on each of 8 QPs, 1% packet loss, seed 7 — every
    /// posted WR completes OK and no payload byte arrives corrupted.
    #[test]
    fn sim_write_bw_with_loss_completes_everything() {
        let j: serde_json::Value = serde_json::from_str(
            &run(
                PerfTest::WriteBw,
                &args(&[
                    "--device", "sim", "-s", "4096", "-n", "20000", "-q", "8", "--loss", "0.01",
                    "--seed", "7", "--json",
                ]),
            )
            .unwrap(),
        )
        .unwrap();
        assert_eq!(j["results"][0]["posted"], 160_000);
        assert_eq!(j["results"][0]["completed_ok"], 160_000);
        assert_eq!(j["results"][0]["completed_err"], 0);
        assert_eq!(j["results"][0]["mismatches"], 0);
        assert!(j["results"][0]["msg_rate_mpps"].as_f64().unwrap() > 0.0);
    }

    fn err(test: PerfTest, v: &[&str]) -> String {
        format!("{:#}", run(test, &args(v)).unwrap_err())
    }

    fn json(test: PerfTest, v: &[&str]) -> (serde_json::Value, Option<String>) {
        let mut v = v.to_vec();
        v.push("--json");
        let o = run_outcome(test, &args(&v)).unwrap();
        (serde_json::from_str(&o.output).unwrap(), o.failure)
    }

    /// perftest `change_conn_type`: UD only with SEND, UC without READ and
    /// atomics — on every backend, before anything runs.
    #[test]
    fn connection_types_perftest_refuses() {
        use PerfTest::*;
        for dev in ["sim", "fw-sim", "model"] {
            for t in [WriteBw, WriteLat, ReadBw, ReadLat, AtomicLat] {
                let e = err(t, &["--device", dev, "-c", "UD", "-n", "100"]);
                assert_eq!(e, "UD connection only possible in SEND verb", "{t:?} {dev}");
            }
            for t in [ReadBw, ReadLat, AtomicLat] {
                let e = err(t, &["--device", dev, "-c", "UC", "-n", "100"]);
                assert_eq!(e, "UC connection not possible in READ/ATOMIC verbs");
            }
        }
    }

    /// perftest's option ranges (CHECK_VALUE_IN_RANGE and friends) and
    /// cross-checks (force_dependecies), with its messages.
    #[test]
    fn flags_perftest_refuses() {
        use PerfTest::*;
        let cases: &[(PerfTest, &[&str], &str)] = &[
            (WriteBw, &["-m", "99999"], "Invalid MTU - 99999"),
            (WriteBw, &["-m", "1500"], "{256,512,1024,2048,4096}"),
            (
                WriteBw,
                &["-s", "0"],
                "Message Size should be between 1 and 2147483647",
            ),
            (
                WriteBw,
                &["-s", "4294967296"],
                "Message Size should be between 1 and",
            ),
            (
                WriteBw,
                &["-t", "0"],
                "Tx depth should be between 1 and 15000",
            ),
            (
                WriteBw,
                &["-t", "15001"],
                "Tx depth should be between 1 and 15000",
            ),
            (
                WriteBw,
                &["-n", "4"],
                "Iteration num should be between 5 and 4294967296",
            ),
            (
                WriteBw,
                &["-q", "0"],
                "num of Qps should be between 1 and 16384",
            ),
            (
                WriteBw,
                &["-q", "16385"],
                "num of Qps should be between 1 and 16384",
            ),
            (
                WriteBw,
                &["-Q", "0"],
                "CQ moderation should be between 1 and 1024",
            ),
            (
                WriteBw,
                &["-Q", "1025"],
                "CQ moderation should be between 1 and 1024",
            ),
            (
                WriteBw,
                &["-I", "100000"],
                "Max inline should be between 0 and 1024",
            ),
            (WriteBw, &["-D", "0"], "Duration period must be positive"),
            (
                WriteBw,
                &["-D", "1", "-a"],
                "Duration mode currently doesn't support",
            ),
            (
                WriteBw,
                &["-l", "3", "-n", "1000"],
                "Number of iterations must be a multiple of post list size",
            ),
            (
                WriteBw,
                &["-l", "4", "-Q", "3", "-n", "1000"],
                "Post list size must be a multiple of CQ moderation",
            ),
            (
                ReadLat,
                &["-l", "16"],
                "Post list is supported in BW tests only",
            ),
            (
                ReadLat,
                &["-q", "2"],
                "Multiple QPs only available on bw tests",
            ),
            (
                WriteLat,
                &["-q", "2"],
                "Multiple QPs only available on bw tests",
            ),
            (
                ReadLat,
                &["-I", "64"],
                "Inline feature not available on READ/Atomic verbs",
            ),
            (
                ReadBw,
                &["-I", "0"],
                "Inline feature not available on READ/Atomic verbs",
            ),
            (
                AtomicLat,
                &["-s", "64"],
                "Message size cannot be changed for Atomic tests",
            ),
            (
                AtomicLat,
                &["-a"],
                "Message size cannot be changed for Atomic tests",
            ),
        ];
        for (t, v, want) in cases {
            let e = err(*t, v);
            assert!(e.contains(want), "{t:?} {v:?}: {e}");
        }
        // Accepted: -Q on a latency test (perftest takes it), atomic -s 8.
        run(ReadLat, &args(&["-Q", "1", "-n", "50"])).unwrap();
        run(AtomicLat, &args(&["-s", "8", "-n", "50"])).unwrap();
    }

    /// perftest's adjustments: the TX depth is at most -n, CQ moderation
    /// is 1 above 8192 B unless given and at most the TX depth, a post
    /// list sets it, UD messages are capped at the MTU.
    #[test]
    fn perftest_adjustments() {
        let c = configs(PerfTest::WriteBw, &args(&["-n", "50"])).unwrap();
        assert_eq!((c[0].tx_depth, c[0].cq_mod), (50, 1));
        let c = configs(PerfTest::WriteBw, &args(&["-s", "4096"])).unwrap();
        assert_eq!(c[0].cq_mod, 100);
        let c = configs(PerfTest::WriteBw, &args(&["-s", "4096", "-t", "16"])).unwrap();
        assert_eq!(c[0].cq_mod, 16);
        let c = configs(PerfTest::WriteBw, &args(&["-Q", "4"])).unwrap();
        assert_eq!(c[0].cq_mod, 4);
        let c = configs(PerfTest::WriteBw, &args(&["-l", "8", "-s", "64"])).unwrap();
        assert_eq!(c[0].cq_mod, 8);
        let c = configs(PerfTest::SendBw, &args(&["-c", "UD", "-m", "2048"])).unwrap();
        assert_eq!(c[0].size, 2048);
    }

    /// `--device sim` runs what the flags say: UC and UD QPs, the
    /// requested max_send_wr, post lists, CQ moderation, MTU.
    #[test]
    fn sim_honours_the_flags() {
        for (t, v) in [
            (PerfTest::WriteBw, ["-c", "UC", "-s", "4096"]),
            (PerfTest::SendBw, ["-c", "UD", "-s", "1024"]),
        ] {
            let mut a = vec!["-n", "1000"];
            a.extend_from_slice(&v);
            let (j, f) = json(t, &a);
            assert_eq!(f, None, "{v:?} {j}");
            assert_eq!(
                (
                    j["results"][0]["posted"].as_u64(),
                    j["results"][0]["completed_ok"].as_u64()
                ),
                (Some(1000), Some(1000))
            );
            assert_eq!(j["results"][0]["mismatches"], 0, "{v:?}");
        }
        // max_send_wr 512 (1 WQEBB per WQE): a 512-WQEBB ring.
        let (j, f) = json(PerfTest::WriteBw, &["--max-send-wr", "512", "-n", "1000"]);
        assert_eq!(f, None);
        assert_eq!(j["results"][0]["counters"]["sq_wqebbs"], 512.0);
        let c = |v: &[&str]| {
            let (j, f) = json(PerfTest::WriteBw, v);
            assert_eq!(f, None, "{j}");
            assert_eq!(j["verdict"], "ok");
            (
                j["results"][0]["device_counters"]["requester.doorbells"]
                    .as_f64()
                    .unwrap(),
                j["results"][0]["device_counters"]["requester.cqes"]
                    .as_f64()
                    .unwrap(),
            )
        };
        // -s 4096: perftest moderates by 100 (plus the window-filling WR).
        let (db, cqes) = c(&["-s", "4096", "-n", "1000"]);
        assert_eq!(db, 1000.0);
        assert!(cqes < 100.0, "{cqes}");
        let (_, cqes) = c(&["-s", "4096", "-n", "1000", "-Q", "1"]);
        assert_eq!(cqes, 1000.0);
        let (db, cqes) = c(&["-s", "4096", "-n", "1000", "-l", "4"]);
        assert_eq!((db, cqes), (250.0, 250.0));
    }

    /// Runs whose work did not all complete, or whose figures exceed the
    /// modeled link, fail (run errors; JSON carries the verdict).
    #[test]
    fn impossible_results_fail() {
        // Everything lost: the RC QP fails with retries exhausted, on
        // every backend.
        for dev in ["sim", "model"] {
            let e = err(
                PerfTest::WriteBw,
                &["--device", dev, "--loss", "1", "-n", "100"],
            );
            assert!(e.contains("RETRY_EXC_ERR"), "{dev}: {e}");
            let (j, f) = json(
                PerfTest::WriteBw,
                &["--device", dev, "--loss", "1", "-n", "100"],
            );
            assert!(f.is_some());
            assert_eq!(j["verdict"], "fail");
            assert!(
                j["error"].as_str().unwrap().contains("RETRY_EXC_ERR"),
                "{j}"
            );
            assert!(j["results"][0]["bw_avg"].is_null(), "{j}");
        }
        let e = err(
            PerfTest::WriteBw,
            &["--device", "fw-sim", "--loss", "1", "-n", "100"],
        );
        assert!(e.contains("RETRY_EXC_ERR") || e.contains("retry"), "{e}");
        // The QP is created with -I as max_inline_data (as perftest does):
        // 1024 B inline makes 1072-byte WQEs (ctrl 16 + raddr 16 + 4 +
        // 1024, rounded to 16), more than the device's 1024: refused
        // before anything runs, as a usage error (perftest: "Couldn't
        // create QP"). 512 B inline fits and runs.
        for dev in ["sim", "fw-sim", "model"] {
            let e = run(
                PerfTest::WriteBw,
                &args(&["--device", dev, "-I", "1024", "-s", "1024", "-n", "100"]),
            )
            .unwrap_err();
            assert!(crate::args::is_usage(&e), "{dev}: {e}");
            assert!(e.to_string().contains("1072-byte WQEs"), "{dev}: {e}");
            let (j, f) = json(
                PerfTest::WriteBw,
                &["--device", dev, "-I", "512", "-s", "512", "-n", "100"],
            );
            assert_eq!(f, None, "{dev}: {j}");
        }
        // A fabricated report over the link.
        let cfg = configs(PerfTest::WriteBw, &args(&["-n", "100"]))
            .unwrap()
            .remove(0);
        let rep = PerfRunReport {
            posted: 100,
            completed_ok: 100,
            link_gbps: 100.0,
            ..Default::default()
        };
        assert_eq!(verdict(&cfg, &rep, &[99.0, 98.0]), None);
        let v = verdict(&cfg, &rep, &[6553.6, 6525.9]).unwrap();
        assert!(v.contains("exceeds the 100 Gb/s link"), "{v}");
        let v = verdict(
            &cfg,
            &PerfRunReport {
                posted: 0,
                ..rep.clone()
            },
            &[],
        )
        .unwrap();
        assert!(v.contains("nothing was posted"), "{v}");
    }

    /// UC and UD complete once the message has left the port, so their
    /// bandwidth keeps to the 100 Gb/s link (it was 6553.6 Gb/s for UC
    /// 64 KiB and a 327 Gb/s peak for UD 4 KiB).
    #[test]
    fn unreliable_bandwidth_keeps_to_the_link() {
        for (t, v) in [
            (PerfTest::WriteBw, ["-c", "UC", "-s", "65536"]),
            (PerfTest::SendBw, ["-c", "UD", "-s", "4096"]),
            (PerfTest::WriteBw, ["-c", "RC", "-s", "65536"]),
        ] {
            let mut a = vec!["--device", "fw-sim", "-n", "500", "--report_gbits"];
            a.extend_from_slice(&v);
            let (j, f) = json(t, &a);
            assert_eq!(f, None, "{j}");
            let (peak, avg) = (
                j["results"][0]["bw_peak"].as_f64().unwrap(),
                j["results"][0]["bw_avg"].as_f64().unwrap(),
            );
            assert!(
                peak <= 100.0 && avg <= 100.0 && avg > 80.0,
                "{v:?}: {peak} {avg}"
            );
        }
    }

    /// The leaf keys of a perf JSON object: nested objects by dotted path,
    /// arrays of objects as `[]`, `device_counters` (a map) as one leaf.
    fn leaves(v: &serde_json::Value, path: &str, out: &mut std::collections::BTreeSet<String>) {
        match v {
            serde_json::Value::Object(m) if !path.ends_with("device_counters") => {
                for (k, x) in m {
                    let p = if path.is_empty() {
                        k.clone()
                    } else {
                        format!("{path}.{k}")
                    };
                    leaves(x, &p, out);
                }
            }
            serde_json::Value::Array(a) if a.first().is_some_and(|x| x.is_object()) => {
                for x in a {
                    leaves(x, &format!("{path}[]"), out);
                }
            }
            _ => {
                out.insert(path.to_string());
            }
        }
    }

    /// The keys docs/json.md documents (its "Envelope" and "perf" tables),
    /// without the rows that only name an object whose keys follow.
    fn documented_keys() -> std::collections::BTreeSet<String> {
        let doc = include_str!("../../../../docs/json.md");
        let mut keys = std::collections::BTreeSet::new();
        let mut section = "";
        for line in doc.lines() {
            if let Some(h) = line.strip_prefix("## ") {
                section = if h == "Envelope" || h == "perf" {
                    "in"
                } else {
                    ""
                };
                continue;
            }
            if section.is_empty() {
                continue;
            }
            if let Some(rest) = line.strip_prefix("| `") {
                if let Some(end) = rest.find('`') {
                    keys.insert(rest[..end].to_string());
                }
            }
        }
        let all = keys.clone();
        keys.retain(|k| !all.iter().any(|o| o.starts_with(&format!("{k}."))));
        keys
    }

    /// `--json` is one versioned schema: every backend prints exactly the
    /// keys docs/json.md lists, for bandwidth and latency tests, and for
    /// a failed run; unknowns are null, perftest's test names.
    #[test]
    fn json_keys_are_the_documented_schema() {
        let doc = documented_keys();
        assert!(
            doc.contains("schema") && doc.contains("results[].bw_avg"),
            "{doc:?}"
        );
        for dev in ["sim", "fw-sim", "model"] {
            for (t, v) in [
                (PerfTest::WriteBw, vec!["-n", "100"]),
                (PerfTest::ReadLat, vec!["-n", "100"]),
                (PerfTest::WriteBw, vec!["-n", "100", "--loss", "1"]),
            ] {
                let mut a = vec!["--device", dev];
                a.extend(v.iter().copied());
                let (j, _) = json(t, &a);
                let mut got = std::collections::BTreeSet::new();
                leaves(&j, "", &mut got);
                assert_eq!(got, doc, "{dev} {t:?} {v:?}");
                assert_eq!(j["schema"], "bareverbs/1");
                assert_eq!(
                    j["command"],
                    format!("perf {}", crate::perf::engine::test_name(t))
                );
                assert_eq!(j["test"], perftest_name(t));
            }
            // Unknowns are null, not 0: a latency test has no BW figures.
            let (j, _) = json(PerfTest::ReadLat, &["--device", dev, "-n", "100"]);
            assert!(j["results"][0]["bw_avg"].is_null(), "{j}");
            assert!(j["results"][0]["t_avg_usec"].as_f64().unwrap() > 0.0);
        }
        assert_eq!(perftest_name(PerfTest::WriteBw), "ib_write_bw");
        // A backend that could not be opened: the same envelope, no results.
        let f: serde_json::Value =
            serde_json::from_str(&failure_json(PerfTest::WriteBw, &args(&[]), "x")).unwrap();
        assert_eq!(
            (f["schema"].as_str(), f["verdict"].as_str()),
            (Some("bareverbs/1"), Some("fail"))
        );
        assert!(f["backend"].is_null() && f["results"].as_array().unwrap().is_empty());
    }

    /// Memory and time stay bounded: -q 16384 is refused before anything
    /// is allocated (usage error naming the memory), -D bounds wall-clock
    /// time on the simulator, and -a streams each row as it completes, so
    /// a failure at 4 MiB leaves the rows before it printed.
    #[test]
    fn memory_and_time_are_bounded() {
        for dev in ["sim", "fw-sim", "model"] {
            let e = run(PerfTest::WriteBw, &args(&["--device", dev, "-q", "16384"])).unwrap_err();
            assert!(crate::args::is_usage(&e), "{dev}: {e}");
            assert!(
                e.to_string().contains("MiB of queue and buffer memory"),
                "{e}"
            );
        }
        let t = std::time::Instant::now();
        let (j, f) = json(PerfTest::WriteBw, &["-D", "1"]);
        let wall = t.elapsed().as_secs_f64();
        assert_eq!(f, None, "{j}");
        assert!((1.0..10.0).contains(&wall), "-D 1 took {wall} s");
        let r = &j["results"][0];
        assert_eq!(r["posted"], r["completed_ok"]);
        assert!(r["posted"].as_u64().unwrap() >= 5);
        // -a on fw-sim runs every size perftest's -a does (2 B .. 8 MiB:
        // memory keys take large pages above 2.4 MiB); a backend that
        // fails at 4 MiB leaves the rows before it printed, streamed one
        // by one, and the failure names the size.
        struct FailFrom(Box<dyn PerfBackend>, u64);
        impl PerfBackend for FailFrom {
            fn name(&self) -> String {
                self.0.name()
            }
            fn run(&mut self, cfg: &PerfRunConfig) -> anyhow::Result<PerfRunReport> {
                anyhow::ensure!(cfg.size < self.1, "injected failure at -s {}", cfg.size);
                self.0.run(cfg)
            }
        }
        let a = args(&["--device", "fw-sim", "-a", "-n", "5"]);
        let port = port_attrs(&a.device).unwrap();
        let cfgs = configs_on_port(PerfTest::WriteBw, &a, port).unwrap();
        let all = run(PerfTest::WriteBw, &a).unwrap();
        let sizes: Vec<u64> = all
            .lines()
            .filter_map(|l| l.split_whitespace().next()?.parse().ok())
            .collect();
        assert_eq!(sizes, (1..=23).map(|e| 1u64 << e).collect::<Vec<_>>());
        let mut be = FailFrom(backend(&a).unwrap(), 4 << 20);
        let mut streamed = Vec::new();
        let o = stream_on(PerfTest::WriteBw, &a, port, &cfgs, &mut be, &mut |s| {
            streamed.push(s.to_string())
        })
        .unwrap();
        let f = o.failure.unwrap();
        assert!(f.contains("-s 4194304"), "{f}");
        let text = streamed.concat();
        assert_eq!(text, o.output);
        let rows: Vec<u64> = text
            .lines()
            .filter_map(|l| l.split_whitespace().next()?.parse().ok())
            .collect();
        assert_eq!(rows, (1..=21).map(|e| 1u64 << e).collect::<Vec<_>>());
        // Each row was handed out on its own, as it completed.
        assert!(streamed.len() >= 2 + rows.len(), "{}", streamed.len());
    }
}
