//! The independent model of the work in flight: which sends and receives
//! are posted and not yet completed, and the device's counters.

/// A send WR in flight: id, WR sequence, first WQEBB counter, the first
/// 16 bytes (control segment) of its WQE.
#[derive(Clone, Copy, Default)]
pub(super) struct SendRec {
    pub(super) id: u64,
    pub(super) seq: u32,
    pub(super) ctr: u16,
    pub(super) ctrl: [u8; 16],
}

/// A receive in flight: id, ring slot, its first data segment.
#[derive(Clone, Copy, Default)]
pub(super) struct RecvRec {
    pub(super) id: u64,
    pub(super) slot: u16,
    pub(super) seg: [u8; 16],
}

/// Fixed-capacity FIFO.
pub(super) struct Fifo<T: Copy + Default, const C: usize> {
    pub(super) v: [T; C],
    pub(super) n: usize,
}

impl<T: Copy + Default, const C: usize> Fifo<T, C> {
    pub(super) fn new() -> Self {
        Fifo {
            v: [T::default(); C],
            n: 0,
        }
    }
    pub(super) fn push(&mut self, x: T) {
        assert!(self.n < C, "model overflow: the queue accepted too much");
        self.v[self.n] = x;
        self.n += 1;
    }
    pub(super) fn items(&self) -> &[T] {
        &self.v[..self.n]
    }
    /// Removes the first `k` entries.
    pub(super) fn drop_front(&mut self, k: usize) {
        self.v.copy_within(k..self.n, 0);
        self.n -= k;
    }
    pub(super) fn remove(&mut self, i: usize) {
        self.v.copy_within(i + 1..self.n, i);
        self.n -= 1;
    }
}

pub(super) struct Model {
    pub(super) sends: [Fifo<SendRec, 4>; 2],
    pub(super) recvs: Fifo<RecvRec, 4>,
    pub(super) srq: Fifo<RecvRec, 3>,
    pub(super) next_id: u64,
    /// The device's idea of the next RQ counter.
    pub(super) dev_rq: u16,
    /// Device producer index of the CQ.
    pub(super) pi: u32,
    /// Counters of recent honest send CQEs (for repeats).
    pub(super) recent: [u16; 4],
}
