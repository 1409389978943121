//! One result row ([`result_row`]): bandwidth, `-D` latency or latency
//! statistics of a run as perftest computes them, the text of the row, the
//! bandwidths it shows and the [`Figures`] behind it.

use super::verdict::verdict;
use super::{PerfArgs, PerfRunConfig, PerfRunReport, PerfTest};
use crate::perftest::format as pf;
use crate::perftest::stats::{bw_average, bw_stats, lat_stats_from_posted, BwUnit, GBS_DIVISOR};

/// The statistics of one result (what its row printed).
#[derive(Default)]
pub(super) struct Figures {
    pub(super) bw: Option<crate::perftest::stats::BwStats>,
    pub(super) lat: Option<crate::perftest::stats::LatStats>,
    /// `-D` latency: (t_avg µs, transactions per second).
    pub(super) dur: Option<(f64, f64)>,
}

/// One result row: its text, the bandwidths it shows (Gb/s), its
/// statistics, and the failure of a run without enough stamps.
pub(super) struct ResultRow {
    pub(super) text: String,
    pub(super) bw_gbps: Vec<f64>,
    pub(super) fig: Figures,
    pub(super) failure: Option<String>,
}

/// The row of one run `rep` of `cfg` over `iters` iterations: bandwidth,
/// `-D` latency or latency statistics, as perftest computes them.
pub(super) fn result_row(
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
