//! The codec layer's byte-level error, [`ParseError`], shared by the CQE
//! decoder ([`crate::cqe`]) and the WQE segment parsers ([`crate::wqe`]).
//!
//! Every layer has its own error type, each implementing
//! [`core::error::Error`] with [`source`](core::error::Error::source)
//! naming the lower-layer error it wraps:
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
//! A wrapping error's `Display` includes the wrapped error's message, so
//! the top error printed alone says everything (a reporter that also
//! walks `source()` shows the inner message again).

use core::fmt;

/// Displays an error followed by every error of its
/// [`source`](core::error::Error::source) chain, joined by `": "`:
/// the whole message of a chain whose errors each print their own part
/// (a context wrapper prints only its own part and returns the wrapped
/// error from `source()`). Needs no allocation.
///
/// ```
/// use bareverbs::cmd::initseg::InitSegError;
/// use bareverbs::cmd::queue::CmdqSetupError;
/// use bareverbs::error::Chain;
///
/// let e = CmdqSetupError::Geometry(InitSegError::TooFewSlots { log_sz: 0 });
/// assert_eq!(e.to_string(), "unusable command queue geometry");
/// assert_eq!(
///     Chain::new(&e).to_string(),
///     "unusable command queue geometry: 2^0 command slots, at least 2 are needed"
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
