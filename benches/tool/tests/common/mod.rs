//! What the tests that run the `bareverbs` binary against a peer share:
//! free ports, starting the binary, waiting for it with a limit.
// Each test binary uses a part of this module.
#![allow(dead_code)]

use std::net::{TcpListener, UdpSocket};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A TCP port on loopback nobody holds right now.
pub fn free_tcp() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// `N` different UDP ports on loopback nobody holds right now (all held
/// at once while they are chosen, so no two are the same).
pub fn free_udp<const N: usize>() -> [u16; N] {
    let socks: Vec<UdpSocket> = (0..N)
        .map(|_| UdpSocket::bind("127.0.0.1:0").unwrap())
        .collect();
    std::array::from_fn(|i| socks[i].local_addr().unwrap().port())
}

/// Starts the `bareverbs` binary with `args`, its output captured.
pub fn spawn(args: &[String]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_bareverbs"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run bareverbs")
}

/// Waits for `c` at most `limit` (then kills it and fails, naming
/// `what` and showing what it printed); its output.
pub fn wait(mut c: Child, what: &str, limit: Duration) -> Output {
    let t = Instant::now();
    while c.try_wait().unwrap().is_none() {
        if t.elapsed() > limit {
            let _ = c.kill();
            let o = c.wait_with_output().unwrap();
            panic!(
                "{what}: still running after {limit:?}; stdout: {} stderr: {}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    c.wait_with_output().unwrap()
}
