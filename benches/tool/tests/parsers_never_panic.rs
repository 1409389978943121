//! Property tests: the hex and size parsers accept any string without
//! panicking, and every valid size form reads back to its value.

// The shared deterministic generator, so failures reproduce.
use bareverbs_sim::rng::Rng;
use bareverbs_tool::args::{parse_int, positive_u64};
use bareverbs_tool::decode::parse_hex;

/// Characters the parsers treat specially, plus multi-byte ones.
const ALPHABET: &[char] = &[
    '0', '1', '7', '8', '9', 'a', 'f', 'A', 'F', 'g', 'x', 'X', 'k', 'K', 'M', 'G', '+', '-', ' ',
    '\t', ':', ',', 'é', '€', '😀', '\u{0}', '\u{85}', '\u{a0}',
];

fn random_string(r: &mut Rng) -> String {
    let len = r.below(24) as usize;
    (0..len)
        .map(|_| {
            if r.below(4) == 0 {
                char::from_u32(r.below(0x11_0000) as u32).unwrap_or('\u{fffd}')
            } else {
                ALPHABET[r.below(ALPHABET.len() as u64) as usize]
            }
        })
        .collect()
}

#[test]
fn random_strings_never_panic() {
    let mut r = Rng::new(0x9E37_79B9_7F4A_7C15);
    for _ in 0..200_000 {
        let s = random_string(&mut r);
        if let Ok(b) = parse_hex(&s) {
            // Whatever was accepted holds exactly half as many bytes as
            // it has hex digits.
            let digits = s
                .split_whitespace()
                .map(|w| w.trim_start_matches("0x").trim_start_matches("0X"))
                .flat_map(|w| w.chars())
                .filter(char::is_ascii_hexdigit)
                .count();
            assert!(b.len() * 2 <= digits, "{s:?}");
        }
        let _ = parse_int(&s, true);
        let _ = parse_int(&s, false);
        let _ = positive_u64(&s);
    }
}

#[test]
fn random_bytes_as_lossy_utf8_never_panic() {
    let mut r = Rng::new(7);
    for _ in 0..50_000 {
        let n = r.below(32) as usize;
        let bytes: Vec<u8> = (0..n).map(|_| r.next_u64() as u8).collect();
        let s = String::from_utf8_lossy(&bytes);
        let _ = parse_hex(&s);
        let _ = parse_int(&s, true);
    }
}

#[test]
fn valid_sizes_round_trip() {
    let mut r = Rng::new(42);
    for _ in 0..100_000 {
        let v = r.next_u64() >> r.below(64);
        let forms = [
            (format!("{v}"), v, true),
            (format!("0x{v:x}"), v, true),
            (format!("0X{v:X}"), v, true),
            (format!("0{v:o}"), v, true),
            (format!("+{v}"), v, true),
        ];
        for (s, want, ok) in forms {
            assert_eq!(parse_int(&s, true).ok(), ok.then_some(want), "{s}");
        }
        let small = v >> 34;
        for (suffix, shift) in [("K", 10), ("M", 20), ("G", 30)] {
            let s = format!("{small}{suffix}");
            assert_eq!(parse_int(&s, true), Ok(small << shift), "{s}");
            let s = format!("0x{small:x}{suffix}");
            assert_eq!(parse_int(&s, true), Ok(small << shift), "{s}");
            assert!(parse_int(&format!("{small}{suffix}"), false).is_err());
        }
    }
}

#[test]
fn hex_round_trip() {
    let mut r = Rng::new(3);
    for _ in 0..20_000 {
        let n = r.below(40) as usize;
        let bytes: Vec<u8> = (0..n).map(|_| r.next_u64() as u8).collect();
        let spaced: String = bytes.iter().map(|b| format!("{b:02x} ")).collect();
        assert_eq!(parse_hex(&spaced).unwrap(), bytes);
        let words: String = bytes
            .chunks(4)
            .map(|c| {
                format!(
                    "0x{} ",
                    c.iter().map(|b| format!("{b:02X}")).collect::<String>()
                )
            })
            .collect();
        assert_eq!(parse_hex(&words).unwrap(), bytes);
    }
}

/// `--device` names: any string parses or is refused without panicking,
/// and a refusal names the string; `vfio:` plus any non-empty address is
/// accepted as given (the VFIO host checks its form).
#[test]
fn device_names_never_panic() {
    use bareverbs_tool::device_arg::Device;
    let mut r = Rng::new(0xdead_beef);
    for _ in 0..20_000 {
        let mut s = random_string(&mut r);
        if r.below(3) == 0 {
            s.insert_str(0, "vfio:");
        }
        match Device::parse(&s) {
            Ok(d) => assert_eq!(d.name(), s),
            Err(e) => assert!(e.to_string().contains(&format!("{s:?}"))),
        }
    }
}
