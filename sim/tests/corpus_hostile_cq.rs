//! Replays the committed `hostile_cq` fuzz corpus through the fuzz body on
//! stable Rust (no libFuzzer needed).
use std::path::Path;

#[test]
fn hostile_cq_corpus() {
    let d = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus/hostile_cq");
    let mut entries: Vec<_> = std::fs::read_dir(&d)
        .unwrap_or_else(|e| panic!("corpus {} missing: {e}", d.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    entries.sort();
    for p in &entries {
        bareverbs_sim::fuzzing::hostile::hostile_cq(&std::fs::read(p).unwrap());
    }
    assert!(
        entries.len() >= 10,
        "corpus has only {} files",
        entries.len()
    );
}
