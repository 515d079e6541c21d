//! The data model templates run on.
//!
//! Go templates work on arbitrary Go values through reflection. Here the
//! values a template can meet are the ones JSON data, sprig functions and
//! host-provided objects produce, modelled closely enough that printing,
//! comparison and truthiness behave like Go's.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt;
use std::rc::Rc;

/// A shared, mutable `map[string]interface{}`: Go maps are references, and
/// sprig's `set`/`unset` mutate them in place.
pub type MapRef = Rc<RefCell<BTreeMap<String, Value>>>;

/// A value seen by a template.
#[derive(Clone, Default)]
pub enum Value {
    /// Go's invalid `reflect.Value`: a missing map key, or a nil interface
    /// after a pipeline stage. Printed as `<no value>` by an action.
    #[default]
    Missing,
    /// A nil `interface{}` (JSON null, the `nil` literal).
    Nil,
    Bool(bool),
    /// Go `int` (literals, `len`, `until`, ...).
    Int(i64),
    /// Go `int64` (integers from Kubernetes objects, sprig arithmetic).
    Int64(i64),
    /// Go `uint8`, what `index` returns for a byte of a string.
    Uint8(u8),
    /// Go `float64`.
    Float(f64),
    String(Rc<str>),
    /// `[]interface{}`; lists are never mutated in place (sprig copies).
    List(Rc<Vec<Value>>),
    /// `map[string]interface{}`.
    Map(MapRef),
    /// A host-provided value with fields and methods (a Go struct).
    Object(Rc<dyn Object>),
}

/// A value with Go-struct behaviour: named fields and methods that templates
/// reach with `.Name`.
///
/// Upstream mutation templates get a gjson `Result` as `.Value` and call
/// `.Value.String`; implement this trait for such values (see
/// [`crate::GjsonResult`] for that one).
pub trait Object {
    /// Go type name, used by `typeOf`, `printf "%T"` and error messages.
    fn type_name(&self) -> String;

    /// Go kind name for `kindOf` (`struct` for most objects).
    fn kind_name(&self) -> &'static str {
        "struct"
    }

    /// Whether `name` is a method. Methods take precedence over fields, as in Go.
    fn has_method(&self, _name: &str) -> bool {
        false
    }

    /// Calls method `name` with already evaluated arguments.
    fn call_method(&self, name: &str, _args: &[Value]) -> Result<Value, String> {
        Err(format!("can't call method {name}"))
    }

    /// Reads field `name`; `None` when the type has no such field, which is
    /// an execution error ("can't evaluate field ...").
    fn field(&self, _name: &str) -> Option<Value> {
        None
    }

    /// What `fmt` prints for `%v`/`%s` (Go's `String()` for Stringers, or a
    /// struct rendering).
    fn display(&self) -> String;

    /// How `toJson` encodes the value; `None` encodes `{}`.
    fn to_json(&self) -> Option<Value> {
        None
    }
}

impl fmt::Debug for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Missing => write!(f, "Missing"),
            Value::Nil => write!(f, "Nil"),
            Value::Bool(b) => write!(f, "Bool({b})"),
            Value::Int(i) => write!(f, "Int({i})"),
            Value::Int64(i) => write!(f, "Int64({i})"),
            Value::Uint8(i) => write!(f, "Uint8({i})"),
            Value::Float(x) => write!(f, "Float({x})"),
            Value::String(s) => write!(f, "String({s:?})"),
            Value::List(l) => f.debug_list().entries(l.iter()).finish(),
            Value::Map(m) => f.debug_map().entries(m.borrow().iter()).finish(),
            Value::Object(o) => write!(f, "Object({})", o.type_name()),
        }
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Self {
        Value::String(Rc::from(s))
    }
}

impl From<String> for Value {
    fn from(s: String) -> Self {
        Value::String(Rc::from(s))
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Self {
        Value::Bool(b)
    }
}

impl From<f64> for Value {
    fn from(f: f64) -> Self {
        Value::Float(f)
    }
}

impl From<Vec<Value>> for Value {
    fn from(v: Vec<Value>) -> Self {
        Value::List(Rc::new(v))
    }
}

impl From<BTreeMap<String, Value>> for Value {
    fn from(m: BTreeMap<String, Value>) -> Self {
        Value::Map(Rc::new(RefCell::new(m)))
    }
}

impl From<&serde_json::Value> for Value {
    fn from(v: &serde_json::Value) -> Self {
        Value::from_json(v)
    }
}

impl Value {
    /// Converts JSON the way Kubernetes' unstructured decoding does:
    /// integers become `int64`, other numbers `float64`, null a nil interface.
    pub fn from_json(v: &serde_json::Value) -> Value {
        match v {
            serde_json::Value::Null => Value::Nil,
            serde_json::Value::Bool(b) => Value::Bool(*b),
            serde_json::Value::Number(n) => {
                if let Some(i) = n.as_i64() {
                    Value::Int64(i)
                } else {
                    Value::Float(n.as_f64().unwrap_or(0.0))
                }
            }
            serde_json::Value::String(s) => Value::from(s.as_str()),
            serde_json::Value::Array(a) => {
                Value::List(Rc::new(a.iter().map(Value::from_json).collect()))
            }
            serde_json::Value::Object(o) => {
                let m: BTreeMap<String, Value> = o
                    .iter()
                    .map(|(k, v)| (k.clone(), Value::from_json(v)))
                    .collect();
                Value::from(m)
            }
        }
    }

    /// Converts JSON the way Go's `json.Unmarshal` into `interface{}` does
    /// (what sprig's `fromJson` returns): every number is a `float64`.
    pub fn from_json_floats(v: &serde_json::Value) -> Value {
        match v {
            serde_json::Value::Number(n) => Value::Float(n.as_f64().unwrap_or(0.0)),
            serde_json::Value::Array(a) => {
                Value::List(Rc::new(a.iter().map(Value::from_json_floats).collect()))
            }
            serde_json::Value::Object(o) => {
                let m: BTreeMap<String, Value> = o
                    .iter()
                    .map(|(k, v)| (k.clone(), Value::from_json_floats(v)))
                    .collect();
                Value::from(m)
            }
            other => Value::from_json(other),
        }
    }

    /// Wraps a host object.
    pub fn object(o: impl Object + 'static) -> Value {
        Value::Object(Rc::new(o))
    }

    /// Builds a string value.
    pub fn string(s: impl AsRef<str>) -> Value {
        Value::String(Rc::from(s.as_ref()))
    }

    /// Builds a `map[string]interface{}` value.
    pub fn map(entries: impl IntoIterator<Item = (String, Value)>) -> Value {
        Value::from(entries.into_iter().collect::<BTreeMap<_, _>>())
    }

    /// Converts back to JSON. Objects use [`Object::to_json`]; NaN and
    /// infinities, which JSON cannot hold, become null.
    pub fn to_json(&self) -> serde_json::Value {
        self.to_json_depth(0)
    }

    fn to_json_depth(&self, depth: usize) -> serde_json::Value {
        if depth > crate::MAX_NESTING {
            return serde_json::Value::Null;
        }
        match self {
            Value::Missing | Value::Nil => serde_json::Value::Null,
            Value::Bool(b) => serde_json::Value::Bool(*b),
            Value::Int(i) | Value::Int64(i) => serde_json::Value::from(*i),
            Value::Uint8(i) => serde_json::Value::from(*i),
            Value::Float(f) => serde_json::Number::from_f64(*f)
                .map(serde_json::Value::Number)
                .unwrap_or(serde_json::Value::Null),
            Value::String(s) => serde_json::Value::String(s.to_string()),
            Value::List(l) => {
                serde_json::Value::Array(l.iter().map(|v| v.to_json_depth(depth + 1)).collect())
            }
            Value::Map(m) => serde_json::Value::Object(
                m.borrow()
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_json_depth(depth + 1)))
                    .collect(),
            ),
            Value::Object(o) => match o.to_json() {
                Some(v) => v.to_json_depth(depth + 1),
                None => serde_json::Value::Object(Default::default()),
            },
        }
    }

    /// True for `Missing` and `Nil`: the values Go's `indirectInterface`
    /// turns into an invalid `reflect.Value`.
    pub fn is_nil(&self) -> bool {
        matches!(self, Value::Missing | Value::Nil)
    }

    /// The string inside, if this is a string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// The integer inside, for any integer kind.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(i) | Value::Int64(i) => Some(*i),
            Value::Uint8(i) => Some(i64::from(*i)),
            _ => None,
        }
    }

    /// Go's `%T` of the value.
    pub fn type_name(&self) -> String {
        match self {
            Value::Missing | Value::Nil => "<nil>".into(),
            Value::Bool(_) => "bool".into(),
            Value::Int(_) => "int".into(),
            Value::Int64(_) => "int64".into(),
            Value::Uint8(_) => "uint8".into(),
            Value::Float(_) => "float64".into(),
            Value::String(_) => "string".into(),
            Value::List(_) => "[]interface {}".into(),
            Value::Map(_) => "map[string]interface {}".into(),
            Value::Object(o) => o.type_name(),
        }
    }

    /// Go's `reflect.Kind` name of the value.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Value::Missing | Value::Nil => "invalid",
            Value::Bool(_) => "bool",
            Value::Int(_) => "int",
            Value::Int64(_) => "int64",
            Value::Uint8(_) => "uint8",
            Value::Float(_) => "float64",
            Value::String(_) => "string",
            Value::List(_) => "slice",
            Value::Map(_) => "map",
            Value::Object(o) => o.kind_name(),
        }
    }

    /// Go template truthiness: the zero value of a type is false.
    pub fn truth(&self) -> bool {
        match self {
            Value::Missing | Value::Nil => false,
            Value::Bool(b) => *b,
            Value::Int(i) | Value::Int64(i) => *i != 0,
            Value::Uint8(i) => *i != 0,
            Value::Float(f) => *f != 0.0,
            Value::String(s) => !s.is_empty(),
            Value::List(l) => !l.is_empty(),
            Value::Map(m) => !m.borrow().is_empty(),
            Value::Object(_) => true,
        }
    }

    /// Prints the value like Go's `fmt.Sprint` of a single operand.
    pub fn to_go_string(&self) -> String {
        crate::gofmt::sprint_one(self)
    }
}

/// Go's `reflect.DeepEqual` on template values: types must match exactly
/// (`int` 1 differs from `int64` 1), maps and lists compare element-wise.
pub fn deep_equal(a: &Value, b: &Value) -> bool {
    deep_equal_depth(a, b, 0)
}

fn deep_equal_depth(a: &Value, b: &Value, depth: usize) -> bool {
    if depth > crate::MAX_NESTING {
        return false;
    }
    match (a, b) {
        (Value::Missing | Value::Nil, Value::Missing | Value::Nil) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Int(x), Value::Int(y)) | (Value::Int64(x), Value::Int64(y)) => x == y,
        (Value::Uint8(x), Value::Uint8(y)) => x == y,
        (Value::Float(x), Value::Float(y)) => x == y,
        (Value::String(x), Value::String(y)) => x == y,
        (Value::List(x), Value::List(y)) => {
            Rc::ptr_eq(x, y)
                || (x.len() == y.len()
                    && x.iter()
                        .zip(y.iter())
                        .all(|(p, q)| deep_equal_depth(p, q, depth + 1)))
        }
        (Value::Map(x), Value::Map(y)) => {
            if Rc::ptr_eq(x, y) {
                return true;
            }
            let (x, y) = (x.borrow(), y.borrow());
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| deep_equal_depth(v, w, depth + 1)))
        }
        (Value::Object(x), Value::Object(y)) => {
            Rc::ptr_eq(x, y)
                || (x.type_name() == y.type_name()
                    && match (x.to_json(), y.to_json()) {
                        (Some(p), Some(q)) => deep_equal_depth(&p, &q, depth + 1),
                        _ => x.display() == y.display(),
                    })
        }
        _ => false,
    }
}

/// A Go struct with a fixed set of fields, for data whose unknown fields must
/// be an error like upstream's typed contexts (init-agent executes templates
/// on a struct with exactly `ClusterName` and `ClusterPath`).
#[derive(Clone, Debug)]
pub struct Record {
    type_name: String,
    fields: Vec<(String, Value)>,
}

impl Record {
    /// `type_name` is what error messages call the type
    /// (e.g. `inittemplate.initTemplateRenderContext`).
    pub fn new(
        type_name: impl Into<String>,
        fields: impl IntoIterator<Item = (String, Value)>,
    ) -> Record {
        Record {
            type_name: type_name.into(),
            fields: fields.into_iter().collect(),
        }
    }
}

impl Object for Record {
    fn type_name(&self) -> String {
        self.type_name.clone()
    }

    fn field(&self, name: &str) -> Option<Value> {
        self.fields
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    }

    fn display(&self) -> String {
        let parts: Vec<String> = self
            .fields
            .iter()
            .map(|(_, v)| crate::gofmt::sprint_nested(v))
            .collect();
        format!("{{{}}}", parts.join(" "))
    }

    fn to_json(&self) -> Option<Value> {
        Some(Value::map(self.fields.iter().cloned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_integers_become_int64_and_floats_stay_floats() {
        let v = Value::from_json(&serde_json::json!({"a": 1, "b": 1.5, "c": null}));
        let Value::Map(m) = v else {
            panic!("expected a map")
        };
        let m = m.borrow();
        assert!(matches!(m["a"], Value::Int64(1)));
        assert!(matches!(m["b"], Value::Float(f) if f == 1.5));
        assert!(matches!(m["c"], Value::Nil));
    }

    #[test]
    fn from_json_floats_turns_every_number_into_float64() {
        let v = Value::from_json_floats(&serde_json::json!([1, 2.5]));
        assert_eq!(v.type_name(), "[]interface {}");
        let Value::List(l) = v else {
            panic!("expected a list")
        };
        assert!(matches!(l[0], Value::Float(f) if f == 1.0));
    }

    #[test]
    fn deep_equal_is_type_strict_like_go() {
        assert!(deep_equal(&Value::Int(1), &Value::Int(1)));
        assert!(!deep_equal(&Value::Int(1), &Value::Int64(1)));
        assert!(deep_equal(
            &Value::from(vec![Value::from("a")]),
            &Value::from(vec![Value::from("a")])
        ));
        assert!(!deep_equal(&Value::from("1"), &Value::Int(1)));
    }

    #[test]
    fn truthiness_follows_go_zero_values() {
        assert!(!Value::from("").truth());
        assert!(Value::from("x").truth());
        assert!(!Value::Int(0).truth());
        assert!(!Value::from(Vec::new()).truth());
        assert!(!Value::Missing.truth());
        assert!(Value::object(Record::new("T", [])).truth());
    }

    #[test]
    fn record_exposes_only_its_fields() {
        let r = Record::new("ctx", [("A".to_string(), Value::from("x"))]);
        assert!(r.field("A").is_some());
        assert!(r.field("B").is_none());
        assert_eq!(r.display(), "{x}");
    }
}
