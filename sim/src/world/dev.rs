//! One device's state ([`Dev`]): its object tables, counters, port
//! transmitter and the QP-context cache (an LRU list threaded through
//! the QPs).

use crate::cost::Counters;
use crate::dma::HeapDma;
use crate::objects::{AsyncEvent, Cq, Mr, Qp, Srq};
use std::sync::Arc;

/// One device's state.
pub(crate) struct Dev {
    #[allow(dead_code)] // kept for the command interface (page allocation)
    pub dma: Arc<HeapDma>,
    pub lid: u16,
    pub qps: Vec<Option<Qp>>,
    pub cqs: Vec<Option<Cq>>,
    pub srqs: Vec<Option<Srq>>,
    pub mrs: Vec<Option<Mr>>,
    pub next_pd: u32,
    pub events: Vec<AsyncEvent>,
    pub counters: Counters,
    /// Virtual time the port's transmitter is free again.
    pub tx_free: u64,
    /// QP-context cache: most recently used QP index first.
    pub lru_head: Option<u32>,
    pub lru_tail: Option<u32>,
    pub lru_len: u32,
    /// The port's RoCE GID table as firmware holds it: (GID, source MAC)
    /// by index, all-zero for an empty entry.
    pub roce_gids: Vec<([u8; 16], [u8; 6])>,
}

impl Dev {
    fn unlink(&mut self, qi: u32) {
        let (p, n) = match self.qps.get(qi as usize).and_then(|q| q.as_ref()) {
            Some(q) => (q.lru_prev, q.lru_next),
            None => return,
        };
        match p {
            Some(p) => {
                if let Some(Some(q)) = self.qps.get_mut(p as usize) {
                    q.lru_next = n;
                }
            }
            None => self.lru_head = n,
        }
        match n {
            Some(n) => {
                if let Some(Some(q)) = self.qps.get_mut(n as usize) {
                    q.lru_prev = p;
                }
            }
            None => self.lru_tail = p,
        }
    }

    /// Drops QP `qi` from the QP-context cache (before it is destroyed).
    pub fn qpc_forget(&mut self, qi: u32) {
        if matches!(self.qps.get(qi as usize), Some(Some(q)) if q.in_qpc) {
            self.unlink(qi);
            self.lru_len -= 1;
            if let Some(Some(q)) = self.qps.get_mut(qi as usize) {
                q.in_qpc = false;
                q.lru_prev = None;
                q.lru_next = None;
            }
        }
    }

    /// Touches QP `qi` in the QP-context cache of `capacity` entries;
    /// returns true on a miss (the context had to be fetched).
    pub fn qpc_touch(&mut self, qi: u32, capacity: u32) -> bool {
        let hit = matches!(self.qps.get(qi as usize), Some(Some(q)) if q.in_qpc);
        if hit {
            if self.lru_head == Some(qi) {
                return false;
            }
            self.unlink(qi);
        } else {
            self.lru_len += 1;
        }
        let old = self.lru_head;
        if let Some(Some(q)) = self.qps.get_mut(qi as usize) {
            q.in_qpc = true;
            q.lru_prev = None;
            q.lru_next = old;
        }
        if let Some(o) = old {
            if let Some(Some(q)) = self.qps.get_mut(o as usize) {
                q.lru_prev = Some(qi);
            }
        }
        self.lru_head = Some(qi);
        if self.lru_tail.is_none() {
            self.lru_tail = Some(qi);
        }
        while self.lru_len > capacity.max(1) {
            let Some(t) = self.lru_tail else { break };
            self.unlink(t);
            if let Some(Some(q)) = self.qps.get_mut(t as usize) {
                q.in_qpc = false;
                q.lru_prev = None;
                q.lru_next = None;
            }
            self.lru_len -= 1;
        }
        !hit
    }

    pub fn mr(&self, key: u32) -> Option<&Mr> {
        let m = self
            .mrs
            .get(bareverbs::mr::mkey_index(key) as usize)?
            .as_ref()?;
        (m.key == key && m.valid).then_some(m)
    }
}
