//! Waiting: every busy-wait has a time limit and fails naming what never
//! completed; a bandwidth pass without progress presumes unreliable SENDs
//! lost after a grace period; an unreliable run settles before its final
//! check.

use super::super::payload::mismatches;
use super::super::test_name::test_name;
use super::{Engine, Who};
use crate::perftest::format::Verb;
use anyhow::anyhow;

/// With nothing happening for this long, unreliable SENDs still in flight
/// are presumed lost (timer nanoseconds).
const LOSS_GRACE_NS: u64 = 1_000_000;

impl Engine<'_> {
    /// Busy-waits until `done` holds, relaxing in between; fails after
    /// the timeout with `what()` in the message.
    pub(super) fn wait(
        &mut self,
        what: &dyn Fn(&Self) -> String,
        mut done: impl FnMut(&mut Self) -> anyhow::Result<bool>,
    ) -> anyhow::Result<()> {
        let deadline = self.timer.now_ns().saturating_add(self.timeout_ns);
        loop {
            if done(self)? {
                return Ok(());
            }
            let now = self.timer.now_ns();
            if now >= deadline {
                return Err(self.timeout(&what(self)));
            }
            if self.events.is_none() {
                self.timer.relax();
                continue;
            }
            // Event mode: arm, look once more (a CQE that arrived before
            // the arm raises no event), then sleep until the vector fires.
            self.arm_all()?;
            if done(self)? {
                return Ok(());
            }
            self.sleep_on_events((deadline - now) / 1000)?;
        }
    }

    /// Arms every CQ of the run for its next completion event.
    fn arm_all(&mut self) -> anyhow::Result<()> {
        for p in &mut self.pairs {
            p.p.a.arm()?;
            p.p.b.arm()?;
        }
        Ok(())
    }

    /// Sleeps up to `timeout_us` on the completion vector; each event
    /// taken is recorded on the side whose CQ it names.
    fn sleep_on_events(&mut self, timeout_us: u64) -> anyhow::Result<()> {
        let Some(ev) = self.events.as_mut() else {
            return Ok(());
        };
        let mut cqns = [0u32; 16];
        let n = ev.wait(timeout_us.max(1), &mut cqns)?;
        if n == 0 {
            // Nothing fired: let the clock move (a modeled device runs its
            // virtual time here, as a sleeping host's NIC runs on its own).
            self.timer.relax();
        }
        for &cqn in &cqns[..n] {
            self.wakeups += 1;
            for p in &mut self.pairs {
                if p.p.a.cqn() == cqn {
                    p.p.a.event_consumed();
                }
                if p.p.b.cqn() == cqn && p.p.b.cqn() != p.p.a.cqn() {
                    p.p.b.event_consumed();
                }
            }
        }
        Ok(())
    }

    pub(super) fn timeout(&self, what: &str) -> anyhow::Error {
        anyhow!(
            "{}: timed out after {} ms ({}) waiting for {what}",
            test_name(self.test),
            self.timeout_ns / 1_000_000,
            if self.timer.modeled() {
                "virtual time"
            } else {
                "wall clock"
            },
        )
    }

    /// After a pass over the pairs (of `n` WRs each): progress resets the
    /// idle time; without it, unreliable SENDs missing past the grace
    /// period are presumed lost, a wait past the time limit fails, and
    /// otherwise the timer relaxes.
    #[inline(always)]
    pub(super) fn after_pass(
        &mut self,
        progressed: bool,
        last_progress: &mut u64,
        n: u64,
    ) -> anyhow::Result<()> {
        let send = self.verb == Verb::Send;
        let reliable = self.reliable;
        let now = self.timer.now_ns();
        let idle = now.saturating_sub(*last_progress);
        let lost_any = send
            && !reliable
            && idle >= LOSS_GRACE_NS
            && self
                .pairs
                .iter()
                .any(|p| p.posted.saturating_sub(p.received) > p.lost);
        if progressed {
            *last_progress = now;
        } else if lost_any {
            // Unreliable SENDs that have not arrived by now are gone:
            // their receives are free again.
            for p in &mut self.pairs {
                p.lost = p.posted.saturating_sub(p.received);
            }
            *last_progress = now;
        } else if idle >= self.timeout_ns {
            let p = &self.pairs[0];
            return Err(self.timeout(&format!(
                "completions: {} of {n} WRs completed on QP {:#x}, {} posted{}",
                p.completed,
                p.p.a.qpn(),
                p.posted,
                if send {
                    format!(", {} received on QP {:#x}", p.received, p.p.b.qpn())
                } else {
                    String::new()
                }
            )));
        } else if self.events.is_some() {
            // Event mode: arm and sleep until a completion arrives (the
            // next pass looks at what it brought).
            self.arm_all()?;
            let mut left = self.timeout_ns.saturating_sub(idle);
            if send && !reliable {
                // A lost SEND raises no event: wake for the loss check.
                left = left.min(LOSS_GRACE_NS.saturating_sub(idle).max(1));
            }
            self.sleep_on_events(left / 1000)?;
        } else {
            self.timer.relax();
        }
        Ok(())
    }

    /// The end of an unreliable bandwidth run: UC/UD complete before the
    /// data lands, so let it settle, then check what arrived (SENDs not
    /// received count `size` bytes each).
    pub(super) fn settle_and_check(&mut self) -> anyhow::Result<()> {
        let size = self.size;
        let send = self.verb == Verb::Send;
        // Unreliable transports complete before the data lands: let it
        // settle, then check what arrived.
        self.timer.settle();
        for q in 0..self.pairs.len() {
            let n = self.pairs[q].posted;
            if send {
                while self.poll(q, Who::B)? > 0 {}
                let k = self.consume_recvs(q)?;
                self.pairs[q].received += k;
                self.rep.mismatches += n.saturating_sub(self.pairs[q].received) * size as u64;
            } else {
                self.check_landed(q, n);
            }
        }
        Ok(())
    }

    /// After `n` WRITEs of pair `q` through B's destination slots (B is
    /// this process's): each slot holds the last iteration that used it,
    /// every byte.
    pub(super) fn check_landed(&mut self, q: usize, n: u64) {
        let size = self.size;
        let slots = self.slots as u64;
        if !self.role.drives_b() || slots == 0 {
            return;
        }
        for s in 0..slots.min(n) {
            let it = s + (n - 1 - s) / slots * slots;
            let at = self.pairs[q].p.b_dst[s as usize].cpu.as_ptr();
            self.rep.mismatches += mismatches(at, size, it, &self.body, 1, it + 1);
        }
    }
}
