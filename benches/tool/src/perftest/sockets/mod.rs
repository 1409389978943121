//! perftest's out-of-band sockets protocol (`perftest_communication.c`
//! at perftest 6.29), as bareverbs speaks it to a peer host: one TCP
//! stream on which every exchange is a fixed number of raw bytes, the
//! client (the side given a server name) writing first and the server
//! reading first ([`Oob`]).
//!
//! | file | owns |
//! | --- | --- |
//! | `stream` | the connection and its one rule, write-then-read or read-then-write ([`Oob`]) |
//! | `versions` | `exchange_versions` and the compatibility gates on the peer's version ([`Version`]) |
//! | `setup` | `check_sys_data` (cycle buffer, cache line) and `check_mtu` |
//! | `negotiate` | `negotiate_params`: the 320-byte parameter block and its comparison ([`Negotiate`]) |
//! | `keys` | the key message of one QP (`KEY_PRINT_FMT[_GID]`, [`KeyMessage`]) and `ctx_hand_shake` |
//! | `reports` | `xchg_bw_reports` ([`BwReport`]) |
//!
//! Every value read from the peer is untrusted: a short read, a message
//! that does not parse or a field out of range is an error naming what
//! was wrong, never a panic.

mod keys;
mod negotiate;
mod reports;
mod setup;
mod stream;
mod versions;

pub use keys::{KeyMessage, KEY_MSG_SIZE, KEY_MSG_SIZE_GID};
pub use negotiate::{Negotiate, NEGOTIATE_BYTES};
pub use reports::BwReport;
pub use setup::SysData;
pub use stream::Oob;
pub use versions::{Version, PERFTEST_VERSION};
