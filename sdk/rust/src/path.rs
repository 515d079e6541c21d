//! Read and write JSON values by dotted path, with the semantics of Go's gjson (reads)
//! and sjson (writes) that upstream PublishedResource mutations use.
//!
//! Path syntax:
//! - Keys are separated by `.`: `metadata.labels.app`.
//! - A number selects an array element: `spec.containers.0.image`. On an object a number
//!   is an ordinary key.
//! - `\` escapes the next character: `metadata.annotations.example\.com/owner`.
//! - A leading `:` forces a segment to be an object key even if it is numeric
//!   (`users.:2313` writes key "2313" rather than array index 2313).
//! - Reads only: `*` and `?` match any run of characters / one character in a key (the
//!   first matching key wins), and `#` is an array's length, or, followed by more path,
//!   maps the rest of the path over every element (`spec.items.#.name`).
//! - Writes only: `-1` appends to an array (for [`delete`]: removes the last element).
//!   Writing to a missing path creates it: numeric segments create arrays (padded with
//!   `null`), others create objects; a scalar in the way is replaced.
//!
//! gjson's query (`#(...)`), modifier (`@`) and multipath syntaxes are not supported.
use serde_json::{Map, Value};

/// Why a path cannot be written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("the path is empty; name the field to write, e.g. \"spec.replicas\"")]
    Empty,
    #[error(
        "path {path:?} contains a wildcard (* or ?), which can only be used to read; escape it as \\* or \\? if it is part of a key"
    )]
    Wildcard { path: String },
    #[error(
        "path {path:?} contains '#', which can only be used to read; escape it as \\# if it is part of a key"
    )]
    ArrayLength { path: String },
    #[error(
        "path {path:?}: cannot use key {key:?} on an array; use a numeric index or -1 to append"
    )]
    NotAnIndex { path: String, key: String },
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Pattern {
    Literal(char),
    AnyRun,
    AnyOne,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Segment {
    /// The key with escapes removed.
    key: String,
    /// A leading `:` was given: never treat the key as an array index.
    force_key: bool,
    /// Set when the key contains an unescaped `*` or `?`.
    pattern: Option<Vec<Pattern>>,
    /// The segment is exactly an unescaped `#`.
    hash: bool,
}

impl Segment {
    /// The key with escapes removed.
    pub(crate) fn key(&self) -> &str {
        &self.key
    }

    pub(crate) fn is_pattern(&self) -> bool {
        self.pattern.is_some()
    }

    pub(crate) fn is_hash(&self) -> bool {
        self.hash
    }

    fn index(&self) -> Option<usize> {
        if self.force_key || self.pattern.is_some() || self.hash {
            return None;
        }
        parse_index(&self.key)
    }

    fn is_append(&self) -> bool {
        !self.force_key && self.key == "-1"
    }

    pub(crate) fn matches(&self, candidate: &str) -> bool {
        match &self.pattern {
            Some(pattern) => glob(pattern, &candidate.chars().collect::<Vec<_>>()),
            None => self.key == candidate,
        }
    }
}

fn parse_index(key: &str) -> Option<usize> {
    if key.is_empty() || !key.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    key.parse().ok()
}

fn glob(pattern: &[Pattern], text: &[char]) -> bool {
    match pattern.split_first() {
        None => text.is_empty(),
        Some((Pattern::AnyRun, rest)) => (0..=text.len()).any(|skip| glob(rest, &text[skip..])),
        Some((Pattern::AnyOne, rest)) => !text.is_empty() && glob(rest, &text[1..]),
        Some((Pattern::Literal(c), rest)) => text.first() == Some(c) && glob(rest, &text[1..]),
    }
}

pub(crate) fn parse(path: &str) -> Vec<Segment> {
    let bytes = path.as_bytes();
    let mut segments = Vec::with_capacity(4);
    let mut start = 0;
    loop {
        // A segment runs to the next unescaped '.'. Most are plain keys, taken
        // as they are (plugins parse paths on every call).
        let mut end = start;
        let mut plain = !matches!(bytes.get(start), Some(b':'));
        while end < bytes.len() && bytes[end] != b'.' {
            match bytes[end] {
                b'\\' => {
                    plain = false;
                    end += 1;
                }
                b'*' | b'?' | b'#' => plain = false,
                _ => {}
            }
            end += 1;
        }
        let end = end.min(bytes.len());
        let raw = &path[start..end];
        segments.push(if plain {
            Segment {
                key: raw.to_owned(),
                force_key: false,
                pattern: None,
                hash: false,
            }
        } else {
            parse_segment(raw)
        });
        if end >= bytes.len() {
            return segments;
        }
        start = end + 1;
    }
}

/// One segment with escapes, wildcards, `#` or a leading `:`.
fn parse_segment(raw: &str) -> Segment {
    let mut seg = Segment {
        key: String::with_capacity(raw.len()),
        force_key: false,
        pattern: None,
        hash: false,
    };
    let body = match raw.strip_prefix(':') {
        Some(body) => {
            seg.force_key = true;
            body
        }
        None => raw,
    };
    let mut chars = body.chars();
    // Built only once a wildcard appears (everything before it is literal).
    let mut pattern: Option<Vec<Pattern>> = None;
    let mut escaped_any = false;
    while let Some(c) = chars.next() {
        let (ch, part) = match c {
            '\\' => match chars.next() {
                Some(next) => {
                    escaped_any = true;
                    (next, Pattern::Literal(next))
                }
                None => continue,
            },
            '*' => (c, Pattern::AnyRun),
            '?' => (c, Pattern::AnyOne),
            _ => (c, Pattern::Literal(c)),
        };
        if pattern.is_none() && part != Pattern::Literal(ch) {
            pattern = Some(seg.key.chars().map(Pattern::Literal).collect());
        }
        if let Some(p) = &mut pattern {
            p.push(part);
        }
        seg.key.push(ch);
    }
    seg.pattern = pattern;
    seg.hash = seg.key == "#" && !escaped_any;
    seg
}

/// The value at `path`, by reference. Returns `None` when nothing is there, and for
/// paths that compute a value (`#`); use [`get`] for those.
pub fn get_ref<'a>(value: &'a Value, path: &str) -> Option<&'a Value> {
    get_ref_in(value, &parse(path))
}

pub(crate) fn get_ref_in<'a>(value: &'a Value, segments: &[Segment]) -> Option<&'a Value> {
    let mut current = value;
    for seg in segments {
        if seg.hash {
            return None;
        }
        current = child(current, seg)?;
    }
    Some(current)
}

/// The value at `path` (gjson `Get`). `None` when nothing is there.
pub fn get(value: &Value, path: &str) -> Option<Value> {
    get_in(value, &parse(path))
}

pub(crate) fn get_in(value: &Value, segments: &[Segment]) -> Option<Value> {
    let Some((seg, rest)) = segments.split_first() else {
        return Some(value.clone());
    };
    if let (Value::Array(items), true) = (value, seg.hash) {
        if rest.is_empty() {
            return Some(Value::from(items.len()));
        }
        return Some(Value::Array(
            items.iter().filter_map(|item| get_in(item, rest)).collect(),
        ));
    }
    get_in(child(value, seg)?, rest)
}

fn child<'a>(value: &'a Value, seg: &Segment) -> Option<&'a Value> {
    match value {
        Value::Object(map) => {
            if seg.pattern.is_some() {
                map.iter().find(|(k, _)| seg.matches(k)).map(|(_, v)| v)
            } else {
                map.get(&seg.key)
            }
        }
        Value::Array(items) => items.get(seg.index()?),
        _ => None,
    }
}

/// The value at `path` as a string, coerced like gjson's `Result.String()`: missing and
/// `null` give `""`, booleans and numbers their JSON text, strings themselves, and
/// objects and arrays their compact JSON.
pub fn get_string(value: &Value, path: &str) -> String {
    to_gjson_string(get(value, path).as_ref())
}

/// gjson's `Result.String()` coercion of a value (see [`get_string`]).
pub fn to_gjson_string(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => String::new(),
        Some(Value::Bool(b)) => b.to_string(),
        Some(Value::Number(n)) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => i.to_string(),
            (_, Some(u), _) => u.to_string(),
            // Rust's Display for f64 is the shortest round-tripping decimal without an
            // exponent, which is what Go's FormatFloat(f, 'f', -1, 64) prints.
            (_, _, Some(f)) => f.to_string(),
            _ => n.to_string(),
        },
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

/// Escapes one object key for use as a path segment, so that dots, wildcards and a
/// leading `:` in it are taken literally: `key("example.com/team")` is
/// `example\.com/team`, and `format!("metadata.labels.{}", path::key(k))` names label `k`.
pub fn key(k: &str) -> String {
    let mut out = String::with_capacity(k.len() + 4);
    for (i, c) in k.chars().enumerate() {
        if matches!(c, '\\' | '.' | '*' | '?' | '#') || (c == ':' && i == 0) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Checks that `path` can be used with [`set`] and [`delete`] (no wildcards, no `#`,
/// not empty), e.g. when validating a config.
pub fn check_writable(path: &str) -> Result<(), PathError> {
    writable(path).map(drop)
}

pub(crate) fn writable(path: &str) -> Result<Vec<Segment>, PathError> {
    if path.is_empty() {
        return Err(PathError::Empty);
    }
    let segments = parse(path);
    for seg in &segments {
        if seg.pattern.is_some() {
            return Err(PathError::Wildcard { path: path.into() });
        }
        if seg.hash {
            return Err(PathError::ArrayLength { path: path.into() });
        }
    }
    Ok(segments)
}

/// Writes `new` at `path` (sjson `Set`), creating missing objects and arrays on the way.
pub fn set(value: &mut Value, path: &str, new: Value) -> Result<(), PathError> {
    let segments = writable(path)?;
    set_in(value, &segments, new, path)
}

pub(crate) fn set_in(
    value: &mut Value,
    segments: &[Segment],
    new: Value,
    path: &str,
) -> Result<(), PathError> {
    let Some((seg, rest)) = segments.split_first() else {
        *value = new;
        return Ok(());
    };
    // Descend into an existing child when there is one.
    let existing = match value {
        Value::Object(map) => map.get_mut(&seg.key),
        Value::Array(items) => match seg.index() {
            Some(i) => items.get_mut(i),
            None => None,
        },
        _ => None,
    };
    if let Some(child) = existing {
        return set_in(child, rest, new, path);
    }
    // Otherwise build the missing part.
    let index = seg.index();
    if !value.is_object() && !value.is_array() {
        *value = if index.is_some() {
            Value::Array(Vec::new())
        } else {
            Value::Object(Map::new())
        };
    }
    match value {
        Value::Object(map) => {
            map.insert(seg.key.clone(), build(rest, new));
        }
        Value::Array(items) => match index {
            Some(i) => {
                items.resize(i, Value::Null);
                items.push(build(rest, new));
            }
            None if seg.is_append() => items.push(build(rest, new)),
            None => {
                return Err(PathError::NotAnIndex {
                    path: path.into(),
                    key: seg.key.clone(),
                });
            }
        },
        _ => unreachable!("replaced by an object or array above"),
    }
    Ok(())
}

fn build(segments: &[Segment], new: Value) -> Value {
    let Some((seg, rest)) = segments.split_first() else {
        return new;
    };
    if let Some(i) = seg.index() {
        let mut items = vec![Value::Null; i];
        items.push(build(rest, new));
        Value::Array(items)
    } else if seg.is_append() {
        Value::Array(vec![build(rest, new)])
    } else {
        let mut map = Map::new();
        map.insert(seg.key.clone(), build(rest, new));
        Value::Object(map)
    }
}

/// Removes the value at `path` (sjson `Delete`) and returns it; `Ok(None)` when there
/// was nothing to remove. On an array `-1` removes the last element.
pub fn delete(value: &mut Value, path: &str) -> Result<Option<Value>, PathError> {
    let segments = writable(path)?;
    Ok(delete_in(value, &segments))
}

/// [`delete`] on a parsed, writable, non-empty path.
pub(crate) fn delete_in(value: &mut Value, segments: &[Segment]) -> Option<Value> {
    let (last, parents) = segments
        .split_last()
        .expect("parse yields at least one segment");
    let mut current = value;
    for seg in parents {
        let next = match current {
            Value::Object(map) => map.get_mut(&seg.key),
            Value::Array(items) => match seg.index() {
                Some(i) => items.get_mut(i),
                None => None,
            },
            _ => None,
        };
        match next {
            Some(next) => current = next,
            None => return None,
        }
    }
    match current {
        Value::Object(map) => map.remove(&last.key),
        Value::Array(items) => match last.index() {
            Some(i) if i < items.len() => Some(items.remove(i)),
            None if last.is_append() => items.pop(),
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn key_escapes_what_paths_would_interpret() {
        assert_eq!(key("example.com/team"), "example\\.com/team");
        assert_eq!(key(":1"), "\\:1");
        assert_eq!(key("a:b*?#"), "a:b\\*\\?\\#");
        let mut v = json!({});
        for k in ["example.com/team", ":1", "a*b", "#"] {
            set(&mut v, &format!("labels.{}", key(k)), json!(k)).unwrap();
            assert_eq!(get(&v, &format!("labels.{}", key(k))), Some(json!(k)), "{k}");
        }
        assert_eq!(
            v,
            json!({"labels": {"example.com/team": "example.com/team", ":1": ":1", "a*b": "a*b", "#": "#"}})
        );
    }

    fn doc() -> Value {
        json!({
            "name": {"first": "Tom", "last": "Anderson"},
            "age": 37,
            "children": ["Sara", "Alex", "Jack"],
            "fav.movie": "Deer Hunter",
            "friends": [
                {"first": "James", "last": "Murphy"},
                {"first": "Roger", "last": "Craig"}
            ],
            "users": {"2313": {"name": "Sara"}}
        })
    }

    #[test]
    fn reads_keys_indices_and_escapes() {
        let d = doc();
        assert_eq!(get(&d, "name.last"), Some(json!("Anderson")));
        assert_eq!(get(&d, "age"), Some(json!(37)));
        assert_eq!(get(&d, "children.1"), Some(json!("Alex")));
        assert_eq!(get(&d, "friends.1.last"), Some(json!("Craig")));
        assert_eq!(get(&d, r"fav\.movie"), Some(json!("Deer Hunter")));
        assert_eq!(get(&d, "users.2313.name"), Some(json!("Sara")));
        assert_eq!(get(&d, "users.:2313.name"), Some(json!("Sara")));
        assert_eq!(get(&d, "children.:1"), None);
        assert_eq!(get(&d, "children.7"), None);
        assert_eq!(get(&d, "name.first.x"), None);
        assert_eq!(get(&d, "missing"), None);
        assert_eq!(get_ref(&d, "friends.0.first"), Some(&json!("James")));
    }

    #[test]
    fn reads_hash_and_wildcards() {
        let d = doc();
        assert_eq!(get(&d, "children.#"), Some(json!(3)));
        assert_eq!(get(&d, "friends.#.first"), Some(json!(["James", "Roger"])));
        assert_eq!(get(&d, "name.fi*"), Some(json!("Tom")));
        assert_eq!(get(&d, "name.l?st"), Some(json!("Anderson")));
        assert_eq!(get(&d, r"name.l\?st"), None);
        assert_eq!(get_ref(&d, "children.#"), None);
    }

    #[test]
    fn string_coercion_matches_gjson() {
        let d = json!({"i": 24, "f": 1.5, "whole": 24.0, "b": true, "n": null, "o": {"b": 1, "a": [1, "x"]}});
        assert_eq!(get_string(&d, "i"), "24");
        assert_eq!(get_string(&d, "f"), "1.5");
        assert_eq!(get_string(&d, "whole"), "24");
        assert_eq!(get_string(&d, "b"), "true");
        assert_eq!(get_string(&d, "n"), "");
        assert_eq!(get_string(&d, "missing"), "");
        assert_eq!(get_string(&d, "o"), r#"{"a":[1,"x"],"b":1}"#);
    }

    #[test]
    fn sets_like_sjson() {
        let mut d = json!({"name": {"last": "Anderson"}});
        set(&mut d, "name.first", json!("Sara")).unwrap();
        set(&mut d, "name.last", json!("Smith")).unwrap();
        assert_eq!(d, json!({"name": {"first": "Sara", "last": "Smith"}}));

        let mut d = json!({"friends": ["Andy", "Carol"]});
        set(&mut d, "friends.2", json!("Sara")).unwrap();
        set(&mut d, "friends.-1", json!("Tom")).unwrap();
        set(&mut d, "friends.6", json!("Eve")).unwrap();
        assert_eq!(
            d,
            json!({"friends": ["Andy", "Carol", "Sara", "Tom", null, null, "Eve"]})
        );

        let mut d = json!(null);
        set(&mut d, "name.last", json!("Anderson")).unwrap();
        assert_eq!(d, json!({"name": {"last": "Anderson"}}));

        let mut d = json!({});
        set(&mut d, "list.2.name", json!("x")).unwrap();
        set(&mut d, "appended.-1", json!(1)).unwrap();
        set(&mut d, "users.:2313.name", json!("Sara")).unwrap();
        set(
            &mut d,
            r"metadata.annotations.example\.com/owner",
            json!("me"),
        )
        .unwrap();
        assert_eq!(
            d,
            json!({
                "list": [null, null, {"name": "x"}],
                "appended": [1],
                "users": {"2313": {"name": "Sara"}},
                "metadata": {"annotations": {"example.com/owner": "me"}}
            })
        );
    }

    #[test]
    fn set_replaces_scalars_in_the_way_and_changes_types() {
        let mut d = json!({"spec": "text"});
        set(&mut d, "spec.replicas", json!(3)).unwrap();
        assert_eq!(d, json!({"spec": {"replicas": 3}}));
        set(&mut d, "spec", json!("new-value")).unwrap();
        assert_eq!(d, json!({"spec": "new-value"}));
    }

    #[test]
    fn set_rejects_read_only_syntax() {
        let mut d = json!({"a": []});
        assert_eq!(
            set(&mut d, "a.*", json!(1)),
            Err(PathError::Wildcard { path: "a.*".into() })
        );
        assert_eq!(
            set(&mut d, "a.#", json!(1)),
            Err(PathError::ArrayLength { path: "a.#".into() })
        );
        assert_eq!(
            set(&mut d, "a.name", json!(1)),
            Err(PathError::NotAnIndex {
                path: "a.name".into(),
                key: "name".into()
            })
        );
        assert_eq!(set(&mut d, "", json!(1)), Err(PathError::Empty));
        assert_eq!(
            check_writable("a.*.b"),
            Err(PathError::Wildcard {
                path: "a.*.b".into()
            })
        );
        assert_eq!(check_writable(r"spec.a\.b.0"), Ok(()));
        set(&mut d, r"a\*", json!(1)).unwrap();
        assert_eq!(d, json!({"a": [], "a*": 1}));
    }

    #[test]
    fn deletes_keys_and_elements() {
        let mut d = json!({"spec": {"secretName": "foo"}});
        assert_eq!(
            delete(&mut d, "spec.secretName").unwrap(),
            Some(json!("foo"))
        );
        assert_eq!(d, json!({"spec": {}}));

        let mut d = json!({"spec": [1, 2, 3]});
        assert_eq!(delete(&mut d, "spec.1").unwrap(), Some(json!(2)));
        assert_eq!(d, json!({"spec": [1, 3]}));
        assert_eq!(delete(&mut d, "spec.-1").unwrap(), Some(json!(3)));
        assert_eq!(d, json!({"spec": [1]}));
        assert_eq!(delete(&mut d, "spec.9").unwrap(), None);
        assert_eq!(delete(&mut d, "nothing.here").unwrap(), None);
        assert_eq!(d, json!({"spec": [1]}));
    }
}
