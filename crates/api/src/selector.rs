//! Label and field selectors as list and watch requests give them (`labelSelector`,
//! `fieldSelector`): parsing with kube-apiserver's grammar, and matching a JSON object.
//!
//! Label selectors: `k`, `!k`, `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`,
//! `k>n`, `k<n`, joined by commas. Field selectors: `f=v`, `f==v`, `f!=v`, joined by
//! commas, over `metadata.name`, `metadata.namespace` and the fields each kind supports.

use serde_json::Value;

/// One label requirement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LabelRequirement {
    Exists(String),
    NotExists(String),
    Equals(String, String),
    NotEquals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    GreaterThan(String, i64),
    LessThan(String, i64),
}

/// A parsed label selector; empty matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector(pub Vec<LabelRequirement>);

/// Splits on commas that are not inside parentheses.
fn split_top_level(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

fn valid_label_key(k: &str) -> bool {
    !k.is_empty()
        && k.len() <= 317
        && k.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
}

fn valid_label_value(v: &str) -> bool {
    v.len() <= 63 && v.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

fn parse_err(detail: impl std::fmt::Display) -> String {
    format!("unable to parse requirement: {detail}")
}

fn parse_set(rest: &str, key: &str) -> Result<Vec<String>, String> {
    let rest = rest.trim();
    let inner = rest
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| parse_err(format!("found '{rest}', expected: '(' ... ')' for key {key:?}")))?;
    let values: Vec<String> = inner.split(',').map(|v| v.trim().to_string()).filter(|v| !v.is_empty()).collect();
    if let Some(bad) = values.iter().find(|v| !valid_label_value(v)) {
        return Err(parse_err(format!("invalid label value: {bad:?}")));
    }
    Ok(values)
}

impl LabelSelector {
    pub fn parse(s: &str) -> Result<LabelSelector, String> {
        let mut reqs = Vec::new();
        if s.trim().is_empty() {
            return Ok(LabelSelector(reqs));
        }
        for part in split_top_level(s) {
            let part = part.trim();
            if part.is_empty() {
                return Err(parse_err("found '', expected: identifier"));
            }
            reqs.push(parse_requirement(part)?);
        }
        Ok(LabelSelector(reqs))
    }

    /// Whether an object with these labels is selected.
    pub fn matches(&self, labels: Option<&serde_json::Map<String, Value>>) -> bool {
        let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
        self.0.iter().all(|r| match r {
            LabelRequirement::Exists(k) => get(k).is_some(),
            LabelRequirement::NotExists(k) => get(k).is_none(),
            LabelRequirement::Equals(k, v) => get(k) == Some(v.as_str()),
            LabelRequirement::NotEquals(k, v) => get(k) != Some(v.as_str()),
            LabelRequirement::In(k, vs) => get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            LabelRequirement::NotIn(k, vs) => !get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            LabelRequirement::GreaterThan(k, n) => get(k).and_then(|x| x.parse::<i64>().ok()).is_some_and(|x| x > *n),
            LabelRequirement::LessThan(k, n) => get(k).and_then(|x| x.parse::<i64>().ok()).is_some_and(|x| x < *n),
        })
    }
}

fn parse_requirement(part: &str) -> Result<LabelRequirement, String> {
    if let Some(key) = part.strip_prefix('!') {
        let key = key.trim();
        if !valid_label_key(key) {
            return Err(parse_err(format!("invalid label key {key:?}")));
        }
        return Ok(LabelRequirement::NotExists(key.to_string()));
    }
    // Set-based: "key in (...)" / "key notin (...)".
    let words: Vec<&str> = part.splitn(2, char::is_whitespace).collect();
    if words.len() == 2 {
        let key = words[0];
        let rest = words[1].trim_start();
        for (op, is_in) in [("notin", false), ("in", true)] {
            if let Some(set) = rest.strip_prefix(op) {
                if set.trim_start().starts_with('(') {
                    if !valid_label_key(key) {
                        return Err(parse_err(format!("invalid label key {key:?}")));
                    }
                    let values = parse_set(set, key)?;
                    return Ok(if is_in {
                        LabelRequirement::In(key.into(), values)
                    } else {
                        LabelRequirement::NotIn(key.into(), values)
                    });
                }
            }
        }
    }
    for (op, make) in [
        ("!=", LabelRequirement::NotEquals as fn(String, String) -> LabelRequirement),
        ("==", LabelRequirement::Equals),
        ("=", LabelRequirement::Equals),
    ] {
        if let Some((k, v)) = part.split_once(op) {
            let (k, v) = (k.trim(), v.trim());
            if !valid_label_key(k) {
                return Err(parse_err(format!("invalid label key {k:?}")));
            }
            if !valid_label_value(v) {
                return Err(parse_err(format!("invalid label value: {v:?}")));
            }
            return Ok(make(k.into(), v.into()));
        }
    }
    for (op, gt) in [('>', true), ('<', false)] {
        if let Some((k, v)) = part.split_once(op) {
            let (k, v) = (k.trim(), v.trim());
            let n: i64 = v
                .parse()
                .map_err(|_| parse_err(format!("for 'Gt', 'Lt' operators, the value must be an integer: {v:?}")))?;
            if !valid_label_key(k) {
                return Err(parse_err(format!("invalid label key {k:?}")));
            }
            return Ok(if gt {
                LabelRequirement::GreaterThan(k.into(), n)
            } else {
                LabelRequirement::LessThan(k.into(), n)
            });
        }
    }
    if valid_label_key(part) {
        return Ok(LabelRequirement::Exists(part.to_string()));
    }
    Err(parse_err(format!("invalid label key {part:?}")))
}

/// One field requirement: the field, the value, and whether it must equal (or differ).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldRequirement {
    pub field: String,
    pub value: String,
    pub equals: bool,
}

/// A parsed field selector; empty matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSelector(pub Vec<FieldRequirement>);

/// `s` split at each `sep` not escaped by a backslash (kube's `splitTerms`).
fn split_unescaped(s: &str, sep: u8) -> Vec<&str> {
    let (mut out, mut start, mut escaped) = (Vec::new(), 0, false);
    for (i, b) in s.bytes().enumerate() {
        match b {
            _ if escaped => escaped = false,
            b'\\' => escaped = true,
            b if b == sep => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

/// A term split at its first unescaped operator (`!=`, `==`, `=`): field, operator, value.
fn split_operator(term: &str) -> Option<(&str, &'static str, &str)> {
    let b = term.as_bytes();
    let mut escaped = false;
    for i in 0..b.len() {
        if escaped {
            escaped = false;
            continue;
        }
        match b[i] {
            b'\\' => escaped = true,
            b'!' if b.get(i + 1) == Some(&b'=') => return Some((&term[..i], "!=", &term[i + 2..])),
            b'=' if b.get(i + 1) == Some(&b'=') => return Some((&term[..i], "==", &term[i + 2..])),
            b'=' => return Some((&term[..i], "=", &term[i + 1..])),
            _ => {}
        }
    }
    None
}

/// A field selector value with its escapes (`\\`, `\,`, `\=`) undone; any other escape, a
/// trailing backslash or an unescaped `,` or `=` is refused, as kube-apiserver refuses it.
fn unescape_value(v: &str) -> Result<String, String> {
    if !v.contains(['\\', ',', '=']) {
        return Ok(v.to_string());
    }
    let (mut out, mut escaped) = (String::with_capacity(v.len()), false);
    for c in v.chars() {
        match c {
            '\\' | ',' | '=' if escaped => {
                out.push(c);
                escaped = false;
            }
            c if escaped => return Err(format!("invalid field selector: invalid escape sequence: \\{c}")),
            '\\' => escaped = true,
            ',' | '=' => return Err(format!("invalid field selector: unescaped character in value: {c:?}")),
            c => out.push(c),
        }
    }
    if escaped {
        return Err("invalid field selector: invalid escape sequence: \\".into());
    }
    Ok(out)
}

impl FieldSelector {
    /// Parses `s` for objects that can be selected by `fields` besides `metadata.name` and
    /// `metadata.namespace` (their kind's [`crate::kinds::Strategy::selectable_fields`]);
    /// any other field is an error (`field label not supported: spec.foo`).
    pub fn parse(s: &str, fields: &[&str]) -> Result<FieldSelector, String> {
        let mut reqs = Vec::new();
        if s.trim().is_empty() {
            return Ok(FieldSelector(reqs));
        }
        for part in split_unescaped(s, b',') {
            let part = part.trim();
            let Some((field, op, value)) = split_operator(part) else {
                return Err(format!("invalid selector: '{s}'; can't understand '{part}'"));
            };
            let equals = op != "!=";
            let value = unescape_value(value.trim())?;
            let field = field.trim();
            if !matches!(field, "metadata.name" | "metadata.namespace") && !fields.contains(&field) {
                return Err(format!("field label not supported: {field}"));
            }
            reqs.push(FieldRequirement { field: field.into(), value, equals });
        }
        Ok(FieldSelector(reqs))
    }

    /// The selector reading each field where `path_of` says the objects keep it
    /// ([`crate::kinds::Strategy::field_path`]): a field label a kind converts, such as
    /// events.k8s.io's `regarding.kind`, read from the stored `involvedObject.kind`.
    pub fn reading(mut self, path_of: impl Fn(&str) -> Option<&'static str>) -> FieldSelector {
        for r in &mut self.0 {
            if let Some(path) = path_of(&r.field) {
                r.field = path.to_string();
            }
        }
        self
    }

    /// Whether `obj` is selected; a missing field reads as `""`. A field read as `a|b` is
    /// the first of `a` and `b` that is not empty.
    pub fn matches(&self, obj: &Value) -> bool {
        self.matches_by(|path| field_text(obj, path))
    }

    /// [`FieldSelector::matches`] of an object whose field at each path reads as
    /// `text(path)` (one of [`FieldSelector::paths`]).
    pub fn matches_by(&self, mut text: impl FnMut(&str) -> String) -> bool {
        self.0.iter().all(|r| {
            let actual = r.field.split('|').map(&mut text).find(|v| !v.is_empty());
            (actual.unwrap_or_default() == r.value) == r.equals
        })
    }

    /// Every field path the selector reads.
    pub fn paths(&self) -> impl Iterator<Item = &str> + Clone {
        self.0.iter().flat_map(|r| r.field.split('|'))
    }
}

/// The value at the dotted `path` of `obj` as a field selector compares it.
pub fn field_text(obj: &Value, path: &str) -> String {
    let mut v = obj;
    for seg in path.split('.') {
        v = v.get(seg).unwrap_or(&Value::Null);
    }
    match v {
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn labels(v: Value) -> serde_json::Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn label_selectors() {
        let l = labels(json!({"app": "web", "tier": "front", "n": "5"}));
        let yes = [
            "",
            "app",
            "app=web",
            "app==web",
            "app!=db",
            "missing!=x",
            "!missing",
            "app in (web, db)",
            "app notin (db)",
            "missing notin (db)",
            "app=web,tier=front",
            "app in (web),tier",
            "n>4",
            "n<6",
            "example.com/x!=y",
        ];
        for s in yes {
            assert!(LabelSelector::parse(s).unwrap().matches(Some(&l)), "{s}");
        }
        for s in ["app=db", "!app", "missing", "app in (db)", "app notin (web,db)", "app=web,tier=back", "n>5"] {
            assert!(!LabelSelector::parse(s).unwrap().matches(Some(&l)), "{s}");
        }
        assert!(LabelSelector::parse("!app").unwrap().matches(None));
        for bad in ["app=(x", "a b c", "app in x", ",", "n>x", "=v"] {
            assert!(LabelSelector::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn field_selectors() {
        const POD: &[&str] = &["spec.nodeName", "status.phase", "spec.hostNetwork", "spec.schedulerName"];
        let pod = json!({"metadata": {"name": "p", "namespace": "ns"}, "spec": {"nodeName": "n1", "hostNetwork": true},
                         "status": {"phase": "Running"}});
        for s in [
            "metadata.name=p",
            "metadata.name==p,metadata.namespace=ns",
            "metadata.name!=q",
            "spec.nodeName=n1",
            "status.phase=Running",
            "spec.hostNetwork=true",
            "spec.schedulerName=",
        ] {
            assert!(FieldSelector::parse(s, POD).unwrap().matches(&pod), "{s}");
        }
        assert!(!FieldSelector::parse("metadata.name=q", POD).unwrap().matches(&pod));
        assert_eq!(
            FieldSelector::parse("spec.nodeName=n1", &[]).unwrap_err(),
            "field label not supported: spec.nodeName"
        );
        assert!(FieldSelector::parse("metadata.name", &[]).is_err());
    }

    /// kube-apiserver's escapes: `\\`, `\,` and `\=` stand for themselves in a value; any
    /// other escape, a trailing backslash, or a bare `,`/`=` inside a value is refused.
    #[test]
    fn field_selector_values_unescape_as_kube_apiserver_does() {
        let odd = json!({"metadata": {"name": "a,b=c\\d"}});
        let sel = FieldSelector::parse(r"metadata.name=a\,b\=c\\d", &[]).unwrap();
        assert!(sel.matches(&odd));
        let two = FieldSelector::parse(r"metadata.name!=a\,b,metadata.namespace=x", &[]).unwrap();
        assert_eq!(two.0.len(), 2);
        assert_eq!(two.0[0].value, "a,b");
        for bad in [r"metadata.name=\x\x", r"metadata.name=a\", r"metadata.name=a=b", r"metadata.name=\n"] {
            let e = FieldSelector::parse(bad, &[]).unwrap_err();
            assert!(e.starts_with("invalid field selector: "), "{bad}: {e}");
        }
        // An escaped operator is part of the field, not an operator.
        assert!(FieldSelector::parse(r"metadata\=name", &[]).is_err());
    }
}
