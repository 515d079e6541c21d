//! Turns rendered template output into Kubernetes objects the way upstream
//! init-agent does (apimachinery's `YAMLOrJSONDecoder` over sigs.k8s.io/yaml
//! and go-yaml v2):
//!
//! - output whose first non-blank character is `{` is a stream of JSON
//!   values; anything else is YAML split into documents on lines that start
//!   with `---` (only blanks or a `#` comment may follow on that line);
//! - empty and null documents (and empty maps) are skipped; a document that
//!   is not a map is an error;
//! - YAML scalars resolve like go-yaml v2 (YAML 1.1): `yes`/`no`/`on`/`off`
//!   are booleans, `010` is octal, `1_000` is an integer; quoted scalars
//!   stay strings; anchors, aliases and `<<` merge keys work.

use std::collections::HashMap;

use saphyr_parser::{Event, Parser, ScalarStyle, Tag};
use serde_json::{Map, Number, Value};

/// Why the output could not be decoded (without upstream's "failed to
/// decode YAML: " prefix, which the caller adds).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError(pub String);

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Decodes rendered output into objects, in document order.
pub fn decode(text: &str) -> Result<Vec<Map<String, Value>>, DecodeError> {
    if text.trim_start().starts_with('{') {
        return decode_json_stream(text);
    }
    decode_yaml(text, 0)
}

/// Decodes YAML documents; `skipped` documents came before `text` (JSON).
fn decode_yaml(text: &str, skipped: usize) -> Result<Vec<Map<String, Value>>, DecodeError> {
    let mut out = Vec::new();
    for (n, doc) in split_yaml(text)?.into_iter().enumerate() {
        let number = skipped + n + 1;
        let value = parse_document(&doc.text).map_err(|e| {
            DecodeError(format!(
                "document {number} (line {} of the rendered output): {e}",
                doc.first_line + e_line(&e).saturating_sub(1)
            ))
        })?;
        push_object(&mut out, number, value)?;
    }
    Ok(out)
}

fn e_line(e: &str) -> usize {
    // Errors from the YAML parser start with "line N, column M".
    e.strip_prefix("line ")
        .and_then(|r| r.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(1)
}

fn push_object(
    out: &mut Vec<Map<String, Value>>,
    number: usize,
    value: Value,
) -> Result<(), DecodeError> {
    match value {
        Value::Null => Ok(()),
        Value::Object(m) if m.is_empty() => Ok(()),
        Value::Object(m) => {
            out.push(m);
            Ok(())
        }
        other => Err(DecodeError(format!(
            "document {number} is not an object (it is {}); every document must be a Kubernetes object",
            describe(&other)
        ))),
    }
}

fn describe(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// A JSON stream, with apimachinery's fallback: if decoding fails before a
/// second object was read, the rest is decoded as YAML instead (and only if
/// that fails too is the JSON error reported).
fn decode_json_stream(text: &str) -> Result<Vec<Map<String, Value>>, DecodeError> {
    let mut out = Vec::new();
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    let mut count = 0;
    let mut consumed = 0;
    loop {
        let number = count + 1;
        let failure = match stream.next() {
            None => return Ok(out),
            Some(Ok(v)) => match push_object(&mut out, number, v) {
                Ok(()) => {
                    count += 1;
                    consumed = stream.byte_offset();
                    continue;
                }
                Err(e) => e,
            },
            Some(Err(e)) => DecodeError(format!("document {number}: invalid JSON: {e}")),
        };
        if count > 1 {
            return Err(failure);
        }
        // Skip blanks up to and including the first newline, then try YAML.
        let rest = &text[consumed..];
        let blank = rest.len() - rest.trim_start_matches([' ', '\t', '\r']).len();
        let rest = &rest[blank..];
        let rest = rest.strip_prefix('\n').unwrap_or(rest);
        return match decode_yaml(rest, count) {
            Ok(more) => {
                out.extend(more);
                Ok(out)
            }
            Err(_) => Err(failure),
        };
    }
}

struct Doc {
    /// 1-based line of the rendered output where the document starts.
    first_line: usize,
    text: String,
}

/// apimachinery's YAMLReader: documents are separated by lines starting
/// with `---`, which may only be followed by blanks or a comment.
fn split_yaml(text: &str) -> Result<Vec<Doc>, DecodeError> {
    let mut docs = Vec::new();
    let mut buf = String::new();
    let mut first_line = 1;
    for (i, line) in text.split_inclusive('\n').enumerate() {
        let line_no = i + 1;
        if let Some(rest) = line.strip_prefix("---") {
            let rest = rest.trim();
            if !rest.is_empty() && !rest.starts_with('#') {
                return Err(DecodeError(format!(
                    "invalid Yaml document separator: {rest} (line {line_no} of the rendered output; a line starting with --- separates documents and may only be followed by a comment)"
                )));
            }
            if !buf.is_empty() {
                docs.push(Doc {
                    first_line,
                    text: std::mem::take(&mut buf),
                });
            }
            first_line = line_no + 1;
            continue;
        }
        if buf.is_empty() {
            first_line = line_no;
        }
        buf.push_str(line);
    }
    if !buf.is_empty() {
        docs.push(Doc {
            first_line,
            text: buf,
        });
    }
    Ok(docs)
}

/// A YAML node before conversion to JSON (keys may be non-strings).
#[derive(Clone, Debug)]
enum Y {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float(f64),
    Str(String),
    Seq(Vec<Y>),
    Map(Vec<(Y, Y)>),
    /// The `<<` merge key.
    Merge,
}

/// Parses one YAML document into JSON; errors start with "line N, column M".
fn parse_document(text: &str) -> Result<Value, String> {
    let mut events: Vec<Event<'_>> = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    for ev in Parser::new_from_str(text) {
        match ev {
            Ok((e, span)) => {
                let anchored = match &e {
                    Event::Scalar(_, _, a, _)
                    | Event::SequenceStart(a, _)
                    | Event::MappingStart(a, _) => *a > 0,
                    Event::Alias(_) => true,
                    _ => false,
                };
                if anchored {
                    check_anchor_name(&chars, span.start.index()).map_err(|m| {
                        format!(
                            "line {}, column {}: {m}",
                            span.start.line(),
                            span.start.col() + 1
                        )
                    })?;
                }
                events.push(e);
            }
            Err(e) => {
                let m = e.marker();
                return Err(format!(
                    "line {}, column {}: {}",
                    m.line(),
                    m.col() + 1,
                    e.info()
                ));
            }
        }
    }
    let mut p = Builder {
        events: events.into_iter(),
        anchors: HashMap::new(),
        depth: 0,
    };
    let mut root = None;
    while let Some(ev) = p.events.next() {
        match ev {
            Event::StreamStart | Event::DocumentStart(_) | Event::DocumentEnd | Event::Nothing => {}
            Event::StreamEnd => break,
            other => {
                if root.is_some() {
                    return Err("line 1, column 1: more than one document in a section; separate documents with a line that starts with ---".into());
                }
                root = Some(p.node(other)?);
            }
        }
    }
    match root {
        None => Ok(Value::Null),
        Some(y) => to_json(y, 0),
    }
}

/// go-yaml accepts only `[0-9A-Za-z_-]` in anchor and alias names (YAML 1.2
/// allows more). This matters for html-escaped output: `key: &#34;v&#34;`
/// is an error upstream, not an anchor on a null value.
fn check_anchor_name(chars: &[char], start: usize) -> Result<(), String> {
    let Some(at) = chars[start.min(chars.len())..]
        .iter()
        .position(|c| *c == '&' || *c == '*')
    else {
        return Ok(());
    };
    let name = chars[start + at + 1..]
        .iter()
        .take_while(|c| !c.is_whitespace() && !matches!(c, ',' | '[' | ']' | '{' | '}'));
    let mut empty = true;
    for c in name {
        empty = false;
        if !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-') {
            return Err("while scanning an anchor or alias, did not find expected alphabetic or numeric character".into());
        }
    }
    if empty {
        return Err("while scanning an anchor or alias, did not find expected alphabetic or numeric character".into());
    }
    Ok(())
}

struct Builder<'a, I: Iterator<Item = Event<'a>>> {
    events: I,
    anchors: HashMap<usize, Y>,
    depth: usize,
}

const MAX_DEPTH: usize = 200;

impl<'a, I: Iterator<Item = Event<'a>>> Builder<'a, I> {
    fn node(&mut self, ev: Event<'a>) -> Result<Y, String> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err("line 1, column 1: the document nests too deeply".into());
        }
        let r = self.node_inner(ev);
        self.depth -= 1;
        r
    }

    fn node_inner(&mut self, ev: Event<'a>) -> Result<Y, String> {
        match ev {
            Event::Scalar(s, style, anchor, tag) => {
                let y = scalar(&s, style, tag.as_deref())?;
                if anchor > 0 {
                    self.anchors.insert(anchor, y.clone());
                }
                Ok(y)
            }
            Event::Alias(id) => self
                .anchors
                .get(&id)
                .cloned()
                .ok_or_else(|| "line 1, column 1: unknown anchor".to_string()),
            Event::SequenceStart(anchor, _) => {
                let mut items = Vec::new();
                loop {
                    match self.events.next() {
                        Some(Event::SequenceEnd) => break,
                        Some(e) => items.push(self.node(e)?),
                        None => return Err("line 1, column 1: unterminated sequence".into()),
                    }
                }
                let y = Y::Seq(items);
                if anchor > 0 {
                    self.anchors.insert(anchor, y.clone());
                }
                Ok(y)
            }
            Event::MappingStart(anchor, _) => {
                let mut entries = Vec::new();
                loop {
                    let k = match self.events.next() {
                        Some(Event::MappingEnd) => break,
                        Some(e) => self.node(e)?,
                        None => return Err("line 1, column 1: unterminated mapping".into()),
                    };
                    let v = match self.events.next() {
                        Some(e) => self.node(e)?,
                        None => return Err("line 1, column 1: mapping key without value".into()),
                    };
                    entries.push((k, v));
                }
                let y = Y::Map(entries);
                if anchor > 0 {
                    self.anchors.insert(anchor, y.clone());
                }
                Ok(y)
            }
            other => Err(format!("line 1, column 1: unexpected YAML event {other:?}")),
        }
    }
}

fn is_core_tag(tag: &Tag, name: &str) -> bool {
    (tag.handle == "!!" || tag.handle == "tag:yaml.org,2002:") && tag.suffix == name
}

fn scalar(s: &str, style: ScalarStyle, tag: Option<&Tag>) -> Result<Y, String> {
    if let Some(t) = tag {
        if is_core_tag(t, "str") {
            return Ok(Y::Str(s.to_string()));
        }
        if is_core_tag(t, "binary") {
            use base64::Engine;
            let clean: String = s.chars().filter(|c| !c.is_whitespace()).collect();
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(clean)
                .map_err(|e| format!("line 1, column 1: !!binary value is not base64: {e}"))?;
            return Ok(Y::Str(String::from_utf8_lossy(&bytes).into_owned()));
        }
        for kind in ["int", "float", "bool", "null"] {
            if is_core_tag(t, kind) {
                let y = resolve_plain(s);
                let ok = matches!(
                    (kind, &y),
                    ("int", Y::Int(_) | Y::Uint(_))
                        | ("float", Y::Float(_) | Y::Int(_) | Y::Uint(_))
                        | ("bool", Y::Bool(_))
                        | ("null", Y::Null)
                );
                if !ok {
                    return Err(format!("line 1, column 1: cannot decode {s:?} as !!{kind}"));
                }
                return Ok(match (kind, y) {
                    ("float", Y::Int(i)) => Y::Float(i as f64),
                    ("float", Y::Uint(u)) => Y::Float(u as f64),
                    (_, y) => y,
                });
            }
        }
    }
    Ok(match style {
        ScalarStyle::Plain => resolve_plain(s),
        _ => Y::Str(s.to_string()),
    })
}

/// go-yaml v2's resolution of plain scalars.
fn resolve_plain(s: &str) -> Y {
    match s {
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            return Y::Bool(true);
        }
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            return Y::Bool(false);
        }
        "" | "~" | "null" | "Null" | "NULL" => return Y::Null,
        ".nan" | ".NaN" | ".NAN" => return Y::Float(f64::NAN),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => return Y::Float(f64::INFINITY),
        "-.inf" | "-.Inf" | "-.INF" => return Y::Float(f64::NEG_INFINITY),
        "<<" => return Y::Merge,
        _ => {}
    }
    let first = s.as_bytes()[0];
    if first == b'.' {
        return go_float(s)
            .map(Y::Float)
            .unwrap_or_else(|| Y::Str(s.to_string()));
    }
    if !(first.is_ascii_digit() || first == b'+' || first == b'-') {
        return Y::Str(s.to_string());
    }
    let plain = s.replace('_', "");
    if let Some(i) = go_int_base0(&plain) {
        return match i64::try_from(i) {
            Ok(v) => Y::Int(v),
            Err(_) => match u64::try_from(i) {
                Ok(u) => Y::Uint(u),
                Err(_) => Y::Str(s.to_string()),
            },
        };
    }
    if is_yaml_float(&plain)
        && let Some(f) = go_float(&plain)
    {
        return Y::Float(f);
    }
    for (prefix, neg) in [("0b", false), ("-0b", true)] {
        if let Some(bin) = plain.strip_prefix(prefix)
            && let Ok(v) = i64::from_str_radix(bin, 2)
        {
            return Y::Int(if neg { -v } else { v });
        }
    }
    Y::Str(s.to_string())
}

/// `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`
fn is_yaml_float(s: &str) -> bool {
    let b = s.trim_start_matches(['+', '-']).as_bytes();
    if s.len() - b.len() > 1 {
        return false;
    }
    let mut i = 0;
    let digits = |i: &mut usize| {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - start
    };
    if b.first() == Some(&b'.') {
        i = 1;
        if digits(&mut i) == 0 {
            return false;
        }
    } else {
        if digits(&mut i) == 0 {
            return false;
        }
        if i < b.len() && b[i] == b'.' {
            i += 1;
            digits(&mut i);
        }
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// Go's `strconv.ParseFloat` for decimal forms: out-of-range is a failure.
fn go_float(s: &str) -> Option<f64> {
    if s.bytes()
        .any(|c| c.is_ascii_alphabetic() && c != b'e' && c != b'E')
    {
        return None;
    }
    s.parse::<f64>().ok().filter(|f| f.is_finite())
}

/// Go's `strconv.ParseInt(s, 0, 64)` widened so uint64 values fit.
fn go_int_base0(s: &str) -> Option<i128> {
    let (neg, body) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let lower = body.to_ascii_lowercase();
    let (radix, digits) = if let Some(d) = lower.strip_prefix("0x") {
        (16, d)
    } else if let Some(d) = lower.strip_prefix("0o") {
        (8, d)
    } else if let Some(d) = lower.strip_prefix("0b") {
        (2, d)
    } else if lower.len() > 1 && lower.starts_with('0') {
        (8, &lower[1..])
    } else {
        (10, &lower[..])
    };
    if digits.is_empty() || digits.starts_with(['+', '-']) {
        return None;
    }
    let v = u64::from_str_radix(digits, radix).ok()? as i128;
    Some(if neg { -v } else { v })
}

/// sigs.k8s.io/yaml's conversion of a map key to a JSON object key.
fn key_string(k: &Y) -> Result<String, String> {
    Ok(match k {
        Y::Str(s) => s.clone(),
        Y::Int(i) => i.to_string(),
        Y::Uint(u) => u.to_string(),
        Y::Bool(b) => b.to_string(),
        Y::Float(f) if f.is_nan() => ".nan".into(),
        Y::Float(f) if f.is_infinite() => {
            if *f > 0.0 {
                ".inf".into()
            } else {
                "-.inf".into()
            }
        }
        // go-yaml formats float keys with 32-bit precision.
        Y::Float(f) => {
            syncweave_gotmpl::Value::Float((*f as f32).to_string().parse::<f64>().unwrap_or(*f))
                .to_go_string()
        }
        Y::Merge => "<<".into(),
        Y::Null => {
            return Err("line 1, column 1: a null map key cannot become a JSON object key".into());
        }
        Y::Seq(_) | Y::Map(_) => {
            return Err(
                "line 1, column 1: a list or map used as a map key cannot become a JSON object key"
                    .into(),
            );
        }
    })
}

fn to_json(y: Y, depth: usize) -> Result<Value, String> {
    if depth > MAX_DEPTH {
        return Err("line 1, column 1: the document nests too deeply".into());
    }
    Ok(match y {
        Y::Null => Value::Null,
        Y::Bool(b) => Value::Bool(b),
        Y::Int(i) => Value::from(i),
        Y::Uint(u) => Value::from(u),
        Y::Float(f) => {
            if !f.is_finite() {
                return Err(format!(
                    "line 1, column 1: {f} cannot be represented in JSON"
                ));
            }
            // Upstream decodes into float64 and sends Go's JSON for it, which
            // prints integral values without a fraction.
            if f.fract() == 0.0 && f.abs() < 9.007_199_254_740_992e15 {
                Value::from(f as i64)
            } else {
                Number::from_f64(f)
                    .map(Value::Number)
                    .unwrap_or(Value::Null)
            }
        }
        Y::Str(s) => Value::String(s),
        Y::Merge => Value::String("<<".into()),
        Y::Seq(items) => Value::Array(
            items
                .into_iter()
                .map(|i| to_json(i, depth + 1))
                .collect::<Result<_, _>>()?,
        ),
        Y::Map(entries) => {
            // go-yaml v2 applies entries in order: a `<<` merge overwrites
            // keys set before it, later keys overwrite merged ones, and in a
            // merge list earlier maps win.
            let mut m = Map::new();
            for (k, v) in entries {
                if let Y::Merge = k {
                    let mut sources = match v {
                        Y::Seq(items) => items,
                        other => vec![other],
                    };
                    sources.reverse();
                    for src in sources {
                        match to_json(src, depth + 1)? {
                            Value::Object(o) => m.extend(o),
                            _ => return Err("line 1, column 1: map merge requires map or sequence of maps as the value".into()),
                        }
                    }
                    continue;
                }
                m.insert(key_string(&k)?, to_json(v, depth + 1)?);
            }
            Value::Object(m)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn objs(text: &str) -> Vec<Value> {
        decode(text)
            .unwrap()
            .into_iter()
            .map(Value::Object)
            .collect()
    }

    #[test]
    fn splits_yaml_on_separators_and_skips_empty_documents() {
        let text =
            "---\na: 1\n---   # comment\n\n# only a comment\n---\nb: x\n...\n---\n{}\n---\nnull\n";
        assert_eq!(objs(text), vec![json!({"a": 1}), json!({"b": "x"})]);
    }

    #[test]
    fn rejects_text_after_a_separator() {
        let e = decode("a: 1\n--- b: 2\n").unwrap_err();
        assert!(
            e.0.starts_with("invalid Yaml document separator: b: 2"),
            "{e}"
        );
    }

    #[test]
    fn non_map_documents_are_errors() {
        let e = decode("a: 1\n---\n- x\n").unwrap_err();
        assert!(
            e.0.starts_with("document 2 is not an object (it is a list)"),
            "{e}"
        );
        assert!(
            decode("just text")
                .unwrap_err()
                .0
                .contains("it is a string")
        );
    }

    #[test]
    fn resolves_scalars_like_go_yaml_v2() {
        let got = objs(
            "a: yes\nb: 'yes'\nc: 010\nd: 0x1F\ne: 1_000\nf: 1.5\ng: ~\nh: 2024-01-02\ni: 1e3\nj: .5\nk: on\nl: 08\nm: !!str 12\np: \"1\"\no: -0b11\n",
        );
        assert_eq!(
            got,
            vec![json!({
                "a": true, "b": "yes", "c": 8, "d": 31, "e": 1000, "f": 1.5, "g": null,
                "h": "2024-01-02", "i": 1000, "j": 0.5, "k": true, "l": 8, "m": "12", "p": "1", "o": -3
            })]
        );
    }

    #[test]
    fn anchors_aliases_and_merge_keys() {
        let got = objs("base: &b {x: 1, z: 2}\nother:\n  <<: *b\n  z: 3\nlist: [*b]\n");
        assert_eq!(
            got,
            vec![
                json!({"base": {"x": 1, "z": 2}, "other": {"x": 1, "z": 3}, "list": [{"x": 1, "z": 2}]})
            ]
        );
    }

    #[test]
    fn non_string_keys_become_strings() {
        // go-yaml v2 resolves keys too: a bare `y` or `n` key is a boolean.
        assert_eq!(
            objs("1: a\ntrue: b\ny: c\n1.5: d\n"),
            vec![json!({"1": "a", "true": "c", "1.5": "d"})]
        );
    }

    #[test]
    fn json_streams() {
        assert_eq!(
            objs(" {\"a\": 1}\n{\"b\": [2]} {}"),
            vec![json!({"a": 1}), json!({"b": [2]})]
        );
        let e = decode("{\"a\": 1} [1]").unwrap_err();
        assert!(
            e.0.starts_with("document 2 is not an object (it is a list)"),
            "{e}"
        );
        assert!(
            decode("{\"a\": [")
                .unwrap_err()
                .0
                .starts_with("document 1: invalid JSON")
        );
        // Like apimachinery, a stream that is not valid JSON is retried as YAML.
        assert_eq!(objs("{\"a\": }"), vec![json!({"a": null})]);
        assert_eq!(
            objs("{\"a\": 1}\nb: 2\n"),
            vec![json!({"a": 1}), json!({"b": 2})]
        );
    }

    #[test]
    fn yaml_syntax_errors_name_document_and_line() {
        let e = decode("a: 1\n---\nb: 1\nc: [\n").unwrap_err();
        assert!(e.0.starts_with("document 2 (line "), "{e}");
    }

    #[test]
    fn block_scalars_stay_text() {
        assert_eq!(
            objs("s: |\n  line1\n  line2\nf: >\n  a\n  b\n"),
            vec![json!({"s": "line1\nline2\n", "f": "a b\n"})]
        );
    }
}
