//! Fuzz body `hostile_cq`: the device as an adversary. Bytes drive a
//! script of posts (two QPs: one with its own RQ, one on an SRQ), CQEs
//! written by a "device" (honest ones, phantom / repeated / stale counters,
//! CQEs of unknown QPs, random opcodes, compressed sessions of any count),
//! polls with a random batch size, and QP resets (with CQ clean). After
//! every poll and post it checks, against an independent model:
//!
//! * every completion names a WR that is posted and not yet completed, and
//!   retires exactly the WRs the model expects (exactly once, never a
//!   phantom);
//! * the queues' counters equal the model's outstanding work;
//! * the ring bytes of every WQE in flight are unchanged (nothing posted
//!   over a WQE the device may still execute);
//! * the doorbell record follows the consumer index.
//!
//! The script runs twice: polled with
//! [`CompletionQueue::poll`](bareverbs::cq::CompletionQueue::poll) (full
//! `WorkCompletion`s), then with
//! [`CompletionQueue::poll_completions`](bareverbs::cq::CompletionQueue::poll_completions)
//! (the lean path). The second run must see, poll for poll, the same result or
//! error, the same completions (`Completion::from(&wc)`), the same consumer
//! index, doorbell record and ring bytes as the first.
//!
//! Everything lives in fixed arrays on the stack: no allocation per run.
//!
//! Layout: `mem` (the device-visible memory and raw access to it), `model`
//! (the independent model of the work in flight), `scene` (the queues and
//! the script's steps), `device` (the CQE-writing adversary), `check` (the
//! poll, its replay comparison and the invariants).

use bareverbs::cqe::MiniCqeFormat;
use bareverbs::platform::MemUar;
use bareverbs::queue_pair::QueuePair;
use bareverbs::rq::RqSlot;
use bareverbs::sq::SqSlot;

mod check;
mod device;
mod mem;
mod model;
mod scene;

use check::{PollRecord, Trace, MAX_POLLS};
use mem::Mem;
use scene::Scene;

pub(super) const NCQE: usize = 16;
pub(super) const SQ: usize = 8;
pub(super) const RQ: usize = 4;
pub(super) const SRQ: usize = 4;
pub(super) const QPN: [u32; 2] = [0x100, 0x200];
pub(super) const UIDX: [u32; 2] = [1, 2];

/// One QP of the scene, over memory-only rings.
pub(super) type Qp = QueuePair<MemUar, [SqSlot; SQ], [RqSlot; RQ]>;

pub(super) struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    pub(super) fn u8(&mut self) -> u8 {
        match self.0.split_first() {
            Some((b, rest)) => {
                self.0 = rest;
                *b
            }
            None => 0,
        }
    }
    pub(super) fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }
}

/// Runs one script, on the full poll path and then on the lean one; see
/// the module documentation.
pub fn hostile_cq(data: &[u8]) {
    let mut t = Trace {
        polls: [PollRecord::default(); MAX_POLLS],
        n: 0,
        replay: false,
    };
    run(data, &mut t);
    let polls = t.n;
    t.replay = true;
    t.n = 0;
    run(data, &mut t);
    assert_eq!(t.n, polls, "lean run polled a different number of times");
}

fn run(data: &[u8], trace: &mut Trace) {
    let mut b = Bytes(data);
    let sel = b.u8();
    let version = sel & 1;
    let mini = match (sel >> 1) % 3 {
        0 => MiniCqeFormat::Hash,
        1 => MiniCqeFormat::Csum,
        _ => MiniCqeFormat::SendInfo,
    };
    let mut mem = Mem::zeroed();
    let p = mem.ptrs();
    // SAFETY: `mem` outlives the scene (declared before it) and is
    // accessed only through these raw pointers while it lives.
    let mut s = unsafe { Scene::new(p, version, mini) };
    for _ in 0..200 {
        if b.0.is_empty() {
            break;
        }
        let op = b.u8();
        s.step(op, &mut b, trace);
        s.check();
    }
    // Drain what is left; the invariants hold to the end.
    for _ in 0..2 * NCQE {
        s.poll(4, trace);
    }
    s.check();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smoke() {
        hostile_cq(&[]);
        hostile_cq(&[0xff; 300]);
        let mut s = vec![1u8];
        for i in 0..120u8 {
            s.extend_from_slice(&[i.wrapping_mul(37), i, i ^ 0x5a, 3, i >> 1]);
        }
        hostile_cq(&s);
    }
}
