//! The simulator behind `bareverbs perf --device sim`: two simulated
//! ConnectX devices joined by the in-process fabric run the test through
//! bareverbs' real post/poll path (`bareverbs_sim::perf::run_perf`); times
//! are the simulator's modeled (virtual) times.

use super::run::{Conn, PerfArgs, PerfBackend, PerfRunConfig, PerfRunReport, PerfTest};
use bareverbs_sim::perf::{run_perf, PerfConfig, TestKind};
use std::collections::BTreeMap;

/// Runs perftest-style tests on the simulator.
#[derive(Debug, Default)]
pub struct SimBackend {
    /// Cost-model parameters (PERF_AND_SIM §2.3 defaults).
    pub params: bareverbs_sim::ModelParams,
}

fn kind(t: PerfTest) -> TestKind {
    match t {
        PerfTest::WriteLat => TestKind::WriteLat,
        PerfTest::WriteBw => TestKind::WriteBw,
        PerfTest::SendLat => TestKind::SendLat,
        PerfTest::SendBw => TestKind::SendBw,
        PerfTest::ReadLat => TestKind::ReadLat,
        PerfTest::ReadBw => TestKind::ReadBw,
        PerfTest::AtomicLat => TestKind::AtomicLat,
    }
}

fn counters(prefix: &str, c: &bareverbs_sim::Counters, out: &mut BTreeMap<String, f64>) {
    if let Ok(serde_json::Value::Object(m)) = serde_json::to_value(c) {
        for (k, v) in m {
            if let Some(x) = v.as_f64() {
                out.insert(format!("{prefix}.{k}"), x);
            }
        }
    }
}

impl PerfBackend for SimBackend {
    fn name(&self) -> String {
        "bareverbs-sim (simulated ConnectX, modeled time)".into()
    }

    fn refuse(&self, cfg: &PerfRunConfig, args: &PerfArgs) -> Option<String> {
        let no = |what: &str| {
            Some(format!(
                "--device sim does not model {what}; use --device fw-sim"
            ))
        };
        if cfg.conn != Conn::Rc {
            let c = format!("{:?}", cfg.conn).to_uppercase();
            return no(&format!("{c} QPs (-c {c}): it runs RC only"));
        }
        if args.max_send_wr.is_some() {
            return no("--max-send-wr (its send queue is sized by the TX depth)");
        }
        if args.send_ops.is_some() {
            return no("--send-ops");
        }
        if args.caps.is_some() {
            return no("--caps");
        }
        if args.blueflame {
            return no("--blueflame (it always copies small WQEs through BlueFlame)");
        }
        if args.model.is_some() {
            return Some("--model applies to --device model only".into());
        }
        None
    }

    fn run(&mut self, cfg: &PerfRunConfig) -> anyhow::Result<PerfRunReport> {
        let pc = PerfConfig {
            kind: kind(cfg.test),
            size: u32::try_from(cfg.size).map_err(|_| anyhow::anyhow!("-s too large"))?,
            iterations: cfg.iters,
            num_qps: cfg.qps.max(1),
            tx_depth: cfg.tx_depth.max(1),
            max_send_sge: cfg.max_send_sge.max(1),
            posted_sges: cfg.sge.max(1),
            max_inline: cfg.inline_size,
            inline: cfg.inline,
            post_list: cfg.post_list.max(1),
            cq_mod: cfg.cq_mod.max(1),
            mtu: cfg.mtu,
            loss: cfg.loss,
            seed: cfg.seed,
            params: self.params,
        };
        let r = run_perf(&pc);
        if let Some(e) = &r.error {
            anyhow::bail!("{}: {e}", self.name());
        }
        let test = cfg.test;
        let rtt = test.verb().rtt_factor() as f64;
        // The simulator reports latency samples (what perftest prints) and
        // the virtual time of the whole run; perftest's statistics take
        // per-iteration post/completion stamps, so they are rebuilt: for
        // latency tests as the running sum of samples × perftest's RTT
        // factor, for bandwidth tests spread evenly over the run's virtual
        // time (the simulator does not stamp each iteration).
        let (tposted, tcompleted) = if !r.lat_samples_ns.is_empty() {
            let mut t = 0.0;
            let mut p = vec![0u64];
            for s in &r.lat_samples_ns {
                t += s * rtt;
                p.push(t.round() as u64);
            }
            (p, Vec::new())
        } else {
            let n = r.completed_ok.max(1);
            let step = r.elapsed_ns as f64 / n as f64;
            (
                (0..n).map(|i| (i as f64 * step) as u64).collect(),
                (1..=n).map(|i| (i as f64 * step) as u64).collect(),
            )
        };
        let mut c = BTreeMap::new();
        counters("requester", &r.requester, &mut c);
        counters("responder", &r.responder, &mut c);
        c.insert("wall_s".into(), r.wall_s);
        c.insert("elapsed_ns".into(), r.elapsed_ns as f64);
        let lat = if r.lat_samples_ns.is_empty() {
            0.0
        } else {
            r.lat_samples_ns.iter().sum::<f64>() / r.lat_samples_ns.len() as f64
        };
        Ok(PerfRunReport {
            backend: self.name(),
            modeled: true,
            posted: r.posted,
            completed_ok: r.completed_ok,
            completed_err: r.completed_err,
            mismatches: r.mismatches,
            msg_rate_mpps: r.msg_rate_mpps,
            bandwidth_gbps: r.bw_gbps,
            tick_hz: 1e9,
            tposted,
            tcompleted,
            latency_samples_ns: r.lat_samples_ns,
            modeled_latency_ns: lat,
            link_gbps: self.params.link_gbps,
            counters: c,
            ..Default::default()
        })
    }
}
