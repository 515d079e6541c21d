//! [`Object`]: the object a mutator edits, read only as far as it is used.
//!
//! Building a full [`Value`] of an object and serialising it again costs tens of
//! microseconds for a few kilobytes of JSON inside a sandbox, far more than a typical
//! mutation (set a label, copy an annotation). `Object` instead walks the top-level
//! fields of the JSON text only until it meets the field a path asks for, parses just
//! that field, and writes everything it did not change back byte for byte. Objects
//! put `apiVersion`, `kind` and `metadata` first, so a plugin that edits metadata
//! never even reads `spec` or `data`: its cost does not grow with the object.
//!
//! [`Object::value_mut`] gives the whole object as a `Value` for plugins that want
//! one; from then on it is an ordinary document.
//!
//! Paths are those of [`crate::path`]; their first segment names the top-level field.
//! A first segment with a wildcard (`*`, `?`) reads every field.
//!
//! Objects from the host are valid JSON without duplicate keys. If a field turns out
//! to be malformed when it is reached, reading stops there, and the plugin's result
//! is rejected as invalid input.

use std::borrow::Cow;
use std::cell::{Cell, OnceCell};
use std::fmt;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::path::{self, PathError, Segment};

/// A JSON object read lazily, field by field. See the [module docs](self).
pub struct Object<'a> {
    /// The JSON text fields are read from.
    src: &'a str,
    /// Fields read so far (and fields the plugin added), in order. A linked list
    /// of write-once cells lets `&self` readers append fields they read while
    /// earlier fields stay borrowed.
    head: OnceCell<Box<Node<'a>>>,
    /// Offset in `src` where reading continues: after `{` or after the last value.
    pos: Cell<usize>,
    /// At least one field was read, so the next one follows a comma.
    started: Cell<bool>,
    /// Every field has been read (or reading stopped at an error).
    done: Cell<bool>,
    /// Why reading stopped early, if the text was malformed.
    error: OnceCell<String>,
    /// The whole object, once [`Object::value_mut`] or [`Object::replace`] made it
    /// the authority; the list is then empty.
    whole: Option<Value>,
}

struct Node<'a> {
    key: Cow<'a, str>,
    /// The field's JSON text as received; `None` for fields the plugin added.
    raw: Option<&'a RawValue>,
    /// The parsed value, filled on first read or write.
    parsed: OnceCell<Value>,
    /// Written to: serialise `parsed` rather than copying `raw`.
    dirty: bool,
    deleted: bool,
    next: OnceCell<Box<Node<'a>>>,
}

impl<'a> Node<'a> {
    fn new(key: Cow<'a, str>, raw: Option<&'a RawValue>) -> Node<'a> {
        Node {
            key,
            raw,
            parsed: OnceCell::new(),
            dirty: raw.is_none(),
            deleted: false,
            next: OnceCell::new(),
        }
    }

    fn value(&self) -> &Value {
        self.parsed.get_or_init(|| match self.raw {
            // RawValue only holds text that parsed as one JSON value.
            Some(raw) => serde_json::from_str(raw.get()).unwrap_or(Value::Null),
            None => Value::Null,
        })
    }

    fn value_mut(&mut self) -> &mut Value {
        self.value();
        self.dirty = true;
        self.parsed.get_mut().expect("filled just above")
    }
}

/// Why a text cannot be used as an [`Object`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ObjectError(String);

impl<'a> Object<'a> {
    /// Starts reading a JSON object. Only the opening brace is checked here; fields
    /// are read when they are first needed.
    pub fn parse(json: &'a str) -> Result<Object<'a>, ObjectError> {
        let start = skip_ws(json.as_bytes(), 0);
        match json.as_bytes().get(start) {
            Some(b'{') => Ok(Object {
                src: json,
                head: OnceCell::new(),
                pos: Cell::new(start + 1),
                started: Cell::new(false),
                done: Cell::new(false),
                error: OnceCell::new(),
                whole: None,
            }),
            None => Err(ObjectError("is empty; expected a JSON object".into())),
            Some(_) => Err(ObjectError(format!(
                "must be a JSON object, not {}",
                kind_of(&json[start..])
            ))),
        }
    }

    /// An object holding `value`, which must be a JSON object.
    pub fn from_value(value: Value) -> Result<Object<'static>, ObjectError> {
        if !value.is_object() {
            return Err(ObjectError(format!(
                "must be a JSON object, not {}",
                kind_of(&value.to_string())
            )));
        }
        let object = Object {
            src: "",
            head: OnceCell::new(),
            pos: Cell::new(0),
            started: Cell::new(false),
            done: Cell::new(true),
            error: OnceCell::new(),
            whole: Some(value),
        };
        Ok(object)
    }

    /// Why reading stopped before the end of the object, if the text was malformed.
    pub fn error(&self) -> Option<&str> {
        self.error.get().map(String::as_str)
    }

    /// The value at `path`, by reference (see [`path::get_ref`]).
    pub fn get_ref(&self, path: &str) -> Option<&Value> {
        if let Some(whole) = &self.whole {
            return path::get_ref(whole, path);
        }
        let segments = path::parse(path);
        let (first, rest) = segments.split_first()?;
        if first.is_hash() {
            return None;
        }
        path::get_ref_in(self.node_for_read(first)?.value(), rest)
    }

    /// The value at `path` (see [`path::get`]); also answers computed paths (`#`).
    pub fn get(&self, path: &str) -> Option<Value> {
        if let Some(whole) = &self.whole {
            return path::get(whole, path);
        }
        let segments = path::parse(path);
        let (first, rest) = segments.split_first()?;
        path::get_in(self.node_for_read(first)?.value(), rest)
    }

    /// The value at `path` coerced to a string like gjson (see [`path::get_string`]).
    pub fn get_string(&self, path: &str) -> String {
        path::to_gjson_string(self.get(path).as_ref())
    }

    /// Writes `new` at `path`, creating what is missing (see [`path::set`]).
    pub fn set(&mut self, path: &str, new: impl Into<Value>) -> Result<(), PathError> {
        let new = new.into();
        if let Some(whole) = &mut self.whole {
            return path::set(whole, path, new);
        }
        // Writable paths have no wildcards: the first segment is a key (on an
        // object even `-1` and numbers are keys).
        let segments = path::writable(path)?;
        let (first, rest) = segments
            .split_first()
            .expect("writable paths are not empty");
        let node = match self.node_mut(first.key()) {
            Some(node) => node,
            None => self.append(Node::new(Cow::Owned(first.key().to_owned()), None)),
        };
        path::set_in(node.value_mut(), rest, new, path)
    }

    /// Removes the value at `path` and returns it (see [`path::delete`]).
    pub fn delete(&mut self, path: &str) -> Result<Option<Value>, PathError> {
        if let Some(whole) = &mut self.whole {
            return path::delete(whole, path);
        }
        let segments = path::writable(path)?;
        let (first, rest) = segments
            .split_first()
            .expect("writable paths are not empty");
        let Some(node) = self.node_mut(first.key()) else {
            return Ok(None);
        };
        if rest.is_empty() {
            node.deleted = true;
            return Ok(Some(std::mem::take(node.value_mut())));
        }
        Ok(path::delete_in(node.value_mut(), rest))
    }

    /// The whole object as a `Value`, for edits beyond paths. From now on the object
    /// is kept as this value.
    pub fn value_mut(&mut self) -> &mut Value {
        if self.whole.is_none() {
            self.read_all();
            let mut map = Map::new();
            let mut next = self.head.take();
            while let Some(mut node) = next {
                next = node.next.take();
                if !node.deleted {
                    let value = std::mem::take(node.value_mut());
                    map.insert(node.key.into_owned(), value);
                }
            }
            self.whole = Some(Value::Object(map));
        }
        self.whole.as_mut().expect("filled just above")
    }

    /// Replaces the whole object. `value` should be a JSON object; the host rejects
    /// anything else.
    pub fn replace(&mut self, value: Value) {
        self.unlink();
        self.whole = Some(value);
    }

    /// A copy of the whole object as a `Value`.
    pub fn to_value(&self) -> Value {
        if let Some(whole) = &self.whole {
            return whole.clone();
        }
        let mut map = Map::new();
        for node in self.nodes() {
            map.insert(node.key.clone().into_owned(), node.value().clone());
        }
        Value::Object(map)
    }

    /// The object as a `Value`.
    pub fn into_value(mut self) -> Value {
        self.value_mut();
        self.whole.take().expect("set by value_mut")
    }

    /// The object as compact JSON. Fields not changed are copied as received, and
    /// the part of the text never read is appended as it is.
    pub fn to_json(&self) -> String {
        if let Some(whole) = &self.whole {
            return whole.to_string();
        }
        let mut out = Vec::with_capacity(self.src.len() + 64);
        out.push(b'{');
        let mut wrote = false;
        let mut cell = &self.head;
        while let Some(node) = cell.get() {
            cell = &node.next;
            if node.deleted {
                continue;
            }
            if wrote {
                out.push(b',');
            }
            wrote = true;
            write_json(&mut out, &*node.key);
            out.push(b':');
            match (node.raw, node.dirty) {
                (Some(raw), false) => out.extend_from_slice(raw.get().as_bytes()),
                _ => write_json(&mut out, node.value()),
            }
        }
        if self.done.get() && self.error.get().is_none() {
            out.push(b'}');
        } else {
            // Also after a read error: the malformed rest goes out as it came in,
            // so the result cannot pass for a complete object.
            // The unread rest: `,"spec":{…}}` (or `"spec":{…}}` when nothing was
            // read), which already ends the object.
            let mut tail = self.src[self.pos.get()..].trim();
            if !wrote {
                tail = tail.strip_prefix(',').unwrap_or(tail).trim_start();
            } else if !tail.starts_with(',') && !tail.starts_with('}') {
                out.push(b',');
            }
            out.extend_from_slice(tail.as_bytes());
        }
        // Every piece is a &str or serde_json output, both UTF-8; checking costs
        // well under a microsecond per 4 KB and keeps this crate free of unsafe.
        String::from_utf8(out).expect("JSON pieces are UTF-8")
    }

    // -- reading fields -------------------------------------------------------

    /// Every live field, reading the rest of the text as needed.
    fn nodes(&self) -> Nodes<'_, 'a> {
        Nodes {
            object: self,
            next: &self.head,
        }
    }

    fn node(&self, key: &str) -> Option<&Node<'a>> {
        self.nodes().find(|n| n.key == key)
    }

    /// The field a read path starts at: the one the first segment names, or for a
    /// wildcard the first matching key in sorted order, as on a `Value`.
    fn node_for_read(&self, first: &Segment) -> Option<&Node<'a>> {
        if first.is_pattern() {
            return self
                .nodes()
                .filter(|n| first.matches(&n.key))
                .min_by(|a, b| a.key.cmp(&b.key));
        }
        self.node(first.key())
    }

    fn node_mut(&mut self, key: &str) -> Option<&mut Node<'a>> {
        // Read up to the field first (shared borrow), then walk to it mutably.
        self.node(key)?;
        let mut cell = &mut self.head;
        loop {
            let node = cell.get_mut()?;
            if !node.deleted && node.key == key {
                return Some(node);
            }
            cell = &mut node.next;
        }
    }

    /// Adds a field after all others (which are read first: it must be new).
    fn append(&mut self, node: Node<'a>) -> &mut Node<'a> {
        self.read_all();
        let mut cell = &mut self.head;
        while cell.get().is_some() {
            cell = &mut cell.get_mut().expect("checked above").next;
        }
        let _ = cell.set(Box::new(node));
        cell.get_mut().expect("set just above")
    }

    fn read_all(&self) {
        for _ in self.nodes() {}
    }

    /// Reads the next field from the text, or `None` at the end (or an error).
    fn read_next(&self) -> Option<Node<'a>> {
        if self.done.get() {
            return None;
        }
        match self.try_read_next() {
            Ok(Some(node)) => Some(node),
            Ok(None) => {
                self.done.set(true);
                None
            }
            Err(e) => {
                let _ = self.error.set(e);
                self.done.set(true);
                None
            }
        }
    }

    fn try_read_next(&self) -> Result<Option<Node<'a>>, String> {
        let src = self.src;
        let b = src.as_bytes();
        let mut p = skip_ws(b, self.pos.get());
        match (b.get(p), self.started.get()) {
            (Some(b'}'), _) => return Ok(None),
            (Some(b','), true) => p = skip_ws(b, p + 1),
            (Some(b'"'), false) => {}
            (None, _) => return Err("the object ends before its closing '}'".into()),
            (Some(&c), _) => {
                return Err(format!(
                    "unexpected {:?} at byte {p}, expected {}",
                    c as char,
                    if self.started.get() {
                        "',' or '}'"
                    } else {
                        "a field name or '}'"
                    }
                ));
            }
        }
        match b.get(p) {
            Some(b'"') => {}
            None => return Err("the object ends before its closing '}'".into()),
            Some(_) => return Err(format!("expected a field name at byte {p}")),
        }
        // The key: up to the closing quote, stepping over escapes.
        let start = p;
        let mut q = p + 1;
        let mut escaped = false;
        loop {
            match b.get(q) {
                Some(b'"') => break,
                Some(b'\\') => {
                    escaped = true;
                    q += 2;
                }
                Some(_) => q += 1,
                None => return Err(format!("unterminated field name at byte {start}")),
            }
        }
        let key: Cow<'a, str> = if escaped {
            Cow::Owned(
                serde_json::from_str::<String>(&src[start..=q])
                    .map_err(|e| format!("field name at byte {start}: {e}"))?,
            )
        } else {
            Cow::Borrowed(&src[start + 1..q])
        };
        let colon = skip_ws(b, q + 1);
        if b.get(colon) != Some(&b':') {
            return Err(format!("expected ':' after field name {key:?}"));
        }
        let mut de = serde_json::Deserializer::from_str(&src[colon + 1..]);
        let raw = <&'a RawValue>::deserialize(&mut de)
            .map_err(|e| format!("field {key:?} is not valid JSON: {e}"))?;
        // RawValue borrows from `src`: its end is where reading continues.
        let end = raw.get().as_ptr() as usize - src.as_ptr() as usize + raw.get().len();
        self.pos.set(end);
        self.started.set(true);
        Ok(Some(Node::new(key, Some(raw))))
    }

    /// Drops the field list iteratively (a long list would recurse deeply).
    fn unlink(&mut self) {
        let mut next = self.head.take();
        while let Some(mut node) = next {
            next = node.next.take();
        }
    }
}

impl Drop for Object<'_> {
    fn drop(&mut self) {
        self.unlink();
    }
}

struct Nodes<'o, 'a> {
    object: &'o Object<'a>,
    next: &'o OnceCell<Box<Node<'a>>>,
}

impl<'o, 'a> Iterator for Nodes<'o, 'a> {
    type Item = &'o Node<'a>;

    fn next(&mut self) -> Option<&'o Node<'a>> {
        loop {
            let node = match self.next.get() {
                Some(node) => node,
                None => {
                    // The end of the list is the end of what was read: read on.
                    let node = self.object.read_next()?;
                    self.next.get_or_init(|| Box::new(node))
                }
            };
            self.next = &node.next;
            if !node.deleted {
                return Some(node);
            }
        }
    }
}

fn skip_ws(b: &[u8], mut p: usize) -> usize {
    while matches!(b.get(p), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        p += 1;
    }
    p
}

fn write_json<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    serde_json::to_writer(out, value).expect("JSON values and strings always serialise");
}

/// What a JSON text holds, by its first character, for error messages.
fn kind_of(json: &str) -> &'static str {
    match json.trim_start().bytes().next() {
        Some(b'[') => "an array",
        Some(b'"') => "a string",
        Some(b't' | b'f') => "a boolean",
        Some(b'n') => "null",
        Some(b'{') => "an object",
        Some(b'-' | b'0'..=b'9') => "a number",
        _ => "text that is not JSON",
    }
}

impl fmt::Debug for Object<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_json())
    }
}

impl PartialEq<Value> for Object<'_> {
    fn eq(&self, other: &Value) -> bool {
        &self.to_value() == other
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const DOC: &str = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns","labels":{"app":"x"},"annotations":{"example.com/owner":"me"}},"data":{"k":"v","n":[1,2,{"x":null}]},"weird key.with\"escapes":true}"#;

    fn value() -> Value {
        serde_json::from_str(DOC).unwrap()
    }

    #[test]
    fn untouched_objects_round_trip_byte_for_byte() {
        let o = Object::parse(DOC).unwrap();
        assert_eq!(o.to_json(), DOC);
        // Reading does not change the output either.
        assert_eq!(o.get_string("metadata.name"), "a");
        assert_eq!(o.to_json(), DOC);
        let spaced = "  {\n \"a\" : [1, 2] ,\n \"b\": {\"c\": 1}\n}\n";
        let o = Object::parse(spaced).unwrap();
        assert_eq!(o.get("a"), Some(json!([1, 2])));
        let out: Value = serde_json::from_str(&o.to_json()).unwrap();
        assert_eq!(out, json!({"a": [1, 2], "b": {"c": 1}}));
        assert_eq!(Object::parse("{}").unwrap().to_json(), "{}");
        assert_eq!(Object::parse(" { } ").unwrap().to_value(), json!({}));
    }

    #[test]
    fn fields_after_the_last_one_used_are_never_read() {
        // Everything after metadata is not JSON at all, yet editing metadata works
        // and the rest goes out untouched.
        let text = r#"{"kind":"K","metadata":{"name":"a"},"spec": <not json> }"#;
        let mut o = Object::parse(text).unwrap();
        o.set("metadata.labels.team", "x").unwrap();
        assert_eq!(o.error(), None);
        assert_eq!(
            o.to_json(),
            r#"{"kind":"K","metadata":{"labels":{"team":"x"},"name":"a"},"spec": <not json> }"#
        );
    }

    #[test]
    fn malformed_fields_are_reported_when_reached() {
        let mut o = Object::parse(r#"{"a":1,"b":[1,}"#).unwrap();
        assert_eq!(o.get("a"), Some(json!(1)));
        assert_eq!(o.error(), None);
        assert_eq!(o.get("b"), None);
        let err = o.error().unwrap().to_string();
        assert!(err.contains("field \"b\" is not valid JSON"), "{err}");
        // The output then cannot pass for a complete object.
        o.set("a", 2).unwrap();
        assert!(serde_json::from_str::<Value>(&o.to_json()).is_err());

        for (text, want) in [
            (r#"{"a":1 "b":2}"#, "expected ',' or '}'"),
            (r#"{"a" 1}"#, "expected ':'"),
            (r#"{"a":1,"#, "ends before its closing"),
            (r#"{"a:1}"#, "unterminated field name"),
            (r#"{1:2}"#, "expected a field name or '}'"),
        ] {
            let o = Object::parse(text).unwrap();
            o.read_all();
            let err = o.error().unwrap_or_else(|| panic!("{text}: no error"));
            assert!(err.contains(want), "{text}: {err}");
        }
    }

    #[test]
    fn non_objects_are_rejected_up_front() {
        for (text, want) in [
            ("[1]", "must be a JSON object, not an array"),
            ("\"s\"", "not a string"),
            ("12", "not a number"),
            ("null", "not null"),
            ("", "is empty"),
            ("  ", "is empty"),
            ("<x>", "not text that is not JSON"),
        ] {
            let err = Object::parse(text).unwrap_err().to_string();
            assert!(err.contains(want), "{text:?}: {err}");
        }
        assert!(Object::from_value(json!([1])).is_err());
    }

    #[test]
    fn escaped_keys_are_found_and_written_back_escaped() {
        let mut o = Object::parse(DOC).unwrap();
        assert_eq!(o.get(r#"weird key\.with"escapes"#), Some(json!(true)));
        o.set(r#"weird key\.with"escapes"#, false).unwrap();
        o.set("new\"key", 1).unwrap();
        let out: Value = serde_json::from_str(&o.to_json()).unwrap();
        assert_eq!(out["weird key.with\"escapes"], json!(false));
        assert_eq!(out["new\"key"], json!(1));
    }

    #[test]
    fn deleting_every_field_read_keeps_the_unread_rest_valid() {
        let mut o = Object::parse(DOC).unwrap();
        assert_eq!(o.delete("apiVersion").unwrap(), Some(json!("v1")));
        assert_eq!(o.delete("kind").unwrap(), Some(json!("ConfigMap")));
        let out: Value = serde_json::from_str(&o.to_json()).unwrap();
        let mut want = value();
        want.as_object_mut().unwrap().remove("apiVersion");
        want.as_object_mut().unwrap().remove("kind");
        assert_eq!(out, want);
        // Deleting a missing field or inside one reads as far as needed.
        assert_eq!(o.delete("nope").unwrap(), None);
        assert_eq!(o.delete("data.n.2.x").unwrap(), Some(Value::Null));
        assert_eq!(o.delete("data.n.-1").unwrap(), Some(json!({})));
        assert_eq!(o.get("data.n"), Some(json!([1, 2])));
        assert_eq!(o.get("apiVersion"), None);
    }

    #[test]
    fn whole_value_access_switches_to_a_document() {
        let mut o = Object::parse(DOC).unwrap();
        o.set("metadata.labels.team", "t").unwrap();
        o.delete("data").unwrap();
        let v = o.value_mut();
        v["spec"] = json!({"replicas": 2});
        assert_eq!(o.get("spec.replicas"), Some(json!(2)));
        o.set("spec.paused", true).unwrap();
        let mut want = value();
        want["metadata"]["labels"]["team"] = json!("t");
        want.as_object_mut().unwrap().remove("data");
        want["spec"] = json!({"replicas": 2, "paused": true});
        assert_eq!(o.to_value(), want);
        assert_eq!(serde_json::from_str::<Value>(&o.to_json()).unwrap(), want);
        o.replace(json!({"a": 1}));
        assert_eq!(o.into_value(), json!({"a": 1}));
    }

    #[test]
    fn wildcards_and_hash_read_like_a_value() {
        let mut o = Object::parse(DOC).unwrap();
        let v = value();
        for p in [
            "meta*.name",
            "k?nd",
            "*.k",
            "data.n.#",
            "data.n.#.x",
            "#",
            "data.*",
        ] {
            assert_eq!(o.get(p), path::get(&v, p), "get {p}");
            assert_eq!(o.get_ref(p), path::get_ref(&v, p), "get_ref {p}");
        }
        assert_eq!(
            o.set("a*", 1),
            Err(PathError::Wildcard { path: "a*".into() })
        );
    }

    /// Every operation on an Object gives what the same operation gives on a Value.
    #[test]
    fn operations_match_value_semantics() {
        let paths = [
            "apiVersion",
            "metadata",
            "metadata.name",
            "metadata.labels.app",
            "metadata.labels.new",
            r"metadata.annotations.example\.com/owner",
            "data.n.1",
            "data.n.5",
            "data.n.-1",
            "data.k.deeper",
            "fresh.path.0.x",
            "fresh",
            ":7",
            "7.a",
            "-1",
            "",
        ];
        let docs = [DOC, "{}", r#"{"data":{"n":[]},"7":{"a":1}}"#];
        for doc in docs {
            for (i, p1) in paths.iter().enumerate() {
                for p2 in paths.iter().skip(i % 3) {
                    let mut o = Object::parse(doc).unwrap();
                    let mut v: Value = serde_json::from_str(doc).unwrap();
                    let a = (
                        o.set(p1, json!({"s": p1})),
                        path::set(&mut v, p1, json!({"s": p1})),
                    );
                    assert_eq!(a.0, a.1, "set {p1} on {doc}");
                    assert_eq!(o.get(p2), path::get(&v, p2), "get {p2} after set {p1}");
                    let d = (o.delete(p2), path::delete(&mut v, p2));
                    assert_eq!(d.0, d.1, "delete {p2} after set {p1} on {doc}");
                    assert_eq!(o.to_value(), v, "value after set {p1}, delete {p2}");
                    let out: Value = serde_json::from_str(&o.to_json())
                        .unwrap_or_else(|e| panic!("set {p1}, delete {p2}: {e}: {}", o.to_json()));
                    assert_eq!(out, v, "json after set {p1}, delete {p2} on {doc}");
                }
            }
        }
    }

    #[test]
    fn long_field_lists_drop_without_deep_recursion() {
        let text = format!(
            "{{{}}}",
            (0..200_000)
                .map(|i| format!("\"k{i}\":{i}"))
                .collect::<Vec<_>>()
                .join(",")
        );
        let o = Object::parse(&text).unwrap();
        assert_eq!(o.get("k199999"), Some(json!(199_999)));
        drop(o);
    }
}
