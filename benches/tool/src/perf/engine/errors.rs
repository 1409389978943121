//! The engine's typed refusals: a QP the device cannot create
//! ([`QpRejected`]) and a run needing more memory than the backend allows
//! ([`TooMuchMemory`]).

use std::fmt;

/// The QP a run asks for cannot be created on this device; the text is
/// the sizing error's (or the device's refusal).
#[derive(Debug)]
pub struct QpRejected(pub String);

impl fmt::Display for QpRejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "QP creation fails: {}", self.0)
    }
}

impl std::error::Error for QpRejected {}

/// The run needs more memory than the backend allows (a typed refusal,
/// before anything is allocated).
#[derive(Debug)]
pub struct TooMuchMemory {
    /// Bytes the run would need.
    pub need: u64,
    /// Bytes the backend allows.
    pub limit: u64,
    /// What needs it.
    pub what: String,
}

impl fmt::Display for TooMuchMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} needs about {} MiB of queue and buffer memory, more than the {} MiB this backend allows",
            self.what,
            self.need.div_ceil(1 << 20),
            self.limit >> 20
        )
    }
}

impl std::error::Error for TooMuchMemory {}
