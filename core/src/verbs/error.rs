//! The verbs layer's error type.

use crate::cmd::CmdError;
use crate::cq::{CqError, PollError};
use crate::device::DeviceError;
use crate::rq::RecvError;
use crate::sizing::SizingError;
use crate::sq::{PostError, PostErrorKind};
use core::fmt;

/// Why a verbs-level call failed. Each variant names the problem.
///
/// Every error a verbs call returns converts into it with `From`, so `?`
/// works on all of them in a function returning this type: object
/// creation and transitions ([`DeviceError`], [`SizingError`],
/// [`CqError`], and [`CmdError`] by way of [`DeviceError`]), posting
/// ([`PostError`], [`RecvError`], a batch's [`PostErrorKind`]) and polling
/// ([`PollError`]). The variants that wrap one are transparent (its
/// message is theirs, its [`source`](core::error::Error::source) theirs;
/// match the variant to get it) except `Push`, whose source it is; print
/// the whole chain with [`Chain`](crate::error::Chain).
///
/// The enum is `#[non_exhaustive]`: new failure kinds may be added, so a
/// `match` outside this crate needs a wildcard arm. Without one it does
/// not compile:
///
/// ```compile_fail,E0004
/// use bareverbs::verbs::Error;
/// fn name(e: &Error) -> &'static str {
///     match e {
///         Error::Device(_) => "device",
///         Error::Sizing(_) => "sizing",
///         Error::Cq(_) => "cq",
///         Error::Storage { .. } => "storage",
///         Error::OutOfBounds { .. } => "bounds",
///         Error::InvalidAttr { .. } => "attr",
///         Error::Unsupported { .. } => "unsupported",
///         Error::Post(_) => "post",
///         Error::Push(_) => "push",
///         Error::Recv(_) => "recv",
///         Error::Poll(_) => "poll",
///         Error::ForeignObject { .. } => "foreign",
///     }
/// }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// A device command or driver-side check failed.
    Device(DeviceError),
    /// The requested capacities do not fit the device (the provider's
    /// sizing rules, with the limit that was exceeded).
    Sizing(SizingError),
    /// The completion queue could not be built over its ring.
    Cq(CqError),
    /// The queue storage the QP type provides does not match the geometry
    /// the device was given.
    Storage {
        /// Which queue.
        queue: &'static str,
        /// Entries the geometry has (WQEBBs for the send queue, WQEs for the
        /// receive queue).
        need: u32,
        /// Entries the type parameter holds.
        have: u32,
    },
    /// An access outside a buffer.
    OutOfBounds {
        /// Offset asked for.
        offset: u64,
        /// Length asked for.
        len: u64,
        /// Size of the buffer.
        size: u64,
    },
    /// A transition attribute outside its field.
    InvalidAttr {
        /// Verbs name of the attribute.
        attr: &'static str,
        /// Value given.
        value: u64,
        /// Largest value allowed.
        max: u64,
    },
    /// The request is not supported by this layer (yet).
    Unsupported {
        /// What.
        what: &'static str,
    },
    /// Send WRs were refused by
    /// [`QueuePair::post_send`](super::QueuePair::post_send) (the WRs
    /// before the refused one were posted).
    Post(PostError),
    /// A send WR was refused by [`SendBatch::push`](super::SendBatch::push)
    /// (nothing of it was written; the batch stays open).
    Push(PostErrorKind),
    /// Receive WRs were refused (the WRs before the refused one were
    /// posted).
    Recv(RecvError),
    /// A poll stopped on a CQE it could not turn into a completion (the
    /// completions before it were written).
    Poll(PollError),
    /// An object made through another [`Context`](super::Context) was
    /// handed to this one (a PD or buffer to `reg_mr`, a PD, CQ or SRQ to
    /// `create_qp`, …): its numbers and keys mean nothing, or something
    /// else, on this device. Nothing was created.
    ForeignObject {
        /// Which object: "PD", "buffer", "send CQ", "receive CQ", "SRQ",
        /// "CQ".
        what: &'static str,
    },
}

impl From<CmdError> for Error {
    fn from(e: CmdError) -> Self {
        Error::Device(e.into())
    }
}
impl From<PostError> for Error {
    fn from(e: PostError) -> Self {
        Error::Post(e)
    }
}
impl From<PostErrorKind> for Error {
    fn from(e: PostErrorKind) -> Self {
        Error::Push(e)
    }
}
impl From<RecvError> for Error {
    fn from(e: RecvError) -> Self {
        Error::Recv(e)
    }
}
impl From<PollError> for Error {
    fn from(e: PollError) -> Self {
        Error::Poll(e)
    }
}

impl From<DeviceError> for Error {
    fn from(e: DeviceError) -> Self {
        Error::Device(e)
    }
}
impl From<SizingError> for Error {
    fn from(e: SizingError) -> Self {
        Error::Sizing(e)
    }
}
impl From<CqError> for Error {
    fn from(e: CqError) -> Self {
        Error::Cq(e)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Device(e) => fmt::Display::fmt(e, f),
            Error::Sizing(e) => fmt::Display::fmt(e, f),
            Error::Cq(e) => fmt::Display::fmt(e, f),
            Error::Storage { queue, need, have } => write!(
                f,
                "the {queue} queue has {need} entries; the QueuePair type holds {have} \
                 (use {need} as its const parameter)"
            ),
            Error::OutOfBounds { offset, len, size } => write!(
                f,
                "{len} bytes at offset {offset} do not fit a {size}-byte buffer"
            ),
            Error::InvalidAttr { attr, value, max } => {
                write!(f, "{attr} = {value} is out of range (at most {max})")
            }
            Error::Unsupported { what } => write!(f, "{what} is not supported"),
            Error::Post(e) => fmt::Display::fmt(e, f),
            Error::Push(_) => f.write_str("WR not pushed"),
            Error::Recv(e) => fmt::Display::fmt(e, f),
            Error::Poll(e) => fmt::Display::fmt(e, f),
            Error::ForeignObject { what } => {
                write!(f, "the {what} belongs to another Context")
            }
        }
    }
}

/// [`source`](core::error::Error::source) follows the
/// [module rule](crate::error#display-and-source-each-message-once): the
/// transparent variants (`Device`, `Sizing`, `Cq`, `Post`, `Recv`, `Poll`)
/// print the wrapped error's message as their own and return *its*
/// source; `Push` ("WR not pushed") returns the [`PostErrorKind`].
impl core::error::Error for Error {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            Error::Device(e) => core::error::Error::source(e),
            Error::Sizing(e) => core::error::Error::source(e),
            Error::Cq(e) => core::error::Error::source(e),
            Error::Post(e) => core::error::Error::source(e),
            Error::Push(e) => Some(e),
            Error::Recv(e) => core::error::Error::source(e),
            Error::Poll(e) => core::error::Error::source(e),
            _ => None,
        }
    }
}
