//! Command-line argument parsing shared by the `bareverbs` subcommands:
//! perftest-style sizes and counts, output-path checks, and the
//! [`UsageError`] marker that makes bad user input exit with status 2.
//!
//! # Sizes
//!
//! Sizes are read the way perftest reads `-s`: an integer in C `strtol`
//! base-0 notation — decimal (`4096`), hexadecimal with a `0x`/`0X` prefix
//! (`0x1000`) or octal with a leading `0` (`010` = 8) — optionally followed
//! by one binary-multiple suffix in upper case: `K` (×1024), `M` (×1024²),
//! and, beyond perftest, `G` (×1024³). Unlike perftest, which stops at the
//! first character it cannot read and uses what came before, anything
//! after the number other than one suffix is an error naming the
//! character, so `-s 64k` is refused instead of silently meaning 64 bytes.
//! Message sizes (`-s`) keep perftest's range, 1 to 2³¹−1 bytes.

use std::fmt;
use std::path::Path;

/// Bad user input (an argument, an option combination, an input file):
/// `main` exits with status 2 for any error whose chain contains one, and
/// with status 1 for every other (run-time) failure.
#[derive(Debug)]
pub struct UsageError(anyhow::Error);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#}", self.0)
    }
}

impl std::error::Error for UsageError {}

/// A [`UsageError`] with `msg` as its text.
pub fn usage_error(msg: impl fmt::Display) -> anyhow::Error {
    anyhow::Error::new(UsageError(anyhow::anyhow!("{msg}")))
}

/// Whether `e` (or anything in its chain) is a [`UsageError`].
pub fn is_usage(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.is::<UsageError>())
}

/// Marks the error of a `Result` as bad user input ([`UsageError`]).
pub trait UsageExt<T> {
    /// The same result, its error wrapped in a [`UsageError`] (unless it
    /// already is one).
    fn usage(self) -> anyhow::Result<T>;
}

impl<T, E: Into<anyhow::Error>> UsageExt<T> for Result<T, E> {
    fn usage(self) -> anyhow::Result<T> {
        self.map_err(|e| {
            let e = e.into();
            if is_usage(&e) {
                e
            } else {
                anyhow::Error::new(UsageError(e))
            }
        })
    }
}

/// Why a size or count argument was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SizeError {
    /// Nothing to read.
    Empty,
    /// A minus sign: sizes and counts are never negative.
    Negative,
    /// `0x` with no hex digits after it.
    NoDigits,
    /// A character that is neither a digit of the number's base nor a
    /// suffix (`pos` counts characters from 1).
    BadChar {
        /// The character.
        ch: char,
        /// Its position in the argument, from 1.
        pos: usize,
        /// `"decimal"`, `"hex"` or `"octal"`: the base being read.
        base: &'static str,
    },
    /// A `K`/`M`/`G` suffix where none is allowed (counts).
    SuffixNotAllowed {
        /// The suffix.
        ch: char,
    },
    /// The value does not fit in 64 bits.
    Overflow,
    /// The value is outside what the option takes.
    OutOfRange {
        /// The value read.
        value: u64,
        /// Smallest allowed.
        min: u64,
        /// Largest allowed.
        max: u64,
    },
}

impl fmt::Display for SizeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SizeError::Empty => write!(f, "empty value"),
            SizeError::Negative => write!(f, "must not be negative"),
            SizeError::NoDigits => write!(f, "no hex digits after 0x"),
            SizeError::BadChar { ch, pos, base } => {
                write!(
                    f,
                    "unexpected {ch:?} at position {pos} (reading a {base} number"
                )?;
                if matches!(ch, 'k' | 'm' | 'g') {
                    write!(f, "; suffixes are upper case: K, M, G")?;
                } else if *base == "octal" && ch.is_ascii_digit() {
                    write!(f, "; a leading 0 means octal, as in perftest")?;
                }
                write!(f, ")")
            }
            SizeError::SuffixNotAllowed { ch } => {
                write!(f, "takes a plain integer, no {ch:?} suffix")
            }
            SizeError::Overflow => write!(f, "too large for 64 bits"),
            SizeError::OutOfRange { value, min, max } => {
                write!(f, "{value} is outside {min}..={max}")
            }
        }
    }
}

impl std::error::Error for SizeError {}

/// Reads an integer in perftest's notation (see the module docs), with a
/// `K`/`M`/`G` suffix when `suffix` is set. Any string is accepted as
/// input; nothing panics.
pub fn parse_int(text: &str, suffix: bool) -> Result<u64, SizeError> {
    let chars: Vec<char> = text.chars().collect();
    if chars.is_empty() {
        return Err(SizeError::Empty);
    }
    let mut body = &chars[..];
    if body[0] == '-' {
        return Err(SizeError::Negative);
    }
    if body[0] == '+' {
        body = &body[1..];
    }
    let mut factor = 1u64;
    if let Some(&last) = body.last() {
        let f = match last {
            'K' => Some(1u64 << 10),
            'M' => Some(1 << 20),
            'G' => Some(1 << 30),
            _ => None,
        };
        if let Some(f) = f {
            if !suffix {
                return Err(SizeError::SuffixNotAllowed { ch: last });
            }
            factor = f;
            body = &body[..body.len() - 1];
        }
    }
    // Position (from 1) in `text` of `body[0]`.
    let start = chars.len() - body.len() - usize::from(factor != 1) + 1;
    let (radix, base, digits, first) = match body {
        ['0', 'x' | 'X', rest @ ..] => {
            if rest.is_empty() {
                return Err(SizeError::NoDigits);
            }
            (16, "hex", rest, start + 2)
        }
        ['0', rest @ ..] if !rest.is_empty() => (8, "octal", rest, start + 1),
        [] => return Err(SizeError::Empty),
        _ => (10, "decimal", body, start),
    };
    let mut v = 0u64;
    for (i, &ch) in digits.iter().enumerate() {
        let d = ch.to_digit(radix).ok_or(SizeError::BadChar {
            ch,
            pos: first + i,
            base,
        })?;
        v = v
            .checked_mul(radix as u64)
            .and_then(|v| v.checked_add(d as u64))
            .ok_or(SizeError::Overflow)?;
    }
    v.checked_mul(factor).ok_or(SizeError::Overflow)
}

/// Reads a size (with suffix) and checks it lies in `min..=max`.
pub fn parse_size_in(text: &str, min: u64, max: u64) -> Result<u64, SizeError> {
    let value = parse_int(text, true)?;
    if value < min || value > max {
        return Err(SizeError::OutOfRange { value, min, max });
    }
    Ok(value)
}

/// perftest's largest message size (`-s`): `UINT_MAX / 2`.
pub const MAX_MESSAGE_SIZE: u64 = (u32::MAX / 2) as u64;

/// clap value parser for a message size in bytes (perftest `-s`):
/// 1..=[`MAX_MESSAGE_SIZE`].
pub fn message_size(text: &str) -> Result<u64, SizeError> {
    parse_size_in(text, 1, MAX_MESSAGE_SIZE)
}

/// [`message_size`] as a `u32`.
pub fn message_size_u32(text: &str) -> Result<u32, SizeError> {
    message_size(text).map(|v| v as u32)
}

/// clap value parser for a byte count that may be 0 (inline sizes):
/// 0..=`u32::MAX`.
pub fn byte_size_u32(text: &str) -> Result<u32, SizeError> {
    parse_size_in(text, 0, u32::MAX as u64).map(|v| v as u32)
}

/// Why a count argument was refused: "must be a positive integer" and
/// what was wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CountError(pub SizeError);

impl fmt::Display for CountError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            SizeError::Negative => write!(f, "must be a positive integer, not negative"),
            SizeError::OutOfRange { value: 0, .. } => {
                write!(f, "must be a positive integer, not 0")
            }
            e => write!(f, "must be a positive integer ({e})"),
        }
    }
}

impl std::error::Error for CountError {}

fn positive(text: &str, max: u64) -> Result<u64, CountError> {
    let v = parse_int(text, false).map_err(CountError)?;
    if v == 0 || v > max {
        return Err(CountError(SizeError::OutOfRange {
            value: v,
            min: 1,
            max,
        }));
    }
    Ok(v)
}

/// clap value parser for a positive count (perftest `-n`, `-t`, …):
/// decimal, `0x` hex or leading-`0` octal, 1..=`u64::MAX`, no suffix.
pub fn positive_u64(text: &str) -> Result<u64, CountError> {
    positive(text, u64::MAX)
}

/// [`positive_u64`] limited to `u32`.
pub fn positive_u32(text: &str) -> Result<u32, CountError> {
    positive(text, u32::MAX as u64).map(|v| v as u32)
}

/// clap value parser for a perftest count whose range perftest itself
/// checks with its own message (`-n`, `-t`, `-q`, `-Q`, `-D`): any
/// non-negative integer (decimal, `0x` hex or leading-`0` octal); a
/// negative one is refused here ("must be a positive integer").
pub fn count_u64(text: &str) -> Result<u64, CountError> {
    parse_int(text, false).map_err(CountError)
}

/// [`count_u64`] limited to `u32`.
pub fn count_u32(text: &str) -> Result<u32, CountError> {
    let v = count_u64(text)?;
    u32::try_from(v).map_err(|_| {
        CountError(SizeError::OutOfRange {
            value: v,
            min: 0,
            max: u32::MAX as u64,
        })
    })
}

/// clap value parser for perftest's `-s`: a size with `K`/`M`/`G`
/// suffix, decimal, `0x` hex or leading-`0` octal; its range is checked
/// with perftest's message by the perf engine.
pub fn perf_size(text: &str) -> Result<u64, SizeError> {
    parse_int(text, true)
}

/// Checks before any long work that `path` (the value of `option`) can be
/// written: an existing file is opened for appending (its contents are
/// left alone), a new one is created and removed again. A failure is a
/// [`UsageError`] naming the option and the path.
pub fn check_output_path(option: &str, path: &Path) -> anyhow::Result<()> {
    let fail = |e: std::io::Error| usage_error(format!("{option} {}: {e}", path.display()));
    if path.is_dir() {
        return Err(usage_error(format!(
            "{option} {}: is a directory",
            path.display()
        )));
    }
    if path.exists() {
        std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(fail)?;
    } else {
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(fail)?;
        std::fs::remove_file(path).map_err(fail)?;
    }
    Ok(())
}

/// A MAC address as `ip link` prints it: six hexadecimal bytes separated
/// by `:` (or `-`).
pub fn mac(text: &str) -> Result<[u8; 6], String> {
    let parts: Vec<&str> = text.split([':', '-']).collect();
    let bad = || format!("{text:?} is not a MAC address (six hex bytes, e.g. 0c:42:a1:00:00:01)");
    if parts.len() != 6 {
        return Err(bad());
    }
    let mut m = [0u8; 6];
    for (b, p) in m.iter_mut().zip(parts) {
        if p.is_empty() || p.len() > 2 {
            return Err(bad());
        }
        *b = u8::from_str_radix(p, 16).map_err(|_| bad())?;
    }
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perftest_forms() {
        for (s, v) in [
            ("64", 64),
            ("64K", 65536),
            ("1M", 1 << 20),
            ("2G", 2 << 30),
            ("0x1000", 4096),
            ("0X10K", 16 << 10),
            ("010", 8),
            ("0", 0),
            ("+5", 5),
        ] {
            assert_eq!(parse_int(s, true), Ok(v), "{s}");
        }
    }

    #[test]
    fn refusals_name_the_problem() {
        assert_eq!(parse_int("", true), Err(SizeError::Empty));
        assert_eq!(parse_int("-1", true), Err(SizeError::Negative));
        assert_eq!(parse_int("0x", true), Err(SizeError::NoDigits));
        assert_eq!(parse_int("K", true), Err(SizeError::Empty));
        assert_eq!(
            parse_int("64k", true),
            Err(SizeError::BadChar {
                ch: 'k',
                pos: 3,
                base: "decimal"
            })
        );
        assert_eq!(
            parse_int("08", true),
            Err(SizeError::BadChar {
                ch: '8',
                pos: 2,
                base: "octal"
            })
        );
        assert_eq!(
            parse_int("0x1g", true),
            Err(SizeError::BadChar {
                ch: 'g',
                pos: 4,
                base: "hex"
            })
        );
        assert_eq!(
            parse_int("4K", false),
            Err(SizeError::SuffixNotAllowed { ch: 'K' })
        );
        assert_eq!(
            parse_int("99999999999999999999", true),
            Err(SizeError::Overflow)
        );
        assert_eq!(
            parse_int("0xFFFFFFFFFFFFFFFFK", true),
            Err(SizeError::Overflow)
        );
        assert!(message_size("0").is_err());
        assert!(message_size("2G").is_err());
        assert_eq!(message_size("2147483647"), Ok(MAX_MESSAGE_SIZE));
        let e = positive_u64("-1").unwrap_err().to_string();
        assert!(e.starts_with("must be a positive integer"), "{e}");
        assert!(positive_u64("0").is_err());
        assert!(message_size("64k")
            .unwrap_err()
            .to_string()
            .contains("upper case"));
    }

    #[test]
    fn usage_marker_survives_context() {
        let e: anyhow::Result<()> = Err(usage_error("bad"));
        let e = anyhow::Context::context(e, "outer").unwrap_err();
        assert!(is_usage(&e));
        assert_eq!(format!("{e:#}"), "outer: bad");
        assert!(!is_usage(&anyhow::anyhow!("runtime")));
        let r: Result<(), std::io::Error> = Err(std::io::Error::other("x"));
        assert!(is_usage(&r.usage().unwrap_err()));
    }

    #[test]
    fn output_path_check() {
        let e = check_output_path("--svg", Path::new("/no/dir/x.svg")).unwrap_err();
        assert!(is_usage(&e));
        assert!(e.to_string().starts_with("--svg /no/dir/x.svg: "), "{e}");
        let dir = std::env::temp_dir();
        let p = dir.join(format!("bareverbs-args-{}.svg", std::process::id()));
        check_output_path("--svg", &p).unwrap();
        assert!(!p.exists(), "the probe file is removed again");
        assert!(check_output_path("--svg", &dir).is_err());
    }

    #[test]
    fn mac_addresses() {
        assert_eq!(mac("0c:42:a1:00:00:2f"), Ok([0x0c, 0x42, 0xa1, 0, 0, 0x2f]));
        assert_eq!(mac("0C-42-A1-0-0-2F"), Ok([0x0c, 0x42, 0xa1, 0, 0, 0x2f]));
        for bad in [
            "",
            "0c:42:a1:00:00",
            "0c:42:a1:00:00:2f:01",
            "0c:42:a1:00:00:2g",
            "0c:42:a1:000:00:2f",
            "0c::a1:00:00:2f",
        ] {
            assert!(mac(bad).is_err(), "{bad}");
        }
    }
}
