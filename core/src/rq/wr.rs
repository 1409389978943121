//! The receive work request ([`RecvWr`]): a `wr_id` and the scatter list.

use crate::sge::Sge;

/// A receive work request.
#[derive(Clone, Copy, Debug)]
pub struct RecvWr<'a> {
    /// Caller's identifier, returned in the completion.
    pub wr_id: u64,
    /// Where incoming data is scattered.
    pub sgl: &'a [Sge],
}
