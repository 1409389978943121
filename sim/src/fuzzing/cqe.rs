//! Fuzz bodies for CQE parsing and mini-CQE expansion.
