//! `bareverbs decode wqe|cqe HEX`: human and JSON views of WQEs and CQEs.
//! Hex is accepted as printed in the vector files (whitespace allowed).

pub mod cqe;
pub mod wqe;

/// Parses hex text (whitespace, `0x` prefixes and `:`/`,` separators
/// ignored) into bytes.
pub fn parse_hex(text: &str) -> anyhow::Result<Vec<u8>> {
    let digits: String = text
        .split_whitespace()
        .map(|w| w.trim_start_matches("0x").trim_start_matches("0X"))
        .collect::<Vec<_>>()
        .join("")
        .chars()
        .filter(|c| *c != ':' && *c != ',')
        .collect();
    if !digits.len().is_multiple_of(2) {
        anyhow::bail!("odd number of hex digits ({})", digits.len());
    }
    (0..digits.len())
        .step_by(2)
        .map(|i| {
            u8::from_str_radix(&digits[i..i + 2], 16)
                .map_err(|_| anyhow::anyhow!("not hex: {:?}", &digits[i..i + 2]))
        })
        .collect()
}
