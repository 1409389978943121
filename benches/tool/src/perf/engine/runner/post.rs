//! Posting: which WRs are signaled, the send flags, a timed post (which
//! also reads the first WQE back from the ring), a receive, and the ping
//! or pong of a ping-pong iteration.

use super::super::consts::QKEY;
use super::super::side::SideOps;
use super::super::test_name::test_name;
use super::{Engine, Who};
use crate::perftest::format::Verb;
use anyhow::anyhow;
use bareverbs::sq::{PostError, SendFlags, SendOp, SendWr, Sge, UdDest};

impl Engine<'_> {
    /// Signal this WR? Every `cq_mod`-th, the last of the run, and any WR
    /// that fills the send window (or it could never drain).
    pub(super) fn signal(&self, seq: u64, in_flight_after: u64, last: bool) -> bool {
        last || (seq + 1).is_multiple_of(self.cq_mod) || in_flight_after >= self.cap as u64
    }

    /// Posts `nwr` WRs on `w` of pair `q` through `f`, timing the call;
    /// the first post of A reads its WQE back from the ring. Returns the
    /// post stamp.
    pub(super) fn post_timed(
        &mut self,
        q: usize,
        w: Who,
        nwr: usize,
        f: impl FnOnce(&mut dyn SideOps) -> Result<(), PostError>,
    ) -> anyhow::Result<u64> {
        let before = self.side(q, w).cur_post();
        let t0 = self.timer.now_ns();
        let r = f(self.side(q, w));
        let t1 = self.timer.now_ns();
        r.map_err(|e| {
            anyhow!(
                "{}: posting on QP {:#x} failed: {e}",
                test_name(self.test),
                self.qpn(q, w)
            )
        })?;
        self.post_ns_total += t1.saturating_sub(t0) as f64;
        self.post_wrs += nwr as u64;
        self.doorbells += 1;
        self.rep.posted += nwr as u64;
        if !self.wqe_seen && w == Who::A {
            self.wqe_seen = true;
            let s = self.side(q, w);
            let bbs = s.cur_post().wrapping_sub(before);
            let ds = s.wqe_ds(before);
            self.rep.wqe_bytes = 16 * ds;
            self.rep.wqebbs = bbs / nwr.max(1) as u32;
        }
        let pr = &mut self.pairs[q];
        match w {
            Who::A => pr.a_posted += nwr as u64,
            Who::B => pr.b_posted += nwr as u64,
        }
        Ok(t0)
    }

    pub(super) fn flags(&self, signaled: bool) -> SendFlags {
        let mut f = SendFlags::empty();
        if self.inline {
            f |= SendFlags::INLINE;
        }
        if signaled {
            f |= SendFlags::SIGNALED;
        }
        f
    }

    pub(super) fn post_recv(&mut self, q: usize, w: Who, slot: usize) -> anyhow::Result<()> {
        let p = &self.pairs[q].p;
        let s = match w {
            Who::A => p.a_dst[slot],
            Who::B => p.b_dst[slot],
        };
        let sge = Sge {
            addr: s.addr,
            length: (self.size + self.recv_off) as u32,
            lkey: s.key,
        };
        self.side(q, w).post_recv(slot as u64, sge)
    }

    /// Posts the ping (A) or pong (B) of a ping-pong iteration.
    pub(super) fn post_pp(&mut self, w: Who, last: bool) -> anyhow::Result<u64> {
        self.room(0, w)?;
        let (seq, out) = match w {
            Who::A => (self.pairs[0].a_posted, self.outstanding(0, Who::A)),
            Who::B => (self.pairs[0].b_posted, self.outstanding(0, Who::B)),
        };
        let sig = self.signal(seq, out as u64 + 1, last);
        let flags = self.flags(sig);
        let (verb, ud) = (self.verb, self.ud);
        let pr = &mut self.pairs[0];
        let (qa, qb) = (pr.p.a.qpn(), pr.p.b.qpn());
        let (sgl, dst, peer) = match w {
            Who::A => (&pr.sg.a_src[0], pr.p.b_dst[0], qb),
            Who::B => (&pr.sg.b_src[0], pr.p.a_dst[0], qa),
        };
        let op = if verb == Verb::Send {
            SendOp::Send
        } else {
            SendOp::Write {
                remote_addr: dst.addr,
                rkey: dst.key,
            }
        };
        let sgl = sgl.clone();
        let av = pr.p.av;
        let mut wr = SendWr::new(seq, op, &sgl).with_flags(flags);
        if ud {
            wr = wr.with_ud(UdDest {
                av: &av,
                remote_qpn: peer,
                remote_qkey: QKEY,
            });
        }
        self.post_timed(0, w, 1, |s| s.post(&[wr]))
    }
}
