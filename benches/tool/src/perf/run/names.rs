//! perftest's binary name of a test ([`perftest_name`]: `ib_write_bw` …).

use super::PerfTest;

/// perftest's binary name of `test` (`ib_write_bw` …).
pub fn perftest_name(test: PerfTest) -> &'static str {
    match test {
        PerfTest::WriteLat => "ib_write_lat",
        PerfTest::WriteBw => "ib_write_bw",
        PerfTest::SendLat => "ib_send_lat",
        PerfTest::SendBw => "ib_send_bw",
        PerfTest::ReadLat => "ib_read_lat",
        PerfTest::ReadBw => "ib_read_bw",
        PerfTest::AtomicLat => "ib_atomic_lat",
    }
}
