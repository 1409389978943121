//! `bareverbs perf write-bw` against a fake perftest peer: this file
//! speaks perftest 6.x's out-of-band TCP protocol itself, byte for byte,
//! written from perftest's C sources (github linux-rdma/perftest, 6.29:
//! `src/perftest_communication.[ch]`, `src/perftest_parameters.[ch]`,
//! `src/perftest_resources.[ch]`, `src/write_bw.c`) and NOT from
//! bareverbs' own implementation (`src/perftest/sockets`, which this
//! file neither imports nor copies). Every format below cites the C
//! function it reproduces.
//!
//! What is verified here and only here: that the bytes our binary sends
//! and accepts match perftest's formats as read from its C source (a
//! protocol mistake made the same way on both sides of
//! `tests/two_hosts.rs` is invisible there). What is NOT verified: the
//! behaviour of a running stock `ib_write_bw` binary (none runs here), nor
//! a perftest built without `HAVE_MLX5DV` (its negotiation block is 312
//! bytes, not 320), nor the non-GID key form (InfiniBand without `-x`).
//!
//! The fake owns a simulated ConnectX on the simulator's UDP wire (as
//! `sim/tests/wire.rs` brings one up), so the data plane is real: the fake
//! publishes its QP, PSN, rkey, address and GID in perftest's key format,
//! and in the success cases RDMA WRITEs really cross between it and our
//! process.
//!
//! Cases: our client against a fake `ib_write_bw` server (and against
//! one announcing a 64 KiB page), a fake `ib_write_bw` client against our
//! server, a peer announcing 5.60, a negotiation block that disagrees,
//! malformed key messages, and the key's `out_reads` against the peer's
//! `max_qp_rd_atom` (for WRITE, perftest's 1).

mod common;

use bareverbs::cmd::ops::{IbMtu, RoceAddress, RoceVersion};
use bareverbs::cqe::{WcStatus, WorkCompletion};
use bareverbs::device::DeviceConfig;
use bareverbs::sizing::QpType;
use bareverbs::sq::SendOp;
use bareverbs::verbs::*;
use bareverbs_sim::fw::{bring_up_wired, FwConfig, SimUar};
use bareverbs_sim::{Fabric, WireSocket};
use common::{free_tcp, free_udp, spawn, wait};
use serde_json::Value;
use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener, TcpStream};
use std::process::{Child, Output};
use std::time::{Duration, Instant};

// ---------------------------------------------------------------------
// perftest's constants (perftest 6.29).
// ---------------------------------------------------------------------

/// `char version[MAX_VERSION]`, `MAX_VERSION 16` (perftest_parameters.h);
/// `exchange_versions` (perftest_communication.c) exchanges
/// `sizeof(user_param->rem_version)` = 16 bytes.
const VERSION_BYTES: usize = 16;
/// `AC_INIT([perftest],[6.29],...)` (configure.ac): the `VERSION` that
/// `write_bw.c`'s `main` copies with `strncpy` (NUL-padded).
const PERFTEST_VERSION: &str = "6.29";
/// `KEY_MSG_SIZE_GID (108)` (perftest_communication.h): the GID form of
/// the key message, 107 characters and the NUL, which
/// `ethernet_write_keys` writes (`sizeof msg`).
const KEY_MSG_SIZE_GID: usize = 108;
/// `KEY_MSG_SIZE (59)`: the form without a GID.
const KEY_MSG_SIZE: usize = 59;
/// `sizeof(struct perftest_parameters_negotiate)` (perftest_parameters.h)
/// on x86-64 with `HAVE_MLX5DV`: 7 ints (28 B, padded to 32), `size` at
/// 32, `iters` at 40, 8 ints 48..80, `struct ibv_device_attr` (232 B)
/// at 80, `uint64_t mlx5dv_comp_mask` at 312. (Checked with gcc's
/// `offsetof` against `infiniband/verbs.h` while writing this file.)
const NEG_BYTES: usize = 320;
/// Offset of `struct ibv_device_attr attr` in the block.
const NEG_ATTR: usize = 80;
/// `ibv_device_attr.vendor_id` (offset 96 in the attributes).
const NEG_VENDOR_ID: usize = NEG_ATTR + 96;
/// `ibv_device_attr.max_qp_rd_atom` (offset 144 in the attributes): the
/// one attribute `compare_ibv_device` (perftest_parameters.c) reads.
const NEG_MAX_QP_RD_ATOM: usize = NEG_ATTR + 144;
/// `mlx5dv_comp_mask` (only with `HAVE_MLX5DV`).
const NEG_MLX5DV_MASK: usize = 312;
/// `MLNX_VENDOR_ID`.
const MELLANOX: u32 = 0x02c9;
/// `negotiate_params` returns at once when `atof(rem_version) < 6.28`
/// (a version number that happens to look like 2π).
#[allow(clippy::approx_constant)]
const NEGOTIATE_SINCE: f64 = 6.28;
/// `DEF_DURATION (5)` (perftest_parameters.h), sent in iteration runs too.
const DEF_DURATION: u32 = 5;
/// `DEF_QP_TIME (14)`, `MIN_RNR_TIMER (12)` (perftest_parameters.h).
const DEF_QP_TIME: u8 = 14;
const MIN_RNR_TIMER: u8 = 12;
/// This fake's page size and cache line: `init_perftest_params`
/// (`sysconf(_SC_PAGESIZE)`, `get_cache_line_size()`) on x86-64.
const OUR_CYCLE_BUFFER: i32 = 4096;
const OUR_CACHE_LINE: i32 = 64;
/// The MTU this fake announces in `check_mtu`: `enum ibv_mtu`
/// `IBV_MTU_1024` = 3.
const OUR_MTU_CODE: u8 = 3;

/// The GID index the fake sends from (RoCE v2; as `sim/tests/wire.rs`).
const SGID: u16 = 3;
/// The longest anything here waits.
const LIMIT: Duration = Duration::from_secs(60);

// perftest's enums (perftest_parameters.h).
/// `RC (0)`.
const RC: u32 = 0;
/// `VerbType`: SEND 0, SEND_IMM 1, WRITE 2, WRITE_IMM 3, READ 4, ATOMIC 5.
const SEND: u32 = 0;
const WRITE: u32 = 2;
/// `TestType`: LAT 0, BW 1.
const BW: u32 = 1;
/// `enum ctx_report_fmt { GBS, MBS }`.
const MBS: u32 = 1;

type Qp<'a> = QueuePair<'a, SimUar, 64, 16>;
type Ctx =
    Context<bareverbs_sim::fw::SimBar, bareverbs_sim::fw::FakeClock, bareverbs_sim::fw::SharedDma>;

// ---------------------------------------------------------------------
// The stream: `ctx_xchg_data_ethernet` / `ctx_hand_shake`.
// ---------------------------------------------------------------------

/// The fake's end of the TCP connection. perftest's one rule
/// (`ctx_xchg_data_ethernet`, `ctx_hand_shake` in
/// perftest_communication.c): the side with a `servername` (the client)
/// writes then reads, the server reads then writes; every message has a
/// fixed size and is one `write()` / one `read()` of that size.
struct Oob<'f> {
    s: TcpStream,
    client: bool,
    /// Stepped while waiting for the peer (the fake's device keeps
    /// answering on the wire meanwhile).
    fabric: Option<&'f Fabric>,
    until: Instant,
}

impl<'f> Oob<'f> {
    fn new(s: TcpStream, client: bool) -> Oob<'f> {
        s.set_nodelay(true).unwrap();
        s.set_nonblocking(true).unwrap();
        Oob {
            s,
            client,
            fabric: None,
            until: Instant::now() + LIMIT,
        }
    }

    fn pump(&self) {
        match self.fabric {
            Some(f) => {
                if !f.step() {
                    std::thread::sleep(Duration::from_micros(20));
                }
            }
            None => std::thread::sleep(Duration::from_millis(1)),
        }
        assert!(Instant::now() < self.until, "fake perftest: timed out");
    }

    /// Exactly `n` bytes; `Err` if the peer closed first.
    fn read(&mut self, n: usize) -> Result<Vec<u8>, String> {
        let mut b = vec![0u8; n];
        let mut got = 0;
        while got < n {
            match self.s.read(&mut b[got..]) {
                Ok(0) => return Err(format!("peer closed after {got} of {n} bytes")),
                Ok(k) => got += k,
                Err(e) if e.kind() == ErrorKind::WouldBlock => self.pump(),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(format!("read: {e}")),
            }
        }
        Ok(b)
    }

    fn write(&mut self, b: &[u8]) {
        let mut sent = 0;
        while sent < b.len() {
            match self.s.write(&b[sent..]) {
                Ok(k) => sent += k,
                Err(e) if e.kind() == ErrorKind::WouldBlock => self.pump(),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => panic!("fake perftest: write: {e}"),
            }
        }
    }

    /// `ctx_xchg_data_ethernet`: `mine` out, as many bytes back, in the
    /// order of this side's role.
    fn xchg(&mut self, mine: &[u8]) -> Vec<u8> {
        self.xchg_n(mine, mine.len())
    }

    fn xchg_n(&mut self, mine: &[u8], n: usize) -> Vec<u8> {
        if self.client {
            self.write(mine);
            self.read(n).expect("fake perftest client: reading")
        } else {
            let theirs = self.read(n).expect("fake perftest server: reading");
            self.write(mine);
            theirs
        }
    }

    /// Waits for the peer to close the connection (what it does after
    /// refusing us); `Err` if it is still open at the deadline. Bytes it
    /// sends meanwhile are dropped.
    fn wait_closed(&mut self, within: Duration) -> Result<(), String> {
        let until = Instant::now() + within;
        let mut b = [0u8; 512];
        loop {
            match self.s.read(&mut b) {
                Ok(0) => return Ok(()),
                Ok(_) => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    if Instant::now() > until {
                        return Err("the peer kept the connection open".into());
                    }
                    std::thread::sleep(Duration::from_millis(2));
                }
                Err(e) if e.kind() == ErrorKind::ConnectionReset => return Ok(()),
                Err(e) => return Err(format!("read: {e}")),
            }
        }
    }
}

// ---------------------------------------------------------------------
// exchange_versions / check_version_compatibility.
// ---------------------------------------------------------------------

/// The 16 bytes perftest sends: `strncpy(user_param.version, VERSION,
/// sizeof(user_param.version))` (write_bw.c `main`) pads with NULs.
fn version_bytes(v: &str) -> [u8; VERSION_BYTES] {
    let mut b = [0u8; VERSION_BYTES];
    b[..v.len()].copy_from_slice(v.as_bytes());
    b
}

/// C's `atof` of a NUL-terminated string: leading blanks, sign, digits,
/// one '.', digits; the rest ignored; 0 without digits.
fn atof(b: &[u8]) -> f64 {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    let s = std::str::from_utf8(&b[..end]).unwrap_or("");
    let s = s.trim_start_matches([' ', '\t', '\n']);
    let mut n = 0;
    let mut dot = false;
    for (i, c) in s.char_indices() {
        if c.is_ascii_digit() || (c == '.' && !dot) || (i == 0 && (c == '+' || c == '-')) {
            dot |= c == '.';
            n = i + 1;
        } else {
            break;
        }
    }
    s[..n].parse().unwrap_or(0.0)
}

/// What a perftest peer makes of the peer's 16 version bytes: `atof`
/// (`check_version_compatibility` refuses < 5.70; `negotiate_params`
/// needs >= 6.28 to take place at all, which this test requires of us).
fn check_their_version(b: &[u8]) {
    assert_eq!(b.len(), VERSION_BYTES);
    assert!(
        b.contains(&0),
        "version bytes not NUL-terminated (perftest's atof would read past them): {b:?}"
    );
    let v = atof(b);
    assert!(v >= NEGOTIATE_SINCE, "our side announces {v} (bytes {b:?})");
}

// ---------------------------------------------------------------------
// check_sys_data / check_mtu.
// ---------------------------------------------------------------------

/// `check_sys_data`: two exchanges of `sizeof(int)` = 4 bytes,
/// `hton_int(cycle_buffer)` then `hton_int(cache_line_size)`; each side
/// takes the larger. `cycle` is the fake's page size. Returns (peer's
/// cycle buffer, peer's cache line).
fn sys_data(o: &mut Oob, cycle: i32) -> (i32, i32) {
    let cb = o.xchg(&cycle.to_be_bytes());
    let cl = o.xchg(&OUR_CACHE_LINE.to_be_bytes());
    let cb = i32::from_be_bytes(cb.try_into().unwrap());
    let cl = i32::from_be_bytes(cl.try_into().unwrap());
    // A page size and a cache line: positive powers of two.
    assert!(cb > 0 && (cb as u32).is_power_of_two(), "cycle buffer {cb}");
    assert!(cl > 0 && (cl as u32).is_power_of_two(), "cache line {cl}");
    (cb, cl)
}

/// `check_mtu` (peer >= 5.31): `sprintf(cur, "%d", curr_mtu)` of the
/// `enum ibv_mtu` code, `sizeof(char[2])` = 2 bytes exchanged; the
/// smaller valid one (`valid_mtu_size`: 1..=5) is kept. Returns the
/// agreed code.
fn mtu(o: &mut Oob) -> u8 {
    let theirs = o.xchg(&[b'0' + OUR_MTU_CODE, 0]);
    assert_eq!(theirs.len(), 2);
    assert!(
        (b'1'..=b'5').contains(&theirs[0]) && theirs[1] == 0,
        "MTU bytes {theirs:?}: perftest sends one decimal digit (enum ibv_mtu) and its NUL"
    );
    let rem = theirs[0] - b'0';
    rem.min(OUR_MTU_CODE)
}

// ---------------------------------------------------------------------
// negotiate_params.
// ---------------------------------------------------------------------

/// The fields of `struct perftest_parameters_negotiate` that
/// `negotiate_params` (perftest_communication.c) fills, in its order,
/// host values (the block holds them `hton_int` / `hton_64`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Neg {
    test_method: u32,
    connection_type: u32,
    verb: u32,
    tst: u32,
    atomic_type: u32,
    test_type: u32,
    report_fmt: u32,
    size: u64,
    iters: u64,
    aes_xts: u32,
    num_of_qps: u32,
    duration: u32,
    use_rdma_cm: u32,
    use_write_with_imm: u32,
    no_enhanced_reorder: u32,
    sig_offload: u32,
    data_validation: u32,
}

impl Neg {
    /// What `ib_write_bw -s size -n iters` (defaults otherwise) fills in:
    /// `init_perftest_params` (RUN_REGULAR, RC, ITERATIONS, MBS,
    /// DEF_DURATION, DEF_NUM_QPS, everything else OFF; `atomicType`
    /// stays 0 from `main`'s memset for a non-atomic test).
    fn write_bw(size: u64, iters: u64) -> Neg {
        Neg {
            test_method: 0,
            connection_type: RC,
            verb: WRITE,
            tst: BW,
            atomic_type: 0,
            test_type: 0,
            report_fmt: MBS,
            size,
            iters,
            aes_xts: 0,
            num_of_qps: 1,
            duration: DEF_DURATION,
            use_rdma_cm: 0,
            use_write_with_imm: 0,
            no_enhanced_reorder: 0,
            sig_offload: 0,
            data_validation: 0,
        }
    }

    /// The block: the ints `hton_int`, `size`/`iters` `hton_64`, padding
    /// 0, `attr` as `ibv_query_device` left it (host order: here only
    /// `fw_ver`, `vendor_id` and `max_qp_rd_atom`), `mlx5dv_comp_mask`
    /// `hton_64` (0: no OOO_RECV_WRS).
    fn encode(&self) -> [u8; NEG_BYTES] {
        self.encode_rd(16)
    }

    /// The block with `max_qp_rd_atom` = `rd` in the attributes.
    fn encode_rd(&self, rd: i32) -> [u8; NEG_BYTES] {
        let mut b = [0u8; NEG_BYTES];
        let head = [
            self.test_method,
            self.connection_type,
            self.verb,
            self.tst,
            self.atomic_type,
            self.test_type,
            self.report_fmt,
        ];
        for (i, v) in head.iter().enumerate() {
            b[4 * i..4 * i + 4].copy_from_slice(&v.to_be_bytes());
        }
        b[32..40].copy_from_slice(&self.size.to_be_bytes());
        b[40..48].copy_from_slice(&self.iters.to_be_bytes());
        let tail = [
            self.aes_xts,
            self.num_of_qps,
            self.duration,
            self.use_rdma_cm,
            self.use_write_with_imm,
            self.no_enhanced_reorder,
            self.sig_offload,
            self.data_validation,
        ];
        for (i, v) in tail.iter().enumerate() {
            b[48 + 4 * i..52 + 4 * i].copy_from_slice(&v.to_be_bytes());
        }
        let fw = b"16.35.4030 (fake perftest)";
        b[NEG_ATTR..NEG_ATTR + fw.len()].copy_from_slice(fw);
        b[NEG_VENDOR_ID..NEG_VENDOR_ID + 4].copy_from_slice(&MELLANOX.to_le_bytes());
        b[NEG_MAX_QP_RD_ATOM..NEG_MAX_QP_RD_ATOM + 4].copy_from_slice(&rd.to_le_bytes());
        b[NEG_MLX5DV_MASK..NEG_MLX5DV_MASK + 8].copy_from_slice(&0u64.to_be_bytes());
        b
    }

    /// The compared fields of a block as perftest reads them (`compare`
    /// in perftest_parameters.c: `ntoh_int` / `ntoh_64`), and the
    /// attributes' `max_qp_rd_atom` (read raw by `compare_ibv_device`).
    fn decode(b: &[u8]) -> (Neg, i32) {
        assert_eq!(b.len(), NEG_BYTES);
        let be32 = |o: usize| u32::from_be_bytes(b[o..o + 4].try_into().unwrap());
        let be64 = |o: usize| u64::from_be_bytes(b[o..o + 8].try_into().unwrap());
        let n = Neg {
            test_method: be32(0),
            connection_type: be32(4),
            verb: be32(8),
            tst: be32(12),
            atomic_type: be32(16),
            test_type: be32(20),
            report_fmt: be32(24),
            size: be64(32),
            iters: be64(40),
            aes_xts: be32(48),
            num_of_qps: be32(52),
            duration: be32(56),
            use_rdma_cm: be32(60),
            use_write_with_imm: be32(64),
            no_enhanced_reorder: be32(68),
            sig_offload: be32(72),
            data_validation: be32(76),
        };
        let rd = i32::from_le_bytes(
            b[NEG_MAX_QP_RD_ATOM..NEG_MAX_QP_RD_ATOM + 4]
                .try_into()
                .unwrap(),
        );
        (n, rd)
    }
}

/// `negotiate_params` with a peer >= 6.28: one exchange of the whole
/// block; our side's block must be exactly what `ib_write_bw` with the
/// same flags would send (else a stock perftest prints "<field>
/// mismatch" and exits). `ours` is what the fake sends.
fn negotiate(o: &mut Oob, ours: &Neg, expect: &Neg) {
    let theirs = o.xchg(&ours.encode());
    assert_eq!(theirs.len(), NEG_BYTES);
    // The padding after report_fmt.
    assert_eq!(&theirs[28..32], &[0; 4], "padding at 28..32");
    let (n, rd) = Neg::decode(&theirs);
    assert_eq!(&n, expect, "our negotiation block, as perftest decodes it");
    // A perftest READ requester would take its max_rd_atomic from this.
    assert!(
        rd >= 1,
        "max_qp_rd_atom {rd}: compare_ibv_device would lower out_reads to it"
    );
}

// ---------------------------------------------------------------------
// The key message: KEY_PRINT_FMT_GID, ethernet_write_keys /
// ethernet_read_keys.
// ---------------------------------------------------------------------

/// `struct pingpong_dest` as the key message carries it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Key {
    lid: u32,
    out_reads: u32,
    qpn: u32,
    psn: u32,
    rkey: u32,
    vaddr: u64,
    gid: [u8; 16],
    srqn: u32,
}

/// `sprintf(msg, KEY_PRINT_FMT_GID, lid, out_reads, qpn, psn, rkey,
/// vaddr, gid.raw[0..16], srqn)` with (perftest_communication.h)
/// `KEY_PRINT_FMT_GID "%04x:%04x:%06x:%06x:%08x:%016llx:%02x:...:%02x:%08x:"`
/// (16 `%02x` separated by ':'), then the NUL: `ethernet_write_keys`
/// writes `sizeof msg` = `KEY_MSG_SIZE_GID` = 108 bytes.
fn key_gid_bytes(k: &Key) -> Vec<u8> {
    let mut s = format!(
        "{:04x}:{:04x}:{:06x}:{:06x}:{:08x}:{:016x}:",
        k.lid, k.out_reads, k.qpn, k.psn, k.rkey, k.vaddr
    );
    let g: Vec<String> = k.gid.iter().map(|b| format!("{b:02x}")).collect();
    s.push_str(&g.join(":"));
    s.push_str(&format!(":{:08x}:", k.srqn));
    let mut b = s.into_bytes();
    b.push(0);
    b
}

/// `strtol(tmp, NULL, 16)` / `strtoul` / `strtoull` of a field: leading
/// blanks, an optional "0x", hex digits up to the first other character
/// (0 when there are none). perftest checks nothing else.
fn strtoul16(s: &[u8]) -> u64 {
    let mut i = 0;
    while i < s.len() && (s[i] == b' ' || s[i] == b'\t') {
        i += 1;
    }
    if s.len() >= i + 2 && s[i] == b'0' && (s[i + 1] | 0x20) == b'x' {
        i += 2;
    }
    let mut v: u64 = 0;
    while i < s.len() && s[i].is_ascii_hexdigit() {
        v = v.wrapping_mul(16) + (s[i] as char).to_digit(16).unwrap() as u64;
        i += 1;
    }
    v
}

/// `ethernet_read_keys`, GID form (`rem_dest->gid_index != -1`): reads
/// `KEY_MSG_SIZE_GID` bytes, then splits at each ':' with `strpbrk` and
/// converts each piece with `strtol(…, 16)`: LID, OUT_READS, QPN, PSN,
/// RKEY, VA, GID bytes 0..15; GID byte 15 is `strtoll` of everything
/// after its ':' (stopping at the next ':'); SRQN starts 4 bytes after
/// the ':' before GID byte 15 (`pstr += term - pstr + 4`). Then, beyond
/// perftest (which would accept anything its strtol makes a number of),
/// the message must be exactly what `sprintf(KEY_PRINT_FMT_GID, …)` of
/// those values gives: every field hex, of its width, every ':' in place,
/// the NUL last.
fn parse_key_gid(b: &[u8]) -> Key {
    assert_eq!(b.len(), KEY_MSG_SIZE_GID, "key message length");
    let text_end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    let t = &b[..text_end];
    let mut p = 0usize;
    let next = |p: &mut usize| -> u64 {
        let rest = &t[*p..];
        let term = rest
            .iter()
            .position(|&c| c == b':')
            .unwrap_or_else(|| panic!("no ':' after byte {p} of {:?}", String::from_utf8_lossy(t)));
        let v = strtoul16(&rest[..term]);
        *p += term + 1;
        v
    };
    let lid = next(&mut p) as u32;
    let out_reads = next(&mut p) as u32;
    let qpn = next(&mut p) as u32;
    let psn = next(&mut p) as u32;
    let rkey = next(&mut p) as u32;
    let vaddr = next(&mut p);
    let mut gid = [0u8; 16];
    let mut last_term = 0;
    for g in gid.iter_mut().take(15) {
        *g = next(&mut p) as u8;
        last_term = p - 1;
    }
    gid[15] = strtoul16(&t[p..]) as u8;
    let srqn_at = last_term + 4;
    let srqn = strtoul16(&t[srqn_at.min(t.len())..]) as u32;
    let k = Key {
        lid,
        out_reads,
        qpn,
        psn,
        rkey,
        vaddr,
        gid,
        srqn,
    };
    assert_eq!(
        String::from_utf8_lossy(b),
        String::from_utf8_lossy(&key_gid_bytes(&k)),
        "the key message is not sprintf(KEY_PRINT_FMT_GID) of the values perftest reads from it"
    );
    k
}

/// `ctx_hand_shake`: the key message out and the peer's in, in the order
/// of the role; the peer's must parse as perftest parses it.
fn hand_shake(o: &mut Oob, mine: &Key) -> Key {
    let theirs = o.xchg(&key_gid_bytes(mine));
    parse_key_gid(&theirs)
}

// ---------------------------------------------------------------------
// xchg_bw_reports.
// ---------------------------------------------------------------------

/// `struct bw_report_data`'s exchanged fields.
#[derive(Clone, Copy, Debug, PartialEq)]
struct BwRep {
    size: u64,
    iters: u64,
    bw_peak: f64,
    bw_avg: f64,
    msg_rate: f64,
}

/// `xchg_bw_reports` (perftest_communication.c) with a peer >= 5.33 and
/// no `--report-per-port`: five separate `ctx_xchg_data` calls of 8
/// bytes each, `hton_long(size)` (`sizeof(unsigned long)` = 8 on LP64),
/// `hton_long(iters)`, then `hton_double` (`bswap_double` on
/// little-endian: big-endian IEEE) of `bw_peak`, `bw_avg`, `msgRate_avg`.
fn bw_reports(o: &mut Oob, mine: &BwRep) -> BwRep {
    let u = |b: Vec<u8>| u64::from_be_bytes(b.try_into().unwrap());
    let size = u(o.xchg(&mine.size.to_be_bytes()));
    let iters = u(o.xchg(&mine.iters.to_be_bytes()));
    let bw_peak = f64::from_bits(u(o.xchg(&mine.bw_peak.to_bits().to_be_bytes())));
    let bw_avg = f64::from_bits(u(o.xchg(&mine.bw_avg.to_bits().to_be_bytes())));
    let msg_rate = f64::from_bits(u(o.xchg(&mine.msg_rate.to_bits().to_be_bytes())));
    BwRep {
        size,
        iters,
        bw_peak,
        bw_avg,
        msg_rate,
    }
}

// ---------------------------------------------------------------------
// The fake's device: a simulated ConnectX on the UDP wire.
// ---------------------------------------------------------------------

/// One wired simulated device (as `sim/tests/wire.rs` brings one up).
struct Side {
    fabric: Fabric,
    c: Ctx,
    gid: [u8; 16],
}

fn side(seed: u64) -> Side {
    let fabric = Fabric::new(seed);
    let sock = WireSocket::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0)).unwrap();
    let w = bring_up_wired(&fabric, sock, FwConfig::default(), DeviceConfig::default()).unwrap();
    let (d, gid, mac) = (w.dev, w.gid, w.mac);
    let c = Context::new(d);
    let e = RoceAddress {
        gid,
        mac,
        vlan: None,
        version: RoceVersion::V2,
    };
    // SAFETY: programs a GID entry before any QP exists that could use it.
    unsafe { c.with_device(|d| d.set_gid(SGID, &e)) }.unwrap();
    Side { fabric, c, gid }
}

/// perftest's `ctx_connect` for RC (`ctx_modify_qp_to_rtr` /
/// `ctx_modify_qp_to_rts`, perftest_resources.c): RTR with the peer's
/// QPN and PSN, `max_dest_rd_atomic = my_dest->out_reads`,
/// `min_rnr_timer = MIN_RNR_TIMER`; RTS with `sq_psn = my_dest->psn`,
/// `timeout = DEF_QP_TIME`, retry 7, RNR retry 7, `max_rd_atomic =
/// dest->out_reads` (the peer's). RoCE: the peer's GID (the kernel would
/// resolve its MAC; on the wire the MAC follows from the GID).
fn connect(qp: &mut Qp, me: &Key, peer: &Key, mtu_code: u8) {
    let rights = Access::LOCAL_WRITE | Access::REMOTE_WRITE | Access::REMOTE_READ;
    qp.to_init(&InitAttr::new(1, rights)).unwrap();
    let dmac = bareverbs_sim::wire_mac_of_gid(&peer.gid)
        .unwrap_or_else(|| panic!("the peer's GID {:02x?} names no wired port", peer.gid));
    let ah = AddressHandle::roce(1, peer.gid, dmac, SGID as u8);
    let mtu = IbMtu::from_code(mtu_code).unwrap();
    let mut rtr = RtrAttr::new(mtu, peer.qpn, peer.psn, ah);
    rtr.max_dest_rd_atomic = me.out_reads as u8;
    rtr.min_rnr_timer = MIN_RNR_TIMER;
    qp.to_rtr(&rtr).unwrap();
    let mut rts = RtsAttr::new(me.psn);
    rts.timeout = DEF_QP_TIME;
    rts.retry_cnt = 7;
    rts.rnr_retry = 7;
    rts.max_rd_atomic = peer.out_reads.min(16) as u8;
    qp.to_rts(&rts).unwrap();
}

/// `BUFF_SIZE(size, cycle_buffer)` (perftest_resources.h).
fn buff_size(size: u64, cycle: u64) -> u64 {
    size.max(cycle)
}

/// `INC(size, cache_line_size)` (perftest_resources.h).
fn inc(size: u64, line: u64) -> u64 {
    if size > line {
        size.div_ceil(line) * line
    } else {
        line
    }
}

/// A PSN as `set_up_connection` draws one: `lrand48() & 0xffffff`.
fn psn(salt: u64) -> u32 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    ((t ^ salt.wrapping_mul(0x9e37_79b9_7f4a_7c15)) & 0xff_ffff) as u32
}

// ---------------------------------------------------------------------
// Processes and ports.
// ---------------------------------------------------------------------

/// A TCP port and a UDP port nobody holds right now.
fn free_ports() -> (u16, u16) {
    (free_tcp(), free_udp::<1>()[0])
}

/// `bareverbs perf write-bw` on fw-sim wired at 127.0.0.1:`wire`, TCP
/// port `tcp`; a client of 127.0.0.1 when `client`.
fn spawn_ours(tcp: u16, wire: u16, extra: &[&str], client: bool) -> Child {
    let mut a: Vec<String> = [
        "perf",
        "write-bw",
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
    a.extend(extra.iter().map(|s| s.to_string()));
    if client {
        a.push("127.0.0.1".into());
    }
    spawn(&a)
}

/// Waits for `c` at most `LIMIT` (then kills it); its output.
fn finish(c: Child) -> Output {
    wait(c, "bareverbs", LIMIT)
}

fn text(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout: {}\nstderr: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The fake's server end: accepts one client on `l` (perftest's
/// `ethernet_server_connect`: `listen(sockfd, 1)`, one `accept`, the
/// listening socket closed) within `LIMIT`.
fn accept(l: TcpListener) -> TcpStream {
    l.set_nonblocking(true).unwrap();
    let t = Instant::now();
    loop {
        match l.accept() {
            Ok((s, _)) => return s,
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                assert!(t.elapsed() < LIMIT, "no client connected");
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => panic!("accept: {e}"),
        }
    }
}

/// The fake's client end (`ethernet_client_connect`; stock perftest
/// tries once, the fake retries while our server starts).
fn connect_tcp(port: u16) -> TcpStream {
    let t = Instant::now();
    loop {
        if let Ok(s) = TcpStream::connect(("127.0.0.1", port)) {
            return s;
        }
        assert!(t.elapsed() < LIMIT, "our server never listened");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs our binary (`client` or server) against `fake` (given its TCP
/// end): the fake's result and our process's output. A fake that panics
/// drops its socket, so our side sees the connection close and ends.
fn against<R: Send + 'static>(
    client: bool,
    extra: &[&str],
    fake: impl FnOnce(TcpStream) -> R + Send + 'static,
) -> (std::thread::Result<R>, Output) {
    let (tcp, wire) = free_ports();
    if client {
        // The fake listens first (on a port of its own: no race with
        // other tests for a port found free).
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let tcp = l.local_addr().unwrap().port();
        let h = std::thread::spawn(move || fake(accept(l)));
        let o = finish(spawn_ours(tcp, wire, extra, true));
        (h.join(), o)
    } else {
        let child = spawn_ours(tcp, wire, extra, false);
        let h = std::thread::spawn(move || fake(connect_tcp(tcp)));
        let o = finish(child);
        (h.join(), o)
    }
}

fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("our output is not JSON ({e}): {}", text(o)))
}

fn gid_of(v: &Value) -> [u8; 16] {
    let a = v.as_array().unwrap_or_else(|| panic!("gid {v}"));
    let mut g = [0u8; 16];
    for (i, b) in a.iter().enumerate() {
        g[i] = b.as_u64().unwrap() as u8;
    }
    g
}

/// Our JSON's address line `v` names key message `k`.
fn same_endpoint(v: &Value, k: &Key) {
    assert_eq!(v["qpn"], k.qpn, "{v}");
    assert_eq!(v["psn"], k.psn, "{v}");
    assert_eq!(v["rkey"], k.rkey, "{v}");
    assert_eq!(v["vaddr"], k.vaddr, "{v}");
    assert_eq!(v["lid"], k.lid, "{v}");
    assert_eq!(gid_of(&v["gid"]), k.gid, "{v}");
}

// ---------------------------------------------------------------------
// The script up to the key messages, shared by every case.
// ---------------------------------------------------------------------

/// Where the fake departs from a well-behaved `ib_write_bw` (the
/// well-behaved ones are [`fake_server`] and [`fake_client`]).
#[derive(Clone, Copy, Debug)]
enum Fault {
    /// Announce this version instead of 6.29.
    Version(&'static str),
    /// Send this negotiation block instead.
    Negotiate(Neg),
    /// Answer the first key message with these 108 bytes.
    Key(&'static [u8]),
    /// Answer the first key message with these bytes, then close.
    KeyThenClose(&'static [u8]),
}

/// What a faulty fake saw: our side's bytes up to the fault were all
/// perftest's, and after the fault our side closed the connection.
fn faulty_fake(s: TcpStream, client: bool, size: u64, iters: u64, f: Fault) {
    let mut o = Oob::new(s, client);
    let v = match f {
        Fault::Version(v) => v,
        _ => PERFTEST_VERSION,
    };
    let theirs = o.xchg(&version_bytes(v));
    check_their_version(&theirs);
    if let Fault::Version(_) = f {
        // perftest 5.60 would go on with check_sys_data; ours must not
        // answer it, it must close.
        o.wait_closed(LIMIT).expect("after refusing the version");
        return;
    }
    sys_data(&mut o, OUR_CYCLE_BUFFER);
    let agreed = mtu(&mut o);
    assert!(agreed >= 1);
    let expect = Neg::write_bw(size, iters);
    let ours = match f {
        Fault::Negotiate(n) => n,
        _ => expect,
    };
    negotiate(&mut o, &ours, &expect);
    if let Fault::Negotiate(_) = f {
        o.wait_closed(LIMIT).expect("after the mismatch");
        return;
    }
    let bad = match f {
        Fault::Key(b) | Fault::KeyThenClose(b) => b,
        _ => unreachable!(),
    };
    if client {
        o.write(bad);
        if let Fault::KeyThenClose(_) = f {
            return;
        }
        // Our server reads first: it answers nothing before the key.
        let r = o.read(KEY_MSG_SIZE_GID);
        if let Ok(k) = r {
            // It may have written its key before parsing ours: as perftest.
            parse_key_gid(&k);
        }
    } else {
        let theirs = o.read(KEY_MSG_SIZE_GID).expect("our client's key");
        parse_key_gid(&theirs);
        o.write(bad);
        if let Fault::KeyThenClose(_) = f {
            return;
        }
    }
    o.wait_closed(LIMIT).expect("after the malformed key");
}

/// Non-zero exit, a message containing every one of `want`, no panic.
fn refused(o: &Output, want: &[&str]) {
    let t = text(o);
    eprintln!("refused: {}", String::from_utf8_lossy(&o.stderr).trim());
    assert!(!o.status.success(), "our side succeeded: {t}");
    assert!(!t.contains("panicked"), "our side panicked: {t}");
    for w in want {
        assert!(t.contains(w), "{w:?} not in our output: {t}");
    }
}

// ---------------------------------------------------------------------
// 1. Our client against a fake ib_write_bw server.
// ---------------------------------------------------------------------

/// What the fake server saw.
struct ServerSaw {
    mine: Key,
    keys: Vec<Key>,
    report: BwRep,
    window: Vec<u8>,
    guards_intact: bool,
    packets_rx: u64,
    buff: u64,
}

/// `ib_write_bw`'s server (`write_bw.c` `main`, RUN_REGULAR, not duplex):
/// versions, sys data, MTU, negotiation, the keys (`ctx_hand_shake` per
/// QP), `ctx_connect`, the keys again, the hand shake after RTR; then
/// "server just waits for client to exit": a hand shake, the client's
/// report (`xchg_bw_reports`), `ctx_close_connection`.
/// `page` is the page size the fake announces in `check_sys_data`.
fn fake_server(s: TcpStream, size: u64, iters: u64, page: i32) -> ServerSaw {
    let dev = side(0x5eed);
    let mut o = Oob::new(s, false);
    let theirs = o.xchg(&version_bytes(PERFTEST_VERSION));
    check_their_version(&theirs);
    let (cb, _cl) = sys_data(&mut o, page);
    let cycle = cb.max(page) as u64;
    let mtu_code = mtu(&mut o);
    let n = Neg::write_bw(size, iters);
    negotiate(&mut o, &n, &n);

    // ctx_init: the buffer; set_up_connection: my_dest. perftest's
    // server buffer is 2 * BUFF_SIZE and it publishes the second half
    // (`vaddr = buf + (num_of_qps + i) * BUFF_SIZE`); here a guard of
    // BUFF_SIZE on either side of the published window, all registered,
    // so a WRITE outside the window lands and is seen.
    let buff = buff_size(size, cycle);
    let total = 3 * buff as usize;
    let pd = dev.c.alloc_pd().unwrap();
    let buf = dev.c.alloc_buffer(total).unwrap();
    let mut init = vec![0xa5u8; total];
    init[buff as usize..2 * buff as usize].fill(0);
    buf.write(0, &init).unwrap();
    let rights = Access::LOCAL_WRITE | Access::REMOTE_WRITE | Access::REMOTE_READ;
    let mr = dev.c.reg_mr(&pd, &buf, rights).unwrap();
    let cq = dev.c.create_cq(256).unwrap();
    let cap = QpCap::new(16, 16, 1, 1);
    let mut qp: Qp = dev
        .c
        .create_qp(&pd, &QpInitAttr::new(QpType::Rc, &cq, &cq, cap))
        .unwrap();
    let r = mr.remote(buff, buff).unwrap();
    let mine = Key {
        lid: 0,
        // verify_params_with_device_context: 1 for WRITE.
        out_reads: 1,
        qpn: qp.qp_num(),
        psn: psn(1),
        rkey: r.rkey,
        vaddr: r.addr,
        gid: dev.gid,
        srqn: 0,
    };
    o.fabric = Some(&dev.fabric);
    let mut keys = Vec::new();
    keys.push(hand_shake(&mut o, &mine));
    // ctx_check_gid_compatibility: both IPv4-mapped or neither.
    let v4 = |g: &[u8; 16]| g[..10] == [0; 10] && g[10..12] == [0xff, 0xff];
    assert_eq!(v4(&keys[0].gid), v4(&mine.gid), "GID types differ");
    connect(&mut qp, &mine, &keys[0], mtu_code);
    keys.push(hand_shake(&mut o, &mine));
    keys.push(hand_shake(&mut o, &mine));
    // The client runs; the fabric answers it until its next message.
    keys.push(hand_shake(&mut o, &mine));
    // The server's my_bw_rep is never filled in perftest (it measures
    // nothing); zeros here.
    let report = bw_reports(
        &mut o,
        &BwRep {
            size: 0,
            iters: 0,
            bw_peak: 0.0,
            bw_avg: 0.0,
            msg_rate: 0.0,
        },
    );
    keys.push(hand_shake(&mut o, &mine));
    drop(o);
    let t = Instant::now();
    while t.elapsed() < Duration::from_millis(50) {
        dev.fabric.step();
    }
    let mut all = vec![0u8; total];
    buf.read(0, &mut all).unwrap();
    let guards_intact = all[..buff as usize].iter().all(|&b| b == 0xa5)
        && all[2 * buff as usize..].iter().all(|&b| b == 0xa5);
    ServerSaw {
        mine,
        keys,
        report,
        window: all[buff as usize..2 * buff as usize].to_vec(),
        guards_intact,
        packets_rx: dev.fabric.wire_stats().unwrap().packets_rx,
        buff,
    }
}

#[test]
fn our_client_against_a_fake_perftest_write_bw_server() {
    let (size, iters) = (4096u64, 1000u64);
    let (saw, out) = against(true, &["-s", "4096", "-n", "1000"], move |s| {
        fake_server(s, size, iters, OUR_CYCLE_BUFFER)
    });
    let saw = saw.unwrap_or_else(|_| panic!("the fake server failed; ours: {}", text(&out)));
    eprintln!(
        "fake server: published {:?}; read {:?}; report {:?}; {} packets in; window starts {:02x?}",
        saw.mine,
        saw.keys[0],
        saw.report,
        saw.packets_rx,
        &saw.window[..16]
    );
    assert!(out.status.success(), "{}", text(&out));
    let v = json(&out);
    let r = &v["results"][0];
    assert_eq!(r["verdict"], "ok", "{r}");
    assert_eq!(r["posted"], iters, "{r}");
    assert_eq!(r["completed_ok"], iters, "{r}");
    assert_eq!(r["completed_err"], 0, "{r}");
    assert_eq!(r["peer"]["bareverbs"], false, "{r}");
    assert_eq!(r["peer"]["version"], PERFTEST_VERSION, "{r}");
    // It connected to what the fake published, and published what it
    // then reported as its own.
    same_endpoint(&r["remote"], &saw.mine);
    same_endpoint(&r["local"], &saw.keys[0]);
    // Every hand shake carries QP 0's key message, unchanged.
    assert_eq!(saw.keys.len(), 5);
    assert!(saw.keys.iter().all(|k| *k == saw.keys[0]), "{:?}", saw.keys);
    let k = saw.keys[0];
    assert_eq!(k.lid, 0, "RoCE: no LID");
    assert_eq!(k.srqn, 0);
    assert!(k.qpn <= 0xff_ffff && k.psn <= 0xff_ffff);
    // The client's report, as the fake server's print_full_bw_report
    // would show it.
    assert_eq!(saw.report.size, size, "{:?}", saw.report);
    assert_eq!(saw.report.iters, iters, "{:?}", saw.report);
    for x in [saw.report.bw_avg, saw.report.msg_rate] {
        assert!(x.is_finite() && x > 0.0, "{:?}", saw.report);
    }
    assert!(
        saw.report.bw_peak.is_finite() && saw.report.bw_peak >= 0.0,
        "{:?}",
        saw.report
    );
    // The data plane: WRITEs arrived, inside the published window only.
    assert!(saw.packets_rx >= iters, "{} packets", saw.packets_rx);
    assert!(
        saw.guards_intact,
        "a WRITE landed outside [vaddr, vaddr + BUFF_SIZE)"
    );
    assert_eq!(saw.buff, size);
    assert!(
        saw.window.iter().any(|&b| b != 0),
        "nothing landed in the published window"
    );
}

// ---------------------------------------------------------------------
// 2. A fake ib_write_bw client against our server.
// ---------------------------------------------------------------------

/// What the fake client sent and saw.
struct ClientSaw {
    mine: Key,
    keys: Vec<Key>,
    sent: BwRep,
    completed: u64,
}

/// `ib_write_bw`'s client (`write_bw.c` `main`): the same exchange as
/// the server's, client-first; then `run_iter_bw`: `iters` RDMA WRITEs
/// of `size` bytes to the server's key address, the remote address
/// advanced as `increase_rem_addr` does (by `INC(size, cache_line)`,
/// back to the start every `cycle_buffer / INC` WRs); then a hand shake,
/// `xchg_bw_reports` with its report, `ctx_close_connection`.
fn fake_client(s: TcpStream, size: u64, iters: u64) -> ClientSaw {
    let dev = side(0xc11e);
    let mut o = Oob::new(s, true);
    let theirs = o.xchg(&version_bytes(PERFTEST_VERSION));
    check_their_version(&theirs);
    let (cb, cl) = sys_data(&mut o, OUR_CYCLE_BUFFER);
    let cycle = cb.max(OUR_CYCLE_BUFFER) as u64;
    let line = cl.max(OUR_CACHE_LINE) as u64;
    let mtu_code = mtu(&mut o);
    let n = Neg::write_bw(size, iters);
    negotiate(&mut o, &n, &n);

    let buff = buff_size(size, cycle) as usize;
    let pd = dev.c.alloc_pd().unwrap();
    let buf = dev.c.alloc_buffer(2 * buff).unwrap();
    let pattern: Vec<u8> = (0..2 * buff as u32)
        .map(|i| (i.wrapping_mul(131) >> 3) as u8)
        .collect();
    buf.write(0, &pattern).unwrap();
    let rights = Access::LOCAL_WRITE | Access::REMOTE_WRITE | Access::REMOTE_READ;
    let mr = dev.c.reg_mr(&pd, &buf, rights).unwrap();
    let cq = dev.c.create_cq(256).unwrap();
    let cap = QpCap::new(16, 16, 1, 1);
    let mut qp: Qp = dev
        .c
        .create_qp(&pd, &QpInitAttr::new(QpType::Rc, &cq, &cq, cap))
        .unwrap();
    let r = mr.remote(buff as u64, buff as u64).unwrap();
    let mine = Key {
        lid: 0,
        out_reads: 1,
        qpn: qp.qp_num(),
        psn: psn(2),
        rkey: r.rkey,
        vaddr: r.addr,
        gid: dev.gid,
        srqn: 0,
    };
    o.fabric = Some(&dev.fabric);
    let mut keys = vec![hand_shake(&mut o, &mine)];
    let peer = keys[0];
    connect(&mut qp, &mine, &peer, mtu_code);
    keys.push(hand_shake(&mut o, &mine));
    keys.push(hand_shake(&mut o, &mine));

    // run_iter_bw: one signaled WR every SIG, at most OUT in flight.
    const SIG: u64 = 4;
    const OUT: u64 = 16;
    let step = inc(size, line);
    let per_cycle = (cycle / step).max(1);
    let src = [mr.sge(0, size as u32).unwrap()];
    let (mut posted, mut done) = (0u64, 0u64);
    let mut wc = [WorkCompletion::default(); 16];
    let t = Instant::now();
    let start = Instant::now();
    while done < iters {
        while posted < iters && posted - done < OUT {
            let w = SendOp::Write {
                remote_addr: peer.vaddr + (posted % per_cycle) * step,
                rkey: peer.rkey,
            };
            let wr = SendWr::new(posted, w, &src);
            let wr = if (posted + 1) % SIG == 0 || posted + 1 == iters {
                wr.signaled()
            } else {
                wr
            };
            qp.post_send(&[wr]).unwrap();
            posted += 1;
        }
        if !dev.fabric.step() {
            std::thread::sleep(Duration::from_micros(5));
        }
        let k = cq.poll(&mut qp, &mut wc).unwrap();
        for w in &wc[..k] {
            assert_eq!(w.status, WcStatus::Success, "{w:?}");
            done = w.wr_id + 1;
        }
        assert!(t.elapsed() < LIMIT, "{done} of {iters} WRITEs completed");
    }
    let secs = start.elapsed().as_secs_f64();
    keys.push(hand_shake(&mut o, &mine));
    let sent = BwRep {
        size,
        iters,
        bw_peak: 1234.5,
        // Rounded to 1/1024 so that its decimal text is exact (the check
        // below is of the 8 bytes, not of float printing and parsing).
        bw_avg: ((size * iters) as f64 / secs / (1 << 20) as f64 * 1024.0).round() / 1024.0,
        msg_rate: 0.125,
    };
    let theirs = bw_reports(&mut o, &sent);
    // perftest's server sends its never-filled my_bw_rep; nothing to
    // check but the lengths, which bw_reports did.
    let _ = theirs;
    keys.push(hand_shake(&mut o, &mine));
    ClientSaw {
        mine,
        keys,
        sent,
        completed: done,
    }
}

#[test]
fn a_fake_perftest_write_bw_client_against_our_server() {
    // 1 KiB messages: with a 4 KiB cycle buffer perftest's client writes
    // to four places of the server's window (increase_rem_addr).
    let (size, iters) = (1024u64, 2000u64);
    let (saw, out) = against(false, &["-s", "1024", "-n", "2000"], move |s| {
        fake_client(s, size, iters)
    });
    let saw = saw.unwrap_or_else(|_| panic!("the fake client failed; ours: {}", text(&out)));
    eprintln!(
        "fake client: published {:?}; read {:?}; sent {:?}",
        saw.mine, saw.keys[0], saw.sent
    );
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(saw.completed, iters);
    let v = json(&out);
    let r = &v["results"][0];
    assert_eq!(r["verdict"], "ok", "{r}");
    assert_eq!(r["peer"]["bareverbs"], false, "{r}");
    assert_eq!(r["peer"]["role"], "server", "{r}");
    assert_eq!(r["peer"]["version"], PERFTEST_VERSION, "{r}");
    same_endpoint(&r["remote"], &saw.mine);
    same_endpoint(&r["local"], &saw.keys[0]);
    assert_eq!(saw.keys.len(), 5);
    assert!(saw.keys.iter().all(|k| *k == saw.keys[0]), "{:?}", saw.keys);
    // The report the fake sent, as our server read it.
    let p = &r["peer"];
    assert_eq!(p["bw_size"], saw.sent.size, "{p}");
    assert_eq!(p["bw_iters"], saw.sent.iters, "{p}");
    assert_eq!(p["bw_peak"].as_f64(), Some(saw.sent.bw_peak), "{p}");
    assert_eq!(p["bw_avg"].as_f64(), Some(saw.sent.bw_avg), "{p}");
    assert_eq!(p["msg_rate_avg"].as_f64(), Some(saw.sent.msg_rate), "{p}");
}

// ---------------------------------------------------------------------
// 3. A peer announcing 5.60.
// ---------------------------------------------------------------------

#[test]
fn a_peer_announcing_perftest_5_60_is_refused() {
    for client in [true, false] {
        let (saw, out) = against(client, &["-s", "4096", "-n", "100"], move |s| {
            faulty_fake(s, !client, 4096, 100, Fault::Version("5.60"))
        });
        saw.unwrap_or_else(|_| panic!("the fake failed; ours: {}", text(&out)));
        // check_version_compatibility: "Current implementation is not
        // compatible with versions older than 5.70".
        refused(&out, &["5.60", "5.70"]);
    }
}

// ---------------------------------------------------------------------
// 4. A negotiation block that disagrees.
// ---------------------------------------------------------------------

#[test]
fn a_negotiation_mismatch_is_refused_naming_the_field() {
    // Our client at 4096 B; the fake server says 8192. perftest's
    // `compare`: " %s mismatch: local=%lu, remote=%lu".
    let mut other = Neg::write_bw(8192, 100);
    let (saw, out) = against(true, &["-s", "4096", "-n", "100"], move |s| {
        faulty_fake(s, false, 4096, 100, Fault::Negotiate(other))
    });
    saw.unwrap_or_else(|_| panic!("the fake failed; ours: {}", text(&out)));
    refused(&out, &["size mismatch", "local=4096", "remote=8192"]);

    // Our server doing WRITE; the fake client says SEND. With names:
    // " %s mismatch: local=%s, remote=%s".
    other = Neg::write_bw(4096, 100);
    other.verb = SEND;
    let (saw, out) = against(false, &["-s", "4096", "-n", "100"], move |s| {
        faulty_fake(s, true, 4096, 100, Fault::Negotiate(other))
    });
    saw.unwrap_or_else(|_| panic!("the fake failed; ours: {}", text(&out)));
    refused(&out, &["verb mismatch", "local=WRITE", "remote=SEND"]);
}

// ---------------------------------------------------------------------
// 5. Malformed key messages.
// ---------------------------------------------------------------------

/// 108 bytes with a QPN that is not hex.
const KEY_NOT_HEX: &[u8] = b"0000:0001:zzzzzz:123456:00000201:00007f0000001000:\
fd:62:76:77:00:00:00:00:00:00:7f:00:00:01:9c:b0:00000000:\0";
/// 108 bytes whose QPN field is one digit wider than `%06x` (25 bits), the
/// rest shifted and the last colon cut off.
const KEY_TOO_WIDE: &[u8] = b"0000:0001:1000100:123456:00000201:00007f0000001000:\
fd:62:76:77:00:00:00:00:00:00:7f:00:00:01:9c:b0:00000000\0";
/// The form without a GID (`KEY_PRINT_FMT`, 59 bytes), what a perftest
/// without a GID index sends; then the connection closes.
const KEY_NO_GID: &[u8] = b"0000:0001:000101:123456:00000201:00007f0000001000:00000000\0";

#[test]
fn malformed_key_messages_are_refused_without_a_panic() {
    assert_eq!(KEY_NOT_HEX.len(), KEY_MSG_SIZE_GID);
    assert_eq!(KEY_TOO_WIDE.len(), KEY_MSG_SIZE_GID);
    assert_eq!(KEY_NO_GID.len(), KEY_MSG_SIZE);
    let cases: [(bool, Fault, &[&str]); 4] = [
        (true, Fault::Key(KEY_NOT_HEX), &["key message", "not hex"]),
        (false, Fault::Key(KEY_NOT_HEX), &["key message", "not hex"]),
        (true, Fault::Key(KEY_TOO_WIDE), &["key message"]),
        (true, Fault::KeyThenClose(KEY_NO_GID), &["closed"]),
    ];
    for (client, fault, want) in cases {
        let (saw, out) = against(client, &["-s", "4096", "-n", "100"], move |s| {
            faulty_fake(s, !client, 4096, 100, fault)
        });
        saw.unwrap_or_else(|_| panic!("the fake failed ({fault:?}); ours: {}", text(&out)));
        refused(&out, want);
    }
}

/// A perftest server on a 64 KiB-page host (ppc64, aarch64) announces a
/// 64 KiB cycle buffer; `check_sys_data` makes both sides take the larger,
/// and the server publishes `BUFF_SIZE(size, 65536)` bytes: our client
/// must keep every WRITE inside them.
#[test]
fn our_client_keeps_to_a_larger_peer_cycle_buffer() {
    let (size, iters) = (4096u64, 600u64);
    let (saw, out) = against(true, &["-s", "4096", "-n", "600"], move |s| {
        fake_server(s, size, iters, 65536)
    });
    let saw = saw.unwrap_or_else(|_| panic!("the fake server failed; ours: {}", text(&out)));
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(json(&out)["results"][0]["verdict"], "ok");
    assert_eq!(saw.buff, 65536);
    assert!(
        saw.guards_intact,
        "a WRITE landed outside [vaddr, vaddr + BUFF_SIZE)"
    );
    let used = saw
        .window
        .chunks(size as usize)
        .filter(|c| c.iter().any(|&b| b != 0))
        .count();
    // perftest's own client (increase_rem_addr) would use all 16 places.
    eprintln!("our client wrote to {used} of 16 message places of the 64 KiB window");
    assert!(used >= 1);
}

/// `compare_ibv_device` (perftest_parameters.c, called by
/// `negotiate_params`): when the peer's `max_qp_rd_atom` is below this
/// side's `out_reads`, "using remote max_qp_rd_atom" — `out_reads` is
/// lowered *before* `set_up_connection` puts it in the key message. The
/// peer then sets its QP's `max_rd_atomic = dest->out_reads`
/// (`ctx_modify_qp_to_rts`, perftest_resources.c), so a value above its
/// device's limit makes its `ibv_modify_qp` fail. (For WRITE perftest even
/// publishes 1: `verify_params_with_device_context`.) A fake server whose
/// device allows 4 outstanding reads: our client's key must not announce
/// more, and for WRITE it announces 1 as perftest does.
#[test]
fn our_key_message_respects_the_peers_max_qp_rd_atom() {
    let (saw, out) = against(true, &["-s", "4096", "-n", "100"], move |s| {
        let mut o = Oob::new(s, false);
        check_their_version(&o.xchg(&version_bytes(PERFTEST_VERSION)));
        sys_data(&mut o, OUR_CYCLE_BUFFER);
        mtu(&mut o);
        let n = Neg::write_bw(4096, 100);
        let theirs = o.xchg(&n.encode_rd(4));
        assert_eq!(Neg::decode(&theirs).0, n);
        let k = parse_key_gid(&o.read(KEY_MSG_SIZE_GID).expect("our key"));
        k.out_reads
    });
    let out_reads = saw.unwrap_or_else(|_| panic!("the fake failed; ours: {}", text(&out)));
    assert!(
        out_reads <= 4,
        "our key message announces out_reads {out_reads} to a peer whose max_qp_rd_atom is 4"
    );
    assert_eq!(out_reads, 1, "perftest announces 1 for a WRITE test");
}
