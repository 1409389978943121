//! conform: recv files (RQ and SRQ).
//!
//! Comparison only: the receive post path is behind [`RecvExecutor`]. Each
//! case runs twice like the generator: ring as left by the prep
//! (`ring_fill = None`), then with the ring overwritten by `0xA5` just
//! before the post (`ring_fill = Some(0xA5)`; for an SRQ every WQE is
//! overwritten except bytes 2..3, the free-list link). Written bytes must
//! match (run 1); `u` bytes and bytes outside the dumped slots must still be
//! the fill (run 2; SRQ link bytes outside the dumped slots are not
//! checked); ret/bad_wr, head, tail, counter, dbrec, free bitmap and the
//! wrid table are compared in both runs.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};

use crate::vectors::recv::{read_recv_file, RecvCase, RecvKind};

/// Fill of the ring in the second run (the same fill as the wqe check's).
pub use super::wqe::RING_FILL;

/// What one receive post produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecvOutcome {
    /// Return value (0 or errno number).
    pub ret: i32,
    /// Index of the bad WR when `ret != 0`.
    pub bad_wr: Option<usize>,
    /// rq.head / srq.head after.
    pub head: u32,
    /// SRQ: srq.tail after (`None` for an RQ).
    pub tail: Option<u32>,
    /// SRQ: srq.counter after (`None` for an RQ).
    pub counter: Option<u32>,
    /// Doorbell record bytes after (4 bytes, memory order).
    pub dbrec: Vec<u8>,
    /// The whole RQ ring / SRQ buffer after the post.
    pub ring: Vec<u8>,
    /// rq.wrid[] / srq.wrid[] (length = slots).
    pub wrid: Vec<u64>,
    /// SRQ: set bits of free_wqe_bitmap after (`None` = not reported).
    pub free_bitmap: Option<Vec<u32>>,
}

/// The receive post path under test.
pub trait RecvExecutor {
    /// Builds a fresh RQ (`case.rq`) or SRQ (`case.srq`), runs the setup
    /// (`case.prep`, reaching the `*_before` state), applies `ring_fill`
    /// (RQ: whole ring; SRQ: every WQE except bytes 2..3), posts `case.wrs`
    /// in one call and reports the outcome.
    fn execute(&mut self, case: &RecvCase, ring_fill: Option<u8>) -> Result<RecvOutcome>;
}

/// Default executor until the receive post path is merged: always errors.
#[derive(Debug, Default)]
pub struct PendingRecvExecutor;

impl RecvExecutor for PendingRecvExecutor {
    fn execute(&mut self, _: &RecvCase, _: Option<u8>) -> Result<RecvOutcome> {
        anyhow::bail!("post path not merged yet")
    }
}

/// Runs one case (two executions) and compares; `Err` = first difference.
pub fn check_recv_case(
    case: &RecvCase,
    exec: &mut dyn RecvExecutor,
) -> std::result::Result<(), String> {
    let a = exec
        .execute(case, None)
        .map_err(|e| format!("executor error: {e:#}"))?;
    let b = exec
        .execute(case, Some(RING_FILL))
        .map_err(|e| format!("executor error (0xA5 run): {e:#}"))?;
    compare_recv(case, &a, &b)
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn check_scalars(case: &RecvCase, o: &RecvOutcome) -> std::result::Result<(), String> {
    let r = &case.result;
    if o.ret != r.ret {
        return Err(format!(
            "ret={} expected {}{}",
            o.ret,
            r.ret,
            r.errno
                .as_deref()
                .map(|e| format!(" ({e})"))
                .unwrap_or_default()
        ));
    }
    if r.ret != 0 && o.bad_wr != r.bad_wr {
        return Err(format!("bad_wr={:?} expected {:?}", o.bad_wr, r.bad_wr));
    }
    let q = if case.kind == RecvKind::Srq {
        "srq"
    } else {
        "rq"
    };
    if o.head != case.head_after {
        return Err(format!(
            "{q}.head after={} expected {}",
            o.head, case.head_after
        ));
    }
    if let Some(t) = case.tail_after {
        if o.tail != Some(t) {
            return Err(format!("srq.tail after={:?} expected {t}", o.tail));
        }
    }
    if let Some(c) = case.counter_after {
        if o.counter != Some(c) {
            return Err(format!("srq.counter after={:?} expected {c}", o.counter));
        }
    }
    if let Some(d) = &case.dbrec_after {
        if &o.dbrec != d {
            return Err(format!("dbrec bytes {} expected {}", hex(&o.dbrec), hex(d)));
        }
    }
    if let (Some(exp), Some(got)) = (&case.free_bitmap_after, &o.free_bitmap) {
        let mut g = got.clone();
        g.sort_unstable();
        if &g != exp {
            return Err(format!("free_wqe_bitmap set bits {g:?} expected {exp:?}"));
        }
    }
    Ok(())
}

/// Compares the two runs' outcomes against the case.
pub fn compare_recv(
    case: &RecvCase,
    plain: &RecvOutcome,
    filled: &RecvOutcome,
) -> std::result::Result<(), String> {
    for (run, o) in [("", plain), (" (0xA5 run)", filled)] {
        check_scalars(case, o).map_err(|e| format!("{e}{run}"))?;
    }
    let n = case.ring_bytes();
    for (run, o) in [("", plain), (" (0xA5 run)", filled)] {
        if o.ring.len() != n {
            return Err(format!("ring is {} bytes, expected {n}{run}", o.ring.len()));
        }
    }
    let q = if case.kind == RecvKind::Srq {
        "srq"
    } else {
        "rq"
    };
    let mut covered = vec![false; n];
    for w in &case.wqes {
        for l in &w.lines {
            for (i, (&exp, &u)) in l.bytes.iter().zip(&l.unwritten).enumerate() {
                let at = l.ring as usize + i;
                let where_ = || {
                    format!(
                        "ring byte 0x{at:04x} (WQE[{}] at {q} index {} +{:03x})",
                        w.index,
                        w.slot,
                        l.rel as usize + i
                    )
                };
                if at >= n {
                    return Err(format!("{} outside the {n}-byte ring", where_()));
                }
                covered[at] = true;
                if u {
                    if filled.ring[at] != RING_FILL {
                        return Err(format!(
                            "{}: written (0x{:02x}) but the provider leaves it unwritten",
                            where_(),
                            filled.ring[at]
                        ));
                    }
                } else if plain.ring[at] != exp {
                    return Err(format!(
                        "{}: got 0x{:02x}, expected 0x{exp:02x}",
                        where_(),
                        plain.ring[at]
                    ));
                }
            }
        }
    }
    let wqe_size = case.wqe_size().max(1);
    let is_link = |i: usize| case.kind == RecvKind::Srq && matches!(i % wqe_size, 2 | 3);
    if let Some(at) = (0..n).find(|&i| !covered[i] && !is_link(i) && filled.ring[i] != RING_FILL) {
        return Err(format!(
            "ring byte 0x{at:04x} ({q} index {}) outside every posted WQE was written (0x{:02x})",
            at / wqe_size,
            filled.ring[at]
        ));
    }
    let slots = case.slots();
    for o in [plain, filled] {
        if o.wrid.len() != slots {
            return Err(format!(
                "{q}.wrid has {} entries, expected {slots}",
                o.wrid.len()
            ));
        }
    }
    for w in &case.wqes {
        let i = w.slot as usize;
        let Some(&got) = plain.wrid.get(i) else {
            return Err(format!("WQE slot {i} is outside the {slots} {q} slots"));
        };
        if got != w.wrid {
            return Err(format!(
                "{q}.wrid[{i}] = 0x{got:x}, expected 0x{:x}",
                w.wrid
            ));
        }
    }
    Ok(())
}

/// Replays one recv vector file: one `PASS`/`FAIL` line per case.
/// Returns `(passed, failed)`.
pub fn run_recv_file(
    path: &Path,
    out: &mut dyn Write,
    exec: &mut dyn RecvExecutor,
) -> Result<(usize, usize)> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    run_recv_text(&path.display().to_string(), &text, out, exec)
}

/// [`run_recv_file`] on a file's text; `name` labels the report lines.
pub fn run_recv_text(
    name: &str,
    text: &str,
    out: &mut dyn Write,
    exec: &mut dyn RecvExecutor,
) -> Result<(usize, usize)> {
    let path = name;
    let file = read_recv_file(text).with_context(|| format!("parsing {name}"))?;
    let (mut pass, mut fail) = (0, 0);
    for case in &file.cases {
        match check_recv_case(case, exec) {
            Ok(()) => {
                pass += 1;
                writeln!(out, "PASS {} vector {}: {}", path, case.number, case.title)?;
            }
            Err(e) => {
                fail += 1;
                writeln!(
                    out,
                    "FAIL {} vector {}: {}: {}",
                    path, case.number, case.title, e
                )?;
            }
        }
    }
    Ok((pass, fail))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::conform::wqe::tests::load;
    use crate::vectors::recv::{RecvPrep, SrqPrepOp};

    /// Replays the expected bytes parsed from the file itself.
    #[derive(Default)]
    pub struct ReplayRecv {
        /// Flip this ring byte (run 1) of the n-th case.
        pub flip: Option<(usize, usize)>,
        seen: usize,
    }

    impl RecvExecutor for ReplayRecv {
        fn execute(&mut self, case: &RecvCase, ring_fill: Option<u8>) -> Result<RecvOutcome> {
            let mut ring = vec![ring_fill.unwrap_or(0); case.ring_bytes()];
            for w in &case.wqes {
                for l in &w.lines {
                    for (i, (&b, &u)) in l.bytes.iter().zip(&l.unwritten).enumerate() {
                        if ring_fill.is_none() || !u {
                            ring[l.ring as usize + i] = b;
                        }
                    }
                }
            }
            if ring_fill.is_none() {
                if let Some((k, at)) = self.flip {
                    if k == self.seen {
                        ring[at] ^= 0x80;
                    }
                }
                self.seen += 1;
            }
            let mut wrid = vec![0; case.slots()];
            for w in &case.wqes {
                wrid[w.slot as usize] = w.wrid;
            }
            let dbrec = case
                .dbrec_after
                .clone()
                .unwrap_or_else(|| case.dbrec_before.unwrap_or(0).to_be_bytes().to_vec());
            Ok(RecvOutcome {
                ret: case.result.ret,
                bad_wr: case.result.bad_wr,
                head: case.head_after,
                tail: case.tail_after,
                counter: case.counter_after,
                dbrec,
                ring,
                wrid,
                free_bitmap: case.free_bitmap_after.clone(),
            })
        }
    }

    const FILES: [&str; 2] = ["recv_vectors.txt", "recv_random_visible.txt"];

    /// A case naming a ring or a setup larger than any device allows is
    /// refused when the file is read, before the replay allocates or loops
    /// (a fuzzed file once made the replay allocate 4 GiB).
    #[test]
    fn oversized_rings_and_setups_are_refused() {
        let (_, t) = load("recv_vectors.txt");
        let f = read_recv_file(&t).unwrap();
        let rq = f.cases.iter().find(|c| c.rq.is_some()).unwrap();
        let g = rq.rq.as_ref().unwrap();
        assert!(rq.check_bounds().is_ok());
        let header = rq
            .raw
            .lines()
            .find(|l| l.trim().starts_with("QP:"))
            .unwrap();
        let big = header
            .replace(&format!("rq.wqe_cnt={} ", g.wqe_cnt), "rq.wqe_cnt=65536 ")
            .replace(
                &format!("rq.wqe_shift={};", g.wqe_shift),
                "rq.wqe_shift=10;",
            );
        assert_ne!(big, header);
        let text = t.replacen(header, &big, 1);
        let e = read_recv_file(&text).unwrap_err();
        assert!(
            format!("{e:#}").contains("more than 33554432 bytes"),
            "{e:#}"
        );
        // 65536 slots of 512 bytes is the largest ring: accepted.
        let ok = big.replace("rq.wqe_shift=10;", "rq.wqe_shift=9;");
        let c = read_recv_file(&t.replacen(header, &ok, 1)).unwrap();
        assert!(c.cases[0].check_bounds().is_ok());

        let cycles = f
            .cases
            .iter()
            .find(|c| matches!(c.prep, Some(RecvPrep::SrqCycles { .. })))
            .unwrap();
        let Some(RecvPrep::SrqCycles { cycles: n, .. }) = cycles.prep else {
            unreachable!()
        };
        let note = format!("prep: {n} x {{");
        assert!(t.contains(&note));
        let e = read_recv_file(&t.replacen(&note, "prep: 131073 x {", 1)).unwrap_err();
        assert!(format!("{e:#}").contains("131073 filler posts"), "{e:#}");
        assert!(read_recv_file(&t.replacen(&note, "prep: 131072 x {", 1)).is_ok());
    }

    #[test]
    fn reader_parses_every_case() {
        for name in FILES {
            let (_, t) = load(name);
            let f = read_recv_file(&t).unwrap();
            let headers = t
                .lines()
                .filter(|l| l.trim_start().starts_with("=== "))
                .count();
            let srq_headers = t
                .lines()
                .filter(|l| l.trim_start().starts_with("=== SRQ VECTOR"))
                .count();
            assert!(headers > 0);
            assert_eq!(f.cases.len(), headers, "{name}");
            assert_eq!(
                f.cases.iter().filter(|c| c.kind == RecvKind::Srq).count(),
                srq_headers,
                "{name}"
            );
            for c in &f.cases {
                assert!(
                    c.unknown_lines.is_empty(),
                    "{name} vector {}: {:?}",
                    c.number,
                    c.unknown_lines
                );
                if c.note.is_some() {
                    assert!(
                        c.prep.is_some(),
                        "{name} vector {}: NOTE not understood",
                        c.number
                    );
                }
                for w in &c.wqes {
                    let bytes: usize = w.lines.iter().map(|l| l.bytes.len()).sum();
                    assert!(bytes <= c.wqe_size(), "{name} vector {}", c.number);
                }
                assert!(
                    c.dbrec_after.is_some() || c.result.ret != 0,
                    "{name} vector {}",
                    c.number
                );
            }
            eprintln!("{name}: {} cases ({} SRQ)", f.cases.len(), srq_headers);
        }
    }

    #[test]
    fn reader_details() {
        let (_, t) = load("recv_vectors.txt");
        let f = read_recv_file(&t).unwrap();
        let rq = |n: u32| {
            f.cases
                .iter()
                .find(|c| c.kind == RecvKind::Rq && c.number == n)
                .unwrap()
        };
        let srq = |n: u32| {
            f.cases
                .iter()
                .find(|c| c.kind == RecvKind::Srq && c.number == n)
                .unwrap()
        };
        let c = rq(26);
        assert!(matches!(
            c.prep,
            Some(RecvPrep::RqFillers {
                completed: 6,
                outstanding: 0,
                head: Some(6),
                tail: Some(6),
                ..
            })
        ));
        assert_eq!(
            c.wqes.iter().map(|w| w.slot).collect::<Vec<_>>(),
            vec![6, 7, 0, 1]
        );
        let c = rq(28);
        assert!(matches!(
            c.prep,
            Some(RecvPrep::RqFillers {
                completed: 0,
                outstanding: 8,
                head: Some(8),
                tail: Some(0),
                ..
            })
        ));
        let c = srq(10);
        match &c.prep {
            Some(RecvPrep::SrqOps {
                ops,
                counter,
                head,
                tail,
                filler,
            }) => {
                assert_eq!(ops.len(), 16);
                assert_eq!(ops[15], SrqPrepOp::Free(0));
                assert_eq!((*counter, *head, *tail), (Some(15), Some(15), Some(15)));
                assert_eq!(filler.as_ref().unwrap().wr_id, 0xf333);
            }
            o => panic!("{o:?}"),
        }
        assert_eq!(c.free_bitmap_before, Some(vec![0]));
        let c = srq(20);
        assert!(matches!(
            c.prep,
            Some(RecvPrep::SrqCycles {
                cycles: 65534,
                counter: Some(65534),
                head: Some(14),
                tail: Some(14),
                ..
            })
        ));
        assert_eq!((c.counter_before, c.counter_after), (Some(65534), Some(1)));
        let c = srq(18);
        assert_eq!(c.srq.as_ref().unwrap().waitq_head, -1);
    }

    #[test]
    fn replay_passes_everything() {
        for name in FILES {
            let (p, _) = load(name);
            let mut out = Vec::new();
            let (pass, fail) = run_recv_file(&p, &mut out, &mut ReplayRecv::default()).unwrap();
            let s = String::from_utf8(out).unwrap();
            assert_eq!(fail, 0, "{s}");
            assert!(pass > 0);
        }
    }

    #[test]
    fn flipped_byte_fails_naming_it() {
        let (p, t) = load("recv_vectors.txt");
        let f = read_recv_file(&t).unwrap();
        let k = f.cases.iter().position(|c| !c.wqes.is_empty()).unwrap();
        let mut ex = ReplayRecv {
            flip: Some((k, f.cases[k].wqes[0].offset as usize + 4)),
            seen: 0,
        };
        let mut out = Vec::new();
        let (_, fail) = run_recv_file(&p, &mut out, &mut ex).unwrap();
        let s = String::from_utf8(out).unwrap();
        assert_eq!(fail, 1, "{s}");
        let line = s.lines().find(|l| l.starts_with("FAIL")).unwrap();
        assert!(
            line.contains(&format!(
                "ring byte 0x{:04x}",
                f.cases[k].wqes[0].offset + 4
            )),
            "{line}"
        );
    }

    #[test]
    fn comparator_catches_mistakes() {
        let (_, t) = load("recv_vectors.txt");
        let f = read_recv_file(&t).unwrap();
        let mut ex = ReplayRecv::default();
        let c = f
            .cases
            .iter()
            .find(|c| c.kind == RecvKind::Srq && c.number == 1)
            .unwrap();
        let a = ex.execute(c, None).unwrap();
        let b = ex.execute(c, Some(RING_FILL)).unwrap();
        assert_eq!(compare_recv(c, &a, &b), Ok(()));
        let mut b2 = b.clone();
        b2.ring[0x30] = 0;
        assert!(compare_recv(c, &a, &b2).unwrap_err().contains("0x0030"));
        let mut b3 = b.clone();
        b3.ring[0x42] = 0; // link bytes of an untouched slot are not checked
        assert_eq!(compare_recv(c, &a, &b3), Ok(()));
        b3.ring[0x44] = 0;
        assert!(compare_recv(c, &a, &b3)
            .unwrap_err()
            .contains("outside every posted WQE"));
        let mut a2 = a.clone();
        a2.counter = Some(2);
        assert!(compare_recv(c, &a2, &b)
            .unwrap_err()
            .contains("srq.counter"));
    }
}
