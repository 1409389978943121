//! conform: sizing files.

use std::io::Write;
use std::path::Path;

/// Replays a sizing CSV (QP, CQ or SRQ sizing).
///
/// TEMPORARY PLACEHOLDER (branch `vectors`): the real runner is written on
/// another branch and replaces this body on merge.
pub fn run_sizing_csv(path: &Path, out: &mut dyn Write) -> anyhow::Result<(usize, usize)> {
    let _ = out;
    anyhow::bail!("sizing conform runner not merged yet ({})", path.display())
}
