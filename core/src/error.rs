//! The codec layer's byte-level error, [`ParseError`], shared by the CQE
//! decoder ([`crate::cqe`]) and the WQE segment parsers ([`crate::wqe`]).
//!
//! Every layer has its own error type, each implementing
//! [`core::error::Error`] and wrapping the lower layers' errors (what
//! [`source`](core::error::Error::source) returns for each wrapper is
//! below, [Display and `source()`](#display-and-source-each-message-once)):
//!
//! | layer | error | wraps |
//! | --- | --- | --- |
//! | codec | [`ParseError`], [`WqeParseError`](crate::wqe::WqeParseError), [`EmitError`](crate::wqe::EmitError) | — |
//! | ring-level queues | [`PostError`](crate::sq::PostError), [`RecvError`](crate::rq::RecvError), [`PollError`](crate::cq::PollError), [`CqError`](crate::cq::CqError), [`SizingError`](crate::sizing::SizingError), [`QpTransitionError`](crate::qp::QpTransitionError) | — |
//! | command interface | [`CmdError`](crate::cmd::CmdError) | [`InitSegError`](crate::cmd::initseg::InitSegError), [`CmdqSetupError`](crate::cmd::queue::CmdqSetupError) (wraps `InitSegError`), [`PageError`](crate::cmd::pages::PageError) |
//! | device | [`DeviceError`](crate::device::DeviceError) | the command layer's errors, `CqError`, `SizingError` |
//! | verbs | [`verbs::Error`](crate::verbs::Error) | `DeviceError` (and `CmdError` through it), `SizingError`, `CqError`, `PostError`, [`PostErrorKind`](crate::sq::PostErrorKind), `RecvError`, `PollError` |
//! | self-test | [`SelfTestError`](crate::selftest::SelfTestError) | `DeviceError`, `PostError`, `RecvError`, `PollError` |
//!
//! Each is small, `Copy` and `no_std`; each variant names the problem
//! precisely so a caller can act on it, and each error enum is
//! `#[non_exhaustive]`, so new failure kinds are not breaking changes.
//!
//! # Display and `source()`: each message once
//!
//! A message appears once in an error's chain: an error either returns
//! the inner error from `source()` or prints its text in `Display`, never
//! both, so a reporter that walks the chain (anyhow's `{:#}`, eyre,
//! `std::error::Report`, [`Chain`]) prints every message once. A variant
//! that wraps a lower-layer error is one of two kinds:
//!
//! - **Transparent**: the variant only carries the lower error and adds
//!   nothing (`verbs::Error::Device`, `DeviceError::Cmd`, …). `Display`
//!   forwards to the inner error and `source()` to the inner error's
//!   `source()` (as thiserror's `#[error(transparent)]`): the wrapper *is*
//!   the inner error, and the chain goes straight on to what the inner
//!   error wraps. To reach the inner error, match the variant.
//! - **Context**: the variant says where or why (`DeviceError::InitSeg`
//!   prints "initialization segment", `DeviceError::BringUp` "bring-up step
//!   EnableHca", `verbs::Error::Push` "WR not pushed"). `Display` prints
//!   only that context, without the inner text, and `source()` returns the
//!   inner error.
//!
//! A context wrapper's `Display` alone is therefore not the whole story:
//! to turn an error into text, print the chain — [`Chain`] (no `alloc`
//! needed), `anyhow`'s `{:#}`, or any other chain reporter. The chain of a
//! context wrapper joined with `": "` reads as a single message,
//! e.g. "bring-up step EnableHca: command ENABLE_HCA (0x104) timed out
//! after 5 us (firmware still owns the slot)".
//!
//! | error | transparent | context |
//! | --- | --- | --- |
//! | [`verbs::Error`](crate::verbs::Error) | `Device`, `Sizing`, `Cq`, `Post`, `Recv`, `Poll` | `Push` |
//! | [`DeviceError`](crate::device::DeviceError) | `Cmd`, `CqTooSmall` | `InitSeg`, `Cmdq`, `BringUp`, `Pages`, `Cq` |
//! | [`CmdError`](crate::cmd::CmdError) | — | `InitSeg`, `CmdqSetup`, `Pages` |
//! | [`CmdqSetupError`](crate::cmd::queue::CmdqSetupError) | — | `Geometry` |
//! | [`SelfTestError`](crate::selftest::SelfTestError) | — | `Device`, `Post`, `PostRecv`, `Poll` (each names its step) |
//!
//! The simulator's `SimError::Transition` and `WiredError`, and the VFIO
//! host's `VfioHostError` (`Io`, `Vfio`, `Device`, `SelfTest`), are
//! context wrappers too.

use core::fmt;

/// Displays an error followed by every error of its
/// [`source`](core::error::Error::source) chain, joined by `": "`:
/// the whole message of a chain whose errors each print their own part
/// (see [the module docs](self)). Needs no allocation.
///
/// ```
/// use bareverbs::cmd::CmdError;
/// use bareverbs::device::{DeviceError, Step};
/// use bareverbs::error::Chain;
///
/// let err = CmdError::Timeout { opcode: 0x104, waited_us: 5 };
/// let e = DeviceError::BringUp { step: Step::EnableHca, err };
/// assert_eq!(e.to_string(), "bring-up step EnableHca");
/// assert_eq!(
///     Chain::new(&e).to_string(),
///     "bring-up step EnableHca: command ENABLE_HCA (0x104) timed out \
///      after 5 us (firmware still owns the slot)"
/// );
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Chain<'a>(&'a (dyn core::error::Error + 'a));

impl<'a> Chain<'a> {
    /// The chain that starts at `e`.
    pub fn new(e: &'a (dyn core::error::Error + 'a)) -> Self {
        Chain(e)
    }
}

impl fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.0, f)?;
        let mut next = self.0.source();
        while let Some(e) = next {
            write!(f, ": {e}")?;
            next = e.source();
        }
        Ok(())
    }
}

/// A problem detected while parsing bytes (from a device, a file or a fuzzer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParseError {
    /// The buffer is shorter than the structure needs.
    Truncated {
        /// Bytes the structure needs.
        need: usize,
        /// Bytes available.
        have: usize,
    },
    /// A field holds a value the format does not allow.
    BadField {
        /// Name of the field.
        field: &'static str,
        /// The value found.
        value: u32,
    },
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseError::Truncated { need, have } => {
                write!(f, "truncated: need {need} bytes, have {have}")
            }
            ParseError::BadField { field, value } => {
                write!(f, "bad value {value:#x} in field `{field}`")
            }
        }
    }
}

impl core::error::Error for ParseError {}
