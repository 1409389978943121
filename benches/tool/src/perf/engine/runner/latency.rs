//! The latency loops: `write-lat` / `send-lat` ping-pong (with the wait
//! for each message to arrive) and `read-lat` / `atomic-lat`, one
//! operation at a time.

use super::super::payload::{atomic_mismatches, last_byte, mismatches, read_byte, stamp};
use super::super::role::Role;
use super::{Engine, Who};
use crate::perftest::format::Verb;
use bareverbs::sq::{SendFlags, SendOp, SendWr, Sge};

impl Engine<'_> {
    /// Waits for iteration `i`'s message to arrive at `w`: the last byte of
    /// its buffer changing (WRITE) or a receive completion (SEND).
    pub(super) fn arrive(&mut self, w: Who, i: u64) -> anyhow::Result<()> {
        let size = self.size;
        let p = &self.pairs[0].p;
        let (dst, from, to) = match w {
            Who::A => (p.a_dst[0], p.b.qpn(), p.a.qpn()),
            Who::B => (p.b_dst[0], p.a.qpn(), p.b.qpn()),
        };
        if self.verb == Verb::Write {
            let want = last_byte(size, i);
            return self.wait(
                &|_| {
                    format!(
                        "the RDMA WRITE of iteration {i} (QP {from:#x} -> QP {to:#x}) to land: the last \
                         byte of the target buffer is {:#04x}, expected {want:#04x}",
                        read_byte(&dst, size - 1)
                    )
                },
                |_| Ok(read_byte(&dst, size - 1) == want),
            );
        }
        let recvs = |e: &Self| match w {
            Who::A => e.pairs[0].a_recvs.len(),
            Who::B => e.pairs[0].b_recvs.len(),
        };
        self.wait(
            &|_| {
                format!(
                    "the receive completion of iteration {i}'s SEND (QP {from:#x} -> QP {to:#x})"
                )
            },
            |e| {
                if recvs(e) == 0 {
                    e.poll(0, w)?;
                }
                Ok(recvs(e) > 0)
            },
        )?;
        let pr = &mut self.pairs[0];
        let (_slot, len) = match w {
            Who::A => pr.a_recvs.pop_front(),
            Who::B => pr.b_recvs.pop_front(),
        }
        .unwrap_or_default();
        let want = (size + self.recv_off) as u32;
        if len != want {
            // Short or long receive: every byte counts as wrong.
            self.rep.mismatches += size as u64;
        }
        Ok(())
    }

    /// write-lat / send-lat: A → B, then B → A; sample = round trip / 2.
    pub(super) fn ping_pong(&mut self) -> anyhow::Result<()> {
        match self.role {
            Role::Client => return self.ping_client(),
            Role::Server => return self.pong_server(),
            Role::Loopback => {}
        }
        let size = self.size;
        let send = self.verb == Verb::Send;
        self.first_receives()?;
        let mut t = 0u64;
        self.rep.tposted.push(0);
        let mut i = 0;
        while i < self.iters && !(i >= 5 && self.out_of_time()) {
            let last = i + 1 == self.iters;
            let (a_src, b_src) = (self.pairs[0].p.a_src[0], self.pairs[0].p.b_src[0]);
            stamp(&a_src, size, i);
            stamp(&b_src, size, i);
            self.room(0, Who::A)?;
            self.room(0, Who::B)?;
            let t0 = self.post_pp(Who::A, last)?;
            self.arrive(Who::B, i)?;
            self.post_pp(Who::B, last)?;
            if send {
                self.post_recv(0, Who::B, 0)?;
            }
            self.arrive(Who::A, i)?;
            let rtt = self.timer.now_ns().saturating_sub(t0);
            self.sample(&mut t, rtt);
            if send {
                self.post_recv(0, Who::A, 0)?;
            }
            let off = self.recv_off;
            let p = &self.pairs[0].p;
            for d in [p.b_dst[0], p.a_dst[0]] {
                // SAFETY: off + size <= slot_bytes: inside the slot.
                let at = unsafe { d.cpu.as_ptr().add(off) };
                self.rep.mismatches += mismatches(at, size, i, &self.body, 1, i + 1);
            }
            self.poll(0, Who::A)?;
            self.poll(0, Who::B)?;
            i += 1;
        }
        Ok(())
    }

    /// read-lat / atomic-lat: one operation at a time, post → completion.
    pub(super) fn op_lat(&mut self) -> anyhow::Result<()> {
        let size = self.size;
        let atomic = self.verb == Verb::Atomic;
        let src = self.pairs[0].p.b_src[0];
        let dst = self.pairs[0].p.a_dst[0];
        let (drives_a, drives_b) = (self.role.drives_a(), self.role.drives_b());
        if !drives_a {
            // The server: its source holds iteration 0's message, or the
            // counter starts at 0; the client does the rest.
            if atomic {
                // SAFETY: the slot holds at least 64 bytes of this side's
                // registered memory; no WR uses it yet.
                unsafe { std::ptr::write_bytes(src.cpu.as_ptr(), 0, 8) };
            } else {
                stamp(&src, size, 0);
            }
            return Ok(());
        }
        if atomic && drives_b {
            // The remote counter starts at 0.
            // SAFETY: the slot holds at least 64 bytes; no WR uses it yet.
            unsafe { std::ptr::write_bytes(src.cpu.as_ptr(), 0, 8) };
        }
        let atomic_sge = [Sge {
            addr: dst.addr,
            length: 8,
            lkey: dst.key,
        }];
        let read_sgl = self.pairs[0].sg.a_dst[0].clone();
        let mut t = 0u64;
        self.rep.tposted.push(0);
        let mut i = 0;
        while i < self.iters && !(i >= 5 && self.out_of_time()) {
            if !atomic && drives_b {
                stamp(&src, size, i);
            }
            // A server's source holds iteration 0's message throughout.
            let expect = if drives_b { i } else { 0 };
            self.room(0, Who::A)?;
            let seq = self.pairs[0].a_posted;
            let (op, sgl) = if atomic {
                (
                    SendOp::FetchAdd {
                        remote_addr: src.addr,
                        rkey: src.key,
                        add: 1,
                    },
                    &atomic_sge[..],
                )
            } else {
                (
                    SendOp::Read {
                        remote_addr: src.addr,
                        rkey: src.key,
                    },
                    &read_sgl[..],
                )
            };
            let wr = SendWr::new(seq, op, sgl).with_flags(SendFlags::SIGNALED);
            let t0 = self.post_timed(0, Who::A, 1, |s| s.post(&[wr]))?;
            let name = if atomic { "fetch-and-add" } else { "RDMA READ" };
            let (qa, qb) = (self.qpn(0, Who::A), self.qpn(0, Who::B));
            self.wait(
                &|_| {
                    format!(
                        "the completion of the {name} of iteration {i} (QP {qa:#x} -> QP {qb:#x})"
                    )
                },
                |e| {
                    e.poll(0, Who::A)?;
                    Ok(e.pairs[0].a_retired > seq)
                },
            )?;
            let took = self.timer.now_ns().saturating_sub(t0);
            self.sample(&mut t, took);
            if drives_b || self.peer_payload {
                self.rep.mismatches += if atomic {
                    atomic_mismatches(dst.cpu.as_ptr(), i)
                } else {
                    mismatches(dst.cpu.as_ptr(), size, expect, &self.body, 1, expect + 1)
                };
            }
            i += 1;
        }
        if atomic && drives_b {
            self.rep.mismatches += atomic_mismatches(src.cpu.as_ptr(), i);
        }
        Ok(())
    }

    /// The server's check once the client is done with `iters` atomics:
    /// the counter it added to holds that many.
    pub(super) fn check_counter(&mut self, iters: u64) {
        if self.verb == Verb::Atomic && self.peer_payload {
            let src = self.pairs[0].p.b_src[0];
            self.rep.mismatches += atomic_mismatches(src.cpu.as_ptr(), iters);
        }
    }

    /// write-lat / send-lat, the client's half: ping, wait for the pong;
    /// sample = round trip / 2.
    fn ping_client(&mut self) -> anyhow::Result<()> {
        let size = self.size;
        let send = self.verb == Verb::Send;
        self.first_receives()?;
        let mut t = 0u64;
        self.rep.tposted.push(0);
        let mut i = 0;
        while i < self.iters && !(i >= 5 && self.out_of_time()) {
            let last = i + 1 == self.iters;
            let a_src = self.pairs[0].p.a_src[0];
            stamp(&a_src, size, i);
            self.room(0, Who::A)?;
            let t0 = self.post_pp(Who::A, last)?;
            self.arrive(Who::A, i)?;
            let rtt = self.timer.now_ns().saturating_sub(t0);
            self.sample(&mut t, rtt);
            // The pong is in place until the next ping is posted.
            self.check_arrived(Who::A, i);
            if send {
                self.post_recv(0, Who::A, 0)?;
            }
            self.poll(0, Who::A)?;
            i += 1;
        }
        Ok(())
    }

    /// write-lat / send-lat, the server's half: wait for each ping, check
    /// it, pong back.
    fn pong_server(&mut self) -> anyhow::Result<()> {
        let size = self.size;
        let send = self.verb == Verb::Send;
        self.first_receives()?;
        // Samples: the time between successive pongs (a round trip of the
        // client's, as perftest's server measures it).
        let mut t = 0u64;
        let mut prev: Option<u64> = None;
        self.rep.tposted.push(0);
        let mut i = 0;
        while i < self.iters {
            let last = i + 1 == self.iters;
            self.arrive(Who::B, i)?;
            // Checked before the pong: the next ping may land right after.
            self.check_arrived(Who::B, i);
            if send {
                self.post_recv(0, Who::B, 0)?;
            }
            let b_src = self.pairs[0].p.b_src[0];
            stamp(&b_src, size, i);
            self.room(0, Who::B)?;
            let t0 = self.post_pp(Who::B, last)?;
            if let Some(p) = prev {
                self.sample(&mut t, t0.saturating_sub(p));
            }
            prev = Some(t0);
            self.poll(0, Who::B)?;
            i += 1;
        }
        Ok(())
    }

    /// Counts the bytes of iteration `i`'s message at `w` that differ (a
    /// message from a peer that is not bareverbs is not checked).
    fn check_arrived(&mut self, w: Who, i: u64) {
        if !self.peer_payload {
            return;
        }
        let p = &self.pairs[0].p;
        let d = match w {
            Who::A => p.a_dst[0],
            Who::B => p.b_dst[0],
        };
        // SAFETY: recv_off + size <= slot_bytes: inside the slot.
        let at = unsafe { d.cpu.as_ptr().add(self.recv_off) };
        self.rep.mismatches += mismatches(at, self.size, i, &self.body, 1, i + 1);
    }
}
