//! `bareverbs decode wqe`.
