//! The CQE file reader: header lines into the fake QP, then each case's
//! `NOTE:`, `CQ:`, ring CQE hex blocks, `result:` and `wc[i]:` lines.

use anyhow::{anyhow, Context, Result};
use std::path::Path;

use super::fake_qp::FakeQpSpec;
use super::model::{
    CqeCase, CqeFile, Expected, ExpectedWc, RingCqe, SetupPost, SetupQueue, MAX_SETUP_SGES,
};
use super::text::{num_after, parse_num, value_after};

fn parse_setup(note: &str, send_posts: usize) -> Option<SetupPost> {
    if !note.contains("setup posted") {
        return None;
    }
    let wr_id = num_after(note, "wr_id")?;
    let queue =
        if note.contains("rq.wrid[") || note.contains("post_recv") || note.contains("receive") {
            SetupQueue::Recv
        } else {
            SetupQueue::Send
        };
    let bracket = |key: &str| -> Option<u64> {
        let i = note.find(key)? + key.len();
        let end = note[i..].find(']')?;
        parse_num(&note[i..i + end]).ok()
    };
    let index = bracket(if queue == SetupQueue::Send {
        "sq.wrid["
    } else {
        "rq.wrid["
    })
    .or_else(|| {
        num_after(
            note,
            if queue == SetupQueue::Send {
                "sq index"
            } else {
                "rq index"
            },
        )
    })
    .unwrap_or(if queue == SetupQueue::Send {
        send_posts as u64
    } else {
        0
    }) as u32;
    // "N SGE(s) of M bytes"
    let mut sge_lens = Vec::new();
    let words: Vec<&str> = note.split_whitespace().collect();
    for w in words.windows(5) {
        if w[1].starts_with("SGE") && w[2] == "of" && w[4].starts_with("byte") {
            if let (Ok(n), Ok(m)) = (parse_num(w[0].trim_start_matches('(')), parse_num(w[3])) {
                // Past the bound the case is refused (`check_bounds`); the
                // count is clamped first so a hostile file allocates nothing.
                let n = (n as usize).min(MAX_SETUP_SGES + 1);
                sge_lens.extend(std::iter::repeat_n(m.min(u32::MAX as u64) as u32, n));
            }
        }
    }
    Some(SetupPost {
        queue,
        wr_id,
        index,
        sge_lens,
    })
}

/// A hex line of a CQE file, read leniently ([`crate::hex::parse_hex_lenient`]:
/// anything but hex digits is skipped), refused with this reader's message.
fn parse_hex_words(s: &str) -> Result<Vec<u8>> {
    crate::hex::parse_hex_lenient(s).map_err(|_| anyhow!("odd hex digit count in {s:?}"))
}

/// Parses the text of a CQE vector file.
pub fn parse_cqe_file(text: &str) -> Result<CqeFile> {
    let mut r = CqeReader {
        f: CqeFile {
            qp: FakeQpSpec::default(),
            ..Default::default()
        },
        cur: None,
        cur_cqe: None,
        cur_wc: None,
        in_result: false,
    };
    for (lineno, raw) in text.lines().enumerate() {
        r.line(lineno, raw.trim())?;
    }
    r.close_case()?;
    Ok(r.f)
}

/// [`parse_cqe_file`]'s state between lines: the file so far, the case, CQE
/// and expected completion being read, and whether the case's `result:`
/// line was seen (`wc[i]:` blocks follow it).
struct CqeReader {
    f: CqeFile,
    cur: Option<CqeCase>,
    cur_cqe: Option<RingCqe>,
    cur_wc: Option<ExpectedWc>,
    in_result: bool,
}

impl CqeReader {
    /// One trimmed line (`lineno` counts from 0).
    fn line(&mut self, lineno: usize, line: &str) -> Result<()> {
        if line.is_empty() {
            return Ok(());
        }
        if let Some(h) = line.strip_prefix('#') {
            if self.cur.is_none() {
                self.f.qp.apply_header_line(h);
                self.f.header.push(h.trim().to_string());
            }
            return Ok(());
        }
        if let Some(rest) = line.strip_prefix("=== CQE VECTOR") {
            return self.start_case(lineno, rest);
        }
        if self.cur.is_none() {
            return Ok(());
        }
        self.case_line(lineno, line)
    }

    fn flush_cqe(&mut self) {
        if let (Some(case), Some(c)) = (self.cur.as_mut(), self.cur_cqe.take()) {
            case.cqes.push(c);
        }
    }

    fn flush_wc(&mut self) {
        if let (Some(case), Some(w)) = (self.cur.as_mut(), self.cur_wc.take()) {
            case.expected.wcs.push(w);
        }
    }

    /// Ends the case being read (if any): its last CQE and completion join
    /// it, and it joins the file once within bounds.
    fn close_case(&mut self) -> Result<()> {
        self.flush_cqe();
        self.flush_wc();
        if let Some(c) = self.cur.take() {
            c.check_bounds()?;
            self.f.cases.push(c);
        }
        Ok(())
    }

    /// `=== CQE VECTOR N: title` (`rest` follows `VECTOR`).
    fn start_case(&mut self, lineno: usize, rest: &str) -> Result<()> {
        self.close_case()?;
        self.in_result = false;
        let rest = rest.trim();
        let (num, title) = rest.split_once(':').unwrap_or((rest, ""));
        let number =
            parse_num(num).with_context(|| format!("line {}: vector number", lineno + 1))?;
        self.cur = Some(CqeCase {
            number,
            title: title.trim().to_string(),
            notes: Vec::new(),
            line: lineno + 1,
            ncqe: 8,
            cqe_size: 64,
            cqe_version: 1,
            ci_before: 0,
            ne: 1,
            cqes: Vec::new(),
            setup: Vec::new(),
            expected: Expected::default(),
        });
        Ok(())
    }

    /// A line inside a case.
    fn case_line(&mut self, lineno: usize, line: &str) -> Result<()> {
        let case = case_mut(&mut self.cur);
        if let Some(n) = line.strip_prefix("NOTE:") {
            note_line(case, n);
        } else if let Some(cq) = line.strip_prefix("CQ:") {
            cq_line(case, cq);
        } else if line.starts_with("CQE in ring slot") {
            self.flush_cqe();
            let slot =
                num_after(line, "slot").ok_or_else(|| anyhow!("line {}: slot", lineno + 1))?;
            self.cur_cqe = Some(RingCqe {
                slot: slot as u32,
                bytes: Vec::new(),
            });
        } else if line.starts_with('+') && line.contains(':') && self.cur_cqe.is_some() {
            let (_, hex) = line.split_once(':').unwrap_or(("", ""));
            let b = parse_hex_words(hex).with_context(|| format!("line {}", lineno + 1))?;
            if let Some(c) = self.cur_cqe.as_mut() {
                c.bytes.extend(b);
            }
        } else if line.starts_with("decoded:") {
            // informational
        } else if let Some(r) = line.strip_prefix("result:") {
            self.flush_cqe();
            self.in_result = true;
            result_line(&mut case_mut(&mut self.cur).expected, lineno, r)?;
        } else if line.starts_with("wc[") && line.ends_with(':') && self.in_result {
            self.flush_wc();
            self.cur_wc = Some(ExpectedWc::default());
        } else if line.starts_with("destination buffer after poll") {
            self.flush_wc();
            let e = &mut case_mut(&mut self.cur).expected;
            e.dest_fill = num_after(line, "initially").map(|v| v as u8);
            let hex = line.rsplit_once(':').map(|(_, h)| h).unwrap_or("");
            e.dest_after =
                Some(parse_hex_words(hex).with_context(|| format!("line {}", lineno + 1))?);
        } else if let Some(w) = self.cur_wc.as_mut() {
            wc_field_line(w, line);
        }
        Ok(())
    }
}

/// `NOTE: …`: kept, and read as a setup post when it describes one.
fn note_line(case: &mut CqeCase, n: &str) {
    let sends = case
        .setup
        .iter()
        .filter(|s| s.queue == SetupQueue::Send)
        .count();
    if let Some(s) = parse_setup(n, sends) {
        case.setup.push(s);
    }
    case.notes.push(n.trim().to_string());
}

/// `CQ: ncqe=… cqe_size=… cqe_version=…; cons_index before poll=… ; poll ne=…`.
fn cq_line(case: &mut CqeCase, cq: &str) {
    if let Some(v) = num_after(cq, "ncqe=") {
        case.ncqe = v as u32;
    }
    if let Some(v) = num_after(cq, "cqe_size=") {
        case.cqe_size = v as usize;
    }
    if let Some(v) = num_after(cq, "cqe_version=") {
        case.cqe_version = v as u8;
    }
    if let Some(v) = num_after(cq, "cons_index before poll=") {
        case.ci_before = v as u32;
    }
    if let Some(v) = num_after(cq, "ne=") {
        case.ne = v as usize;
    }
}

/// `result: … ret=… ; cons_index after=… ; dbrec[SET_CI] be32=… ; sq.tail after=… rq.tail after=…`.
fn result_line(e: &mut Expected, lineno: usize, r: &str) -> Result<()> {
    let ret = value_after(r, "ret=").ok_or_else(|| anyhow!("line {}: ret", lineno + 1))?;
    e.ret = ret
        .parse::<i64>()
        .with_context(|| format!("line {}: ret", lineno + 1))?;
    e.cons_index_after = num_after(r, "cons_index after=");
    e.dbrec = num_after(r, "be32=");
    e.sq_tail = num_after(r, "sq.tail after=");
    e.rq_tail = num_after(r, "rq.tail after=");
    Ok(())
}

/// A `name value` line of a `wc[i]:` block (value or `<not written by
/// provider>`); anything else is ignored.
fn wc_field_line(w: &mut ExpectedWc, line: &str) {
    let mut it = line.splitn(2, char::is_whitespace);
    let name = it.next().unwrap_or("").to_string();
    let val = it.next().unwrap_or("").trim();
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return;
    }
    let v = if val.starts_with("<not written") {
        None
    } else {
        match val.split_whitespace().next().map(parse_num) {
            Some(Ok(v)) => Some(v),
            _ => return,
        }
    };
    w.fields.push((name, v));
}

fn case_mut(c: &mut Option<CqeCase>) -> &mut CqeCase {
    c.as_mut().expect("called only inside a case")
}

/// Reads and parses a CQE vector file.
pub fn read_cqe_file(path: &Path) -> Result<CqeFile> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    parse_cqe_file(&text).with_context(|| format!("parsing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::super::IndexFormula;
    use super::*;

    #[test]
    fn formulas_and_numbers() {
        assert_eq!(IndexFormula::parse("0x5100+i").unwrap().at(3), 0x5103);
        assert_eq!(IndexFormula::parse("1000+i,").unwrap().at(4), 1004);
        assert_eq!(IndexFormula::parse("7+2*i").unwrap().at(2), 11);
        assert_eq!(parse_num("0x0abcde").unwrap(), 0xabcde);
    }

    /// Sizes the replay would have to allocate beyond reason are parse
    /// errors (a poll of `ne = 2^64 - 1` completions used to abort the
    /// tool with a capacity overflow). The cases are vector 1 of the
    /// visible file with one number changed.
    #[test]
    fn absurd_sizes_are_parse_errors() {
        let p = crate::vectors::vectors_dir().join("cqe_vectors.txt");
        let text = std::fs::read_to_string(&p).unwrap();
        let first = parse_cqe_file(&text).unwrap().cases[0].clone();
        assert!(first.check_bounds().is_ok());
        let mut c = first.clone();
        c.ne = usize::MAX;
        assert!(c.check_bounds().unwrap_err().to_string().contains("ne "));
        let mut c = first.clone();
        c.ncqe = 1 << 20;
        assert!(c.check_bounds().unwrap_err().to_string().contains("ncqe"));
        let mut c = first.clone();
        c.setup.push(SetupPost {
            queue: SetupQueue::Send,
            wr_id: 1,
            index: 0,
            sge_lens: vec![u32::MAX; 2],
        });
        assert!(c.check_bounds().unwrap_err().to_string().contains("bytes"));
        // Through the parser: the text of `ne=` in a case.
        let at = text.find(" ne=").expect("a poll line") + 1;
        let end = at
            + 3
            + text[at + 3..]
                .find(|ch: char| !ch.is_ascii_digit())
                .unwrap();
        let bad = format!("{}ne=18446744073709551615{}", &text[..at], &text[end..]);
        let e = format!("{:#}", parse_cqe_file(&bad).unwrap_err());
        assert!(e.contains("ne 18446744073709551615 is more than"), "{e}");
        // "N SGEs of M bytes" with an absurd N allocates nothing and fails.
        assert!(parse_setup(
            "posted: RECV wr_id=0x7 99999999999999 SGEs of 4096 bytes",
            0
        )
        .is_none_or(|s| s.sge_lens.len() <= MAX_SETUP_SGES + 1));
    }

    #[test]
    fn reads_visible_file() {
        let p = crate::vectors::vectors_dir().join("cqe_vectors.txt");
        let f = read_cqe_file(&p).unwrap();
        assert_eq!(f.qp.qpn, 0x0abcde);
        assert_eq!(f.qp.uidx, 5);
        assert_eq!(f.qp.sq_wqe_cnt, 256);
        assert_eq!(f.qp.rq_wqe_cnt, 16);
        assert_eq!(f.qp.wr_data(4), 6);
        let text = std::fs::read_to_string(&p).unwrap();
        assert_eq!(f.cases.len(), text.matches("=== CQE VECTOR").count());
        let v12 = f.cases.iter().find(|c| c.number == 12).unwrap();
        assert_eq!(v12.setup.len(), 1);
        assert_eq!(v12.setup[0].wr_id, 0x8888);
        assert_eq!(v12.setup[0].sge_lens, vec![48]);
        assert_eq!(v12.expected.dest_after.as_ref().unwrap().len(), 48);
        let v44 = f.cases.iter().find(|c| c.number == 44).unwrap();
        assert_eq!((v44.cqes.len(), v44.ne, v44.expected.wcs.len()), (2, 4, 2));
        assert!(v44.cqes.iter().all(|c| c.bytes.len() == 64));
    }
}
