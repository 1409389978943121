//! The data-path hook as the command handlers use it: changes offered
//! before they commit ([`SimFirmware::admit`]), destroys announced
//! after ([`SimFirmware::notify`]), and the QP states the data path
//! reached on its own read back ([`SimFirmware::sync_qp_state`]).

use super::objects::ObjectEvent;
use super::SimFirmware;
use bareverbs::cmd::ops::HwQpState;

impl SimFirmware {
    /// Announces a committed change (destroys).
    pub(super) fn notify(&mut self, ev: ObjectEvent) {
        if let Some(h) = self.hook.as_mut() {
            let _ = h.object_event(&ev);
        }
    }

    /// Offers a change to the data path before committing it; a refusal
    /// is logged in `refusals`.
    pub(super) fn admit(&mut self, ev: ObjectEvent) -> bool {
        let Some(h) = self.hook.as_mut() else {
            return true;
        };
        match h.object_event(&ev) {
            Ok(()) => true,
            Err(why) => {
                self.refusals.push(why);
                false
            }
        }
    }

    /// Adopts the state the data path moved QP `qpn` to on its own: ERR
    /// (an error completion on RC, a flushed responder error) or SQE (a
    /// UD/UC send error), as a ConnectX's firmware reads the QP context
    /// the hardware updates. Other states change only by command.
    pub(super) fn sync_qp_state(&mut self, qpn: u32) {
        let Some(s) = self.hook.as_mut().and_then(|h| h.qp_state(qpn)) else {
            return;
        };
        if matches!(s, HwQpState::Err | HwQpState::SqErr) {
            if let Some(q) = self.objects.qps.get_mut(&qpn) {
                q.state = s;
            }
        }
    }
}
