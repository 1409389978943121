//! UD address-handle resolution: which AH (plain or GRH) a UD WR uses,
//! from its `ud:` line or, where the line does not say, from the case title.

use super::model::{AhKind, SendWr};

/// Resolves UD AH kinds not stated on the WR lines from the title.
pub(super) fn resolve_ud_ah(title: &str, wrs: &mut [SendWr]) {
    let n_ud = wrs.iter().filter(|w| w.ud.is_some()).count();
    let mentions = ah_mentions(title);
    let mut ud_i = 0;
    for w in wrs.iter_mut() {
        if let Some(ud) = w.ud.as_mut() {
            if let Some(k) = ah_for_wr(title, w.index) {
                ud.ah = k;
            } else if mentions.len() == n_ud {
                ud.ah = mentions[ud_i];
            } else if let Some(&k) = mentions.first() {
                if mentions.iter().all(|m| *m == k) {
                    ud.ah = k;
                }
            }
            ud_i += 1;
        }
    }
}

pub(super) fn ah_kind_in(s: &str) -> Option<AhKind> {
    let g = s.find("GRH");
    let p = s.find("plain");
    match (g, p) {
        (Some(g), Some(p)) => Some(if g < p { AhKind::Grh } else { AhKind::Plain }),
        (Some(_), None) => Some(AhKind::Grh),
        (None, Some(_)) => Some(AhKind::Plain),
        _ => None,
    }
}

/// AH mentions in a title, in order (`plain AH`, `GRH AH`, `ah=plain`, `ah=GRH`).
fn ah_mentions(title: &str) -> Vec<AhKind> {
    let mut v = Vec::new();
    let b = title.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let rest = &title[i..];
        if rest.starts_with("plain AH") || rest.starts_with("ah=plain") {
            v.push(AhKind::Plain);
            i += 8;
        } else if rest.starts_with("GRH AH") || rest.starts_with("ah=GRH") {
            v.push(AhKind::Grh);
            i += 6;
        } else {
            i += rest.chars().next().map(|c| c.len_utf8()).unwrap_or(1);
        }
    }
    v
}

/// The AH for WR `i` from a random-style title segment `[i] … ah=GRH;`.
fn ah_for_wr(title: &str, i: usize) -> Option<AhKind> {
    let key = format!("[{i}] ");
    let p = title.find(&key)?;
    let seg = &title[p + key.len()..];
    let seg = seg.split("; [").next().unwrap_or(seg);
    let q = seg.find("ah=")?;
    ah_kind_in(seg[q..].split([' ', ';', ',']).next().unwrap_or(""))
}
