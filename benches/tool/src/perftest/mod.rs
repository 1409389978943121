//! perftest look-alike statistics and output (perf ref §4): the
//! numbers `ib_write_lat` / `ib_write_bw` & co. print, computed with the
//! same rules, and the same text layout, so our results can be put next to
//! real perftest runs line by line; and perftest's out-of-band sockets
//! protocol ([`sockets`]), so a bareverbs host pairs with a perftest one.

pub mod format;
pub mod sockets;
pub mod stats;
