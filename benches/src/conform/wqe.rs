//! conform: wqe files.
