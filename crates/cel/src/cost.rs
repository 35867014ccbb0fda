//! Owns the estimate of what an expression costs to run, and the type checks that come
//! with it (an undefined field of a declared object, an undeclared variable).
//!
//! The model is cel-go's: one unit per variable, field selection and call; a traversal of
//! a string costs a tenth of a unit per character; a comprehension (`all`, `exists`, `map`,
//! `filter`, ...) costs its body once per element of the largest list it can be given.
//! Sizes come from the variables' [`Type`]s, so a nested loop over lists no schema
//! bounds is estimated at trillions of units and refused, as kube-apiserver refuses it.
//! Figures are upper bounds: estimates never undercount what [`crate::Program::eval`]
//! runs, which is what keeps an expression from running unbounded.

use cel::common::ast::{CallExpr, ComprehensionExpr, EntryExpr, Expr, IdedExpr, LiteralValue};

use crate::types::Type;

/// An expression's estimated cost and type.
#[derive(Debug, Clone)]
pub struct Estimate {
    pub cost: u64,
    pub ty: Type,
}

/// The estimate of `expr` with the variables `vars` in scope.
pub fn estimate(expr: &IdedExpr, vars: &[(&str, &Type)]) -> Result<Estimate, String> {
    let mut scope: Vec<(String, Type)> = vars.iter().map(|(n, t)| (n.to_string(), (*t).clone())).collect();
    walk(expr, &mut scope)
}

/// A tenth of a unit per character, at least one (cel-go's `StringTraversalCostFactor`).
fn traversal(size: u64) -> u64 {
    size / 10 + 1
}

/// Identifiers that name types (`type(x) == string`) or the namespaces of types and
/// functions (`net.IP`, `optional.none()`) rather than variables.
const TYPE_NAMES: &[&str] = &[
    "bool",
    "int",
    "uint",
    "double",
    "string",
    "bytes",
    "list",
    "map",
    "null_type",
    "type",
    "dyn",
    "net",
    "kubernetes",
    "optional",
    "format",
    "ip",
    "lists",
    "math",
    "strings",
    "jsonpatch",
    "google",
];

fn lookup(scope: &[(String, Type)], name: &str) -> Option<Type> {
    scope.iter().rev().find(|(n, _)| n == name).map(|(_, t)| t.clone())
}

fn walk(e: &IdedExpr, scope: &mut Vec<(String, Type)>) -> Result<Estimate, String> {
    Ok(match &e.expr {
        Expr::Unspecified => Estimate { cost: 0, ty: Type::dyn_any() },
        Expr::Literal(l) => Estimate {
            cost: 0,
            ty: match l {
                LiteralValue::Boolean(_) => Type::Bool,
                LiteralValue::Bytes(b) => Type::Bytes { max: b.inner().len() as u64 },
                LiteralValue::Double(_) => Type::Double,
                LiteralValue::Int(_) => Type::Int,
                LiteralValue::Null => Type::Null,
                LiteralValue::String(s) => Type::String { max: s.inner().chars().count() as u64 },
                LiteralValue::UInt(_) => Type::Uint,
            },
        },
        Expr::Ident(name) => match lookup(scope, name) {
            Some(ty) => Estimate { cost: 1, ty },
            None if TYPE_NAMES.contains(&name.as_str()) => Estimate { cost: 1, ty: Type::dyn_any() },
            None => return Err(format!("undeclared reference to '{name}'")),
        },
        Expr::Select(s) => {
            let operand = walk(&s.operand, scope)?;
            let ty = if s.test { Type::Bool } else { field(&operand.ty, &s.field)? };
            Estimate { cost: operand.cost.saturating_add(1), ty }
        }
        Expr::List(l) => {
            let mut cost = 1u64;
            let mut elem: Option<Type> = None;
            for x in &l.elements {
                let est = walk(x, scope)?;
                cost = cost.saturating_add(est.cost);
                elem = Some(match elem {
                    None => est.ty,
                    Some(t) if t == est.ty => t,
                    Some(t) => Type::Dyn { max: t.max_size().max(est.ty.max_size()) },
                });
            }
            Estimate {
                cost,
                ty: Type::List { elem: Box::new(elem.unwrap_or(Type::Dyn { max: 0 })), max: l.elements.len() as u64 },
            }
        }
        Expr::Map(m) => {
            let mut cost = 1u64;
            let mut max = 0;
            for entry in &m.entries {
                if let EntryExpr::MapEntry(me) = &entry.expr {
                    let k = walk(&me.key, scope)?;
                    let v = walk(&me.value, scope)?;
                    cost = cost.saturating_add(k.cost).saturating_add(v.cost);
                    max = max.max(v.ty.max_size());
                }
            }
            Estimate { cost, ty: Type::Map { value: Box::new(Type::Dyn { max }), max: m.entries.len() as u64 } }
        }
        Expr::Struct(s) => {
            let mut cost = 1u64;
            for entry in &s.entries {
                if let EntryExpr::StructField(f) = &entry.expr {
                    cost = cost.saturating_add(walk(&f.value, scope)?.cost);
                }
            }
            Estimate { cost, ty: Type::dyn_any() }
        }
        Expr::Call(c) => call(c, scope)?,
        Expr::Comprehension(c) => comprehension(c, scope)?,
    })
}

/// The type of `ty.name`.
fn field(ty: &Type, name: &str) -> Result<Type, String> {
    Ok(match ty {
        Type::Object { fields, open } => match fields.get(name) {
            Some(t) => t.clone(),
            None if *open => Type::dyn_any(),
            None => return Err(format!("undefined field '{name}'")),
        },
        Type::Map { value, .. } => (**value).clone(),
        Type::Dyn { max } => Type::Dyn { max: *max },
        _ => Type::dyn_any(),
    })
}

fn comprehension(c: &ComprehensionExpr, scope: &mut Vec<(String, Type)>) -> Result<Estimate, String> {
    let range = walk(&c.iter_range, scope)?;
    let n = range.ty.max_size();
    let init = walk(&c.accu_init, scope)?;
    // A `map` or `filter` accumulates a list as long as the range.
    let accu_ty = match &init.ty {
        Type::List { .. } => Type::List { elem: Box::new(Type::Dyn { max: range.ty.elem().max_size() }), max: n },
        other => other.clone(),
    };
    let depth = scope.len();
    match &c.iter_var2 {
        Some(v2) => {
            scope.push((c.iter_var.clone(), Type::string(None)));
            scope.push((v2.clone(), range.ty.elem()));
        }
        None => scope.push((c.iter_var.clone(), range.ty.elem())),
    }
    scope.push((c.accu_var.clone(), accu_ty.clone()));
    let body = (|| {
        let cond = walk(&c.loop_cond, scope)?;
        let step = walk(&c.loop_step, scope)?;
        Ok::<u64, String>(cond.cost.saturating_add(step.cost))
    })();
    scope.truncate(depth);
    let body = body?;
    scope.push((c.accu_var.clone(), accu_ty));
    let result = walk(&c.result, scope);
    scope.truncate(depth);
    let result = result?;
    let cost = range.cost.saturating_add(init.cost).saturating_add(n.saturating_mul(body)).saturating_add(result.cost);
    Ok(Estimate { cost, ty: result.ty })
}

fn call(c: &CallExpr, scope: &mut Vec<(String, Type)>) -> Result<Estimate, String> {
    // A target that names no variable is a namespace (`optional.none()`, `lists.range(3)`).
    let target = match c.target.as_deref() {
        Some(IdedExpr { expr: Expr::Ident(name), .. }) if lookup(scope, name).is_none() => None,
        Some(t) => Some(walk(t, scope)?),
        None => None,
    };
    let mut args = Vec::with_capacity(c.args.len());
    for a in &c.args {
        args.push(walk(a, scope)?);
    }
    let mut cost = target.as_ref().map_or(0, |t| t.cost);
    for a in &args {
        cost = cost.saturating_add(a.cost);
    }
    // The receiver, or the first argument of a global call.
    let first = target.as_ref().or(args.first()).map(|e| e.ty.clone()).unwrap_or(Type::Null);
    let second = if target.is_some() { args.first() } else { args.get(1) }.map(|e| e.ty.clone());
    let size = first.max_size();
    let is_string = matches!(first, Type::String { .. } | Type::Dyn { .. } | Type::Bytes { .. });
    let (own, ty) = match c.func_name.as_str() {
        "_&&_" | "_||_" | "!_" | "@not_strictly_false" => (0, Type::Bool),
        "_?_:_" => {
            // The condition and the dearer branch.
            let branches = args.iter().skip(1).map(|a| a.cost).max().unwrap_or(0);
            cost = args.first().map_or(0, |a| a.cost).saturating_add(branches);
            (0, args.get(1).map(|a| a.ty.clone()).unwrap_or_else(Type::dyn_any))
        }
        "_==_" | "_!=_" | "_<_" | "_<=_" | "_>_" | "_>=_" => {
            let other = second.as_ref().map_or(0, Type::max_size);
            (traversal(size.min(other.max(1))), Type::Bool)
        }
        "_+_" => {
            let other = second.as_ref().map_or(0, Type::max_size);
            let total = size.saturating_add(other);
            match &first {
                Type::String { .. } => (traversal(total), Type::String { max: total }),
                Type::Bytes { .. } => (traversal(total), Type::Bytes { max: total }),
                Type::List { elem, .. } => (1, Type::List { elem: elem.clone(), max: total }),
                Type::Dyn { .. } => (traversal(total), Type::Dyn { max: total }),
                other => (1, other.clone()),
            }
        }
        "_-_" | "_*_" | "_/_" | "_%_" | "-_" => (1, first.clone()),
        "_[_]" | "_[?_]" => (1, first.elem_or_value()),
        "_?._" => (1, Type::dyn_any()),
        "@in" => {
            let container = second.unwrap_or(Type::Null);
            let n = match container {
                Type::Map { .. } | Type::Object { .. } => 1,
                ref t => t.max_size(),
            };
            (n.saturating_add(1), Type::Bool)
        }
        "size" => (1, Type::Int),
        // kube's: an authorization check is dear, so that two fit in one evaluation.
        "check" => (crate::library::authz::CHECK_COST, Type::Opaque(crate::library::authz::DECISION_TYPE)),
        // The authorization library's builders and accessors: nominal, as kube has them.
        "serviceAccount" | "path" | "group" | "resource" | "subresource" | "namespace" | "name" | "fieldSelector"
        | "labelSelector" => (1, Type::Opaque(crate::library::authz::RESOURCE_CHECK_TYPE)),
        "allowed" | "errored" => (1, Type::Bool),
        "reason" | "error" => (1, Type::string(None)),
        "contains" | "startsWith" | "endsWith" if is_string => (traversal(size), Type::Bool),
        "matches" | "find" => (traversal(size).saturating_mul(4), first_or_bool(&c.func_name, size)),
        "findAll" | "split" => (traversal(size).saturating_mul(4), Type::list(Type::String { max: size }, Some(size))),
        "lowerAscii" | "upperAscii" | "trim" | "replace" | "reverse" | "substring" | "charAt" | "quote"
            if is_string =>
        {
            (traversal(size), Type::String { max: size.saturating_mul(if c.func_name == "replace" { 2 } else { 1 }) })
        }
        "indexOf" | "lastIndexOf" if is_string => (traversal(size), Type::Int),
        "join" | "format" => (traversal(size.saturating_mul(first.elem().max_size().max(1))), Type::string(None)),
        "indexOf" | "lastIndexOf" => (size.saturating_add(1), Type::Int),
        "isSorted" | "exists" | "all" => (size.saturating_add(1), Type::Bool),
        "sum" | "min" | "max" => (size.saturating_add(1), first.elem()),
        "sort" | "distinct" | "flatten" | "slice" | "reverse" => {
            let log = 64 - size.leading_zeros() as u64;
            (size.saturating_mul(log.max(1)).saturating_add(1), first.clone())
        }
        "string" | "bytes" => (traversal(size), Type::string(Some(size.max(20)))),
        "int" | "uint" | "double" | "bool" | "dyn" | "type" | "duration" | "timestamp" => {
            (traversal(size), if c.func_name == "dyn" { first.clone() } else { Type::dyn_any() })
        }
        // kube's libraries and everything else: a traversal of the largest argument.
        _ => {
            let largest = std::iter::once(size).chain(args.iter().map(|a| a.ty.max_size())).max().unwrap_or(0);
            (traversal(largest), Type::Dyn { max: largest })
        }
    };
    Ok(Estimate { cost: cost.saturating_add(own), ty })
}

/// `matches` answers a bool, `find` a string.
fn first_or_bool(func: &str, size: u64) -> Type {
    if func == "matches" {
        Type::Bool
    } else {
        Type::String { max: size }
    }
}

impl Type {
    /// The type of `self[i]`.
    fn elem_or_value(&self) -> Type {
        match self {
            Type::List { elem, .. } => (**elem).clone(),
            Type::Map { value, .. } => (**value).clone(),
            Type::Dyn { max } => Type::Dyn { max: *max },
            _ => Type::dyn_any(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cost_of(src: &str, self_ty: &Type) -> u64 {
        let env = cel::Env::stdlib();
        let p = env.compile(src).unwrap();
        estimate(p.expression(), &[("self", self_ty)]).unwrap().cost
    }

    #[test]
    fn loops_cost_their_body_per_element() {
        let l = Type::list(Type::Int, Some(100));
        let one = cost_of("self.all(x, x > 0)", &l);
        let nested = cost_of("self.all(x, self.all(y, x > y))", &l);
        assert!((100..1000).contains(&one), "{one}");
        assert!(nested > 100 * one / 2, "{nested} vs {one}");
    }

    #[test]
    fn string_traversals_scale_with_the_declared_length() {
        let short = cost_of("self.contains('a')", &Type::string(Some(10)));
        let long = cost_of("self.contains('a')", &Type::string(Some(100_000)));
        assert!(long > short * 1000, "{short} {long}");
    }
}
