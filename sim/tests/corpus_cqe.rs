//! Replays the committed CQE fuzz corpora through the fuzz bodies on
//! stable Rust (no libFuzzer needed).
use bareverbs_sim::fuzzing::corpus::replay_corpus;

#[test]
fn cqe_parse_corpus() {
    replay_corpus("cqe_parse", 10, bareverbs_sim::fuzzing::cqe::cqe_parse);
}

#[test]
fn mini_cqe_expand_corpus() {
    replay_corpus(
        "mini_cqe_expand",
        10,
        bareverbs_sim::fuzzing::cqe::mini_cqe_expand,
    );
}
