//! Replays the committed `fuzz/corpus/cmd_outbox` inputs through the fuzz
//! body on stable Rust, and (ignored) regenerates the hand-made seeds:
//! `BAREVERBS_WRITE_SEEDS=1 cargo test -p bareverbs-sim --test corpus_cmd -- --ignored`.

use bareverbs_sim::fuzzing::corpus::{corpus_dir, replay_corpus};
use bareverbs_sim::fw::default_caps;
use bareverbs_sim::fw::fuzz::cmd_outbox;
use std::path::PathBuf;

fn corpus() -> PathBuf {
    corpus_dir("cmd_outbox")
}

#[test]
fn cmd_outbox_corpus() {
    replay_corpus("cmd_outbox", 10, cmd_outbox);
}

fn cap_image() -> Vec<u8> {
    let mut c = vec![0u8; 256];
    default_caps().write(&mut c);
    c
}

/// Control byte + data for one command answer that carries `body` in the
/// output mailboxes (QUERY_HCA_CAP: 8 blocks).
fn with_mailboxes(body: &[u8]) -> Vec<u8> {
    let mut v = vec![0x20];
    let mut blocks = vec![0u8; 8 * 512];
    blocks[..body.len()].copy_from_slice(body);
    v.extend(blocks);
    v
}

fn eqe(num_pages: i32) -> Vec<u8> {
    let mut e = vec![0u8; 64];
    e[1] = 0x0b;
    e[36..40].copy_from_slice(&num_pages.to_be_bytes());
    e
}

/// Bring-up answers up to and including the post-init QUERY_HCA_CAP with
/// real capabilities (ENABLE_HCA … INIT_HCA, nine commands, answered with zeros).
fn bringup_with_caps() -> Vec<u8> {
    let mut v = vec![0u8];
    v.extend([0u8; 9]); // commands 1–9 answered with zeros
    v.extend(with_mailboxes(&cap_image()));
    v
}

#[test]
#[ignore = "writes the seed corpus"]
fn regenerate_seeds() {
    if std::env::var("BAREVERBS_WRITE_SEEDS").is_err() {
        return;
    }
    let d = corpus();
    std::fs::create_dir_all(&d).unwrap();
    let mut seeds: Vec<(&str, Vec<u8>)> = Vec::new();
    seeds.push(("empty", vec![0]));
    let mut p = vec![1u8];
    p.extend(cap_image());
    seeds.push(("parsers_caps", p));
    let mut p = vec![1u8];
    p.extend(eqe(7));
    seeds.push(("parsers_eqe_page_request", p));
    seeds.push(("hang_enable_hca", vec![0, 0x80]));
    seeds.push(("delivery_input_len", vec![0, 0x08, 0x0e]));
    seeds.push((
        "status_bad_param",
        vec![
            0, 0x40, 0x03, 0, 0, 0, 0x12, 0x34, 0x56, 0x78, 0, 0, 0, 0, 0, 0, 0, 0,
        ],
    ));
    seeds.push(("bringup_caps", bringup_with_caps()));
    let mut v = vec![0u8];
    v.extend([0u8; 9]); // commands 1–9 answered with zeros
    let mut m = with_mailboxes(&cap_image());
    m[0] = 0x30;
    m.push(2);
    m.extend([0xffu8; 16]);
    v.extend(m);
    seeds.push(("corrupt_mailbox_tail", v));
    // Page request and page return events after the EQ exists.
    for (name, n) in [("page_request_give", 4), ("page_request_take", -5)] {
        let mut v = bringup_with_caps();
        v.extend([0u8; 2]); // ALLOC_UAR, CREATE_EQ
        v.push(0x04);
        v.extend(eqe(n));
        seeds.push((name, v));
    }
    // QUERY_PAGES boot asks for 3 pages; a later TAKE returns garbage.
    let mut v = vec![0u8, 0, 0, 0x40];
    let mut h = [0u8; 16];
    h[0x0c..0x10].copy_from_slice(&3i32.to_be_bytes());
    v.extend(h);
    v.extend([0x20u8]);
    v.extend([0xabu8; 512]);
    seeds.push(("boot_pages_then_garbage", v));
    // Huge page demand (bounded by max_fw_pages in the fuzz config).
    let mut v = vec![0u8, 0, 0, 0x40];
    let mut h = [0u8; 16];
    h[0x0c..0x10].copy_from_slice(&i32::MAX.to_be_bytes());
    v.extend(h);
    seeds.push(("boot_pages_huge", v));
    for (name, data) in seeds {
        std::fs::write(d.join(name), data).unwrap();
    }
}
