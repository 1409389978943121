//! The data-path hook as the command handlers use it: changes offered
//! before they commit ([`SimFirmware::admit`]) and destroys announced
//! after ([`SimFirmware::notify`]).

use super::objects::ObjectEvent;
use super::SimFirmware;

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
}
