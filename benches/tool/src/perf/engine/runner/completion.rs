//! Completions: polling a side's CQ (send completions retire WRs,
//! receive completions are queued, an error completion ends the run),
//! waiting for send-queue room, and reaping a pair's send and receive
//! completions with the check of what arrived.

use super::super::payload::{mismatches, read_byte, TAG};
use super::super::test_name::test_name;
use super::{Engine, Who};
use crate::perftest::format::Verb;
use anyhow::{anyhow, bail};
use bareverbs::cqe::{WcOpcode, WcStatus};

impl Engine<'_> {
    /// Polls `w`'s CQ of pair `q` once: send completions retire WRs,
    /// receive completions are queued. An error completion ends the run.
    pub(super) fn poll(&mut self, q: usize, w: Who) -> anyhow::Result<usize> {
        let pr = &mut self.pairs[q];
        let r = match w {
            Who::A => pr.p.a.poll(&mut self.wcs),
            Who::B => pr.p.b.poll(&mut self.wcs),
        };
        let n = r.map_err(|e| anyhow!("polling the CQ of QP {:#x}: {e}", self.qpn(q, w)))?;
        if n == 0 {
            return Ok(0);
        }
        self.timer.cqes_polled(n);
        self.cqes += n as u64;
        for k in 0..n {
            let wc = self.wcs[k];
            if wc.status != WcStatus::Success {
                self.rep.completed_err += 1;
                bail!(
                    "{}: WR {} on QP {:#x} completed with {} ({}, vendor syndrome {:#x})",
                    test_name(self.test),
                    wc.wr_id,
                    self.qpn(q, w),
                    wc.status,
                    wc.status.description(),
                    wc.vendor_err
                );
            }
            let recv = matches!(wc.opcode, WcOpcode::Recv);
            let pr = &mut self.pairs[q];
            match (w, recv) {
                (Who::A, true) => pr.a_recvs.push_back((wc.wr_id, wc.byte_len)),
                (Who::B, true) => pr.b_recvs.push_back((wc.wr_id, wc.byte_len)),
                (Who::A, false) => pr.a_retired = pr.a_retired.max(wc.wr_id + 1),
                (Who::B, false) => pr.b_retired = pr.b_retired.max(wc.wr_id + 1),
            }
        }
        Ok(n)
    }

    /// Waits until `w`'s send queue of pair `q` may take one more WR.
    pub(super) fn room(&mut self, q: usize, w: Who) -> anyhow::Result<()> {
        if self.outstanding(q, w) < self.cap {
            return Ok(());
        }
        let max = self.cap;
        self.wait(
            &|e: &Self| {
                format!(
                    "a send completion on QP {:#x} ({} WRs outstanding, at most {max} may be)",
                    e.qpn(q, w),
                    e.outstanding(q, w),
                )
            },
            |e| {
                e.poll(q, w)?;
                Ok(e.outstanding(q, w) < max)
            },
        )
    }

    /// Requester completions of pair `q`: every WR through the CQE's
    /// retires, with a completion stamp (relative to `t_first`) and, on
    /// RC, the check of its payload. Returns whether any retired.
    #[inline(always)]
    pub(super) fn reap_sends(&mut self, q: usize, t_first: Option<u64>) -> anyhow::Result<bool> {
        let size = self.size;
        let slots = self.slots as u64;
        let verb = self.verb;
        let reliable = self.reliable;
        // Requester completions: every WR through the CQE's retires.
        if self.poll(q, Who::A)? > 0 && self.pairs[q].a_retired > self.pairs[q].completed {
            let now = self.timer.now_ns() - t_first.unwrap_or(0);
            let (from, to) = (self.pairs[q].completed, self.pairs[q].a_retired);
            for it in from..to {
                self.push_completed(now);
                // RC: completion means the data is in place. UC/UD
                // complete on sending; they are checked at the end.
                if reliable && verb != Verb::Send {
                    let slot = (it % slots) as usize;
                    let p = &self.pairs[q].p;
                    let upto = self.pairs[q].posted;
                    if verb == Verb::Read && !self.role.drives_b() {
                        // A server's sources hold slot k's tag (bw_server).
                        if self.peer_payload {
                            let at = p.a_dst[slot].cpu.as_ptr();
                            let k = slot as u64;
                            self.rep.mismatches += mismatches(at, size, k, &self.body, 1, k + 1);
                        }
                    } else if verb == Verb::Read {
                        let at = p.a_dst[slot].cpu.as_ptr();
                        self.rep.mismatches += mismatches(at, size, it, &self.body, slots, upto);
                    } else if self.role.drives_b() {
                        // A WRITE to a peer host lands in its memory: the
                        // server checks it when the client is done.
                        let at = p.b_dst[slot].cpu.as_ptr();
                        self.rep.mismatches += mismatches(at, size, it, &self.body, slots, upto);
                    }
                }
            }
            self.pairs[q].completed = to;
            return Ok(true);
        }
        Ok(false)
    }

    /// Responder receives of pair `q` (SEND): check and repost. Returns
    /// whether any were consumed.
    #[inline(always)]
    pub(super) fn reap_recvs(&mut self, q: usize) -> anyhow::Result<bool> {
        if self.poll(q, Who::B)? > 0 || !self.pairs[q].b_recvs.is_empty() {
            let k = self.consume_recvs(q)?;
            self.pairs[q].received += k;
            return Ok(true);
        }
        Ok(false)
    }

    /// Checks and reposts the receives B of pair `q` completed. Returns
    /// how many were consumed.
    pub(super) fn consume_recvs(&mut self, q: usize) -> anyhow::Result<u64> {
        let mut k = 0u64;
        while let Some((slot, len)) = self.pairs[q].b_recvs.pop_front() {
            let s = self.pairs[q].p.b_dst[slot as usize];
            k += 1;
            if len as usize != self.size + self.recv_off {
                self.rep.mismatches += self.size as u64;
                self.pairs[q].rx_next += 1;
                self.post_recv(q, Who::B, slot as usize)?;
                continue;
            }
            // SAFETY: recv_off + size <= slot_bytes: inside the slot.
            let p = unsafe { s.cpu.as_ptr().add(self.recv_off) };
            // Which iteration is this? Messages name it (a tag, or under
            // 16 bytes the iteration mod 255); UC/UD may have lost some
            // in between, so the next one is the first at or after the
            // expected iteration that carries this name.
            let rx_next = self.pairs[q].rx_next;
            let posted = self.pairs[q].posted;
            let mut it = rx_next;
            if self.size >= 2 * TAG {
                let mut t = [0u8; TAG];
                // SAFETY: TAG <= size bytes at p, inside the slot.
                unsafe { std::ptr::copy_nonoverlapping(p, t.as_mut_ptr(), TAG) };
                let named = u64::from_be_bytes(t).wrapping_sub(1);
                if (rx_next..posted).contains(&named) {
                    it = named;
                }
            } else {
                let b = read_byte(&s, self.recv_off);
                if (1..=255).contains(&b) {
                    let skip = (b as u64 - 1 + 255 - rx_next % 255) % 255;
                    if rx_next + skip < posted {
                        it = rx_next + skip;
                    }
                }
            }
            if self.peer_payload || self.role.drives_a() {
                self.rep.mismatches += mismatches(p, self.size, it, &self.body, 1, it + 1);
            }
            self.pairs[q].rx_next = it + 1;
            self.post_recv(q, Who::B, slot as usize)?;
        }
        Ok(k)
    }
}
