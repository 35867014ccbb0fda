//! Owns Kubernetes' wall-clock times as text, written one way and read one way everywhere:
//! `metav1.Time` written as RFC 3339 to the second in UTC (`2026-11-21T23:45:28Z`), and
//! `metav1.Time` or `metav1.MicroTime` read back exactly as Go's `time.Parse` reads them
//! with their layouts. Typed decoding (400 with Go's error), table ages, managedFields'
//! order and protobuf bodies all read through [`parse`], so no two of them accept different
//! spellings of a time; [`format_instant`] writes a time read back as kube-apiserver
//! stores it (`2026-01-02T03:04:05.1+02:00` → `2026-01-02T01:04:05Z`; a MicroTime
//! `2026-01-02T03:04:05.100000+02:00` → `2026-01-02T01:04:05.100000Z`).

/// Go's `time.RFC3339` layout, as `metav1.Time` parses with it.
const RFC3339: &str = "2006-01-02T15:04:05Z07:00";
/// `metav1.MicroTime`'s layout: exactly six fraction digits.
const RFC3339_MICRO: &str = "2006-01-02T15:04:05.000000Z07:00";

/// An instant: seconds since the Unix epoch and nanoseconds within the second.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Instant {
    pub secs: i64,
    pub nanos: u32,
}

impl Instant {
    /// Go's zero `time.Time`, 0001-01-01T00:00:00Z, which `metav1.Time` and `MicroTime`
    /// write as `null`.
    pub const ZERO: Instant = Instant { secs: -62_135_596_800, nanos: 0 };

    pub fn is_zero(self) -> bool {
        self == Instant::ZERO
    }
}

/// The UTC calendar fields of Unix seconds: year, month, day, hour, minute, second (the
/// civil-from-days algorithm).
fn civil(secs: i64) -> (i64, i64, i64, i64, i64, i64) {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (h, m, s) = (rem / 3600, (rem % 3600) / 60, rem % 60);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let mo = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + if mo <= 2 { 1 } else { 0 };
    (y, mo, d, h, m, s)
}

/// Formats Unix seconds as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn format(secs: i64) -> String {
    let (y, mo, d, h, m, s) = civil(secs);
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{m:02}:{s:02}Z")
}

/// `t` as kube-apiserver writes a `metav1.Time` (`t.UTC().Format(time.RFC3339)`: cut to the
/// second) or, with `micro`, a `metav1.MicroTime` (cut to the microsecond, always six
/// digits), in UTC. `None` where the UTC year has no four-digit form (an offset can move
/// `0000-01-01T00:00:00+01:00` into year -1): Go would write `-0001-…`, which no RFC 3339
/// parser, Go's included, reads back.
pub fn format_instant(t: Instant, micro: bool) -> Option<String> {
    let (y, mo, d, h, m, s) = civil(t.secs);
    if !(0..=9999).contains(&y) {
        return None;
    }
    Some(if micro {
        format!("{y:04}-{mo:02}-{d:02}T{h:02}:{m:02}:{s:02}.{:06}Z", t.nanos / 1000)
    } else {
        format!("{y:04}-{mo:02}-{d:02}T{h:02}:{m:02}:{s:02}Z")
    })
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Seconds since the epoch of a `metav1.Time`, or `None` where Go's parse fails.
pub fn unix_seconds(s: &str) -> Option<i64> {
    parse(s, false).ok().map(|t| t.secs)
}

/// `s` read as Go's `time.Parse` reads it with `metav1.Time`'s layout (RFC 3339, any
/// fraction) or, with `micro`, `metav1.MicroTime`'s (exactly six fraction digits); Go's
/// error text if it does not parse. Linear in `s`, and never reads past its end.
pub fn parse(s: &str, micro: bool) -> Result<Instant, String> {
    let layout = if micro { RFC3339_MICRO } else { RFC3339 };
    let quote = |t: &str| format!("{t:?}");
    let cannot = |rest: &str, elem: &str| {
        format!("parsing time {} as {}: cannot parse {} as {}", quote(s), quote(layout), quote(rest), quote(elem))
    };
    let out_of_range = |what: &str| format!("parsing time {}: {what} out of range", quote(s));
    let b = s.as_bytes();
    let digit = |i: usize| b.get(i).is_some_and(u8::is_ascii_digit);
    let num = |from: usize, len: usize| s[from..from + len].parse::<u32>().unwrap_or(0);
    let mut i = 0;
    // Year: four digits.
    if !(0..4).all(digit) {
        return Err(cannot(s, "2006"));
    }
    let year = num(0, 4);
    i += 4;
    let mut fields = [0u32; 5];
    // Month, day, hour, minute, second, each after its separator; the hour may have one digit.
    for (n, (sep, elem)) in [("-", "01"), ("-", "02"), ("T", "15"), (":", "04"), (":", "05")].iter().enumerate() {
        if !s[i..].starts_with(sep) {
            return Err(cannot(&s[i..], sep));
        }
        i += 1;
        let width = if !digit(i) {
            0
        } else if digit(i + 1) {
            2
        } else if n == 2 {
            1
        } else {
            0
        };
        if width == 0 {
            return Err(cannot(&s[i..], elem));
        }
        fields[n] = num(i, width);
        i += width;
        let limit = [12, 31, 23, 59, 59][n];
        if fields[n] > limit || (n == 0 && fields[n] == 0) {
            return Err(out_of_range(["month", "day", "hour", "minute", "second"][n]));
        }
    }
    // Fraction: exactly six digits for MicroTime; any number of them, optional, for Time.
    let mut nanos = 0u32;
    let mut fraction = |from: usize, to: usize| {
        // Digits past the ninth are read and dropped, as Go does.
        for k in 0..9 {
            let d = if from + k < to { u32::from(b[from + k] - b'0') } else { 0 };
            nanos = nanos * 10 + d;
        }
    };
    if micro {
        let ok = matches!(b.get(i), Some(b'.' | b',')) && (1..=6).all(|k| digit(i + k));
        if !ok {
            return Err(cannot(&s[i..], ".000000"));
        }
        fraction(i + 1, i + 7);
        i += 7;
    } else if matches!(b.get(i), Some(b'.' | b',')) && digit(i + 1) {
        let from = i + 1;
        i += 1;
        while digit(i) {
            i += 1;
        }
        fraction(from, i);
    }
    // Zone: Z or ±hh:mm.
    let offset = match b.get(i) {
        Some(b'Z') => {
            i += 1;
            0
        }
        Some(sign @ (b'+' | b'-'))
            if digit(i + 1) && digit(i + 2) && b.get(i + 3) == Some(&b':') && digit(i + 4) && digit(i + 5) =>
        {
            let (oh, om) = (num(i + 1, 2), num(i + 4, 2));
            if oh > 24 {
                return Err(out_of_range("time zone offset hour"));
            }
            if om > 60 {
                return Err(out_of_range("time zone offset minute"));
            }
            i += 6;
            let o = i64::from(oh) * 3600 + i64::from(om) * 60;
            if *sign == b'-' {
                -o
            } else {
                o
            }
        }
        _ => return Err(cannot(&s[i..], "Z07:00")),
    };
    if i < s.len() {
        return Err(format!("parsing time {}: extra text: {}", quote(s), quote(&s[i..])));
    }
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match fields[0] {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    if fields[1] == 0 || fields[1] > days {
        return Err(out_of_range("day"));
    }
    let [month, day, h, m, sec] = fields.map(i64::from);
    let secs = days_from_civil(i64::from(year), month, day) * 86_400 + h * 3600 + m * 60 + sec - offset;
    Ok(Instant { secs, nanos })
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_795_304_728; // 2026-11-21T23:45:28Z

    #[test]
    fn format_matches_known_instants() {
        assert_eq!(format(0), "1970-01-01T00:00:00Z");
        assert_eq!(format(NOW), "2026-11-21T23:45:28Z");
        assert_eq!(format(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(format(-62_135_596_800), "0001-01-01T00:00:00Z");
    }

    #[test]
    fn parse_reads_the_instant() {
        let at = |s: &str| parse(s, false).map(|t| (t.secs, t.nanos));
        assert_eq!(at("2026-11-21T23:45:28Z"), Ok((NOW, 0)));
        assert_eq!(at("2026-11-21T23:45:28.123456Z"), Ok((NOW, 123_456_000)));
        assert_eq!(at("2026-11-21T23:45:28.1234567891Z"), Ok((NOW, 123_456_789)));
        assert_eq!(at("2026-11-22T00:45:28+01:00"), Ok((NOW, 0)));
        assert_eq!(at("2026-11-21T22:45:28,5-01:00"), Ok((NOW, 500_000_000)));
        assert_eq!(at("2026-11-21T3:45:28Z").map(|t| t.0), Ok(NOW - 20 * 3600));
        assert_eq!(at("1970-01-01T00:00:00Z"), Ok((0, 0)));
        assert_eq!(at("0001-01-01T00:00:00Z"), Ok((-62_135_596_800, 0)));
        assert_eq!(parse("2026-11-21T23:45:28.000001Z", true).map(|t| t.nanos), Ok(1_000));
        for secs in [0, NOW, 951_782_400, -62_135_596_800, 253_402_300_799] {
            assert_eq!(unix_seconds(&format(secs)), Some(secs));
        }
    }

    #[test]
    fn instants_are_written_as_kube_writes_them() {
        let canonical = |s: &str, micro: bool| format_instant(parse(s, micro).unwrap(), micro);
        assert_eq!(canonical("2026-01-02T03:04:05.123+02:00", false).unwrap(), "2026-01-02T01:04:05Z");
        assert_eq!(
            canonical("2026-01-02T03:04:05.999999999Z", false).unwrap(),
            "2026-01-02T03:04:05Z",
            "cut, not rounded"
        );
        assert_eq!(canonical("2026-01-02T00:30:00-01:00", false).unwrap(), "2026-01-02T01:30:00Z");
        assert_eq!(canonical("2026-01-01T00:30:00+01:00", false).unwrap(), "2025-12-31T23:30:00Z", "across a year");
        assert_eq!(canonical("2026-01-02T3:04:05Z", false).unwrap(), "2026-01-02T03:04:05Z");
        assert_eq!(canonical("2026-01-02T03:04:05,5Z", false).unwrap(), "2026-01-02T03:04:05Z");
        assert_eq!(canonical("2026-01-02T03:04:05.123456+02:00", true).unwrap(), "2026-01-02T01:04:05.123456Z");
        assert_eq!(canonical("2026-01-02T03:04:05.000001Z", true).unwrap(), "2026-01-02T03:04:05.000001Z");
        assert_eq!(canonical("2026-01-02T03:04:05.100000-00:30", true).unwrap(), "2026-01-02T03:34:05.100000Z");
        let instant = Instant { secs: NOW, nanos: 123_456_789 };
        assert_eq!(format_instant(instant, true).unwrap(), "2026-11-21T23:45:28.123456Z");
        assert_eq!(format_instant(instant, false).unwrap(), "2026-11-21T23:45:28Z");
        // The ends of four-digit years, and past them.
        assert_eq!(canonical("0000-01-01T00:00:00Z", false).unwrap(), "0000-01-01T00:00:00Z");
        assert_eq!(canonical("9999-12-31T23:59:59Z", false).unwrap(), "9999-12-31T23:59:59Z");
        assert_eq!(canonical("0000-01-01T00:00:00+01:00", false), None);
        assert_eq!(canonical("9999-12-31T23:00:00-01:00", false), None);
        // Go's zero time, however written.
        assert!(parse("0001-01-01T00:00:00Z", false).unwrap().is_zero());
        assert!(parse("0001-01-01T02:00:00+02:00", false).unwrap().is_zero());
        assert!(parse("0001-01-01T00:00:00.000000Z", true).unwrap().is_zero());
        assert!(!parse("0001-01-01T00:00:00.5Z", false).unwrap().is_zero());
    }

    #[test]
    fn parse_fails_as_go_fails() {
        for ok in
            ["2026-01-02T03:04:05Z", "2026-01-02T03:04:05.123Z", "2026-01-02T3:04:05+02:00", "2024-02-29T00:00:00Z"]
        {
            assert!(parse(ok, false).is_ok(), "{ok}");
        }
        assert!(parse("2026-01-02T03:04:05.000000Z", true).is_ok());
        let err = |s: &str, micro: bool| parse(s, micro).unwrap_err();
        assert_eq!(
            err("yesterday", false),
            r#"parsing time "yesterday" as "2006-01-02T15:04:05Z07:00": cannot parse "yesterday" as "2006""#
        );
        assert_eq!(
            err("2026-01-02 03:04:05Z", false),
            r#"parsing time "2026-01-02 03:04:05Z" as "2006-01-02T15:04:05Z07:00": cannot parse " 03:04:05Z" as "T""#
        );
        assert_eq!(err("2026-13-02T03:04:05Z", false), r#"parsing time "2026-13-02T03:04:05Z": month out of range"#);
        assert_eq!(err("2025-02-29T03:04:05Z", false), r#"parsing time "2025-02-29T03:04:05Z": day out of range"#);
        assert_eq!(
            err("2026-01-02T03:04:05Zjunk", false),
            r#"parsing time "2026-01-02T03:04:05Zjunk": extra text: "junk""#
        );
        assert_eq!(
            err("2026-01-02T03:04:05Z", true),
            r#"parsing time "2026-01-02T03:04:05Z" as "2006-01-02T15:04:05.000000Z07:00": cannot parse "Z" as ".000000""#
        );
        for bad in
            ["", "2026", "2026-11-21t23:45:28Z", "2026-11-21T23:45:28z", "2026-11-21T23:45:28+0100", "2026-11-21T23:45"]
        {
            assert_eq!(unix_seconds(bad), None, "{bad}");
        }
    }
}
