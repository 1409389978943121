//! What `bareverbs pingpong` prints: `ibv_rc_pingpong`'s report
//! (`rc_pingpong.c`, after its loop: `bytes = size * iters * 2`, the time
//! from the first post to the last completion) and the JSON object.

use super::message::Address;
use super::PingpongArgs;
use crate::perf::engine::Role;
use crate::perf::run::PerfRunReport;
use serde_json::{json, Value};

/// A finished (or failed) run.
#[derive(Debug)]
pub struct Outcome {
    role: Role,
    device: String,
    size: u32,
    iters: u32,
    checked: bool,
    addresses: Option<(Address, Address)>,
    rep: Option<PerfRunReport>,
    /// Why the run failed, if it did.
    pub failure: Option<String>,
}

impl Outcome {
    /// The outcome of `run` for `a` on this side (`role`).
    pub fn of(
        a: &PingpongArgs,
        role: Role,
        addresses: Option<(Address, Address)>,
        run: anyhow::Result<PerfRunReport>,
    ) -> Outcome {
        let (rep, failure) = match run {
            Err(e) => (None, Some(format!("{e:#}"))),
            Ok(r) => {
                let f = verdict(a, &r);
                (Some(r), f)
            }
        };
        Outcome {
            role,
            device: a.device.clone(),
            size: a.size,
            iters: a.iters,
            checked: a.chk,
            addresses,
            rep,
            failure,
        }
    }

    fn bytes(&self) -> u64 {
        u64::from(self.size) * u64::from(self.iters) * 2
    }

    fn usec(&self) -> f64 {
        self.rep.as_ref().map_or(0.0, |r| r.run_ns as f64 / 1000.0)
    }

    /// `ibv_rc_pingpong`'s two report lines (nothing when the run failed;
    /// the address lines were printed as the exchange went).
    pub fn text(&self) -> String {
        if self.failure.is_some() || self.rep.is_none() {
            return String::new();
        }
        let usec = self.usec().max(1e-3);
        let bytes = self.bytes();
        format!(
            "{bytes} bytes in {:.2} seconds = {:.2} Mbit/sec\n\
             {} iters in {:.2} seconds = {:.2} usec/iter\n",
            usec / 1e6,
            bytes as f64 * 8.0 / usec,
            self.iters,
            usec / 1e6,
            usec / f64::from(self.iters)
        )
    }

    /// The JSON object (the keys are documented in `docs/json.md`).
    pub fn json(&self) -> Value {
        let addr = |a: &Address| {
            json!({
                "lid": a.lid,
                "qpn": a.qpn,
                "psn": a.psn,
                "gid": std::net::Ipv6Addr::from(a.gid).to_string(),
            })
        };
        let usec = self.usec();
        let r = self.rep.as_ref();
        crate::envelope::envelope(
            "pingpong",
            json!({
                "role": match self.role {
                    Role::Client => "client",
                    _ => "server",
                },
                "device": self.device,
                "local": self.addresses.as_ref().map(|(m, _)| addr(m)),
                "remote": self.addresses.as_ref().map(|(_, p)| addr(p)),
                "size": self.size,
                "iters": self.iters,
                "bytes": self.bytes(),
                "seconds": usec / 1e6,
                "mbit_per_sec": if usec > 0.0 { self.bytes() as f64 * 8.0 / usec } else { 0.0 },
                "usec_per_iter": usec / f64::from(self.iters.max(1)),
                "modeled": r.is_some_and(|r| r.modeled),
                "checked": self.checked,
                "posted": r.map(|r| r.posted),
                "completed_ok": r.map(|r| r.completed_ok),
                "completed_err": r.map(|r| r.completed_err),
                "mismatches": r.map(|r| r.mismatches),
                "failure": self.failure,
            }),
        )
    }
}

/// Why a finished run failed: a completion in error, a message that did
/// not arrive as sent (`-c`), or fewer messages than asked for.
fn verdict(a: &PingpongArgs, r: &PerfRunReport) -> Option<String> {
    if r.completed_err > 0 {
        return Some(format!("{} completions in error", r.completed_err));
    }
    if r.mismatches > 0 {
        return Some(format!(
            "{} received bytes differ from what the peer sent",
            r.mismatches
        ));
    }
    if r.posted < u64::from(a.iters) {
        return Some(format!("{} of {} messages were sent", r.posted, a.iters));
    }
    None
}
