//! Seeded fault plans: packet loss, duplication, delay, link-down windows
//! and responder stalls, drawn from one deterministic generator so the same
//! seed gives the same run.

use serde::{Deserialize, Serialize};

/// The fault plan's generator, owned by [`crate::rng`] (re-exported here
/// where the plans used to define it).
pub use crate::rng::Rng;

/// A window of virtual time `[start_ns, end_ns)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Window {
    /// First nanosecond of the window.
    pub start_ns: u64,
    /// First nanosecond after the window.
    pub end_ns: u64,
}

impl Window {
    /// Whether `t` lies in the window.
    pub fn contains(&self, t: u64) -> bool {
        t >= self.start_ns && t < self.end_ns
    }
}

/// A responder stall: packets arriving at `device` during `window` are
/// held until the window ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stall {
    /// Index of the stalled device in the fabric.
    pub device: usize,
    /// When it stalls.
    pub window: Window,
}

/// What can go wrong on the wire, decided per packet from the fabric's
/// seeded generator.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FaultPlan {
    /// Probability that a packet is lost.
    pub loss: f64,
    /// Probability that a packet is delivered twice.
    pub duplicate: f64,
    /// Probability that a packet is delayed by `delay_ns`.
    pub delay: f64,
    /// Extra delay of a delayed packet (ns).
    pub delay_ns: u64,
    /// Windows during which every packet sent is lost (link down).
    pub link_down: Vec<Window>,
    /// Responder stalls.
    pub stalls: Vec<Stall>,
}

impl FaultPlan {
    /// No faults.
    pub fn none() -> Self {
        FaultPlan::default()
    }
    /// Only random loss with probability `p`.
    pub fn lossy(p: f64) -> Self {
        FaultPlan {
            loss: p,
            ..FaultPlan::default()
        }
    }
    /// Whether the plan injects anything at all.
    pub fn is_clean(&self) -> bool {
        self.loss <= 0.0
            && self.duplicate <= 0.0
            && self.delay <= 0.0
            && self.link_down.is_empty()
            && self.stalls.is_empty()
    }
}

/// The fate of one packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(clippy::exhaustive_enums)] // closed: a packet is lost or delivered
pub enum Fate {
    /// Dropped.
    Lost,
    /// Delivered at the given times (one or two copies).
    Deliver {
        /// Arrival of the first copy.
        at: u64,
        /// Arrival of a duplicate, if any.
        dup: Option<u64>,
    },
}

impl FaultPlan {
    /// Decides the fate of a packet sent at `sent` that would arrive at
    /// `arrive` on device `dst`.
    pub fn decide(&self, rng: &mut Rng, sent: u64, arrive: u64, dst: usize) -> Fate {
        if self.is_clean() {
            return Fate::Deliver {
                at: arrive,
                dup: None,
            };
        }
        if self.link_down.iter().any(|w| w.contains(sent)) {
            return Fate::Lost;
        }
        if rng.chance(self.loss) {
            return Fate::Lost;
        }
        let mut at = arrive;
        if rng.chance(self.delay) {
            at += self.delay_ns;
        }
        for s in &self.stalls {
            if s.device == dst && s.window.contains(at) {
                at = s.window.end_ns;
            }
        }
        let dup = rng.chance(self.duplicate).then_some(at + 1);
        Fate::Deliver { at, dup }
    }
}
