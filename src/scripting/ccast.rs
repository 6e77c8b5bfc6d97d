//! C's conversions of a Lua number (a double) to an integer, as gcc compiles them on
//! x86-64: what Redis and its bundled Lua libraries get from `(long long)d`,
//! `(unsigned long)d` and `(int)d`, out-of-range values and NaN included.

/// 2^63: the first double past `i64::MAX` (and -2^63 is `i64::MIN` itself).
const TWO_63: f64 = 9_223_372_036_854_775_808.0;

/// C's `(long long)d` (and `(long)d`): truncation; out of range and NaN give `i64::MIN`.
pub fn f64_to_i64(d: f64) -> i64 {
    if (-TWO_63..TWO_63).contains(&d) {
        d as i64
    } else {
        i64::MIN
    }
}

/// C's `(unsigned long)d`: values from 2^63 up are converted as `d - 2^63` with the top
/// bit flipped; everything else (NaN included) as `(long)d`.
pub fn f64_to_u64(d: f64) -> u64 {
    if d >= TWO_63 {
        (f64_to_i64(d - TWO_63) as u64) ^ (1 << 63)
    } else {
        f64_to_i64(d) as u64
    }
}

/// C's `(int)d`: truncation; out of range and NaN give `i32::MIN`.
pub fn f64_to_i32(d: f64) -> i32 {
    if d > -2_147_483_649.0 && d < 2_147_483_648.0 {
        d as i32
    } else {
        i32::MIN
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_long_truncates_and_gives_the_minimum_out_of_range() {
        assert_eq!(f64_to_i64(3.99), 3);
        assert_eq!(f64_to_i64(-3.99), -3);
        assert_eq!(f64_to_i64(2f64.powi(62)), 1 << 62);
        for d in [
            1e300,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            2f64.powi(63),
        ] {
            assert_eq!(f64_to_i64(d), i64::MIN, "{d}");
        }
        assert_eq!(f64_to_i64(-(2f64.powi(63))), i64::MIN);
    }

    #[test]
    fn unsigned_long_wraps_from_two_to_the_63() {
        assert_eq!(f64_to_u64(2f64.powi(63)), 1 << 63);
        assert_eq!(f64_to_u64(2f64.powi(64) - 2048.0), u64::MAX - 2047);
        assert_eq!(f64_to_u64(-1.0), u64::MAX);
        assert_eq!(f64_to_u64(f64::NAN), 1 << 63);
        assert_eq!(f64_to_u64(2f64.powi(64)), 0);
    }

    #[test]
    fn int_truncates_and_gives_the_minimum_out_of_range() {
        assert_eq!(f64_to_i32(-2_147_483_648.9), i32::MIN);
        assert_eq!(f64_to_i32(2_147_483_647.9), i32::MAX);
        assert_eq!(f64_to_i32(2_147_483_648.0), i32::MIN);
        assert_eq!(f64_to_i32(f64::NAN), i32::MIN);
        assert_eq!(f64_to_i32(-7.5), -7);
    }
}
