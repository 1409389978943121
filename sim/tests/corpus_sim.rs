//! Replays the committed `fuzz/corpus/sim_rings` inputs and a set of
//! generated seeds through the `sim_rings` fuzz body on stable Rust.
//! `cargo test -p bareverbs-sim --test corpus_sim -- --ignored` rewrites
//! the generated seeds into the corpus directory.

use bareverbs_sim::fuzzing::corpus::{corpus_dir, replay_corpus};
use bareverbs_sim::fuzzing::rings::{layout, sim_rings};
use std::path::PathBuf;

fn dir() -> PathBuf {
    corpus_dir("sim_rings")
}

/// Control segment per [ref §1.2](bareverbs::reference).
fn ctrl(idx: u16, opcode: u8, qpn: u32, ds: u8, fm_ce_se: u8, imm: u32) -> Vec<u8> {
    let mut c = Vec::new();
    c.extend_from_slice(&(((idx as u32) << 8) | opcode as u32).to_be_bytes());
    c.extend_from_slice(&((qpn << 8) | ds as u32).to_be_bytes());
    c.extend_from_slice(&[0, 0, 0, fm_ce_se]);
    c.extend_from_slice(&imm.to_be_bytes());
    c
}

fn data_seg(len: u32, key: u32, addr: u64) -> Vec<u8> {
    let mut v = len.to_be_bytes().to_vec();
    v.extend_from_slice(&key.to_be_bytes());
    v.extend_from_slice(&addr.to_be_bytes());
    v
}

fn raddr(addr: u64, key: u32) -> Vec<u8> {
    let mut v = addr.to_be_bytes().to_vec();
    v.extend_from_slice(&key.to_be_bytes());
    v.extend_from_slice(&[0; 4]);
    v
}

/// Valid and subtly broken inputs built from the real layout.
fn seeds() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for head in [0u8, 1, 2, 0x40, 0x80, 0x38] {
        let Some((abuf, lkey, bbuf, rkey, aq, _bq)) = layout(head) else {
            continue;
        };
        let ops: Vec<(u8, Vec<u8>)> = vec![
            (
                0x08,
                [
                    ctrl(0, 0x08, aq, 3, 8, 0),
                    raddr(bbuf, rkey),
                    data_seg(64, lkey, abuf),
                ]
                .concat(),
            ),
            (
                0x0a,
                [ctrl(0, 0x0a, aq, 2, 8, 0), data_seg(32, lkey, abuf)].concat(),
            ),
            (
                0x10,
                [
                    ctrl(0, 0x10, aq, 3, 8, 0),
                    raddr(bbuf + 64, rkey),
                    data_seg(100, lkey, abuf),
                ]
                .concat(),
            ),
            (
                0x12,
                [
                    ctrl(0, 0x12, aq, 4, 8, 0),
                    raddr(bbuf + 8, rkey),
                    5u64.to_be_bytes().to_vec(),
                    vec![0; 8],
                    data_seg(8, lkey, abuf),
                ]
                .concat(),
            ),
            (
                0x0b,
                [ctrl(0, 0x0b, aq, 3, 8, 7), {
                    let mut v = (0x8000_0000u32 | 20).to_be_bytes().to_vec();
                    v.extend_from_slice(&[0x61; 28]);
                    v
                }]
                .concat(),
            ),
            (
                0x09,
                [
                    ctrl(0, 0x09, aq, 3, 0, 9),
                    raddr(bbuf, rkey ^ 1),
                    data_seg(16, lkey, abuf),
                ]
                .concat(),
            ),
            (0x07, ctrl(0, 0x07, aq, 1, 8, 0)),
            (0x0a, ctrl(0, 0x0a, aq, 0, 8, 0)),
        ];
        for (i, (_op, wqe)) in ops.into_iter().enumerate() {
            let mut v = vec![head];
            let mut sq = wqe.clone();
            sq.resize(256, 0);
            v.extend_from_slice(&sq);
            // RQ rings: one receive each pointing at a's buffer.
            let mut rq = data_seg(256, lkey, abuf + 1024);
            rq.resize(64, 0);
            v.extend_from_slice(&rq);
            v.extend_from_slice(&rq);
            let bbs = (wqe.len() as u16).div_ceil(64).max(1);
            // Record: receive doorbells, then the send doorbell, then run.
            v.extend_from_slice(&[3, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
            let mut rec = vec![if i % 2 == 0 { 0 } else { 2 }];
            rec.extend_from_slice(&bbs.to_be_bytes());
            rec.extend_from_slice(&wqe[..8]);
            rec.push(0);
            v.extend_from_slice(&rec);
            v.extend_from_slice(&[7; 12]);
            out.push(v);
        }
    }
    out
}

#[test]
fn generated_seeds_do_not_panic() {
    for s in seeds() {
        sim_rings(&s);
    }
}

#[test]
fn corpus_sim_rings_replays() {
    replay_corpus("sim_rings", 20, sim_rings);
}

#[test]
fn edge_inputs_do_not_panic() {
    sim_rings(&[]);
    sim_rings(&[0xff; 1]);
    sim_rings(&[0xff; 4096]);
    sim_rings(&[0x00; 4096]);
    let mut v = vec![0u8; 1 + 256 + 128];
    v[8] = 63;
    v.extend_from_slice(&[0, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 1, 0x3f, 0]);
    sim_rings(&v);
}

#[test]
#[ignore]
fn write_seed_corpus() {
    std::fs::create_dir_all(dir()).unwrap();
    for (i, s) in seeds().into_iter().enumerate() {
        std::fs::write(dir().join(format!("seed-{i:03}")), s).unwrap();
    }
}
