//! Reader for the recv vector format.
