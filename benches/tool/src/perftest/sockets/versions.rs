//! `exchange_versions`: 16 bytes each way, the version string NUL-padded
//! (`char version[MAX_VERSION = 16]`), and the gates perftest puts on the
//! peer's version ([`Version`], parsed as C's `atof` reads it).

use super::stream::Oob;
use anyhow::bail;

/// The perftest version bareverbs speaks (perftest 6.29's `configure.ac`).
pub const PERFTEST_VERSION: &str = "6.29";

/// What bareverbs writes after the version's NUL: perftest reads the
/// string with `atof`, which stops at the NUL, so a bareverbs peer can
/// tell a bareverbs peer from perftest.
const MARK: &[u8] = b"bareverbs";

/// The 16 bytes of `exchange_versions`.
pub const VERSION_BYTES: usize = 16;

/// The peer's version as it announced it.
#[derive(Clone, Debug, PartialEq)]
pub struct Version {
    /// The text before the first NUL.
    pub text: String,
    /// Its value as C's `atof` reads it (a leading decimal number; 0 if none).
    pub value: f64,
    /// The peer is bareverbs (it marked the bytes after the NUL).
    pub bareverbs: bool,
}

impl Version {
    /// Parses the 16 bytes a peer sent.
    pub fn parse(b: &[u8; VERSION_BYTES]) -> Version {
        let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
        let text = String::from_utf8_lossy(&b[..end]).into_owned();
        let rest = &b[(end + 1).min(b.len())..];
        Version {
            value: atof(&text),
            bareverbs: rest.starts_with(MARK),
            text,
        }
    }

    /// The 16 bytes bareverbs sends: [`PERFTEST_VERSION`], NUL, the mark.
    pub fn ours() -> [u8; VERSION_BYTES] {
        let mut b = [0u8; VERSION_BYTES];
        let v = PERFTEST_VERSION.as_bytes();
        b[..v.len()].copy_from_slice(v);
        b[v.len() + 1..v.len() + 1 + MARK.len()].copy_from_slice(MARK);
        b
    }

    /// perftest's `check_version_compatibility`.
    pub fn check(&self) -> anyhow::Result<()> {
        if self.value < 5.70 {
            bail!(
                "Current implementation is not compatible with versions older than 5.70 \
                 (the peer announced {:?})",
                self.text
            );
        }
        Ok(())
    }
}

/// C's `atof` on `s`: optional blanks and sign, digits, an optional
/// fraction; whatever follows is ignored.
fn atof(s: &str) -> f64 {
    let t = s.trim_start();
    let mut end = 0;
    let mut dot = false;
    for (i, c) in t.char_indices() {
        let ok = c.is_ascii_digit() || (c == '.' && !dot) || (i == 0 && (c == '-' || c == '+'));
        if !ok {
            break;
        }
        dot |= c == '.';
        end = i + c.len_utf8();
    }
    t[..end].parse().unwrap_or(0.0)
}

impl Oob {
    /// `exchange_versions`: sends ours, returns the peer's (not yet
    /// checked: see [`Version::check`]).
    pub fn exchange_versions(&mut self) -> anyhow::Result<Version> {
        let mut theirs = [0u8; VERSION_BYTES];
        self.exchange(&Version::ours(), &mut theirs)?;
        Ok(Version::parse(&theirs))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_as_atof_reads_them() {
        let mut b = [0u8; 16];
        b[..4].copy_from_slice(b"6.29");
        let v = Version::parse(&b);
        assert_eq!(
            (v.value, v.bareverbs, v.text.as_str()),
            (6.29, false, "6.29")
        );
        assert!(v.check().is_ok());
        b[..4].copy_from_slice(b"5.60");
        assert!(Version::parse(&b).check().is_err());
        let ours = Version::ours();
        assert_eq!(&ours[..5], b"6.29\0");
        assert!(Version::parse(&ours).bareverbs);
        // No NUL at all, garbage: never a panic.
        assert_eq!(Version::parse(&[b'x'; 16]).value, 0.0);
        assert_eq!(atof("5.33.1beta"), 5.33);
        assert_eq!(atof(" 6"), 6.0);
    }
}
