//! Replays every committed `fuzz/corpus/wqe_parse` input through the fuzz
//! body on stable Rust.

use bareverbs_sim::fuzzing::corpus::replay_corpus;

#[test]
fn corpus_wqe_parse_replays() {
    replay_corpus("wqe_parse", 50, bareverbs_sim::fuzzing::wqe::wqe_parse);
}

#[test]
fn edge_inputs_do_not_panic() {
    let body = bareverbs_sim::fuzzing::wqe::wqe_parse;
    body(&[]);
    body(&[0xff; 1]);
    body(&[0xff; 64]);
    body(&[0x00; 1024]);
    let mut b = [0u8; 64 * 4 + 4];
    b[4 + 7] = 63; // DS 63 in a 4-WQEBB ring: larger than the ring
    body(&b);
    b[4 + 7] = 0x3f | 0x40; // reserved DS bits
    body(&b);
}
