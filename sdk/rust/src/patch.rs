//! JSON Merge Patch (RFC 7386) and JSON Patch (RFC 6902) application.
use serde_json::{Map, Value};

/// Applies a JSON merge patch (RFC 7386) to `target` in place: objects merge key by
/// key, `null` removes a key, anything else replaces.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let map = target.as_object_mut().expect("made an object above");
    for (key, value) in patch {
        if value.is_null() {
            map.remove(key);
        } else {
            merge_patch(map.entry(key.clone()).or_insert(Value::Null), value);
        }
    }
}

/// Why a JSON patch could not be applied. `index` is the position of the failing
/// operation in the patch.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("JSON patch operation {index}: {message}")]
pub struct PatchError {
    pub index: usize,
    pub message: String,
}

/// Applies a JSON patch (RFC 6902: add, remove, replace, move, copy, test) to `target`.
/// All or nothing: on error `target` is left unchanged.
pub fn json_patch(target: &mut Value, patch: &Value) -> Result<(), PatchError> {
    let Value::Array(ops) = patch else {
        return Err(PatchError {
            index: 0,
            message: "a JSON patch must be an array of operations".into(),
        });
    };
    let mut doc = target.clone();
    for (index, op) in ops.iter().enumerate() {
        apply_op(&mut doc, op).map_err(|message| PatchError { index, message })?;
    }
    *target = doc;
    Ok(())
}

fn apply_op(doc: &mut Value, op: &Value) -> Result<(), String> {
    let field = |name: &str| -> Result<&str, String> {
        op.get(name)
            .and_then(Value::as_str)
            .ok_or_else(|| format!("missing string field {name:?}"))
    };
    let value = || {
        op.get("value")
            .cloned()
            .ok_or_else(|| "missing field \"value\"".to_string())
    };
    let kind = field("op")?;
    let path = parse_pointer(field("path")?)?;
    match kind {
        "add" => add(doc, &path, value()?),
        "remove" => remove(doc, &path).map(drop),
        "replace" => {
            let slot = lookup_mut(doc, &path)?;
            *slot = value()?;
            Ok(())
        }
        "move" => {
            let from = parse_pointer(field("from")?)?;
            if path.len() > from.len() && path[..from.len()] == from[..] {
                return Err("cannot move a value into one of its own children".into());
            }
            let moved = remove(doc, &from)?;
            add(doc, &path, moved)
        }
        "copy" => {
            let from = parse_pointer(field("from")?)?;
            let copied = lookup_mut(doc, &from)?.clone();
            add(doc, &path, copied)
        }
        "test" => {
            let expected = value()?;
            let actual = lookup_mut(doc, &path)?;
            if json_equal(actual, &expected) {
                Ok(())
            } else {
                Err(format!(
                    "test failed: value is {actual}, expected {expected}"
                ))
            }
        }
        other => Err(format!(
            "unknown op {other:?}; use add, remove, replace, move, copy or test"
        )),
    }
}

/// Splits an RFC 6901 JSON pointer into unescaped tokens.
fn parse_pointer(pointer: &str) -> Result<Vec<String>, String> {
    if pointer.is_empty() {
        return Ok(Vec::new());
    }
    let Some(rest) = pointer.strip_prefix('/') else {
        return Err(format!("path {pointer:?} must be empty or start with '/'"));
    };
    Ok(rest
        .split('/')
        .map(|token| token.replace("~1", "/").replace("~0", "~"))
        .collect())
}

fn array_index(token: &str, len: usize, allow_end: bool) -> Result<usize, String> {
    if allow_end && token == "-" {
        return Ok(len);
    }
    let valid = !token.is_empty()
        && token.bytes().all(|b| b.is_ascii_digit())
        && (token == "0" || !token.starts_with('0'));
    let index: usize = if valid {
        token
            .parse()
            .map_err(|_| format!("array index {token:?} is too large"))?
    } else {
        return Err(format!("{token:?} is not an array index"));
    };
    let limit = if allow_end {
        len
    } else {
        len.saturating_sub(1)
    };
    if index > limit || (!allow_end && len == 0) {
        return Err(format!(
            "array index {index} is out of bounds (length {len})"
        ));
    }
    Ok(index)
}

fn lookup_mut<'a>(doc: &'a mut Value, path: &[String]) -> Result<&'a mut Value, String> {
    let mut current = doc;
    for (depth, token) in path.iter().enumerate() {
        current = match current {
            Value::Object(map) => map
                .get_mut(token)
                .ok_or_else(|| format!("no value at {}", render(&path[..=depth])))?,
            Value::Array(items) => {
                let i = array_index(token, items.len(), false)?;
                &mut items[i]
            }
            _ => return Err(format!("no value at {}", render(&path[..=depth]))),
        };
    }
    Ok(current)
}

fn add(doc: &mut Value, path: &[String], value: Value) -> Result<(), String> {
    let Some((last, parent)) = path.split_last() else {
        *doc = value;
        return Ok(());
    };
    match lookup_mut(doc, parent)? {
        Value::Object(map) => {
            map.insert(last.clone(), value);
            Ok(())
        }
        Value::Array(items) => {
            let i = array_index(last, items.len(), true)?;
            items.insert(i, value);
            Ok(())
        }
        _ => Err(format!(
            "cannot add {}: the parent is not an object or array",
            render(path)
        )),
    }
}

fn remove(doc: &mut Value, path: &[String]) -> Result<Value, String> {
    let Some((last, parent)) = path.split_last() else {
        return Err("cannot remove the whole document".into());
    };
    match lookup_mut(doc, parent)? {
        Value::Object(map) => map
            .remove(last)
            .ok_or_else(|| format!("no value at {}", render(path))),
        Value::Array(items) => {
            let i = array_index(last, items.len(), false)?;
            Ok(items.remove(i))
        }
        _ => Err(format!("no value at {}", render(path))),
    }
}

fn render(path: &[String]) -> String {
    path.iter()
        .map(|t| format!("/{}", t.replace('~', "~0").replace('/', "~1")))
        .collect()
}

/// Equality as RFC 6902 `test` defines it: numbers compare by value (1 equals 1.0).
fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x == y,
            _ => match (x.as_u64(), y.as_u64()) {
                (Some(x), Some(y)) => x == y,
                _ => x.as_f64() == y.as_f64(),
            },
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_equal(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_patch_follows_rfc7386_examples() {
        let cases = [
            (json!({"a": "b"}), json!({"a": "c"}), json!({"a": "c"})),
            (
                json!({"a": "b"}),
                json!({"b": "c"}),
                json!({"a": "b", "b": "c"}),
            ),
            (json!({"a": "b"}), json!({"a": null}), json!({})),
            (
                json!({"a": "b", "b": "c"}),
                json!({"a": null}),
                json!({"b": "c"}),
            ),
            (json!({"a": ["b"]}), json!({"a": "c"}), json!({"a": "c"})),
            (json!({"a": "c"}), json!({"a": ["b"]}), json!({"a": ["b"]})),
            (
                json!({"a": {"b": "c"}}),
                json!({"a": {"b": "d", "c": null}}),
                json!({"a": {"b": "d"}}),
            ),
            (
                json!({"a": [{"b": "c"}]}),
                json!({"a": [1]}),
                json!({"a": [1]}),
            ),
            (json!(["a", "b"]), json!(["c", "d"]), json!(["c", "d"])),
            (json!({"a": "b"}), json!(["c"]), json!(["c"])),
            (json!({"a": "foo"}), json!(null), json!(null)),
            (json!({"a": "foo"}), json!("bar"), json!("bar")),
            (
                json!({"e": null}),
                json!({"a": 1}),
                json!({"e": null, "a": 1}),
            ),
            (
                json!([1, 2]),
                json!({"a": "b", "c": null}),
                json!({"a": "b"}),
            ),
            (
                json!({}),
                json!({"a": {"bb": {"ccc": null}}}),
                json!({"a": {"bb": {}}}),
            ),
        ];
        for (mut target, patch, expected) in cases {
            merge_patch(&mut target, &patch);
            assert_eq!(target, expected, "patch {patch}");
        }
    }

    #[test]
    fn json_patch_applies_every_operation() {
        let mut doc = json!({"metadata": {"labels": {"a": "1"}}, "spec": {"items": [1, 2]}});
        json_patch(
            &mut doc,
            &json!([
                {"op": "add", "path": "/metadata/labels/b", "value": "2"},
                {"op": "add", "path": "/spec/items/-", "value": 3},
                {"op": "add", "path": "/spec/items/0", "value": 0},
                {"op": "remove", "path": "/metadata/labels/a"},
                {"op": "replace", "path": "/spec/items/1", "value": 10},
                {"op": "copy", "from": "/metadata/labels/b", "path": "/metadata/copied"},
                {"op": "move", "from": "/metadata/copied", "path": "/moved"},
                {"op": "add", "path": "/metadata/annotations", "value": {}},
                {"op": "add", "path": "/metadata/annotations/example.com~1owner", "value": "me"},
                {"op": "test", "path": "/spec/items/1", "value": 10.0}
            ]),
        )
        .unwrap();
        assert_eq!(
            doc,
            json!({
                "metadata": {"labels": {"b": "2"}, "annotations": {"example.com/owner": "me"}},
                "spec": {"items": [0, 10, 2, 3]},
                "moved": "2"
            })
        );
    }

    #[test]
    fn json_patch_is_all_or_nothing() {
        let original = json!({"a": 1});
        let mut doc = original.clone();
        let err = json_patch(
            &mut doc,
            &json!([
                {"op": "add", "path": "/b", "value": 2},
                {"op": "test", "path": "/a", "value": 2}
            ]),
        )
        .unwrap_err();
        assert_eq!(err.index, 1);
        assert!(err.message.contains("test failed"), "{err}");
        assert_eq!(doc, original);
    }

    #[test]
    fn json_patch_reports_bad_paths() {
        let mut doc = json!({"a": [1]});
        let cases = [
            (
                json!([{"op": "remove", "path": "/missing"}]),
                "no value at /missing",
            ),
            (
                json!([{"op": "replace", "path": "/a/5", "value": 1}]),
                "out of bounds",
            ),
            (
                json!([{"op": "add", "path": "/a/01", "value": 1}]),
                "not an array index",
            ),
            (
                json!([{"op": "add", "path": "a", "value": 1}]),
                "must be empty or start with '/'",
            ),
            (
                json!([{"op": "move", "from": "/a", "path": "/a/0"}]),
                "own children",
            ),
            (json!([{"op": "frobnicate", "path": "/a"}]), "unknown op"),
            (
                json!([{"op": "add", "path": "/x"}]),
                "missing field \"value\"",
            ),
            (json!([{"op": "remove", "path": ""}]), "whole document"),
        ];
        for (patch, expected) in cases {
            let err = json_patch(&mut doc, &patch).unwrap_err();
            assert!(err.message.contains(expected), "{patch}: {err}");
        }
        assert!(json_patch(&mut doc, &json!({"op": "add"})).is_err());
    }
}
