//! [`CmdBackend`]: the command-path device of the perftest engine. It owns
//! the brought-up core [`Device`], the clock and what each run created,
//! and implements [`PerfDevice`] (open a run's QP pairs, close them).

use super::connect::{mtu_enum, Link};
use super::half::{open_halves, HalfRun};
use super::objects::Objects;
use super::options::CmdOptions;
use super::pair::{open_pair, EVENT_VECTOR};
use crate::perf::config::PerfRunConfig;
use crate::perf::engine::{EventWait, KeyExchange, Pair, PerfDevice, Plan, Role, Timer};
use anyhow::anyhow;
use bareverbs::cmd::{Bar0, Clock};
use bareverbs::device::{Device, Interrupts, Pd, UarMap};
use bareverbs::error::Chain;
use bareverbs::platform::DmaAllocator;
use bareverbs::qp::QpType;
use bareverbs::sizing::DeviceCaps;

/// perftest's tests on a core [`Device`] through its command interface.
pub struct CmdBackend<B: Bar0 + UarMap, C: Clock, A: DmaAllocator, T: Timer> {
    dev: Option<Device<B, C, A>>,
    timer: T,
    opts: CmdOptions,
    /// Kept alive until after teardown (the VFIO mappings).
    keep: Option<Box<dyn std::any::Any>>,
    /// What the current run created.
    objs: Objects,
    /// The source GID index of the current two-host run.
    sgid_index: Option<u16>,
}

/// The device's own summary (firmware, ISSI, UAR, pages held), the
/// options and how many objects the current run holds (never the device's
/// or the buffers' memory).
impl<B: Bar0 + UarMap, C: Clock, A: DmaAllocator, T: Timer> std::fmt::Debug
    for CmdBackend<B, C, A, T>
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let o = &self.objs;
        f.debug_struct("CmdBackend")
            .field("dev", &self.dev)
            .field("opts", &self.opts)
            .field("pd", &o.pd.is_some())
            .field("bufs", &o.bufs.len())
            .field("mkeys", &o.mkeys.len())
            .field("cqs", &o.cqs.len())
            .field("qps", &o.qps.len())
            .field("sgid_index", &self.sgid_index)
            .field("keep", &self.keep.is_some())
            .finish_non_exhaustive()
    }
}

impl<B: Bar0 + UarMap, C: Clock, A: DmaAllocator, T: Timer> CmdBackend<B, C, A, T> {
    /// A backend over the brought-up `dev`; `keep` is dropped after the
    /// device is torn down.
    pub fn new(
        dev: Device<B, C, A>,
        timer: T,
        opts: CmdOptions,
        keep: Option<Box<dyn std::any::Any>>,
    ) -> Self {
        CmdBackend {
            dev: Some(dev),
            timer,
            opts,
            keep,
            objs: Objects::default(),
            sgid_index: None,
        }
    }
}

impl<B: Bar0 + UarMap + Interrupts, C: Clock, A: DmaAllocator, T: Timer> CmdBackend<B, C, A, T> {
    /// What every run starts with: the link settings of `cfg`, the
    /// completion EQ of event mode, the protection domain.
    fn prepare_run(&mut self, cfg: &PerfRunConfig) -> anyhow::Result<(Link, Pd)> {
        let dev = self
            .dev
            .as_mut()
            .ok_or_else(|| anyhow!("the device was torn down"))?;
        let hca = dev.hca_caps();
        let link = Link {
            qp_type: QpType::from(cfg.conn),
            mtu: mtu_enum(cfg.mtu)?,
            log_ra: hca.log_max_ra_req_qp.min(hca.log_max_ra_res_qp).min(4),
        };
        if cfg.events && dev.comp_eqn(EVENT_VECTOR).is_none() {
            dev.create_comp_eq(EVENT_VECTOR).map_err(|e| {
                anyhow!(
                    "CREATE_EQ for completion vector {EVENT_VECTOR}: {}",
                    Chain::new(&e)
                )
            })?;
        }
        let pd = dev
            .alloc_pd()
            .map_err(|e| anyhow!("ALLOC_PD: {}", Chain::new(&e)))?;
        self.objs.pd = Some(pd);
        Ok((link, pd))
    }
}

impl<B: Bar0 + UarMap, C: Clock, A: DmaAllocator, T: Timer> Drop for CmdBackend<B, C, A, T> {
    fn drop(&mut self) {
        let objs = std::mem::take(&mut self.objs);
        if let Some(d) = self.dev.as_mut() {
            let _ = objs.destroy(d);
        }
        if let Some(d) = self.dev.take() {
            let _ = d.teardown();
        }
        self.keep.take();
    }
}

/// Event mode's wait: the completion events of the first completion vector, each
/// checked by the core against the CQs it holds before it counts.
impl<B: Bar0 + UarMap + Interrupts, C: Clock, A: DmaAllocator> EventWait for Device<B, C, A> {
    fn wait(&mut self, timeout_us: u64, cqns: &mut [u32]) -> anyhow::Result<usize> {
        let got = self
            .wait_cq_events(EVENT_VECTOR, timeout_us, cqns)
            .map_err(|e| anyhow!("waiting for a completion event: {}", Chain::new(&e)))?;
        Ok(got.n)
    }
}

impl<B, C, A, T> PerfDevice for CmdBackend<B, C, A, T>
where
    B: Bar0 + UarMap + Interrupts,
    B::Uar: 'static,
    C: Clock,
    A: DmaAllocator,
    T: Timer,
{
    fn name(&self) -> String {
        format!(
            "bareverbs-cmd on {} ({}, objects and QPs by firmware command, {})",
            self.opts.label,
            if self.timer.simulated() {
                "simulated ConnectX"
            } else {
                "ConnectX through VFIO"
            },
            if self.opts.blueflame {
                "BlueFlame for single inline WQEs"
            } else {
                "8-byte doorbells"
            }
        )
    }

    fn timing_note(&self) -> String {
        self.timer.note()
    }

    fn caps(&self, cfg: &PerfRunConfig) -> DeviceCaps {
        self.dev
            .as_ref()
            .map(|d| d.device_caps())
            .unwrap_or(cfg.caps)
    }

    fn memory_limit(&self) -> Option<u64> {
        // The simulator's DMA memory is this process's heap; on hardware
        // the registered buffers are what the host must provide anyway.
        self.timer.simulated().then_some(1 << 30)
    }

    fn variance_note(&self) -> Option<String> {
        self.timer.modeled().then(|| {
            "none modeled: the simulator's cost model is deterministic (no jitter), so latency \
             varies only with loss and retransmission, completions in steady state are evenly \
             spaced and BW peak ~ BW average -- a property of the model, not a measured peak"
                .into()
        })
    }

    fn inflight_bytes(&self) -> Option<u64> {
        self.timer
            .simulated()
            .then_some(crate::perf::engine::SIM_INFLIGHT_BYTES)
    }

    fn timer(&mut self) -> &mut dyn Timer {
        &mut self.timer
    }

    fn timer_and_events(&mut self) -> (&mut dyn Timer, Option<&mut dyn EventWait>) {
        let ev = self.dev.as_mut().map(|d| d as &mut dyn EventWait);
        (&mut self.timer, ev)
    }

    fn open(&mut self, cfg: &PerfRunConfig, plan: &Plan) -> anyhow::Result<Vec<Pair>> {
        let (link, pd) = self.prepare_run(cfg)?;
        let dev = self
            .dev
            .as_mut()
            .ok_or_else(|| anyhow!("the device was torn down"))?;
        let objs = &mut self.objs;
        let mut pairs = Vec::with_capacity(plan.pairs);
        for q in 0..plan.pairs {
            pairs.push(open_pair(dev, objs, &self.opts, cfg, plan, &link, pd, q)?);
        }
        Ok(pairs)
    }

    fn open_half(
        &mut self,
        cfg: &PerfRunConfig,
        plan: &Plan,
        role: Role,
        keys: &mut KeyExchange<'_>,
    ) -> anyhow::Result<Vec<Pair>> {
        let (link, pd) = self.prepare_run(cfg)?;
        let dev = self
            .dev
            .as_mut()
            .ok_or_else(|| anyhow!("the device was torn down"))?;
        let run = HalfRun {
            role,
            addr: &self.opts.peer,
            keys,
        };
        let (pairs, sgid) =
            open_halves(dev, &mut self.objs, &self.opts, cfg, plan, &link, pd, run)?;
        self.sgid_index = sgid;
        Ok(pairs)
    }

    fn annotate(&self, _cfg: &PerfRunConfig, rep: &mut crate::perf::report::PerfRunReport) {
        rep.sgid_index = self.sgid_index;
    }

    fn close(&mut self) -> anyhow::Result<()> {
        let objs = std::mem::take(&mut self.objs);
        match self.dev.as_mut() {
            Some(dev) => objs.destroy(dev),
            None => Ok(()),
        }
    }
}
