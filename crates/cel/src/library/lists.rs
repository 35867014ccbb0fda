//! Owns kube's lists library (`kubernetes.lists`): `isSorted()`, `sum()`, `min()`,
//! `max()`, `indexOf(x)` and `lastIndexOf(x)` on lists.
//!
//! kube declares these per element type (`list(int)`, `list(string)`, ...) and the type
//! checker picks one; here lists are untyped at runtime, so the elements are checked as
//! they are met: ordered with their `Comparer`, summed with their `Adder`. The list
//! overloads of `indexOf` and `lastIndexOf` take a `list` receiver, so they sit beside
//! the strings extension's `string` ones.

use std::cmp::Ordering;

use cel::common::types::{CelBool, CelInt, Kind, DYN_TYPE, LIST_TYPE};
use cel::common::value::{CowVal, Val};
use cel::{DeclarationError, Env, ExecutionError};

use super::{owned, take};

pub fn register(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_member_overload("isSorted", "list_is_sorted_bool", LIST_TYPE, vec![], is_sorted)?;
    env.add_member_overload("sum", "list_sum", LIST_TYPE, vec![], sum)?;
    env.add_member_overload("min", "list_min", LIST_TYPE, vec![], min)?;
    env.add_member_overload("max", "list_max", LIST_TYPE, vec![], max)?;
    env.add_member_overload("indexOf", "list_a_index_of_int", LIST_TYPE, vec![DYN_TYPE], index_of)?;
    env.add_member_overload("lastIndexOf", "list_a_last_index_of_int", LIST_TYPE, vec![DYN_TYPE], last_index_of)?;
    Ok(())
}

/// The elements of a list receiver, borrowed.
fn elements<'b, 'v>(list: &'b (dyn Val + 'v)) -> Result<Vec<&'b (dyn Val + 'v)>, ExecutionError> {
    let iterable = list.as_iterable().ok_or_else(|| super::unexpected(list, "list"))?;
    let mut items = iterable.iter();
    let mut out = Vec::new();
    while let Some(item) = items.next() {
        out.push(item);
    }
    Ok(out)
}

/// The order of `a` and `b`, or kube's "no such overload" for elements of no ordered type.
fn compare(function: &str, a: &dyn Val, b: &dyn Val) -> Result<Ordering, ExecutionError> {
    let cmp = a.as_comparer().ok_or_else(|| no_overload(function, a))?;
    cmp.compare(b).map_err(|_| no_overload(function, b))
}

fn no_overload(function: &str, v: &dyn Val) -> ExecutionError {
    ExecutionError::no_such_member_overload(function, vec![format!("list({})", v.get_type().name())])
}

fn is_sorted<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [list] = take(args)?;
    let items = elements(list.as_ref())?;
    if let [only] = items.as_slice() {
        // A lone element must still be of an ordered type.
        only.as_comparer().ok_or_else(|| no_overload("isSorted", *only))?;
    }
    for pair in items.windows(2) {
        if compare("isSorted", pair[0], pair[1])? == Ordering::Greater {
            return owned(CelBool::from(false));
        }
    }
    owned(CelBool::from(true))
}

/// The sum of a list of `int`, `uint`, `double` or `duration`; `0` when empty (the
/// element type is not known then, and kube's `list(int)` overload answers `0`).
fn sum<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [list] = take(args)?;
    let items = elements(list.as_ref())?;
    let mut total: Option<Box<dyn Val + 'v>> = None;
    for item in items {
        if !matches!(item.get_type().kind(), Kind::Int | Kind::UInt | Kind::Double | Kind::Duration) {
            return Err(no_overload("sum", item));
        }
        total = Some(match total {
            None => item.clone_as_boxed(),
            Some(acc) => {
                let adder = acc.as_adder().ok_or_else(|| no_overload("sum", acc.as_ref()))?;
                adder.add(item)?.into_owned()
            }
        });
    }
    Ok(match total {
        Some(total) => CowVal::Owned(total),
        None => CowVal::owned(CelInt::from(0)),
    })
}

fn min<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    extreme(args, "min", Ordering::Greater)
}

fn max<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    extreme(args, "max", Ordering::Less)
}

/// The first element that no later one is preferred to: an element replaces the one
/// kept when the kept one compares as `replace_when` against it.
fn extreme<'b, 'v>(
    args: Vec<CowVal<'b, 'v>>,
    function: &str,
    replace_when: Ordering,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [list] = take(args)?;
    let items = elements(list.as_ref())?;
    let mut best: Option<&dyn Val> = None;
    for item in items {
        best = Some(match best {
            None => {
                item.as_comparer().ok_or_else(|| no_overload(function, item))?;
                item
            }
            Some(kept) if compare(function, kept, item)? == replace_when => item,
            Some(kept) => kept,
        });
    }
    match best {
        Some(v) => Ok(CowVal::Owned(v.clone_as_boxed())),
        None => Err(ExecutionError::function_error(function, format!("{function} called on empty list"))),
    }
}

fn index_of<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [list, x] = take(args)?;
    let found = elements(list.as_ref())?.iter().position(|item| item.equals(x.as_ref()));
    owned(CelInt::from(found.map_or(-1, |i| i as i64)))
}

fn last_index_of<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [list, x] = take(args)?;
    let found = elements(list.as_ref())?.iter().rposition(|item| item.equals(x.as_ref()));
    owned(CelInt::from(found.map_or(-1, |i| i as i64)))
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{assert_err, assert_true, eval, eval_with};
    use crate::Value;
    use serde_json::json;

    #[test]
    fn is_sorted() {
        assert_true("[1, 2, 2, 3].isSorted()");
        assert_true("![2, 1].isSorted()");
        assert_true("['a', 'b'].isSorted() && [].isSorted() && [1.5].isSorted()");
        assert_true("[duration('1s'), duration('2s')].isSorted()");
        assert_err("[{}, {}].isSorted()", "isSorted");
    }

    #[test]
    fn sum() {
        assert_true("[1, 2, 3].sum() == 6");
        assert_true("[1.5, 2.5].sum() == 4.0");
        assert_true("[1u, 2u].sum() == 3u");
        assert_true("[].sum() == 0");
        assert_true("[duration('1s'), duration('2s')].sum() == duration('3s')");
        assert_err("['a', 'b'].sum()", "sum");
        assert!(eval("[9223372036854775807, 1].sum()").is_err(), "overflow is an error");
    }

    #[test]
    fn min_and_max() {
        assert_true("[3, 1, 2].min() == 1 && [3, 1, 2].max() == 3");
        assert_true("['b', 'a', 'c'].min() == 'a' && ['b', 'a', 'c'].max() == 'c'");
        assert_true("[true, false].min() == false");
        assert_err("[].min()", "min called on empty list");
        assert_err("[].max()", "max called on empty list");
        assert_err("[[1], [2]].max()", "max");
        assert_eq!(eval_with("self.max()", json!([4, 9, 2])), Ok(Value::Int(9)));
    }

    #[test]
    fn index_of_on_lists_and_strings() {
        assert_true("[1, 2, 3, 2].indexOf(2) == 1 && [1, 2, 3, 2].lastIndexOf(2) == 3");
        assert_true("[1, 2].indexOf(5) == -1 && [].lastIndexOf(1) == -1");
        assert_true("['a', 'b'].indexOf('b') == 1");
        assert_true("[[1], [2]].indexOf([2]) == 1");
        // The strings extension's overloads still answer for strings.
        assert_true("'abcb'.indexOf('b') == 1 && 'abcb'.lastIndexOf('b') == 3");
        assert_true("'abcb'.indexOf('b', 2) == 3");
        assert_eq!(eval_with("self.indexOf('y')", json!(["x", "y"])), Ok(Value::Int(1)));
    }
}
