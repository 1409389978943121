//! Queue pair types and the QP state machine (FACTS §6).

pub use crate::sizing::QpType;
