//! Replays the committed `vector_files` fuzz corpus through the fuzz body
//! on stable Rust (no libFuzzer needed): every file gives a report or an
//! error, never a panic.
use bareverbs_sim::fuzzing::corpus::replay_corpus;

#[test]
fn vector_files_corpus() {
    replay_corpus(
        "vector_files",
        10,
        bareverbs_conformance::conform::fuzz::vector_files,
    );
}
