//! Completion event queues, one per MSI-X vector, and completion events:
//! creating them, taking their EQEs (checked against the CQs this driver
//! holds) and waiting for their interrupt ([ref §7.17](crate::reference)).
//!
//! A CQ created on a vector ([`Device::create_cq_on`]) names that
//! vector's EQ; once armed (`CompletionQueue::req_notify`) the device
//! writes one completion EQE for it when its next CQE arrives and raises
//! the vector. [`Device::poll_cq_events`] takes the EQEs; the device is
//! not trusted with them: an EQE that is not a completion, or names a CQ
//! the driver does not hold on that EQ, is dropped and counted
//! ([`CqEvents::rejected`]), never reported.

use super::objects::Obj;
use super::{Device, DeviceError, Interrupts, UarMap};
use crate::cmd::eq::{Eqe, EventQueue, NUM_SPARE_EQE};
use crate::cmd::{Bar0, Clock};
use crate::platform::DmaAllocator;

/// Completion EQs a device holds at most (vectors 1 ..= 8).
pub const MAX_COMP_EQS: usize = 8;

/// Entries of a completion EQ: the kernel's `MLX5_COMP_EQ_SIZE` (1024)
/// plus the spare entries, rounded up to a power of two.
pub const COMP_EQ_ENTRIES: u32 = (1024 + NUM_SPARE_EQE).next_power_of_two();

/// One completion EQ and the vector it interrupts on.
#[derive(Debug)]
pub(super) struct CompEq<U> {
    pub(super) eq: EventQueue,
    pub(super) uar: U,
    pub(super) vector: u16,
}

/// What one [`Device::poll_cq_events`] call took.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CqEvents {
    /// CQ numbers written to the caller's slice (one per event, in the
    /// order the device wrote them).
    pub n: usize,
    /// EQEs dropped: not a completion, or naming a CQ this driver does not
    /// hold on this EQ.
    pub rejected: usize,
    /// The slice filled up while the next EQE already looked valid: call
    /// again.
    pub more: bool,
}

impl<B: Bar0 + UarMap, C: Clock, A: DmaAllocator> Device<B, C, A> {
    /// Creates the completion EQ of MSI-X `vector` (CREATE_EQ with
    /// `intr = vector` and no event subscriptions: completion events reach
    /// the EQ a CQ names), arms it, and returns its number. Vector 0 is
    /// the control vector and is refused, as is a vector that already has
    /// an EQ or beyond [`MAX_COMP_EQS`].
    pub fn create_comp_eq(&mut self, vector: u16) -> Result<u8, DeviceError> {
        if vector == 0 || vector as usize > MAX_COMP_EQS {
            return Err(DeviceError::Limit {
                what: "completion vector (1-based: vector 0 is the control vector)",
                requested: vector as u64,
                max: MAX_COMP_EQS as u64,
            });
        }
        if self.comp_eq_index(vector).is_some() {
            return Err(DeviceError::BadPath {
                why: "this vector already has a completion EQ",
            });
        }
        let log_max = self.hca.log_max_eq_sz.min(31);
        let nent = COMP_EQ_ENTRIES.min(1 << log_max);
        let (eq, mut uar) = self.open_eq(nent, vector as u8, 0, "completion EQ")?;
        let eqn = eq.eqn();
        let taken = self.eq.as_ref().is_some_and(|(e, _)| e.eqn() == eqn)
            || self.comp_eqs.iter().any(|c| c.eq.eqn() == eqn);
        if taken {
            // The device named an EQ that is already live: the new one is
            // unusable; leave its ring to the device (never reuse memory
            // firmware may write) and refuse.
            return Err(DeviceError::DuplicateObjectNumber {
                what: "EQ",
                number: eqn as u32,
            });
        }
        eq.update_ci(&mut uar, true);
        // Capacity was checked by `comp_eq_index`'s bound on `vector`.
        let _ = self.comp_eqs.push(CompEq { eq, uar, vector });
        Ok(eqn)
    }

    /// The EQ number of `vector`'s completion EQ, if created.
    pub fn comp_eqn(&self, vector: u16) -> Option<u8> {
        self.comp_eq_index(vector)
            .map(|i| self.comp_eqs[i].eq.eqn())
    }

    fn comp_eq_index(&self, vector: u16) -> Option<usize> {
        self.comp_eqs.iter().position(|c| c.vector == vector)
    }

    /// Takes the completion events of `vector`'s EQ into `cqns` (one CQ
    /// number per event), at most `cqns.len()`, then publishes the
    /// consumer index and re-arms the EQ. Each EQE is checked against the
    /// driver's own table before it is reported: only a completion naming
    /// a CQ this driver holds on this EQ counts; anything else is dropped
    /// and counted in [`CqEvents::rejected`] (a device writing garbage or
    /// flooding the EQ cannot make the caller act on a CQ it does not
    /// own, or spin: the call takes at most one EQ's worth of entries).
    pub fn poll_cq_events(
        &mut self,
        vector: u16,
        cqns: &mut [u32],
    ) -> Result<CqEvents, DeviceError> {
        let i = self
            .comp_eq_index(vector)
            .ok_or(DeviceError::NoEventQueue {
                what: "completion event (no completion EQ on this vector)",
            })?;
        let mut got = CqEvents::default();
        let budget = self.comp_eqs[i].eq.nent() as usize;
        let mut taken = 0usize;
        loop {
            let c = &mut self.comp_eqs[i];
            if got.n == cqns.len() || taken == budget {
                got.more = c.eq.peek_valid();
                break;
            }
            let Some(ev) = c.eq.poll() else {
                break;
            };
            taken += 1;
            if taken.is_multiple_of(NUM_SPARE_EQE as usize) {
                c.eq.update_ci(&mut c.uar, false);
            }
            let eqn = c.eq.eqn();
            match ev {
                Eqe::Completion { cqn } if self.cq_on_eq(cqn, eqn) => {
                    cqns[got.n] = cqn;
                    got.n += 1;
                }
                _ => got.rejected += 1,
            }
        }
        let c = &mut self.comp_eqs[i];
        c.eq.update_ci(&mut c.uar, true);
        self.bad_events += got.rejected as u64;
        Ok(got)
    }

    /// Whether `cqn` is a CQ this driver holds that names EQ `eqn`.
    fn cq_on_eq(&self, cqn: u32, eqn: u8) -> bool {
        self.objs
            .iter()
            .any(|o| matches!(o, Obj::Cq(n, _, _, l) if *n == cqn && l.eqn == eqn))
    }

    /// EQEs dropped by [`Device::poll_cq_events`] since bring-up.
    pub fn rejected_events(&self) -> u64 {
        self.bad_events
    }

    /// The completion EQs' rings, for teardown to free once their EQs
    /// are destroyed.
    pub(super) fn take_comp_eqs(&mut self) -> heapless::Vec<CompEq<B::Uar>, MAX_COMP_EQS> {
        core::mem::take(&mut self.comp_eqs)
    }
}

/// Wake-ups one [`Device::wait_cq_events`] call takes at most (a device
/// that keeps firing the vector without writing a valid EQE cannot hold
/// the call: it returns empty after these).
const MAX_WAKEUPS: u32 = 64;

impl<B: Bar0 + UarMap + Interrupts, C: Clock, A: DmaAllocator> Device<B, C, A> {
    /// Waits for completion events on `vector` (`ibv_get_cq_event`): the
    /// vector's interrupt is enabled first (once; before the EQ is looked
    /// at, so no fire is lost to a vector without an eventfd), a fire left
    /// over from an earlier call is consumed, then the EQ is taken; while
    /// it is empty the call sleeps on the vector until `timeout_us` has
    /// passed by the device's clock (at most 64 wake-ups).
    /// `Ok` with `n == 0` means no event came in that time.
    pub fn wait_cq_events(
        &mut self,
        vector: u16,
        timeout_us: u64,
        cqns: &mut [u32],
    ) -> Result<CqEvents, DeviceError> {
        self.comp_eq_index(vector)
            .ok_or(DeviceError::NoEventQueue {
                what: "completion event (no completion EQ on this vector)",
            })?;
        let bit = 1u16 << vector.min(15);
        if self.irqs_enabled & bit == 0 {
            if !self.bar.enable_irq(vector) {
                return Err(DeviceError::NoEventQueue {
                    what: "completion interrupt (the host could not enable this vector)",
                });
            }
            self.irqs_enabled |= bit;
        }
        // A fire of an earlier call's events, already taken from the EQ.
        let _ = self.bar.wait_irq(vector, 0);
        let start = self.clock.now_us();
        let mut rejected = 0;
        for _ in 0..=MAX_WAKEUPS {
            let mut got = self.poll_cq_events(vector, cqns)?;
            rejected += got.rejected;
            got.rejected = rejected;
            let spent = self.clock.now_us().saturating_sub(start);
            if got.n > 0 || spent >= timeout_us || !self.bar.wait_irq(vector, timeout_us - spent) {
                return Ok(got);
            }
        }
        Ok(CqEvents {
            rejected,
            ..CqEvents::default()
        })
    }
}
