//! The one perftest engine: every `bareverbs perf` test (`write-lat` …
//! `read-bw`) on every backend runs this loop. A backend is a
//! [`PerfDevice`]: it creates and connects the QP pairs of a run and their
//! registered buffers, and gives the engine each side's data path
//! ([`SideOps`]: post a list, post a receive, poll) and the clock
//! ([`Timer`]). The engine posts (TX depth `-t`, post list `-l`, CQ
//! moderation `-Q`, inline, `-q` QP pairs, `-n` iterations or `-D`
//! seconds), polls, stamps posts and completions, checks every payload
//! byte that arrives and builds the [`PerfRunReport`](crate::perf::report::PerfRunReport).
//!
//! - `write-lat`: ping-pong. A WRITEs into B's buffer, the engine spins on
//!   the last byte of B's buffer changing, then B WRITEs back into A's
//!   buffer and the engine spins on A's; a sample is the round trip / 2.
//! - `send-lat`: the same ping-pong with SEND/RECV, detected by polling
//!   the receiver's CQ.
//! - `read-lat`, `atomic-lat` (fetch-and-add): one operation outstanding,
//!   a sample is the whole operation (post → completion polled).
//! - `write-bw`, `send-bw`, `read-bw`: up to the TX depth of WRs
//!   outstanding on each QP pair, `post_list` WRs per doorbell, one
//!   signaled WR every `cq_mod`.
//!
//! Every message carries its iteration number (8 bytes at each end, a fixed
//! pattern between; messages under 16 bytes are one byte value per
//! iteration), and every byte that arrives is compared in place with what
//! was sent ([`PerfRunReport::mismatches`](crate::perf::report::PerfRunReport::mismatches) counts the bytes that differ,
//! and `size` bytes per message that never arrived); no copy of a message
//! is kept. Buffers are registered once per run: at most [`AREA_BYTES`] of
//! message slots per area, so messages larger than that share one slot
//! (perftest's cycle buffer does the same); a check then accepts the tag
//! of any iteration that used the slot since, and still every body byte.
//! Each busy-wait has a time limit and fails with an error naming what
//! never completed.
//!
//! | file | owns |
//! | --- | --- |
//! | `consts` | the run's fixed sizes and limits |
//! | `errors` | the typed refusals [`QpRejected`], [`TooMuchMemory`] |
//! | `timer` | the clock of a run ([`Timer`], [`WallTimer`]) |
//! | `side` | one side's data path ([`SideOps`]) |
//! | `events` | sleeping on completion events (`-e`, [`EventWait`]) |
//! | `cpu` | the CPU time of a run against its wall-clock time |
//! | `pair` | a connected QP pair and its message slots ([`Slot`], [`Areas`], [`PairAreas`], [`Pair`]) |
//! | `role` | which sides a run drives ([`Role`]: loopback, or perftest's client or server) and the peer's side ([`RemoteSide`]) |
//! | `plan` | what a run decides before anything is created ([`Plan`]) and its memory check |
//! | `device` | the backend trait [`PerfDevice`] |
//! | `as_backend` | every [`PerfDevice`] as a [`PerfBackend`](super::backend::PerfBackend), and [`run_on`] |
//! | `runner/` | the engine's run state and loops: setup, posting, completions, latency and bandwidth loops, timeouts and loss, the report |
//! | `payload` | the iteration stamps in each message and the in-place payload checks |
//! | `two_hosts` | a run against a peer host ([`run_half`]) over the out-of-band link ([`PeerLink`]) |
//! | `test_name` | the CLI name of a test ([`test_name`]) |

mod as_backend;
mod consts;
mod cpu;
mod device;
mod errors;
mod events;
mod pair;
mod payload;
mod plan;
mod role;
mod runner;
mod side;
mod test_name;
mod timer;
mod two_hosts;

pub use as_backend::run_on;
pub use consts::{AREA_BYTES, DEFAULT_TIMEOUT_NS, GRH_BYTES, QKEY, RQ_WQES, SIM_INFLIGHT_BYTES};
pub use device::{KeyExchange, PerfDevice};
pub use errors::{QpRejected, TooMuchMemory};
pub use events::EventWait;
pub use pair::{Areas, Pair, PairAreas, Slot};
pub use plan::Plan;
pub use role::{RemoteSide, Role};
pub use side::SideOps;
pub use test_name::test_name;
pub use timer::{Timer, WallTimer};
pub use two_hosts::{run_half, PeerLink};
