//! The engine's run state ([`Engine`]: every pair's counters, the stamps
//! and report being built) and its setup; the run itself is split by
//! concern, each part an `impl Engine` block:
//!
//! | file | owns |
//! | --- | --- |
//! | `batch` | the SGE lists of a pair's slots and the WRs of one bandwidth batch |
//! | `post` | signaling, flags, timed posts, receives, the ping-pong post |
//! | `completion` | polling, send-queue room, the reaping of send and receive completions and the receive checks |
//! | `latency` | the ping-pong and one-at-a-time latency loops |
//! | `bandwidth` | the bandwidth loop and its batches |
//! | `timeouts` | busy-waits with their limit, the loss of unreliable SENDs, the settle at the end |
//! | `report` | post and completion stamps, samples, the final report |

mod bandwidth;
mod batch;
mod completion;
mod latency;
mod post;
mod report;
mod timeouts;

use super::consts::{DEFAULT_TIMEOUT_NS, RQ_WQES};
use super::events::EventWait;
use super::pair::{Pair, Slot};
use super::plan::Plan;
use super::role::Role;
use super::side::SideOps;
use super::timer::Timer;
use crate::perf::config::PerfRunConfig;
use crate::perf::flags::{Conn, PerfTest};
use crate::perf::report::PerfRunReport;
use crate::perftest::format::Verb;
use bareverbs::cqe::WorkCompletion;
use batch::{split, Lists};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// The run state of one pair.
struct PairRun {
    p: Pair,
    sg: Lists,
    /// WRs posted / retired per side (retired = through the last CQE's WR;
    /// `wr_id` is the side's posting sequence number).
    a_posted: u64,
    b_posted: u64,
    a_retired: u64,
    b_retired: u64,
    /// Receive completions not consumed yet: (wr_id = slot, byte_len).
    a_recvs: VecDeque<(u64, u32)>,
    b_recvs: VecDeque<(u64, u32)>,
    /// The iteration the next SEND received by B should carry.
    rx_next: u64,
    /// Bandwidth tests: iterations posted, completed, received (SEND),
    /// presumed lost (unreliable SEND).
    posted: u64,
    completed: u64,
    received: u64,
    lost: u64,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Who {
    A,
    B,
}

/// The mutable state of one run.
pub(super) struct Engine<'t> {
    timer: &'t mut dyn Timer,
    /// Event mode (`-e`): sleep on completion events between polls.
    events: Option<&'t mut dyn EventWait>,
    /// Completion events taken (event mode).
    wakeups: u64,
    pairs: Vec<PairRun>,
    body: Vec<u8>,
    test: PerfTest,
    verb: Verb,
    iters: u64,
    /// `-D`: stop posting at this wall-clock instant.
    stop_at: Option<Instant>,
    cq_mod: u64,
    post_list: u32,
    window: u32,
    cap: u32,
    timeout_ns: u64,
    size: usize,
    slots: usize,
    recv_off: usize,
    inline: bool,
    ud: bool,
    reliable: bool,
    rep: PerfRunReport,
    wcs: [WorkCompletion; 32],
    post_ns_total: f64,
    post_wrs: u64,
    doorbells: u64,
    cqes: u64,
    wqe_seen: bool,
    /// Which sides this process drives.
    role: Role,
    /// Check what the peer host's side wrote or holds (off when the peer
    /// is not bareverbs: its payload is its own).
    peer_payload: bool,
    /// The receives a SEND test starts with are posted
    /// ([`Engine::first_receives`]).
    receives_posted: bool,
}

impl<'t> Engine<'t> {
    pub(super) fn new(
        timer: &'t mut dyn Timer,
        events: Option<&'t mut dyn EventWait>,
        pairs: Vec<Pair>,
        plan: &Plan,
        cfg: &PerfRunConfig,
    ) -> Self {
        let body: Vec<u8> = (0..plan.size).map(|j| ((j * 7) % 251 + 1) as u8).collect();
        let role = pairs.first().map_or(Role::Loopback, |p| p.role);
        let pairs = pairs
            .into_iter()
            .map(|p| {
                // Source slots hold the body; the tags are written per
                // iteration. Only the sides this process drives: the
                // peer's slots are the peer's memory.
                let (a, b) = (role.drives_a(), role.drives_b());
                let a_src = if a { &p.a_src[..] } else { &[] };
                let b_src = if b { &p.b_src[..] } else { &[] };
                for s in a_src.iter().chain(b_src) {
                    // SAFETY: each slot holds slot_bytes >= size bytes of
                    // live registered memory no WR uses yet.
                    unsafe {
                        std::ptr::copy_nonoverlapping(body.as_ptr(), s.cpu.as_ptr(), plan.size)
                    };
                }
                let sg = |v: &[Slot]| v.iter().map(|s| split(s, plan.size, plan.k)).collect();
                PairRun {
                    sg: Lists {
                        a_src: sg(&p.a_src),
                        a_dst: sg(&p.a_dst),
                        b_src: sg(&p.b_src),
                    },
                    p,
                    a_posted: 0,
                    b_posted: 0,
                    a_retired: 0,
                    b_retired: 0,
                    a_recvs: VecDeque::new(),
                    b_recvs: VecDeque::new(),
                    rx_next: 0,
                    posted: 0,
                    completed: 0,
                    received: 0,
                    lost: 0,
                }
            })
            .collect();
        Engine {
            timer,
            events,
            wakeups: 0,
            pairs,
            body,
            test: cfg.test,
            verb: plan.verb,
            iters: if cfg.duration.is_some() {
                u64::MAX / 4
            } else {
                cfg.iters.max(1)
            },
            stop_at: cfg
                .duration
                .map(|d| Instant::now() + Duration::from_secs(d)),
            cq_mod: cfg.cq_mod.max(1) as u64,
            post_list: cfg.post_list.max(1).min(plan.window),
            window: plan.window,
            cap: plan.cap,
            timeout_ns: DEFAULT_TIMEOUT_NS,
            size: plan.size,
            slots: plan.slots,
            recv_off: plan.recv_off,
            inline: plan.inline,
            ud: plan.conn == Conn::Ud,
            reliable: plan.conn == Conn::Rc,
            rep: PerfRunReport {
                tick_hz: 1e9,
                ring_bytes: plan.layout.sq.buf_bytes,
                ..Default::default()
            },
            wcs: [WorkCompletion::default(); 32],
            post_ns_total: 0.0,
            post_wrs: 0,
            doorbells: 0,
            cqes: 0,
            wqe_seen: false,
            role,
            peer_payload: true,
            receives_posted: false,
        }
    }

    /// The receive slots of a bandwidth test's B side (0 but for SEND).
    pub(super) fn rx_slots(&self) -> u64 {
        if self.verb == Verb::Send {
            (self.slots as u64).min(RQ_WQES as u64)
        } else {
            0
        }
    }

    /// Posts the receives a SEND test starts with on the sides this
    /// process drives (one per side for send-lat, a ring's worth on B for
    /// send-bw), once. A two-host run calls it before it tells the peer
    /// to start, so the peer's first SEND finds a receive (no RNR NAK);
    /// each test loop calls it too (then it does nothing).
    pub(in crate::perf::engine) fn first_receives(&mut self) -> anyhow::Result<()> {
        if self.receives_posted || self.verb != Verb::Send {
            return Ok(());
        }
        self.receives_posted = true;
        match self.test {
            PerfTest::SendLat => {
                if self.role.drives_a() {
                    self.post_recv(0, Who::A, 0)?;
                }
                if self.role.drives_b() {
                    self.post_recv(0, Who::B, 0)?;
                }
            }
            PerfTest::SendBw if self.role.drives_b() => {
                let rx_slots = self.rx_slots();
                for q in 0..self.pairs.len() {
                    for s in 0..rx_slots {
                        self.post_recv(q, Who::B, s as usize)?;
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// The server's wait for the client's end of the test: `spoke` says
    /// whether the client has sent its next out-of-band message; until it
    /// has, the clock relaxes (a simulated device keeps running).
    pub(in crate::perf::engine) fn wait_for_peer(
        &mut self,
        spoke: &mut dyn FnMut() -> anyhow::Result<bool>,
    ) -> anyhow::Result<()> {
        while !spoke()? {
            self.timer.relax();
        }
        Ok(())
    }

    /// Lets the device finish what it owes the peer (see
    /// [`Timer::settle`]).
    pub(in crate::perf::engine) fn settle(&mut self) {
        self.timer.settle();
    }

    /// The server's checks once the client is done: every WRITE landed in
    /// B's slots as sent; the counter of the atomics holds their number.
    pub(in crate::perf::engine) fn after_peer(&mut self) {
        if !self.peer_payload {
            return;
        }
        let n = self.iters;
        match self.test {
            PerfTest::WriteBw => {
                for q in 0..self.pairs.len() {
                    self.check_landed(q, n);
                }
            }
            PerfTest::AtomicLat => self.check_counter(n),
            _ => {}
        }
    }

    /// Whether to check what the peer host's side wrote or holds (`false`
    /// when the peer is not bareverbs: its messages carry its own bytes).
    pub(in crate::perf::engine) fn check_peer_payload(&mut self, on: bool) {
        self.peer_payload = on;
    }

    /// `-D` ran out: stop posting (what is in flight still completes).
    fn out_of_time(&self) -> bool {
        self.stop_at.is_some_and(|t| Instant::now() >= t)
    }

    fn side(&mut self, q: usize, w: Who) -> &mut dyn SideOps {
        let p = &mut self.pairs[q].p;
        match w {
            Who::A => p.a.as_mut(),
            Who::B => p.b.as_mut(),
        }
    }

    fn qpn(&self, q: usize, w: Who) -> u32 {
        let p = &self.pairs[q].p;
        match w {
            Who::A => p.a.qpn(),
            Who::B => p.b.qpn(),
        }
    }

    fn outstanding(&self, q: usize, w: Who) -> u32 {
        let p = &self.pairs[q].p;
        match w {
            Who::A => p.a.outstanding(),
            Who::B => p.b.outstanding(),
        }
    }

    /// Runs the test, then waits until every WR posted has completed.
    pub(super) fn run(&mut self) -> anyhow::Result<()> {
        let t0 = self.timer.now_ns();
        self.run_test()?;
        self.rep.run_ns = self.timer.now_ns().saturating_sub(t0);
        Ok(())
    }

    /// [`run`](Self::run) without its clock.
    fn run_test(&mut self) -> anyhow::Result<()> {
        match self.test {
            PerfTest::WriteLat | PerfTest::SendLat => self.ping_pong(),
            PerfTest::ReadLat | PerfTest::AtomicLat => self.op_lat(),
            PerfTest::WriteBw | PerfTest::SendBw | PerfTest::ReadBw => self.bw(),
        }?;
        // Every WR posted completes: wait for the last signaled ones.
        for q in 0..self.pairs.len() {
            self.wait(
                &|e: &Self| {
                    let p = &e.pairs[q];
                    format!(
                        "the last send completions ({} of {} WRs retired on QP {:#x}, {} of {} on QP {:#x})",
                        p.a_retired,
                        p.a_posted,
                        p.p.a.qpn(),
                        p.b_retired,
                        p.b_posted,
                        p.p.b.qpn()
                    )
                },
                |e| {
                    e.poll(q, Who::A)?;
                    e.poll(q, Who::B)?;
                    let p = &e.pairs[q];
                    Ok(p.a_retired >= p.a_posted && p.b_retired >= p.b_posted)
                },
            )?;
        }
        self.rep.completed_ok = self.pairs.iter().map(|p| p.a_retired + p.b_retired).sum();
        Ok(())
    }
}
