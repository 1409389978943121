//! Replays every committed `fuzz/corpus/wqe_parse` input through the fuzz
//! body on stable Rust.

use std::path::Path;

#[test]
fn corpus_wqe_parse_replays() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus/wqe_parse");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).expect("corpus directory") {
        let p = e.unwrap().path();
        if p.is_file() {
            let data = std::fs::read(&p).unwrap();
            bareverbs_sim::fuzzing::wqe::wqe_parse(&data);
            n += 1;
        }
    }
    assert!(n >= 50, "only {n} corpus files in {}", dir.display());
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
