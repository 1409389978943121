//! Float-to-integer conversions of virtual times (`ceil`, truncation,
//! `round` to `u64`), exact for every input and without calls to the
//! software rounding functions on targets without SSE4.1.

/// `x.ceil() as u64` (same result for every `x`, NaN and infinities
/// included) without a call to the software `ceil` on targets without
/// SSE4.1's rounding instruction.
#[inline]
pub(crate) fn ceil_u64(x: f64) -> u64 {
    if (0.0..I64_LIMIT).contains(&x) {
        // Signed conversions are single instructions; 0 <= t < 2^63.
        // SAFETY: 0 <= x < 2^63: finite, and its truncation fits an i64.
        let t: i64 = unsafe { x.to_int_unchecked() };
        if (t as f64) < x {
            (t + 1) as u64
        } else {
            t as u64
        }
    } else {
        let t = x as u64;
        if (t as f64) < x {
            t.saturating_add(1)
        } else {
            t
        }
    }
}

/// `x as u64` (truncation, saturating; same result for every `x`, NaN
/// included) through the single-instruction signed conversion where it is
/// exact.
#[inline]
pub(crate) fn trunc_u64(x: f64) -> u64 {
    if (0.0..I64_LIMIT).contains(&x) {
        // SAFETY: 0 <= x < 2^63: finite, and its truncation fits an i64.
        let t: i64 = unsafe { x.to_int_unchecked() };
        t as u64
    } else {
        x as u64
    }
}

/// 2^63 as an `f64`: below it, `as i64` is exact truncation.
const I64_LIMIT: f64 = 9_223_372_036_854_775_808.0;

/// `x.round() as u64` (half away from zero; same result for every `x`)
/// without a call to the software `round`.
#[inline]
pub(crate) fn round_u64(x: f64) -> u64 {
    if (0.0..I64_LIMIT).contains(&x) {
        let t = x as i64;
        // Exact: x and its truncation are within 2^63 and share an
        // exponent range, so the difference is representable.
        if x - t as f64 >= 0.5 {
            (t + 1) as u64
        } else {
            t as u64
        }
    } else {
        x.round() as u64
    }
}

#[cfg(test)]
mod ceil_tests {
    use super::{ceil_u64, round_u64, trunc_u64};

    #[test]
    fn ceil_u64_matches_std() {
        let xs = [
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            -1.5,
            -0.5,
            -0.0,
            0.0,
            0.25,
            1.0,
            1.0000001,
            2.5,
            600.0,
            4503599627370495.5,
            9007199254740993.0,
            18446744073709549568.0,
            18446744073709551616.0,
            1e30,
        ];
        for x in xs {
            assert_eq!(ceil_u64(x), x.ceil() as u64, "{x}");
            assert_eq!(trunc_u64(x), x as u64, "{x}");
            assert_eq!(round_u64(x), x.round() as u64, "{x}");
        }
        for x in [
            0.5,
            1.5,
            2.4999999999999996,
            0.49999999999999994,
            80.0,
            79.5,
        ] {
            assert_eq!(round_u64(x), x.round() as u64, "{x}");
        }
        let mut v = 0.0f64;
        for i in 0..100_000u64 {
            v += 0.37 + (i % 7) as f64 * 0.011;
            assert_eq!(ceil_u64(v), v.ceil() as u64, "{v}");
            assert_eq!(round_u64(v), v.round() as u64, "{v}");
            let w = v * 1e13;
            assert_eq!(ceil_u64(w), w.ceil() as u64, "{w}");
            assert_eq!(trunc_u64(w), w as u64, "{w}");
            assert_eq!(round_u64(w), w.round() as u64, "{w}");
        }
    }
}
