//! The report: samples and post/completion stamps (bounded in a `-D`
//! run), and the finished [`PerfRunReport`] with rates and counters.

use super::super::consts::RESERVE_MAX;
use super::super::plan::Plan;
use super::Engine;
use crate::perf::report::PerfRunReport;
use std::collections::BTreeMap;

impl Engine<'_> {
    /// Records one round trip / operation time.
    pub(super) fn sample(&mut self, t: &mut u64, ns: u64) {
        *t += ns;
        self.push_posted(*t);
        if self.keeps(self.rep.latency_samples_ns.len()) {
            self.rep.latency_samples_ns.push(ns as f64 / self.rtt());
        } else {
            self.rep.beyond.samples += 1;
        }
    }

    /// Whether a stamp list of `len` entries takes another: always, but
    /// in a `-D` run only up to [`RESERVE_MAX`] (the rest is counted in
    /// `rep.beyond`, so memory does not grow with the duration).
    pub(super) fn keeps(&self, len: usize) -> bool {
        self.stop_at.is_none() || (len as u64) < RESERVE_MAX
    }

    /// Records a post stamp (see [`Self::keeps`]).
    pub(super) fn push_posted(&mut self, t: u64) {
        if self.keeps(self.rep.tposted.len()) {
            self.rep.tposted.push(t);
        } else {
            self.rep.beyond.posted += 1;
            self.rep.beyond.last_posted = t;
        }
    }

    /// Records a completion stamp (see [`Self::keeps`]).
    pub(super) fn push_completed(&mut self, t: u64) {
        if self.keeps(self.rep.tcompleted.len()) {
            self.rep.tcompleted.push(t);
        } else {
            self.rep.beyond.completed += 1;
            self.rep.beyond.last_completed = t;
        }
    }

    pub(super) fn rtt(&self) -> f64 {
        self.verb.rtt_factor() as f64
    }

    /// The report, with rates and counters.
    pub(in crate::perf::engine) fn finish(&mut self, plan: &Plan) -> PerfRunReport {
        let modeled = self.timer.modeled();
        let mut rep = std::mem::take(&mut self.rep);
        rep.modeled = modeled;
        rep.link_gbps = self.timer.link_gbps();
        rep.post_ns = if self.post_wrs > 0 {
            self.post_ns_total / self.post_wrs as f64
        } else {
            0.0
        };
        let size = plan.size as f64;
        if self.test.is_bw() {
            let span = rep.tcompleted.last().copied().unwrap_or(0).max(1) as f64;
            let n = rep.tcompleted.len() as f64;
            rep.msg_rate_mpps = n / span * 1e3;
            rep.bandwidth_gbps = n * size * 8.0 / span;
        } else {
            let span = rep.tposted.last().copied().unwrap_or(0).max(1) as f64;
            let n = rep.latency_samples_ns.len() as f64;
            rep.msg_rate_mpps = n / span * 1e3;
            rep.bandwidth_gbps = n * size * 8.0 / span;
            if modeled && n > 0.0 {
                rep.modeled_latency_ns = rep.latency_samples_ns.iter().sum::<f64>() / n;
            }
        }
        let mut c = BTreeMap::new();
        c.insert("doorbells".into(), self.doorbells as f64);
        c.insert("wrs_posted".into(), self.post_wrs as f64);
        c.insert("cqes_polled".into(), self.cqes as f64);
        if self.events.is_some() {
            c.insert("cq_events".into(), self.wakeups as f64);
        }
        c.insert("window".into(), self.window as f64);
        c.insert("slots".into(), plan.slots as f64);
        c.insert("posted_sge".into(), plan.k as f64);
        c.insert("sq_max_post".into(), plan.layout.sq.max_post as f64);
        c.insert("sq_wqebbs".into(), plan.layout.sq.wqe_cnt as f64);
        c.insert("sq_slot_bytes".into(), plan.layout.sq.wqe_size as f64);
        self.timer.counters(&mut c);
        rep.counters = c;
        rep
    }
}
