//! Template functions: Go's builtins, sprig's text functions, syncweave's
//! hash helpers, and caller-registered extras.
//!
//! Each function declares Go-like parameter types so the executor can apply
//! text/template's argument rules: untyped constants adapt to the parameter,
//! other values must already have the right type.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, OnceLock};

use crate::value::Value;

mod builtin;
mod convert;
mod hash;
mod lists;
mod maps;
mod math;
mod regex_fns;
mod semver;
mod strings;

pub(crate) use convert::{strval, to_float64, to_int64};
pub use hash::{sha3short, sha3sum, short_hash};

/// A parameter type, as a Go function signature would declare it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    /// `interface{}`: anything; a missing value arrives as nil.
    Any,
    /// `string`.
    Str,
    /// `int` (any integer value is accepted).
    Int,
    /// `float64`.
    Float,
    /// `bool`.
    Bool,
    /// `map[string]interface{}`.
    Map,
    /// `[]string`.
    StrList,
    /// `reflect.Value`: the raw value, missing values included (builtins).
    Raw,
}

impl fmt::Display for Ty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Ty::Any => "interface {}",
            Ty::Str => "string",
            Ty::Int => "int",
            Ty::Float => "float64",
            Ty::Bool => "bool",
            Ty::Map => "map[string]interface {}",
            Ty::StrList => "[]string",
            Ty::Raw => "reflect.Value",
        })
    }
}

type NativeFn = fn(Vec<Value>) -> Result<Value, String>;
type CustomFn = Arc<dyn Fn(&[Value]) -> Result<Value, String> + Send + Sync>;

#[derive(Clone)]
enum Imp {
    Native(NativeFn),
    Custom(CustomFn),
}

/// A function callable from templates.
#[derive(Clone)]
pub struct Function {
    pub(crate) params: Vec<Ty>,
    pub(crate) variadic: Option<Ty>,
    imp: Imp,
}

impl fmt::Debug for Function {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Function")
            .field("params", &self.params)
            .field("variadic", &self.variadic)
            .finish()
    }
}

impl Function {
    /// A function with fixed parameters `params` and, if `variadic` is set,
    /// any number of further arguments of that type. The closure receives
    /// arguments already converted to the declared types; an `Err` becomes
    /// the template error "error calling NAME: MESSAGE".
    pub fn new(
        params: &[Ty],
        variadic: Option<Ty>,
        f: impl Fn(&[Value]) -> Result<Value, String> + Send + Sync + 'static,
    ) -> Function {
        Function {
            params: params.to_vec(),
            variadic,
            imp: Imp::Custom(Arc::new(f)),
        }
    }

    pub(crate) fn call(&self, args: Vec<Value>) -> Result<Value, String> {
        match &self.imp {
            Imp::Native(f) => f(args),
            Imp::Custom(f) => f(&args),
        }
    }
}

/// Extra functions for a template, by name. They override the built-in
/// set, the way `template.Funcs` overrides sprig and Go's builtins.
#[derive(Clone, Debug, Default)]
pub struct FuncMap {
    funcs: HashMap<String, Function>,
}

impl FuncMap {
    pub fn new() -> FuncMap {
        FuncMap::default()
    }

    /// Adds or replaces a function.
    pub fn insert(&mut self, name: impl Into<String>, f: Function) -> &mut FuncMap {
        self.funcs.insert(name.into(), f);
        self
    }

    pub fn get(&self, name: &str) -> Option<&Function> {
        self.funcs.get(name)
    }

    pub fn contains(&self, name: &str) -> bool {
        self.funcs.contains_key(name)
    }

    /// The overrides api-syncagent applies to sprig for naming and related
    /// resource templates: `join` is Go's `strings.Join(elems, sep)` there,
    /// not sprig's `join sep list`.
    pub fn syncagent_templating() -> FuncMap {
        let mut m = FuncMap::new();
        m.insert(
            "join",
            Function::new(&[Ty::StrList, Ty::Str], None, |a| {
                let sep = a[1].as_str().unwrap_or_default();
                let parts: Vec<String> = match &a[0] {
                    Value::List(l) => l
                        .iter()
                        .map(|v| v.as_str().unwrap_or_default().to_string())
                        .collect(),
                    _ => Vec::new(),
                };
                Ok(Value::from(parts.join(sep)))
            }),
        );
        m
    }
}

/// Functions whose results depend on a clock, randomness, the environment
/// or the network: the sandbox has none of these.
const UNAVAILABLE: &[&str] = &[
    "ago",
    "date",
    "date_in_zone",
    "date_modify",
    "dateInZone",
    "dateModify",
    "duration",
    "durationRound",
    "htmlDate",
    "htmlDateInZone",
    "must_date_modify",
    "mustDateModify",
    "mustToDate",
    "now",
    "toDate",
    "unixEpoch",
    "randAlphaNum",
    "randAlpha",
    "randAscii",
    "randNumeric",
    "randBytes",
    "randInt",
    "shuffle",
    "uuidv4",
    "env",
    "expandenv",
    "getHostByName",
    "bcrypt",
    "htpasswd",
    "genPrivateKey",
    "derivePassword",
    "buildCustomCert",
    "genCA",
    "genCAWithKey",
    "genSelfSignedCert",
    "genSelfSignedCertWithKey",
    "genSignedCert",
    "genSignedCertWithKey",
    "encryptAES",
    "decryptAES",
];

/// Why an unavailable function cannot run, for its error message.
fn unavailable_reason(name: &str) -> &'static str {
    match name {
        "env" | "expandenv" => "no environment in the sandbox",
        "getHostByName" => "no network in the sandbox",
        "decryptAES" | "derivePassword" => "not supported by syncweave's template engine",
        _ => "no clock/randomness in the sandbox",
    }
}

fn unavailable(_: Vec<Value>) -> Result<Value, String> {
    // Replaced per name in `lookup`; never called directly.
    Err("function is not available in plugins".into())
}

struct Registry {
    funcs: HashMap<&'static str, Function>,
}

pub(crate) struct Sig {
    pub params: &'static [Ty],
    pub variadic: Option<Ty>,
}

pub(crate) const fn sig(params: &'static [Ty], variadic: Option<Ty>) -> Sig {
    Sig { params, variadic }
}

pub(crate) type Entry = (&'static str, Sig, NativeFn);

fn registry() -> &'static Registry {
    static REG: OnceLock<Registry> = OnceLock::new();
    REG.get_or_init(|| {
        let mut funcs = HashMap::new();
        for table in [
            builtin::FUNCS,
            strings::FUNCS,
            lists::FUNCS,
            maps::FUNCS,
            math::FUNCS,
            convert::FUNCS,
            hash::FUNCS,
            regex_fns::FUNCS,
            semver::FUNCS,
        ] {
            for (name, s, f) in table {
                funcs.insert(
                    *name,
                    Function {
                        params: s.params.to_vec(),
                        variadic: s.variadic,
                        imp: Imp::Native(*f),
                    },
                );
            }
        }
        for name in UNAVAILABLE {
            funcs.insert(
                *name,
                Function {
                    params: Vec::new(),
                    variadic: Some(Ty::Any),
                    imp: Imp::Native(unavailable),
                },
            );
        }
        Registry { funcs }
    })
}

/// Names of Go's builtins; sprig overrides only `slice`.
pub(crate) fn is_go_builtin(name: &str) -> bool {
    matches!(
        name,
        "and"
            | "or"
            | "not"
            | "len"
            | "index"
            | "eq"
            | "ne"
            | "lt"
            | "le"
            | "gt"
            | "ge"
            | "print"
            | "printf"
            | "println"
            | "urlquery"
            | "js"
            | "html"
            | "call"
    )
}

/// Resolves a function: extra maps first (in order), then the standard set.
/// Returns the function and whether it is the Go builtin of that name.
pub(crate) fn lookup(name: &str, extras: &[&FuncMap]) -> Option<(Function, bool)> {
    for m in extras {
        if let Some(f) = m.get(name) {
            return Some((f.clone(), false));
        }
    }
    let f = registry().funcs.get(name)?;
    if UNAVAILABLE.contains(&name) {
        let msg = format!(
            "function {name} is not available in plugins ({})",
            unavailable_reason(name)
        );
        return Some((
            Function::new(&[], Some(Ty::Any), move |_| Err(msg.clone())),
            false,
        ));
    }
    Some((f.clone(), is_go_builtin(name)))
}

/// Whether a name is a known function (for parse-time checks).
pub(crate) fn exists(name: &str, extras: &[&FuncMap]) -> bool {
    extras.iter().any(|m| m.contains(name)) || registry().funcs.contains_key(name)
}

/// Names of every function in the standard set, sorted.
pub fn standard_function_names() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = registry().funcs.keys().copied().collect();
    v.sort_unstable();
    v
}

/// Helpers shared by the function modules.
pub(crate) fn str_arg(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

pub(crate) fn int_arg(v: &Value) -> i64 {
    v.as_int().unwrap_or(0)
}

pub(crate) fn str_list(items: Vec<String>) -> Value {
    Value::from(items.into_iter().map(Value::from).collect::<Vec<_>>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unavailable_functions_explain_why() {
        let (f, _) = lookup("uuidv4", &[]).unwrap();
        assert_eq!(
            f.call(vec![]).unwrap_err(),
            "function uuidv4 is not available in plugins (no clock/randomness in the sandbox)"
        );
        let (f, _) = lookup("env", &[]).unwrap();
        assert!(f.call(vec![]).unwrap_err().contains("no environment"));
    }

    #[test]
    fn extras_override_standard_functions() {
        let m = FuncMap::syncagent_templating();
        let (f, builtin) = lookup("join", &[&m]).unwrap();
        assert!(!builtin);
        assert_eq!(f.params, vec![Ty::StrList, Ty::Str]);
        let (_, builtin) = lookup("len", &[]).unwrap();
        assert!(builtin);
        let (_, builtin) = lookup("slice", &[]).unwrap();
        assert!(!builtin, "sprig's slice replaces the builtin");
    }

    #[test]
    fn standard_set_has_sprig_and_syncweave_functions() {
        let names = standard_function_names();
        for n in [
            "default",
            "toJson",
            "sha3short",
            "shortHash",
            "regexReplaceAll",
            "semverCompare",
            "dict",
            "printf",
        ] {
            assert!(names.contains(&n), "missing {n}");
        }
    }
}
