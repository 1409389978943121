//! The Linux errno values the vendor's provider returns, which bareverbs
//! reports beside its typed errors so results compare one to one with
//! `ibv_post_send`, `ibv_post_recv` and `ibv_create_*` (their numbers are
//! the Linux ABI's, the same on every architecture Linux supports RDMA on).

/// `ENOMEM` (12): queue full, too many SGEs or inline bytes for the WQE,
/// or a CQ buffer over `INT_MAX` bytes.
pub const ENOMEM: i32 = 12;
/// `EINVAL` (22): any other invalid request.
pub const EINVAL: i32 = 22;
/// `EOPNOTSUPP` (95): an operation the queue pair was not created for
/// (atomics disabled, a memory-window bind longer than the device allows).
pub const EOPNOTSUPP: i32 = 95;
