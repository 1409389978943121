//! [`FabricTimer`]: the simulator's virtual clock as the engine's
//! [`Timer`], with the simulated devices' counters for the report.

use crate::perf::engine::Timer;
use std::collections::BTreeMap;

/// The simulator's virtual clock. A busy-wait step processes the fabric's
/// next event; with nothing pending the clock moves 1 ms, so a wait for
/// something that can no longer happen reaches its limit.
#[derive(Debug)]
pub struct FabricTimer {
    fabric: bareverbs_sim::Fabric,
    /// The devices whose counters are reported, by prefix.
    nics: Vec<(&'static str, bareverbs_sim::Device)>,
    base: BTreeMap<String, f64>,
    note: String,
}

impl FabricTimer {
    /// A timer over `fabric`, reporting the counters of `nic` (as `nic.*`).
    pub fn new(fabric: bareverbs_sim::Fabric, nic: bareverbs_sim::Device) -> Self {
        Self::with_nics(
            fabric,
            vec![("nic", nic)],
            "the same code as --device vfio:BDF, on the simulator behind the firmware command \
             interface -- times are MODELED (virtual clock), not measured on a NIC"
                .into(),
        )
    }

    /// A timer over `fabric`, reporting the counters of each device under
    /// its prefix; `note` is what the header says about the times.
    pub fn with_nics(
        fabric: bareverbs_sim::Fabric,
        nics: Vec<(&'static str, bareverbs_sim::Device)>,
        note: String,
    ) -> Self {
        FabricTimer {
            fabric,
            nics,
            base: BTreeMap::new(),
            note,
        }
    }

    /// The fabric.
    pub fn fabric(&self) -> &bareverbs_sim::Fabric {
        &self.fabric
    }

    /// The devices' cumulative counters by name.
    fn totals(&self) -> BTreeMap<String, f64> {
        let mut out = BTreeMap::new();
        for (prefix, nic) in &self.nics {
            if let Ok(serde_json::Value::Object(m)) = serde_json::to_value(nic.counters()) {
                for (k, v) in m {
                    if let Some(x) = v.as_f64() {
                        out.insert(format!("{prefix}.{k}"), x);
                    }
                }
            }
        }
        out
    }
}

impl Timer for FabricTimer {
    fn now_ns(&mut self) -> u64 {
        self.fabric.now_ns()
    }
    fn relax(&mut self) {
        if !self.fabric.step() {
            if self.fabric.is_wall_clock() {
                // Wired: the peer's packets come in wall time.
                std::thread::yield_now();
            } else {
                self.fabric.spend(1_000_000);
            }
        }
    }
    fn cqes_polled(&mut self, n: usize) {
        let p = self.fabric.params();
        self.fabric.spend((p.t_cqe_ns * n as f64).round() as u64);
    }
    fn settle(&mut self) {
        self.fabric.run_for(10_000_000);
    }
    fn modeled(&self) -> bool {
        !self.fabric.is_wall_clock()
    }
    fn simulated(&self) -> bool {
        true
    }
    fn note(&self) -> String {
        match self.fabric.wire_addr() {
            Some(a) => format!(
                "the simulator behind the firmware command interface, its port wired over UDP at \
                 {a} -- times are the WALL CLOCK of two simulators, not of a NIC"
            ),
            None => self.note.clone(),
        }
    }
    fn link_gbps(&self) -> f64 {
        if self.fabric.is_wall_clock() {
            // Wall-clock figures are not bounded by the modeled link.
            return 0.0;
        }
        self.fabric.params().link_gbps
    }
    fn set_loss(&mut self, loss: f64) -> anyhow::Result<()> {
        self.fabric
            .set_faults(bareverbs_sim::FaultPlan::lossy(loss.clamp(0.0, 1.0)));
        Ok(())
    }
    fn begin_run(&mut self) {
        self.base = self.totals();
    }
    fn counters(&self, out: &mut BTreeMap<String, f64>) {
        for (k, v) in self.totals() {
            let since = v - self.base.get(&k).copied().unwrap_or(0.0);
            out.insert(k, since);
        }
    }
}
