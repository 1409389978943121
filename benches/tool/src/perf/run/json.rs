//! The perf object of the JSON schema (docs/json.md): one `results[]`
//! object per run ([`result_json`]), the perf object around them
//! ([`perf_json`]) and the object of a run that failed before any result
//! ([`failure_json`]).

use super::names::perftest_name;
use super::row::Figures;
use super::{PerfArgs, PerfRunConfig, PerfRunReport, PerfTest};
use crate::perftest::format::Endpoint;
use crate::perftest::stats::BwUnit;

/// Whether the results' backend models its times (the first result that
/// says).
pub(super) fn be_modeled(results: &[serde_json::Value]) -> Option<bool> {
    results.iter().find_map(|r| r["modeled"].as_bool())
}

/// One `results[]` object of the perf schema (docs/json.md): every key is
/// present for every backend; what a backend or a failed run cannot know
/// is `null`.
pub(super) fn result_json(
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
        "peer": peer(rep.and_then(|r| r.peer.as_ref())),
        "counters": counters,
        "device_counters": device,
    })
}

/// The `peer` object of a result: the peer host of a two-host run, every
/// key `null` in a loopback run.
fn peer(p: Option<&crate::perf::report::PeerRun>) -> serde_json::Value {
    use serde_json::json;
    let bw = p.and_then(|p| p.bw);
    json!({
        "role": p.map(|p| p.role),
        "version": p.map(|p| p.version.clone()),
        "bareverbs": p.map(|p| p.bareverbs),
        "bw_size": bw.map(|b| b.size),
        "bw_iters": bw.map(|b| b.iters),
        "bw_peak": bw.map(|b| b.bw_peak),
        "bw_avg": bw.map(|b| b.bw_avg),
        "msg_rate_avg": bw.map(|b| b.msg_rate_avg),
    })
}

/// The perf object of the schema (docs/json.md): the envelope shared by
/// every command, then the perf keys. `backend` is the backend's name and
/// whether its times are modeled, when one was opened.
pub(super) fn perf_json(
    test: PerfTest,
    args: &PerfArgs,
    backend: Option<(&str, Option<bool>)>,
    header: Option<serde_json::Value>,
    results: Vec<serde_json::Value>,
    error: Option<&str>,
) -> serde_json::Value {
    crate::envelope::envelope(
        &format!("perf {}", crate::perf::engine::test_name(test)),
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
