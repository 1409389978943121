//! Replays the committed `vector_files` fuzz corpus through the fuzz body
//! on stable Rust (no libFuzzer needed): every file gives a report or an
//! error, never a panic.
use std::path::Path;

#[test]
fn vector_files_corpus() {
    let d = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus/vector_files");
    let mut entries: Vec<_> = std::fs::read_dir(&d)
        .unwrap_or_else(|e| panic!("corpus {} missing: {e}", d.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    entries.sort();
    for p in &entries {
        bareverbs_conformance::conform::fuzz::vector_files(&std::fs::read(p).unwrap());
    }
    assert!(
        entries.len() >= 10,
        "corpus has only {} files",
        entries.len()
    );
}
