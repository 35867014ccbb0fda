//! Owns kube's format library (`kubernetes.format`): the named string formats
//! (`format.dns1123Label()`, ..., or `format.named(name)`, an optional), and
//! `<format>.validate(string)`: `optional.none()` when the string is valid, else the
//! list of kube's error messages.
//!
//! The Kubernetes name formats are `kuorum_api::validation`'s, the same text as object
//! validation; `uri` is `url.ParseRequestURI` ([`super::urls`]); `uuid`, `byte`, `date`
//! and `datetime` follow kube-openapi's strfmt checks.

use cel::common::types::{CelList, CelOptional, CelString, STRING_TYPE};
use cel::common::value::{CowVal, Val};
use cel::objects::Opaque;
use cel::{DeclarationError, Env, ExecutionError};
use kuorum_api::validation::{is_qualified_name, is_valid_label_value, NameRule};

use super::{opaque, opaque_type, owned, string_arg, take, with_opaque};

pub(crate) const TYPE: &str = "kubernetes.NamedFormat";

/// The formats, by the name CEL knows them by.
const FORMATS: &[&str] = &[
    "dns1123Label",
    "dns1123Subdomain",
    "dns1035Label",
    "qualifiedName",
    "dns1123LabelPrefix",
    "dns1123SubdomainPrefix",
    "dns1035LabelPrefix",
    "labelValue",
    "uri",
    "uuid",
    "byte",
    "date",
    "datetime",
];

/// One overload per format: a `Function` captures nothing, so each is its own fn.
macro_rules! constant_formats {
    ($($name:literal => $func:ident),* $(,)?) => {
        $(
            fn $func<'b, 'v>(_: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
                opaque(Format($name))
            }
        )*
        fn register_constants(env: &mut Env) -> Result<(), DeclarationError> {
            $(
                env.add_overload(concat!("format.", $name), concat!("format.", $name), vec![], $func)?;
            )*
            Ok(())
        }
    };
}

constant_formats! {
    "dns1123Label" => dns1123_label,
    "dns1123Subdomain" => dns1123_subdomain,
    "dns1035Label" => dns1035_label,
    "qualifiedName" => qualified_name,
    "dns1123LabelPrefix" => dns1123_label_prefix,
    "dns1123SubdomainPrefix" => dns1123_subdomain_prefix,
    "dns1035LabelPrefix" => dns1035_label_prefix,
    "labelValue" => label_value,
    "uri" => uri,
    "uuid" => uuid,
    "byte" => byte,
    "date" => date,
    "datetime" => datetime,
}

pub fn register(env: &mut Env) -> Result<(), DeclarationError> {
    register_constants(env)?;
    env.add_overload("format.named", "format-named", vec![STRING_TYPE], named)?;
    env.add_member_overload("validate", "format-validate", opaque_type(TYPE), vec![STRING_TYPE], validate)?;
    Ok(())
}

/// A `kubernetes.NamedFormat`, by its CEL name (one of [`FORMATS`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Format(pub &'static str);

impl Opaque for Format {
    fn runtime_type_name(&self) -> &str {
        TYPE
    }
}

impl Format {
    /// The errors of `s` in this format; none when it is valid.
    pub fn errors(&self, s: &str) -> Vec<String> {
        let one = |ok: bool, why: &str| if ok { Vec::new() } else { vec![why.to_owned()] };
        match self.0 {
            "dns1123Label" => NameRule::Dns1123Label.check(s, false),
            "dns1123Subdomain" => NameRule::Dns1123Subdomain.check(s, false),
            "dns1035Label" => NameRule::Dns1035Label.check(s, false),
            "dns1123LabelPrefix" => NameRule::Dns1123Label.check(s, true),
            "dns1123SubdomainPrefix" => NameRule::Dns1123Subdomain.check(s, true),
            "dns1035LabelPrefix" => NameRule::Dns1035Label.check(s, true),
            "qualifiedName" => is_qualified_name(s),
            "labelValue" => is_valid_label_value(s),
            "uri" => super::urls::parse_request_uri(s).err().into_iter().collect(),
            "uuid" => one(is_uuid(s), "does not match the UUID format"),
            "byte" => one(is_base64(s), "invalid base64"),
            "date" => one(is_date(s), "invalid date"),
            "datetime" => one(is_datetime(s), "invalid datetime"),
            _ => Vec::new(),
        }
    }
}

/// strfmt's `(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$`.
fn is_uuid(s: &str) -> bool {
    let mut rest = s.as_bytes();
    for (i, len) in [8, 4, 4, 4, 12].into_iter().enumerate() {
        if i > 0 {
            if let Some(after) = rest.strip_prefix(b"-") {
                rest = after;
            }
        }
        if rest.len() < len || !rest[..len].iter().all(u8::is_ascii_hexdigit) {
            return false;
        }
        rest = &rest[len..];
    }
    rest.is_empty()
}

/// govalidator's `IsBase64`: standard alphabet, padded, not empty.
fn is_base64(s: &str) -> bool {
    let b = s.as_bytes();
    let alpha = |c: &u8| c.is_ascii_alphanumeric() || *c == b'+' || *c == b'/';
    if b.is_empty() || !b.len().is_multiple_of(4) {
        return false;
    }
    let (body, last) = b.split_at(b.len() - 4);
    body.iter().all(alpha)
        && match last {
            [x, y, b'=', b'='] => alpha(x) && alpha(y),
            [x, y, z, b'='] => alpha(x) && alpha(y) && alpha(z),
            chunk => chunk.iter().all(alpha),
        }
}

/// Go's `time.Parse("2006-01-02", s)` succeeds: a real calendar day.
fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<u32> {
        let part = b.get(r)?;
        part.iter().all(u8::is_ascii_digit).then(|| part.iter().fold(0, |n, d| n * 10 + u32::from(d - b'0')))
    };
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let (Some(year), Some(month), Some(day)) = (num(0..4), num(5..7), num(8..10)) else {
        return false;
    };
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

/// strfmt's `IsDateTime`: lowercased and split at `t`, a date then a time matching
/// `^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$` (the `.`
/// is any character), hours at most 23, minutes and seconds at most 59. As strfmt,
/// only the text between the first and second `t` is the time.
fn is_datetime(s: &str) -> bool {
    if s.len() < 4 {
        return false;
    }
    let lower = s.to_lowercase();
    let mut parts = lower.split('t');
    let (Some(day), Some(time)) = (parts.next(), parts.next()) else {
        return false;
    };
    if !is_date(day) {
        return false;
    }
    let t = time.as_bytes();
    let two = |i: usize| t.get(i..i + 2).filter(|p| p.iter().all(u8::is_ascii_digit));
    let (Some(h), Some(m), Some(sec)) = (two(0), two(3), two(6)) else {
        return false;
    };
    if t.get(2) != Some(&b':') || t.get(5) != Some(&b':') || h > b"23" || m > b"59" || sec > b"59" {
        return false;
    }
    let zone = |z: &str| {
        z == "z"
            || (z.len() == 6
                && matches!(z.as_bytes()[0], b'+' | b'-')
                && z.as_bytes()[3] == b':'
                && [1, 2, 4, 5].iter().all(|&i| z.as_bytes()[i].is_ascii_digit()))
    };
    let rest = &time[8..];
    if zone(rest) {
        return true;
    }
    // One character (not a newline), digits, then the zone.
    let mut chars = rest.chars();
    match chars.next() {
        Some(c) if c != '\n' => {
            let after = chars.as_str();
            let digits_then = |cut: usize| {
                after.len() > cut
                    && after[..after.len() - cut].bytes().all(|b| b.is_ascii_digit())
                    && after.is_char_boundary(after.len() - cut)
                    && zone(&after[after.len() - cut..])
            };
            digits_then(1) || digits_then(6)
        }
        _ => false,
    }
}

fn named<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [name] = take(args)?;
    let name = string_arg(name.as_ref())?;
    Ok(match FORMATS.iter().find(|f| **f == name) {
        Some(f) => CowVal::owned(CelOptional::of(opaque(Format(f))?.into_owned())),
        None => CowVal::owned(CelOptional::none()),
    })
}

fn validate<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [format, s] = take(args)?;
    let text = string_arg(s.as_ref())?;
    let errors = with_opaque(format.as_ref(), |f: &Format| f.errors(text))?;
    if errors.is_empty() {
        return owned(CelOptional::none());
    }
    let list: Vec<Box<dyn Val + 'v>> =
        errors.into_iter().map(|e| Box::new(CelString::from(e)) as Box<dyn Val + 'v>).collect();
    owned(CelOptional::of(Box::new(CelList::from(list))))
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{assert_true, eval};
    use super::*;
    use crate::Value;
    use std::sync::Arc;

    fn errors(src: &str) -> Vec<String> {
        match eval(&format!("{src}.value()")) {
            Ok(Value::List(items)) => items
                .iter()
                .map(|v| match v {
                    Value::String(s) => s.to_string(),
                    other => panic!("{other:?}"),
                })
                .collect(),
            other => panic!("{src}: {other:?}"),
        }
    }

    #[test]
    fn named_formats() {
        assert_true("format.named('dns1123Label').hasValue() && !format.named('nope').hasValue()");
        assert_true("format.named('dns1123Label').value() == format.dns1123Label()");
        assert_true("format.dns1123Label() != format.dns1123Subdomain()");
        for name in FORMATS {
            assert_true(&format!("format.named('{name}').value() == format.{name}()"));
        }
    }

    #[test]
    fn kubernetes_names() {
        assert_true("!format.dns1123Label().validate('my-name').hasValue()");
        assert_true("format.dns1123Label().validate('My_Name').hasValue()");
        let label = errors("format.dns1123Label().validate('-x')");
        assert_eq!(label.len(), 1);
        assert!(
            label[0].starts_with("a lowercase RFC 1123 label must consist of lower case alphanumeric"),
            "{label:?}"
        );
        assert!(label[0].ends_with("regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"), "{label:?}");
        assert_true("!format.dns1123Subdomain().validate('apiextensions.k8s.io').hasValue()");
        assert_true("format.dns1123Subdomain().validate('a..b').hasValue()");
        assert_true("!format.dns1035Label().validate('abc-123').hasValue() && format.dns1035Label().validate('1abc').hasValue()");
        assert_true("!format.qualifiedName().validate('apiextensions.k8s.io/v1beta1').hasValue()");
        assert_true("format.qualifiedName().validate('a/b/c').hasValue()");
        assert_true("!format.dns1123LabelPrefix().validate('my-label-prefix-').hasValue()");
        assert_true("format.dns1123Label().validate('my-label-prefix-').hasValue()");
        assert_true("!format.dns1123SubdomainPrefix().validate('mysubdomain.prefix.-').hasValue()");
        assert_true("!format.dns1035LabelPrefix().validate('my-label-prefix-').hasValue()");
        assert_true("!format.labelValue().validate('').hasValue() && format.labelValue().validate('-a').hasValue()");
        let long = "a".repeat(64);
        assert_eq!(
            errors(&format!("format.dns1123Label().validate('{long}')"))[0],
            "must be no more than 63 characters"
        );
    }

    #[test]
    fn strfmt_formats() {
        assert_true("!format.uri().validate('http://example.com').hasValue()");
        assert_eq!(
            eval("format.uri().validate('example.com').value()"),
            Ok(Value::List(Arc::new(vec![Value::String(Arc::new(
                "parse \"example.com\": invalid URI for request".into()
            ))])))
        );
        assert_true("!format.uuid().validate('123e4567-e89b-12d3-a456-426614174000').hasValue()");
        assert_true("!format.uuid().validate('123E4567E89B12D3A456426614174000').hasValue()");
        assert_true("format.uuid().validate('123e4567-e89b-12d3-a456-42661417400').value() == ['does not match the UUID format']");
        assert_true("!format.byte().validate('aGVsbG8=').hasValue() && !format.byte().validate('aGk=').hasValue()");
        assert_true(
            "format.byte().validate('aGVsbG8').value() == ['invalid base64'] && format.byte().validate('').hasValue()",
        );
        assert_true(
            "!format.date().validate('2021-01-01').hasValue() && !format.date().validate('2024-02-29').hasValue()",
        );
        assert_true("format.date().validate('2023-02-29').value() == ['invalid date'] && format.date().validate('2021-1-01').hasValue()");
        assert_true("!format.datetime().validate('2021-01-01T00:00:00Z').hasValue()");
        assert_true("!format.datetime().validate('2021-01-01t23:59:59.123+05:30').hasValue()");
        assert_true("format.datetime().validate('2021-01-01T24:00:00Z').value() == ['invalid datetime']");
        assert_true("format.datetime().validate('2021-01-01').hasValue() && format.datetime().validate('2021-01-01T00:00:00').hasValue()");
    }

    #[test]
    fn checks() {
        assert!(is_uuid("123e4567e89b-12d3a456-426614174000"));
        assert!(!is_uuid("123e4567--e89b-12d3-a456-426614174000"));
        assert!(is_base64("+/+/") && !is_base64("a===") && !is_base64("=aaa"));
        assert!(is_datetime("2021-01-01T10:00:00x5Z"), "the fraction's dot is any character");
        assert!(!is_datetime("2021-01-01T10:00:00.Z"));
    }
}
