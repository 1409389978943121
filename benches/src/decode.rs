//! `bareverbs decode wqe|cqe HEX`: human and JSON views of WQEs and CQEs.
