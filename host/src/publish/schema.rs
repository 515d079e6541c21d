//! From a service-cluster CRD to an APIResourceSchema in kcp.
//!
//! The schema name is `v<first 8 hex of SHA-1 of the projected spec>.<plural>.<group>`,
//! so every change to the projected API yields a new, immutable schema and
//! undoing a change reuses the old one. The hash is upstream's, byte for
//! byte (see [`schema_name`]), so schemas an upstream agent created are
//! found and reused.

use std::collections::BTreeMap;

use kube::Client;
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams, PostParams,
};
use serde_json::{Value, json};

pub use super::error::SchemaError;
use crate::apis::PublishedResource;
use crate::apis::kcp as kcpapi;
use crate::sync::context::Side;
use crate::sync::gojson;
use crate::sync::labels::{AGENT_NAME_LABEL, SOURCE_GENERATION_ANNOTATION, sha1_hex_json_line};

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

/// CRD name → (group, kind, resourceVersion).
type CrdEntries = BTreeMap<String, (String, String, String)>;

/// Which CRDs the service cluster has: name → (group, kind,
/// resourceVersion), fed by the publisher's CRD watch. Only this much is
/// kept (a cluster's CRDs with their schemas can take tens of MB); the one
/// CRD a PublishedResource needs is read when it is resolved.
#[derive(Debug, Default)]
pub struct CrdIndex {
    crds: std::sync::Mutex<CrdEntries>,
    /// Filled during a (re-)list, swapped in when it is done, so lookups
    /// meanwhile still see the previous list.
    relisting: std::sync::Mutex<Option<CrdEntries>>,
    listed: std::sync::atomic::AtomicBool,
}

impl CrdIndex {
    /// Apply one watch event of the CRD watch.
    pub fn feed(&self, change: crate::controller::store::Change<DynamicObject>) {
        use crate::controller::store::Change;
        let entry = |o: &DynamicObject| {
            let name = o.metadata.name.clone().unwrap_or_default();
            let group = o.data["spec"]["group"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let kind = o.data["spec"]["names"]["kind"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let rv = o.metadata.resource_version.clone().unwrap_or_default();
            (name, (group, kind, rv))
        };
        let mut relisting = self.relisting.lock().unwrap_or_else(|e| e.into_inner());
        let mut crds = self.crds.lock().unwrap_or_else(|e| e.into_inner());
        match change {
            Change::ListStart => *relisting = Some(BTreeMap::new()),
            Change::Listed(o) => {
                let (name, e) = entry(&o);
                relisting.get_or_insert_with(BTreeMap::new).insert(name, e);
            }
            Change::ListDone => {
                *crds = relisting.take().unwrap_or_default();
                self.listed
                    .store(true, std::sync::atomic::Ordering::Release);
            }
            Change::Apply(o) => {
                let (name, e) = entry(&o);
                crds.insert(name, e);
            }
            Change::Delete(o) => {
                crds.remove(&entry(&o).0);
            }
        }
    }

    pub fn listed(&self) -> bool {
        self.listed.load(std::sync::atomic::Ordering::Acquire)
    }

    /// The name of the CRD of `group`/`kind`, if the cluster has one.
    pub fn name_of(&self, group: &str, kind: &str) -> Option<String> {
        let crds = self.crds.lock().unwrap_or_else(|e| e.into_inner());
        crds.iter()
            .find(|(_, (g, k, _))| g == group && k == kind)
            .map(|(n, _)| n.clone())
    }

    /// `name=resourceVersion` of the CRD of `group`/`kind` (`None` when the
    /// cluster has none, or the index has not listed yet): what a resolved
    /// PublishedResource depends on.
    pub fn version_of(&self, group: &str, kind: &str) -> Option<String> {
        if !self.listed() {
            return None;
        }
        let crds = self.crds.lock().unwrap_or_else(|e| e.into_inner());
        crds.iter()
            .find(|(_, (g, k, _))| g == group && k == kind)
            .map(|(n, (_, _, rv))| format!("{n}={rv}"))
    }

    /// Every CRD's name and resourceVersion: changes when any CRD does.
    pub fn versions(&self) -> String {
        let crds = self.crds.lock().unwrap_or_else(|e| e.into_inner());
        crds.iter()
            .map(|(n, (_, _, rv))| format!("{n}={rv}"))
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// Resources kcp itself serves in every workspace. Published as they are,
/// kcp would let the export's schema stand beside its own, and the agent
/// would take hold of the consumers' own objects (add its finalizer to
/// every ServiceAccount, copy every Secret): such a PublishedResource needs
/// `projection.group` (or `projection.resource`).
pub fn served_by_kcp(group: &str, resource: &str) -> bool {
    const CORE: &[&str] = &[
        "namespaces",
        "configmaps",
        "secrets",
        "serviceaccounts",
        "events",
        "limitranges",
        "resourcequotas",
    ];
    const GROUPS: &[&str] = &[
        "rbac.authorization.k8s.io",
        "coordination.k8s.io",
        "events.k8s.io",
        "admissionregistration.k8s.io",
        "apiextensions.k8s.io",
        "authentication.k8s.io",
        "authorization.k8s.io",
        "certificates.k8s.io",
        "flowcontrol.apiserver.k8s.io",
    ];
    match group {
        "" | "core" => CORE.contains(&resource),
        g => GROUPS.contains(&g) || g == "kcp.io" || g.ends_with(".kcp.io"),
    }
}

/// Find the CRD for a PublishedResource's group and kind: by name from
/// `index` once it has listed (one GET), else by listing them all.
pub async fn find_crd(
    service: &Client,
    index: &CrdIndex,
    pr: &PublishedResource,
) -> Result<Value, SchemaError> {
    let api: Api<DynamicObject> = Api::all_with(service.clone(), &kcpapi::crd());
    let pr_name = pr.metadata.name.clone().unwrap_or_default();
    let (group, kind) = (&pr.spec.resource.api_group, &pr.spec.resource.kind);
    let crd = if index.listed() {
        match index.name_of(group, kind) {
            // A list by name: `list` is what the agent may do on CRDs.
            Some(name) => api
                .list(&ListParams::default().fields(&format!("metadata.name={name}")))
                .await
                .map_err(|source| SchemaError::Service {
                    action: format!(
                        "reading CustomResourceDefinition {name} on the service cluster"
                    ),
                    source,
                })?
                .items
                .into_iter()
                .next()
                .and_then(|c| serde_json::to_value(c).ok()),
            None => None,
        }
    } else {
        let crds =
            api.list(&ListParams::default())
                .await
                .map_err(|source| SchemaError::Service {
                    action: "listing CustomResourceDefinitions on the service cluster".into(),
                    source,
                })?;
        crds.items
            .into_iter()
            .filter_map(|c| serde_json::to_value(c).ok())
            .find(|c| {
                c["spec"]["group"] == group.as_str() && c["spec"]["names"]["kind"] == kind.as_str()
            })
    };
    if let Some(crd) = crd {
        return Ok(crd);
    }
    // No CRD: a built-in resource (Deployment, Role, ConfigMap, …), described
    // as the CRD it would have.
    super::openapi::crd_from_openapi(service, &pr.spec.resource.api_group, &pr.spec.resource.kind)
        .await?
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
    // Subresources are declared per version; the storage version's count.
    let subresources = crd_spec["versions"]
        .as_array()
        .and_then(|vs| vs.iter().find(|v| v["name"] == storage))
        .map(|v| v["subresources"].clone())
        .unwrap_or(Value::Null);
    Side {
        ar: ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, storage, kind), plural),
        namespaced: crd_spec["scope"] == "Namespaced",
        status_subresource: subresources.get("status").is_some_and(|s| !s.is_null()),
        scale_subresource: subresources.get("scale").is_some_and(|s| !s.is_null()),
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
                out["schema"] = accept_anything_schema();
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
    if ars_spec["versions"].as_array().is_some_and(|v| v.len() > 1) {
        ars_spec["conversion"] = json!({"strategy": "None"});
    }
    let schema_name = schema_name(local_crd, spec);
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
    let mut schema = schema;
    // As upstream: the CRD's API approval (required by kcp for the
    // protected *.k8s.io groups) is the one annotation kept.
    if let Some(approval) =
        local_crd["metadata"]["annotations"][crate::publish::openapi::APPROVAL_ANNOTATION].as_str()
    {
        schema["metadata"]["annotations"][crate::publish::openapi::APPROVAL_ANNOTATION] =
            json!(approval);
    }
    Resolved {
        local: side_of(&local_crd["spec"]),
        remote: side_of(spec),
        schema_name,
        schema,
    }
}

/// The APIResourceSchema name for a projected CRD spec, as upstream's
/// `GetAPIResourceSchemaName` (internal/kcp/apiresourceschema.go) computes
/// it: `v` + the first 8 hex digits of `crypto.Hash(crd.Spec)` with
/// `conversion` cleared (it does not change the API), then
/// `.<plural>.<group>`. `crypto.Hash` is the SHA-1 of what Go's
/// `json.Encoder` writes for the typed spec: declaration order, `omitempty`,
/// Go escaping, and a trailing newline.
///
/// Upstream reads the CRD through its discovery client, which gives every
/// version without a schema an "accept anything" schema when the CRD is
/// marked non-structural; the hash covers that schema, so it is added here
/// too. `local_crd` is the service cluster's CRD (it carries the condition).
pub fn schema_name(local_crd: &Value, projected_spec: &Value) -> String {
    let mut spec = projected_spec.clone();
    if is_non_structural(local_crd)
        && let Some(versions) = spec.get_mut("versions").and_then(Value::as_array_mut)
    {
        for v in versions.iter_mut().filter(|v| v.is_object()) {
            if v["schema"]["openAPIV3Schema"].is_null() {
                v["schema"] = json!({"openAPIV3Schema": accept_anything_schema()});
            }
        }
    }
    let hash = sha1_hex_json_line(&gojson::crd_spec_string(&spec));
    let plural = spec["names"]["plural"].as_str().unwrap_or_default();
    let group = spec["group"].as_str().unwrap_or_default();
    // Upstream would write a name ending in "." for the core group, which
    // kcp rejects; nothing exists to take over there, so use a valid name.
    let group_part = if group.is_empty() { "core" } else { group };
    format!("v{}.{plural}.{group_part}", &hash[..8])
}

fn accept_anything_schema() -> Value {
    json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})
}

/// Whether the API server marked the CRD's schema as non-structural.
fn is_non_structural(crd: &Value) -> bool {
    crd["status"]["conditions"].as_array().is_some_and(|cs| {
        cs.iter()
            .any(|c| c["type"] == "NonStructuralSchema" && c["status"] == "True")
    })
}

/// Create the schema in kcp unless it exists; schemas are immutable.
pub async fn ensure_schema(
    export_client: &Client,
    resolved: &Resolved,
) -> Result<bool, SchemaError> {
    let api: Api<DynamicObject> =
        Api::all_with(export_client.clone(), &kcpapi::apiresourceschema());
    if let Some(existing) =
        api.get_opt(&resolved.schema_name)
            .await
            .map_err(|source| SchemaError::Kube {
                action: format!("reading APIResourceSchema {}", resolved.schema_name),
                source,
            })?
    {
        // The spec is immutable (the name is its hash), but the agent's
        // label and annotation are repaired, as upstream does.
        repair_agent_metadata(&api, &existing, resolved).await?;
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

/// Put back the agent-name label and annotation of an existing schema if
/// someone changed or removed them.
async fn repair_agent_metadata(
    api: &Api<DynamicObject>,
    existing: &DynamicObject,
    resolved: &Resolved,
) -> Result<(), SchemaError> {
    let want = |field: &str| {
        resolved.schema["metadata"][field][AGENT_NAME_LABEL]
            .as_str()
            .map(str::to_string)
    };
    let (want_label, want_annotation) = (want("labels"), want("annotations"));
    let has_label = existing
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(AGENT_NAME_LABEL))
        .cloned();
    let has_annotation = existing
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(AGENT_NAME_LABEL))
        .cloned();
    if has_label == want_label && has_annotation == want_annotation {
        return Ok(());
    }
    let patch = json!({"metadata": {
        "labels": {AGENT_NAME_LABEL: want_label},
        "annotations": {AGENT_NAME_LABEL: want_annotation},
    }});
    api.patch(
        &resolved.schema_name,
        &PatchParams::default(),
        &Patch::Merge(&patch),
    )
    .await
    .map_err(|source| SchemaError::Kube {
        action: format!(
            "repairing the agent label of APIResourceSchema {}",
            resolved.schema_name
        ),
        source,
    })?;
    tracing::info!(schema = %resolved.schema_name, "repaired the agent-name label/annotation of an existing APIResourceSchema");
    Ok(())
}

/// `plural.group` of a schema name `v<hash>.<plural>.<group>`.
pub fn group_resource_of(schema_name: &str) -> Option<&str> {
    let (prefix, rest) = schema_name.split_once('.')?;
    (prefix.starts_with('v') && rest.contains('.')).then_some(rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_kcp_serves_itself() {
        assert!(served_by_kcp("", "serviceaccounts"));
        assert!(served_by_kcp("", "secrets"));
        assert!(served_by_kcp("rbac.authorization.k8s.io", "roles"));
        assert!(served_by_kcp("apis.kcp.io", "apiexports"));
        assert!(
            !served_by_kcp("", "services"),
            "the legacy syncer's Services"
        );
        assert!(!served_by_kcp("", "pods"));
        assert!(!served_by_kcp("apps", "deployments"));
        assert!(!served_by_kcp("example.com", "serviceaccounts"));
    }

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

    // Vectors computed with upstream api-syncagent v0.7.0's own code: a
    // throwaway test in its internal/kcp package decoded each CRD below
    // into apiextensionsv1.CustomResourceDefinition (as its client does),
    // applied discovery.RetrieveCRD's non-structural schema substitution,
    // and printed kcp.GetAPIResourceSchemaName(crd) and json.Marshal of the
    // spec with conversion cleared.
    const RICH_CRD: &str = r##"{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"crontabs.example.com","generation":3,"uid":"0b6c1b5e-1111-2222-3333-444455556666"},"spec":{"group":"example.com","names":{"plural":"crontabs","singular":"crontab","shortNames":["ct"],"kind":"CronTab","listKind":"CronTabList","categories":["all","example"]},"scope":"Namespaced","versions":[{"name":"v1","served":true,"storage":false,"deprecated":true,"deprecationWarning":"example.com/v1 CronTab is deprecated; use v2 <now> & later","schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}},{"name":"v2","served":true,"storage":true,"schema":{"openAPIV3Schema":{"description":"CronTab runs <things> & more on a schedule.","type":"object","required":["spec"],"properties":{"apiVersion":{"type":"string","description":"APIVersion defines the versioned schema of this representation of an object."},"kind":{"type":"string"},"metadata":{"type":"object"},"spec":{"type":"object","description":"Desired state.","required":["cronSpec","image"],"properties":{"cronSpec":{"type":"string","pattern":"^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$","minLength":9,"maxLength":64},"image":{"type":"string","enum":["nginx:1.27","busybox"],"default":"busybox"},"replicas":{"type":"integer","format":"int32","minimum":1,"maximum":10,"default":1},"ratio":{"type":"number","minimum":0.000001,"maximum":1e21,"multipleOf":0.25,"exclusiveMaximum":true},"tags":{"type":"array","items":{"type":"string"},"maxItems":16,"x-kubernetes-list-type":"set"},"ports":{"type":"array","items":{"type":"object","required":["name"],"properties":{"name":{"type":"string"},"port":{"x-kubernetes-int-or-string":true,"anyOf":[{"type":"integer"},{"type":"string"}]}}},"x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["name"]},"config":{"type":"object","default":{"a":1,"b":"<x>"},"x-kubernetes-preserve-unknown-fields":true},"selector":{"type":"object","additionalProperties":{"type":"string"},"x-kubernetes-map-type":"atomic"},"template":{"type":"object","x-kubernetes-embedded-resource":true,"x-kubernetes-preserve-unknown-fields":true},"mode":{"type":"string","nullable":true,"x-kubernetes-validations":[{"rule":"self in ['a','b']","message":"mode must be a or b","reason":"FieldValueInvalid","fieldPath":".mode"}]}},"x-kubernetes-validations":[{"rule":"self.replicas <= 10 && self.replicas >= 1","messageExpression":"'bad ' + string(self.replicas)"}]},"status":{"type":"object","properties":{"lastScheduleTime":{"type":"string","format":"date-time"},"replicas":{"type":"integer","format":"int64"},"labelSelector":{"type":"string"}}}}}},"subresources":{"status":{},"scale":{"specReplicasPath":".spec.replicas","statusReplicasPath":".status.replicas","labelSelectorPath":".status.labelSelector"}},"additionalPrinterColumns":[{"name":"Spec","type":"string","description":"The cron spec","jsonPath":".spec.cronSpec"},{"name":"Replicas","type":"integer","jsonPath":".spec.replicas"},{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp","priority":1}],"selectableFields":[{"jsonPath":".spec.image"}]}],"conversion":{"strategy":"None"}},"status":{"conditions":[{"type":"Established","status":"True","reason":"InitialNamesAccepted","message":"the initial names have been accepted"}],"acceptedNames":{"plural":"crontabs","kind":"CronTab"},"storedVersions":["v2"]}}"##;
    const MINIMAL_CRD: &str = r##"{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"widgets.example.org","generation":1},"spec":{"group":"example.org","names":{"plural":"widgets","singular":"widget","kind":"Widget","listKind":"WidgetList"},"scope":"Cluster","versions":[{"name":"v1alpha1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}],"conversion":{"strategy":"None"}}}"##;
    const ODD_CRD: &str = r##"{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"oddities.test.io"},"spec":{"group":"test.io","names":{"plural":"oddities","singular":"","shortNames":[],"kind":"Oddity","categories":null},"scope":"Namespaced","preserveUnknownFields":true,"versions":[{"name":"v1beta1","served":false,"storage":false,"deprecated":false,"subresources":{},"additionalPrinterColumns":[],"schema":{"openAPIV3Schema":{"type":"object","properties":{},"required":[],"nullable":false,"x-kubernetes-preserve-unknown-fields":false}}},{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"id":"urn:x","$schema":"http://json-schema.org/draft-04/schema#","title":"Odd\tthings \u0001 \u2028 é","type":"object","example":{"k":"v&w","n":[1,2.5,1e-7,100000000000000000000,12345678901234567890]},"maximum":-0.0,"minimum":-1.5e300,"maxProperties":5,"minProperties":0,"uniqueItems":true,"exclusiveMinimum":false,"allOf":[{"required":["a"]}],"oneOf":[{"required":["b"]}],"not":{"required":["c"]},"properties":{"a":{"type":"array","items":[{"type":"string"},{"type":"integer"}],"additionalItems":false},"b":{"type":"object","additionalProperties":true,"patternProperties":{"^x-":{"type":"string"}}},"c":{"type":"object","additionalProperties":false,"dependencies":{"p":["q","r"],"s":{"required":["t"]}}},"d":{"type":"string","externalDocs":{"description":"docs","url":"https://example.com/?a=1&b=2"},"enum":["x",null,3]}},"definitions":{"z":{"type":"string"},"y":{"type":"integer"}}}}}]}}"##;
    const NONSTRUCTURAL_CRD: &str = r##"{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"legacies.old.example.com"},"spec":{"group":"old.example.com","names":{"plural":"legacies","singular":"legacy","kind":"Legacy","listKind":"LegacyList"},"scope":"Namespaced","versions":[{"name":"v1","served":true,"storage":true}]},"status":{"conditions":[{"type":"NonStructuralSchema","status":"True","reason":"Violations","message":"spec.versions[0].schema.openAPIV3Schema.type: Required value"}]}}"##;
    const RICH_SPEC_GO_JSON: &str = r##"{"group":"example.com","names":{"plural":"crontabs","singular":"crontab","shortNames":["ct"],"kind":"CronTab","listKind":"CronTabList","categories":["all","example"]},"scope":"Namespaced","versions":[{"name":"v1","served":true,"storage":false,"deprecated":true,"deprecationWarning":"example.com/v1 CronTab is deprecated; use v2 \u003cnow\u003e \u0026 later","schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}},{"name":"v2","served":true,"storage":true,"schema":{"openAPIV3Schema":{"description":"CronTab runs \u003cthings\u003e \u0026 more on a schedule.","type":"object","required":["spec"],"properties":{"apiVersion":{"description":"APIVersion defines the versioned schema of this representation of an object.","type":"string"},"kind":{"type":"string"},"metadata":{"type":"object"},"spec":{"description":"Desired state.","type":"object","required":["cronSpec","image"],"properties":{"config":{"type":"object","default":{"a":1,"b":"\u003cx\u003e"},"x-kubernetes-preserve-unknown-fields":true},"cronSpec":{"type":"string","maxLength":64,"minLength":9,"pattern":"^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$"},"image":{"type":"string","default":"busybox","enum":["nginx:1.27","busybox"]},"mode":{"type":"string","nullable":true,"x-kubernetes-validations":[{"rule":"self in ['a','b']","message":"mode must be a or b","reason":"FieldValueInvalid","fieldPath":".mode"}]},"ports":{"type":"array","items":{"type":"object","required":["name"],"properties":{"name":{"type":"string"},"port":{"anyOf":[{"type":"integer"},{"type":"string"}],"x-kubernetes-int-or-string":true}}},"x-kubernetes-list-map-keys":["name"],"x-kubernetes-list-type":"map"},"ratio":{"type":"number","maximum":1e+21,"exclusiveMaximum":true,"minimum":0.000001,"multipleOf":0.25},"replicas":{"type":"integer","format":"int32","default":1,"maximum":10,"minimum":1},"selector":{"type":"object","additionalProperties":{"type":"string"},"x-kubernetes-map-type":"atomic"},"tags":{"type":"array","maxItems":16,"items":{"type":"string"},"x-kubernetes-list-type":"set"},"template":{"type":"object","x-kubernetes-preserve-unknown-fields":true,"x-kubernetes-embedded-resource":true}},"x-kubernetes-validations":[{"rule":"self.replicas \u003c= 10 \u0026\u0026 self.replicas \u003e= 1","messageExpression":"'bad ' + string(self.replicas)"}]},"status":{"type":"object","properties":{"labelSelector":{"type":"string"},"lastScheduleTime":{"type":"string","format":"date-time"},"replicas":{"type":"integer","format":"int64"}}}}}},"subresources":{"status":{},"scale":{"specReplicasPath":".spec.replicas","statusReplicasPath":".status.replicas","labelSelectorPath":".status.labelSelector"}},"additionalPrinterColumns":[{"name":"Spec","type":"string","description":"The cron spec","jsonPath":".spec.cronSpec"},{"name":"Replicas","type":"integer","jsonPath":".spec.replicas"},{"name":"Age","type":"date","priority":1,"jsonPath":".metadata.creationTimestamp"}],"selectableFields":[{"jsonPath":".spec.image"}]}]}"##;
    const MINIMAL_SPEC_GO_JSON: &str = r##"{"group":"example.org","names":{"plural":"widgets","singular":"widget","kind":"Widget","listKind":"WidgetList"},"scope":"Cluster","versions":[{"name":"v1alpha1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}"##;
    const ODD_SPEC_GO_JSON: &str = r##"{"group":"test.io","names":{"plural":"oddities","kind":"Oddity"},"scope":"Namespaced","versions":[{"name":"v1beta1","served":false,"storage":false,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":false}},"subresources":{}},{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"id":"urn:x","$schema":"http://json-schema.org/draft-04/schema#","type":"object","title":"Odd\tthings \u0001 \u2028 é","maximum":-0,"minimum":-1.5e+300,"uniqueItems":true,"maxProperties":5,"minProperties":0,"allOf":[{"required":["a"]}],"oneOf":[{"required":["b"]}],"not":{"required":["c"]},"properties":{"a":{"type":"array","items":[{"type":"string"},{"type":"integer"}],"additionalItems":false},"b":{"type":"object","additionalProperties":true,"patternProperties":{"^x-":{"type":"string"}}},"c":{"type":"object","additionalProperties":false,"dependencies":{"p":["q","r"],"s":{"required":["t"]}}},"d":{"type":"string","enum":["x",null,3],"externalDocs":{"description":"docs","url":"https://example.com/?a=1\u0026b=2"}}},"definitions":{"y":{"type":"integer"},"z":{"type":"string"}},"example":{"k":"v\u0026w","n":[1,2.5,1e-7,100000000000000000000,12345678901234567890]}}}}],"preserveUnknownFields":true}"##;

    fn parse(crd: &str) -> Value {
        serde_json::from_str(crd).expect("valid JSON")
    }

    #[test]
    fn schema_names_match_upstream() {
        let cases = [
            (RICH_CRD, "vb21a81f7.crontabs.example.com"),
            (MINIMAL_CRD, "v0b35a2df.widgets.example.org"),
            (ODD_CRD, "ve87fdc30.oddities.test.io"),
            (NONSTRUCTURAL_CRD, "vd575a047.legacies.old.example.com"),
        ];
        for (crd, want) in cases {
            let crd = parse(crd);
            assert_eq!(schema_name(&crd, &crd["spec"]), want);
            assert_eq!(to_schema(&crd, &crd, "agent").schema_name, want);
        }
    }

    #[test]
    fn spec_encoding_matches_upstream() {
        for (crd, want) in [
            (RICH_CRD, RICH_SPEC_GO_JSON),
            (MINIMAL_CRD, MINIMAL_SPEC_GO_JSON),
            (ODD_CRD, ODD_SPEC_GO_JSON),
        ] {
            assert_eq!(gojson::crd_spec_string(&parse(crd)["spec"]), want);
        }
    }

    #[test]
    fn only_non_structural_crds_get_the_accept_anything_schema() {
        let mut crd = parse(NONSTRUCTURAL_CRD);
        let with = schema_name(&crd, &crd["spec"]);
        crd["status"]["conditions"][0]["status"] = json!("False");
        assert_ne!(schema_name(&crd, &crd["spec"]), with);
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
