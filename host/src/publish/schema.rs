//! From a service-cluster CRD to an APIResourceSchema in kcp.
//!
//! The schema name is `v<first 8 hex of SHA-1 of the projected spec>.<plural>.<group>`,
//! so every change to the projected API yields a new, immutable schema and
//! undoing a change reuses the old one.

use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, PostParams};
use serde_json::{Value, json};

use crate::apis::PublishedResource;
use crate::apis::kcp as kcpapi;
use crate::sync::labels::{AGENT_NAME_LABEL, SOURCE_GENERATION_ANNOTATION, sha1_hex};
use crate::sync::syncer::Side;

#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    #[error(
        "PublishedResource {pr}: spec.resource: no CustomResourceDefinition for kind {kind:?} in group {group:?} on the service cluster; install the CRD or fix apiGroup/kind"
    )]
    CrdNotFound {
        pr: String,
        group: String,
        kind: String,
    },
    #[error("PublishedResource {pr}: {message}")]
    Invalid { pr: String, message: String },
    #[error("{action}: {source}")]
    Kube {
        action: String,
        #[source]
        source: kube::Error,
    },
}

/// A PublishedResource resolved against the service cluster.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// The resource on the service cluster (its storage version).
    pub local: Side,
    /// The resource as published in kcp (the schema's storage version).
    pub remote: Side,
    pub schema_name: String,
    /// The full APIResourceSchema object to create.
    pub schema: Value,
}

/// Find the CRD for a PublishedResource's group and kind.
pub async fn find_crd(service: &Client, pr: &PublishedResource) -> Result<Value, SchemaError> {
    let api: Api<DynamicObject> = Api::all_with(service.clone(), &kcpapi::crd());
    let crds = api
        .list(&ListParams::default())
        .await
        .map_err(|source| SchemaError::Kube {
            action: "listing CustomResourceDefinitions on the service cluster".into(),
            source,
        })?;
    let pr_name = pr.metadata.name.clone().unwrap_or_default();
    crds.items
        .into_iter()
        .map(|c| serde_json::to_value(c).expect("serializes"))
        .find(|c| {
            c["spec"]["group"] == pr.spec.resource.api_group.as_str()
                && c["spec"]["names"]["kind"] == pr.spec.resource.kind.as_str()
        })
        .ok_or_else(|| SchemaError::CrdNotFound {
            pr: pr_name,
            group: pr.spec.resource.api_group.clone(),
            kind: pr.spec.resource.kind.clone(),
        })
}

fn side_of(crd_spec: &Value) -> Side {
    let group = crd_spec["group"].as_str().unwrap_or_default();
    let storage = crd_spec["versions"]
        .as_array()
        .and_then(|vs| vs.iter().find(|v| v["storage"] == true))
        .and_then(|v| v["name"].as_str())
        .unwrap_or_default();
    let kind = crd_spec["names"]["kind"].as_str().unwrap_or_default();
    let plural = crd_spec["names"]["plural"].as_str().unwrap_or_default();
    Side {
        ar: ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, storage, kind), plural),
        namespaced: crd_spec["scope"] == "Namespaced",
    }
}

/// Build the APIResourceSchema for a projected CRD (versions already
/// selected); `local_crd` is the service cluster's CRD as it is.
pub fn to_schema(local_crd: &Value, projected_crd: &Value, agent_name: &str) -> Resolved {
    let spec = &projected_crd["spec"];
    let versions: Vec<Value> = spec["versions"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|v| {
            let mut out = json!({
                "name": v["name"],
                "served": v["served"],
                "storage": v["storage"],
                "schema": v["schema"]["openAPIV3Schema"].clone(),
            });
            for k in [
                "deprecated",
                "deprecationWarning",
                "subresources",
                "additionalPrinterColumns",
            ] {
                if !v[k].is_null() {
                    out[k] = v[k].clone();
                }
            }
            if out["schema"].is_null() {
                // Non-structural: accept anything rather than fail publishing.
                out["schema"] =
                    json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
            }
            out
        })
        .collect();
    let mut ars_spec = json!({
        "group": spec["group"],
        "names": spec["names"],
        "scope": spec["scope"],
        "versions": versions,
    });
    // Hash before conversion is added: conversion does not change the API.
    let hash = sha1_hex(&serde_json::to_string(&ars_spec).expect("serializes"));
    if ars_spec["versions"].as_array().is_some_and(|v| v.len() > 1) {
        ars_spec["conversion"] = json!({"strategy": "None"});
    }
    let plural = spec["names"]["plural"].as_str().unwrap_or_default();
    let group = spec["group"].as_str().unwrap_or_default();
    let group_part = if group.is_empty() { "core" } else { group };
    let schema_name = format!("v{}.{plural}.{group_part}", &hash[..8]);
    let generation = local_crd["metadata"]["generation"]
        .as_i64()
        .unwrap_or(0)
        .to_string();
    let schema = json!({
        "apiVersion": "apis.kcp.io/v1alpha1",
        "kind": "APIResourceSchema",
        "metadata": {
            "name": schema_name,
            "labels": {AGENT_NAME_LABEL: agent_name},
            "annotations": {AGENT_NAME_LABEL: agent_name, SOURCE_GENERATION_ANNOTATION: generation},
        },
        "spec": ars_spec,
    });
    Resolved {
        local: side_of(&local_crd["spec"]),
        remote: side_of(spec),
        schema_name,
        schema,
    }
}

/// Create the schema in kcp unless it exists; schemas are immutable.
pub async fn ensure_schema(
    export_client: &Client,
    resolved: &Resolved,
) -> Result<bool, SchemaError> {
    let api: Api<DynamicObject> =
        Api::all_with(export_client.clone(), &kcpapi::apiresourceschema());
    if api
        .get_opt(&resolved.schema_name)
        .await
        .map_err(|source| SchemaError::Kube {
            action: format!("reading APIResourceSchema {}", resolved.schema_name),
            source,
        })?
        .is_some()
    {
        return Ok(false);
    }
    let obj: DynamicObject = serde_json::from_value(resolved.schema.clone()).expect("valid object");
    match api.create(&PostParams::default(), &obj).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
        Err(source) => Err(SchemaError::Kube {
            action: format!("creating APIResourceSchema {}", resolved.schema_name),
            source,
        }),
    }
}

/// `plural.group` of a schema name `v<hash>.<plural>.<group>`.
pub fn group_resource_of(schema_name: &str) -> Option<&str> {
    let (prefix, rest) = schema_name.split_once('.')?;
    (prefix.starts_with('v') && rest.contains('.')).then_some(rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd() -> Value {
        json!({
            "metadata": {"name": "crontabs.example.com", "generation": 2},
            "spec": {
                "group": "example.com",
                "names": {"kind": "CronTab", "plural": "crontabs", "singular": "crontab", "listKind": "CronTabList"},
                "scope": "Namespaced",
                "versions": [
                    {"name": "v1", "served": true, "storage": false, "schema": {"openAPIV3Schema": {"type": "object"}}},
                    {"name": "v2", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object"}}, "subresources": {"status": {}}},
                    {"name": "v3", "served": false, "storage": false, "schema": {"openAPIV3Schema": {"type": "object"}}}
                ]
            }
        })
    }

    #[test]
    fn schema_name_is_content_addressed() {
        let mut c = crd();
        // What the projector returns when only v2 is selected.
        c["spec"]["versions"] = json!([c["spec"]["versions"][1].clone()]);
        let a = to_schema(&c, &c, "agent");
        assert!(a.schema_name.starts_with('v'));
        assert!(a.schema_name.ends_with(".crontabs.example.com"));
        assert_eq!(
            a.schema["spec"]["versions"][0]["schema"],
            json!({"type": "object"})
        );
        assert_eq!(a.remote.ar.version, "v2");
        assert!(a.remote.namespaced);
        let mut c2 = c.clone();
        c2["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["description"] = json!("changed");
        assert_ne!(to_schema(&c2, &c2, "agent").schema_name, a.schema_name);
        assert_eq!(to_schema(&c, &c, "other-agent").schema_name, a.schema_name);
        assert_eq!(
            group_resource_of(&a.schema_name),
            Some("crontabs.example.com")
        );
    }
}
