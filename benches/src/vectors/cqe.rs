//! Reader for the cqe vector format.
