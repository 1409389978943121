//! conform: sizing files.
