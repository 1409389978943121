//! Fuzz bodies for WQE parsing.
