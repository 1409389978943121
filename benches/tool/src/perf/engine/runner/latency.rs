//! The latency loops: `write-lat` / `send-lat` ping-pong (with the wait
//! for each message to arrive) and `read-lat` / `atomic-lat`, one
//! operation at a time.

use super::super::payload::{atomic_mismatches, last_byte, mismatches, read_byte, stamp};
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
        let size = self.size;
        let send = self.verb == Verb::Send;
        if send {
            self.post_recv(0, Who::A, 0)?;
            self.post_recv(0, Who::B, 0)?;
        }
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
        if atomic {
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
            if !atomic {
                stamp(&src, size, i);
            }
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
            self.rep.mismatches += if atomic {
                atomic_mismatches(dst.cpu.as_ptr(), i)
            } else {
                mismatches(dst.cpu.as_ptr(), size, i, &self.body, 1, i + 1)
            };
            i += 1;
        }
        if atomic {
            self.rep.mismatches += atomic_mismatches(src.cpu.as_ptr(), i);
        }
        Ok(())
    }
}
