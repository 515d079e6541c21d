//! Publishing resources that have no CRD (`apps/v1 Deployment`, `rbac Role`,
//! `v1 ConfigMap`, …): as upstream, the agent builds the CRD the resource
//! would have from the service cluster's discovery and OpenAPI, and from then
//! on treats it like any other.
//!
//! The schema comes from OpenAPI v3 (`/openapi/v3/apis/<group>/<version>`),
//! turned into a structural schema a CRD (and an APIResourceSchema) accepts:
//! `$ref`s inlined, only JSONSchemaProps keywords kept, IntOrString and
//! Quantity as `x-kubernetes-int-or-string`, free-form values and recursive
//! types as `x-kubernetes-preserve-unknown-fields`, `metadata` left to the
//! API server.

use std::collections::BTreeSet;

use kube::Client;
use serde_json::{Map, Value, json};

use super::error::SchemaError;

/// Keywords of a CRD's JSONSchemaProps kept from OpenAPI (others, like
/// `readOnly` or `x-kubernetes-patch-strategy`, a CRD refuses or ignores).
const KEPT: &[&str] = &[
    "description",
    "type",
    "format",
    "enum",
    "required",
    "maximum",
    "minimum",
    "exclusiveMaximum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "multipleOf",
    "maxProperties",
    "minProperties",
    "nullable",
    "x-kubernetes-preserve-unknown-fields",
];
// Left out on purpose: `default` (built-in defaults are applied by the
// service cluster anyway), and the x-kubernetes-list-*/map-type and
// embedded-resource markers, whose extra structural rules (map keys must be
// required or defaulted, …) built-in schemas do not always meet.

/// Beyond this depth a schema is cut off as free-form: deep enough for every
/// built-in type, and a bound on pathological documents.
const MAX_DEPTH: usize = 64;

async fn get_json(client: &Client, path: &str) -> Result<Option<Value>, SchemaError> {
    let req = http::Request::get(path)
        .body(Vec::new())
        .map_err(|e| SchemaError::Invalid {
            pr: String::new(),
            message: format!("building a request for {path}: {e}"),
        })?;
    match client.request::<Value>(req).await {
        Ok(v) => Ok(Some(v)),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(None),
        Err(source) => Err(SchemaError::Service {
            action: format!("reading {path} on the service cluster"),
            source,
        }),
    }
}

/// Approval of an API in a protected group (`api-approved.kubernetes.io`).
pub const APPROVAL_ANNOTATION: &str = "api-approved.kubernetes.io";

/// The CRD that `group`/`kind` would have, from discovery and OpenAPI, or
/// `None` when the service cluster serves no such kind.
pub async fn crd_from_openapi(
    client: &Client,
    group: &str,
    kind: &str,
) -> Result<Option<Value>, SchemaError> {
    // Versions serving the group, preferred first.
    let (versions, preferred): (Vec<String>, String) = if group.is_empty() {
        (vec!["v1".into()], "v1".into())
    } else {
        let Some(g) = get_json(client, &format!("/apis/{group}")).await? else {
            return Ok(None);
        };
        let versions = g["versions"]
            .as_array()
            .map(|vs| {
                vs.iter()
                    .filter_map(|v| v["version"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        let preferred = g["preferredVersion"]["version"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        (versions, preferred)
    };

    let mut crd_versions = Vec::new();
    let mut names = None;
    for version in &versions {
        let gv_path = if group.is_empty() {
            format!("/api/{version}")
        } else {
            format!("/apis/{group}/{version}")
        };
        let Some(list) = get_json(client, &gv_path).await? else {
            continue;
        };
        let resources = list["resources"].as_array().cloned().unwrap_or_default();
        let Some(res) = resources
            .iter()
            .find(|r| r["kind"] == kind && !r["name"].as_str().unwrap_or("/").contains('/'))
        else {
            continue;
        };
        let plural = res["name"].as_str().unwrap_or_default().to_string();
        let has_status = resources
            .iter()
            .any(|r| r["name"].as_str() == Some(&format!("{plural}/status")));
        let openapi_path = format!("/openapi/v3{gv_path}");
        let Some(doc) = get_json(client, &openapi_path).await? else {
            continue;
        };
        let Some(schema) = object_schema(&doc, group, version, kind) else {
            continue;
        };
        let mut v = json!({
            "name": version,
            "served": true,
            "storage": *version == preferred || (preferred.is_empty() && crd_versions.is_empty()),
            "schema": {"openAPIV3Schema": schema},
        });
        if has_status {
            v["subresources"] = json!({"status": {}});
        }
        crd_versions.push(v);
        if names.is_none() {
            names = Some((res.clone(), plural));
        }
    }
    let Some((res, plural)) = names else {
        return Ok(None);
    };
    if !crd_versions.iter().any(|v| v["storage"] == true) {
        crd_versions[0]["storage"] = json!(true);
    }
    let mut names = json!({
        "kind": kind,
        "listKind": format!("{kind}List"),
        "plural": plural,
        "singular": res["singularName"].as_str().filter(|s| !s.is_empty())
            .map(str::to_string)
            .unwrap_or_else(|| kind.to_lowercase()),
    });
    for field in ["shortNames", "categories"] {
        if let Some(v) = res[field].as_array().filter(|a| !a.is_empty()) {
            names[field] = Value::Array(v.clone());
        }
    }
    // As upstream: the core group's CRD name ends in `.core`.
    let crd_group = if group.is_empty() { "core" } else { group };
    let mut metadata = json!({"name": format!("{plural}.{crd_group}")});
    // kcp (like Kubernetes for CRDs) refuses schemas in the protected
    // *.k8s.io / *.kubernetes.io groups without an approval annotation;
    // built-in types are approved by Kubernetes itself.
    let protected = ["k8s.io", "kubernetes.io"]
        .iter()
        .any(|p| group == *p || group.ends_with(&format!(".{p}")));
    if protected {
        metadata["annotations"] =
            json!({APPROVAL_ANNOTATION: "https://github.com/kubernetes/kubernetes"});
    }
    Ok(Some(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": metadata,
        "spec": {
            "group": group,
            "names": names,
            "scope": if res["namespaced"] == true { "Namespaced" } else { "Cluster" },
            "versions": crd_versions,
        },
    })))
}

/// The structural schema of `kind` in an OpenAPI v3 document.
pub fn object_schema(doc: &Value, group: &str, version: &str, kind: &str) -> Option<Value> {
    let schemas = doc.pointer("/components/schemas")?.as_object()?;
    let (_, schema) = schemas.iter().find(|(_, s)| {
        s["x-kubernetes-group-version-kind"]
            .as_array()
            .is_some_and(|gvks| {
                gvks.iter().any(|g| {
                    g["group"].as_str().unwrap_or("") == group
                        && g["version"] == version
                        && g["kind"] == kind
                })
            })
    })?;
    let mut out = convert(schema, schemas, &mut BTreeSet::new(), 0);
    // The API server owns metadata (and apiVersion/kind are always strings).
    if let Some(props) = out.get_mut("properties").and_then(Value::as_object_mut) {
        props.insert("metadata".into(), json!({"type": "object"}));
    }
    out["type"] = json!("object");
    Some(out)
}

fn free_form(description: Option<&Value>) -> Value {
    let mut v = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
    if let Some(d) = description {
        v["description"] = d.clone();
    }
    v
}

/// One OpenAPI schema node as a structural JSONSchemaProps node.
fn convert(
    node: &Value,
    schemas: &Map<String, Value>,
    visiting: &mut BTreeSet<String>,
    depth: usize,
) -> Value {
    let description = node.get("description");
    // `allOf: [{$ref}]` is how OpenAPI v3 attaches a description to a ref.
    let reference = node["$ref"].as_str().or_else(|| {
        node["allOf"]
            .as_array()
            .filter(|a| a.len() == 1)
            .and_then(|a| a[0]["$ref"].as_str())
    });
    if let Some(r) = reference {
        let name = r.trim_start_matches("#/components/schemas/");
        let Some(target) = schemas.get(name) else {
            return free_form(description);
        };
        // Recursive types (JSONSchemaProps in CRDs) cannot be inlined.
        if depth >= MAX_DEPTH || !visiting.insert(name.to_string()) {
            return free_form(description);
        }
        let mut v = convert(target, schemas, visiting, depth + 1);
        visiting.remove(name);
        if let (Some(d), Some(o)) = (description, v.as_object_mut()) {
            o.insert("description".into(), d.clone());
        }
        return v;
    }
    // Quantity is `oneOf: [string, number]`, IntOrString `format:
    // int-or-string`: both are what CRDs spell x-kubernetes-int-or-string.
    let alternatives: Vec<&str> = ["oneOf", "anyOf"]
        .iter()
        .filter_map(|k| node[*k].as_array())
        .flatten()
        .filter_map(|a| a["type"].as_str())
        .collect();
    let scalar_or_string = alternatives.contains(&"string")
        && (alternatives.contains(&"integer") || alternatives.contains(&"number"));
    if node["x-kubernetes-int-or-string"] == true
        || node["format"] == "int-or-string"
        || (node.get("type").is_none() && scalar_or_string)
    {
        let mut v = json!({"x-kubernetes-int-or-string": true});
        if let Some(d) = description {
            v["description"] = d.clone();
        }
        return v;
    }
    let Some(obj) = node.as_object() else {
        return free_form(None);
    };
    let mut out = Map::new();
    for k in KEPT {
        if let Some(v) = obj.get(*k) {
            out.insert((*k).to_string(), v.clone());
        }
    }
    if let Some(props) = obj.get("properties").and_then(Value::as_object) {
        let converted: Map<String, Value> = props
            .iter()
            .map(|(k, v)| (k.clone(), convert(v, schemas, visiting, depth + 1)))
            .collect();
        out.insert("properties".into(), Value::Object(converted));
        out.entry("type").or_insert_with(|| json!("object"));
    }
    if let Some(items) = obj.get("items") {
        out.insert("items".into(), convert(items, schemas, visiting, depth + 1));
        out.entry("type").or_insert_with(|| json!("array"));
    }
    match obj.get("additionalProperties") {
        Some(Value::Bool(b)) => {
            if *b && !out.contains_key("properties") {
                out.insert("x-kubernetes-preserve-unknown-fields".into(), json!(true));
            }
            out.entry("type").or_insert_with(|| json!("object"));
        }
        Some(ap @ Value::Object(_)) => {
            out.insert(
                "additionalProperties".into(),
                convert(ap, schemas, visiting, depth + 1),
            );
            out.entry("type").or_insert_with(|| json!("object"));
        }
        _ => {}
    }
    // A node without a type (JSON) may hold any value; an object that
    // declares no fields (RawExtension) any fields. Otherwise a structural
    // schema would prune their content.
    if !out.contains_key("type") {
        let mut v = json!({"x-kubernetes-preserve-unknown-fields": true});
        if let Some(d) = description {
            v["description"] = d.clone();
        }
        return v;
    }
    if out["type"] == "object"
        && !out.contains_key("properties")
        && !out.contains_key("additionalProperties")
    {
        return free_form(description);
    }
    // Structural schemas forbid `required` naming fields not in properties,
    // which OpenAPI can have after a ref was cut.
    if let (Some(req), Some(props)) = (
        out.get("required").and_then(Value::as_array).cloned(),
        out.get("properties").and_then(Value::as_object),
    ) {
        let kept: Vec<Value> = req
            .into_iter()
            .filter(|r| r.as_str().is_some_and(|n| props.contains_key(n)))
            .collect();
        out.insert("required".into(), Value::Array(kept));
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc() -> Value {
        json!({"components": {"schemas": {
            "io.k8s.api.apps.v1.Deployment": {
                "type": "object",
                "description": "Deployment enables declarative updates.",
                "properties": {
                    "apiVersion": {"type": "string"},
                    "kind": {"type": "string"},
                    "metadata": {"allOf": [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}], "default": {}},
                    "spec": {"allOf": [{"$ref": "#/components/schemas/io.k8s.api.apps.v1.DeploymentSpec"}], "description": "Spec."},
                },
                "x-kubernetes-group-version-kind": [{"group": "apps", "version": "v1", "kind": "Deployment"}],
            },
            "io.k8s.api.apps.v1.DeploymentSpec": {
                "type": "object",
                "required": ["selector", "template"],
                "properties": {
                    "replicas": {"type": "integer", "format": "int32"},
                    "selector": {"$ref": "#/components/schemas/Selector"},
                    "maxSurge": {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.util.intstr.IntOrString"},
                    "memory": {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.api.resource.Quantity"},
                    "value": {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.runtime.JSON"},
                    "labels": {"type": "object", "additionalProperties": {"type": "string", "default": ""}},
                    "raw": {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.runtime.RawExtension"},
                    "tree": {"$ref": "#/components/schemas/Tree"},
                    "ports": {"type": "array", "items": {"type": "object", "properties": {"port": {"type": "integer"}}}, "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["port"], "x-kubernetes-patch-strategy": "merge"},
                },
            },
            "Selector": {"type": "object", "properties": {"matchLabels": {"type": "object", "additionalProperties": {"type": "string"}}}},
            "io.k8s.apimachinery.pkg.util.intstr.IntOrString": {"type": "string", "format": "int-or-string"},
            "io.k8s.apimachinery.pkg.api.resource.Quantity": {"oneOf": [{"type": "string"}, {"type": "number"}], "description": "Quantity."},
            "io.k8s.apimachinery.pkg.runtime.JSON": {"description": "Any JSON."},
            "io.k8s.apimachinery.pkg.runtime.RawExtension": {"type": "object", "description": "Raw."},
            "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": {"type": "object", "properties": {"name": {"type": "string"}}},
            "Tree": {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#/components/schemas/Tree"}}}},
        }}})
    }

    #[test]
    fn openapi_becomes_a_structural_schema() {
        let s = object_schema(&doc(), "apps", "v1", "Deployment").unwrap();
        assert_eq!(s["type"], "object");
        assert_eq!(s["properties"]["metadata"], json!({"type": "object"}));
        let spec = &s["properties"]["spec"];
        assert_eq!(spec["description"], "Spec.");
        // `template` is not among the properties here, so it cannot be required.
        assert_eq!(spec["required"], json!(["selector"]));
        assert_eq!(
            spec["properties"]["replicas"],
            json!({"type": "integer", "format": "int32"})
        );
        assert_eq!(
            spec["properties"]["maxSurge"],
            json!({"x-kubernetes-int-or-string": true})
        );
        assert_eq!(
            spec["properties"]["memory"],
            json!({"x-kubernetes-int-or-string": true, "description": "Quantity."})
        );
        assert_eq!(
            spec["properties"]["value"],
            json!({"x-kubernetes-preserve-unknown-fields": true, "description": "Any JSON."}),
            "a typeless value may hold anything, not only objects"
        );
        assert_eq!(
            spec["properties"]["labels"]["additionalProperties"],
            json!({"type": "string"}),
            "defaults are dropped"
        );
        assert_eq!(
            spec["properties"]["raw"]["x-kubernetes-preserve-unknown-fields"], true,
            "an object without properties keeps its content"
        );
        let ports = &spec["properties"]["ports"];
        assert_eq!(ports["type"], "array");
        assert!(ports.get("x-kubernetes-list-type").is_none());
        assert!(ports.get("x-kubernetes-patch-strategy").is_none());
        // Recursion is cut, not inlined forever.
        let children = &spec["properties"]["tree"]["properties"]["children"]["items"];
        assert_eq!(children["x-kubernetes-preserve-unknown-fields"], true);
        assert!(!s.to_string().contains("$ref"));
    }

    #[test]
    fn unknown_kinds_have_no_schema() {
        assert!(object_schema(&doc(), "apps", "v1", "StatefulSet").is_none());
        assert!(object_schema(&doc(), "apps", "v2", "Deployment").is_none());
    }
}
