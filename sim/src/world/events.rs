//! The deterministic event queue on virtual time: the events
//! ([`Event`]), the heap with its off-heap front entry and held-aside
//! retransmission timer, scheduling, transmission subject to the fault
//! plan, and the loop that runs events in order.

use super::{TraceKind, World};
use crate::cost::trunc_u64;
use crate::fault::Fate;
use crate::wire::Packet;
use std::cmp::Ordering;

pub(crate) enum Event {
    Deliver(Packet),
    RetryTimer {
        dev: u16,
        qi: u32,
        gen: u64,
    },
    RnrTimer {
        dev: u16,
        qi: u32,
        gen: u64,
    },
    /// The last bit of an unreliable (UC/UD) message left the port: its
    /// send WQE (found by PSN and WQE counter) completes.
    TxDone {
        dev: u16,
        qi: u32,
        psn: u32,
        wqe_counter: u16,
    },
}

/// A heap entry: due time, tie-breaking sequence number and the slot of
/// the event in the slab (kept small so heap operations move little).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) struct Timed {
    pub(super) t: u64,
    pub(super) seq: u64,
    pub(super) slot: u32,
}
impl PartialOrd for Timed {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Timed {
    fn cmp(&self, o: &Self) -> Ordering {
        // BinaryHeap is a max-heap: reverse for earliest first.
        (o.t, o.seq).cmp(&(self.t, self.seq))
    }
}

/// A retransmission timer armed but not yet put on the event heap. Most
/// timers are disarmed (the ACK arrives) before they are due; holding the
/// latest one aside saves the heap a push and a pop for each. Its key
/// (due time, sequence number) is taken when it is armed, so the order in
/// which events run is the order a heap entry would have given.
#[derive(Clone, Copy)]
pub(super) struct Deferred {
    pub(super) t: u64,
    pub(super) seq: u64,
    pub(super) dev: u16,
    pub(super) qi: u32,
    pub(super) gen: u64,
}

impl World {
    pub fn schedule(&mut self, t: u64, ev: Event) {
        self.seq += 1;
        self.push_keyed(t.max(self.now), self.seq, ev);
    }

    /// Puts `ev` on the heap with key (`t`, `seq`).
    fn push_keyed(&mut self, t: u64, seq: u64, ev: Event) {
        // The earliest event waits in `front`, off the heap: a run where
        // each event schedules the next one never touches the heap.
        match &self.front {
            None => {
                if self.heap.peek().is_none_or(|e| (t, seq) < (e.t, e.seq)) {
                    self.front = Some((t, seq, ev));
                    return;
                }
            }
            Some((ft, fs, _)) => {
                if (t, seq) < (*ft, *fs) {
                    if let Some((ft, fs, fev)) = self.front.replace((t, seq, ev)) {
                        self.heap_push(ft, fs, fev);
                    }
                    return;
                }
            }
        }
        self.heap_push(t, seq, ev);
    }

    fn heap_push(&mut self, t: u64, seq: u64, ev: Event) {
        let slot = match self.free.pop() {
            Some(i) => {
                self.slab[i as usize] = Some(ev);
                i
            }
            None => {
                self.slab.push(Some(ev));
                (self.slab.len() - 1) as u32
            }
        };
        self.heap.push(Timed { t, seq, slot });
    }

    /// Arms the retransmission timer of QP `qi` of device `dev` (timer
    /// generation `gen`) for `t`: as `schedule(t, RetryTimer { .. })`, but
    /// the entry is held aside until another timer is armed or it is due.
    pub fn schedule_retry(&mut self, t: u64, dev: u16, qi: u32, gen: u64) {
        self.seq += 1;
        let new = Deferred {
            t: t.max(self.now),
            seq: self.seq,
            dev,
            qi,
            gen,
        };
        if let Some(old) = self.deferred.replace(new) {
            // A re-arm of the same QP makes the old entry stale (timer
            // generations only grow while the QP lives); another QP's
            // entry goes to the heap with its key.
            if old.dev != dev || old.qi != qi {
                self.push_deferred(old);
            }
        }
    }

    fn push_deferred(&mut self, df: Deferred) {
        let ev = Event::RetryTimer {
            dev: df.dev,
            qi: df.qi,
            gen: df.gen,
        };
        self.push_keyed(df.t, df.seq, ev);
    }

    /// Drops the held-aside timer of QP `qi` of device `dev` if that QP's
    /// timer generation has moved past it (it can never fire).
    pub fn drop_stale_timer(&mut self, dev: u16, qi: u32) {
        if let Some(df) = self.deferred {
            if df.dev == dev && df.qi == qi {
                let live = matches!(
                    self.devs.get(dev as usize).and_then(|d| d.qps.get(qi as usize)),
                    Some(Some(q)) if q.timer_gen == df.gen
                );
                if !live {
                    self.deferred = None;
                }
            }
        }
    }

    /// Moves the held-aside timer onto the heap (before a QP slot changes
    /// hands, so that it keeps referring to whatever the heap entry would).
    pub fn flush_deferred(&mut self) {
        if let Some(df) = self.deferred.take() {
            self.push_deferred(df);
        }
    }

    /// Puts a packet on the wire at `depart`, subject to the fault plan.
    pub fn transmit(&mut self, depart: u64, pkt: Packet) {
        let (sd, dd) = (pkt.src_dev, pkt.dst_dev);
        let arrive = depart + trunc_u64(self.params.t_base_ns);
        let fate = self
            .faults
            .decide(&mut self.rng, depart, arrive, dd as usize);
        match fate {
            Fate::Lost => self.trace(TraceKind::Lost, sd, pkt.src_qpn, pkt.psn()),
            Fate::Deliver { at, dup } => {
                self.trace(TraceKind::Send, sd, pkt.src_qpn, pkt.psn());
                if let Some(d) = dup {
                    self.schedule(d, Event::Deliver(pkt.clone()));
                }
                self.schedule(at, Event::Deliver(pkt));
            }
        }
    }

    /// Processes the earliest event if it is due by `limit`. Returns false
    /// when there is none.
    pub fn step(&mut self, limit: u64) -> bool {
        let top = match &self.front {
            Some((t, seq, _)) => Some((*t, *seq)),
            None => self.heap.peek().map(|e| (e.t, e.seq)),
        };
        let (t, ev) = match self.deferred {
            Some(df) if df.t <= limit && top.is_none_or(|k| (df.t, df.seq) < k) => {
                self.deferred = None;
                let ev = Event::RetryTimer {
                    dev: df.dev,
                    qi: df.qi,
                    gen: df.gen,
                };
                (df.t, ev)
            }
            _ => {
                match top {
                    Some((t, _)) if t <= limit => {}
                    _ => return false,
                }
                if let Some((t, _, ev)) = self.front.take() {
                    (t, ev)
                } else {
                    let Some(Timed { t, slot, .. }) = self.heap.pop() else {
                        return false;
                    };
                    self.free.push(slot);
                    let Some(ev) = self.slab.get_mut(slot as usize).and_then(Option::take) else {
                        return true;
                    };
                    (t, ev)
                }
            }
        };
        // A timer that was re-armed or disarmed since it was scheduled is
        // dropped without moving the clock: idle time is not simulated.
        if let Event::RetryTimer { dev, qi, gen } | Event::RnrTimer { dev, qi, gen } = ev {
            let live = matches!(
                self.devs.get(dev as usize).and_then(|d| d.qps.get(qi as usize)),
                Some(Some(q)) if q.timer_gen == gen
            );
            if !live {
                return true;
            }
        }
        self.now = self.now.max(t);
        match ev {
            Event::Deliver(p) => self.deliver(p),
            Event::RetryTimer { dev, qi, gen } => self.retry_timer(dev, qi, gen),
            Event::RnrTimer { dev, qi, gen } => self.rnr_timer(dev, qi, gen),
            Event::TxDone {
                dev,
                qi,
                psn,
                wqe_counter,
            } => self.tx_done(dev, qi, psn, wqe_counter),
        }
        self.settle();
        true
    }

    /// Runs events until the queue is empty or the next event lies more
    /// than the horizon past the start. Returns the number processed.
    pub fn run_until_idle(&mut self) -> u64 {
        if self.wire.is_some() {
            // Wired: what arrived, and what is due by the wall clock.
            self.scan_error_rqs();
            self.follow_wall_clock();
            self.wire_poll();
            let t = self.now;
            return self.run_until(t);
        }
        self.scan_error_rqs();
        let limit = self.now.saturating_add(self.horizon_ns);
        let mut n = 0;
        while self.step(limit) {
            n += 1;
        }
        n
    }

    /// Runs every event due by `t` and advances the clock to `t`.
    pub fn run_until(&mut self, t: u64) -> u64 {
        self.scan_error_rqs();
        let mut n = 0;
        while self.step(t) {
            n += 1;
        }
        self.now = self.now.max(t);
        n
    }

    /// Advances the event sequence counter by `n`, as `n` calls of
    /// [`Self::schedule`] / [`Self::schedule_retry`] would (for a fused
    /// path whose events are consumed before any other is queued).
    #[inline]
    pub(crate) fn bump_seq(&mut self, n: u64) {
        self.seq += n;
    }

    pub fn pending_events(&self) -> usize {
        self.heap.len() + usize::from(self.deferred.is_some()) + usize::from(self.front.is_some())
    }
}
