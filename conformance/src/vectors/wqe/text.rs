//! Low-level text helpers shared by the wqe, recv and cqe readers: case
//! splitting, the `=== VECTOR N:` header, ring hex lines, numbers and
//! `key=value` fields.

use anyhow::{anyhow, bail, Context, Result};

use super::model::HexLine;

/// Splits a vector file into `(1-based line, raw text)` per `=== ` block.
pub(crate) fn split_cases(text: &str) -> Vec<(usize, String)> {
    let mut out: Vec<(usize, String)> = Vec::new();
    for (i, l) in text.lines().enumerate() {
        if l.trim_start().starts_with("=== ") {
            out.push((i + 1, String::new()));
        }
        if let Some(last) = out.last_mut() {
            // Blank/`#` lines between cases are kept but harmless.
            last.1.push_str(l);
            last.1.push('\n');
        }
    }
    for c in &mut out {
        let trimmed = c.1.trim_end().to_string();
        c.1 = trimmed;
        c.1.push('\n');
    }
    out
}

/// Parses `=== [SRQ ]VECTOR N: title` into (prefix before VECTOR, N, title).
pub(crate) fn parse_case_header(l: &str) -> Result<(String, u32, String)> {
    let t = l.trim().trim_start_matches("===").trim();
    let p = t
        .find("VECTOR")
        .ok_or_else(|| anyhow!("no VECTOR in {l:?}"))?;
    let prefix = t[..p].trim().to_string();
    let rest = &t[p + "VECTOR".len()..];
    let colon = rest.find(':').unwrap_or(rest.len());
    let n: u32 = rest[..colon]
        .trim()
        .parse()
        .with_context(|| format!("vector number in {l:?}"))?;
    let title = rest.get(colon + 1..).unwrap_or("").trim().to_string();
    Ok((prefix, n, title))
}

/// True for `+000 [ring …]: …` and `~+020 …` lines.
pub(crate) fn is_hex_line(t: &str) -> bool {
    let t = t.strip_prefix('~').unwrap_or(t);
    t.starts_with('+') && t.contains("[ring") && t.contains("]:")
}

/// Parses `[~]+REL [ring 0xOFF]: hex… [unwritten:mask] [(comment)]`.
pub(crate) fn parse_hex_line(t: &str) -> Result<HexLine> {
    let (beyond_ds, t2) = match t.strip_prefix('~') {
        Some(r) => (true, r),
        None => (false, t),
    };
    let t2 = t2
        .strip_prefix('+')
        .ok_or_else(|| anyhow!("hex line without '+': {t:?}"))?;
    let rel_s = t2.split_whitespace().next().unwrap_or("");
    let rel =
        u64::from_str_radix(rel_s, 16).with_context(|| format!("bad rel offset in {t:?}"))? as u32;
    let rp = t2
        .find("[ring")
        .ok_or_else(|| anyhow!("no [ring in {t:?}"))?;
    let ring = parse_num_prefix(t2[rp + 5..].trim_start())
        .ok_or_else(|| anyhow!("bad ring offset {t:?}"))? as u32;
    let cp = t2.find("]:").ok_or_else(|| anyhow!("no ']:' in {t:?}"))?;
    let rest = &t2[cp + 2..];
    let mut hex = String::new();
    let mut mask: Option<&str> = None;
    for tok in rest.split_whitespace() {
        if let Some(m) = tok.strip_prefix("unwritten:") {
            mask = Some(m);
            break;
        }
        if tok.starts_with('(') {
            break;
        }
        hex.push_str(tok);
    }
    let bytes = parse_hex_str(&hex).with_context(|| format!("hex in {t:?}"))?;
    let unwritten = match mask {
        Some(m) => {
            let v: Vec<bool> = m
                .chars()
                .map(|c| match c {
                    'u' | 'U' => Ok(true),
                    '.' => Ok(false),
                    o => Err(anyhow!("bad mask char {o:?} in {t:?}")),
                })
                .collect::<Result<_>>()?;
            if v.len() != bytes.len() {
                bail!("mask length {} != {} bytes in {t:?}", v.len(), bytes.len());
            }
            v
        }
        None => vec![beyond_ds; bytes.len()],
    };
    let unwritten = if beyond_ds {
        vec![true; bytes.len()]
    } else {
        unwritten
    };
    Ok(HexLine {
        rel,
        ring,
        beyond_ds,
        bytes,
        unwritten,
    })
}

/// Hex digits (whitespace allowed, optional `0x`) → bytes.
pub(crate) fn parse_hex_str(s: &str) -> Result<Vec<u8>> {
    Ok(crate::hex::parse_hex(s)?)
}

/// Parses a leading number: `0x…` hex or decimal (optional `-`); ignores the rest.
pub(crate) fn parse_num_prefix(s: &str) -> Option<u64> {
    let s = s.trim_start();
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        let end = h.find(|c: char| !c.is_ascii_hexdigit()).unwrap_or(h.len());
        if end == 0 {
            return None;
        }
        u64::from_str_radix(&h[..end], 16).ok()
    } else if let Some(d) = s.strip_prefix('-') {
        let end = d.find(|c: char| !c.is_ascii_digit()).unwrap_or(d.len());
        let v: i64 = d[..end].parse().ok()?;
        Some((-v) as u64)
    } else {
        let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
        if end == 0 {
            return None;
        }
        s[..end].parse().ok()
    }
}

/// Value token of `key=` where the key starts at a word boundary.
pub(crate) fn kv<'a>(s: &'a str, key: &str) -> Option<&'a str> {
    let pat = format!("{key}=");
    let mut from = 0;
    while let Some(p) = s[from..].find(&pat) {
        let at = from + p;
        let ok = at == 0 || {
            let c = s[..at].chars().next_back().unwrap_or(' ');
            !(c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '>' || c == '-')
        };
        if ok {
            let v = &s[at + pat.len()..];
            let end = v.find(char::is_whitespace).unwrap_or(v.len());
            return Some(&v[..end]);
        }
        from = at + pat.len();
    }
    None
}

/// Numeric `key=` value.
pub(crate) fn kv_num(s: &str, key: &str) -> Option<u64> {
    kv(s, key).and_then(parse_num_prefix)
}

/// Required `key=` value that holds a C `int`: decimal (optionally negative)
/// or hex, anything in `i32::MIN..=u32::MAX`, converted to `int` as C does
/// (modulo 2^32).
pub(crate) fn c_int_field(s: &str, key: &str) -> Result<i32> {
    let raw = kv(s, key).ok_or_else(|| anyhow!("missing {key}= in {s:?}"))?;
    let v = parse_num_prefix(raw).ok_or_else(|| anyhow!("{key}: bad number {raw:?}"))? as i64;
    let neg = raw.trim_start().starts_with('-');
    if (neg && v < i32::MIN as i64) || (!neg && !(0..=u32::MAX as i64).contains(&v)) {
        bail!("{key}={raw} is neither a C int nor a uint32_t");
    }
    Ok(v as u32 as i32)
}

/// Required numeric `key=` value.
pub(crate) fn kv_req(s: &str, key: &str) -> Result<u64> {
    kv_num(s, key).ok_or_else(|| anyhow!("missing {key}= in {s:?}"))
}

/// Number after `prefix` (e.g. `WR[` → the index).
pub(crate) fn bracket_num(s: &str, prefix: &str) -> Option<u64> {
    let p = s.find(prefix)?;
    parse_num_prefix(&s[p + prefix.len()..])
}

/// `name[i]=value` → value.
pub(crate) fn bracket_kv(s: &str, prefix: &str) -> Option<u64> {
    let p = s.find(prefix)?;
    let r = &s[p + prefix.len()..];
    let e = r.find("]=")?;
    parse_num_prefix(&r[e + 2..])
}

/// Number right after a phrase (`sq index 5`).
pub(crate) fn after_word_num(s: &str, phrase: &str) -> Option<u64> {
    let p = s.find(phrase)?;
    parse_num_prefix(&s[p + phrase.len()..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_line_variants() {
        let h =
            parse_hex_line("~+020 [ring 0x0020]: 00000000 00000000  unwritten:uuuuuuuu (beyond)")
                .unwrap();
        assert!(h.beyond_ds);
        assert_eq!(h.ring, 0x20);
        assert_eq!(h.bytes.len(), 8);
        assert!(h.unwritten.iter().all(|u| *u));
        let h = parse_hex_line("+010 [ring 0x0190]: 8000000100 unwritten:.....").unwrap();
        assert_eq!(h.bytes, vec![0x80, 0, 0, 1, 0]);
        assert!(parse_hex_line("+010 [ring 0x0190]: 80000001 unwritten:..").is_err());
    }

    #[test]
    fn kv_boundaries() {
        let s = "opmod_idx_opcode=0x0000000a (wqe_index=0 opcode=0x0a opmod=0)";
        assert_eq!(kv_num(s, "opcode"), Some(0xa));
        assert_eq!(kv_num(s, "opmod"), Some(0));
        assert_eq!(kv_num(s, "opmod_idx_opcode"), Some(0xa));
    }
}
