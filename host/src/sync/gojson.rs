//! Byte-exact JSON as Go's `encoding/json` writes it, for the few values
//! upstream api-syncagent hashes or stores: an agent taking over from a
//! running upstream agent must find the same state Secrets and
//! APIResourceSchema names, and must not rewrite state it did not change.
//!
//! Go differs from serde_json in ways that change hashes:
//! - structs are written in field declaration order and `omitempty` fields
//!   are left out when zero, while maps (and `unstructured` objects) are
//!   written with sorted keys;
//! - strings escape `<`, `>`, `&`, U+2028 and U+2029 as `\u00XX` (Go's
//!   default HTML-safe escaping);
//! - floats use `%f` style between 1e-6 and 1e21 and `1e+21` / `1e-7` style
//!   outside it.
//!
//! Two encoders are offered: [`write_value`] for Go maps and unstructured
//! objects, and [`crd_spec_string`] for an `apiextensionsv1.CustomResourceDefinitionSpec`,
//! whose Go declaration is mirrored by the field tables below (checked
//! against k8s.io/apiextensions-apiserver as used by upstream v0.7.0).

use std::fmt::Write;

use serde_json::{Map, Value};

/// Appends `s` as a Go JSON string literal.
pub fn write_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            // Other control characters, plus what Go escapes so JSON can be
            // embedded in HTML and JavaScript.
            c if c < ' ' || matches!(c, '<' | '>' | '&' | '\u{2028}' | '\u{2029}') => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Appends a float64 the way Go's encoder formats it.
pub fn write_f64(out: &mut String, f: f64) {
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        // Both print the shortest round-tripping digits; Go also signs a
        // positive exponent (`1e+21`), Rust does not (`1e21`).
        let s = format!("{f:e}");
        match s.split_once('e') {
            Some((mantissa, exp)) if !exp.starts_with('-') => {
                let _ = write!(out, "{mantissa}e+{exp}");
            }
            _ => out.push_str(&s),
        }
    } else {
        // Rust's Display is also shortest round-trip without an exponent,
        // and prints integral values without ".0", as Go does.
        let _ = write!(out, "{f}");
    }
}

fn write_number(out: &mut String, n: &serde_json::Number) {
    // Integers print as digits in both; only floats need Go's formatting.
    match (n.as_i64(), n.as_u64(), n.as_f64()) {
        (Some(i), _, _) => {
            let _ = write!(out, "{i}");
        }
        (_, Some(u), _) => {
            let _ = write!(out, "{u}");
        }
        (_, _, Some(f)) => write_f64(out, f),
        _ => out.push_str("null"),
    }
}

/// Appends `v` as Go writes a `map[string]any` / unstructured object:
/// keys sorted bytewise, Go string escaping and number formatting.
pub fn write_value(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => write_number(out, n),
        Value::String(s) => write_str(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => write_sorted_map(out, map, write_value),
    }
}

/// What `json.Marshal(v)` returns for a Go map or unstructured object.
pub fn value_string(v: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, v);
    out
}

/// A Go struct of string fields without `omitempty`, in the given
/// (declaration) order.
pub fn string_struct(fields: &[(&str, &str)]) -> String {
    let mut out = String::from("{");
    for (i, (name, value)) in fields.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_str(&mut out, name);
        out.push(':');
        write_str(&mut out, value);
    }
    out.push('}');
    out
}

/// Go sorts map keys bytewise; sort explicitly rather than rely on
/// serde_json's map type (its order changes with the `preserve_order` feature).
fn write_sorted_map(
    out: &mut String,
    map: &Map<String, Value>,
    item: impl Fn(&mut String, &Value),
) {
    let mut entries: Vec<_> = map.iter().collect();
    entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    out.push('{');
    for (i, (k, v)) in entries.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_str(out, k);
        out.push(':');
        item(out, v);
    }
    out.push('}');
}

/// `json.Marshal` of an `apiextensionsv1.CustomResourceDefinitionSpec`
/// decoded from `spec` (a CRD's `spec` as the API server returns it).
///
/// `conversion` is never written: upstream clears it before hashing, which
/// is the only use of this encoding.
pub fn crd_spec_string(spec: &Value) -> String {
    let mut out = String::new();
    write_struct(&mut out, CRD_SPEC, spec);
    out
}

// ---------------------------------------------------------------------------
// Go struct encoding.
//
// The input is JSON as the API server returns it; a Go client decodes it into
// typed structs (dropping unknown fields, turning `null` into zero values)
// and upstream re-encodes that. Each table below lists a Go struct's JSON
// fields in declaration order. When a value has a type the Go field cannot
// hold, upstream would have failed to decode the object at all, so there is
// no upstream output to match: such values are written as they are, which
// keeps the result deterministic (and kcp rejects the schema later anyway).

/// The Go type of a struct field, as far as its encoding is concerned.
#[derive(Clone, Copy)]
enum Kind {
    Str,
    Bool,
    Int,
    StrPtr,
    BoolPtr,
    IntPtr,
    FloatPtr,
    StrSlice,
    /// A nested struct (never omitted: Go's `omitempty` ignores structs).
    Struct(&'static [Field]),
    StructPtr(&'static [Field]),
    StructSlice(&'static [Field]),
    /// `JSONSchemaProps`, which refers to itself.
    SchemaPtr,
    SchemaSlice,
    SchemaMap,
    /// `*JSON` / `[]JSON`: raw JSON, written back as received (see
    /// [`write_raw`]).
    RawPtr,
    RawSlice,
    /// `*JSONSchemaPropsOrBool` (its own `MarshalJSON`).
    SchemaOrBoolPtr,
    /// `*JSONSchemaPropsOrArray` (its own `MarshalJSON`).
    SchemaOrArrayPtr,
    /// `JSONSchemaDependencies`: map of `JSONSchemaPropsOrStringArray`.
    Dependencies,
}

#[derive(Clone, Copy)]
struct Field {
    name: &'static str,
    kind: Kind,
    omitempty: bool,
}

const fn req(name: &'static str, kind: Kind) -> Field {
    Field {
        name,
        kind,
        omitempty: false,
    }
}

const fn opt(name: &'static str, kind: Kind) -> Field {
    Field {
        name,
        kind,
        omitempty: true,
    }
}

use Kind::*;

/// `CustomResourceDefinitionSpec` (without `conversion`, see [`crd_spec_string`]).
const CRD_SPEC: &[Field] = &[
    req("group", Str),
    req("names", Struct(CRD_NAMES)),
    req("scope", Str),
    req("versions", StructSlice(CRD_VERSION)),
    opt("preserveUnknownFields", Bool),
];

const CRD_NAMES: &[Field] = &[
    req("plural", Str),
    opt("singular", Str),
    opt("shortNames", StrSlice),
    req("kind", Str),
    opt("listKind", Str),
    opt("categories", StrSlice),
];

const CRD_VERSION: &[Field] = &[
    req("name", Str),
    req("served", Bool),
    req("storage", Bool),
    opt("deprecated", Bool),
    opt("deprecationWarning", StrPtr),
    opt("schema", StructPtr(VALIDATION)),
    opt("subresources", StructPtr(SUBRESOURCES)),
    opt("additionalPrinterColumns", StructSlice(PRINTER_COLUMN)),
    opt("selectableFields", StructSlice(SELECTABLE_FIELD)),
];

const VALIDATION: &[Field] = &[opt("openAPIV3Schema", SchemaPtr)];

const SUBRESOURCES: &[Field] = &[
    opt("status", StructPtr(&[])),
    opt("scale", StructPtr(SCALE)),
];

const SCALE: &[Field] = &[
    req("specReplicasPath", Str),
    req("statusReplicasPath", Str),
    opt("labelSelectorPath", StrPtr),
];

const PRINTER_COLUMN: &[Field] = &[
    req("name", Str),
    req("type", Str),
    opt("format", Str),
    opt("description", Str),
    opt("priority", Int),
    req("jsonPath", Str),
];

const SELECTABLE_FIELD: &[Field] = &[req("jsonPath", Str)];

/// `JSONSchemaProps`.
const SCHEMA: &[Field] = &[
    opt("id", Str),
    opt("$schema", Str),
    opt("$ref", StrPtr),
    opt("description", Str),
    opt("type", Str),
    opt("format", Str),
    opt("title", Str),
    opt("default", RawPtr),
    opt("maximum", FloatPtr),
    opt("exclusiveMaximum", Bool),
    opt("minimum", FloatPtr),
    opt("exclusiveMinimum", Bool),
    opt("maxLength", IntPtr),
    opt("minLength", IntPtr),
    opt("pattern", Str),
    opt("maxItems", IntPtr),
    opt("minItems", IntPtr),
    opt("uniqueItems", Bool),
    opt("multipleOf", FloatPtr),
    opt("enum", RawSlice),
    opt("maxProperties", IntPtr),
    opt("minProperties", IntPtr),
    opt("required", StrSlice),
    opt("items", SchemaOrArrayPtr),
    opt("allOf", SchemaSlice),
    opt("oneOf", SchemaSlice),
    opt("anyOf", SchemaSlice),
    opt("not", SchemaPtr),
    opt("properties", SchemaMap),
    opt("additionalProperties", SchemaOrBoolPtr),
    opt("patternProperties", SchemaMap),
    opt("dependencies", Dependencies),
    opt("additionalItems", SchemaOrBoolPtr),
    opt("definitions", SchemaMap),
    opt("externalDocs", StructPtr(EXTERNAL_DOCS)),
    opt("example", RawPtr),
    opt("nullable", Bool),
    opt("x-kubernetes-preserve-unknown-fields", BoolPtr),
    opt("x-kubernetes-embedded-resource", Bool),
    opt("x-kubernetes-int-or-string", Bool),
    opt("x-kubernetes-list-map-keys", StrSlice),
    opt("x-kubernetes-list-type", StrPtr),
    opt("x-kubernetes-map-type", StrPtr),
    opt("x-kubernetes-validations", StructSlice(VALIDATION_RULE)),
];

const VALIDATION_RULE: &[Field] = &[
    req("rule", Str),
    opt("message", Str),
    opt("messageExpression", Str),
    opt("reason", StrPtr),
    opt("fieldPath", Str),
    opt("optionalOldSelf", BoolPtr),
];

const EXTERNAL_DOCS: &[Field] = &[opt("description", Str), opt("url", Str)];

/// A field's value, with JSON `null` folded into "absent": Go decodes both
/// into the zero value.
fn present(v: Option<&Value>) -> Option<&Value> {
    v.filter(|v| !v.is_null())
}

/// Whether Go's `omitempty` drops the decoded value: false, 0, "", nil
/// pointers and empty slices or maps. A value of the wrong type is never
/// dropped (see the section comment).
fn is_empty(kind: Kind, v: Option<&Value>) -> bool {
    let Some(v) = present(v) else {
        return !matches!(kind, Struct(_));
    };
    match kind {
        Str => v.as_str() == Some(""),
        Bool => v.as_bool() == Some(false),
        Int => v.as_i64() == Some(0) || v.as_u64() == Some(0),
        StrSlice | StructSlice(_) | SchemaSlice | RawSlice => {
            v.as_array().is_some_and(|a| a.is_empty())
        }
        SchemaMap | Dependencies => v.as_object().is_some_and(|m| m.is_empty()),
        Struct(_) | StrPtr | BoolPtr | IntPtr | FloatPtr | StructPtr(_) | SchemaPtr | RawPtr
        | SchemaOrBoolPtr | SchemaOrArrayPtr => false,
    }
}

fn write_struct(out: &mut String, fields: &[Field], v: &Value) {
    let Some(obj) = v.as_object() else {
        // `null` decodes to the zero struct; other types cannot be decoded.
        if v.is_null() {
            write_struct(out, fields, &Value::Object(Map::new()));
        } else {
            write_value(out, v);
        }
        return;
    };
    out.push('{');
    let mut first = true;
    for f in fields {
        let value = obj.get(f.name);
        if f.omitempty && is_empty(f.kind, value) {
            continue;
        }
        if !first {
            out.push(',');
        }
        first = false;
        write_str(out, f.name);
        out.push(':');
        write_field(out, f.kind, present(value));
    }
    out.push('}');
}

fn write_schema(out: &mut String, v: &Value) {
    write_struct(out, SCHEMA, v);
}

fn write_field(out: &mut String, kind: Kind, v: Option<&Value>) {
    let Some(v) = v else {
        // The zero value of the Go type.
        match kind {
            Str => out.push_str("\"\""),
            Bool => out.push_str("false"),
            Int => out.push('0'),
            Struct(fields) => write_struct(out, fields, &Value::Null),
            _ => out.push_str("null"),
        }
        return;
    };
    match kind {
        Str | StrPtr if v.is_string() => write_value(out, v),
        Bool | BoolPtr if v.is_boolean() => write_value(out, v),
        Int | IntPtr if v.is_i64() || v.is_u64() => write_value(out, v),
        FloatPtr => match v.as_f64() {
            // Go decodes every number into float64 first.
            Some(f) => write_f64(out, f),
            None => write_value(out, v),
        },
        StrSlice => write_list(out, v, |out, item| {
            write_field(out, Str, present(Some(item)))
        }),
        Struct(fields) | StructPtr(fields) => write_struct(out, fields, v),
        StructSlice(fields) => write_list(out, v, |out, item| write_struct(out, fields, item)),
        SchemaPtr => write_schema(out, v),
        SchemaSlice => write_list(out, v, write_schema),
        SchemaMap => match v.as_object() {
            Some(map) => write_sorted_map(out, map, write_schema),
            None => write_value(out, v),
        },
        RawPtr | RawSlice => write_raw(out, v),
        SchemaOrBoolPtr => match v {
            Value::Object(_) => write_schema(out, v),
            _ => write_value(out, v),
        },
        // Go's decoder keeps an object as one schema and an array as a
        // list; anything else leaves it empty, which encodes as `null`.
        SchemaOrArrayPtr => match v {
            Value::Object(_) => write_schema(out, v),
            Value::Array(items) if !items.is_empty() => write_list(out, v, write_schema),
            _ => out.push_str("null"),
        },
        Dependencies => match v.as_object() {
            Some(map) => write_sorted_map(out, map, write_schema_or_strings),
            None => write_value(out, v),
        },
        Str | StrPtr | Bool | BoolPtr | Int | IntPtr => write_value(out, v),
    }
}

/// `JSONSchemaPropsOrStringArray`: a non-empty string list, else a schema,
/// else `null`.
fn write_schema_or_strings(out: &mut String, v: &Value) {
    match v {
        Value::Array(items) if !items.is_empty() => write_list(out, v, |out, item| {
            write_field(out, Str, present(Some(item)))
        }),
        Value::Object(_) => write_schema(out, v),
        _ => out.push_str("null"),
    }
}

fn write_list(out: &mut String, v: &Value, item: impl Fn(&mut String, &Value)) {
    let Some(items) = v.as_array() else {
        return write_value(out, v);
    };
    out.push('[');
    for (i, x) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        item(out, x);
    }
    out.push(']');
}

/// `apiextensionsv1.JSON` keeps the bytes it was decoded from, and Go
/// writes them back compacted and HTML-escaped. Those bytes are lost once
/// parsed into a [`Value`]; sorted keys and Go number formatting reproduce
/// them for everything written by Go clients such as kubectl (which encode
/// maps sorted), but not for an object whose keys were sent unsorted or a
/// number spelled differently (`1.0`, `1E3`).
fn write_raw(out: &mut String, v: &Value) {
    write_value(out, v);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    // Expected strings below were printed by Go 1.26's encoding/json (the
    // CRD specs after decoding into apiextensionsv1 types, as upstream does).

    #[test]
    fn strings_are_escaped_like_go() {
        let mut out = String::new();
        write_str(
            &mut out,
            "<b>&\"\\\n\r\t\u{8}\u{c}\u{1}\u{1f}\u{7f}\u{2028}\u{2029}é😀",
        );
        // DEL (U+007F) is not escaped.
        let want = concat!(
            r#""\u003cb\u003e\u0026\"\\\n\r\t\b\f\u0001\u001f"#,
            "\u{7f}",
            r#"\u2028\u2029é😀""#
        );
        assert_eq!(out, want);
    }

    #[test]
    fn floats_are_formatted_like_go() {
        let cases = [
            (0.0, "0"),
            (-0.0, "-0"),
            (1.0, "1"),
            (0.5, "0.5"),
            (0.000001, "0.000001"),
            (0.0000001, "1e-7"),
            (1.5e-10, "1.5e-10"),
            (1e20, "100000000000000000000"),
            (1e21, "1e+21"),
            (-1.5e300, "-1.5e+300"),
            (123456789.125, "123456789.125"),
        ];
        for (f, want) in cases {
            let mut out = String::new();
            write_f64(&mut out, f);
            assert_eq!(out, want, "{f:e}");
        }
    }

    #[test]
    fn maps_are_sorted_bytewise() {
        let v = json!({"b": 1, "B": [true, null, 2.5], "a": {"z": "", "y": {}}});
        assert_eq!(
            value_string(&v),
            r#"{"B":[true,null,2.5],"a":{"y":{},"z":""},"b":1}"#
        );
    }

    #[test]
    fn structs_keep_declaration_order_and_omit_empty_fields() {
        let spec = json!({
            "versions": [{"storage": true, "served": false, "name": "v1",
                          "deprecated": false, "additionalPrinterColumns": [],
                          "subresources": {"status": {}, "unknown": 1}}],
            "scope": "Cluster",
            "names": {"kind": "K", "plural": "ks", "singular": "", "shortNames": null},
            "group": "g",
            "conversion": {"strategy": "None"},
            "preserveUnknownFields": false
        });
        assert_eq!(
            crd_spec_string(&spec),
            r#"{"group":"g","names":{"plural":"ks","kind":"K"},"scope":"Cluster","versions":[{"name":"v1","served":false,"storage":true,"subresources":{"status":{}}}]}"#
        );
        // `null` decodes to zero values; the "or" types have their own rules.
        let spec = json!({
            "group": "g", "names": {"plural": "p", "kind": "K"}, "scope": "Cluster",
            "versions": [{"name": "v", "served": null, "storage": true, "schema": {"openAPIV3Schema": {
                "items": "x", "required": [null, "a"], "properties": {"a": null},
                "dependencies": {"x": [], "y": null}, "additionalProperties": null}}}]
        });
        assert_eq!(
            crd_spec_string(&spec),
            r#"{"group":"g","names":{"plural":"p","kind":"K"},"scope":"Cluster","versions":[{"name":"v","served":false,"storage":true,"schema":{"openAPIV3Schema":{"required":["","a"],"items":null,"properties":{"a":{}},"dependencies":{"x":null,"y":null}}}}]}"#
        );
        // Required fields that are missing encode as Go zero values.
        assert_eq!(
            crd_spec_string(&json!({})),
            r#"{"group":"","names":{"plural":"","kind":""},"scope":"","versions":null}"#
        );
    }
}
