//! Every [`PerfDevice`] is a [`PerfBackend`]: its header notes and
//! refusals (the plan's QP and memory checks), and [`run_on`], which runs
//! a configuration on it (plan, open, the engine, close).

use super::device::PerfDevice;
use super::errors::QpRejected;
use super::plan::{memory_check, Plan};
use super::role::Role;
use super::runner::Engine;
use super::two_hosts::PeerLink;
use crate::perf::backend::PerfBackend;
use crate::perf::config::PerfRunConfig;
use crate::perf::flags::PerfArgs;
use crate::perf::report::PerfRunReport;

impl<D: PerfDevice> PerfBackend for D {
    fn name(&self) -> String {
        PerfDevice::name(self)
    }
    fn timing_note(&self) -> String {
        PerfDevice::timing_note(self)
    }
    fn run(&mut self, cfg: &PerfRunConfig) -> anyhow::Result<PerfRunReport> {
        run_on(self, cfg)
    }
    fn run_half(
        &mut self,
        cfg: &PerfRunConfig,
        role: Role,
        link: &mut dyn PeerLink,
    ) -> anyhow::Result<PerfRunReport> {
        super::two_hosts::run_half(self, cfg, role, link)
    }
    fn notes(&self, cfg: &PerfRunConfig) -> Vec<String> {
        let mut v = Vec::new();
        let modeled = self.variance_note().is_some();
        if cfg.duration.is_some() {
            v.push(if modeled {
                format!(
                    "Duration        : -D {} bounds WALL-CLOCK time here: WRs are posted for {} s of \
                     real time; the figures are in the device's modeled time",
                    cfg.duration.unwrap_or(0),
                    cfg.duration.unwrap_or(0)
                )
            } else {
                format!("Duration        : -D {} s of wall-clock time", cfg.duration.unwrap_or(0))
            });
        }
        if let Ok(p) = Plan::with_inflight(cfg, &self.caps(cfg), self.inflight_bytes()) {
            if cfg.test.is_bw() && p.window < cfg.tx_depth {
                v.push(format!(
                    "In flight       : at most {} WRs per QP (TX depth {}): {}",
                    p.window,
                    cfg.tx_depth,
                    match self.inflight_bytes() {
                        Some(b) if p.window as u64 == (b / p.size as u64).max(2) => format!(
                            "the simulator holds each in-flight WR's payload, capped at {} MiB per QP",
                            b >> 20
                        ),
                        _ => "the send queue's max_post or the receive queue bounds it".into(),
                    }
                ));
            }
        }
        if let Some(n) = self.variance_note() {
            v.push(format!("Variance        : {n}"));
        }
        v
    }
    fn refuse(&self, cfg: &PerfRunConfig, args: &PerfArgs) -> Option<String> {
        if let Some(why) = PerfDevice::refuse(self, cfg, args) {
            return Some(why);
        }
        // A QP the device cannot create (its sizing, e.g. -I beyond the
        // largest WQE) is refused before anything runs; perftest stops at
        // "Couldn't create QP" for the same request.
        match Plan::with_inflight(cfg, &self.caps(cfg), self.inflight_bytes()) {
            Err(e) if e.downcast_ref::<QpRejected>().is_some() => {
                Some(format!("{e} (perftest: Couldn't create QP)"))
            }
            // More memory than the backend allows: refused before any of
            // it is allocated.
            Ok(p) => memory_check(&p, cfg, self.memory_limit())
                .err()
                .map(|e| e.to_string()),
            _ => None,
        }
    }
}

/// Runs `cfg` on `dev`: plan, open, the engine, close.
pub fn run_on<D: PerfDevice + ?Sized>(
    dev: &mut D,
    cfg: &PerfRunConfig,
) -> anyhow::Result<PerfRunReport> {
    let caps = dev.caps(cfg);
    let plan = Plan::with_inflight(cfg, &caps, dev.inflight_bytes())?;
    memory_check(&plan, cfg, dev.memory_limit())?;
    dev.timer().set_loss(cfg.loss)?;
    dev.timer().begin_run();
    let pairs = match dev.open(cfg, &plan) {
        Ok(p) => p,
        Err(e) => {
            let _ = dev.close();
            return Err(e);
        }
    };
    let (local, remote) = (pairs[0].local.clone(), pairs[0].remote.clone());
    let r = {
        let (timer, events) = dev.timer_and_events();
        let events = match (cfg.events, events) {
            (false, _) => None,
            (true, Some(ev)) => Some(ev),
            (true, None) => {
                drop(pairs);
                let _ = dev.close();
                anyhow::bail!(
                    "-e (sleep on CQ events) needs a device with completion events: \
                     --device fw-sim or vfio:BDF"
                );
            }
        };
        let cpu = super::cpu::CpuUse::start();
        let mut e = Engine::new(timer, events, pairs, &plan, cfg);
        e.run().map(|()| e.finish(&plan)).map(|mut rep| {
            cpu.finish(&mut rep.counters);
            rep
        })
    };
    let c = dev.close();
    let mut rep = r?;
    c?;
    rep.backend = PerfDevice::name(dev);
    rep.local = Some(local);
    rep.remote = Some(remote);
    dev.annotate(cfg, &mut rep);
    Ok(rep)
}
