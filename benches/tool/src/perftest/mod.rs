//! perftest look-alike statistics and output (perf ref §4): the
//! numbers `ib_write_lat` / `ib_write_bw` & co. print, computed with the
//! same rules, and the same text layout, so our results can be put next to
//! real perftest runs line by line.

pub mod format;
pub mod stats;
