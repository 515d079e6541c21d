//! JSON merge patches (RFC 7386): computing the patch that turns the last
//! synced state into the new desired state. Only fields kcp changed end up
//! in the patch, so fields set on the service cluster (defaults, other
//! controllers) survive.

use serde_json::{Map, Value};

/// The merge patch from `old` to `new`; `None` when nothing changed.
pub fn diff(old: &Value, new: &Value) -> Option<Value> {
    match (old, new) {
        (Value::Object(o), Value::Object(n)) => {
            let mut patch = Map::new();
            for (k, nv) in n {
                match o.get(k) {
                    Some(ov) if ov == nv => {}
                    Some(ov) if ov.is_object() && nv.is_object() => {
                        if let Some(p) = diff(ov, nv) {
                            patch.insert(k.clone(), p);
                        }
                    }
                    _ => {
                        patch.insert(k.clone(), nv.clone());
                    }
                }
            }
            for k in o.keys() {
                if !n.contains_key(k) {
                    patch.insert(k.clone(), Value::Null);
                }
            }
            (!patch.is_empty()).then_some(Value::Object(patch))
        }
        _ if old == new => None,
        _ => Some(new.clone()),
    }
}

/// Apply a merge patch to a document (used in tests and for previews).
pub fn apply(target: &mut Value, patch: &Value) {
    match patch {
        Value::Object(p) => {
            if !target.is_object() {
                *target = Value::Object(Map::new());
            }
            let t = target.as_object_mut().expect("object");
            for (k, v) in p {
                if v.is_null() {
                    t.remove(k);
                } else {
                    apply(t.entry(k.clone()).or_insert(Value::Null), v);
                }
            }
        }
        other => *target = other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn diff_then_apply_reaches_new() {
        let old = json!({"spec": {"a": 1, "b": {"c": 2}, "gone": true}, "keep": [1, 2]});
        let new = json!({"spec": {"a": 2, "b": {"c": 2, "d": 3}}, "keep": [1, 2]});
        let p = diff(&old, &new).unwrap();
        assert_eq!(p, json!({"spec": {"a": 2, "b": {"d": 3}, "gone": null}}));
        let mut t = old.clone();
        apply(&mut t, &p);
        assert_eq!(t, new);
    }

    #[test]
    fn unchanged_is_none() {
        let v = json!({"a": {"b": [1]}});
        assert_eq!(diff(&v, &v), None);
    }

    #[test]
    fn local_only_fields_survive() {
        // The patch computed from kcp's old/new never mentions local fields.
        let old = json!({"spec": {"a": 1}});
        let new = json!({"spec": {"a": 2}});
        let mut local = json!({"spec": {"a": 1, "defaulted": "x"}});
        apply(&mut local, &diff(&old, &new).unwrap());
        assert_eq!(local, json!({"spec": {"a": 2, "defaulted": "x"}}));
    }
}
