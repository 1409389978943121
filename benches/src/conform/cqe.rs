//! conform: cqe files.
