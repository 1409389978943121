//! The event trace: its entries ([`TraceEvent`], [`TraceKind`]) and
//! [`World::trace`], which records one when tracing is on.

use super::World;

/// One entry of the event trace (for determinism checks and debugging).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TraceEvent {
    /// Virtual time (ns).
    pub t_ns: u64,
    /// What happened.
    pub kind: TraceKind,
    /// Device index.
    pub dev: u16,
    /// QP number.
    pub qpn: u32,
    /// PSN or WQE counter, by kind.
    pub arg: u32,
}

impl TraceEvent {
    /// An entry.
    #[inline]
    pub(crate) const fn new(t_ns: u64, kind: TraceKind, dev: u16, qpn: u32, arg: u32) -> Self {
        TraceEvent {
            t_ns,
            kind,
            dev,
            qpn,
            arg,
        }
    }
}

/// Kinds of trace entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TraceKind {
    /// A packet was sent.
    Send,
    /// A packet was lost.
    Lost,
    /// A packet arrived.
    Arrive,
    /// A retransmission timer fired.
    Timeout,
    /// An RNR timer fired.
    RnrRetry,
    /// A CQE was written (arg = wqe_counter | syndrome << 16).
    Cqe,
    /// A QP entered ERR.
    QpError,
    /// A CQ overran.
    CqOverrun,
}

impl World {
    /// Records a trace entry at the current time, if tracing is on.
    #[inline]
    pub fn trace(&mut self, kind: TraceKind, dev: u16, qpn: u32, arg: u32) {
        if let Some(t) = self.trace.as_mut() {
            t.push(TraceEvent {
                t_ns: self.now,
                kind,
                dev,
                qpn,
                arg,
            });
        }
    }
}
