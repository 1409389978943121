//! The clock of a run ([`Timer`]) and the wall-clock one hardware runs
//! use ([`WallTimer`]).

use anyhow::bail;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// The clock of a run, and what a busy-wait does while it waits.
pub trait Timer {
    /// Now, in nanoseconds of this clock.
    fn now_ns(&mut self) -> u64;
    /// One iteration of a busy-wait (a spin hint on hardware; on the
    /// simulator the device makes progress).
    fn relax(&mut self);
    /// `n` CQEs were polled (the simulator charges their CPU cost).
    fn cqes_polled(&mut self, n: usize) {
        let _ = n;
    }
    /// Lets in-flight work settle (used before a final check of
    /// unreliable transfers, which complete before their data lands).
    fn settle(&mut self);
    /// Times are modeled, not measured.
    fn modeled(&self) -> bool;
    /// The device is the simulator (whatever its clock): its memory is
    /// this process's heap and it holds in-flight payloads.
    fn simulated(&self) -> bool {
        self.modeled()
    }
    /// What the header says about the times.
    fn note(&self) -> String;
    /// Applies the run's packet-loss setting (an error where loss cannot
    /// be injected).
    fn set_loss(&mut self, loss: f64) -> anyhow::Result<()>;
    /// A run starts: counters reported afterwards count from here.
    fn begin_run(&mut self) {}
    /// Rate of the link the transfers cross (Gb/s), when it is modeled
    /// (0: unknown, e.g. on hardware).
    fn link_gbps(&self) -> f64 {
        0.0
    }
    /// Extra counters for the report (this run's only).
    fn counters(&self, out: &mut BTreeMap<String, f64>) {
        let _ = out;
    }
}

/// Wall-clock time ([`Instant`], monotonic, no TSC assumptions).
#[derive(Debug)]
pub struct WallTimer {
    start: Instant,
}

impl Default for WallTimer {
    fn default() -> Self {
        WallTimer {
            start: Instant::now(),
        }
    }
}

impl Timer for WallTimer {
    fn now_ns(&mut self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }
    fn relax(&mut self) {
        std::hint::spin_loop();
    }
    fn settle(&mut self) {
        let t = Instant::now();
        while t.elapsed() < Duration::from_millis(10) {
            std::hint::spin_loop();
        }
    }
    fn modeled(&self) -> bool {
        false
    }
    fn note(&self) -> String {
        "times are MEASURED on the NIC (wall clock)".into()
    }
    fn set_loss(&mut self, loss: f64) -> anyhow::Result<()> {
        if loss > 0.0 {
            bail!("--loss {loss} cannot be injected on hardware (it is a simulator setting)");
        }
        Ok(())
    }
}
