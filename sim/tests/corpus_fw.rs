//! Replays the committed `fuzz/corpus/fw_commands` inputs and the generated
//! seeds through the `fw_commands` fuzz body on stable Rust.
//! `cargo test -p bareverbs-sim --test corpus_fw -- --ignored` rewrites the
//! generated seeds into the corpus directory.

use bareverbs_sim::fuzzing::corpus::corpus_dir;
use bareverbs_sim::fuzzing::fw::{fw_commands, fw_commands_run, seeds};
use std::path::PathBuf;

fn dir() -> PathBuf {
    corpus_dir("fw_commands")
}

#[test]
fn seeds_run_a_whole_object_life_cycle_without_a_failing_command() {
    let s = seeds();
    assert_eq!(s.len(), 2);
    for seed in &s {
        let r = fw_commands_run(seed);
        // PD, mkey, CQ, QP, three transitions, QUERY_QP, 2ERR, 2RST,
        // DESTROY_QP, DESTROY_CQ: 12 commands, all accepted; 1 doorbell.
        assert_eq!((r.ok, r.failed, r.doorbells), (12, 0, 1), "{r:?}");
    }
}

#[test]
fn corpus_and_mutations_never_panic() {
    let mut inputs = seeds();
    if let Ok(rd) = std::fs::read_dir(dir()) {
        for e in rd.flatten() {
            if let Ok(b) = std::fs::read(e.path()) {
                inputs.push(b);
            }
        }
    }
    // Truncations and byte flips of the seeds.
    let s0 = seeds().remove(0);
    for cut in (0..s0.len()).step_by(37) {
        inputs.push(s0[..cut].to_vec());
    }
    for i in (256..s0.len()).step_by(11) {
        let mut m = s0.clone();
        m[i] ^= 0xff;
        inputs.push(m);
    }
    for i in &inputs {
        fw_commands(i);
    }
}

#[test]
#[ignore = "writes the generated seeds into fuzz/corpus/fw_commands"]
fn write_seeds() {
    std::fs::create_dir_all(dir()).unwrap();
    for (i, s) in seeds().iter().enumerate() {
        std::fs::write(dir().join(format!("seed-{i}")), s).unwrap();
    }
}
