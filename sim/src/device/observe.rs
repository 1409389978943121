//! What the device reports: asynchronous events, device-wide and per-QP
//! counters, and when a QP's responder last placed data.

use super::Device;
use crate::cost::Counters;
use crate::objects::AsyncEvent;
use crate::world::QPN_BASE;

impl Device {
    /// Takes the completion events raised so far (a CQE written to an
    /// armed CQ), leaving the other events in place.
    pub fn take_completion_events(&self) -> Vec<u32> {
        let mut w = self.w.borrow_mut();
        let ev = &mut w.devs[self.id as usize].events;
        let mut cqns = Vec::new();
        ev.retain(|e| match e {
            AsyncEvent::Completion { cqn } => {
                cqns.push(*cqn);
                false
            }
            _ => true,
        });
        cqns
    }
    /// Takes the asynchronous events raised so far.
    pub fn take_events(&self) -> Vec<AsyncEvent> {
        std::mem::take(&mut self.w.borrow_mut().devs[self.id as usize].events)
    }

    /// Device-wide counters.
    pub fn counters(&self) -> Counters {
        self.w.borrow().devs[self.id as usize].counters
    }

    /// Counters of one QP.
    pub fn qp_counters(&self, qpn: u32) -> Option<Counters> {
        let mut w = self.w.borrow_mut();
        let qi = qpn.checked_sub(QPN_BASE)?;
        w.qp(self.id, qi).map(|q| q.counters)
    }

    /// Virtual time the QP's responder last placed data.
    pub fn qp_last_rx_ns(&self, qpn: u32) -> u64 {
        let mut w = self.w.borrow_mut();
        qpn.checked_sub(QPN_BASE)
            .and_then(|qi| w.qp(self.id, qi).map(|q| q.last_rx_ns))
            .unwrap_or(0)
    }
}
