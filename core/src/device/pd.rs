//! Protection domains: [`Pd`], ALLOC_PD and DEALLOC_PD.

use super::objects::Obj;
use super::{Device, DeviceError, UarMap};
use crate::cmd::{ops, Bar0, Clock};
use crate::platform::DmaAllocator;

/// A protection domain (ALLOC_PD output).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pd(pub u32);

impl<B: Bar0 + UarMap, C: Clock, A: DmaAllocator> Device<B, C, A> {
    /// ALLOC_PD.
    pub fn alloc_pd(&mut self) -> Result<Pd, DeviceError> {
        if self.objs.is_full() {
            return Err(DeviceError::TableFull { what: "objects" });
        }
        let r = ops::alloc_pd(&mut self.inb);
        self.exec(r)?;
        let pd = ops::parse_obj_id(&self.outb);
        self.track(Obj::Pd(pd))?;
        Ok(Pd(pd))
    }
    /// DEALLOC_PD.
    /// Refused with [`DeviceError::NotOurs`] for a PD number this driver
    /// does not hold.
    pub fn dealloc_pd(&mut self, pd: Pd) -> Result<(), DeviceError> {
        if !self
            .objs
            .iter()
            .any(|o| matches!(o, Obj::Pd(x) if *x == pd.0))
        {
            return Err(DeviceError::NotOurs {
                what: "PD",
                number: pd.0,
            });
        }
        let r = ops::dealloc_pd(&mut self.inb, pd.0);
        self.exec(r)?;
        self.untrack(|o| matches!(o, Obj::Pd(x) if *x == pd.0));
        Ok(())
    }
}
