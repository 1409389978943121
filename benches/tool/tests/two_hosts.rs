//! perftest's server/client mode without hardware: two simulated ConnectX
//! joined by the simulator's UDP wire (`--device fw-sim --wire`), the
//! out-of-band exchange over TCP on loopback. Two processes of the
//! binary, and a server and a client thread in one process; every byte
//! verified and nothing lost.

mod common;

use common::{free_tcp, free_udp, spawn, wait};
use serde_json::Value;
use std::process::Child;
use std::time::Duration;

/// A TCP port and two UDP ports nobody holds right now.
fn free_ports() -> (u16, u16, u16) {
    let [a, b] = free_udp();
    (free_tcp(), a, b)
}

/// Waits for `c` (at most `limit`), then its exit status and JSON.
fn finish(c: Child, what: &str, limit: Duration) -> Value {
    let o = wait(c, what, limit);
    assert!(
        o.status.success(),
        "{what}: {}\n{}",
        String::from_utf8_lossy(&o.stderr),
        String::from_utf8_lossy(&o.stdout)
    );
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "{what}: not JSON ({e}): {}",
            String::from_utf8_lossy(&o.stdout)
        )
    })
}

fn args(test: &str, wire: u16, tcp: u16, extra: &[&str], host: Option<&str>) -> Vec<String> {
    let mut v: Vec<String> = [
        "perf",
        test,
        "--device",
        "fw-sim",
        "--wire",
        &format!("127.0.0.1:{wire}"),
        "-p",
        &tcp.to_string(),
        "--json",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    v.extend(extra.iter().map(|s| s.to_string()));
    v.extend(host.map(|h| h.to_string()));
    v
}

/// One run of `test` between a server and a client process; their JSON.
fn two_processes(test: &str, extra: &[&str]) -> (Value, Value) {
    let (tcp, wa, wb) = free_ports();
    let server = spawn(&args(test, wa, tcp, extra, None));
    let client = spawn(&args(test, wb, tcp, extra, Some("127.0.0.1")));
    let limit = Duration::from_secs(60);
    let c = finish(client, "client", limit);
    let s = finish(server, "server", limit);
    (s, c)
}

fn result(v: &Value) -> &Value {
    assert_eq!(v["verdict"], "ok", "{v}");
    &v["results"][0]
}

/// Every WR the client posted completed, nothing failed, every byte
/// arrived as sent, on both sides; each side names the other.
fn check_pair(s: &Value, c: &Value, iters: u64) {
    let (rs, rc) = (result(s), result(c));
    assert_eq!(rc["posted"], iters, "{rc}");
    assert_eq!(rc["completed_ok"], iters, "{rc}");
    for r in [rs, rc] {
        assert_eq!(r["completed_err"], 0, "{r}");
        assert_eq!(r["mismatches"], 0, "{r}");
        assert_eq!(r["peer"]["bareverbs"], true, "{r}");
    }
    assert_eq!(rs["peer"]["role"], "server");
    assert_eq!(rc["peer"]["role"], "client");
    // Each side's remote address line is the other's local one.
    assert_eq!(rs["local"]["qpn"], rc["remote"]["qpn"]);
    assert_eq!(rs["remote"]["qpn"], rc["local"]["qpn"]);
    assert_eq!(rs["local"]["gid"], rc["remote"]["gid"]);
    assert_eq!(rs["local"]["psn"], rc["remote"]["psn"]);
}

#[test]
fn write_bw_between_two_processes() {
    let (s, c) = two_processes("write-bw", &["-s", "4096", "-n", "5000"]);
    check_pair(&s, &c, 5000);
    // The server prints the client's report, as perftest's does.
    let rs = result(&s);
    assert_eq!(rs["peer"]["bw_iters"], 5000);
    assert_eq!(rs["peer"]["bw_size"], 4096);
}

#[test]
fn send_bw_read_bw_and_latency_between_two_processes() {
    let (s, c) = two_processes("send-bw", &["-s", "4096", "-n", "2000"]);
    check_pair(&s, &c, 2000);
    let (s, c) = two_processes("read-bw", &["-s", "4096", "-n", "2000"]);
    check_pair(&s, &c, 2000);
    let (s, c) = two_processes("write-lat", &["-s", "64", "-n", "500"]);
    check_pair(&s, &c, 500);
    let (s, c) = two_processes("atomic-lat", &["-n", "300"]);
    check_pair(&s, &c, 300);
}

#[test]
fn event_mode_between_two_processes() {
    let (s, c) = two_processes("send-lat", &["-s", "256", "-n", "300", "-e"]);
    check_pair(&s, &c, 300);
    assert!(result(&c)["device_counters"]["cq_events"].as_f64().unwrap() > 0.0);
}

/// The same run with server and client as two threads of one process
/// (each thread brings up its own simulated device).
#[test]
fn server_and_client_threads_in_one_process() {
    use bareverbs_tool::perf::run::{run_outcome, PerfArgs, PerfTest};
    use clap::Parser;
    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        a: PerfArgs,
    }
    let parse = |v: Vec<String>| -> PerfArgs {
        let mut all = vec!["t".to_string()];
        all.extend(v.into_iter().skip(2));
        T::parse_from(all).a
    };
    let (tcp, wa, wb) = free_ports();
    let extra = ["-s", "4096", "-n", "3000"];
    let sa = parse(args("write-bw", wa, tcp, &extra, None));
    let ca = parse(args("write-bw", wb, tcp, &extra, Some("127.0.0.1")));
    let server = std::thread::spawn(move || run_outcome(PerfTest::WriteBw, &sa));
    let client = std::thread::spawn(move || run_outcome(PerfTest::WriteBw, &ca));
    let c = client.join().unwrap().unwrap();
    let s = server.join().unwrap().unwrap();
    assert_eq!(c.failure, None, "{}", c.output);
    assert_eq!(s.failure, None, "{}", s.output);
    let (s, c): (Value, Value) = (
        serde_json::from_str(&s.output).unwrap(),
        serde_json::from_str(&c.output).unwrap(),
    );
    check_pair(&s, &c, 3000);
}
