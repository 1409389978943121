//! perftest's server/client mode: a host runs one side of each QP pair
//! and a peer host the other, the two meeting over TCP (perftest's
//! sockets protocol, [`crate::perftest::sockets`]).
//!
//! Which mode a command line means ([`role_of`]) follows perftest: a
//! `HOST` makes this host the client; without one, a device that can
//! reach another host (`vfio:BDF`, or `fw-sim --wire`) is a server waiting
//! on the TCP port (`-p`, 18515), and a device that cannot (`sim`,
//! `model`, `fw-sim` without a wire) runs both sides itself, as
//! `--loopback` asks anywhere. The run itself, from connecting to its
//! output, is [`crate::perf::run`]'s (`two_hosts`).
//!
//! | file | owns |
//! | --- | --- |
//! | `mod.rs` | the mode of a command line ([`role_of`]) and what a two-host run refuses ([`refusal`]) |
//! | `tcp_peer` | the [`PeerLink`](crate::perf::engine::PeerLink) over perftest's TCP exchange |
//! | `verdict` | whether a server's run can be trusted ([`server_verdict`]) |

mod tcp_peer;
mod verdict;

pub use tcp_peer::{Script, TcpPeer};
pub use verdict::server_verdict;

use super::engine::Role;
use super::flags::{Conn, PerfArgs};
use super::run::PerfRunConfig;

/// The role of this host for the command line `args`.
pub fn role_of(args: &PerfArgs) -> Role {
    if args.loopback {
        Role::Loopback
    } else if args.host.is_some() {
        Role::Client
    } else if args.device.starts_with("vfio:") || (args.device == "fw-sim" && args.wire.is_some()) {
        Role::Server
    } else {
        Role::Loopback
    }
}

/// Why `args` / `cfgs` cannot run as a two-host run, if they cannot.
pub fn refusal(args: &PerfArgs, cfgs: &[PerfRunConfig]) -> Option<String> {
    if cfgs.len() != 1 {
        return Some(
            "-a in server/client mode is not implemented: perftest runs every size over one \
             set of QPs and buffers sized for the largest, bareverbs sizes them per run; give \
             one size with -s"
                .into(),
        );
    }
    if args.conn != Conn::Rc {
        let c = if args.conn == Conn::Uc { "UC" } else { "UD" };
        return Some(format!(
            "server/client runs are RC only for now (-c {c}): an unreliable transport's \
             losses are counted by the receiver, which this mode does not report back"
        ));
    }
    if args.duration.is_some() {
        return Some(
            "-D in server/client mode is not implemented: the server cannot know how many \
             messages to expect; give -n"
                .into(),
        );
    }
    if args.wire.is_some() && args.device != "fw-sim" {
        return Some(format!(
            "--wire joins simulated ports: it needs --device fw-sim, not {}",
            args.device
        ));
    }
    None
}
