//! JSON merge patches (RFC 7386): computing the patch that turns the last
//! synced state into the new desired state. Only fields kcp changed end up
//! in the patch, so fields set on the service cluster (defaults, other
//! controllers) survive.
//!
//! Values are compared semantically, as an API server stores them: `6` and
//! `6.0` are the same number. The state is stored the way Go writes JSON
//! (`6.0` becomes `6`), and API servers decode integral floats as integers,
//! so a byte-wise comparison would see a change on every pass and patch the
//! same value forever.

use serde_json::{Map, Number, Value};

/// `a` and `b` are the same JSON document, numbers compared by value.
pub fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => numbers_eq(x, y),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| json_eq(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, xv)| y.get(k).is_some_and(|yv| json_eq(xv, yv)))
        }
        _ => a == b,
    }
}

fn numbers_eq(x: &Number, y: &Number) -> bool {
    // Integers exactly (an i64 and a u64 of the same value are equal);
    // anything with a float part by its f64 value.
    let int = |n: &Number| {
        n.as_i64()
            .map(i128::from)
            .or_else(|| n.as_u64().map(i128::from))
    };
    match (int(x), int(y)) {
        (Some(a), Some(b)) => a == b,
        _ => match (x.as_f64(), y.as_f64()) {
            (Some(a), Some(b)) => a == b,
            _ => false,
        },
    }
}

/// The merge patch from `old` to `new`; `None` when nothing changed.
pub fn diff(old: &Value, new: &Value) -> Option<Value> {
    match (old, new) {
        (Value::Object(o), Value::Object(n)) => {
            let mut patch = Map::new();
            for (k, nv) in n {
                match o.get(k) {
                    Some(ov) if json_eq(ov, nv) => {}
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
        _ if json_eq(old, new) => None,
        _ => Some(new.clone()),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::testing::{json_object, json_value};
    use proptest::prelude::*;
    use serde_json::json;

    /// RFC 7386 applied to a document, to check what a patch does.
    fn apply(target: &mut Value, patch: &Value) {
        json_patch::merge(target, patch);
    }

    /// Found by `go_encoding_never_makes_a_patch`: serde_json's default
    /// float parser read this number one ulp off, so a copied float never
    /// matched and was patched on every pass (`float_roundtrip` fixes it).
    #[test]
    fn floats_parse_exactly() {
        let f = -1.577_549_224_400_413_5e208_f64;
        let text = crate::sync::gojson::value_string(&json!(f));
        let back: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back.as_f64(), Some(f), "{text}");
    }

    proptest! {
        /// The patch turns the old document into the new one, and there is
        /// no patch exactly when they are equal (numbers by value).
        #[test]
        fn a_diff_applied_gives_the_new_document(
            old in json_object(json_value()),
            new in json_object(json_value()),
        ) {
            match diff(&old, &new) {
                None => prop_assert!(json_eq(&old, &new), "no patch for {old} → {new}"),
                Some(patch) => {
                    prop_assert!(!json_eq(&old, &new), "a patch {patch} for equal documents");
                    let mut merged = old.clone();
                    apply(&mut merged, &patch);
                    prop_assert!(json_eq(&merged, &new), "{old} + {patch} = {merged}, not {new}");
                }
            }
        }

        /// A document compared with itself re-encoded as Go writes it
        /// (integral floats become integers) needs no patch.
        #[test]
        fn go_encoding_never_makes_a_patch(v in json_object(json_value())) {
            let go: Value = serde_json::from_str(&crate::sync::gojson::value_string(&v))
                .expect("gojson writes valid JSON");
            prop_assert!(json_eq(&v, &go), "{v} vs {go}");
            prop_assert_eq!(diff(&v, &go), None);
        }
    }

    /// The loop a CEL mutation `value * 2.0` caused: the desired state has
    /// `6.0`, the stored state (written as Go writes JSON) reads back as
    /// `6`. They are the same value, so there is nothing to patch.
    #[test]
    fn a_float_that_is_stored_as_an_integer_is_no_change() {
        let desired = json!({"spec": {"replicas": 6.0, "ratio": 0.5, "list": [1.0, 2]}});
        let stored = crate::sync::state::StateStore::encode_state(&desired);
        let last: Value = serde_json::from_slice(&stored).unwrap();
        assert_eq!(last["spec"]["replicas"], json!(6), "Go writes 6.0 as 6");
        assert_eq!(diff(&last, &desired), None);
        assert!(json_eq(&last, &desired));
        // A real change is still one.
        let changed = json!({"spec": {"replicas": 6.5, "ratio": 0.5, "list": [1.0, 2]}});
        assert_eq!(
            diff(&last, &changed),
            Some(json!({"spec": {"replicas": 6.5}}))
        );
    }

    #[test]
    fn numbers_compare_by_value() {
        assert!(json_eq(&json!(1), &json!(1.0)));
        assert!(json_eq(&json!(-3), &json!(-3.0)));
        assert!(json_eq(&json!(u64::MAX), &json!(u64::MAX)));
        assert!(!json_eq(&json!(1), &json!(2)));
        assert!(!json_eq(&json!(1), &json!("1")));
        assert!(!json_eq(&json!({"a": 1}), &json!({"a": 1, "b": 2})));
        assert!(!json_eq(&json!([1]), &json!([1, 1])));
        // Exact for big integers that an f64 would round together.
        assert!(!json_eq(
            &json!(9007199254740993u64),
            &json!(9007199254740992u64)
        ));
    }

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
