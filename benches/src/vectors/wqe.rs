//! Reader for the wqe vector format.
