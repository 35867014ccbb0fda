//! Name rules: the DNS-1123/DNS-1035 validators with kube-apiserver's exact error text,
//! which rule each kind's names follow, `generateName` handling, path-segment rules, and
//! [`FieldError`], one field's validation failure as it appears in a 422 Invalid Status.

use std::fmt;

/// The longest DNS-1123 label (and DNS-1035 label).
pub const DNS1123_LABEL_MAX_LENGTH: usize = 63;
/// The longest DNS-1123 subdomain.
pub const DNS1123_SUBDOMAIN_MAX_LENGTH: usize = 253;
/// How many random characters `generateName` appends.
pub const GENERATED_SUFFIX_LENGTH: usize = 5;
/// The longest `generateName` prefix kept (upstream's `MaxGeneratedNameLength`): the
/// generated name then fits in 63 characters whatever the kind's rule.
pub const MAX_GENERATED_NAME_LENGTH: usize = 63 - GENERATED_SUFFIX_LENGTH;

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_ERR: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric \
                                 characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_ERR: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric \
                                     characters, '-' or '.', and must start and end with an alphanumeric \
                                     character";
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const DNS1035_LABEL_ERR: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or \
                                 '-', start with an alphabetic character, and end with an alphanumeric \
                                 character";

/// `must be no more than N characters`.
pub fn max_len_error(n: usize) -> String {
    format!("must be no more than {n} characters")
}

/// Upstream's `RegexError`: the message, examples and the regex, in its exact punctuation.
fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{fmt}')");
    }
    let mut out = format!("{msg} (e.g. ");
    for (i, ex) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push('\'');
        out.push_str(ex);
        out.push_str("', ");
    }
    out.push_str("regex used for validation is '");
    out.push_str(fmt);
    out.push_str("')");
    out
}

fn is_lower_alnum(c: u8) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?` over the whole string.
fn matches_label(s: &str) -> bool {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(&f), Some(&l)) => {
            is_lower_alnum(f) && is_lower_alnum(l) && b.iter().all(|&c| is_lower_alnum(c) || c == b'-')
        }
        _ => false,
    }
}

/// Whether `value` is a DNS-1123 label; the error messages if not.
pub fn is_dns1123_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_LABEL_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_LABEL_MAX_LENGTH));
    }
    if !matches_label(value) {
        errs.push(regex_error(DNS1123_LABEL_ERR, DNS1123_LABEL_FMT, &["my-name", "123-abc"]));
    }
    errs
}

/// Whether `value` is a DNS-1123 subdomain; the error messages if not.
pub fn is_dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    if !value.split('.').all(matches_label) {
        errs.push(regex_error(DNS1123_SUBDOMAIN_ERR, DNS1123_SUBDOMAIN_FMT, &["example.com"]));
    }
    errs
}

/// Whether `value` is a DNS-1035 label (starts with a letter); the error messages if not.
pub fn is_dns1035_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_LABEL_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_LABEL_MAX_LENGTH));
    }
    if !(matches_label(value) && value.as_bytes()[0].is_ascii_lowercase()) {
        errs.push(regex_error(DNS1035_LABEL_ERR, DNS1035_LABEL_FMT, &["my-name", "abc-123"]));
    }
    errs
}

/// Names that cannot be a URL path segment: `.`, `..`, or anything with `/` or `%`.
pub fn is_valid_path_segment_name(name: &str) -> Vec<String> {
    for bad in [".", ".."] {
        if name == bad {
            return vec![format!("may not be '{bad}'")];
        }
    }
    ["/", "%"].iter().filter(|bad| name.contains(**bad)).map(|bad| format!("may not contain '{bad}'")).collect()
}

/// The rule a kind's `metadata.name` must follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameRule {
    /// Up to 253 characters of lowercase alphanumerics, `-` and `.` (most kinds).
    Dns1123Subdomain,
    /// Up to 63 characters of lowercase alphanumerics and `-` (Namespace).
    Dns1123Label,
    /// A DNS-1123 label that starts with a letter (Service).
    Dns1035Label,
    /// Anything that can be a URL path segment (roles and bindings: `system:discovery`).
    PathSegment,
}

impl NameRule {
    /// The rule kube-apiserver applies to names of `kind`.
    pub fn for_kind(kind: &str) -> NameRule {
        match kind {
            "Namespace" => NameRule::Dns1123Label,
            "Service" => NameRule::Dns1035Label,
            "Role" | "ClusterRole" | "RoleBinding" | "ClusterRoleBinding" => NameRule::PathSegment,
            _ => NameRule::Dns1123Subdomain,
        }
    }

    /// The error messages for `name`; with `prefix`, `name` is a `generateName` prefix,
    /// which may end in `-`.
    pub fn check(self, name: &str, prefix: bool) -> Vec<String> {
        let masked;
        let name = if prefix {
            masked = mask_trailing_dash(name);
            masked.as_str()
        } else {
            name
        };
        match self {
            NameRule::Dns1123Subdomain => is_dns1123_subdomain(name),
            NameRule::Dns1123Label => is_dns1123_label(name),
            NameRule::Dns1035Label => is_dns1035_label(name),
            // A prefix is only checked for the characters a segment cannot hold.
            NameRule::PathSegment if prefix => {
                is_valid_path_segment_name(name).into_iter().filter(|e| e.starts_with("may not contain")).collect()
            }
            NameRule::PathSegment => is_valid_path_segment_name(name),
        }
    }
}

/// Upstream's `maskTrailingDash`, byte for byte (it replaces the last two characters).
fn mask_trailing_dash(name: &str) -> String {
    if name.len() > 1 && name.ends_with('-') {
        let cut = name.len() - 2;
        // A multi-byte character before the dash is kept (so the name stays invalid).
        let head = if name.is_char_boundary(cut) { &name[..cut] } else { &name[..name.len() - 1] };
        format!("{head}a")
    } else {
        name.to_string()
    }
}

/// The name generated from a `generateName` prefix: the prefix, cut to
/// [`MAX_GENERATED_NAME_LENGTH`] bytes, then the random suffix.
pub fn generate_name(prefix: &str, suffix: &str) -> String {
    let mut cut = prefix.len().min(MAX_GENERATED_NAME_LENGTH);
    while !prefix.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}{suffix}", &prefix[..cut])
}

/// A field's offending value as an error message shows it: Go's `%q` for a string, `%v`
/// for a number or boolean (`Invalid value: "x"`, `Invalid value: 5`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BadValue {
    /// A string, shown quoted.
    Str(String),
    /// Already rendered (a number, a boolean, a composite value), shown as is.
    Raw(String),
}

impl BadValue {
    /// A value decoded from JSON, shown as kube-apiserver shows the value of an unstructured
    /// object: strings quoted, numbers and booleans bare, `null` as the string `"null"`,
    /// objects and lists as Go prints a `map[string]interface {}` / `[]interface {}`.
    pub fn of_json(v: &serde_json::Value) -> BadValue {
        match v {
            serde_json::Value::String(s) => BadValue::Str(s.clone()),
            serde_json::Value::Null => BadValue::Str("null".into()),
            other => BadValue::Raw(go_value(other)),
        }
    }
}

impl fmt::Display for BadValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BadValue::Str(s) => write!(f, "{s:?}"),
            BadValue::Raw(s) => f.write_str(s),
        }
    }
}

/// Go's `%v` of a number or boolean, and `%#v` of a decoded object or list.
fn go_value(v: &serde_json::Value) -> String {
    use serde_json::Value;
    match v {
        Value::Null => "interface {}(nil)".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => i.to_string(),
            (None, Some(x)) => go_float(x),
            _ => n.to_string(),
        },
        Value::String(s) => format!("{s:?}"),
        Value::Array(items) => {
            let inner: Vec<String> = items.iter().map(go_value).collect();
            format!("[]interface {{}}{{{}}}", inner.join(", "))
        }
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let inner: Vec<String> = keys.iter().map(|k| format!("{k:?}:{}", go_value(&m[*k]))).collect();
            format!("map[string]interface {{}}{{{}}}", inner.join(", "))
        }
    }
}

/// Go's `%v` of a float64 (`strconv.FormatFloat(x, 'g', -1, 64)`): the shortest digits
/// that read back as `x`, with an exponent when it is below -4 or from 6 up (`1e+06`).
pub fn go_float(x: f64) -> String {
    if x == 0.0 {
        return "0".into();
    }
    if !x.is_finite() {
        return if x.is_nan() {
            "NaN".into()
        } else if x > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    // Rust's `{:e}` writes the shortest round-tripping digits: `1.5e6`, `-2.5e-7`.
    let sci = format!("{x:e}");
    let Some((mantissa, exp)) = sci.split_once('e') else { return sci };
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{mantissa}e{sign}{:02}", exp.abs());
    }
    x.to_string()
}

/// What kind of failure a [`FieldError`] is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldErrorKind {
    /// The value given is not valid.
    Invalid(BadValue),
    /// A required value is missing.
    Required,
    /// The value is not one of the supported values.
    NotSupported(BadValue),
    /// The field may not be set.
    Forbidden,
    /// The value is not of the type the schema declares.
    TypeInvalid(BadValue),
    /// The value is too long (it is never shown).
    TooLong,
    /// A list has too many items (the value is their number).
    TooMany(i64),
}

impl FieldErrorKind {
    /// The `details.causes[].reason` of this error.
    pub fn cause_type(&self) -> &'static str {
        match self {
            FieldErrorKind::Invalid(_) => "FieldValueInvalid",
            FieldErrorKind::Required => "FieldValueRequired",
            FieldErrorKind::NotSupported(_) => "FieldValueNotSupported",
            FieldErrorKind::Forbidden => "FieldValueForbidden",
            FieldErrorKind::TypeInvalid(_) => "FieldValueTypeInvalid",
            FieldErrorKind::TooLong => "FieldValueTooLong",
            FieldErrorKind::TooMany(_) => "FieldValueTooMany",
        }
    }
}

/// One field's validation failure (upstream's `field.Error`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    pub kind: FieldErrorKind,
    /// The field path, e.g. `metadata.name`.
    pub field: String,
    pub detail: String,
}

impl FieldError {
    pub fn invalid(field: &str, value: &str, detail: impl Into<String>) -> Self {
        FieldError::invalid_value(field, BadValue::Str(value.into()), detail)
    }

    /// Invalid, with a value that need not be a string.
    pub fn invalid_value(field: &str, value: BadValue, detail: impl Into<String>) -> Self {
        FieldError { kind: FieldErrorKind::Invalid(value), field: field.into(), detail: detail.into() }
    }

    pub fn required(field: &str, detail: impl Into<String>) -> Self {
        FieldError { kind: FieldErrorKind::Required, field: field.into(), detail: detail.into() }
    }

    pub fn not_supported(field: &str, value: &str, supported: &[&str]) -> Self {
        FieldError::not_supported_value(field, BadValue::Str(value.into()), supported)
    }

    /// NotSupported, with a value that need not be a string.
    pub fn not_supported_value<S: AsRef<str>>(field: &str, value: BadValue, supported: &[S]) -> Self {
        let quoted: Vec<String> = supported.iter().map(|s| format!("{:?}", s.as_ref())).collect();
        let detail = if quoted.is_empty() { String::new() } else { format!("supported values: {}", quoted.join(", ")) };
        FieldError { kind: FieldErrorKind::NotSupported(value), field: field.into(), detail }
    }

    pub fn forbidden(field: &str, detail: impl Into<String>) -> Self {
        FieldError { kind: FieldErrorKind::Forbidden, field: field.into(), detail: detail.into() }
    }

    /// The value is not of the schema's type; `detail` says which it should be.
    pub fn type_invalid(field: &str, value: BadValue, detail: impl Into<String>) -> Self {
        FieldError { kind: FieldErrorKind::TypeInvalid(value), field: field.into(), detail: detail.into() }
    }

    /// Longer than `max` (upstream's `TooLong`).
    pub fn too_long(field: &str, max: i64) -> Self {
        let detail = if max >= 0 {
            format!("may not be more than {max} {}", if max == 1 { "byte" } else { "bytes" })
        } else {
            "value is too long".into()
        };
        FieldError { kind: FieldErrorKind::TooLong, field: field.into(), detail }
    }

    /// `actual` items where at most `max` are allowed (upstream's `TooMany`).
    pub fn too_many(field: &str, actual: i64, max: i64) -> Self {
        let detail = if max >= 0 {
            format!("must have at most {max} {}", if max == 1 { "item" } else { "items" })
        } else {
            "has too many items".into()
        };
        FieldError { kind: FieldErrorKind::TooMany(actual), field: field.into(), detail }
    }

    /// The message without the field: `Invalid value: "x": detail`.
    pub fn body(&self) -> String {
        let mut s = match &self.kind {
            FieldErrorKind::Invalid(v) | FieldErrorKind::TypeInvalid(v) => format!("Invalid value: {v}"),
            FieldErrorKind::Required => "Required value".to_string(),
            FieldErrorKind::NotSupported(v) => format!("Unsupported value: {v}"),
            FieldErrorKind::Forbidden => "Forbidden".to_string(),
            FieldErrorKind::TooLong => "Too long".to_string(),
            FieldErrorKind::TooMany(n) if *n >= 0 => format!("Too many: {n}"),
            FieldErrorKind::TooMany(_) => "Too many".to_string(),
        };
        if !self.detail.is_empty() {
            s.push_str(": ");
            s.push_str(&self.detail);
        }
        s
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.body())
    }
}

/// Validates `metadata.name` and `metadata.generateName` as upstream's
/// `ValidateObjectMeta` does: generateName errors first, then the name (which, on create,
/// is already generated from the prefix).
pub fn validate_name(rule: NameRule, name: Option<&str>, generate_name: Option<&str>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(prefix) = generate_name.filter(|p| !p.is_empty()) {
        for msg in rule.check(prefix, true) {
            errs.push(FieldError::invalid("metadata.generateName", prefix, msg));
        }
    }
    match name.filter(|n| !n.is_empty()) {
        None => errs.push(FieldError::required("metadata.name", "name or generateName is required")),
        Some(n) => {
            for msg in rule.check(n, false) {
                errs.push(FieldError::invalid("metadata.name", n, msg));
            }
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    const LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or \
                             '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or \
                             '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
    const DNS1035_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start \
                               with an alphabetic character, and end with an alphanumeric character (e.g. \
                               'my-name',  or 'abc-123', regex used for validation is \
                               '[a-z]([-a-z0-9]*[a-z0-9])?')";

    #[test]
    fn subdomains() {
        for ok in ["a", "a.b", "example.com", "0-a", "x".repeat(253).as_str(), "a1.b-2.c"] {
            assert!(is_dns1123_subdomain(ok).is_empty(), "{ok}");
        }
        for bad in ["", "A", "a_b", "-a", "a-", "a..b", ".a", "a.", "a/b", ".", ".."] {
            assert_eq!(is_dns1123_subdomain(bad).len(), 1, "{bad}");
        }
        assert_eq!(is_dns1123_subdomain(&"x".repeat(254)), vec![max_len_error(253)]);
        assert_eq!(is_dns1123_subdomain(&"X".repeat(254)).len(), 2);
    }

    #[test]
    fn labels() {
        assert!(is_dns1123_label("kube-system").is_empty());
        assert!(is_dns1123_label("123-abc").is_empty());
        assert_eq!(is_dns1123_label("a.b"), vec![LABEL_MSG.to_string()]);
        assert_eq!(is_dns1123_label(&"a".repeat(64)), vec!["must be no more than 63 characters".to_string()]);
        assert!(is_dns1123_label(&"a".repeat(63)).is_empty());
        assert!(is_dns1035_label("my-svc").is_empty());
        assert_eq!(is_dns1035_label("1svc"), vec![DNS1035_MSG.to_string()]);
        assert_eq!(is_dns1035_label(""), vec![DNS1035_MSG.to_string()]);
    }

    #[test]
    fn rules_per_kind() {
        assert_eq!(NameRule::for_kind("Namespace"), NameRule::Dns1123Label);
        assert_eq!(NameRule::for_kind("Service"), NameRule::Dns1035Label);
        for k in ["ConfigMap", "Secret", "Pod", "Node", "Deployment", "Lease", "Event", "ServiceAccount"] {
            assert_eq!(NameRule::for_kind(k), NameRule::Dns1123Subdomain);
        }
        assert!(NameRule::Dns1123Label.check("a.b", false).len() == 1);
        assert!(NameRule::Dns1123Subdomain.check("a.b", false).is_empty());
    }

    #[test]
    fn generate_name_prefixes() {
        assert!(NameRule::Dns1123Subdomain.check("web-", true).is_empty());
        assert_eq!(NameRule::Dns1123Subdomain.check("web-", false).len(), 1);
        assert!(NameRule::Dns1035Label.check("web-", true).is_empty());
        assert_eq!(NameRule::Dns1035Label.check("1web-", true).len(), 1);
        assert_eq!(generate_name("web-", "abcde"), "web-abcde");
        let long = "p".repeat(100);
        let g = generate_name(&long, "abcde");
        assert_eq!(g.len(), 63);
        assert!(g.starts_with(&"p".repeat(58)) && g.ends_with("abcde"));
        assert_eq!(generate_name(&format!("a{}", "é".repeat(40)), "abcde").len(), 57 + 5);
    }

    #[test]
    fn path_segments() {
        assert!(is_valid_path_segment_name("a.b").is_empty());
        assert_eq!(is_valid_path_segment_name("."), vec!["may not be '.'"]);
        assert_eq!(is_valid_path_segment_name(".."), vec!["may not be '..'"]);
        assert_eq!(is_valid_path_segment_name("a/b%c"), vec!["may not contain '/'", "may not contain '%'"]);
    }

    #[test]
    fn object_meta_names() {
        let errs = validate_name(NameRule::Dns1123Subdomain, None, None);
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].to_string(), "metadata.name: Required value: name or generateName is required");
        assert_eq!(errs[0].kind.cause_type(), "FieldValueRequired");
        let errs = validate_name(NameRule::Dns1123Label, Some("a.b"), None);
        assert_eq!(errs[0].to_string(), format!("metadata.name: Invalid value: \"a.b\": {LABEL_MSG}"));
        let errs = validate_name(NameRule::Dns1123Subdomain, Some("Bad-xxxxx"), Some("Bad-"));
        assert_eq!(errs.len(), 2);
        assert_eq!(errs[0].field, "metadata.generateName");
        assert_eq!(errs[1].field, "metadata.name");
        assert!(validate_name(NameRule::Dns1123Subdomain, Some("ok-abcde"), Some("ok-")).is_empty());
        let ns = FieldError::not_supported("resourceVersionMatch", "x", &["Exact", "NotOlderThan"]);
        assert_eq!(ns.kind.cause_type(), "FieldValueNotSupported");
        assert_eq!(
            ns.to_string(),
            "resourceVersionMatch: Unsupported value: \"x\": supported values: \"Exact\", \"NotOlderThan\""
        );
    }

    #[test]
    fn schema_errors_print_as_upstream() {
        use serde_json::json;
        let e = FieldError::type_invalid(
            "spec.replicas",
            BadValue::Str("string".into()),
            "spec.replicas in body must be of type integer: \"string\"",
        );
        assert_eq!(
            e.to_string(),
            r#"spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string""#
        );
        assert_eq!(e.kind.cause_type(), "FieldValueTypeInvalid");
        let e = FieldError::invalid_value(
            "spec.n",
            BadValue::of_json(&json!(0)),
            "spec.n in body should be greater than or equal to 1",
        );
        assert_eq!(e.to_string(), "spec.n: Invalid value: 0: spec.n in body should be greater than or equal to 1");
        assert_eq!(FieldError::too_long("spec.s", 5).to_string(), "spec.s: Too long: may not be more than 5 bytes");
        assert_eq!(FieldError::too_long("spec.s", 1).to_string(), "spec.s: Too long: may not be more than 1 byte");
        assert_eq!(FieldError::too_many("spec.l", 4, 3).to_string(), "spec.l: Too many: 4: must have at most 3 items");
        let e = FieldError::not_supported_value("spec.e", BadValue::of_json(&json!(3)), &["1", "2"]);
        assert_eq!(e.to_string(), r#"spec.e: Unsupported value: 3: supported values: "1", "2""#);
        assert_eq!(BadValue::of_json(&json!(null)).to_string(), r#""null""#);
        assert_eq!(BadValue::of_json(&json!(1.5)).to_string(), "1.5");
        assert_eq!(BadValue::of_json(&json!(true)).to_string(), "true");
        assert_eq!(
            BadValue::of_json(&json!({"b": [1, "x"], "a": null})).to_string(),
            r#"map[string]interface {}{"a":interface {}(nil), "b":[]interface {}{1, "x"}}"#
        );
        assert_eq!(go_float(1e21), "1e+21");
        assert_eq!(go_float(1e6), "1e+06");
        assert_eq!(go_float(1234567.0), "1.234567e+06");
        assert_eq!(go_float(100000.0), "100000");
        assert_eq!(go_float(2.5e-7), "2.5e-07");
        assert_eq!(go_float(0.001), "0.001");
        assert_eq!(go_float(10.0), "10");
        assert_eq!(go_float(-1.5), "-1.5");
    }
}
