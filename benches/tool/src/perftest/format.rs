//! perftest's text output: the header block (`ctx_print_test_info`), the
//! result column headers and the row formats, reproduced byte for byte from
//! `perftest_parameters.[ch]` (perf ref §4). C `printf` widths map to
//! Rust `{:<7}` / `{:<7.2}`: `%-7lu` = left-justified, width 7.

use super::stats::{BwStats, BwUnit, LatStats};
use std::fmt::Write as _;

/// perftest `RESULT_LINE` (87 dashes, newline).
pub const RESULT_LINE: &str =
    "---------------------------------------------------------------------------------------\n";
/// `RESULT_FMT` (bandwidth, MiB/sec since perftest 24.07).
pub const RESULT_FMT: &str =
    " #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]";
/// `RESULT_FMT_G` (bandwidth, `--report_gbits`).
pub const RESULT_FMT_G: &str =
    " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]";
/// `RESULT_FMT_LAT`.
pub const RESULT_FMT_LAT: &str = " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] ";
/// `RESULT_FMT_LAT_DUR` (latency with `-D`).
pub const RESULT_FMT_LAT_DUR: &str = " #bytes        #iterations       t_avg[usec]    tps average";

/// The verb under test (perftest `testsStr`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Verb {
    /// `Send`.
    Send,
    /// `RDMA_Write`.
    Write,
    /// `RDMA_Read`.
    Read,
    /// `Atomic` (FETCH_AND_ADD).
    Atomic,
}

impl Verb {
    /// perftest's name.
    pub fn name(self) -> &'static str {
        match self {
            Verb::Send => "Send",
            Verb::Write => "RDMA_Write",
            Verb::Read => "RDMA_Read",
            Verb::Atomic => "Atomic",
        }
    }
    /// 2 for WRITE/SEND (half a ping-pong), 1 for READ/ATOMIC.
    pub fn rtt_factor(self) -> u32 {
        match self {
            Verb::Read | Verb::Atomic => 1,
            _ => 2,
        }
    }
}

/// Everything the header block prints.
#[derive(Clone, Debug, serde::Serialize)]
pub struct HeaderInfo {
    /// Verb.
    pub verb: Verb,
    /// Bandwidth test (else latency).
    pub bw: bool,
    /// `-l` post list.
    pub post_list: u32,
    /// Device name column.
    pub device: String,
    /// `-q`.
    pub num_qps: u32,
    /// `RC`, `UC`, `UD`.
    pub connection: String,
    /// `-t`.
    pub tx_depth: u32,
    /// The CQ moderation actually used (printed for bandwidth tests).
    pub cq_mod: u32,
    /// `CQE Poll Batch` (bandwidth tests): `None` = perftest's dynamic
    /// polling, else the fixed batch.
    pub cqe_poll: Option<u16>,
    /// MTU bytes.
    pub mtu: u32,
    /// `IB` or `Ethernet`.
    pub link_type: String,
    /// `GID index` line: printed when a GID index is in use (perftest
    /// picks 0 on Ethernet ports), absent on IB.
    pub gid_index: Option<u32>,
    /// Max inline data (WRITE/SEND) in bytes.
    pub max_inline: u32,
    /// Outstanding reads (READ/ATOMIC).
    pub out_reads: u32,
    /// Extra lines printed before the closing dashes (e.g. "times are
    /// modeled").
    pub notes: Vec<String>,
}

/// The centred title line: 20 spaces, `<verb> [FETCH_AND_ADD ][Post List ]BW|Latency Test`.
pub fn title(h: &HeaderInfo) -> String {
    let mut s = String::from("                    ");
    s.push_str(h.verb.name());
    s.push(' ');
    if h.verb == Verb::Atomic {
        s.push_str("FETCH_AND_ADD ");
    }
    if h.bw {
        if h.post_list > 1 {
            s.push_str("Post List ");
        }
        s.push_str("BW ");
    } else {
        s.push_str("Latency ");
    }
    s.push_str("Test");
    s
}

/// The header block (perf ref §4), ending with the dashes line.
pub fn header(h: &HeaderInfo) -> String {
    let mut s = String::new();
    s.push_str(RESULT_LINE);
    s.push_str(&title(h));
    s.push('\n');
    let _ = writeln!(s, " Dual-port       : OFF\t\tDevice         : {}", h.device);
    let _ = writeln!(s, " Number of qps   : {}\t\tTransport type : IB", h.num_qps);
    let _ = writeln!(
        s,
        " Connection type : {}\t\tUsing SRQ      : OFF",
        h.connection
    );
    s.push_str(" PCIe relax order: ON\t\tLock-free      : OFF\n");
    s.push_str(" ibv_wr* API     : ON\t\tUsing Enhanced Reorder      : OFF\n");
    let _ = writeln!(s, " TX depth        : {}", h.tx_depth);
    if h.post_list > 1 {
        let _ = writeln!(s, " Post List       : {}", h.post_list);
    }
    if h.bw {
        let _ = writeln!(s, " CQ Moderation   : {}", h.cq_mod);
        match h.cqe_poll {
            None => s.push_str(" CQE Poll Batch  : Dynamic\n"),
            Some(n) => {
                let _ = writeln!(s, " CQE Poll Batch  : {n}");
            }
        }
    }
    let _ = writeln!(s, " Mtu             : {}[B]", h.mtu);
    let _ = writeln!(s, " Link type       : {}", h.link_type);
    if let Some(g) = h.gid_index {
        let _ = writeln!(s, " GID index       : {g}");
    }
    if matches!(h.verb, Verb::Read | Verb::Atomic) {
        let _ = writeln!(s, " Outstand reads  : {}", h.out_reads);
    } else {
        let _ = writeln!(s, " Max inline data : {}[B]", h.max_inline);
    }
    s.push_str(" rdma_cm QPs\t : OFF\n");
    s.push_str(" Data ex. method : Ethernet\n");
    for n in &h.notes {
        let _ = writeln!(s, " {n}");
    }
    s.push_str(RESULT_LINE);
    s
}

/// One side of a connection as perftest's `ctx_print_pingpong_data` prints
/// it (`struct pingpong_dest`).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Endpoint {
    /// LID (0 on RoCE).
    pub lid: u16,
    /// QP number.
    pub qpn: u32,
    /// Start PSN of the QP's send queue.
    pub psn: u32,
    /// Outstanding reads (printed for READ).
    pub out_reads: u32,
    /// RKey of the buffer the peer accesses (printed for READ/WRITE).
    pub rkey: u32,
    /// Virtual address of that buffer (printed for READ/WRITE).
    pub vaddr: u64,
    /// GID (printed when a GID index is in use).
    pub gid: [u8; 16],
}

/// C `%#0Nx`: `0x` + hex padded to `width` characters in total, except
/// that 0 prints as a zero-padded `0` without the `0x` prefix.
fn alt_hex(v: u64, width: usize) -> String {
    if v == 0 {
        format!("{:0width$}", 0)
    } else {
        format!("{v:#0width$x}")
    }
}

/// The `local address` / `remote address` line of `ep` (`BASIC_ADDR_FMT`,
/// then `READ_FMT` for READ, `RDMA_FMT` for READ and WRITE), with its
/// newline, followed by the `GID:` line (`PERF_GID_FMT`) when `gid` is set.
pub fn address(verb: Verb, remote: bool, ep: &Endpoint, gid: bool) -> String {
    let mut s = format!(
        " {} address: LID {} QPN {} PSN {}",
        if remote { "remote" } else { "local" },
        alt_hex(ep.lid as u64, 4),
        alt_hex(ep.qpn as u64, 6),
        alt_hex(ep.psn as u64, 6)
    );
    if verb == Verb::Read {
        let _ = write!(s, " OUT {}", alt_hex(ep.out_reads as u64, 4));
    }
    if matches!(verb, Verb::Read | Verb::Write) {
        let _ = write!(
            s,
            " RKey {} VAddr {}",
            alt_hex(ep.rkey as u64, 8),
            alt_hex(ep.vaddr, 16)
        );
    }
    s.push('\n');
    if gid {
        s.push_str(" GID: ");
        let g: Vec<String> = ep.gid.iter().map(|b| format!("{b:02}")).collect();
        s.push_str(&g.join(":"));
        s.push('\n');
    }
    s
}

/// Column header for bandwidth results.
pub fn bw_columns(unit: BwUnit) -> &'static str {
    match unit {
        BwUnit::MBps => RESULT_FMT,
        BwUnit::Gbps => RESULT_FMT_G,
    }
}

/// One bandwidth row (`REPORT_FMT`, or `REPORT_FMT_EXT` with 6 decimals
/// when reporting Gb/s and the average is below 0.1), with its newline.
pub fn bw_row(size: u64, iters: u64, s: &BwStats) -> String {
    if s.unit == BwUnit::Gbps && s.bw_avg < 0.1 {
        format!(
            " {:<7}    {}           {:<7.6}            {:<7.6}            {:<7.6}\n",
            size, iters, s.bw_peak, s.bw_avg, s.msg_rate_mpps
        )
    } else {
        format!(
            " {:<7}    {:<10}       {:<7.2}            {:<7.2}\t\t     {:<7.6}\n",
            size, iters, s.bw_peak, s.bw_avg, s.msg_rate_mpps
        )
    }
}

/// One latency row (`REPORT_FMT_LAT` + `REPORT_EXT`).
pub fn lat_row(size: u64, iters: u64, s: &LatStats) -> String {
    format!(
        " {:<7} {}          {:<7.2}        {:<7.2}      {:<7.2}  \t       {:<7.2}     \t{:<7.2}\t\t{:<7.2} \t\t{:<7.2}\n",
        size, iters, s.t_min, s.t_max, s.t_typical, s.t_avg, s.t_stdev, s.p99, s.p99_9
    )
}

/// One latency row in duration mode (`REPORT_FMT_LAT_DUR`).
pub fn lat_dur_row(size: u64, iters: u64, t_avg: f64, tps: f64) -> String {
    format!(" {size:<7}       {iters}            {t_avg:<7.2}        {tps:<7.2}\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hdr(verb: Verb, bw: bool) -> HeaderInfo {
        HeaderInfo {
            verb,
            bw,
            post_list: 1,
            device: "mlx5_0".into(),
            num_qps: 1,
            connection: "RC".into(),
            tx_depth: 1,
            cq_mod: 100,
            cqe_poll: Some(16),
            mtu: 4096,
            link_type: "IB".into(),
            gid_index: None,
            max_inline: 220,
            out_reads: 16,
            notes: vec![],
        }
    }

    #[test]
    fn header_matches_perftest_example() {
        // perf ref §4, ib_write_lat example, verbatim.
        let want = "---------------------------------------------------------------------------------------\n                    RDMA_Write Latency Test\n Dual-port       : OFF\t\tDevice         : mlx5_0\n Number of qps   : 1\t\tTransport type : IB\n Connection type : RC\t\tUsing SRQ      : OFF\n PCIe relax order: ON\t\tLock-free      : OFF\n ibv_wr* API     : ON\t\tUsing Enhanced Reorder      : OFF\n TX depth        : 1\n Mtu             : 4096[B]\n Link type       : IB\n Max inline data : 220[B]\n rdma_cm QPs\t : OFF\n Data ex. method : Ethernet\n---------------------------------------------------------------------------------------\n";
        assert_eq!(header(&hdr(Verb::Write, false)), want);
    }

    #[test]
    fn titles() {
        assert_eq!(title(&hdr(Verb::Read, true)).trim(), "RDMA_Read BW Test");
        assert_eq!(
            title(&hdr(Verb::Atomic, false)).trim(),
            "Atomic FETCH_AND_ADD Latency Test"
        );
        let mut h = hdr(Verb::Send, true);
        h.post_list = 16;
        assert_eq!(title(&h).trim(), "Send Post List BW Test");
        let s = header(&h);
        assert!(s.contains(" Post List       : 16\n CQ Moderation   : 100\n"));
    }

    #[test]
    fn rows_match_c_printf() {
        // printf(" %-7lu %d          %-7.2f ...", 2, 1000, 0.93, 3.1, 0.95,
        // 0.96, 0.05, 1.2, 2.9): %-7.2f of 0.93 = "0.93   " (7 wide).
        let s = LatStats {
            kept: 997,
            t_min: 0.93,
            t_max: 3.1,
            t_typical: 0.95,
            t_avg: 0.96,
            t_stdev: 0.05,
            p99: 1.2,
            p99_9: 2.9,
        };
        assert_eq!(
            lat_row(2, 1000, &s),
            " 2       1000          0.93           3.10         0.95     \t       0.96        \t0.05   \t\t1.20    \t\t2.90   \n"
        );
        let b = BwStats {
            bw_peak: 11000.5,
            bw_avg: 10990.25,
            msg_rate_mpps: 0.175844,
            unit: BwUnit::MBps,
            gbps_avg: 0.0,
        };
        assert_eq!(
            bw_row(65536, 5000, &b),
            " 65536      5000             11000.50            10990.25\t\t     0.175844\n"
        );
        // --report_gbits with average < 0.1 → REPORT_FMT_EXT.
        let e = BwStats {
            bw_peak: 0.05,
            bw_avg: 0.04235,
            msg_rate_mpps: 2.646875,
            unit: BwUnit::Gbps,
            gbps_avg: 0.04235,
        };
        assert_eq!(
            bw_row(2, 5000, &e),
            " 2          5000           0.050000            0.042350            2.646875\n"
        );
    }

    #[test]
    fn bw_columns_are_perftest_mib() {
        // perftest src/perftest_parameters.h, #define RESULT_FMT (printed by
        // src/write_bw.c main):
        // " #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]"
        let want =
            " #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]";
        assert_eq!(bw_columns(BwUnit::MBps), want);
    }

    #[test]
    fn cqe_poll_and_gid_index_lines() {
        // perftest src/perftest_parameters.c, ctx_print_test_info:
        //   " CQ Moderation   : %d\n", " CQE Poll Batch  : Dynamic\n",
        //   " CQE Poll Batch  : %hu\n", " GID index       : %d\n".
        let mut h = hdr(Verb::Write, true);
        h.cq_mod = 1;
        h.cqe_poll = None;
        assert!(header(&h).contains(" CQ Moderation   : 1\n CQE Poll Batch  : Dynamic\n Mtu "));
        h.cqe_poll = Some(16);
        h.gid_index = Some(0);
        h.link_type = "Ethernet".into();
        let t = header(&h);
        assert!(t.contains(" CQE Poll Batch  : 16\n"), "{t}");
        assert!(
            t.contains(" Link type       : Ethernet\n GID index       : 0\n"),
            "{t}"
        );
    }

    #[test]
    fn address_lines_match_perftest() {
        // perftest src/perftest_communication.h:
        //   BASIC_ADDR_FMT " %s address: LID %#04x QPN %#06x PSN %#06x"
        //   READ_FMT " OUT %#04x"   RDMA_FMT " RKey %#08x VAddr %#016llx"
        //   PERF_GID_FMT " %s: %02d:...:%02d\n" (16 fields)
        // printed by ctx_print_pingpong_data (src/perftest_communication.c);
        // sideArray {"local", "remote"}, gidArray {"GID", "MGID"}.
        let ep = Endpoint {
            lid: 0,
            qpn: 0x48,
            psn: 0x200,
            out_reads: 16,
            rkey: 0x1234,
            vaddr: 0x7f00_0000_1000,
            gid: [0; 16],
        };
        assert_eq!(
            address(Verb::Write, false, &ep, false),
            " local address: LID 0000 QPN 0x0048 PSN 0x0200 RKey 0x001234 VAddr 0x007f0000001000\n"
        );
        assert_eq!(
            address(Verb::Read, true, &ep, false),
            " remote address: LID 0000 QPN 0x0048 PSN 0x0200 OUT 0x10 RKey 0x001234 VAddr 0x007f0000001000\n"
        );
        let mut g = ep.clone();
        g.gid[10] = 255;
        g.gid[11] = 255;
        g.gid[12] = 192;
        assert_eq!(
            address(Verb::Send, false, &g, true),
            " local address: LID 0000 QPN 0x0048 PSN 0x0200\n GID: 00:00:00:00:00:00:00:00:00:00:255:255:192:00:00:00\n"
        );
        // The zero state: %#06x of 0 is "000000", no 0x prefix.
        assert_eq!(
            address(Verb::Send, true, &Endpoint::default(), false),
            " remote address: LID 0000 QPN 000000 PSN 000000\n"
        );
    }
}
