//! Sprig's conversion, default, reflection and JSON functions.

use super::{Entry, Ty, sig};
use crate::gofmt;
use crate::gojson::{self, Encoder};
use crate::value::{Value, deep_equal};

pub(crate) const FUNCS: &[Entry] = &[
    ("hello", sig(&[], None), |_| Ok(Value::from("Hello!"))),
    ("toString", sig(&[Ty::Any], None), |a| {
        Ok(Value::from(strval(&a[0])))
    }),
    ("atoi", sig(&[Ty::Str], None), |a| {
        Ok(Value::Int(
            a[0].as_str()
                .unwrap_or_default()
                .parse::<i64>()
                .unwrap_or(0),
        ))
    }),
    ("int", sig(&[Ty::Any], None), |a| {
        Ok(Value::Int(to_int64(&a[0])))
    }),
    ("int64", sig(&[Ty::Any], None), |a| {
        Ok(Value::Int64(to_int64(&a[0])))
    }),
    ("float64", sig(&[Ty::Any], None), |a| {
        Ok(Value::Float(to_float64(&a[0])))
    }),
    ("toDecimal", sig(&[Ty::Any], None), |a| {
        Ok(Value::Int64(
            i64::from_str_radix(&gofmt::sprint_one(&a[0]), 8).unwrap_or(0),
        ))
    }),
    ("typeOf", sig(&[Ty::Any], None), |a| {
        Ok(Value::from(a[0].type_name()))
    }),
    ("typeIs", sig(&[Ty::Str, Ty::Any], None), |a| {
        Ok(Value::Bool(a[0].as_str() == Some(&a[1].type_name())))
    }),
    ("typeIsLike", sig(&[Ty::Str, Ty::Any], None), |a| {
        let t = a[1].type_name();
        let target = a[0].as_str().unwrap_or_default();
        Ok(Value::Bool(target == t || format!("*{target}") == t))
    }),
    ("kindOf", sig(&[Ty::Any], None), |a| {
        Ok(Value::from(a[0].kind_name()))
    }),
    ("kindIs", sig(&[Ty::Str, Ty::Any], None), |a| {
        Ok(Value::Bool(a[0].as_str() == Some(a[1].kind_name())))
    }),
    ("deepEqual", sig(&[Ty::Any, Ty::Any], None), |a| {
        Ok(Value::Bool(deep_equal(&a[0], &a[1])))
    }),
    ("deepCopy", sig(&[Ty::Any], None), |a| {
        Ok(deep_copy(&a[0], 0))
    }),
    ("mustDeepCopy", sig(&[Ty::Any], None), |a| {
        Ok(deep_copy(&a[0], 0))
    }),
    ("default", sig(&[Ty::Any], Some(Ty::Any)), |a| {
        if a.len() < 2 || empty(&a[1]) {
            Ok(a[0].clone())
        } else {
            Ok(a[1].clone())
        }
    }),
    ("empty", sig(&[Ty::Any], None), |a| {
        Ok(Value::Bool(empty(&a[0])))
    }),
    ("coalesce", sig(&[], Some(Ty::Any)), |a| {
        Ok(a.into_iter().find(|v| !empty(v)).unwrap_or(Value::Nil))
    }),
    ("all", sig(&[], Some(Ty::Any)), |a| {
        Ok(Value::Bool(a.iter().all(|v| !empty(v))))
    }),
    ("any", sig(&[], Some(Ty::Any)), |a| {
        Ok(Value::Bool(a.iter().any(|v| !empty(v))))
    }),
    ("ternary", sig(&[Ty::Any, Ty::Any, Ty::Bool], None), |a| {
        Ok(if matches!(a[2], Value::Bool(true)) {
            a[0].clone()
        } else {
            a[1].clone()
        })
    }),
    ("fromJson", sig(&[Ty::Str], None), |a| {
        Ok(gojson::decode(a[0].as_str().unwrap_or_default()).unwrap_or(Value::Nil))
    }),
    ("mustFromJson", sig(&[Ty::Str], None), |a| {
        gojson::decode(a[0].as_str().unwrap_or_default())
    }),
    ("toJson", sig(&[Ty::Any], None), |a| {
        Ok(Value::from(
            gojson::encode(&a[0], COMPACT).unwrap_or_default(),
        ))
    }),
    ("mustToJson", sig(&[Ty::Any], None), |a| {
        gojson::encode(&a[0], COMPACT).map(Value::from)
    }),
    ("toPrettyJson", sig(&[Ty::Any], None), |a| {
        Ok(Value::from(
            gojson::encode(&a[0], PRETTY).unwrap_or_default(),
        ))
    }),
    ("mustToPrettyJson", sig(&[Ty::Any], None), |a| {
        gojson::encode(&a[0], PRETTY).map(Value::from)
    }),
    ("toRawJson", sig(&[Ty::Any], None), |a| {
        gojson::encode(&a[0], RAW).map(Value::from)
    }),
    ("mustToRawJson", sig(&[Ty::Any], None), |a| {
        gojson::encode(&a[0], RAW).map(Value::from)
    }),
    ("fail", sig(&[Ty::Str], None), |a| {
        Err(a[0].as_str().unwrap_or_default().to_string())
    }),
];

const COMPACT: Encoder<'static> = Encoder {
    escape_html: true,
    indent: None,
};
const PRETTY: Encoder<'static> = Encoder {
    escape_html: true,
    indent: Some("  "),
};
const RAW: Encoder<'static> = Encoder {
    escape_html: false,
    indent: None,
};

/// Sprig's `strval`: strings as is, Stringers via String(), else `%v`.
pub(crate) fn strval(v: &Value) -> String {
    match v {
        Value::String(s) => s.to_string(),
        Value::Object(o) => o.display(),
        other => gofmt::sprint_one(other),
    }
}

/// Sprig's `empty`: Go zero values, empty collections and nil are empty.
pub(crate) fn empty(v: &Value) -> bool {
    match v {
        Value::Object(_) => false,
        other => !other.truth(),
    }
}

/// Go's `strconv.ParseInt(s, 0, 64)`.
fn parse_int_base0(s: &str) -> Option<i64> {
    let (neg, body) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if body.is_empty() {
        return None;
    }
    let lower = body.to_ascii_lowercase();
    let (radix, digits) = if let Some(d) = lower.strip_prefix("0x") {
        (16, d.to_string())
    } else if let Some(d) = lower.strip_prefix("0o") {
        (8, d.to_string())
    } else if let Some(d) = lower.strip_prefix("0b") {
        (2, d.to_string())
    } else if lower.len() > 1 && lower.starts_with('0') {
        (8, lower[1..].to_string())
    } else {
        (10, lower)
    };
    let digits = if radix != 10 || digits.contains('_') {
        // Underscores are allowed only between digits with base 0.
        if digits.starts_with('_') || digits.ends_with('_') || digits.contains("__") {
            return None;
        }
        digits.replace('_', "")
    } else {
        digits
    };
    if digits.is_empty() || digits.starts_with(['+', '-']) {
        return None;
    }
    let v = i128::from_str_radix(&digits, radix).ok()?;
    let v = if neg { -v } else { v };
    i64::try_from(v).ok()
}

/// spf13/cast's trimZeroDecimal: "3.00" becomes "3".
fn trim_zero_decimal(s: &str) -> &str {
    let b = s.as_bytes();
    let mut found_zero = false;
    for i in (1..=b.len()).rev() {
        match b[i - 1] {
            b'.' => {
                if found_zero {
                    return &s[..i - 1];
                }
            }
            b'0' => found_zero = true,
            _ => return s,
        }
    }
    s
}

/// spf13/cast's ToInt64: numbers truncate, strings parse with base
/// prefixes, booleans are 0/1, anything else is 0.
pub(crate) fn to_int64(v: &Value) -> i64 {
    match v {
        Value::Int(i) | Value::Int64(i) => *i,
        Value::Uint8(i) => i64::from(*i),
        Value::Float(f) => *f as i64,
        Value::Bool(b) => i64::from(*b),
        Value::String(s) => parse_int_base0(trim_zero_decimal(s)).unwrap_or(0),
        _ => 0,
    }
}

/// spf13/cast's ToFloat64.
pub(crate) fn to_float64(v: &Value) -> f64 {
    match v {
        Value::Int(i) | Value::Int64(i) => *i as f64,
        Value::Uint8(i) => f64::from(*i),
        Value::Float(f) => *f,
        Value::Bool(b) => f64::from(u8::from(*b)),
        Value::String(s) => parse_go_float(s).unwrap_or(0.0),
        _ => 0.0,
    }
}

/// Go's `strconv.ParseFloat(s, 64)` for the decimal forms and Inf/NaN.
pub(crate) fn parse_go_float(s: &str) -> Option<f64> {
    let lower = s.to_ascii_lowercase();
    let body = lower.trim_start_matches(['+', '-']);
    match body {
        "inf" | "infinity" => {
            return Some(if lower.starts_with('-') {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            });
        }
        "nan" => return Some(f64::NAN),
        _ => {}
    }
    if body.is_empty()
        || !body
            .bytes()
            .all(|c| c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'+' | b'-' | b'_'))
    {
        return None;
    }
    lower.replace('_', "").parse::<f64>().ok()
}

/// sprig's deepCopy: maps are copied recursively (lists are immutable here).
fn deep_copy(v: &Value, depth: usize) -> Value {
    if depth > crate::MAX_NESTING {
        return Value::Nil;
    }
    match v {
        Value::Map(m) => Value::map(
            m.borrow()
                .iter()
                .map(|(k, e)| (k.clone(), deep_copy(e, depth + 1))),
        ),
        Value::List(l) => Value::from(
            l.iter()
                .map(|e| deep_copy(e, depth + 1))
                .collect::<Vec<_>>(),
        ),
        Value::Missing => Value::Nil,
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn casts_follow_spf13_cast() {
        assert_eq!(to_int64(&Value::from("0x1F")), 31);
        assert_eq!(to_int64(&Value::from("010")), 8);
        assert_eq!(to_int64(&Value::from("3.00")), 3);
        assert_eq!(to_int64(&Value::from("3.5")), 0);
        assert_eq!(to_int64(&Value::Float(3.9)), 3);
        assert_eq!(to_int64(&Value::Bool(true)), 1);
        assert_eq!(to_float64(&Value::from("2.5")), 2.5);
        assert_eq!(to_float64(&Value::from("x")), 0.0);
    }

    #[test]
    fn empty_follows_sprig() {
        assert!(empty(&Value::Nil));
        assert!(empty(&Value::from("")));
        assert!(empty(&Value::Int64(0)));
        assert!(!empty(&Value::from("0")));
        assert!(empty(&Value::map([])));
    }

    #[test]
    fn strval_of_nil_is_go_nil() {
        assert_eq!(strval(&Value::Nil), "<nil>");
        assert_eq!(strval(&Value::Float(1.5)), "1.5");
    }
}
