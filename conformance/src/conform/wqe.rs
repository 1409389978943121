//! conform: wqe files.
//!
//! Comparison only: the post itself is behind [`WqeExecutor`]. Each case is
//! executed twice, as the generator did:
//!
//! 1. ring as left by a fresh zero-filled QP plus the prep posts
//!    (`ring_fill = None`), UAR/BF register pre-filled with `0xEE`;
//! 2. ring overwritten with `0xA5` just before the post
//!    (`ring_fill = Some(0xA5)`), UAR/BF register pre-filled with `0x11`.
//!
//! Checks: bytes marked written have the printed value (run 1); bytes
//! marked `u` and every ring byte outside the listed WQE blocks are still
//! the fill (run 2); return value/bad_wr, cur_post, head, dbrec, doorbell
//! kind/offset/bytes (both runs), bf offset, wrid/wqe_head/wr_data.
//!
//! Failed-WR blocks: the provider may leave partial bytes there. bareverbs
//! may leave each byte untouched (writing nothing is always fine) or write
//! the value the provider wrote for a byte marked written; it must not touch
//! a byte marked `u`. The README's rule is honoured too: a doorbell after a
//! later WR fails must describe the last WQE actually posted.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};

use crate::vectors::wqe::{read_wqe_file, Doorbell, WqeCase, WqeHeader};

/// Fill of the ring in the second run.
pub const RING_FILL: u8 = 0xA5;
/// UAR/BF register fill in the first run.
pub const UAR_FILL_1: u8 = 0xEE;
/// UAR/BF register fill in the second run.
pub const UAR_FILL_2: u8 = 0x11;

/// Kind of a recorded doorbell write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DoorbellKind {
    /// 8-byte `mmio_write64_be` of the first 8 bytes of the ctrl segment.
    Db8,
    /// BlueFlame copy of the WQE.
    BlueFlame,
}

/// One recorded write to the UAR/BF register.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DoorbellWrite {
    /// DB or BlueFlame.
    pub kind: DoorbellKind,
    /// Offset in the BF register.
    pub offset: u32,
    /// Bytes written, in memory order.
    pub bytes: Vec<u8>,
}

/// What the executor observed at the doorbell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DoorbellObs {
    /// The whole UAR/BF register image after the post (pre-filled with the
    /// `uar_fill` byte passed to [`WqeExecutor::execute`]).
    Register(Vec<u8>),
    /// The writes made to the register, in order (empty = none).
    Recorded(Vec<DoorbellWrite>),
}

/// What one post produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WqeOutcome {
    /// Return value: 0 or an errno number (ENOMEM 12, EINVAL 22…).
    pub ret: i32,
    /// Index of the WR reported as bad (when `ret != 0`).
    pub bad_wr: Option<usize>,
    /// `sq.cur_post` after (WQEBB units, free-running).
    pub cur_post: u32,
    /// `sq.head` after (WR count).
    pub head: u32,
    /// Send doorbell record bytes after (4 bytes, memory order).
    pub dbrec: Vec<u8>,
    /// Doorbell observation.
    pub doorbell: DoorbellObs,
    /// `bf->offset` after.
    pub bf_offset: u32,
    /// The whole SQ ring after the post (`sq.wqe_cnt * 64` bytes).
    pub ring: Vec<u8>,
    /// `sq.wrid[]` (length `sq.wqe_cnt`).
    pub wrid: Vec<u64>,
    /// `sq.wqe_head[]`.
    pub wqe_head: Vec<u64>,
    /// `sq.wr_data[]`.
    pub wr_data: Vec<u64>,
}

/// The send post path under test.
pub trait WqeExecutor {
    /// Builds a fresh QP of `case.qp`, runs the prep (`case.prep`, moving
    /// cur_post/head/bf offset to the `*_before` values), then, if
    /// `ring_fill` is `Some(b)`, overwrites the whole SQ ring with `b`; fills
    /// the UAR/BF register with `uar_fill`; posts `case.wrs` in one call and
    /// reports the outcome. `header` carries the AV bytes, payload rule and
    /// device limits.
    fn execute(
        &mut self,
        case: &WqeCase,
        header: &WqeHeader,
        ring_fill: Option<u8>,
        uar_fill: u8,
    ) -> Result<WqeOutcome>;
}

/// Default executor until the send post path is merged: always errors.
#[derive(Debug, Default)]
pub struct PendingWqeExecutor;

impl WqeExecutor for PendingWqeExecutor {
    fn execute(&mut self, _: &WqeCase, _: &WqeHeader, _: Option<u8>, _: u8) -> Result<WqeOutcome> {
        anyhow::bail!("post path not merged yet")
    }
}

/// Runs one case (two executions) and compares; `Err` = first difference.
pub fn check_wqe_case(
    case: &WqeCase,
    header: &WqeHeader,
    exec: &mut dyn WqeExecutor,
) -> std::result::Result<(), String> {
    let a = exec
        .execute(case, header, None, UAR_FILL_1)
        .map_err(|e| format!("executor error: {e:#}"))?;
    let b = exec
        .execute(case, header, Some(RING_FILL), UAR_FILL_2)
        .map_err(|e| format!("executor error (0xA5 run): {e:#}"))?;
    compare_wqe(case, &a, &b)
}

/// Compares the two runs' outcomes against the case.
pub fn compare_wqe(
    case: &WqeCase,
    plain: &WqeOutcome,
    filled: &WqeOutcome,
) -> std::result::Result<(), String> {
    for (run, o, uar_fill) in [("", plain, UAR_FILL_1), (" (0xA5 run)", filled, UAR_FILL_2)] {
        check_scalars(case, o).map_err(|e| format!("{e}{run}"))?;
        check_doorbell(case, o, uar_fill).map_err(|e| format!("{e}{run}"))?;
    }
    let n = case.ring_bytes();
    for (run, o) in [("", plain), (" (0xA5 run)", filled)] {
        if o.ring.len() != n {
            return Err(format!(
                "SQ ring is {} bytes, expected {n}{run}",
                o.ring.len()
            ));
        }
    }
    let mut covered = vec![false; n];
    for w in &case.wqes {
        for l in &w.lines {
            for (i, (&exp, &u)) in l.bytes.iter().zip(&l.unwritten).enumerate() {
                let at = l.ring as usize + i;
                let where_ = || {
                    format!(
                        "ring byte 0x{at:04x} (WQE[{}] +{:03x})",
                        w.index,
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
    for f in &case.failed {
        for l in &f.lines {
            for (i, (&exp, &u)) in l.bytes.iter().zip(&l.unwritten).enumerate() {
                let at = l.ring as usize + i;
                if at >= n {
                    return Err(format!("failed-WR byte 0x{at:04x} outside the ring"));
                }
                covered[at] = true;
                let untouched = filled.ring[at] == RING_FILL;
                let same_as_provider = !u && plain.ring[at] == exp;
                if !untouched && !same_as_provider {
                    return Err(format!(
                        "ring byte 0x{at:04x} (failed WR at sq index {} +{:03x}): written (0x{:02x}); \
                         a failed WR may only leave it untouched{}",
                        f.sq_index,
                        l.rel as usize + i,
                        filled.ring[at],
                        if u { "" } else { " or write the provider's value" }
                    ));
                }
            }
        }
    }
    if let Some(at) = (0..n).find(|&i| !covered[i] && filled.ring[i] != RING_FILL) {
        return Err(format!(
            "ring byte 0x{at:04x} outside every posted WQE was written (0x{:02x})",
            filled.ring[at]
        ));
    }
    let cnt = case.qp.wqe_cnt as usize;
    for w in &case.wqes {
        let i = w.sq_index as usize;
        for (name, table, exp) in [
            ("sq.wrid", &plain.wrid, w.wrid),
            ("sq.wqe_head", &plain.wqe_head, w.wqe_head),
            ("sq.wr_data", &plain.wr_data, w.wr_data),
        ] {
            if table.len() != cnt {
                return Err(format!(
                    "{name} has {} entries, expected sq.wqe_cnt={cnt}",
                    table.len()
                ));
            }
            let Some(&got) = table.get(i) else {
                return Err(format!("{name}[{i}] is outside sq.wqe_cnt={cnt}"));
            };
            if got != exp {
                return Err(format!("{name}[{i}] = 0x{got:x}, expected 0x{exp:x}"));
            }
        }
    }
    Ok(())
}

fn check_scalars(case: &WqeCase, o: &WqeOutcome) -> std::result::Result<(), String> {
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
    if o.cur_post != case.cur_post_after {
        return Err(format!(
            "sq.cur_post after={} expected {}",
            o.cur_post, case.cur_post_after
        ));
    }
    if o.head != case.head_after {
        return Err(format!(
            "sq.head after={} expected {}",
            o.head, case.head_after
        ));
    }
    if o.dbrec != case.dbrec_after {
        return Err(format!(
            "dbrec bytes {} expected {}",
            hex(&o.dbrec),
            hex(&case.dbrec_after)
        ));
    }
    if o.bf_offset != case.bf_offset_after {
        return Err(format!(
            "bf->offset after=0x{:x} expected 0x{:x}",
            o.bf_offset, case.bf_offset_after
        ));
    }
    Ok(())
}

/// The expected doorbell bytes and offset (None = no doorbell).
fn expected_doorbell(
    case: &WqeCase,
    ring: &[u8],
) -> std::result::Result<Option<(DoorbellKind, u32, Vec<u8>)>, String> {
    Ok(match &case.doorbell {
        Doorbell::None => None,
        Doorbell::Db8 { offset, bytes } => Some((DoorbellKind::Db8, *offset, bytes.clone())),
        Doorbell::BlueFlame { offset, len, bytes } => {
            let b = match bytes {
                Some(b) => b.clone(),
                None => {
                    let last = case
                        .wqes
                        .last()
                        .ok_or_else(|| "BlueFlame doorbell but no WQE listed".to_string())?;
                    if ring.is_empty() {
                        return Err("empty SQ ring".into());
                    }
                    (0..*len as usize)
                        .map(|i| ring[(last.ring_offset as usize + i) % ring.len()])
                        .collect()
                }
            };
            Some((DoorbellKind::BlueFlame, *offset, b))
        }
    })
}

fn check_doorbell(case: &WqeCase, o: &WqeOutcome, uar_fill: u8) -> std::result::Result<(), String> {
    let exp = expected_doorbell(case, &o.ring)?;
    let kind_name = |k: DoorbellKind| match k {
        DoorbellKind::Db8 => "8-byte DB",
        DoorbellKind::BlueFlame => "BlueFlame copy",
    };
    match &o.doorbell {
        DoorbellObs::Recorded(writes) => match (&exp, writes.as_slice()) {
            (None, []) => Ok(()),
            (None, [w, ..]) => Err(format!(
                "doorbell written ({} at 0x{:x}), expected none",
                kind_name(w.kind),
                w.offset
            )),
            (Some((k, off, _)), []) => Err(format!(
                "no doorbell, expected {} at 0x{off:x}",
                kind_name(*k)
            )),
            (Some((k, off, b)), [w]) => {
                if w.kind != *k {
                    Err(format!(
                        "doorbell is {}, expected {}",
                        kind_name(w.kind),
                        kind_name(*k)
                    ))
                } else if w.offset != *off {
                    Err(format!(
                        "doorbell at bf offset 0x{:x}, expected 0x{off:x}",
                        w.offset
                    ))
                } else if &w.bytes != b {
                    Err(format!(
                        "doorbell bytes {} expected {}",
                        hex(&w.bytes),
                        hex(b)
                    ))
                } else {
                    Ok(())
                }
            }
            (Some(_), ws) => Err(format!("{} doorbell writes, expected one", ws.len())),
        },
        DoorbellObs::Register(img) => {
            let (lo, hi, bytes) = match &exp {
                None => (0, 0, Vec::new()),
                Some((_, off, b)) => (*off as usize, *off as usize + b.len(), b.clone()),
            };
            if hi > img.len() {
                return Err(format!(
                    "doorbell expected at 0x{lo:x}..0x{hi:x}, register is {} bytes",
                    img.len()
                ));
            }
            if let Some(i) = (0..img.len()).find(|&i| (i < lo || i >= hi) && img[i] != uar_fill) {
                return Err(match &exp {
                    None => format!("UAR/BF byte 0x{i:03x} written (0x{:02x}), expected no doorbell", img[i]),
                    Some((k, off, _)) => format!(
                        "UAR/BF byte 0x{i:03x} written (0x{:02x}) outside the expected {} at 0x{off:x}",
                        img[i],
                        kind_name(*k)
                    ),
                });
            }
            if let Some(i) = (lo..hi).find(|&i| img[i] != bytes[i - lo]) {
                let k = exp.as_ref().map(|e| kind_name(e.0)).unwrap_or("");
                return Err(format!(
                    "{k} byte 0x{:03x} at bf offset 0x{lo:x}: got 0x{:02x}, expected 0x{:02x} (register {} vs expected {})",
                    i - lo,
                    img[i],
                    bytes[i - lo],
                    hex(&img[lo..hi.min(lo + 16)]),
                    hex(&bytes[..bytes.len().min(16)])
                ));
            }
            Ok(())
        }
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Replays one wqe vector file: one `PASS`/`FAIL` line per case.
/// Returns `(passed, failed)`.
pub fn run_wqe_file(
    path: &Path,
    out: &mut dyn Write,
    exec: &mut dyn WqeExecutor,
) -> Result<(usize, usize)> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    run_wqe_text(&path.display().to_string(), &text, out, exec)
}

/// [`run_wqe_file`] on a file's text; `name` labels the report lines.
pub fn run_wqe_text(
    name: &str,
    text: &str,
    out: &mut dyn Write,
    exec: &mut dyn WqeExecutor,
) -> Result<(usize, usize)> {
    let path = name;
    let file = read_wqe_file(text).with_context(|| format!("parsing {name}"))?;
    let (mut pass, mut fail) = (0, 0);
    for case in &file.cases {
        match check_wqe_case(case, &file.header, exec) {
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
    use crate::vectors::wqe::{WqeFile, MAX_PAYLOAD_BYTES};

    /// Replays the expected bytes parsed from the file itself.
    #[derive(Default)]
    pub struct ReplayWqe {
        /// Flip this ring byte (run 1) of the case with this number.
        pub flip: Option<(u32, usize)>,
        /// Record doorbells instead of a register image.
        pub recorded: bool,
    }

    impl WqeExecutor for ReplayWqe {
        fn execute(
            &mut self,
            case: &WqeCase,
            header: &WqeHeader,
            ring_fill: Option<u8>,
            uar_fill: u8,
        ) -> Result<WqeOutcome> {
            let n = case.ring_bytes();
            let mut ring = vec![ring_fill.unwrap_or(0); n];
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
                if let Some((num, at)) = self.flip {
                    if num == case.number {
                        ring[at] ^= 0x01;
                    }
                }
            }
            let cnt = case.qp.wqe_cnt as usize;
            let (mut wrid, mut wqe_head, mut wr_data) = (vec![0; cnt], vec![0; cnt], vec![0; cnt]);
            for w in &case.wqes {
                let i = w.sq_index as usize;
                wrid[i] = w.wrid;
                wqe_head[i] = w.wqe_head;
                wr_data[i] = w.wr_data;
            }
            let exp = expected_doorbell(case, &ring).map_err(anyhow::Error::msg)?;
            let doorbell = if self.recorded {
                DoorbellObs::Recorded(
                    exp.into_iter()
                        .map(|(kind, offset, bytes)| DoorbellWrite {
                            kind,
                            offset,
                            bytes,
                        })
                        .collect(),
                )
            } else {
                let mut img = vec![uar_fill; header.bf_reg_size.unwrap_or(512) as usize];
                if let Some((_, off, b)) = exp {
                    img[off as usize..off as usize + b.len()].copy_from_slice(&b);
                }
                DoorbellObs::Register(img)
            };
            Ok(WqeOutcome {
                ret: case.result.ret,
                bad_wr: case.result.bad_wr,
                cur_post: case.cur_post_after,
                head: case.head_after,
                dbrec: case.dbrec_after.clone(),
                doorbell,
                bf_offset: case.bf_offset_after,
                ring,
                wrid,
                wqe_head,
                wr_data,
            })
        }
    }

    pub fn load(name: &str) -> (std::path::PathBuf, String) {
        let p = crate::vectors::vectors_dir().join(name);
        let t = std::fs::read_to_string(&p).unwrap_or_else(|e| {
            panic!(
                "vector file {} missing ({e}); set BAREVERBS_VECTORS",
                p.display()
            )
        });
        (p, t)
    }

    const FILES: [&str; 2] = ["wqe_vectors.txt", "wqe_random_visible.txt"];

    /// A setup of more filler posts than [`crate::vectors::MAX_PREP_POSTS`]
    /// is refused when the file is read (the replay runs every one).
    #[test]
    fn oversized_setups_are_refused() {
        let (_, t) = load("wqe_vectors.txt");
        let at = "prep posted 5 one-WQEBB";
        assert!(t.contains(at));
        let e = read_wqe_file(&t.replacen(at, "prep posted 131073 one-WQEBB", 1)).unwrap_err();
        assert!(format!("{e:#}").contains("131073 filler posts"), "{e:#}");
        assert!(read_wqe_file(&t.replacen(at, "prep posted 131072 one-WQEBB", 1)).is_ok());
    }

    /// A header naming a payload buffer larger than [`MAX_PAYLOAD_BYTES`]
    /// is refused before the replay allocates it.
    #[test]
    fn oversized_payload_buffers_are_refused() {
        let (_, t) = load("wqe_random_visible.txt");
        let stated = "k & 0xff, 8192 bytes)";
        assert!(t.contains(stated));
        let over = format!("k & 0xff, {} bytes)", MAX_PAYLOAD_BYTES + 1);
        let e = read_wqe_file(&t.replacen(stated, &over, 1)).unwrap_err();
        assert!(format!("{e:#}").contains("more than 67108864"), "{e:#}");
        let at = format!("k & 0xff, {MAX_PAYLOAD_BYTES} bytes)");
        let f = read_wqe_file(&t.replacen(stated, &at, 1)).unwrap();
        assert_eq!(f.header.payload_len, Some(MAX_PAYLOAD_BYTES));
    }

    fn parsed(name: &str) -> (std::path::PathBuf, WqeFile, String) {
        let (p, t) = load(name);
        let f = read_wqe_file(&t).unwrap();
        (p, f, t)
    }

    #[test]
    fn reader_parses_every_case() {
        for name in FILES {
            let (_, f, t) = parsed(name);
            let headers = t
                .lines()
                .filter(|l| l.trim_start().starts_with("=== "))
                .count();
            assert!(headers > 0, "{name}: no cases");
            assert_eq!(f.cases.len(), headers, "{name}");
            for c in &f.cases {
                assert!(
                    c.unknown_lines.is_empty(),
                    "{name} vector {}: unknown {:?}",
                    c.number,
                    c.unknown_lines
                );
                assert_eq!(
                    c.wrs.len(),
                    c.raw
                        .lines()
                        .filter(|l| l.trim_start().starts_with("WR["))
                        .count()
                );
                for w in &c.wrs {
                    assert!(w.num_sge >= 0);
                    assert!(w.sges.len() <= w.num_sge as usize || w.num_sge == 0);
                }
                for w in &c.wqes {
                    assert_eq!(
                        w.opmod_idx_opcode,
                        (w.wqe_index << 8) | w.opcode | (w.opmod << 24)
                    );
                    assert_eq!(w.qpn_ds, (w.qpn << 8) | w.ds);
                    assert!(!w.lines.is_empty());
                }
                assert_eq!(c.dbrec_after.len(), 4);
            }
            assert!(
                f.header.plain_av.as_ref().is_some_and(|v| v.len() == 48),
                "{name}"
            );
            assert!(
                f.header.grh_av.as_ref().is_some_and(|v| v.len() == 48),
                "{name}"
            );
            assert_eq!(f.header.bf_reg_size, Some(512));
            assert_eq!(f.header.bf_buf_size, Some(256));
            eprintln!("{name}: {} cases", f.cases.len());
        }
    }

    #[test]
    fn reader_is_robust_to_layout() {
        let (_, f, t) = parsed("wqe_vectors.txt");
        // Extra blank lines everywhere, CRLF-free trailing spaces, and an unknown line.
        let mut noisy = String::new();
        for l in t.lines() {
            noisy.push_str(l);
            noisy.push_str("   \n\n");
            if l.starts_with("  result:") {
                noisy.push_str("  some future field=1\n");
            }
        }
        let g = read_wqe_file(&noisy).unwrap();
        assert_eq!(g.cases.len(), f.cases.len());
        for (a, b) in f.cases.iter().zip(&g.cases) {
            assert_eq!(a.wqes.len(), b.wqes.len());
            assert_eq!(a.wrs, b.wrs);
            assert_eq!(b.unknown_lines, vec!["some future field=1".to_string()]);
            for (x, y) in a.wqes.iter().zip(&b.wqes) {
                assert_eq!(x.lines, y.lines);
            }
        }
        // Hex lines of other widths are fine.
        let one = "=== VECTOR 9: x\n  QP: type=UC qpn=0x1 requested(max_send_wr=1 max_send_sge=1 max_inline_data=0) sq_sig_all=0 -> sq.wqe_cnt=8 WQEBBs (512 bytes) sq.max_post=1 max_gs=1 max_inline_data=60\n  WR[0]: opcode=SEND(2) wr_id=0x1 num_sge=0 send_flags=0x0( )\n  result: ibv_post_send ret=0 (ok)\n  sq.cur_post (x) before=0 after=1 ; sq.head (y) before=0 after=1\n  dbrec[MLX5_SND_DBR] after: raw bytes 00 00 00 01 = be32 0x1\n  doorbell: NONE\n  bf->offset before=0x0 after=0x0\n  WQE[0] at sq index 0 (ring byte offset 0x0000): opmod_idx_opcode=0x0000000a (wqe_index=0 opcode=0x0a opmod=0) qpn_ds=0x00000101 (qpn=0x000001 ds=1 -> 16 bytes, 1 WQEBB)\n          fm_ce_se=0x00 imm=0x00000000 ; sq.wrid[0]=0x1 sq.wqe_head[0]=0 sq.wr_data[0]=0\n    +000 [ring 0x0000]: 0000000a00000101 0000000000000000\n    +010 [ring 0x0010]: 00 00 00 00 unwritten:uuuu\n";
        let h = read_wqe_file(one).unwrap();
        assert_eq!(h.cases[0].wqes[0].lines[0].bytes.len(), 16);
        assert_eq!(h.cases[0].wqes[0].lines[1].bytes.len(), 4);
        assert_eq!(h.cases[0].qp.qp_type, bareverbs::qp::QpType::Uc);
    }

    #[test]
    fn reader_details() {
        let (_, f, _) = parsed("wqe_vectors.txt");
        let v = |n: u32| f.cases.iter().find(|c| c.number == n).unwrap();
        let c = v(62);
        assert_eq!(c.wrs[0].ud.unwrap().ah, crate::vectors::wqe::AhKind::Plain);
        assert_eq!(c.wrs[1].ud.unwrap().ah, crate::vectors::wqe::AhKind::Grh);
        assert_eq!(c.wrs[1].imm_data, Some(0x0d0c0b0a));
        let c = v(48);
        assert_eq!(c.prep.as_ref().unwrap().count, 5);
        assert_eq!(c.prep.as_ref().unwrap().cur_post, Some(5));
        assert!(c.wqes[0].wraps);
        let c = v(44);
        assert_eq!(c.wrs[0].bind_mw.unwrap().new_rkey, 0x00abcd02);
        let c = v(47);
        assert_eq!(c.result.errno.as_deref(), Some("EINVAL"));
        assert_eq!(c.result.bad_wr, Some(1));
        assert_eq!(c.failed[0].sq_index, 1);
        let c = v(23);
        assert!(matches!(
            c.doorbell,
            Doorbell::BlueFlame {
                offset: 0,
                len: 64,
                bytes: None
            }
        ));
        assert_eq!(
            c.wrs[0].sges[0].addr,
            crate::vectors::wqe::SgeAddr::Payload(0)
        );
        let (_, f, _) = parsed("wqe_random_visible.txt");
        assert_eq!(f.header.geometries.len(), 8);
        assert_eq!(f.header.payload_len, Some(8192));
        let c = f
            .cases
            .iter()
            .find(|c| c.title.starts_with("random #9:"))
            .unwrap();
        assert!(c
            .wrs
            .iter()
            .all(|w| w.ud.unwrap().ah == crate::vectors::wqe::AhKind::Grh));
        let p = c.prep.as_ref().unwrap();
        assert_eq!(p.wqebbs_per_filler, Some(2));
        assert_eq!(
            p.filler.as_ref().unwrap().ud.unwrap().ah,
            crate::vectors::wqe::AhKind::Plain
        );
    }

    #[test]
    fn replay_passes_everything() {
        for recorded in [false, true] {
            for name in FILES {
                let (p, _) = load(name);
                let mut out = Vec::new();
                let mut ex = ReplayWqe {
                    recorded,
                    ..Default::default()
                };
                let (pass, fail) = run_wqe_file(&p, &mut out, &mut ex).unwrap();
                let s = String::from_utf8(out).unwrap();
                assert_eq!(fail, 0, "{s}");
                assert!(pass > 0);
                assert_eq!(s.lines().filter(|l| l.starts_with("PASS ")).count(), pass);
            }
        }
    }

    #[test]
    fn flipped_byte_fails_naming_it() {
        let (p, f, _) = parsed("wqe_vectors.txt");
        let c = &f.cases[0];
        let mut ex = ReplayWqe {
            flip: Some((c.number, 0x13)),
            recorded: false,
        };
        let mut out = Vec::new();
        let (_, fail) = run_wqe_file(&p, &mut out, &mut ex).unwrap();
        let s = String::from_utf8(out).unwrap();
        assert_eq!(fail, 1, "{s}");
        let line = s.lines().find(|l| l.starts_with("FAIL")).unwrap();
        assert!(line.contains("ring byte 0x0013"), "{line}");
        assert!(line.contains(&format!("vector {}:", c.number)), "{line}");
    }

    /// Writes into unwritten bytes, wrong doorbells and wrong scalars are caught.
    #[test]
    fn comparator_catches_mistakes() {
        let (_, f, _) = parsed("wqe_vectors.txt");
        let h = &f.header;
        let mut ex = ReplayWqe::default();
        let c = f.cases.iter().find(|c| c.number == 1).unwrap();
        let a = ex.execute(c, h, None, UAR_FILL_1).unwrap();
        let b = ex.execute(c, h, Some(RING_FILL), UAR_FILL_2).unwrap();
        assert_eq!(compare_wqe(c, &a, &b), Ok(()));
        let mut b2 = b.clone();
        b2.ring[0x20] = 0;
        assert!(compare_wqe(c, &a, &b2).unwrap_err().contains("0x0020"));
        let mut b3 = b.clone();
        b3.ring[0x1000] = 0;
        assert!(compare_wqe(c, &a, &b3)
            .unwrap_err()
            .contains("outside every posted WQE"));
        let mut a2 = a.clone();
        a2.bf_offset = 0;
        assert!(compare_wqe(c, &a2, &b).unwrap_err().contains("bf->offset"));
        let mut a3 = a.clone();
        if let DoorbellObs::Register(img) = &mut a3.doorbell {
            img[0x107] ^= 1;
        }
        assert!(compare_wqe(c, &a3, &b)
            .unwrap_err()
            .contains("UAR/BF byte 0x107"));
        let mut a4 = a.clone();
        a4.wrid[0] = 7;
        assert!(compare_wqe(c, &a4, &b).unwrap_err().contains("sq.wrid[0]"));
        // Failed WR (vector 40): writing nothing passes; writing a 'u' byte fails.
        let c = f.cases.iter().find(|c| c.number == 40).unwrap();
        let a = ex.execute(c, h, None, UAR_FILL_1).unwrap();
        let mut b = ex.execute(c, h, Some(RING_FILL), UAR_FILL_2).unwrap();
        assert_eq!(compare_wqe(c, &a, &b), Ok(()));
        b.ring[0] = 0;
        assert!(compare_wqe(c, &a, &b).unwrap_err().contains("failed WR"));
    }
}
