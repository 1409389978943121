//! Health polling ([`Device::check_health`], [ref §7.1](crate::reference)).

use super::{Device, UarMap};
use crate::cmd::initseg::InitSeg;
use crate::cmd::{Bar0, Clock};
use crate::platform::DmaAllocator;

impl<B: Bar0 + UarMap, C: Clock, A: DmaAllocator> Device<B, C, A> {
    /// One health poll ([ref §7.1](crate::reference) health checks): link down, NIC interface
    /// DISABLED/SW_RESET, `rfr` with a syndrome, or a health counter that
    /// did not change for 3 consecutive polls. Call it about once a second
    /// (VFIO: POLL_HEALTH_INTERVAL 1000 ms, MAX_MISSES 3).
    pub fn check_health(&mut self) -> Result<(), crate::cmd::initseg::HealthProblem> {
        let seg = InitSeg(&self.bar);
        seg.check_health()?;
        let c = seg.health_counter();
        if (c ^ self.health_last) & 0x00ff_ffff == 0 {
            self.health_misses = self.health_misses.saturating_add(1);
            if self.health_misses >= 3 {
                return Err(crate::cmd::initseg::HealthProblem::CounterStuck { counter: c });
            }
        } else {
            self.health_misses = 0;
        }
        self.health_last = c;
        Ok(())
    }
}
