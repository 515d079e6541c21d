//! `PublishedResource` (syncagent.kcp.io/v1alpha1): which service-cluster
//! CRD to publish into kcp, how to project and name it, and how to mutate
//! objects on the way. Field names and meanings follow upstream exactly;
//! syncweave adds optional `wasm` plugin references.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub const GROUP: &str = "syncagent.kcp.io";

#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "syncagent.kcp.io",
    version = "v1alpha1",
    kind = "PublishedResource",
    plural = "publishedresources",
    status = "PublishedResourceStatus",
    printcolumn = r#"{"name":"Group","type":"string","jsonPath":".spec.resource.apiGroup"}"#,
    printcolumn = r#"{"name":"Kind","type":"string","jsonPath":".spec.resource.kind"}"#,
    printcolumn = r#"{"name":"Schema","type":"string","jsonPath":".status.resourceSchemaName"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct PublishedResourceSpec {
    /// The CRD (or built-in resource) on the service cluster to publish.
    pub resource: SourceResourceDescriptor,

    /// How the resource is presented in kcp (group, version, kind, scope…).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub projection: Option<ResourceProjection>,

    /// How service-cluster copies are named. Defaults: namespace = the
    /// consumer's logical-cluster name; name = sha3short(ns)-sha3short(name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub naming: Option<ResourceNaming>,

    /// Only sync objects matching these selectors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<ResourceFilter>,

    /// Resolve and expose the consumer workspace's path (kcp.io/path).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_workspace_paths: Option<bool>,

    /// Ordered mutation rules for spec (kcp → service) and status (service → kcp).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mutation: Option<ResourceMutationSpec>,

    /// Related objects (Secrets, ConfigMaps, …) synced alongside the primary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "preserve_unknown_array")]
    pub related: Option<Vec<serde_json::Value>>,

    /// `enabled: false` publishes the schema but syncs no objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub synchronization: Option<SynchronizationSpec>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SourceResourceDescriptor {
    /// API group of the service-cluster resource (empty for core).
    pub api_group: String,
    /// Deprecated: use `versions`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Versions to publish; empty means all served versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub versions: Option<Vec<String>>,
    /// Kind of the service-cluster resource.
    pub kind: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceProjection {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// Deprecated: use `versions`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Map of service-cluster version → version in kcp.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub versions: Option<BTreeMap<String, String>>,
    /// `Cluster` or `Namespaced`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plural: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub short_names: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub categories: Option<Vec<String>>,
    /// A projector plugin run after the rules above.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wasm: Option<WasmUse>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceNaming {
    /// Go template (or legacy `$remote…` pattern) for the namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Go template (or legacy `$remote…` pattern) for the name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A namer plugin; replaces the templates above.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wasm: Option<WasmUse>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceFilter {
    /// Selects objects by the labels of their kcp Namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<LabelSelector>,
    /// Selects objects by their own labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<LabelSelector>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceMutationSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<Vec<ResourceMutation>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Vec<ResourceMutation>>,
}

/// One mutation step; exactly one field should be set.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceMutation {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delete: Option<DeleteMutation>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regex: Option<RegexMutation>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<TemplateMutation>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cel: Option<CelMutation>,
    /// A mutator plugin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wasm: Option<WasmUse>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct DeleteMutation {
    pub path: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct RegexMutation {
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replacement: Option<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct TemplateMutation {
    pub path: String,
    pub template: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct CelMutation {
    pub path: String,
    pub expression: String,
}

/// A use of a Wasm plugin: which plugin, and its config for this use.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WasmUse {
    /// Name of a cluster-scoped WasmPlugin (syncweave.dev/v1alpha1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugin: Option<String>,
    /// Inline source instead of a WasmPlugin: a built-in name, file://,
    /// https:// (with sha256), configmap://ns/name/key or oci://…@sha256:….
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Required with an https:// source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// Plugin config, passed to the plugin as JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "preserve_unknown_object")]
    pub config: Option<serde_json::Value>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct SynchronizationSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PublishedResourceStatus {
    /// Name of the APIResourceSchema created in kcp for this resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_schema_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
}

fn preserve_unknown_array(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "array",
        "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
    })
}

fn preserve_unknown_object(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"x-kubernetes-preserve-unknown-fields": true})
}

impl PublishedResourceSpec {
    /// Whether objects are synced (absent means enabled).
    pub fn sync_enabled(&self) -> bool {
        self.synchronization
            .as_ref()
            .and_then(|s| s.enabled)
            .unwrap_or(true)
    }

    /// The versions selected on the service cluster; empty = all served.
    /// Setting both `version` and `versions` is an error, as upstream.
    pub fn selected_versions(&self) -> Result<Vec<String>, String> {
        match (&self.resource.version, &self.resource.versions) {
            (Some(_), Some(v)) if !v.is_empty() => {
                Err("spec.resource: set either version (deprecated) or versions, not both".into())
            }
            (Some(v), _) => Ok(vec![v.clone()]),
            (None, Some(v)) => Ok(v.clone()),
            (None, None) => Ok(vec![]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_manifest_parses() {
        let yaml = r#"
apiVersion: syncagent.kcp.io/v1alpha1
kind: PublishedResource
metadata:
  name: publish-certmanager-certs
spec:
  resource:
    kind: Certificate
    apiGroup: cert-manager.io
    versions: [v1]
  naming:
    namespace: "{{ .ClusterName }}"
    name: "$remoteClusterName-$remoteNamespaceHash-$remoteNameHash"
  projection:
    group: certs.example.corp
    kind: Cert
  enableWorkspacePaths: true
  mutation:
    spec:
      - regex: {path: "metadata.name", pattern: "^(.+)$", replacement: "x-$1"}
      - delete: {path: "spec.foo"}
  related:
    - identifier: tls-secret
      origin: service
      kind: Secret
      object:
        reference:
          path: spec.secretName
"#;
        let pr: PublishedResource = serde_yaml_ng::from_str(yaml).unwrap();
        assert_eq!(pr.spec.resource.kind, "Certificate");
        assert_eq!(
            pr.spec.projection.as_ref().unwrap().kind.as_deref(),
            Some("Cert")
        );
        assert_eq!(pr.spec.related.as_ref().unwrap().len(), 1);
        assert!(pr.spec.sync_enabled());
    }

    #[test]
    fn version_and_versions_conflict() {
        let mut s = PublishedResourceSpec::default();
        s.resource.version = Some("v1".into());
        assert_eq!(s.selected_versions().unwrap(), vec!["v1"]);
        s.resource.versions = Some(vec!["v2".into()]);
        assert!(s.selected_versions().is_err());
    }

    /// The CRD manifest shipped in charts/ must match the Rust types.
    #[test]
    fn shipped_crd_is_up_to_date() {
        crate::apis::assert_shipped_crd(
            "syncagent.kcp.io_publishedresources.yaml",
            &super::super::crd_yaml(),
        );
    }
}
