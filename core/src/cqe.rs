//! CQE formats (FACTS §5).
