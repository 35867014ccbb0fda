//! Owns CEL as kube-apiserver runs it, for every place kuorum evaluates an expression
//! (CRD `x-kubernetes-validations`, webhook `matchConditions`, admission policies):
//!
//! - [`compile`]: an expression parsed with kube's environment (the CEL standard library,
//!   the strings, lists and math extensions, and kube's own libraries in [`library`]),
//!   type-checked as far as its variables' [`Type`]s say, and refused when its estimated
//!   cost ([`cost`]) is over a limit: a bad expression is refused where it is written,
//!   never run unbounded;
//! - [`Program::eval`]: the expression over JSON values, after a second estimate made
//!   with the sizes of the values it is given, so that no evaluation costs more than
//!   [`PER_CALL_LIMIT`] whatever the variables were declared as.
//!
//! cel-rust (the `cel` crate) parses and interprets; it has no type checker and no cost
//! tracking, which is what [`cost`] adds.

pub mod cost;
pub mod json;
pub mod library;
pub mod types;

use std::sync::{Arc, OnceLock};

pub use cel::Value;
pub use types::Type;

/// The most an expression's estimated cost may be when it is written (kube's
/// `StaticEstimatedCostLimit`).
pub const STATIC_COST_LIMIT: u64 = 10_000_000;

/// The most one evaluation may cost, estimated over the values it is given (kube's
/// `PerCallLimit`).
pub const PER_CALL_LIMIT: u64 = 1_000_000;

/// The most bytes a request body may have: what bounds a value whose schema declares no
/// `maxLength`, `maxItems` or `maxProperties` (kube's `MaxRequestSizeBytes`).
pub const MAX_REQUEST_BYTES: u64 = 3 * 1024 * 1024;

/// Why an expression could not be compiled. Displayed as kube words it for a CRD rule;
/// [`CompileError::detail`] is the part other places word their own way.
#[derive(Debug, Clone, PartialEq)]
pub enum CompileError {
    /// A syntax or type error, worded as cel-go words it (`ERROR: <input>:1:6: ...`).
    Invalid(String),
    /// The estimated cost is over the limit it was compiled with.
    TooCostly { estimated: u64, limit: u64 },
}

impl CompileError {
    /// The error without kube's prefix: cel's message, or the cost sentence's tail
    /// (`exceeds budget by factor of ...`).
    pub fn detail(&self) -> String {
        match self {
            CompileError::Invalid(why) => why.clone(),
            CompileError::TooCostly { estimated, limit } => format!(
                "exceeds budget by factor of {}x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)",
                exceeded_factor(*estimated, *limit)
            ),
        }
    }
}

impl std::fmt::Display for CompileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CompileError::Invalid(why) => write!(f, "compilation failed: {why}"),
            CompileError::TooCostly { .. } => write!(f, "estimated rule cost {}", self.detail()),
        }
    }
}

/// How many times over `limit` `cost` is, as kube prints it (`%f` below 1.5, `%.1f` up to
/// 100, then `more than 100`).
fn exceeded_factor(cost: u64, limit: u64) -> String {
    let factor = cost as f64 / limit.max(1) as f64;
    if factor > 100.0 {
        "more than 100".into()
    } else if factor < 1.5 {
        format!("{factor:.6}")
    } else {
        format!("{factor:.1}")
    }
}

/// Why an evaluation failed.
#[derive(Debug, Clone, PartialEq)]
pub enum EvalError {
    /// The expression would cost more than [`PER_CALL_LIMIT`] over these values.
    TooCostly,
    /// The interpreter's error (no such key, no matching overload, ...).
    Failed(String),
}

impl std::fmt::Display for EvalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EvalError::TooCostly => f.write_str("operation cancelled: actual cost limit exceeded"),
            EvalError::Failed(why) => f.write_str(why),
        }
    }
}

/// The environment every expression is compiled and run in: built once.
fn environment() -> Arc<cel::Env> {
    static ENV: OnceLock<Arc<cel::Env>> = OnceLock::new();
    ENV.get_or_init(|| {
        let mut env = cel::Env::stdlib();
        // The extensions kube-apiserver's environment has (cel-go's ext.Strings,
        // ext.Lists, ext.Math), then kube's own libraries.
        env.add_extension(cel::extensions::strings).expect("strings extension");
        env.add_extension(cel::extensions::lists).expect("lists extension");
        env.add_extension(cel::extensions::math).expect("math extension");
        library::register(&mut env).expect("kube libraries");
        cel::add_overload!(env, fn escape_json_pointer_key: (cel::common::types::CelString) -> cel::common::types::CelString,
            name = "jsonpatch.escapeKey")
        .expect("jsonpatch.escapeKey");
        Arc::new(env)
    })
    .clone()
}

/// `jsonpatch.escapeKey(k)`: `k` as one segment of a JSON pointer (`~` as `~0`, `/` as
/// `~1`), for the JSON patches of mutating admission policies.
fn escape_json_pointer_key(key: &cel::common::types::CelString<'_>) -> cel::common::types::CelString<'static> {
    key.inner().replace('~', "~0").replace('/', "~1").into()
}

/// A compiled expression.
#[derive(Debug)]
pub struct Program {
    program: cel::Program,
    /// What runs: the program with its object literals (`Object{spec: ...}`, kube's
    /// apply configurations) made maps, as cel-rust has no kube object types.
    expr: cel::IdedExpr,
    /// The estimated cost with the variables' declared types.
    pub cost: u64,
    /// The type the expression was found to have ([`Type::Dyn`] when unknown).
    pub result: Type,
}

/// `source` compiled with `vars` (each variable's name and type), refused when it is not
/// valid CEL, names a field its type does not have, or is estimated to cost more than
/// `limit`.
pub fn compile(source: &str, vars: &[(&str, &Type)], limit: u64) -> Result<Program, CompileError> {
    let program = environment().compile(source).map_err(|e| CompileError::Invalid(e.to_string()))?;
    let estimate = cost::estimate(program.expression(), vars).map_err(CompileError::Invalid)?;
    if estimate.cost > limit {
        return Err(CompileError::TooCostly { estimated: estimate.cost, limit });
    }
    let mut expr = program.expression().clone();
    structs_to_maps(&mut expr);
    Ok(Program { program, expr, cost: estimate.cost, result: estimate.ty })
}

/// `source` compiled with `vars` all of any type, at any cost (each evaluation is bounded
/// by [`PER_CALL_LIMIT`]): what admission policies and match conditions are. Memoized by
/// source and variables, so a policy is compiled once, not once per request.
pub fn compile_any(source: &str, vars: &[&str]) -> Result<Arc<Program>, CompileError> {
    type Memo = std::collections::HashMap<(String, Vec<String>), Arc<Program>>;
    /// Beyond this many, the memo starts over; a longer source is compiled each time it
    /// is run. Together a bound on what hostile policies can pin (4,096 × 8 KiB of source
    /// and its tree), whatever the body limit lets an expression be.
    const MEMO_ENTRIES: usize = 4096;
    const MEMO_SOURCE_BYTES: usize = 8 * 1024;
    static MEMO: OnceLock<std::sync::Mutex<Memo>> = OnceLock::new();
    let key = (source.to_string(), vars.iter().map(|v| v.to_string()).collect::<Vec<_>>());
    let memo = MEMO.get_or_init(Default::default);
    if let Some(p) = memo.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return Ok(p.clone());
    }
    let any = Type::dyn_any();
    let typed: Vec<(&str, &Type)> = vars.iter().map(|v| (*v, &any)).collect();
    let program = Arc::new(compile(source, &typed, u64::MAX)?);
    if source.len() > MEMO_SOURCE_BYTES {
        return Ok(program);
    }
    let mut memo = memo.lock().unwrap_or_else(|e| e.into_inner());
    if memo.len() >= MEMO_ENTRIES {
        memo.clear();
    }
    memo.insert(key, program.clone());
    Ok(program)
}

/// Makes every object literal in `e` a map literal with its field names as keys.
fn structs_to_maps(e: &mut cel::IdedExpr) {
    use cel::common::ast::{EntryExpr, Expr, IdedEntryExpr, LiteralValue, MapEntryExpr, MapExpr};
    match &mut e.expr {
        Expr::Struct(s) => {
            let entries = std::mem::take(&mut s.entries)
                .into_iter()
                .map(|entry| match entry.expr {
                    EntryExpr::StructField(f) => {
                        let mut value = f.value;
                        structs_to_maps(&mut value);
                        let key =
                            cel::IdedExpr { id: entry.id, expr: Expr::Literal(LiteralValue::String(f.field.into())) };
                        IdedEntryExpr {
                            id: entry.id,
                            expr: EntryExpr::MapEntry(MapEntryExpr { key, value, optional: f.optional }),
                        }
                    }
                    other => IdedEntryExpr { id: entry.id, expr: other },
                })
                .collect();
            e.expr = Expr::Map(MapExpr { entries });
        }
        Expr::Call(c) => {
            if let Some(t) = c.target.as_deref_mut() {
                structs_to_maps(t);
            }
            c.args.iter_mut().for_each(structs_to_maps);
        }
        Expr::Select(s) => structs_to_maps(&mut s.operand),
        Expr::List(l) => l.elements.iter_mut().for_each(structs_to_maps),
        Expr::Map(m) => {
            for entry in &mut m.entries {
                if let EntryExpr::MapEntry(me) = &mut entry.expr {
                    structs_to_maps(&mut me.key);
                    structs_to_maps(&mut me.value);
                }
            }
        }
        Expr::Comprehension(c) => {
            for x in [&mut c.iter_range, &mut c.accu_init, &mut c.loop_cond, &mut c.loop_step, &mut c.result] {
                structs_to_maps(x);
            }
        }
        _ => {}
    }
}

impl Program {
    /// Whether the expression refers to the variable `name` (e.g. `oldSelf`: a transition rule).
    pub fn references(&self, name: &str) -> bool {
        self.program.references().has_variable(name)
    }

    /// The expression's value with `vars` bound. The cost is estimated again with the
    /// sizes of these values first: over [`PER_CALL_LIMIT`], it is not run.
    pub fn eval(&self, vars: &[(&str, &serde_json::Value)]) -> Result<Value, EvalError> {
        self.eval_with(vars, None)
    }

    /// [`Program::eval`] with one more variable bound to an optional value (kube's
    /// `optionalOldSelf`: `optional.of(old)`, or `optional.none()` when there is none).
    pub fn eval_with(
        &self,
        vars: &[(&str, &serde_json::Value)],
        optional: Option<(&str, Option<&serde_json::Value>)>,
    ) -> Result<Value, EvalError> {
        let optional = optional.map(|(name, value)| {
            let v = match value {
                Some(v) => cel::objects::OptionalValue::of(json::to_cel(v)),
                None => cel::objects::OptionalValue::none(),
            };
            let ty = value.map_or(Type::Null, Type::of_value);
            (name, Value::Opaque(Arc::new(v)), ty)
        });
        self.run(vars, optional.as_slice())
    }

    /// [`Program::eval`] with values that are not JSON bound too (the `authorizer` of
    /// [`library::authz::variables`]).
    pub fn eval_native(
        &self,
        vars: &[(&str, &serde_json::Value)],
        natives: &[(&str, Value)],
    ) -> Result<Value, EvalError> {
        let natives: Vec<(&str, Value, Type)> =
            natives.iter().map(|(n, v)| (*n, v.clone(), Type::Opaque("native"))).collect();
        self.run(vars, &natives)
    }

    /// The expression with `vars` (JSON) and `natives` (CEL values, with the types the
    /// cost estimate takes them as) bound.
    fn run(&self, vars: &[(&str, &serde_json::Value)], natives: &[(&str, Value, Type)]) -> Result<Value, EvalError> {
        if self.cost > PER_CALL_LIMIT {
            let mut sized: Vec<(&str, Type)> = vars.iter().map(|(n, v)| (*n, Type::of_value(v))).collect();
            sized.extend(natives.iter().map(|(n, _, t)| (*n, t.clone())));
            let refs: Vec<(&str, &Type)> = sized.iter().map(|(n, t)| (*n, t)).collect();
            let estimate = cost::estimate(self.program.expression(), &refs).map_err(EvalError::Failed)?;
            if estimate.cost > PER_CALL_LIMIT {
                return Err(EvalError::TooCostly);
            }
        }
        let mut context = cel::Context::with_env(environment());
        for (name, value) in vars {
            context.add_variable_from_value(*name, json::to_cel(value));
        }
        for (name, value, _) in natives {
            context.add_variable_from_value(*name, value.clone());
        }
        Value::resolve(&self.expr, &context).map_err(|e| EvalError::Failed(e.to_string()))
    }

    /// [`Program::eval`] for an expression that must be a bool.
    pub fn eval_bool(&self, vars: &[(&str, &serde_json::Value)]) -> Result<bool, EvalError> {
        match self.eval(vars)? {
            Value::Bool(b) => Ok(b),
            other => Err(EvalError::Failed(format!("expected bool, got {}", type_name(&other)))),
        }
    }

    /// [`Program::eval`] for an expression that must be a string (a `messageExpression`).
    pub fn eval_string(&self, vars: &[(&str, &serde_json::Value)]) -> Result<String, EvalError> {
        match self.eval(vars)? {
            Value::String(s) => Ok(s.to_string()),
            other => Err(EvalError::Failed(format!("expected string, got {}", type_name(&other)))),
        }
    }
}

/// The CEL name of a value's type, as in cel-go's messages.
pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::List(_) => "list",
        Value::Map(_) => "map",
        Value::Function(..) => "function",
        Value::Int(_) => "int",
        Value::UInt(_) => "uint",
        Value::Float(_) => "double",
        Value::String(_) => "string",
        Value::Bytes(_) => "bytes",
        Value::Bool(_) => "bool",
        Value::Duration(_) => "google.protobuf.Duration",
        Value::Timestamp(_) => "google.protobuf.Timestamp",
        Value::Opaque(_) => "opaque",
        Value::Struct(_) => "object",
        Value::Null => "null_type",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(src: &str, self_value: serde_json::Value) -> Result<Value, EvalError> {
        let p = compile(src, &[("self", &Type::dyn_any())], u64::MAX).expect("compiles");
        p.eval(&[("self", &self_value)])
    }

    #[test]
    fn evaluates_over_json() {
        let obj = json!({"spec": {"replicas": 3, "name": "web", "ports": [80, 443]}});
        assert_eq!(run("self.spec.replicas <= 5", obj.clone()), Ok(Value::Bool(true)));
        assert_eq!(run("self.spec.ports.all(p, p > 10)", obj.clone()), Ok(Value::Bool(true)));
        assert_eq!(run("has(self.spec.missing)", obj.clone()), Ok(Value::Bool(false)));
        assert_eq!(run("self.spec.name.startsWith('we')", obj.clone()), Ok(Value::Bool(true)));
        assert_eq!(run("self.spec.name.upperAscii()", obj.clone()), Ok(Value::String(Arc::new("WEB".into()))));
        assert!(matches!(run("self.spec.nothere == 1", obj), Err(EvalError::Failed(_))));
    }

    #[test]
    fn syntax_errors_are_refused() {
        let e = compile("self.spec ==", &[("self", &Type::dyn_any())], STATIC_COST_LIMIT).unwrap_err();
        assert!(matches!(e, CompileError::Invalid(_)), "{e:?}");
        assert!(e.to_string().starts_with("compilation failed: "), "{e}");
    }

    #[test]
    fn nested_loops_over_unbounded_lists_are_refused_when_written() {
        let list = Type::list(Type::string(None), None);
        let e = compile("self.all(x, self.all(y, x == y))", &[("self", &list)], STATIC_COST_LIMIT).unwrap_err();
        assert!(matches!(e, CompileError::TooCostly { .. }), "{e:?}");
        assert!(e.to_string().contains("estimated rule cost exceeds budget by factor of"), "{e}");
        // With maxItems and maxLength the same rule is cheap enough.
        let bounded = Type::list(Type::string(Some(64)), Some(100));
        assert!(compile("self.all(x, self.all(y, x == y))", &[("self", &bounded)], STATIC_COST_LIMIT).is_ok());
    }

    #[test]
    fn an_evaluation_over_big_values_is_not_run_past_the_per_call_limit() {
        // Declared as any value: the estimate when written is the most a request could hold,
        // which is over the per-call limit, so the values' own sizes decide.
        let p = compile("self.all(x, self.all(y, x != y || true))", &[("self", &Type::dyn_any())], u64::MAX).unwrap();
        let small = json!([1, 2, 3]);
        assert_eq!(p.eval(&[("self", &small)]), Ok(Value::Bool(true)));
        let big = serde_json::Value::Array((0..5000).map(|i| json!(i)).collect());
        assert_eq!(p.eval(&[("self", &big)]), Err(EvalError::TooCostly));
    }

    #[test]
    fn optional_variables_have_a_value_or_none() {
        let p = compile_any("!old.hasValue() || old.value() <= self", &["self", "old"]).unwrap();
        let run = |old: Option<serde_json::Value>| p.eval_with(&[("self", &json!(3))], Some(("old", old.as_ref())));
        assert_eq!(run(None), Ok(Value::Bool(true)));
        assert_eq!(run(Some(json!(2))), Ok(Value::Bool(true)));
        assert_eq!(run(Some(json!(5))), Ok(Value::Bool(false)));
    }

    #[test]
    fn only_short_sources_are_kept_compiled() {
        let short = "self + 1 > 0";
        assert!(Arc::ptr_eq(&compile_any(short, &["self"]).unwrap(), &compile_any(short, &["self"]).unwrap()));
        let long = format!("self == '{}'", "x".repeat(16 * 1024));
        assert!(!Arc::ptr_eq(&compile_any(&long, &["self"]).unwrap(), &compile_any(&long, &["self"]).unwrap()));
    }

    #[test]
    fn json_pointer_keys_are_escaped() {
        let p = compile_any("jsonpatch.escapeKey(self)", &["self"]).unwrap();
        assert_eq!(p.eval(&[("self", &json!("a/b~c"))]), Ok(Value::String(Arc::new("a~1b~0c".into()))));
    }

    #[test]
    fn object_literals_are_maps() {
        let p = compile_any("Object{metadata: Object.metadata{labels: {'a': self}}}", &["self"]).unwrap();
        let v = p.eval(&[("self", &json!("b"))]).unwrap();
        assert_eq!(json::to_json(&v), Some(json!({"metadata": {"labels": {"a": "b"}}})));
    }

    #[test]
    fn undefined_fields_of_a_declared_object_are_refused() {
        let t = Type::object([("replicas".to_string(), Type::Int)].into_iter().collect(), false);
        let e = compile("self.replica > 1", &[("self", &t)], STATIC_COST_LIMIT).unwrap_err();
        assert_eq!(e, CompileError::Invalid("undefined field 'replica'".into()));
        assert!(compile("self.replicas > 1", &[("self", &t)], STATIC_COST_LIMIT).is_ok());
    }
}
