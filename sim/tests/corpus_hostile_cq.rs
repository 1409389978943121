//! Replays the committed `hostile_cq` fuzz corpus through the fuzz body on
//! stable Rust (no libFuzzer needed).
use bareverbs_sim::fuzzing::corpus::replay_corpus;

#[test]
fn hostile_cq_corpus() {
    replay_corpus(
        "hostile_cq",
        10,
        bareverbs_sim::fuzzing::hostile::hostile_cq,
    );
}
