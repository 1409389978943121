//! conform: cqe files.

use std::io::Write;
use std::path::Path;

/// Replays a CQE vector file.
///
/// TEMPORARY PLACEHOLDER (branch `vectors`): the real runner is written on
/// another branch and replaces this body on merge.
pub fn run_cqe_file(path: &Path, out: &mut dyn Write) -> anyhow::Result<(usize, usize)> {
    let _ = out;
    anyhow::bail!("cqe conform runner not merged yet ({})", path.display())
}
