//! `bareverbs decode cqe`.
