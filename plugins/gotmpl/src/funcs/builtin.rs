//! Go text/template's predefined functions.

use super::{Entry, Ty, sig};
use crate::gofmt;
use crate::value::Value;

pub(crate) const FUNCS: &[Entry] = &[
    // and/or are short-circuited by the executor; these bodies run only
    // when they are called with no arguments to short-circuit.
    ("and", sig(&[Ty::Raw], Some(Ty::Raw)), and),
    ("or", sig(&[Ty::Raw], Some(Ty::Raw)), or),
    ("not", sig(&[Ty::Raw], None), not),
    ("len", sig(&[Ty::Raw], None), len),
    ("index", sig(&[Ty::Raw], Some(Ty::Raw)), index),
    ("eq", sig(&[Ty::Raw], Some(Ty::Raw)), eq),
    ("ne", sig(&[Ty::Raw, Ty::Raw], None), ne),
    ("lt", sig(&[Ty::Raw, Ty::Raw], None), lt),
    ("le", sig(&[Ty::Raw, Ty::Raw], None), le),
    ("gt", sig(&[Ty::Raw, Ty::Raw], None), gt),
    ("ge", sig(&[Ty::Raw, Ty::Raw], None), ge),
    ("print", sig(&[], Some(Ty::Any)), print),
    ("printf", sig(&[Ty::Str], Some(Ty::Any)), printf),
    ("println", sig(&[], Some(Ty::Any)), println),
    ("urlquery", sig(&[], Some(Ty::Any)), urlquery),
    ("js", sig(&[], Some(Ty::Any)), js),
    ("html", sig(&[], Some(Ty::Any)), html),
    ("call", sig(&[Ty::Raw], Some(Ty::Raw)), call),
];

fn and(a: Vec<Value>) -> Result<Value, String> {
    let mut last = Value::Missing;
    for v in a {
        if !v.truth() {
            return Ok(v);
        }
        last = v;
    }
    Ok(last)
}

fn or(a: Vec<Value>) -> Result<Value, String> {
    let mut last = Value::Missing;
    for v in a {
        if v.truth() {
            return Ok(v);
        }
        last = v;
    }
    Ok(last)
}

fn not(a: Vec<Value>) -> Result<Value, String> {
    Ok(Value::Bool(!a[0].truth()))
}

fn len(a: Vec<Value>) -> Result<Value, String> {
    let n = match &a[0] {
        Value::String(s) => s.len(),
        Value::List(l) => l.len(),
        Value::Map(m) => m.borrow().len(),
        Value::Missing => return Err("reflect: call of reflect.Value.Type on zero Value".into()),
        Value::Nil => return Err("len of nil pointer".into()),
        other => return Err(format!("len of type {}", other.type_name())),
    };
    Ok(Value::Int(n as i64))
}

fn index_arg(i: &Value, cap: usize) -> Result<usize, String> {
    let x = match i {
        Value::Int(x) | Value::Int64(x) => *x,
        Value::Uint8(x) => i64::from(*x),
        Value::Missing | Value::Nil => return Err("cannot index slice/array with nil".into()),
        other => {
            return Err(format!(
                "cannot index slice/array with type {}",
                other.type_name()
            ));
        }
    };
    if x < 0 || x as u64 >= cap as u64 {
        return Err(format!("index out of range: {x}"));
    }
    Ok(x as usize)
}

fn index(a: Vec<Value>) -> Result<Value, String> {
    let mut item = a[0].clone();
    if item.is_nil() {
        return Err("index of untyped nil".into());
    }
    for i in &a[1..] {
        item = match &item {
            Value::Missing | Value::Nil => return Err("index of nil pointer".into()),
            Value::List(l) => l[index_arg(i, l.len())?].clone(),
            Value::String(s) => Value::Uint8(s.as_bytes()[index_arg(i, s.len())?]),
            Value::Map(m) => match i {
                Value::String(k) => m.borrow().get(&**k).cloned().unwrap_or(Value::Nil),
                Value::Missing | Value::Nil => m.borrow().get("").cloned().unwrap_or(Value::Nil),
                other => {
                    return Err(format!(
                        "value has type {}; should be string",
                        other.type_name()
                    ));
                }
            },
            other => return Err(format!("can't index item of type {}", other.type_name())),
        };
    }
    Ok(item)
}

#[derive(PartialEq, Eq, Clone, Copy)]
enum Kind {
    Invalid,
    Bool,
    Int,
    Uint,
    Float,
    Str,
    Other,
}

fn basic_kind(v: &Value) -> Kind {
    match v {
        Value::Missing | Value::Nil => Kind::Invalid,
        Value::Bool(_) => Kind::Bool,
        Value::Int(_) | Value::Int64(_) => Kind::Int,
        Value::Uint8(_) => Kind::Uint,
        Value::Float(_) => Kind::Float,
        Value::String(_) => Kind::Str,
        _ => Kind::Other,
    }
}

fn bad_comparison(a: &Value, b: &Value) -> String {
    format!(
        "incompatible types for comparison: {} and {}",
        a.type_name(),
        b.type_name()
    )
}
const BAD_COMPARISON_TYPE: &str = "invalid type for comparison";

fn int_of(v: &Value) -> i128 {
    match v {
        Value::Int(i) | Value::Int64(i) => i128::from(*i),
        Value::Uint8(u) => i128::from(*u),
        _ => 0,
    }
}

fn eq_pair(a: &Value, b: &Value) -> Result<bool, String> {
    let (k1, k2) = (basic_kind(a), basic_kind(b));
    if k1 != k2 {
        return match (k1, k2) {
            (Kind::Int, Kind::Uint) | (Kind::Uint, Kind::Int) => Ok(int_of(a) == int_of(b)),
            _ if k1 != Kind::Invalid && k2 != Kind::Invalid => Err(bad_comparison(a, b)),
            _ => Ok(false),
        };
    }
    Ok(match (a, b) {
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Float(x), Value::Float(y)) => x == y,
        (Value::String(x), Value::String(y)) => x == y,
        _ if k1 == Kind::Int || k1 == Kind::Uint => int_of(a) == int_of(b),
        (Value::Missing | Value::Nil, Value::Missing | Value::Nil) => true,
        (Value::List(_) | Value::Map(_), _) | (_, Value::List(_) | Value::Map(_)) => {
            return Err(format!(
                "non-comparable type {}: {}",
                b.to_go_string(),
                b.type_name()
            ));
        }
        _ => crate::value::deep_equal(a, b),
    })
}

fn eq(a: Vec<Value>) -> Result<Value, String> {
    if a.len() < 2 {
        return Err("missing argument for comparison".into());
    }
    for b in &a[1..] {
        if eq_pair(&a[0], b)? {
            return Ok(Value::Bool(true));
        }
    }
    Ok(Value::Bool(false))
}

fn ne(a: Vec<Value>) -> Result<Value, String> {
    Ok(Value::Bool(!eq_pair(&a[0], &a[1])?))
}

fn lt_pair(a: &Value, b: &Value) -> Result<bool, String> {
    let (k1, k2) = (basic_kind(a), basic_kind(b));
    for k in [k1, k2] {
        if matches!(k, Kind::Invalid | Kind::Other) {
            return Err(BAD_COMPARISON_TYPE.into());
        }
    }
    if k1 != k2 {
        return match (k1, k2) {
            (Kind::Int, Kind::Uint) | (Kind::Uint, Kind::Int) => Ok(int_of(a) < int_of(b)),
            _ => Err(bad_comparison(a, b)),
        };
    }
    match (a, b) {
        (Value::Bool(_), _) => Err(BAD_COMPARISON_TYPE.into()),
        (Value::Float(x), Value::Float(y)) => Ok(x < y),
        (Value::String(x), Value::String(y)) => Ok(x < y),
        _ => Ok(int_of(a) < int_of(b)),
    }
}

fn lt(a: Vec<Value>) -> Result<Value, String> {
    Ok(Value::Bool(lt_pair(&a[0], &a[1])?))
}

fn le(a: Vec<Value>) -> Result<Value, String> {
    let l = lt_pair(&a[0], &a[1])?;
    Ok(Value::Bool(l || eq_pair(&a[0], &a[1])?))
}

fn gt(a: Vec<Value>) -> Result<Value, String> {
    let l = lt_pair(&a[0], &a[1])?;
    Ok(Value::Bool(!(l || eq_pair(&a[0], &a[1])?)))
}

fn ge(a: Vec<Value>) -> Result<Value, String> {
    Ok(Value::Bool(!lt_pair(&a[0], &a[1])?))
}

fn print(a: Vec<Value>) -> Result<Value, String> {
    Ok(Value::from(gofmt::sprint(&a)))
}

fn printf(a: Vec<Value>) -> Result<Value, String> {
    let f = a[0].as_str().unwrap_or_default().to_string();
    Ok(Value::from(gofmt::sprintf(&f, &a[1..])))
}

fn println(a: Vec<Value>) -> Result<Value, String> {
    Ok(Value::from(gofmt::sprintln(&a)))
}

/// text/template's evalArgs: a lone string as is, otherwise Sprint.
fn eval_args(a: &[Value]) -> String {
    if let [Value::String(s)] = a {
        return s.to_string();
    }
    gofmt::sprint(a)
}

fn urlquery(a: Vec<Value>) -> Result<Value, String> {
    Ok(Value::from(query_escape(&eval_args(&a))))
}

/// Go's `url.QueryEscape`.
pub(crate) fn query_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

fn js(a: Vec<Value>) -> Result<Value, String> {
    let s = eval_args(&a);
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '"' => out.push_str("\\\""),
            '<' => out.push_str("\\u003C"),
            '>' => out.push_str("\\u003E"),
            '&' => out.push_str("\\u0026"),
            '=' => out.push_str("\\u003D"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04X}", c as u32)),
            c if (c as u32) < 0x80 => out.push(c),
            c if gofmt::is_print(c) => out.push(c),
            c => out.push_str(&format!("\\u{:04X}", c as u32)),
        }
    }
    Ok(Value::from(out))
}

fn html(a: Vec<Value>) -> Result<Value, String> {
    let s = eval_args(&a);
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\0' => out.push('\u{FFFD}'),
            '"' => out.push_str("&#34;"),
            '\'' => out.push_str("&#39;"),
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    Ok(Value::from(out))
}

fn call(a: Vec<Value>) -> Result<Value, String> {
    Err(format!("non-function of type {}", a[0].type_name()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &str) -> Value {
        Value::from(v)
    }

    #[test]
    fn comparisons_follow_go_kinds() {
        assert!(eq_pair(&Value::Int(1), &Value::Int64(1)).unwrap());
        assert_eq!(
            eq_pair(&Value::Int(1), &Value::Float(1.0)).unwrap_err(),
            "incompatible types for comparison: int and float64"
        );
        assert!(!eq_pair(&Value::Missing, &s("x")).unwrap());
        assert!(lt_pair(&s("a"), &s("b")).unwrap());
        assert_eq!(
            lt_pair(&Value::Missing, &s("b")).unwrap_err(),
            BAD_COMPARISON_TYPE
        );
        assert!(eq(vec![s("b"), s("a"), s("b")]).unwrap().truth());
    }

    #[test]
    fn escapers_match_go() {
        assert_eq!(query_escape("a b&c/é"), "a+b%26c%2F%C3%A9");
        assert_eq!(
            js(vec![s("a'b\"<=>\n")]).unwrap().as_str().unwrap(),
            "a\\'b\\\"\\u003C\\u003D\\u003E\\u000A"
        );
        assert_eq!(
            html(vec![s("<a href='x'>&</a>")])
                .unwrap()
                .as_str()
                .unwrap(),
            "&lt;a href=&#39;x&#39;&gt;&amp;&lt;/a&gt;"
        );
    }

    #[test]
    fn index_and_len() {
        let l = Value::from(vec![s("a"), s("b")]);
        assert_eq!(
            index(vec![l.clone(), Value::Int(1)]).unwrap().as_str(),
            Some("b")
        );
        assert_eq!(
            index(vec![l.clone(), Value::Int(2)]).unwrap_err(),
            "index out of range: 2"
        );
        assert!(matches!(
            index(vec![s("ab"), Value::Int(0)]).unwrap(),
            Value::Uint8(97)
        ));
        assert!(matches!(len(vec![s("é")]).unwrap(), Value::Int(2)));
    }
}
