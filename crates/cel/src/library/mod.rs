//! Owns kube-apiserver's own CEL libraries, registered on the environment every
//! expression runs in (k8s.io/apiserver/pkg/cel/library): [`lists`], [`regex`],
//! [`quantity`], [`urls`], [`ip`] (with CIDRs) and [`format`].
//!
//! kube's own types (`kubernetes.Quantity`, `net.IP`, `net.CIDR`, `kubernetes.URL`,
//! `kubernetes.NamedFormat`) are opaque values: cel-rust carries them as
//! `Value::Opaque`, compares them with their `Eq`, and picks overloads by their type
//! name, so an expression may also return one. [`authz`] is the `authorizer` variable of
//! admission policies and match conditions.

pub mod authz;
pub mod format;
pub mod ip;
pub mod lists;
pub mod quantity;
pub mod regex;
pub mod urls;

use std::sync::Arc;

use cel::common::types::{CelInt, CelString, Kind, Type};
use cel::common::value::{CowVal, Val};
use cel::objects::Opaque;
use cel::{DeclarationError, Env, ExecutionError, Value};

/// Registers every library on `env`.
pub fn register(env: &mut Env) -> Result<(), DeclarationError> {
    // Named, so that `type(x) == net.IP` can be written.
    for name in [
        quantity::TYPE,
        ip::IP_TYPE,
        ip::CIDR_TYPE,
        urls::TYPE,
        format::TYPE,
        authz::AUTHORIZER_TYPE,
        authz::PATH_CHECK_TYPE,
        authz::GROUP_CHECK_TYPE,
        authz::RESOURCE_CHECK_TYPE,
        authz::DECISION_TYPE,
    ] {
        env.add_type(opaque_type(name))?;
    }
    lists::register(env)?;
    regex::register(env)?;
    quantity::register(env)?;
    urls::register(env)?;
    ip::register(env)?;
    format::register(env)?;
    authz::register(env)?;
    Ok(())
}

/// The type of the opaque values named `name`, as overloads declare their parameters.
fn opaque_type(name: &'static str) -> Type {
    Type::new_opaque_type(name)
}

/// `args` as the `N` arguments of an overload (the receiver first).
fn take<'b, 'v, const N: usize>(args: Vec<CowVal<'b, 'v>>) -> Result<[CowVal<'b, 'v>; N], ExecutionError> {
    args.try_into().map_err(|args: Vec<_>| ExecutionError::invalid_argument_count(N, args.len()))
}

fn unexpected(v: &dyn Val, want: &str) -> ExecutionError {
    ExecutionError::UnexpectedType { got: v.get_type().name().to_owned(), want: want.to_owned() }
}

/// The text of a `string` argument.
fn string_arg(v: &dyn Val) -> Result<&str, ExecutionError> {
    v.downcast_ref::<CelString>().map(|s| s.inner()).ok_or_else(|| unexpected(v, "string"))
}

fn int_arg(v: &dyn Val) -> Result<i64, ExecutionError> {
    v.downcast_ref::<CelInt>().map(|i| *i.inner()).ok_or_else(|| unexpected(v, "int"))
}

/// `value` as a CEL value of its opaque type.
fn opaque<'b, 'v, T: Opaque>(value: T) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let boxed: Box<dyn Val> = Value::Opaque(Arc::new(value)).try_into()?;
    Ok(CowVal::Owned(boxed))
}

/// The `T` an opaque argument holds, handed to `f`.
fn with_opaque<T: Opaque, R>(v: &dyn Val, f: impl FnOnce(&T) -> R) -> Result<R, ExecutionError> {
    let want = || unexpected(v, std::any::type_name::<T>());
    // Checked first: converting anything else to a `Value` would copy it whole.
    if v.get_type().kind() != Kind::Opaque {
        return Err(want());
    }
    match Value::try_from(v)? {
        Value::Opaque(held) => held.downcast_ref::<T>().map(f).ok_or_else(want),
        _ => Err(want()),
    }
}

fn owned<'b, 'v, T: Val + 'v>(v: T) -> Result<CowVal<'b, 'v>, ExecutionError> {
    Ok(CowVal::owned(v))
}

/// `s` quoted as Go's `%q` quotes it, for the error messages kube writes with it.
fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
pub(crate) mod test_support {
    use crate::{compile, EvalError, Type, Value};

    /// `src` evaluated with `self` bound to null.
    pub fn eval(src: &str) -> Result<Value, EvalError> {
        let p = compile(src, &[("self", &Type::dyn_any())], u64::MAX).unwrap_or_else(|e| panic!("{src}: {e}"));
        p.eval(&[("self", &serde_json::Value::Null)])
    }

    /// `src` evaluated with `self` bound to `json`.
    pub fn eval_with(src: &str, json: serde_json::Value) -> Result<Value, EvalError> {
        let p = compile(src, &[("self", &Type::dyn_any())], u64::MAX).unwrap_or_else(|e| panic!("{src}: {e}"));
        p.eval(&[("self", &json)])
    }

    /// Asserts that `src` is true.
    #[track_caller]
    pub fn assert_true(src: &str) {
        assert_eq!(eval(src), Ok(Value::Bool(true)), "{src}");
    }

    /// Asserts that `src` fails with an error containing `want`.
    #[track_caller]
    pub fn assert_err(src: &str, want: &str) {
        match eval(src) {
            Err(EvalError::Failed(e)) => assert!(e.contains(want), "{src}: {e:?} does not contain {want:?}"),
            other => panic!("{src}: expected an error containing {want:?}, got {other:?}"),
        }
    }
}
