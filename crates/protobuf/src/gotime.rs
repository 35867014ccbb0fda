//! Go's JSON forms of `metav1.Time` (RFC 3339, seconds), `metav1.MicroTime` (RFC 3339 with
//! six fractional digits) and `metav1.Duration` (`time.Duration.String()`), and reading
//! durations back (times are read back by `kuorum_api::time`).

use chrono::{DateTime, SecondsFormat, Utc};

/// `2026-11-22T05:40:00Z`; `None` out of chrono's range.
pub fn format_time(seconds: i64) -> Option<String> {
    Some(DateTime::<Utc>::from_timestamp(seconds, 0)?.to_rfc3339_opts(SecondsFormat::Secs, true))
}

/// `2026-11-22T05:40:00.123456Z` (nanoseconds truncated to microseconds, like Go's Format).
pub fn format_micro_time(seconds: i64, nanos: u32) -> Option<String> {
    let nanos = nanos.min(999_999_999);
    Some(DateTime::<Utc>::from_timestamp(seconds, nanos)?.to_rfc3339_opts(SecondsFormat::Micros, true))
}

/// Go's `time.Duration.String()` of a count of nanoseconds: `1h2m3.5s`, `1.5ms`, `0s`.
pub fn format_duration(nanos: i64) -> String {
    let neg = nanos < 0;
    let mut u = nanos.unsigned_abs();
    let mut out = String::new();
    if u < 1_000_000_000 {
        let (prec, unit) = match u {
            0 => return "0s".into(),
            1..=999 => (0, "ns"),
            1_000..=999_999 => (3, "µs"),
            _ => (6, "ms"),
        };
        let (frac, int) = fraction(u, prec);
        out.push_str(&int.to_string());
        out.push_str(&frac);
        out.push_str(unit);
    } else {
        let (frac, secs) = fraction(u, 9);
        u = secs;
        let s = format!("{}{frac}s", u % 60);
        u /= 60;
        if u > 0 {
            let m = format!("{}m", u % 60);
            u /= 60;
            if u > 0 {
                out.push_str(&format!("{u}h"));
            }
            out.push_str(&m);
        }
        out.push_str(&s);
    }
    if neg {
        out.insert(0, '-');
    }
    out
}

/// (".fraction" without trailing zeros or "", the integer part) of v / 10^prec.
fn fraction(v: u64, prec: u32) -> (String, u64) {
    if prec == 0 {
        return (String::new(), v);
    }
    let p = 10u64.pow(prec);
    let (int, frac) = (v / p, v % p);
    if frac == 0 {
        return (String::new(), int);
    }
    let digits = format!("{frac:0width$}", width = prec as usize);
    (format!(".{}", digits.trim_end_matches('0')), int)
}

/// Go's `time.ParseDuration`: `[-+]?([0-9]*(\.[0-9]*)?(ns|us|µs|μs|ms|s|m|h))+` or `0`.
pub fn parse_duration(s: &str) -> Option<i64> {
    let (neg, mut rest) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    if rest == "0" {
        return Some(0);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total: u128 = 0;
    while !rest.is_empty() {
        let int_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        let (int, after) = rest.split_at(int_len);
        let (frac, after) = match after.strip_prefix('.') {
            Some(a) => {
                let n = a.bytes().take_while(u8::is_ascii_digit).count();
                a.split_at(n)
            }
            None => ("", after),
        };
        if int.is_empty() && frac.is_empty() {
            return None;
        }
        let unit_len = after.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(after.len());
        let (unit, after) = after.split_at(unit_len);
        let scale: u128 = match unit {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => return None,
        };
        let int: u128 = if int.is_empty() { 0 } else { int.parse().ok()? };
        total = total.checked_add(int.checked_mul(scale)?)?;
        if !frac.is_empty() {
            let digits = &frac[..frac.len().min(30)];
            let f: u128 = digits.parse().ok()?;
            total = total.checked_add(f.checked_mul(scale)? / 10u128.pow(digits.len() as u32))?;
        }
        rest = after;
    }
    let limit = if neg { 1u128 << 63 } else { (1u128 << 63) - 1 };
    if total > limit {
        return None;
    }
    let total = total as i128;
    i64::try_from(if neg { -total } else { total }).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times() {
        assert_eq!(format_time(1_795_326_000).unwrap(), "2026-11-22T05:40:00Z");
        assert_eq!(format_micro_time(1_795_326_000, 123_456_789).unwrap(), "2026-11-22T05:40:00.123456Z");
        assert_eq!(format_micro_time(1_795_326_000, 0).unwrap(), "2026-11-22T05:40:00.000000Z");
        assert_eq!(format_time(i64::MAX), None);
    }

    #[test]
    fn durations() {
        for (nanos, s) in [
            (0, "0s"),
            (1, "1ns"),
            (1_100, "1.1µs"),
            (2_200_000, "2.2ms"),
            (3_300_000_000, "3.3s"),
            (60_000_000_000, "1m0s"),
            (3_600_000_000_000, "1h0m0s"),
            (4_000_000_000 + 5 * 60_000_000_000 + 3_600_000_000_000, "1h5m4s"),
            (-1_500_000_000, "-1.5s"),
        ] {
            assert_eq!(format_duration(nanos), s);
            assert_eq!(parse_duration(s), Some(nanos), "{s}");
        }
        assert_eq!(format_duration(i64::MIN), "-2562047h47m16.854775808s");
        assert_eq!(parse_duration("-2562047h47m16.854775808s"), Some(i64::MIN));
        assert_eq!(parse_duration("1.5h"), Some(5_400_000_000_000));
        assert_eq!(parse_duration("10us"), Some(10_000));
        for bad in ["", "1", "h", "1x", "-", "1.h2", "99999999999999999999h"] {
            assert_eq!(parse_duration(bad), None, "{bad}");
        }
    }
}
