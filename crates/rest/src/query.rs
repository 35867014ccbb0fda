//! Lenient query-string parsing: kube-rs sends `?&watch=true` and a bare trailing `?`,
//! so empty pairs are skipped; `+` is a space and `%XX` is decoded; a bad escape is kept
//! as is rather than failing the request.

/// The decoded `key=value` pairs of a query string, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Query {
    pairs: Vec<(String, String)>,
}

impl Query {
    /// Parses the raw query (what follows `?`, without it).
    pub fn parse(raw: Option<&str>) -> Query {
        let pairs = raw
            .unwrap_or("")
            .split('&')
            .filter(|p| !p.is_empty())
            .map(|p| {
                let (k, v) = p.split_once('=').unwrap_or((p, ""));
                (decode_component(k, true), decode_component(v, true))
            })
            .filter(|(k, _)| !k.is_empty())
            .collect();
        Query { pairs }
    }

    /// The first value of `key`, if present.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// Every value of `key`, in order.
    pub fn get_all<'a>(&'a self, key: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.pairs.iter().filter(move |(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// A boolean parameter as kube-apiserver reads query booleans: false when absent,
    /// `0` or `false` (any case); any other first value, the empty one included, is true.
    pub fn flag(&self, key: &str) -> bool {
        self.get(key).is_some_and(|v| v != "0" && !v.eq_ignore_ascii_case("false"))
    }
}

/// Percent-decodes one URL component (and `+` as space when `plus_is_space`). Invalid
/// escapes stay literal; invalid UTF-8 is replaced.
pub fn decode_component(s: &str, plus_is_space: bool) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' if i + 2 < b.len() => match (hex(b[i + 1]), hex(b[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push(h << 4 | l);
                    i += 3;
                }
                _ => {
                    out.push(b'%');
                    i += 1;
                }
            },
            b'+' if plus_is_space => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tolerates_kube_rs_shapes() {
        let q = Query::parse(Some("&watch=true&timeoutSeconds=290&&resourceVersion=5&"));
        assert!(q.flag("watch"));
        assert_eq!(q.get("timeoutSeconds"), Some("290"));
        assert_eq!(q.get("resourceVersion"), Some("5"));
        assert_eq!(Query::parse(Some("")), Query::default());
        assert_eq!(Query::parse(None), Query::default());
        let q = Query::parse(Some("fieldSelector=metadata.name%3Dx&labelSelector=a+in+(b)&dryRun=All&dryRun=All"));
        assert_eq!(q.get("fieldSelector"), Some("metadata.name=x"));
        assert_eq!(q.get("labelSelector"), Some("a in (b)"));
        assert_eq!(q.get_all("dryRun").count(), 2);
        assert!(!q.flag("watch"));
        assert_eq!(Query::parse(Some("flag")).get("flag"), Some(""));
        for (raw, want) in [
            ("f", true),
            ("f=", true),
            ("f=yes", true),
            ("f=0", false),
            ("f=False", false),
            ("f=0&f=1", false),
            ("g=1", false),
        ] {
            assert_eq!(Query::parse(Some(raw)).flag("f"), want, "{raw}");
        }
    }

    #[test]
    fn bad_escapes_stay_literal() {
        assert_eq!(decode_component("100%", false), "100%");
        assert_eq!(decode_component("%zz%4", false), "%zz%4");
        assert_eq!(decode_component("%41%42", false), "AB");
        assert_eq!(decode_component("a+b", false), "a+b");
        assert_eq!(decode_component("%ff", false), "\u{fffd}");
    }
}
