//! Owns `resource.Quantity` as text: read as `resource.ParseQuantity` reads it, with its
//! errors, and written back in the canonical form kube-apiserver stores, since it decodes
//! every built-in object into Go types and encodes it again.
//!
//! ```text
//! "1000m" -> "1"      "0.5" -> "500m"     "1.5Gi" -> "1536Mi"     "0.1Gi" -> "107374182400m"
//! "1Gi"   -> "1Gi"    "1e3" -> "1e3"      "1024Mi" -> "1Gi"       "+1" -> "+1"
//! ```
//!
//! The rules, from `k8s.io/apimachinery/pkg/api/resource`:
//!
//! - a value keeps its kind of suffix (decimal SI, binary SI or exponent), except that a
//!   binary one is written as decimal SI when it is below 1024 or not whole;
//! - the canonical form has no fraction, the largest suffix that loses nothing, and a
//!   sign only when negative; a decimal exponent is a multiple of 3;
//! - a text Go's parser already finds canonical (digits with no trailing `000` on a
//!   multiple-of-3 scale, or a binary value not a multiple of 8) is kept exactly as sent,
//!   sign and leading zeros included (`"+1"`, `"01"`, `"1."` stay);
//! - values are rounded up (away from zero) to the nanounit, and binary ones capped at
//!   2^63-1; a suffix exponent is read as Go's `int32(ParseInt(..))`, so it wraps.
//!
//! Kube's arithmetic (`inf.Dec`) would materialise `1234567890123456789e999999999` as a
//! billion-digit integer; here a value is its significant digits and a power of ten, so
//! parsing and writing are linear in the text and the canonical form is at most a few
//! dozen bytes longer than it. Where kube's suffix table has no entry (decimal SI past
//! `E`), the exponent form is written, as upstream's fix does (kubernetes#140459), rather
//! than the bare mantissa older releases wrote.
//!
//! No crate on crates.io reproduces these rules exactly (kept texts, rounding to nano,
//! the binary cap, the suffix fallbacks), so they are written here.

use std::fmt;

/// `resource.ErrFormatWrong`.
pub const FORMAT_WRONG: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
/// `resource.ErrNumeric`.
pub const NUMERIC: &str = "unable to parse numeric part of quantity";
/// `resource.ErrSuffix`.
pub const SUFFIX: &str = "unable to parse quantity's suffix";

/// The characters a suffix is made of, before its optional signed exponent.
const SUFFIX_CHARS: &[u8] = b"eEinumkKMGTP";
/// The largest magnitude a binary-suffixed quantity may have (`maxAllowed`).
const MAX_BINARY: &[u8] = b"9223372036854775807";
/// The most digits Go's fast path takes (`maxInt64Factors`).
const FAST_DIGITS: i64 = 18;
const BINARY_SUFFIXES: [&str; 7] = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];

/// How a quantity is written: the kind of suffix it was read with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `12e6`.
    DecimalExponent,
    /// `12Mi` (12 × 2^20).
    BinarySI,
    /// `12M` (12 × 10^6).
    DecimalSI,
}

/// A parsed `resource.Quantity`: sign × digits × 10^exponent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quantity {
    negative: bool,
    /// The magnitude's digits (ASCII), without leading zeros; empty for zero.
    digits: Vec<u8>,
    exponent: i64,
    format: Format,
    /// The text as sent, where Go's parser keeps it as the canonical form.
    kept: Option<String>,
}

impl Quantity {
    /// The kind of suffix the value is written with.
    pub fn format(&self) -> Format {
        self.format
    }

    pub fn is_zero(&self) -> bool {
        self.digits.is_empty()
    }

    /// The canonical form, as `Quantity.String()` and kube-apiserver's JSON write it.
    pub fn canonical(&self) -> String {
        if let Some(text) = &self.kept {
            return text.clone();
        }
        if self.is_zero() {
            return "0".into();
        }
        let sign = if self.negative { "-" } else { "" };
        let mut format = self.format;
        if format == Format::BinarySI {
            // Below 1024 or not whole, a binary quantity is written as decimal SI.
            match self.whole() {
                Some(mut v) if v >= 1024 => {
                    let mut times = 0;
                    while v % 1024 == 0 {
                        v /= 1024;
                        times += 1;
                    }
                    return format!("{sign}{v}{}", BINARY_SUFFIXES[times]);
                }
                _ => format = Format::DecimalSI,
            }
        }
        // No trailing zeros, then down to a multiple of 3 (at most two zeros back).
        let zeros = self.digits.iter().rev().take_while(|&&d| d == b'0').count();
        let mut mantissa = String::from_utf8_lossy(&self.digits[..self.digits.len() - zeros]).into_owned();
        let mut exponent = self.exponent + zeros as i64;
        let r = exponent.rem_euclid(3);
        for _ in 0..r {
            mantissa.push('0');
        }
        exponent -= r;
        let si = match exponent {
            -9 => Some("n"),
            -6 => Some("u"),
            -3 => Some("m"),
            0 => Some(""),
            3 => Some("k"),
            6 => Some("M"),
            9 => Some("G"),
            12 => Some("T"),
            15 => Some("P"),
            18 => Some("E"),
            _ => None,
        };
        match (format, si) {
            (Format::DecimalSI, Some(suffix)) => format!("{sign}{mantissa}{suffix}"),
            (_, _) if exponent == 0 => format!("{sign}{mantissa}"),
            _ => format!("{sign}{mantissa}e{exponent}"),
        }
    }

    /// The value as the nearest `f64` (`AsApproximateFloat64`): ±infinity past its range.
    pub fn as_f64(&self) -> f64 {
        // Seventeen significant digits decide an f64; the rest only move the exponent.
        let taken = self.digits.len().min(17);
        let mantissa: f64 = std::str::from_utf8(&self.digits[..taken]).ok().and_then(|d| d.parse().ok()).unwrap_or(0.0);
        let exponent = (self.exponent + (self.digits.len() - taken) as i64).clamp(-400, 400) as i32;
        let magnitude = if exponent < 0 { mantissa / 10f64.powi(-exponent) } else { mantissa * 10f64.powi(exponent) };
        if self.negative {
            -magnitude
        } else {
            magnitude
        }
    }

    /// The value in thousandths, rounded up away from zero as kube's `MilliValue` does;
    /// `None` past `i128`. What quota and limit arithmetic adds and compares exactly.
    pub fn milli(&self) -> Option<i128> {
        let e = self.exponent + 3;
        let len = self.digits.len() as i64;
        let int_len = (len + e.min(0)).max(0) as usize;
        let mut v: i128 = 0;
        for &d in &self.digits[..int_len] {
            v = v.checked_mul(10)?.checked_add(i128::from(d - b'0'))?;
        }
        for _ in 0..e.max(0) {
            v = v.checked_mul(10)?;
        }
        if self.digits[int_len..].iter().any(|&d| d != b'0') {
            v = v.checked_add(1)?;
        }
        Some(if self.negative { -v } else { v })
    }

    /// The magnitude as an integer, if it is whole and fits (binary quantities always fit).
    fn whole(&self) -> Option<u64> {
        let len = self.digits.len() as i64;
        let int_len = len + self.exponent.min(0);
        if int_len < len && self.digits[int_len.max(0) as usize..].iter().any(|&d| d != b'0') {
            return None;
        }
        let mut v: u64 = 0;
        for &d in &self.digits[..int_len.max(0) as usize] {
            v = v.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
        }
        for _ in 0..self.exponent.max(0) {
            v = v.checked_mul(10)?;
        }
        Some(v)
    }
}

impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.canonical())
    }
}

/// The pieces of a quantity's text, as Go's `parseQuantityString` splits it.
struct Parts<'a> {
    negative: bool,
    /// The integer digits after leading zeros.
    int: &'a str,
    /// Whether the number has any digit at all (`"."`, `"Gi"` have none).
    any_digit: bool,
    fraction: &'a str,
    suffix: &'a str,
}

fn split(s: &str) -> Result<Parts<'_>, &'static str> {
    let b = s.as_bytes();
    let at = |i: usize| b.get(i).copied();
    let mut pos = 0;
    let negative = at(0) == Some(b'-');
    if matches!(at(0), Some(b'+' | b'-')) {
        pos = 1;
    }
    let digits_from = pos;
    while at(pos) == Some(b'0') {
        pos += 1;
    }
    // Only zeros (or just a sign): zero.
    if pos == b.len() {
        return Ok(Parts { negative, int: "", any_digit: true, fraction: "", suffix: "" });
    }
    let int_from = pos;
    while at(pos).is_some_and(|c| c.is_ascii_digit()) {
        pos += 1;
    }
    let int = &s[int_from..pos];
    let any_int_digit = pos > digits_from;
    let mut fraction = "";
    if at(pos) == Some(b'.') {
        pos += 1;
        let from = pos;
        while at(pos).is_some_and(|c| c.is_ascii_digit()) {
            pos += 1;
        }
        fraction = &s[from..pos];
    }
    let suffix_from = pos;
    while at(pos).is_some_and(|c| SUFFIX_CHARS.contains(&c)) {
        pos += 1;
    }
    if matches!(at(pos), Some(b'+' | b'-')) {
        pos += 1;
    }
    while at(pos).is_some_and(|c| c.is_ascii_digit()) {
        pos += 1;
    }
    if pos != b.len() {
        return Err(FORMAT_WRONG);
    }
    Ok(Parts { negative, int, any_digit: any_int_digit || !fraction.is_empty(), fraction, suffix: &s[suffix_from..] })
}

/// What a suffix means: its base (2 or 10), exponent and format.
fn interpret(suffix: &str) -> Option<(u32, i32, Format)> {
    let decimal = |e| Some((10, e, Format::DecimalSI));
    let binary = |e| Some((2, e, Format::BinarySI));
    match suffix {
        "n" => decimal(-9),
        "u" => decimal(-6),
        "m" => decimal(-3),
        "" => decimal(0),
        "k" => decimal(3),
        "M" => decimal(6),
        "G" => decimal(9),
        "T" => decimal(12),
        "P" => decimal(15),
        "E" => decimal(18),
        "Ki" => binary(10),
        "Mi" => binary(20),
        "Gi" => binary(30),
        "Ti" => binary(40),
        "Pi" => binary(50),
        "Ei" => binary(60),
        _ if suffix.len() > 1 && matches!(suffix.as_bytes()[0], b'e' | b'E') => {
            // Go reads the exponent as an int64 and keeps its low 32 bits.
            suffix[1..].parse::<i64>().ok().map(|e| (10, e as i32, Format::DecimalExponent))
        }
        _ => None,
    }
}

/// `s` read as `resource.ParseQuantity` reads it (no surrounding whitespace: JSON decoding
/// trims it first), or Go's error. Linear in `s`.
///
/// The grammar: an optional sign, digits with at most one `.`, then a suffix: one of the
/// binary (`Ki` .. `Ei`) or decimal (`n`, `u`, `m`, `k`, `M`, `G`, `T`, `P`, `E`) ones,
/// or an exponent (`e3`, `E-2`).
pub fn parse(s: &str) -> Result<Quantity, &'static str> {
    if s.is_empty() {
        return Err(FORMAT_WRONG);
    }
    let parts = split(s)?;
    let (base, exp, mut format) = interpret(parts.suffix).ok_or(SUFFIX)?;
    let int = if parts.int.is_empty() { "0" } else { parts.int };
    let fraction_len = parts.fraction.len() as i64;

    // Go's fast path: at most 18 digits at a scale of nano or more, in an int64. Only here
    // may the text be kept as the canonical form.
    let (precision, multiplier) = match format {
        Format::BinarySI if parts.fraction.is_empty() => {
            (15 - int.len() as i64 - i64::from(exp) * 3 / 10 - 1, 1i64 << exp)
        }
        Format::BinarySI => (-1, 1),
        _ => (FAST_DIGITS - (int.len() as i64 + fraction_len), 1),
    };
    let scale = if base == 10 { i64::from(exp) } else { 0 } - fraction_len;
    if precision >= 0 && scale >= -9 {
        let shifted = format!("{int}{}", parts.fraction);
        let value: i64 = shifted.parse().map_err(|_| NUMERIC)?;
        if let Some(result) = value.checked_mul(multiplier) {
            let keep = match format {
                Format::BinarySI => value & 7 != 0,
                _ => scale % 3 == 0 && !shifted.ends_with("000") && !shifted.starts_with('0'),
            };
            let digits = if result == 0 { Vec::new() } else { result.to_string().into_bytes() };
            return Ok(Quantity {
                negative: parts.negative && result != 0,
                digits,
                exponent: scale,
                format,
                kept: keep.then(|| s.to_string()),
            });
        }
    }

    // The slow path (`inf.Dec` in Go), on digits and a power of ten.
    if !parts.any_digit {
        return Err(NUMERIC);
    }
    let mut digits: Vec<u8> = parts.int.bytes().chain(parts.fraction.bytes()).skip_while(|&d| d == b'0').collect();
    let mut exponent = -fraction_len;
    if base == 10 {
        exponent += i64::from(exp);
    } else {
        multiply(&mut digits, 1u64 << exp);
    }
    if !digits.is_empty() {
        round_up_to_nano(&mut digits, &mut exponent);
    }
    if format == Format::BinarySI && above_max_binary(&digits, exponent) {
        digits = MAX_BINARY.to_vec();
        exponent = 0;
    }
    // A binary quantity between 0 and 1 is decimal SI.
    if format == Format::BinarySI && !digits.is_empty() && digits.len() as i64 + exponent <= 0 {
        format = Format::DecimalSI;
    }
    let negative = parts.negative && !digits.is_empty();
    Ok(Quantity { negative, digits, exponent, format, kept: None })
}

/// `digits` (no leading zeros) multiplied by `by`, in place.
fn multiply(digits: &mut Vec<u8>, by: u64) {
    let mut carry: u128 = 0;
    for d in digits.iter_mut().rev() {
        let v = u128::from(*d - b'0') * u128::from(by) + carry;
        *d = b'0' + (v % 10) as u8;
        carry = v / 10;
    }
    let mut head = Vec::new();
    while carry > 0 {
        head.push(b'0' + (carry % 10) as u8);
        carry /= 10;
    }
    head.reverse();
    head.append(digits);
    *digits = head;
    let zeros = digits.iter().take_while(|&&d| d == b'0').count();
    digits.drain(..zeros);
}

/// Rounds a non-zero magnitude up to a whole number of nanounits (`inf.RoundUp` at
/// scale 9): a value that asks for something gets at least `1n`.
fn round_up_to_nano(digits: &mut Vec<u8>, exponent: &mut i64) {
    if *exponent >= -9 {
        return;
    }
    let drop = -9 - *exponent;
    let keep = (digits.len() as i64 - drop).max(0) as usize;
    let lost = digits[keep..].iter().any(|&d| d != b'0');
    digits.truncate(keep);
    *exponent = -9;
    if lost {
        // Add one at the last kept place.
        let mut i = digits.len();
        loop {
            if i == 0 {
                digits.insert(0, b'1');
                break;
            }
            i -= 1;
            if digits[i] == b'9' {
                digits[i] = b'0';
            } else {
                digits[i] += 1;
                break;
            }
        }
    }
    let zeros = digits.iter().take_while(|&&d| d == b'0').count();
    digits.drain(..zeros);
}

/// Whether digits × 10^exponent exceeds 2^63-1.
fn above_max_binary(digits: &[u8], exponent: i64) -> bool {
    let max_len = MAX_BINARY.len() as i64;
    let int_len = digits.len() as i64 + exponent;
    if int_len != max_len {
        return !digits.is_empty() && int_len > max_len;
    }
    // The integer part has as many digits as the maximum: compare them, then any fraction.
    let int_part: Vec<u8> = digits.iter().copied().chain(std::iter::repeat(b'0')).take(max_len as usize).collect();
    match int_part.as_slice().cmp(MAX_BINARY) {
        std::cmp::Ordering::Greater => true,
        std::cmp::Ordering::Less => false,
        std::cmp::Ordering::Equal => digits.iter().skip(max_len as usize).any(|&d| d != b'0'),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn milli_values_round_up() {
        let m = |s: &str| parse(s).unwrap().milli();
        assert_eq!(m("1"), Some(1000));
        assert_eq!(m("250m"), Some(250));
        assert_eq!(m("1.5Gi"), Some(1536 * 1024 * 1024 * 1000));
        assert_eq!(m("1n"), Some(1), "rounded up to a thousandth");
        assert_eq!(m("-1n"), Some(-1));
        assert_eq!(m("0"), Some(0));
        assert_eq!(m("1e3"), Some(1_000_000));
        assert_eq!(m("1e40"), None);
    }

    use super::*;

    fn canonical(s: &str) -> String {
        parse(s).unwrap_or_else(|e| panic!("{s}: {e}")).canonical()
    }

    #[test]
    fn canonical_forms_of_kubes_tests() {
        for (input, want) in [
            // The issue's cases.
            ("1000m", "1"),
            ("0.5", "500m"),
            ("1Gi", "1Gi"),
            ("1e3", "1e3"),
            ("+1", "+1"),
            ("1.0", "1"),
            ("0.1Gi", "107374182400m"),
            ("100Mi", "100Mi"),
            ("1.5", "1500m"),
            ("0.5Gi", "512Mi"),
            // TestQuantityParseEmit.
            ("1Ki", "1Ki"),
            ("1Mi", "1Mi"),
            ("1024Mi", "1Gi"),
            ("1000M", "1G"),
            (".001Ki", "1024m"),
            (".000001Ki", "1024u"),
            (".000000001Ki", "1024n"),
            (".000000000001Ki", "2n"),
            // TestQuantityString's alternates.
            ("307200Ki", "300Mi"),
            ("1025024Mi", "1001Gi"),
            ("1024Gi", "1Ti"),
            ("5000m", "5"),
            ("0.001T", "1G"),
            ("1000u", "1m"),
            ("1.08", "1080m"),
            ("1080000000n", "1080m"),
            (".001e12", "1e9"),
            ("0.001e0", "1e-3"),
            ("1000e-12", "1e-9"),
            ("00", "0"),
            // Kept as sent: already canonical by Go's test.
            ("300Mi", "300Mi"),
            ("80m", "80m"),
            ("1234567M", "1234567M"),
            ("80e-3", "80e-3"),
            ("300e6", "300e6"),
            ("1n", "1n"),
            ("1080u", "1080u"),
            ("01", "01"),
            ("1.", "1."),
            ("1.234", "1.234"),
            ("-1", "-1"),
            // Rounding up to nano, and what it does to the format.
            ("3.001n", "4n"),
            ("1.1E-9", "2e-9"),
            ("0.0000000001", "1n"),
            ("0.00000012345", "124n"),
            ("-0.00000012345", "-124n"),
            ("0.000000000001Ki", "2n"),
            ("0.5Mi", "512Ki"),
            ("100.035Ki", "102435840m"),
            // The binary cap.
            ("9Ei", "9223372036854775807"),
            ("9223372036854775807Ki", "9223372036854775807"),
            ("-9Ei", "-9223372036854775807"),
            ("8Ei", "9223372036854775807"),
            ("7.5Ei", "7680Pi"),
            // Zero, however written.
            ("0", "0"),
            ("-0", "0"),
            ("+", "0"),
            ("0.000", "0"),
            ("0Ei", "0"),
            ("Gi", "0"),
            (".", "0"),
            ("0e-20", "0"),
            // Trolls of kube's tests.
            (".0001k", "100m"),
            ("1.G", "1.G"),
            ("12E", "12E"),
            ("1.01E", "1010P"),
            ("100.035k", "100.035k"),
            ("10.035M", "10.035M"),
            ("10.0350M", "10035k"),
            ("1.2e3", "1200"),
            ("1.3E+6", "1300e3"),
        ] {
            assert_eq!(canonical(input), want, "{input}");
        }
    }

    #[test]
    fn canonical_forms_of_large_values() {
        // TestParseQuantity: the fast path ends at 18 digits.
        for (input, want) in [
            ("999999999999999999", "999999999999999999"),
            ("999999999999999999.1", "999999999999999999100m"),
            ("9999999999999999999", "9999999999999999999"),
            ("1000000000000000000", "1E"),
            ("-1000000000000000000.0", "-1E"),
            ("1.0E", "1E"),
            ("9999999999999999999000m", "9999999999999999999"),
            ("1.0000000000000000001E", "1000000000000000000100m"),
            ("1.000000000000000001E", "1000000000000000001"),
            ("10E", "10E"),
            ("10000000000000000000", "10E"),
            ("10000000000000000000000m", "10E"),
            ("-9223372036854775808.1", "-9223372036854775808100m"),
            // Past E, decimal SI falls back to the exponent form (kubernetes#140459).
            ("1000E", "1e21"),
            ("1000000000000000000000", "1e21"),
            ("5000E", "5e21"),
        ] {
            assert_eq!(canonical(input), want, "{input}");
        }
    }

    #[test]
    fn huge_exponents_cost_nothing() {
        let started = std::time::Instant::now();
        assert_eq!(canonical("1e999999999"), "1e999999999");
        assert_eq!(canonical("1e999999998"), "100e999999996");
        assert_eq!(canonical("1.5e999999999"), "1500e999999996");
        assert_eq!(canonical("1234567890123456789e999999999"), "1234567890123456789e999999999");
        assert_eq!(canonical("1234567890123456789e-999999999"), "1e-9");
        assert_eq!(canonical("-1e-999999999"), "-1e-9");
        assert_eq!(canonical("-1234567890123456789n"), "-1234567890123456789n");
        assert_eq!(canonical("1234567890123456789E"), "1234567890123456789E");
        // Go keeps the low 32 bits of the exponent: e4294967296 is e0.
        assert_eq!(canonical("1e4294967296"), "1e4294967296");
        assert_eq!(canonical("1.5e4294967296"), "1500e-3");
        // A long text is linear: a million digits, each way.
        let long = format!("1{}", "0".repeat(1_000_000));
        assert_eq!(canonical(&long), "10e999999");
        let small = format!("0.{}1", "0".repeat(1_000_000));
        assert_eq!(canonical(&small), "1n");
        let big_binary = format!("{}Ki", "9".repeat(1_000_000));
        assert_eq!(canonical(&big_binary), "9223372036854775807");
        let fractional_binary = format!("1.{}Ei", "3".repeat(1_000_000));
        assert_eq!(canonical(&fractional_binary), "1537228672809129301333333334n");
        assert!(started.elapsed() < std::time::Duration::from_secs(5), "{:?}", started.elapsed());
    }

    #[test]
    fn errors_as_go_gives_them() {
        for ok in [
            "1", "0", "1Gi", "1.5Gi", "100m", "0.5", ".5", "1e3", "1E-2", "5E", "+1", "-1k", "1.", "12Mi", "1e+5",
            "3n", "0Ei", ".", "Gi", "+", "-",
        ] {
            assert!(parse(ok).is_ok(), "{ok}");
        }
        for (bad, err) in [
            ("", FORMAT_WRONG),
            ("1.5.5Gi", FORMAT_WRONG),
            ("abc", FORMAT_WRONG),
            ("1 Gi", FORMAT_WRONG),
            (" 1", FORMAT_WRONG),
            ("1 ", FORMAT_WRONG),
            ("1Gi5x", FORMAT_WRONG),
            ("true", FORMAT_WRONG),
            ("1Gb", FORMAT_WRONG),
            ("1.1.M", FORMAT_WRONG),
            ("1+1.0M", FORMAT_WRONG),
            ("-3.01e-", SUFFIX),
            ("0.1mi", SUFFIX),
            ("0.1am", FORMAT_WRONG),
            (".5i", SUFFIX),
            ("1i", SUFFIX),
            ("1ki", SUFFIX),
            ("1e", SUFFIX),
            ("+-1", SUFFIX),
            ("1e99999999999999999999", SUFFIX),
            ("Ei", NUMERIC),
            ("Pi", NUMERIC),
            ("e-10", NUMERIC),
            ("-.Ei", NUMERIC),
        ] {
            assert_eq!(parse(bad).map(|q| q.canonical()), Err(err), "{bad}");
        }
    }

    #[test]
    fn formats_are_remembered() {
        assert_eq!(parse("1Ki").unwrap().format(), Format::BinarySI);
        assert_eq!(parse("0.5Ki").unwrap().format(), Format::BinarySI);
        assert_eq!(parse("0.0001Ki").unwrap().format(), Format::DecimalSI, "below 1 after rounding");
        assert_eq!(parse("1e3").unwrap().format(), Format::DecimalExponent);
        assert_eq!(parse("1k").unwrap().format(), Format::DecimalSI);
        assert!(parse("-0.0").unwrap().is_zero());
        assert_eq!(parse("1.5Gi").unwrap().to_string(), "1536Mi");
    }

    #[test]
    fn values_as_floats() {
        let f = |s: &str| parse(s).unwrap().as_f64();
        assert_eq!(f("1.5Gi"), 1_610_612_736.0);
        assert_eq!(f("500m"), 0.5);
        assert_eq!(f("-3n"), -3e-9);
        assert_eq!(f("1e3"), 1000.0);
        assert_eq!(f("0"), 0.0);
        assert!((f("12345678901234567890123") / 1.2345678901234568e22 - 1.0).abs() < 1e-15);
        assert_eq!(f("1e999999999"), f64::INFINITY);
        assert_eq!(f("1e-999999999"), 1e-9, "rounded up to nano");
    }
}
