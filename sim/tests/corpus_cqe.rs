//! Replays the committed CQE fuzz corpora through the fuzz bodies on
//! stable Rust (no libFuzzer needed).
use std::path::Path;

fn replay(dir: &str, body: fn(&[u8])) {
    let d = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/corpus")
        .join(dir);
    let mut n = 0;
    let mut entries: Vec<_> = std::fs::read_dir(&d)
        .unwrap_or_else(|e| panic!("corpus {} missing: {e}", d.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    entries.sort();
    for p in entries {
        let data = std::fs::read(&p).unwrap();
        body(&data);
        n += 1;
    }
    assert!(n >= 10, "corpus {} has only {n} files", d.display());
}

#[test]
fn cqe_parse_corpus() {
    replay("cqe_parse", bareverbs_sim::fuzzing::cqe::cqe_parse);
}

#[test]
fn mini_cqe_expand_corpus() {
    replay(
        "mini_cqe_expand",
        bareverbs_sim::fuzzing::cqe::mini_cqe_expand,
    );
}
