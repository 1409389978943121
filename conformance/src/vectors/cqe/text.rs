//! Number and `key=value` helpers of the CQE format.

use anyhow::{anyhow, Result};

/// Parses a decimal or `0x` hexadecimal number.
pub fn parse_num(s: &str) -> Result<u64> {
    let s = s.trim().trim_end_matches([',', ';', '.', ')', ':']);
    let r = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(h, 16)
    } else {
        s.parse::<u64>()
    };
    r.map_err(|_| anyhow!("not a number: {s:?}"))
}

/// Value of `key` in `line`: the token after `key` up to whitespace, `;`
/// or `,` (e.g. `value_after("ncqe=8 (x)", "ncqe=")` = "8").
pub fn value_after<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let i = line.find(key)? + key.len();
    let rest = line[i..].trim_start();
    let end = rest
        .find(|c: char| c.is_whitespace() || c == ';' || c == ',')
        .unwrap_or(rest.len());
    Some(&rest[..end])
}

pub(super) fn num_after(line: &str, key: &str) -> Option<u64> {
    value_after(line, key).and_then(|v| parse_num(v).ok())
}
