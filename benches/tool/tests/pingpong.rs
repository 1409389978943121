//! `bareverbs pingpong` (`ibv_rc_pingpong`) between two processes on
//! simulated ConnectX joined by the simulator's UDP wire, and against a
//! fake `ibv_rc_pingpong` written from libibverbs'
//! `examples/rc_pingpong.c` (`pp_client_exch_dest`,
//! `pp_server_exch_dest`: a 52-byte `"%04x:%06x:%06x:%s"` message with a
//! 32-hex-digit GID and its NUL; the client ends with `"done"` and its
//! NUL) — the exchange only: the fake owns no device.

mod common;

use common::{free_tcp, free_udp, spawn, wait};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

fn pingpong_args(tcp: u16, wire: u16, extra: &[&str], host: Option<&str>) -> Vec<String> {
    let mut v: Vec<String> = [
        "pingpong",
        "-d",
        "fw-sim",
        "--wire",
        &format!("127.0.0.1:{wire}"),
        "-p",
        &tcp.to_string(),
        "-g",
        "3",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    v.extend(extra.iter().map(|s| s.to_string()));
    v.extend(host.map(str::to_string));
    v
}

/// A server and a client process; their outputs (server first).
fn two_processes(extra: &[&str]) -> (Output, Output) {
    let tcp = free_tcp();
    let [wa, wb] = free_udp();
    let server = spawn(&pingpong_args(tcp, wa, extra, None));
    let client = spawn(&pingpong_args(tcp, wb, extra, Some("127.0.0.1")));
    let limit = Duration::from_secs(60);
    let c = wait(client, "client", limit);
    let s = wait(server, "server", limit);
    (s, c)
}

fn ok_json(o: &Output, what: &str) -> Value {
    assert!(
        o.status.success(),
        "{what}: {}\n{}",
        String::from_utf8_lossy(&o.stderr),
        String::from_utf8_lossy(&o.stdout)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn two_processes_exchange_every_message_checked() {
    let (s, c) = two_processes(&["-n", "300", "-s", "5000", "-c", "--json"]);
    let (s, c) = (ok_json(&s, "server"), ok_json(&c, "client"));
    bareverbs_tool::envelope::assert_documented("pingpong", &s);
    bareverbs_tool::envelope::assert_documented("pingpong", &c);
    for (v, role) in [(&s, "server"), (&c, "client")] {
        assert_eq!(v["role"], role, "{v}");
        assert_eq!(v["iters"], 300);
        // rc_pingpong: bytes = size * iters * 2.
        assert_eq!(v["bytes"], 5000 * 300 * 2);
        assert_eq!(v["posted"], 300, "{v}");
        assert_eq!(v["completed_ok"], 300, "{v}");
        assert_eq!(v["completed_err"], 0, "{v}");
        assert_eq!(v["mismatches"], 0, "{v}");
        assert_eq!(v["checked"], true);
        assert!(v["seconds"].as_f64().unwrap() > 0.0, "{v}");
    }
    // Each side's remote address is the other's local one.
    assert_eq!(s["local"], c["remote"]);
    assert_eq!(s["remote"], c["local"]);
    assert_eq!(s["local"]["lid"], 0, "RoCE: no LID");
}

#[test]
fn the_text_is_rc_pingpongs_and_events_work() {
    let (s, c) = two_processes(&["-n", "100", "-e"]);
    for (o, what) in [(&s, "server"), (&c, "client")] {
        assert!(
            o.status.success(),
            "{what}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let text = String::from_utf8_lossy(&o.stdout);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        let addr = |l: &str, label: &str| {
            let rest = l.strip_prefix(label).unwrap_or_else(|| panic!("{l:?}"));
            // "LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s"
            let f: Vec<&str> = rest.split(", ").collect();
            assert_eq!(f.len(), 4, "{l}");
            assert!(f[0].starts_with("LID 0x") && f[0].len() == 10, "{l}");
            assert!(f[1].starts_with("QPN 0x") && f[1].len() == 12, "{l}");
            assert!(f[2].starts_with("PSN 0x") && f[2].len() == 12, "{l}");
            let gid: std::net::Ipv6Addr = f[3].strip_prefix("GID ").unwrap().parse().unwrap();
            assert_ne!(gid, std::net::Ipv6Addr::UNSPECIFIED, "{l}");
        };
        addr(lines[0], "  local address:  ");
        addr(lines[1], "  remote address: ");
        // "%lld bytes in %.2f seconds = %.2f Mbit/sec"
        assert!(lines[2].starts_with("819200 bytes in "), "{}", lines[2]);
        assert!(lines[2].ends_with(" Mbit/sec"), "{}", lines[2]);
        // "%d iters in %.2f seconds = %.2f usec/iter"
        assert!(lines[3].starts_with("100 iters in "), "{}", lines[3]);
        assert!(lines[3].ends_with(" usec/iter"), "{}", lines[3]);
    }
}

/// The 52-byte message: `"%04x:%06x:%06x:"`, 32 hex digits, NUL.
fn is_rc_pingpong_message(m: &[u8]) -> bool {
    let hex = |r: std::ops::Range<usize>| {
        m[r].iter()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    };
    m.len() == 52
        && hex(0..4)
        && m[4] == b':'
        && hex(5..11)
        && m[11] == b':'
        && hex(12..18)
        && m[18] == b':'
        && hex(19..51)
        && m[51] == 0
}

/// A fake `ibv_rc_pingpong` server: reads the client's message, answers
/// with `reply`, and reads what follows (until the client closes).
fn fake_server(l: TcpListener, reply: [u8; 52]) -> std::thread::JoinHandle<(Vec<u8>, Vec<u8>)> {
    std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut m = [0u8; 52];
        s.read_exact(&mut m).unwrap();
        s.write_all(&reply).unwrap();
        let mut rest = Vec::new();
        let _ = s.read_to_end(&mut rest);
        (m.to_vec(), rest)
    })
}

fn message(text: &str) -> [u8; 52] {
    let mut m = [0u8; 52];
    m[..text.len()].copy_from_slice(text.as_bytes());
    m
}

#[test]
fn our_client_speaks_rc_pingpongs_exchange() {
    // A reply naming a QP nobody holds: the exchange completes, the
    // first SEND's retries run out, the client fails cleanly.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let tcp = l.local_addr().unwrap().port();
    let fake = fake_server(
        l,
        message("0000:000123:000456:fd6276770000000000000000000000ff"),
    );
    let c = spawn(&pingpong_args(
        tcp,
        free_udp::<1>()[0],
        &["-n", "5"],
        Some("127.0.0.1"),
    ));
    let o = wait(c, "client", Duration::from_secs(60));
    let (m, rest) = fake.join().unwrap();
    assert!(
        is_rc_pingpong_message(&m),
        "{:?}",
        String::from_utf8_lossy(&m)
    );
    assert_eq!(&m[..4], b"0000", "RoCE: LID 0");
    assert_eq!(rest, b"done\0", "then \"done\" and its NUL, then close");
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("panicked"), "{err}");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("  remote address: LID 0x0000, QPN 0x000123, PSN 0x000456, GID fd62:7677::ff"),
        "{out}"
    );
}

#[test]
fn malformed_messages_are_refused_without_a_panic() {
    // To our client.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let tcp = l.local_addr().unwrap().port();
    let fake = fake_server(l, message("0000:zz0123:000456:fd627677"));
    let o = wait(
        spawn(&pingpong_args(
            tcp,
            free_udp::<1>()[0],
            &["-n", "5"],
            Some("127.0.0.1"),
        )),
        "client",
        Duration::from_secs(60),
    );
    let _ = fake.join();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("not hex") && !err.contains("panicked"),
        "{err}"
    );
    // To our server: a message one byte short, then the connection closes.
    let tcp = free_tcp();
    let s = spawn(&pingpong_args(tcp, free_udp::<1>()[0], &["-n", "5"], None));
    let t = Instant::now();
    let mut sock = loop {
        match TcpStream::connect(("127.0.0.1", tcp)) {
            Ok(s) => break s,
            Err(_) if t.elapsed() < Duration::from_secs(30) => {
                std::thread::sleep(Duration::from_millis(50))
            }
            Err(e) => panic!("{e}"),
        }
    };
    sock.write_all(&message("0000:000123:000456:fd627677")[..51])
        .unwrap();
    drop(sock);
    let o = wait(s, "server", Duration::from_secs(60));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn what_pingpong_cannot_do_is_a_usage_error() {
    for (extra, says) in [
        (&["-i", "2"][..], "port 1 only"),
        (&["-l", "3"][..], "service level 0"),
        (&["-r", "0"][..], "-r 0"),
    ] {
        let mut a = pingpong_args(free_tcp(), free_udp::<1>()[0], extra, Some("127.0.0.1"));
        a.push("--json".into());
        let o = wait(spawn(&a), "pingpong", Duration::from_secs(30));
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {err}");
        assert!(err.contains(says), "{extra:?}: {err}");
    }
    let o = Command::new(env!("CARGO_BIN_EXE_bareverbs"))
        .args(["pingpong", "-d", "fw-sim", "127.0.0.1"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--wire"));
}
