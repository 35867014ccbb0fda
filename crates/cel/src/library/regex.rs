//! Owns kube's regex library (`kubernetes.regex`): `string.find(regex)` (the first
//! match, `''` when none), `string.findAll(regex)` and `string.findAll(regex, limit)`
//! (the matches, at most `limit` when it is not negative), as Go's `FindString` and
//! `FindAllString`.
//!
//! Patterns come from expressions and so from users: compiled with bounded program and
//! DFA sizes, a pattern that would take more memory is an error rather than an
//! allocation, and the `regex` crate matches in time linear in the text.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use cel::common::types::{CelList, CelString, INT_TYPE, STRING_TYPE};
use cel::common::value::{CowVal, Val};
use cel::{DeclarationError, Env, ExecutionError};
use regex::{Regex, RegexBuilder};

use super::{int_arg, owned, string_arg, take};

/// The most memory a compiled pattern may take.
const SIZE_LIMIT: usize = 1 << 20;
/// The most memory a pattern's lazy DFA may take while matching.
const DFA_SIZE_LIMIT: usize = 2 << 20;
/// How many compiled patterns are kept: rules use a few constant ones.
const CACHED: usize = 256;

pub fn register(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_member_overload("find", "string_find_string", STRING_TYPE, vec![STRING_TYPE], find)?;
    env.add_member_overload("findAll", "string_find_all_string", STRING_TYPE, vec![STRING_TYPE], find_all)?;
    env.add_member_overload(
        "findAll",
        "string_find_all_string_int",
        STRING_TYPE,
        vec![STRING_TYPE, INT_TYPE],
        find_all_n,
    )?;
    Ok(())
}

/// `pattern` compiled (or taken from the cache), or kube's `Illegal regex` error.
pub(crate) fn compile(pattern: &str) -> Result<Regex, ExecutionError> {
    static CACHE: OnceLock<Mutex<HashMap<String, Regex>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(re) = cache.lock().unwrap_or_else(|e| e.into_inner()).get(pattern) {
        return Ok(re.clone());
    }
    let re = RegexBuilder::new(pattern)
        .size_limit(SIZE_LIMIT)
        .dfa_size_limit(DFA_SIZE_LIMIT)
        .build()
        .map_err(|e| ExecutionError::function_error("regex", format!("Illegal regex: {e}")))?;
    let mut cache = cache.lock().unwrap_or_else(|e| e.into_inner());
    if cache.len() >= CACHED {
        cache.clear();
    }
    cache.insert(pattern.to_owned(), re.clone());
    Ok(re)
}

fn find<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [s, pattern] = take(args)?;
    let re = compile(string_arg(pattern.as_ref())?)?;
    let found = re.find(string_arg(s.as_ref())?).map_or("", |m| m.as_str());
    owned(CelString::from(found.to_owned()))
}

fn find_all<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [s, pattern] = take(args)?;
    matches(s.as_ref(), pattern.as_ref(), -1)
}

fn find_all_n<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [s, pattern, n] = take(args)?;
    matches(s.as_ref(), pattern.as_ref(), int_arg(n.as_ref())?)
}

/// The successive matches of `pattern` in `s`, at most `n` unless `n` is negative. As
/// Go's `FindAll`, an empty match right after a match is not one.
fn matches<'b, 'v>(s: &dyn Val, pattern: &dyn Val, n: i64) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let re = compile(string_arg(pattern)?)?;
    let s = string_arg(s)?;
    let limit = usize::try_from(n).unwrap_or(usize::MAX);
    let mut found: Vec<Box<dyn Val + 'v>> = Vec::new();
    let mut previous_end = None;
    for m in re.find_iter(s) {
        if found.len() >= limit {
            break;
        }
        if m.is_empty() && previous_end == Some(m.start()) {
            continue;
        }
        previous_end = Some(m.end());
        found.push(Box::new(CelString::from(m.as_str().to_owned())));
    }
    owned(CelList::from(found))
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{assert_err, assert_true, eval};
    use crate::Value;
    use std::sync::Arc;

    fn strings(v: &[&str]) -> Value {
        Value::List(Arc::new(v.iter().map(|s| Value::String(Arc::new(s.to_string()))).collect()))
    }

    #[test]
    fn find() {
        assert_true("'abc 123'.find('[0-9]+') == '123'");
        assert_true("'abc'.find('[0-9]+') == ''");
        assert_true("'/foo/bar'.find('^/[a-z]+') == '/foo'");
    }

    #[test]
    fn find_all() {
        assert_eq!(eval("'123 abc 456'.findAll('[0-9]+')"), Ok(strings(&["123", "456"])));
        assert_eq!(eval("'123 abc 456'.findAll('[0-9]+', 1)"), Ok(strings(&["123"])));
        assert_eq!(eval("'123 abc 456'.findAll('[0-9]+', 0)"), Ok(strings(&[])));
        assert_eq!(eval("'123 abc 456'.findAll('[0-9]+', -1)"), Ok(strings(&["123", "456"])));
        assert_eq!(eval("'abc'.findAll('[0-9]+')"), Ok(strings(&[])));
        // Go: regexp.MustCompile("a*").FindAllString("baaab", -1) == ["" "aaa" "" ""]... less
        // the empty match abutting "aaa".
        assert_eq!(eval("'baaab'.findAll('a*')"), Ok(strings(&["", "aaa", ""])));
    }

    #[test]
    fn bad_and_huge_patterns_are_errors() {
        assert_err("'abc'.find('[')", "Illegal regex");
        assert_err("'abc'.findAll('(')", "Illegal regex");
        // Compiles to far more than the size limit.
        assert_err("'abc'.find('((a{100}){100}){100}')", "Illegal regex");
    }
}
