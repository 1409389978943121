//! Queue sizing (FACTS §3).
