//! Event queues ([ref §7.9](bareverbs::reference)): CREATE_EQ,
//! DESTROY_EQ, and the EQEs the model posts on the EQ subscribed to
//! PAGE_REQUEST.

use super::handler::{ok, require, Cmd, Outcome};
use super::objects::EqObj;
use super::status::reason;
use super::SimFirmware;
use bareverbs::cmd::eq::event;
use bareverbs::cmd::layout::{cmd_in, create_eq_in, eqc, eqe};
use bareverbs::cmd::ops::EQC;
use bareverbs::cmd::CmdStatus;
use Outcome::Fail;

impl SimFirmware {
    /// CREATE_EQ: the lowest free EQ number.
    pub(super) fn create_eq(&mut self, c: &Cmd) -> Outcome {
        let Cmd { input, cur, .. } = *c;
        let log = eqc::LOG_EQ_SIZE.get(input, EQC) as u8;
        let uar = eqc::UAR_PAGE.get(input, EQC);
        if !self.objects.uars.contains_key(&uar) {
            return Fail(CmdStatus::BadParam, reason::UNKNOWN_OBJECT);
        }
        if log > cur.log_max_eq_sz || log > 20 {
            return Fail(CmdStatus::BadParam, reason::SIZE);
        }
        let npages = ((1usize << log) * 64).div_ceil(4096);
        let pages = match self.check_pas(input, npages) {
            Ok(p) => p,
            Err((s, r)) => return Fail(s, r),
        };
        if self.objects.eqs.len() as u64 >= 1u64 << cur.log_max_eq {
            return Fail(CmdStatus::ExceedLimit, reason::LIMIT);
        }
        let Some(eqn) = (self.cfg.first_eqn..=255u8).find(|n| !self.objects.eqs.contains_key(n))
        else {
            return Fail(CmdStatus::ExceedLimit, reason::LIMIT);
        };
        self.objects.eqs.insert(
            eqn,
            EqObj {
                eqn,
                log_size: log,
                uar,
                mask: create_eq_in::EVENT_BITMASK.get(input, 0),
                pages,
                pi: 0,
                ci: 0,
                overruns: 0,
                intr: eqc::INTR.get(input, EQC) as u8,
                armed: false,
            },
        );
        let mut o = ok(16);
        cmd_in::EQ_NUMBER.set(&mut o, 0, eqn as u32);
        Outcome::Ok(o)
    }

    /// DESTROY_EQ.
    pub(super) fn destroy_eq(&mut self, c: &Cmd) -> Outcome {
        let Cmd { input, .. } = *c;
        let eqn = cmd_in::EQ_NUMBER.get(input, 0) as u8;
        require!(
            self.objects.eqs.remove(&eqn).is_some(),
            CmdStatus::BadResource,
            reason::UNKNOWN_OBJECT
        );
        Outcome::Ok(ok(16))
    }

    /// Posts one EQE of `event_type` (event data zero) on the EQ that takes
    /// page requests, as a device reporting an event would ([ref §7.9](bareverbs::reference)).
    /// False when there is no such EQ or it is full (counted as overrun).
    pub fn post_event(&mut self, event_type: u8) -> bool {
        let mut e = [0u8; 64];
        e[eqe::EVENT_TYPE] = event_type;
        self.post_eqe(e)
    }

    /// Writes `entry` (owner byte set by the model) at the producer index of
    /// the EQ subscribed to PAGE_REQUEST and advances it.
    pub(super) fn post_eqe(&mut self, entry: [u8; 64]) -> bool {
        let Some(eqn) = self
            .objects
            .eqs
            .values()
            .find(|e| e.mask & (1 << event::PAGE_REQUEST) != 0)
            .map(|e| e.eqn)
        else {
            return false;
        };
        self.post_eqe_on(eqn, entry)
    }

    /// Posts the completion events the data path raised: one completion
    /// EQE (type 0, CQN at byte 0x38) on the EQ each CQ names; an armed EQ
    /// then fires its vector ([`SimFirmware::take_irq`]) and is FIRED
    /// until the driver re-arms it.
    pub fn raise_completions(&mut self) {
        let cqns = match self.hook.as_mut() {
            Some(h) => h.take_completion_events(),
            None => return,
        };
        for cqn in cqns {
            let Some(eqn) = self.objects.cqs.get(&cqn).map(|c| c.eqn) else {
                continue;
            };
            let mut e = [0u8; 64];
            e[eqe::EVENT_TYPE] = event::COMP;
            eqe::COMP_CQ_NUMBER.set(&mut e, 0, cqn);
            self.post_eqe_on(eqn, e);
        }
    }

    /// Whether MSI-X `vector` fired since the last call (and clears it).
    pub fn take_irq(&mut self, vector: u16) -> bool {
        let bit = 1u64 << (vector & 63);
        let fired = self.irq_pending & bit != 0;
        self.irq_pending &= !bit;
        fired
    }

    /// Writes `entry` at the producer index of EQ `eqn` and advances it;
    /// an armed EQ fires its vector.
    pub fn post_eqe_on(&mut self, eqn: u8, entry: [u8; 64]) -> bool {
        let Some(eq) = self.objects.eqs.get(&eqn).cloned() else {
            return false;
        };
        let nent = 1u32 << eq.log_size;
        // The driver's consumer index is 24 bits wide (the doorbell's).
        if eq.pi.wrapping_sub(eq.ci) & 0x00ff_ffff >= nent {
            if let Some(e) = self.objects.eqs.get_mut(&eq.eqn) {
                e.overruns += 1;
            }
            return false;
        }
        let off = ((eq.pi & (nent - 1)) as usize) * 64;
        let Some(&page) = eq.pages.get(off / 4096) else {
            return false;
        };
        // `page` is a guest PAS entry: never let the offset wrap it.
        let Some(addr) = page.checked_add((off % 4096) as u64) else {
            return false;
        };
        if !self.wr(addr, &entry[..eqe::OWNER]) {
            return false;
        }
        // `addr + 63` cannot overflow: `[addr, addr + 63)` was just written.
        self.wr(addr + eqe::OWNER as u64, &[((eq.pi & nent) != 0) as u8]);
        if let Some(e) = self.objects.eqs.get_mut(&eq.eqn) {
            e.pi = e.pi.wrapping_add(1);
            if e.armed {
                // The EQ fires; without an eventfd on the vector (not
                // enabled by the host) the interrupt is lost, as MSI-X
                // without a handler is.
                e.armed = false;
                let bit = 1u64 << (e.intr & 63);
                if self.irq_enabled & bit != 0 {
                    self.irq_pending |= bit;
                }
            }
        }
        true
    }
}
