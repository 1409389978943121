//! The bandwidth loop (`write-bw`, `send-bw`, `read-bw`): up to the window
//! of WRs in flight on every pair, posted in batches of the post list,
//! with its preparation and the accounting of each batch.

use super::super::consts::RESERVE_MAX;
use super::super::pair::Pair;
use super::super::test_name::test_name;
use super::batch::{build_batch, Batch};
use super::{Engine, PairRun};
use crate::perftest::format::Verb;
use anyhow::anyhow;
use bareverbs::sq::RdmaOp;

impl Engine<'_> {
    /// Posts whole batches on pair `q` while its window (and, for SEND,
    /// its receives) allow. Returns whether anything was posted.
    pub(super) fn post_batches(
        &mut self,
        q: usize,
        n: u64,
        t_first: &mut Option<u64>,
    ) -> anyhow::Result<bool> {
        let size = self.size;
        let slots = self.slots as u64;
        let window = self.window as u64;
        let verb = self.verb;
        let send = verb == Verb::Send;
        let rx_slots = self.rx_slots();
        let fast = !self.inline && !self.ud;
        let rop = match verb {
            Verb::Write => RdmaOp::Write,
            Verb::Read => RdmaOp::Read,
            _ => RdmaOp::Send,
        };
        let mut any = false;
        // A peer host's receives are its own to count: only a loopback
        // run holds its SENDs back to the receives it posted.
        let gate = send && self.role.drives_b();
        while let Some((posted, m, flags)) = self.next_batch(q, n, window, gate, rx_slots) {
            let (inline_flags, ud) = (self.flags(false), self.ud);
            let test = self.test;
            let PairRun { p, sg, .. } = &mut self.pairs[q];
            let Pair {
                a,
                b,
                a_src,
                b_src,
                b_dst,
                av,
                ..
            } = p;
            let batch = Batch {
                verb,
                size,
                slots,
                fast,
                inline_flags,
                ud,
                qpn_b: b.qpn(),
                stamp_b: self.role.drives_b(),
                first: posted,
                signaled: &flags,
            };
            let (rbatch, sbatch) = build_batch(&batch, a_src, b_src, b_dst, sg, av);
            let before = a.cur_post();
            let t = self.timer.now_ns();
            let r = if fast {
                // SAFETY: every SGE comes from the slot tables of A's
                // registered areas (the pair), alive until the queues are
                // dropped.
                unsafe { a.post_rdma(rop, &rbatch) }
            } else {
                a.post(&sbatch)
            };
            let t1 = self.timer.now_ns();
            r.map_err(|e| {
                anyhow!(
                    "{}: posting on QP {:#x} failed: {e}",
                    test_name(test),
                    a.qpn()
                )
            })?;
            if !self.wqe_seen {
                self.wqe_seen = true;
                let bbs = a.cur_post().wrapping_sub(before);
                self.rep.wqe_bytes = 16 * a.wqe_ds(before);
                self.rep.wqebbs = bbs / m.max(1) as u32;
            }
            drop(rbatch);
            drop(sbatch);
            self.account_batch(q, m, (t, t1), t_first);
            any = true;
        }
        Ok(any)
    }

    /// The next batch pair `q` may post of its `n` WRs: (its first
    /// iteration, its WR count, each WR's signaled flag); `None` when all
    /// are posted or the `window` (for SEND: the `rx_slots` receives) is
    /// full.
    #[inline(always)]
    pub(super) fn next_batch(
        &self,
        q: usize,
        n: u64,
        window: u64,
        send: bool,
        rx_slots: u64,
    ) -> Option<(u64, u64, Vec<bool>)> {
        let pr = &self.pairs[q];
        let (posted, completed) = (pr.posted, pr.completed);
        if posted >= n {
            return None;
        }
        let m = (self.post_list as u64).min(n - posted);
        let busy_rx = (posted + m).saturating_sub(pr.received + pr.lost);
        if posted + m - completed > window || (send && busy_rx > rx_slots) {
            return None;
        }
        let flags: Vec<bool> = (posted..posted + m)
            .map(|it| self.signal(it, it + 1 - completed, it + 1 == n))
            .collect();
        Some((posted, m, flags))
    }

    /// Books a batch of `m` WRs pair `q` posted in `timed` (the stamps
    /// before and after the post call): the post cost, the counters, and
    /// one post stamp per WR relative to the run's first post.
    #[inline(always)]
    pub(super) fn account_batch(
        &mut self,
        q: usize,
        m: u64,
        timed: (u64, u64),
        t_first: &mut Option<u64>,
    ) {
        let (t, t1) = timed;
        self.post_ns_total += t1.saturating_sub(t) as f64;
        self.post_wrs += m;
        self.doorbells += 1;
        self.rep.posted += m;
        self.pairs[q].a_posted += m;
        let t0 = *t_first.get_or_insert(t);
        for _ in 0..m {
            self.push_posted(t - t0);
        }
        self.pairs[q].posted += m;
    }

    /// write-bw / send-bw / read-bw: keep up to `window` WRs in flight on
    /// every pair.
    pub(super) fn bw(&mut self) -> anyhow::Result<()> {
        let mut n = self.iters;
        let send = self.verb == Verb::Send;
        let nq = self.pairs.len();
        if !self.role.drives_a() {
            return self.bw_server(n);
        }
        self.bw_prepare(n)?;
        let mut t_first: Option<u64> = None;
        let mut last_progress = self.timer.now_ns();
        let reliable = self.reliable;
        let mut stopping = false;
        loop {
            if !stopping && self.stop_at.is_some() && self.out_of_time() {
                // -D ran out: every pair ends one WR past the furthest
                // (that WR is signaled, so everything before it retires).
                stopping = true;
                n = self
                    .pairs
                    .iter()
                    .map(|p| p.posted)
                    .max()
                    .unwrap_or(0)
                    .saturating_add(1)
                    .max(5);
            }
            // The receives of a client's SENDs are the server's to count.
            let receives = send && reliable && self.role.drives_b();
            let done = self
                .pairs
                .iter()
                .all(|p| p.completed >= n && (!receives || p.received >= n));
            if done {
                break;
            }
            let mut progressed = false;
            for q in 0..nq {
                progressed |= self.post_batches(q, n, &mut t_first)?;
                progressed |= self.reap_sends(q, t_first)?;
                if send {
                    progressed |= self.reap_recvs(q)?;
                }
            }
            self.after_pass(progressed, &mut last_progress, n)?;
        }
        if !reliable {
            self.settle_and_check()?;
        }
        Ok(())
    }

    /// Before a bandwidth run of `n` WRs per pair: every receive slot of
    /// each responder posted (SEND), and room for the stamps reserved.
    pub(super) fn bw_prepare(&mut self, n: u64) -> anyhow::Result<()> {
        let nq = self.pairs.len();
        self.first_receives()?;
        let total = n.saturating_mul(nq as u64).min(RESERVE_MAX);
        self.rep.tposted.reserve(total as usize);
        self.rep.tcompleted.reserve(total as usize);
        Ok(())
    }
}

impl Engine<'_> {
    /// The server's part of a bandwidth test whose `n` WRs per pair the
    /// client posts: SEND: every receive posted, each message checked as
    /// it arrives, until `n` have; READ: B's sources stamped once, slot
    /// `k` with iteration `k`'s tag (the client cannot stamp the server's
    /// memory); WRITE: nothing until the client is done
    /// ([`check_landed`](Self::check_landed) then).
    fn bw_server(&mut self, n: u64) -> anyhow::Result<()> {
        let nq = self.pairs.len();
        match self.verb {
            Verb::Send => {
                for q in 0..nq {
                    // The client's iterations, as the message tags name them.
                    self.pairs[q].posted = n;
                }
                self.bw_prepare(n)?;
                // The receive side's stamps, as perftest's server keeps
                // them: each arrival completes an "iteration" that began
                // at the previous one (the first at the start).
                let t0 = self.timer.now_ns();
                let mut prev = 0u64;
                let mut last_progress = t0;
                while self.pairs.iter().any(|p| p.received < n) {
                    let mut progressed = false;
                    for q in 0..nq {
                        let before = self.pairs[q].received;
                        progressed |= self.reap_recvs(q)?;
                        let now = self.timer.now_ns() - t0;
                        for _ in before..self.pairs[q].received {
                            self.push_posted(prev);
                            self.push_completed(now);
                            prev = now;
                        }
                    }
                    self.after_pass(progressed, &mut last_progress, n)?;
                }
                Ok(())
            }
            Verb::Read => {
                let size = self.size;
                for p in &self.pairs {
                    for (k, s) in p.p.b_src.iter().enumerate() {
                        super::super::payload::stamp(s, size, k as u64);
                    }
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }
}
