//! Replaying a committed fuzz corpus (`fuzz/corpus/<target>/`) through its
//! fuzz body on stable Rust: the one loop the corpus tests of this crate
//! and of `bareverbs-conformance` share. It lives beside the fuzz bodies
//! because every crate that replays a corpus already depends on this one
//! (the conformance crate for its simulator), so no new dependency edge is
//! needed.

use std::path::{Path, PathBuf};

/// The directory of the committed corpus of fuzz target `target`.
pub fn corpus_dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/corpus")
        .join(target)
}

/// Runs `body` on every file of `target`'s corpus, in name order, and
/// returns how many there were.
///
/// # Panics
/// When the directory or a file cannot be read, when `body` panics (the
/// failure the replay looks for), or when the corpus has fewer than
/// `min_files` files (a corpus that went missing is not a pass).
pub fn replay_corpus(target: &str, min_files: usize, mut body: impl FnMut(&[u8])) -> usize {
    let d = corpus_dir(target);
    let mut entries: Vec<_> = std::fs::read_dir(&d)
        .unwrap_or_else(|e| panic!("corpus {} missing: {e}", d.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    entries.sort();
    for p in &entries {
        body(&std::fs::read(p).unwrap());
    }
    assert!(
        entries.len() >= min_files,
        "corpus {} has only {} files",
        d.display(),
        entries.len()
    );
    entries.len()
}
