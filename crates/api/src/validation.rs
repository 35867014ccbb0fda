//! Name rules: the DNS-1123/DNS-1035 validators with kube-apiserver's exact error text,
//! which rule each kind's names follow, `generateName` handling, path-segment rules,
//! the metadata every object's writes are checked for ([`validate_object_meta`]: label
//! and annotation syntax, the annotations' total size, owner references, finalizers), and
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
    /// Not shown (upstream's `field.OmitValueType`): `Invalid value: detail`.
    Omitted,
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
            BadValue::Omitted => Ok(()),
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
    /// The value appears twice where it must be unique.
    Duplicate(BadValue),
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
            FieldErrorKind::Duplicate(_) => "FieldValueDuplicate",
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

    /// `Duplicate value: "x"` (upstream's `field.Duplicate`).
    pub fn duplicate(field: &str, value: BadValue) -> Self {
        FieldError { kind: FieldErrorKind::Duplicate(value), field: field.into(), detail: String::new() }
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
            FieldErrorKind::Invalid(BadValue::Omitted) => "Invalid value".to_string(),
            FieldErrorKind::Invalid(v) | FieldErrorKind::TypeInvalid(v) => format!("Invalid value: {v}"),
            FieldErrorKind::Required => "Required value".to_string(),
            FieldErrorKind::NotSupported(v) => format!("Unsupported value: {v}"),
            FieldErrorKind::Forbidden => "Forbidden".to_string(),
            FieldErrorKind::TooLong => "Too long".to_string(),
            FieldErrorKind::TooMany(n) if *n >= 0 => format!("Too many: {n}"),
            FieldErrorKind::TooMany(_) => "Too many".to_string(),
            FieldErrorKind::Duplicate(v) => format!("Duplicate value: {v}"),
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

// ---- ObjectMeta ---------------------------------------------------------------------------

/// The most bytes an object's annotations may hold, keys and values together (upstream's
/// `TotalAnnotationSizeLimitB`).
pub const TOTAL_ANNOTATION_SIZE_LIMIT_B: usize = 256 * 1024;
/// The longest name part of a qualified name (label key), and the longest label value.
pub const QUALIFIED_NAME_MAX_LENGTH: usize = 63;

const LABEL_KEY_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_KEY_ERR: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with \
                             an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_ERR: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', \
                               '_' or '.', and must start and end with an alphanumeric character";
const FINALIZER_ORPHAN: &str = "orphan";
const FINALIZER_FOREGROUND: &str = "foregroundDeletion";

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]` over the whole string.
fn matches_label_key(s: &str) -> bool {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(f), Some(l)) => {
            f.is_ascii_alphanumeric()
                && l.is_ascii_alphanumeric()
                && b.iter().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// Whether `value` is a qualified name (a label key: an optional DNS-1123 subdomain
/// prefix and `/`, then a name of up to 63 alphanumerics, `-`, `_` and `.` that starts
/// and ends alphanumeric); the error messages if not (upstream's `IsQualifiedName`).
pub fn is_qualified_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let mut parts = value.split('/');
    let (first, second, third) = (parts.next().unwrap_or(""), parts.next(), parts.next());
    let name = match (second, third) {
        (None, _) => first,
        (Some(name), None) => {
            if first.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                errs.extend(is_dns1123_subdomain(first).into_iter().map(|m| format!("prefix part {m}")));
            }
            name
        }
        (Some(_), Some(_)) => {
            errs.push(format!(
                "a valid label key {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(LABEL_KEY_ERR, LABEL_KEY_FMT, &["MyName", "my.name", "123-abc"])
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > QUALIFIED_NAME_MAX_LENGTH {
        errs.push(format!("name part {}", max_len_error(QUALIFIED_NAME_MAX_LENGTH)));
    }
    if !matches_label_key(name) {
        errs.push(format!(
            "name part {}",
            regex_error(LABEL_KEY_ERR, LABEL_KEY_FMT, &["MyName", "my.name", "123-abc"])
        ));
    }
    errs
}

/// Whether `value` is a label value (empty, or up to 63 alphanumerics, `-`, `_` and `.`
/// that start and end alphanumeric); the error messages if not.
pub fn is_valid_label_value(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > QUALIFIED_NAME_MAX_LENGTH {
        errs.push(max_len_error(QUALIFIED_NAME_MAX_LENGTH));
    }
    if !value.is_empty() && !matches_label_key(value) {
        errs.push(regex_error(LABEL_VALUE_ERR, LABEL_VALUE_FMT, &["MyValue", "my_value", "12345"]));
    }
    errs
}

/// The errors of a map of labels at `field` (upstream's `ValidateLabels`): each key a
/// qualified name, each value a label value. Values that are not strings are left to
/// decoding.
pub fn validate_labels(labels: &serde_json::Map<String, serde_json::Value>, field: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (k, v) in labels {
        for msg in is_qualified_name(k) {
            errs.push(FieldError::invalid(field, k, msg));
        }
        let v = v.as_str().unwrap_or("");
        for msg in is_valid_label_value(v) {
            errs.push(FieldError::invalid(field, v, msg));
        }
    }
    errs
}

/// The errors of `metadata`'s labels, annotations, owner references, finalizers and
/// generation, as upstream's `ValidateObjectMeta` (and its update counterpart) checks
/// them on every write of every kind; name and namespace are checked where they are set.
/// Linear in the metadata.
pub fn validate_object_meta(meta: &serde_json::Map<String, serde_json::Value>) -> Vec<FieldError> {
    use serde_json::Value;
    let mut errs = Vec::new();
    if let Some(g) = meta.get("generation").and_then(Value::as_i64).filter(|g| *g < 0) {
        errs.push(FieldError::invalid_value(
            "metadata.generation",
            BadValue::Raw(g.to_string()),
            "must be greater than or equal to 0",
        ));
    }
    if let Some(Value::Object(labels)) = meta.get("labels") {
        errs.extend(validate_labels(labels, "metadata.labels"));
    }
    if let Some(Value::Object(annotations)) = meta.get("annotations") {
        let mut total = 0usize;
        for (k, v) in annotations {
            // Case does not matter in annotation keys (lowered only when it has upper case).
            let lower = if k.bytes().any(|b| b.is_ascii_uppercase()) {
                std::borrow::Cow::Owned(k.to_ascii_lowercase())
            } else {
                std::borrow::Cow::Borrowed(k.as_str())
            };
            for msg in is_qualified_name(&lower) {
                errs.push(FieldError::invalid("metadata.annotations", k, msg));
            }
            total += k.len() + v.as_str().map_or(0, str::len);
        }
        if total > TOTAL_ANNOTATION_SIZE_LIMIT_B {
            errs.push(FieldError::too_long("metadata.annotations", TOTAL_ANNOTATION_SIZE_LIMIT_B as i64));
        }
    }
    if let Some(Value::Array(owners)) = meta.get("ownerReferences") {
        errs.extend(validate_owner_references(owners));
    }
    if let Some(Value::Array(finalizers)) = meta.get("finalizers") {
        let (mut orphan, mut foreground) = (false, false);
        for f in finalizers.iter().filter_map(Value::as_str) {
            for msg in is_qualified_name(f) {
                errs.push(FieldError::invalid("metadata.finalizers", f, msg));
            }
            orphan |= f == FINALIZER_ORPHAN;
            foreground |= f == FINALIZER_FOREGROUND;
        }
        if orphan && foreground {
            errs.push(FieldError::invalid_value(
                "metadata.finalizers",
                BadValue::Raw(go_string_list(finalizers)),
                format!("finalizer {FINALIZER_ORPHAN} and {FINALIZER_FOREGROUND} cannot be both set"),
            ));
        }
    }
    errs
}

/// Go's `%#v` of a `[]string`, as a 422 shows a list: `[]string{"a", "b"}`.
fn go_string_list(items: &[serde_json::Value]) -> String {
    let words: Vec<String> = items.iter().filter_map(serde_json::Value::as_str).map(|w| format!("{w:?}")).collect();
    format!("[]string{{{}}}", words.join(", "))
}

/// Upstream's `ValidateOwnerReferences`: each reference names a version, kind, name and
/// uid, is not an Event, and at most one is the controller.
fn validate_owner_references(owners: &[serde_json::Value]) -> Vec<FieldError> {
    use serde_json::Value;
    const FIELD: &str = "metadata.ownerReferences";
    let mut errs = Vec::new();
    let mut controller: Option<String> = None;
    for r in owners {
        let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("");
        let (api_version, kind, name, uid) = (s("apiVersion"), s("kind"), s("name"), s("uid"));
        // schema.ParseGroupVersion: `v`, `g/v`; anything else has no version.
        let (group, version) = match api_version.split_once('/') {
            None => ("", api_version),
            Some((g, v)) if !v.contains('/') => (g, v),
            Some(_) => ("", ""),
        };
        if version.is_empty() {
            errs.push(FieldError::invalid(&format!("{FIELD}.apiVersion"), api_version, "version must not be empty"));
        }
        for (field, value) in [("kind", kind), ("name", name), ("uid", uid)] {
            if value.is_empty() {
                errs.push(FieldError::invalid(&format!("{FIELD}.{field}"), value, "must not be empty"));
            }
        }
        if group.is_empty() && version == "v1" && kind == "Event" {
            errs.push(FieldError::invalid_value(
                FIELD,
                BadValue::Raw(format!(
                    "v1.OwnerReference{{APIVersion:{api_version:?}, Kind:{kind:?}, Name:{name:?}, UID:{uid:?}, \
                     Controller:(*bool)(nil), BlockOwnerDeletion:(*bool)(nil)}}"
                )),
                "/v1, Kind=Event is disallowed from being an owner",
            ));
        }
        if r.get("controller").and_then(Value::as_bool) == Some(true) {
            let this = format!("{kind}/{name}");
            match &controller {
                Some(first) => errs.push(FieldError::invalid_value(
                    FIELD,
                    BadValue::of_json(&Value::Array(owners.to_vec())),
                    format!(
                        "Only one reference can have Controller set to true. Found \"true\" in references for {first} and {this}"
                    ),
                )),
                None => controller = Some(this),
            }
        }
    }
    errs
}

// ---- Numeric ranges --------------------------------------------------------------------

pub const PORT_RANGE: &str = "must be between 1 and 65535, inclusive";
pub const NON_NEGATIVE: &str = "must be greater than or equal to 0";

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
    fn rules_check_names() {
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

    const NAME_PART_MSG: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start \
                                 and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or \
                                 '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

    #[test]
    fn qualified_names() {
        for ok in [
            "a",
            "A.b_c-D",
            "example.com/MyName",
            "kubernetes.io/x",
            &"a".repeat(63),
            &format!("{}/a", "b".repeat(253)),
        ] {
            assert!(is_qualified_name(ok).is_empty(), "{ok}: {:?}", is_qualified_name(ok));
        }
        assert_eq!(is_qualified_name("a b"), vec![NAME_PART_MSG]);
        assert_eq!(is_qualified_name("-a"), vec![NAME_PART_MSG]);
        assert_eq!(is_qualified_name("a."), vec![NAME_PART_MSG]);
        assert_eq!(is_qualified_name(""), vec!["name part must be non-empty".to_string(), NAME_PART_MSG.to_string()]);
        assert_eq!(
            is_qualified_name(&"a".repeat(64)),
            vec!["name part must be no more than 63 characters".to_string()]
        );
        assert_eq!(is_qualified_name("/a"), vec!["prefix part must be non-empty"]);
        assert_eq!(is_qualified_name("Example.com/a").len(), 1);
        assert!(is_qualified_name("Example.com/a")[0].starts_with("prefix part a lowercase RFC 1123 subdomain"));
        assert_eq!(
            is_qualified_name(&format!("{}/a", "b".repeat(254)))[0],
            "prefix part must be no more than 253 characters"
        );
        assert_eq!(is_qualified_name("a/"), vec!["name part must be non-empty".to_string(), NAME_PART_MSG.to_string()]);
        let three = is_qualified_name("a/b/c");
        assert_eq!(three.len(), 1);
        assert!(three[0].starts_with("a valid label key must consist of"), "{}", three[0]);
        assert!(three[0].ends_with("with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"));
    }

    #[test]
    fn label_values() {
        for ok in ["", "a", "A-b_c.9", &"v".repeat(63)] {
            assert!(is_valid_label_value(ok).is_empty(), "{ok}");
        }
        let regex = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', \
                     and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or \
                     '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
        for bad in ["-a", "a-", "a b", "a/b", "é"] {
            assert_eq!(is_valid_label_value(bad), vec![regex], "{bad}");
        }
        assert_eq!(is_valid_label_value(&"v".repeat(64)), vec!["must be no more than 63 characters"]);
    }

    #[test]
    fn object_meta_limits() {
        use serde_json::json;
        let meta = |v: serde_json::Value| v.as_object().unwrap().clone();
        assert!(validate_object_meta(&meta(json!({"name": "x", "labels": {"app": "web", "k8s.io/x": ""},
            "annotations": {"Example.com/Key": "any value at all"}, "finalizers": ["example.com/f", "orphan"],
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "r", "uid": "u", "controller": true}],
            "generation": 3})))
        .is_empty());

        let errs = validate_object_meta(&meta(json!({"labels": {"bad key": "ok", "k": "bad value"}})));
        let shown: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
        assert_eq!(shown.len(), 2);
        assert!(
            shown[0].starts_with(r#"metadata.labels: Invalid value: "bad key": name part must consist"#),
            "{}",
            shown[0]
        );
        assert!(
            shown[1].starts_with(r#"metadata.labels: Invalid value: "bad value": a valid label must be"#),
            "{}",
            shown[1]
        );

        let at_limit = "v".repeat(TOTAL_ANNOTATION_SIZE_LIMIT_B - 1);
        assert!(validate_object_meta(&meta(json!({"annotations": {"a": at_limit}}))).is_empty());
        let over = format!("{at_limit}v");
        let errs = validate_object_meta(&meta(json!({"annotations": {"a": over}})));
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].to_string(), "metadata.annotations: Too long: may not be more than 262144 bytes");
        assert_eq!(errs[0].kind.cause_type(), "FieldValueTooLong");
        let errs = validate_object_meta(&meta(json!({"annotations": {"a/b/c": ""}})));
        assert_eq!(errs[0].field, "metadata.annotations");

        let errs = validate_object_meta(&meta(json!({"finalizers": ["not ok", "orphan", "foregroundDeletion"]})));
        let shown: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
        assert!(shown[0].starts_with(r#"metadata.finalizers: Invalid value: "not ok": name part"#));
        assert_eq!(
            shown[1],
            r#"metadata.finalizers: Invalid value: []string{"not ok", "orphan", "foregroundDeletion"}: finalizer orphan and foregroundDeletion cannot be both set"#
        );

        let errs = validate_object_meta(&meta(json!({"ownerReferences": [
            {"apiVersion": "apps/", "kind": "", "name": "", "uid": ""},
            {"apiVersion": "v1", "kind": "Event", "name": "e", "uid": "u", "controller": true},
            {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "u2", "controller": true}]})));
        let shown: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
        assert_eq!(
            shown[0],
            r#"metadata.ownerReferences.apiVersion: Invalid value: "apps/": version must not be empty"#
        );
        assert_eq!(shown[1], r#"metadata.ownerReferences.kind: Invalid value: "": must not be empty"#);
        assert_eq!(shown[2], r#"metadata.ownerReferences.name: Invalid value: "": must not be empty"#);
        assert_eq!(shown[3], r#"metadata.ownerReferences.uid: Invalid value: "": must not be empty"#);
        assert!(shown[4].ends_with("/v1, Kind=Event is disallowed from being an owner"), "{}", shown[4]);
        assert!(shown[5].ends_with(
            r#"Only one reference can have Controller set to true. Found "true" in references for Event/e and Pod/p"#
        ));

        let errs = validate_object_meta(&meta(json!({"generation": -1})));
        assert_eq!(errs[0].to_string(), "metadata.generation: Invalid value: -1: must be greater than or equal to 0");
    }
}
