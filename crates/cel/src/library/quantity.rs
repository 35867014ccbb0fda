//! Owns kube's quantity library (`kubernetes.quantity`): `quantity(string)`,
//! `isQuantity(string)`, and on a `kubernetes.Quantity`: `sign()`, `isInteger()`,
//! `asInteger()`, `asApproximateFloat()`, `add`/`sub` (a quantity or an int),
//! `isGreaterThan`, `isLessThan`, `compareTo`, and `==` (equal values, whatever the
//! suffix: `quantity('200M') == quantity('0.2G')`).
//!
//! Parsing is `kuorum_api::quantity::parse`, with its errors. The value is then held as
//! `resource.Quantity` holds it, because `isInteger()`/`asInteger()` answer by the
//! representation, not only the value: an `int64Amount` (what Go's fast path makes of
//! a short text, and what sums of those stay while they fit) is an integer when its
//! scale is not negative and it fits an int64 (`1000m` is not one); an `inf.Dec` never
//! is. Comparisons and arithmetic are exact, on decimal digits: linear in the digits,
//! with results bounded (see [`MAX_DIGITS`]) where Go would materialise `1e999999999`.

use std::cmp::Ordering;

use cel::common::types::{CelBool, CelDouble, CelInt, INT_TYPE, STRING_TYPE};
use cel::common::value::{CowVal, Val};
use cel::objects::Opaque;
use cel::{DeclarationError, Env, ExecutionError};
use kuorum_api::quantity;

use super::{int_arg, opaque, opaque_type, owned, string_arg, take, with_opaque};

pub(crate) const TYPE: &str = "kubernetes.Quantity";

/// The most digits a sum or difference may have beyond its operands' own: what keeps
/// `quantity('1e999999999').add(1)` from writing a billion digits (kube would).
const MAX_DIGITS: i64 = 4096;

pub fn register(env: &mut Env) -> Result<(), DeclarationError> {
    let q = || opaque_type(TYPE);
    env.add_overload("quantity", "string_to_quantity", vec![STRING_TYPE], to_quantity)?;
    env.add_overload("isQuantity", "is_quantity_string", vec![STRING_TYPE], is_quantity)?;
    // kube declares `sign` as a global overload although its docs call it as a member;
    // both forms are accepted.
    env.add_overload("sign", "quantity_sign", vec![q()], sign)?;
    env.add_member_overload("sign", "quantity_sign_member", q(), vec![], sign)?;
    env.add_member_overload("isGreaterThan", "quantity_is_greater_than", q(), vec![q()], is_greater_than)?;
    env.add_member_overload("isLessThan", "quantity_is_less_than", q(), vec![q()], is_less_than)?;
    env.add_member_overload("compareTo", "quantity_compare_to", q(), vec![q()], compare_to)?;
    env.add_member_overload("asApproximateFloat", "quantity_get_float", q(), vec![], as_approximate_float)?;
    env.add_member_overload("asInteger", "quantity_get_int", q(), vec![], as_integer)?;
    env.add_member_overload("isInteger", "quantity_is_integer", q(), vec![], is_integer)?;
    env.add_member_overload("add", "quantity_add", q(), vec![q()], add)?;
    env.add_member_overload("add", "quantity_add_int", q(), vec![INT_TYPE], add_int)?;
    env.add_member_overload("sub", "quantity_sub", q(), vec![q()], sub)?;
    env.add_member_overload("sub", "quantity_sub_int", q(), vec![INT_TYPE], sub_int)?;
    Ok(())
}

/// A `resource.Quantity`'s value, in the representation Go keeps it in.
#[derive(Debug, Clone)]
pub enum Quantity {
    /// `int64Amount`: `value × 10^scale`.
    Int { value: i64, scale: i32 },
    /// `inf.Dec`.
    Dec(Decimal),
}

impl Opaque for Quantity {
    fn runtime_type_name(&self) -> &str {
        TYPE
    }
}

/// `Quantity.Equal`: the values compare equal.
impl PartialEq for Quantity {
    fn eq(&self, other: &Self) -> bool {
        self.cmp_value(other) == Ordering::Equal
    }
}
impl Eq for Quantity {}

impl Quantity {
    /// `s` as `resource.ParseQuantity` reads it, or its error.
    pub fn parse(s: &str) -> Result<Quantity, &'static str> {
        let parsed = quantity::parse(s)?;
        if let Some(fast) = fast_path(s) {
            return Ok(fast);
        }
        // Go's slow path rounds (to the nanounit) and caps (binary suffixes): the
        // canonical form is that value, exactly.
        Decimal::from_text(&parsed.canonical()).map(Quantity::Dec).ok_or(quantity::FORMAT_WRONG)
    }

    fn to_decimal(&self) -> Decimal {
        match self {
            Quantity::Int { value, scale } => Decimal::from_i64(*value, i64::from(*scale)),
            Quantity::Dec(d) => d.clone(),
        }
    }

    fn cmp_value(&self, other: &Quantity) -> Ordering {
        self.to_decimal().cmp_value(&other.to_decimal())
    }

    fn sign(&self) -> i64 {
        match self {
            Quantity::Int { value, .. } => value.signum(),
            Quantity::Dec(d) => d.sign(),
        }
    }

    /// `AsInt64`.
    fn as_i64(&self) -> Option<i64> {
        match *self {
            Quantity::Int { value, scale } if scale >= 0 => scale_up(value, scale),
            _ => None,
        }
    }

    /// `AsApproximateFloat64`: the unscaled value as a float, times `Pow10(exponent)`.
    fn as_f64(&self) -> f64 {
        let (base, exponent) = match self {
            Quantity::Int { value, scale } => (*value as f64, i64::from(*scale)),
            Quantity::Dec(d) => (d.unscaled_f64(), d.exp),
        };
        if exponent == 0 {
            return base;
        }
        base * pow10(exponent)
    }

    /// `Add` (with `negate`, `Sub`): `int64Amount` arithmetic while it neither
    /// overflows nor the other side is an `inf.Dec`, exact decimals after.
    fn plus(&self, other: &Quantity, negate: bool) -> Result<Quantity, ExecutionError> {
        if let (Quantity::Int { value: a, scale: sa }, Quantity::Int { value: b, scale: sb }) = (self, other) {
            // Go negates with `-b.value`, which wraps.
            let b = if negate { b.wrapping_neg() } else { *b };
            if let Some((value, scale)) = int_add((*a, *sa), (b, *sb)) {
                return Ok(Quantity::Int { value, scale });
            }
        }
        let mut rhs = other.to_decimal();
        if negate {
            rhs.negative = !rhs.negative && !rhs.digits.is_empty();
        }
        self.to_decimal().add(&rhs).map(Quantity::Dec)
    }
}

/// `int64Amount.Add`: `None` where Go falls back to `inf.Dec`.
fn int_add(a: (i64, i32), b: (i64, i32)) -> Option<(i64, i32)> {
    if b.0 == 0 {
        Some(a)
    } else if a.0 == 0 {
        Some(b)
    } else if a.1 == b.1 {
        Some((a.0.checked_add(b.0)?, a.1))
    } else if a.1 > b.1 {
        Some((scale_up(a.0, a.1 - b.1)?.checked_add(b.0)?, b.1))
    } else {
        Some((a.0.checked_add(scale_up(b.0, b.1 - a.1)?)?, a.1))
    }
}

/// `value × 10^scale` (`positiveScaleInt64`), `None` on overflow.
fn scale_up(value: i64, scale: i32) -> Option<i64> {
    if value == 0 {
        return Some(0);
    }
    let mut v = value;
    for _ in 0..scale {
        // Overflows within 19 steps: the loop is short whatever the scale.
        v = v.checked_mul(10)?;
    }
    Some(v)
}

/// `math.Pow10`: exact where a double can be, 0 and +Inf past its range.
fn pow10(n: i64) -> f64 {
    match n {
        _ if n < -323 => 0.0,
        _ if n > 308 => f64::INFINITY,
        _ => format!("1e{n}").parse().unwrap_or(f64::NAN),
    }
}

/// What Go's `ParseQuantity` fast path makes of `s` (an `int64Amount`), if it takes it.
/// `s` is known to parse.
fn fast_path(s: &str) -> Option<Quantity> {
    if s == "0" {
        return Some(Quantity::Int { value: 0, scale: 0 });
    }
    let b = s.as_bytes();
    let mut pos = 0;
    let positive = b.first() != Some(&b'-');
    if matches!(b.first(), Some(b'+' | b'-')) {
        pos = 1;
    }
    while b.get(pos) == Some(&b'0') {
        pos += 1;
    }
    let run = |from: usize| from + b[from..].iter().take_while(|c| c.is_ascii_digit()).count();
    let num_end = run(pos);
    let num = if num_end == pos { "0" } else { &s[pos..num_end] };
    let (denom, suffix) = match b.get(num_end) {
        Some(b'.') => {
            let end = run(num_end + 1);
            (&s[num_end + 1..end], &s[end..])
        }
        _ => ("", &s[num_end..]),
    };
    let (exponent, binary) = match suffix {
        "n" => (-9, false),
        "u" => (-6, false),
        "m" => (-3, false),
        "" => (0, false),
        "k" => (3, false),
        "M" => (6, false),
        "G" => (9, false),
        "T" => (12, false),
        "P" => (15, false),
        "E" => (18, false),
        "Ki" => (10, true),
        "Mi" => (20, true),
        "Gi" => (30, true),
        "Ti" => (40, true),
        "Pi" => (50, true),
        "Ei" => (60, true),
        // Go reads the exponent as an int64 and keeps its low 32 bits.
        _ => (suffix.get(1..)?.parse::<i64>().ok()? as i32, false),
    };
    let digits = (num.len() + denom.len()) as i64;
    let (precision, mantissa, mut scale) = if binary {
        if !denom.is_empty() {
            return None;
        }
        (15 - num.len() as i64 - i64::from(exponent) * 3 / 10 - 1, 1i64 << exponent, 0)
    } else {
        (18 - digits, 1, i64::from(exponent))
    };
    scale -= denom.len() as i64;
    if precision < 0 || scale < -9 {
        return None;
    }
    let value: i64 = format!("{num}{denom}").parse().ok()?;
    let value = value.checked_mul(mantissa)?;
    Some(Quantity::Int { value: if positive { value } else { -value }, scale: scale as i32 })
}

/// An exact decimal: `±digits × 10^exp`, the digits (0..=9) without leading zeros,
/// none for zero.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decimal {
    negative: bool,
    digits: Vec<u8>,
    exp: i64,
}

impl Decimal {
    fn from_i64(value: i64, exp: i64) -> Decimal {
        let digits = value.unsigned_abs().to_string().bytes().map(|d| d - b'0').collect();
        Decimal::new(value < 0, digits, exp)
    }

    /// A quantity's text as written by `canonical()` (or kept from the input): sign,
    /// digits, an optional fraction, then a suffix. Exact: no rounding, no cap.
    fn from_text(s: &str) -> Option<Decimal> {
        let (negative, s) = match s.as_bytes().first() {
            Some(b'-') => (true, &s[1..]),
            Some(b'+') => (false, &s[1..]),
            _ => (false, s),
        };
        let int_end = s.bytes().take_while(u8::is_ascii_digit).count();
        let (int, rest) = s.split_at(int_end);
        let (fraction, suffix) = match rest.strip_prefix('.') {
            Some(rest) => rest.split_at(rest.bytes().take_while(u8::is_ascii_digit).count()),
            None => ("", rest),
        };
        let mut digits: Vec<u8> = int.bytes().chain(fraction.bytes()).map(|d| d - b'0').collect();
        let mut exp = -(fraction.len() as i64);
        let binary = |power: u32, digits: &mut Vec<u8>| multiply(digits, 1u64 << power);
        match suffix {
            "n" => exp -= 9,
            "u" => exp -= 6,
            "m" => exp -= 3,
            "" => {}
            "k" => exp += 3,
            "M" => exp += 6,
            "G" => exp += 9,
            "T" => exp += 12,
            "P" => exp += 15,
            "E" => exp += 18,
            "Ki" => binary(10, &mut digits),
            "Mi" => binary(20, &mut digits),
            "Gi" => binary(30, &mut digits),
            "Ti" => binary(40, &mut digits),
            "Pi" => binary(50, &mut digits),
            "Ei" => binary(60, &mut digits),
            // Written by `canonical()`: not wrapped as Go wraps what it reads.
            _ => exp = exp.checked_add(suffix.get(1..)?.parse::<i64>().ok()?)?,
        }
        Some(Decimal::new(negative, digits, exp))
    }

    /// Normalised: no leading zeros, trailing zeros moved into the exponent, zero
    /// unsigned.
    fn new(negative: bool, mut digits: Vec<u8>, mut exp: i64) -> Decimal {
        let lead = digits.iter().take_while(|&&d| d == 0).count();
        digits.drain(..lead);
        let trail = digits.iter().rev().take_while(|&&d| d == 0).count();
        digits.truncate(digits.len() - trail);
        exp = exp.saturating_add(trail as i64);
        if digits.is_empty() {
            return Decimal { negative: false, digits, exp: 0 };
        }
        Decimal { negative, digits, exp }
    }

    fn sign(&self) -> i64 {
        match (self.digits.is_empty(), self.negative) {
            (true, _) => 0,
            (false, true) => -1,
            (false, false) => 1,
        }
    }

    /// The position just above the most significant digit.
    fn top(&self) -> i64 {
        self.exp.saturating_add(self.digits.len() as i64)
    }

    fn cmp_magnitude(&self, other: &Decimal) -> Ordering {
        match (self.digits.is_empty(), other.digits.is_empty()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Less,
            (false, true) => Ordering::Greater,
            // Same top: aligned at the first digit, and no trailing zeros on either.
            _ => self.top().cmp(&other.top()).then_with(|| self.digits.cmp(&other.digits)),
        }
    }

    fn cmp_value(&self, other: &Decimal) -> Ordering {
        match self.sign().cmp(&other.sign()) {
            Ordering::Equal if self.sign() < 0 => other.cmp_magnitude(self),
            Ordering::Equal => self.cmp_magnitude(other),
            unequal => unequal,
        }
    }

    /// The digits as a float, unscaled (`UnscaledBig().Float64()`).
    fn unscaled_f64(&self) -> f64 {
        let text: String = self.digits.iter().map(|d| char::from(b'0' + d)).collect();
        let v: f64 = if text.is_empty() { 0.0 } else { text.parse().unwrap_or(f64::INFINITY) };
        if self.negative {
            -v
        } else {
            v
        }
    }

    /// The exact sum, or an error when it would have more than [`MAX_DIGITS`] digits
    /// beyond the operands'.
    fn add(&self, other: &Decimal) -> Result<Decimal, ExecutionError> {
        if other.digits.is_empty() {
            return Ok(self.clone());
        }
        if self.digits.is_empty() {
            return Ok(other.clone());
        }
        let low = self.exp.min(other.exp);
        let high = self.top().max(other.top());
        let width = high.saturating_sub(low).saturating_add(1);
        let most = (self.digits.len() + other.digits.len()) as i64 + MAX_DIGITS;
        if width > most {
            return Err(ExecutionError::function_error("add", "quantity too large for exact arithmetic"));
        }
        let width = width as usize;
        // Little-endian, aligned at `low`.
        let align = |d: &Decimal| {
            let mut v = vec![0u8; width];
            let offset = (d.exp - low) as usize;
            for (i, &digit) in d.digits.iter().rev().enumerate() {
                v[offset + i] = digit;
            }
            v
        };
        let (a, b) = (align(self), align(other));
        let mut out = vec![0u8; width];
        let negative;
        if self.negative == other.negative {
            negative = self.negative;
            let mut carry = 0;
            for i in 0..width {
                let s = a[i] + b[i] + carry;
                out[i] = s % 10;
                carry = s / 10;
            }
        } else {
            // The larger magnitude minus the smaller, with its sign.
            let (big, small, big_negative) = match self.cmp_magnitude(other) {
                Ordering::Less => (&b, &a, other.negative),
                _ => (&a, &b, self.negative),
            };
            negative = big_negative;
            let mut borrow = 0;
            for i in 0..width {
                let mut d = big[i] as i8 - small[i] as i8 - borrow;
                borrow = 0;
                if d < 0 {
                    d += 10;
                    borrow = 1;
                }
                out[i] = d as u8;
            }
        }
        out.reverse();
        Ok(Decimal::new(negative, out, low))
    }
}

/// `digits` (big-endian, 0..=9) multiplied by `by`, in place.
fn multiply(digits: &mut Vec<u8>, by: u64) {
    let mut carry: u128 = 0;
    for d in digits.iter_mut().rev() {
        let v = u128::from(*d) * u128::from(by) + carry;
        *d = (v % 10) as u8;
        carry = v / 10;
    }
    let mut head = Vec::new();
    while carry > 0 {
        head.push((carry % 10) as u8);
        carry /= 10;
    }
    head.reverse();
    head.append(digits);
    *digits = head;
}

fn to_quantity<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [s] = take(args)?;
    let q = Quantity::parse(string_arg(s.as_ref())?).map_err(|e| ExecutionError::function_error("quantity", e))?;
    opaque(q)
}

fn is_quantity<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [s] = take(args)?;
    owned(CelBool::from(quantity::parse(string_arg(s.as_ref())?).is_ok()))
}

/// The receiver of a one-argument overload.
fn unary<'b, 'v, R: Val + 'v>(
    args: Vec<CowVal<'b, 'v>>,
    f: impl FnOnce(&Quantity) -> Result<R, ExecutionError>,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [q] = take(args)?;
    owned(with_opaque(q.as_ref(), f)??)
}

/// The receiver and the quantity argument of a two-argument overload.
fn binary<T>(args: Vec<CowVal<'_, '_>>, f: impl FnOnce(&Quantity, &Quantity) -> T) -> Result<T, ExecutionError> {
    let [a, b] = take(args)?;
    with_opaque(a.as_ref(), |a: &Quantity| with_opaque(b.as_ref(), |b: &Quantity| f(a, b)))?
}

fn sign<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    unary(args, |q| Ok(CelInt::from(q.sign())))
}

fn is_integer<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    unary(args, |q| Ok(CelBool::from(q.as_i64().is_some())))
}

fn as_integer<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    unary(args, |q| {
        q.as_i64()
            .map(CelInt::from)
            .ok_or_else(|| ExecutionError::function_error("asInteger", "cannot convert value to integer"))
    })
}

fn as_approximate_float<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    unary(args, |q| Ok(CelDouble::from(q.as_f64())))
}

fn is_greater_than<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    owned(CelBool::from(binary(args, |a, b| a.cmp_value(b) == Ordering::Greater)?))
}

fn is_less_than<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    owned(CelBool::from(binary(args, |a, b| a.cmp_value(b) == Ordering::Less)?))
}

fn compare_to<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    owned(CelInt::from(binary(args, |a, b| a.cmp_value(b) as i64)?))
}

fn add<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    opaque(binary(args, |a, b| a.plus(b, false))??)
}

fn sub<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    opaque(binary(args, |a, b| a.plus(b, true))??)
}

/// `add(int)`/`sub(int)`: the int as `NewQuantity(i, DecimalExponent)`.
fn with_int<'b, 'v>(args: Vec<CowVal<'b, 'v>>, negate: bool) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [q, i] = take(args)?;
    let rhs = Quantity::Int { value: int_arg(i.as_ref())?, scale: 0 };
    opaque(with_opaque(q.as_ref(), |q: &Quantity| q.plus(&rhs, negate))??)
}

fn add_int<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    with_int(args, false)
}

fn sub_int<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    with_int(args, true)
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{assert_err, assert_true, eval, eval_with};
    use super::*;
    use crate::Value;
    use serde_json::json;

    #[test]
    fn parse_and_is_quantity() {
        assert_true("isQuantity('20') && isQuantity('20M') && isQuantity('20Mi') && isQuantity('1.5e3')");
        assert_true("!isQuantity('20Mo') && !isQuantity('10Mm') && !isQuantity('')");
        assert_err("quantity('10Mo')", "quantities must match the regular expression");
        assert_err("quantity('10Mm')", "unable to parse quantity's suffix");
        assert_err("quantity('bad')", "quantities must match the regular expression");
        assert!(eval("quantity('12Mi')").is_ok(), "a quantity is a value an expression may return");
    }

    #[test]
    fn equality_is_by_value() {
        assert_true("quantity('200M') == quantity('200M')");
        assert_true("quantity('200M') == quantity('0.2G') && quantity('0.2G') == quantity('200M')");
        assert_true("quantity('2M') == quantity('0.002G') && quantity('2000k') == quantity('2M')");
        assert_true("quantity('200M') != quantity('0.3G')");
        assert_true("quantity('1Ki') == quantity('1024')");
        assert_true("[quantity('1'), quantity('2')].exists(q, q == quantity('2000m'))");
    }

    #[test]
    fn comparisons() {
        assert_true("quantity('50M').isLessThan(quantity('50Mi'))");
        assert_true("quantity('50M').isLessThan(quantity('100M'))");
        assert_true("!quantity('100M').isLessThan(quantity('50M'))");
        assert_true("quantity('50Mi').isGreaterThan(quantity('50M'))");
        assert_true("quantity('150Mi').isGreaterThan(quantity('100Mi'))");
        assert_true("!quantity('50M').isGreaterThan(quantity('100M'))");
        assert_true("quantity('200M').compareTo(quantity('0.2G')) == 0");
        assert_true("quantity('50M').compareTo(quantity('50Mi')) == -1");
        assert_true("quantity('50Mi').compareTo(quantity('50M')) == 1");
        assert_true("quantity('-1').isLessThan(quantity('1n')) && quantity('-2').isLessThan(quantity('-1'))");
        assert_true("quantity('1e999999999').isGreaterThan(quantity('1E'))");
        assert_true("quantity('1n').isGreaterThan(quantity('0'))");
    }

    #[test]
    fn arithmetic() {
        assert_true("quantity('50k').add(quantity('20')) == quantity('50.02k')");
        assert_true("!quantity('50k').add(20).isLessThan(quantity('50020'))");
        assert_true("quantity('50k').sub(quantity('20')) == quantity('49.98k')");
        assert_true("quantity('50k').sub(20) == quantity('49980')");
        assert_true("quantity('50k').add(20).sub(quantity('100k')).asInteger() == -49980");
        assert_true("quantity('50k').add(20).sub(quantity('100k')).sub(-50000).asInteger() == 20");
        assert_true(
            "[quantity('9999999999999999999999999999999999999')].all(x, \
             x.add(quantity('1')).compareTo(x.add(quantity('2'))) == -1)",
        );
        // Past int64: exact decimals.
        assert_true("quantity('9223372036854775807').add(1) == quantity('9223372036854775808')");
        assert_true("quantity('9223372036854775807').add(1).sub(1) == quantity('9223372036854775807')");
        assert_true("quantity('1.5Gi').sub(quantity('1Gi')) == quantity('512Mi')");
        assert_true("quantity('-9223372036854775807').sub(2) == quantity('-9223372036854775809')");
        assert_true("quantity('-9223372036854775809').add(quantity('1e19')) == quantity('776627963145224191')");
        assert_true("quantity('1e19').sub(quantity('1e19')).add(quantity('1n')) == quantity('1n')");
        assert_true("quantity('-1.5').add(quantity('2')) == quantity('500m')");
        assert_true("quantity('1m').sub(quantity('1m')).sign() == 0");
        assert_err("quantity('1e999999999').add(1)", "too large");
    }

    #[test]
    fn integers_follow_kubes_representation() {
        assert_true("quantity('50k').asInteger() == 50000");
        assert_true("quantity('50').isInteger() && quantity('1.5k').asInteger() == 1500");
        assert_err("quantity('9999999999999999999999999999999999999G').asInteger()", "cannot convert value to integer");
        assert_true("!quantity('9999999999999999999999999999999999999G').isInteger()");
        // An int64Amount of negative scale is not an integer, nor is an inf.Dec.
        assert_true("!quantity('1000m').isInteger() && !quantity('1.5').isInteger()");
        assert_true("!quantity('1.5Gi').isInteger()");
        assert_true("!quantity('1e100').isInteger()");
        assert_true("quantity('-5').asInteger() == -5");
    }

    #[test]
    fn sign_and_float() {
        assert_true("sign(quantity('-1m')) == -1 && quantity('0').sign() == 0 && quantity('3Ki').sign() == 1");
        assert_eq!(eval("quantity('50.703k').asApproximateFloat()"), Ok(Value::Float(50703.0)));
        assert_eq!(eval("quantity('1.5Gi').asApproximateFloat()"), Ok(Value::Float(1610612736.0)));
        assert_eq!(eval("quantity('-250m').asApproximateFloat()"), Ok(Value::Float(-0.25)));
        assert_eq!(eval("quantity('1e400').asApproximateFloat()"), Ok(Value::Float(f64::INFINITY)));
    }

    #[test]
    fn over_json_values() {
        let obj = json!({"requests": {"memory": "512Mi"}, "limits": {"memory": "1Gi"}});
        assert_eq!(
            eval_with("quantity(self.requests.memory).isLessThan(quantity(self.limits.memory))", obj),
            Ok(Value::Bool(true))
        );
    }

    #[test]
    fn fast_path_matches_go() {
        let int = |s: &str| match fast_path(s) {
            Some(Quantity::Int { value, scale }) => Some((value, scale)),
            _ => None,
        };
        assert_eq!(int("1000m"), Some((1000, -3)));
        assert_eq!(int("-1.5"), Some((-15, -1)));
        assert_eq!(int("1Ki"), Some((1024, 0)));
        assert_eq!(int("1e3"), Some((1, 3)));
        assert_eq!(int("0.0000000001"), None, "below nano");
        assert_eq!(int("1.5Gi"), None, "a binary fraction");
        assert_eq!(int("1234567890123456789"), None, "19 digits");
    }
}
