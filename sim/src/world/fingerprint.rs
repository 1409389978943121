//! The state fingerprint ([`World::fingerprint`]): every field of the
//! world, its devices and their objects as text, for determinism checks.

use super::{Timed, World};

impl World {
    /// See [`crate::Fabric::state_fingerprint`].
    pub fn fingerprint(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let key = |t: &Timed| (t.t, t.seq);
        let mut heap: Vec<(u64, u64)> = self.heap.iter().map(key).collect();
        heap.sort_unstable();
        let _ = writeln!(
            s,
            "now {} seq {} rng {:?} front {:?} deferred {:?} heap {:?} any_error {} to_error {:?}",
            self.now,
            self.seq,
            self.rng,
            self.front.as_ref().map(|f| (f.0, f.1)),
            self.deferred.map(|d| (d.t, d.seq, d.dev, d.qi, d.gen)),
            heap,
            self.any_error,
            self.to_error,
        );
        for (i, d) in self.devs.iter().enumerate() {
            let _ = writeln!(
                s,
                "dev {i} lid {} tx_free {} lru {:?} {:?} {} events {:?}\n  {:?}",
                d.lid, d.tx_free, d.lru_head, d.lru_tail, d.lru_len, d.events, d.counters
            );
            for q in d.qps.iter().flatten() {
                let pend: Vec<_> = q
                    .pend
                    .iter()
                    .map(|p| (p.wqe_counter, p.opcode, p.psn, p.npkts, p.done, p.err))
                    .collect();
                let _ = writeln!(
                    s,
                    "  qp {:#x} {:?} {:?} fetched {} bf {:?} blocked {} rq {} psn {} pend {:?} \
                     retry {} rnr {} gen {} rnr_wait {} epsn {} nak {} rx {} qpc {} {:?} {:?} \
                     attr {:?}\n    {:?}",
                    q.qpn,
                    q.ty,
                    q.state,
                    q.sq_fetched,
                    q.bf_index,
                    q.sq_blocked,
                    q.rq_consumed,
                    q.next_psn,
                    pend,
                    q.retry_left,
                    q.rnr_left,
                    q.timer_gen,
                    q.rnr_wait,
                    q.epsn,
                    q.nak_sent,
                    q.last_rx_ns,
                    q.in_qpc,
                    q.lru_prev,
                    q.lru_next,
                    q.attr,
                    q.counters
                );
            }
            for m in d.mrs.iter().flatten() {
                let _ = writeln!(
                    s,
                    "  mr {:#x} pd {} {:#x}+{:#x} access {} valid {}",
                    m.key,
                    m.pd,
                    m.iova,
                    m.len,
                    m.access.bits(),
                    m.valid
                );
            }
            for r in d.srqs.iter().flatten() {
                let _ = writeln!(
                    s,
                    "  srq head {} consumed {} limit {} error {}",
                    r.head_slot, r.consumed, r.limit, r.error
                );
            }
            for (n, c) in d.cqs.iter().enumerate() {
                let Some(c) = c else { continue };
                let mut ring = vec![0u8; c.ncqe as usize * 64];
                // SAFETY: the ring was translated at CQ creation to ncqe *
                // 64 bytes of live DMA memory; copied into host memory.
                unsafe { std::ptr::copy_nonoverlapping(c.ring, ring.as_mut_ptr(), ring.len()) };
                let mut h = std::hash::DefaultHasher::new();
                std::hash::Hash::hash(&ring, &mut h);
                let _ = writeln!(
                    s,
                    "  cq {n} pi {} error {} armed {:?} last {} ring {:016x}",
                    c.pi,
                    c.error,
                    c.armed,
                    c.last_cqe_ns,
                    std::hash::Hasher::finish(&h)
                );
            }
        }
        s
    }
}
