//! conform: recv files.
