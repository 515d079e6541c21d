//! Checks on what guests return. Parsing is borrow-only and skips values it
//! does not need (serde ignores unknown fields), so a 4 KB object costs
//! microseconds.

use std::borrow::Cow;

use serde::Deserialize;
use serde::de::IgnoredAny;

#[derive(Deserialize)]
struct Meta<'a> {
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    namespace: Option<Cow<'a, str>>,
    // Typed so that a guest writing anything but a map of strings here is
    // caught as bad output, not later by the API server or the host.
    #[serde(borrow, default)]
    #[allow(dead_code)]
    labels: Option<std::collections::HashMap<Cow<'a, str>, Cow<'a, str>>>,
    #[serde(borrow, default)]
    #[allow(dead_code)]
    annotations: Option<std::collections::HashMap<Cow<'a, str>, Cow<'a, str>>>,
}

#[derive(Deserialize)]
struct Identity<'a> {
    #[serde(rename = "apiVersion", borrow, default)]
    api_version: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    metadata: Option<Meta<'a>>,
}

fn starts_as_object(s: &str) -> bool {
    s.trim_start().starts_with('{')
}

/// The result must be one JSON object.
pub(crate) fn check_object(out: &str) -> Result<(), String> {
    if !starts_as_object(out) {
        return Err(format!("not a JSON object: {}", preview(out)));
    }
    serde_json::from_str::<IgnoredAny>(out)
        .map(|_| ())
        .map_err(|e| format!("not valid JSON ({e}): {}", preview(out)))
}

fn identity(s: &str) -> Result<Identity<'_>, String> {
    if !starts_as_object(s) {
        return Err(format!("not a JSON object: {}", preview(s)));
    }
    serde_json::from_str::<Identity<'_>>(s).map_err(|e| {
        format!(
            "not a valid Kubernetes object ({e}); apiVersion, kind, metadata.name and \
             metadata.namespace must be strings, metadata.labels and metadata.annotations maps \
             of strings"
        )
    })
}

/// The identity of an input object, reading only as far as needed: objects
/// put apiVersion, kind and metadata first, so the (often much larger) rest is
/// never scanned. `None` when the input is not a readable object.
fn input_identity(input: &str) -> Option<Identity<'_>> {
    use serde::de::{Deserializer, Error as _, MapAccess, Visitor};

    struct Early<'a, 'b>(&'b mut Identity<'a>);
    const DONE: &str = "syncweave: identity complete";

    impl<'de> Visitor<'de> for Early<'de, '_> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            let mut seen = 0;
            while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                match &*key {
                    "apiVersion" => self.0.api_version = map.next_value()?,
                    "kind" => self.0.kind = map.next_value()?,
                    "metadata" => self.0.metadata = map.next_value()?,
                    _ => {
                        map.next_value::<IgnoredAny>()?;
                        continue;
                    }
                }
                seen += 1;
                if seen == 3 {
                    // Stop here; the error only unwinds the parser.
                    return Err(A::Error::custom(DONE));
                }
            }
            Ok(())
        }
    }

    let mut id = Identity {
        api_version: None,
        kind: None,
        metadata: None,
    };
    let mut de = serde_json::Deserializer::from_str(input);
    match de.deserialize_map(Early(&mut id)) {
        Ok(()) => Some(id),
        Err(e) if e.to_string().starts_with(DONE) => Some(id),
        Err(_) => None,
    }
}

/// A mutator's result must be an object with the input's identity.
pub(crate) fn check_mutation(input: &str, out: &str) -> Result<(), String> {
    let after = identity(out)?;
    // An input the host cannot read leaves nothing to compare against.
    let Some(before) = input_identity(input) else {
        return Ok(());
    };
    let fields: [(&str, Option<&str>, Option<&str>); 4] = [
        (
            "apiVersion",
            before.api_version.as_deref(),
            after.api_version.as_deref(),
        ),
        ("kind", before.kind.as_deref(), after.kind.as_deref()),
        (
            "metadata.name",
            before.metadata.as_ref().and_then(|m| m.name.as_deref()),
            after.metadata.as_ref().and_then(|m| m.name.as_deref()),
        ),
        (
            "metadata.namespace",
            before
                .metadata
                .as_ref()
                .and_then(|m| m.namespace.as_deref()),
            after.metadata.as_ref().and_then(|m| m.namespace.as_deref()),
        ),
    ];
    for (field, b, a) in fields {
        if b != a {
            return Err(format!(
                "the mutator changed {field} from {} to {}; mutators may not change apiVersion, \
                 kind, metadata.name or metadata.namespace (use a namer plugin to rename)",
                show(b),
                show(a)
            ));
        }
    }
    Ok(())
}

/// A namer must produce a usable Kubernetes name.
pub(crate) fn check_name(name: &str, namespace: Option<&str>) -> Result<(), String> {
    let valid = |s: &str| {
        !s.is_empty()
            && s.len() <= 253
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
    };
    if !valid(name) {
        return Err(format!(
            "name {name:?} is not a valid Kubernetes name (lower-case letters, digits, '-', '.', \
             1-253 characters)"
        ));
    }
    if let Some(ns) = namespace
        && (!valid(ns) || ns.len() > 63 || ns.contains('.'))
    {
        return Err(format!(
            "namespace {ns:?} is not a valid namespace name (lower-case letters, digits, '-', \
             1-63 characters)"
        ));
    }
    Ok(())
}

fn show(v: Option<&str>) -> String {
    match v {
        Some(s) => format!("{s:?}"),
        None => "(unset)".to_string(),
    }
}

fn preview(s: &str) -> String {
    const MAX: usize = 80;
    if s.len() <= MAX {
        return format!("{s:?}");
    }
    let mut end = MAX;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{:?}… ({} bytes)", &s[..end], s.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    const OBJ: &str = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns","labels":{"x":"y"}},"data":{"k":"v"}}"#;

    #[test]
    fn unchanged_identity_passes() {
        let out = r#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"namespace":"ns","name":"a","labels":{}},"data":[1,2]}"#;
        check_mutation(OBJ, out).unwrap();
    }

    #[test]
    fn identity_changes_are_named() {
        let renamed = OBJ.replace(r#""name":"a""#, r#""name":"b""#);
        let e = check_mutation(OBJ, &renamed).unwrap_err();
        assert!(e.contains("metadata.name from \"a\" to \"b\""), "{e}");
        let no_ns = OBJ.replace(r#","namespace":"ns""#, "");
        let e = check_mutation(OBJ, &no_ns).unwrap_err();
        assert!(
            e.contains("metadata.namespace from \"ns\" to (unset)"),
            "{e}"
        );
        let kind = OBJ.replace("ConfigMap", "Secret");
        assert!(check_mutation(OBJ, &kind).unwrap_err().contains("kind"));
    }

    #[test]
    fn non_objects_and_bad_json_are_rejected() {
        assert!(
            check_mutation(OBJ, "[]")
                .unwrap_err()
                .contains("not a JSON object")
        );
        assert!(
            check_mutation(OBJ, "nope")
                .unwrap_err()
                .contains("not a JSON object")
        );
        assert!(
            check_mutation(OBJ, "{\"a\":")
                .unwrap_err()
                .contains("not a valid Kubernetes object")
        );
        assert!(check_object("{}").is_ok());
        assert!(
            check_object("{} trailing")
                .unwrap_err()
                .contains("not valid JSON")
        );
        assert!(check_object("3").is_err());
    }

    #[test]
    fn input_identity_stops_after_the_identity_fields() {
        // Everything after metadata is never read, even when it is not JSON.
        let id =
            input_identity(r#"{"apiVersion":"v1","kind":"K","metadata":{"name":"a"}, garbage"#)
                .unwrap();
        assert_eq!(id.kind.as_deref(), Some("K"));
        assert_eq!(id.metadata.unwrap().name.as_deref(), Some("a"));
        // Fields in any order, missing ones stay unset.
        let id =
            input_identity(r#"{"data":{"x":[1,{"y":2}]},"kind":"K","apiVersion":"v1"}"#).unwrap();
        assert_eq!(id.api_version.as_deref(), Some("v1"));
        assert!(id.metadata.is_none());
        assert!(input_identity("[1]").is_none());
        assert!(input_identity(r#"{"kind":"#).is_none());
    }

    #[test]
    fn escaped_identity_strings_compare_by_value() {
        let escaped = OBJ.replace(r#""name":"a""#, r#""name":"\u0061""#);
        check_mutation(OBJ, &escaped).unwrap();
    }

    #[test]
    fn labels_and_annotations_must_be_string_maps() {
        let input = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}"#;
        for bad in [
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","labels":"x"}}"#,
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","labels":{"k":1}}}"#,
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","annotations":[]}}"#,
        ] {
            let e = check_mutation(input, bad).unwrap_err();
            assert!(e.contains("maps of strings"), "{e}");
        }
        let ok = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","labels":{"k":"v"},"annotations":null}}"#;
        check_mutation(input, ok).unwrap();
    }

    #[test]
    fn names_are_checked() {
        check_name("a-b.c", Some("ns")).unwrap();
        check_name("a", None).unwrap();
        assert!(check_name("", None).is_err());
        assert!(check_name("Upper", None).is_err());
        assert!(check_name("a", Some("x.y")).is_err());
    }
}
