//! The CLI name of a perftest test (`write-lat` …), as errors and the
//! JSON `command` name it.

use crate::perf::flags::PerfTest;

/// The CLI name of a test.
pub fn test_name(t: PerfTest) -> &'static str {
    match t {
        PerfTest::WriteLat => "write-lat",
        PerfTest::WriteBw => "write-bw",
        PerfTest::SendLat => "send-lat",
        PerfTest::SendBw => "send-bw",
        PerfTest::ReadLat => "read-lat",
        PerfTest::ReadBw => "read-bw",
        PerfTest::AtomicLat => "atomic-lat",
    }
}
