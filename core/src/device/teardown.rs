//! Teardown ([`Device::teardown`], [ref §7.6](crate::reference)): destroy
//! what is left, TEARDOWN_HCA, reclaim pages, DISABLE_HCA, free memory.

use super::objects::Obj;
use super::{Device, DeviceError, UarMap};
use crate::cmd::queue::SlotKind;
use crate::cmd::{op, ops, Bar0, Clock, CmdError};
use crate::platform::DmaAllocator;

/// What teardown did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TeardownReport {
    /// Objects destroyed by teardown (left alive by the user).
    pub objects_destroyed: usize,
    /// Pages firmware returned.
    pub pages_reclaimed: usize,
    /// Pages firmware kept (their memory is not freed).
    pub pages_leaked: usize,
    /// The first command error met (teardown continues past errors).
    pub first_error: Option<CmdError>,
}

impl<B: Bar0 + UarMap, C: Clock, A: DmaAllocator> Device<B, C, A> {
    /// Destroys every object still alive, the EQ and the UAR; TEARDOWN_HCA;
    /// reclaims firmware pages; DISABLE_HCA; frees DMA memory the device no
    /// longer uses ([ref §7.6](crate::reference) teardown). Continues past errors and reports
    /// the first.
    pub fn teardown(mut self) -> (TeardownReport, B, C, A) {
        let mut rep = TeardownReport::default();
        let note = |rep: &mut TeardownReport, e: Result<usize, CmdError>| {
            if let Err(e) = e {
                rep.first_error.get_or_insert(e);
                false
            } else {
                true
            }
        };
        // Reverse creation order: QPs before SRQs/CQs, keys before PDs.
        while let Some(o) = self.objs.pop() {
            let (opc, id, bufs) = match o {
                Obj::Qp(n, a, b, _) => (op::DESTROY_QP, n, Some((a, b))),
                Obj::Srq(n, a, b) => (self.srq_destroy_op(), n, Some((a, b))),
                Obj::Cq(n, a, b, _) => (op::DESTROY_CQ, n, Some((a, b))),
                Obj::Mkey(n, _) => (op::DESTROY_MKEY, n, None),
                Obj::Pd(n) => (op::DEALLOC_PD, n, None),
            };
            let r = ops::with_obj(&mut self.inb, opc, id);
            let res = self.exec(r);
            if note(&mut rep, res) {
                rep.objects_destroyed += 1;
                if let Some((a, b)) = bufs {
                    self.free_dma(&[a, b]);
                }
            }
        }
        for c in self.take_comp_eqs() {
            let r = ops::destroy_eq(&mut self.inb, c.eq.eqn());
            let res = self.exec(r);
            if note(&mut rep, res) {
                self.free_dma(&[c.eq.ring()]);
            }
        }
        if let Some((eq, _)) = self.eq.take() {
            let r = ops::destroy_eq(&mut self.inb, eq.eqn());
            let res = self.exec(r);
            if note(&mut rep, res) {
                self.free_dma(&[eq.ring()]);
            }
        }
        let r = ops::dealloc_uar(&mut self.inb, self.uar);
        let res = self.exec(r);
        note(&mut rep, res);
        let r = ops::teardown_hca(&mut self.inb, ops::TeardownProfile::Graceful);
        let res = self.exec(r);
        note(&mut rep, res);
        // Reclaim pages until firmware returns none.
        loop {
            let held = self.pages.held();
            if held == 0 {
                break;
            }
            let ask = held.min(ops::MAX_PAGES_PER_CMD) as u32;
            match self.take_pages(0, ask, SlotKind::Regular) {
                Ok(0) => break,
                Ok(n) => rep.pages_reclaimed += n,
                Err(DeviceError::Cmd(e)) => {
                    rep.first_error.get_or_insert(e);
                    break;
                }
                Err(_) => break,
            }
        }
        rep.pages_leaked = self.pages.held();
        let r = ops::disable_hca(&mut self.inb);
        let res = self.exec(r);
        let disabled = note(&mut rep, res);
        // SAFETY: chunks with no page held by firmware are unused by it.
        unsafe { self.pages.release_unused(&self.alloc) };
        let Device {
            bar,
            clock,
            alloc,
            cmdq,
            ..
        } = self;
        if disabled {
            // SAFETY: DISABLE_HCA succeeded: the function no longer reads
            // its command queue.
            unsafe { cmdq.free(&alloc) };
        }
        (rep, bar, clock, alloc)
    }
}
