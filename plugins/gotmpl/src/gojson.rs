//! JSON encoding with Go's `encoding/json` conventions, which sprig's
//! `toJson` family inherits: sorted map keys, `<>&` escaped as `\u003c` etc.
//! (unless raw), Go's float formatting, and MarshalIndent's layout.

use crate::gofmt::format_float;
use crate::value::Value;

/// Encoding options.
#[derive(Clone, Copy)]
pub struct Encoder<'a> {
    /// Escape `<`, `>` and `&` (json.Marshal does; toRawJson does not).
    pub escape_html: bool,
    /// MarshalIndent's indent string; `None` for compact output.
    pub indent: Option<&'a str>,
}

/// Encodes `v`; fails like Go on NaN or infinite floats.
pub fn encode(v: &Value, enc: Encoder<'_>) -> Result<String, String> {
    let mut out = String::new();
    write_value(&mut out, v, enc, 0)?;
    Ok(out)
}

fn newline(out: &mut String, enc: Encoder<'_>, depth: usize) {
    if let Some(ind) = enc.indent {
        out.push('\n');
        for _ in 0..depth {
            out.push_str(ind);
        }
    }
}

fn write_value(out: &mut String, v: &Value, enc: Encoder<'_>, depth: usize) -> Result<(), String> {
    if depth > crate::MAX_NESTING {
        return Err("json: unsupported value: encountered a cycle or too deep nesting".into());
    }
    match v {
        Value::Missing | Value::Nil => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) | Value::Int64(i) => out.push_str(&i.to_string()),
        Value::Uint8(i) => out.push_str(&i.to_string()),
        Value::Float(f) => out.push_str(&encode_float(*f)?),
        Value::String(s) => write_string(out, s, enc.escape_html),
        Value::List(l) => {
            if l.is_empty() {
                out.push_str("[]");
                return Ok(());
            }
            out.push('[');
            for (i, e) in l.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, enc, depth + 1);
                write_value(out, e, enc, depth + 1)?;
            }
            newline(out, enc, depth);
            out.push(']');
        }
        Value::Map(m) => {
            let m = m.borrow();
            if m.is_empty() {
                out.push_str("{}");
                return Ok(());
            }
            out.push('{');
            for (i, (k, e)) in m.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, enc, depth + 1);
                write_string(out, k, enc.escape_html);
                out.push(':');
                if enc.indent.is_some() {
                    out.push(' ');
                }
                write_value(out, e, enc, depth + 1)?;
            }
            newline(out, enc, depth);
            out.push('}');
        }
        Value::Object(o) => match o.to_json() {
            Some(j) => write_value(out, &j, enc, depth + 1)?,
            None => out.push_str("{}"),
        },
    }
    Ok(())
}

/// Go's float encoding: shortest repr, `%f` style unless the exponent is
/// below -6 or at least 21, and exponents without leading zeros (`1e-7`).
pub fn encode_float(f: f64) -> Result<String, String> {
    if f.is_nan() || f.is_infinite() {
        return Err(format!(
            "json: unsupported value: {}",
            format_float(f, 'g', -1)
        ));
    }
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let s = format_float(f, 'e', -1);
        // Go cleans up e-09 to e-9 (and e+09 to e+9... no: only negative).
        let b = s.as_bytes();
        let n = b.len();
        if n >= 4 && b[n - 4] == b'e' && b[n - 3] == b'-' && b[n - 2] == b'0' {
            return Ok(format!("{}{}", &s[..n - 2], &s[n - 1..]));
        }
        Ok(s)
    } else {
        Ok(format_float(f, 'f', -1))
    }
}

/// Writes a JSON string literal with Go's escaping rules.
pub fn write_string(out: &mut String, s: &str, escape_html: bool) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\x08' => out.push_str("\\b"),
            '\x0c' => out.push_str("\\f"),
            '<' | '>' | '&' if escape_html => out.push_str(&format!("\\u{:04x}", c as u32)),
            '\u{2028}' | '\u{2029}' => out.push_str(&format!("\\u{:04x}", c as u32)),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Go's `json.Unmarshal` into `interface{}`: numbers become `float64`.
pub fn decode(s: &str) -> Result<Value, String> {
    let v: serde_json::Value = serde_json::from_str(s).map_err(|e| go_json_error(&e))?;
    Ok(Value::from_json_floats(&v))
}

fn go_json_error(e: &serde_json::Error) -> String {
    use serde_json::error::Category;
    match e.classify() {
        Category::Eof => "unexpected end of JSON input".into(),
        _ => format!("invalid JSON: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const COMPACT: Encoder<'static> = Encoder {
        escape_html: true,
        indent: None,
    };

    #[test]
    fn encodes_like_go_json_marshal() {
        let v = Value::map([
            ("b".to_string(), Value::from("<a&b>")),
            (
                "a".to_string(),
                Value::from(vec![Value::Int(1), Value::Float(1.5), Value::Nil]),
            ),
        ]);
        assert_eq!(
            encode(&v, COMPACT).unwrap(),
            r#"{"a":[1,1.5,null],"b":"\u003ca\u0026b\u003e"}"#
        );
        let raw = Encoder {
            escape_html: false,
            indent: None,
        };
        assert_eq!(encode(&Value::from("<x>"), raw).unwrap(), r#""<x>""#);
    }

    #[test]
    fn indents_like_marshal_indent() {
        let v = Value::map([
            ("a".to_string(), Value::from(vec![Value::Int(1)])),
            ("e".to_string(), Value::map([])),
        ]);
        let pretty = Encoder {
            escape_html: true,
            indent: Some("  "),
        };
        assert_eq!(
            encode(&v, pretty).unwrap(),
            "{\n  \"a\": [\n    1\n  ],\n  \"e\": {}\n}"
        );
    }

    #[test]
    fn floats_use_go_json_format() {
        assert_eq!(encode_float(1e21).unwrap(), "1e+21");
        assert_eq!(encode_float(1e20).unwrap(), "100000000000000000000");
        assert_eq!(encode_float(0.0000001).unwrap(), "1e-7");
        assert_eq!(encode_float(3.0).unwrap(), "3");
        assert!(encode_float(f64::NAN).is_err());
    }

    #[test]
    fn decode_gives_float64_numbers() {
        let v = decode(r#"{"a": 1}"#).unwrap();
        let Value::Map(m) = v else {
            panic!("expected map")
        };
        assert!(matches!(m.borrow()["a"], Value::Float(f) if f == 1.0));
        assert!(decode("{").is_err());
    }
}
