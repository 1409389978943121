//! Hex text as the vector files print it (and as `bareverbs decode wqe|cqe`
//! accepts it): whitespace-separated words, optional `0x` prefixes, `:`/`,`
//! separators. Owns the reader and its refusals, in two modes: strict
//! ([`parse_hex`]) and the lenient one the CQE vector files' hex lines are
//! read with ([`parse_hex_lenient`]).

use std::fmt;

/// Why hex text was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum HexError {
    /// A character that is not a hex digit, separator or `0x` prefix.
    NotHex {
        /// The character.
        ch: char,
        /// Its position in the text, counting characters from 1.
        pos: usize,
    },
    /// The digits do not pair up into bytes.
    OddDigits {
        /// How many hex digits there are.
        digits: usize,
    },
}

impl fmt::Display for HexError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HexError::NotHex { ch, pos } => {
                write!(f, "not a hex digit: {ch:?} at position {pos}")
            }
            HexError::OddDigits { digits } => {
                write!(f, "odd number of hex digits ({digits})")
            }
        }
    }
}

impl std::error::Error for HexError {}

/// Parses hex text into bytes. Whitespace separates words; a word may
/// start with `0x`/`0X` prefixes, and `:`/`,` separators are ignored.
/// Any other non-hex character (non-ASCII included) is refused with its
/// position; any input is accepted without panicking.
pub fn parse_hex(text: &str) -> Result<Vec<u8>, HexError> {
    let mut nibbles: Vec<u8> = Vec::with_capacity(text.len());
    let mut word_start = true;
    let mut chars = text.chars().enumerate().peekable();
    while let Some((i, ch)) = chars.next() {
        if ch.is_whitespace() {
            word_start = true;
            continue;
        }
        if word_start && ch == '0' && matches!(chars.peek(), Some((_, 'x' | 'X'))) {
            chars.next();
            continue;
        }
        word_start = false;
        if ch == ':' || ch == ',' {
            continue;
        }
        match ch.to_digit(16) {
            Some(d) => nibbles.push(d as u8),
            None => return Err(HexError::NotHex { ch, pos: i + 1 }),
        }
    }
    pair_nibbles(&nibbles)
}

/// Parses hex text leniently: every character that is not an ASCII hex
/// digit is skipped (whitespace, separators, the `x` of a `0x`, any other
/// text), and the digits left pair up into bytes; only an odd digit count
/// is refused. The CQE vector files' `+OO:` lines and the destination
/// buffer line are read this way. Any input is accepted without panicking.
pub fn parse_hex_lenient(text: &str) -> Result<Vec<u8>, HexError> {
    let nibbles: Vec<u8> = text
        .chars()
        .filter_map(|c| {
            if c.is_ascii_hexdigit() {
                c.to_digit(16)
            } else {
                None
            }
        })
        .map(|d| d as u8)
        .collect();
    pair_nibbles(&nibbles)
}

/// Pairs hex digit values (each 0..=15) into bytes, high nibble first;
/// refuses an odd count.
fn pair_nibbles(nibbles: &[u8]) -> Result<Vec<u8>, HexError> {
    if !nibbles.len().is_multiple_of(2) {
        return Err(HexError::OddDigits {
            digits: nibbles.len(),
        });
    }
    Ok(nibbles.chunks(2).map(|p| (p[0] << 4) | p[1]).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_the_vector_files_use() {
        assert_eq!(
            parse_hex("0x0102 0X03:04,05 06").unwrap(),
            [1, 2, 3, 4, 5, 6]
        );
        assert_eq!(parse_hex("0x0x0a").unwrap(), [10]);
        assert_eq!(parse_hex("").unwrap(), Vec::<u8>::new());
        assert_eq!(parse_hex("aB cD").unwrap(), [0xab, 0xcd]);
    }

    #[test]
    fn lenient_mode_skips_everything_but_hex_digits() {
        assert_eq!(parse_hex_lenient("01 02:03,zz04").unwrap(), [1, 2, 3, 4]);
        // The `x` of a `0x` is skipped, its `0` is a digit.
        assert_eq!(parse_hex_lenient("0x0a0").unwrap(), [0x00, 0xa0]);
        assert_eq!(
            parse_hex_lenient("0x0a"),
            Err(HexError::OddDigits { digits: 3 })
        );
        assert_eq!(parse_hex_lenient("aé0bc").unwrap(), [0xa0, 0xbc]);
        assert_eq!(parse_hex_lenient("").unwrap(), Vec::<u8>::new());
        assert_eq!(
            parse_hex_lenient("abc"),
            Err(HexError::OddDigits { digits: 3 })
        );
    }

    #[test]
    fn non_ascii_and_non_hex_are_refused_by_position() {
        // Used to panic: `byte index 2 is not a char boundary`.
        assert_eq!(parse_hex("aé0"), Err(HexError::NotHex { ch: 'é', pos: 2 }));
        assert_eq!(parse_hex("zz"), Err(HexError::NotHex { ch: 'z', pos: 1 }));
        assert_eq!(
            parse_hex("00 1x"),
            Err(HexError::NotHex { ch: 'x', pos: 5 })
        );
        assert_eq!(parse_hex("abc"), Err(HexError::OddDigits { digits: 3 }));
        assert_eq!(
            parse_hex("ab 0xé").unwrap_err().to_string(),
            "not a hex digit: 'é' at position 6"
        );
    }
}
