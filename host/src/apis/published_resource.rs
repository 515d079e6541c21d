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

/// CEL rule messages of `spec.related[]` (upstream's).
pub const RELATED_KIND_XOR_GVR: &str =
    "must specify either kind (deprecated) or group, version, resource";
pub const RELATED_RESOURCE_NEEDS_VERSION: &str =
    "resource and version must be configured together or not at all";
pub const RELATED_GROUP_NEEDS_GVR: &str =
    "configuring a group also requires a version and resource";
pub const RELATED_IDENTITY_NEEDS_GVR: &str = "identity hashes can only be used with GVRs";
pub const RELATED_STATUS_NEEDS_WATCH: &str =
    "watch must be configured when origin is service and syncStatus is true";
pub const RELATED_WATCH_ONE: &str = "exactly one of byOwner or bySelector must be set";

/// Why `spec.filter.namespace` is refused on a cluster-scoped resource.
pub const NAMESPACE_FILTER_CLUSTER_SCOPED: &str = "spec.filter.namespace has no effect on a \
     cluster-scoped resource (spec.projection.scope Cluster, or a cluster-scoped CRD without \
     projection.scope): its objects in kcp have no namespace, so every object would be synced; \
     remove spec.filter.namespace, or select objects with spec.filter.resource";

/// Why `spec.naming.wasm` together with the name templates is refused.
pub const NAMING_WASM_WITH_TEMPLATES: &str = "spec.naming.wasm replaces the name and namespace \
     templates, so spec.naming.name and spec.naming.namespace would be ignored; remove them, or \
     remove spec.naming.wasm";

/// Why a mutation rule with several (or no) mechanisms is refused.
pub const MUTATION_RULE_NOT_ONE: &str = "a mutation rule must set exactly one of delete, regex, \
     template, cel or wasm (with several, only the first would run and the others would be \
     ignored); split it into one rule per step";

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
#[schemars(extend("x-kubernetes-validations" = [
    {
        "rule": "!(has(self.filter) && has(self.filter.namespace) && has(self.projection) && has(self.projection.scope) && self.projection.scope == 'Cluster')",
        "message": NAMESPACE_FILTER_CLUSTER_SCOPED,
    },
]))]
pub struct PublishedResourceSpec {
    /// The CRD on the service cluster to publish.
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

    /// Resolve the consumer workspace's path: `.ClusterPath` in naming
    /// templates, and an annotation on the service copy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_workspace_paths: Option<bool>,

    /// Ordered mutation rules for spec (kcp → service) and status (service → kcp).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mutation: Option<ResourceMutationSpec>,

    /// Related objects (Secrets, ConfigMaps, …) synced alongside the
    /// primary, from the service cluster up or from kcp down.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub related: Option<Vec<RelatedResourceSpec>>,

    /// `enabled: false` publishes the schema but syncs no objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub synchronization: Option<SynchronizationSpec>,

    /// syncweave: labels and annotations the agent keeps on the
    /// service-cluster namespaces it places copies in. Keys it did not set
    /// are left alone; values that drift are set again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub managed_namespace_metadata: Option<ManagedNamespaceMetadata>,

    /// syncweave: how the agent holds kcp objects (finalizers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifecycle: Option<LifecycleSpec>,

    /// syncweave: what the plugins of this PublishedResource (contract
    /// 0.2) may read beside the object they are called for. Reads are
    /// answered from the agent's caches, which it fills by watching what is
    /// allowed here; a change to an object a call read re-syncs the objects
    /// whose calls read it. Nothing is readable unless listed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reads: Option<ReadsSpec>,
}

/// `spec.reads`: the operator's allow-list of plugin reads.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReadsSpec {
    /// Plugins may `get` the Namespace (`v1 namespaces`, side kcp) of the
    /// object they are called for, in the consumer's workspace. Needs the
    /// `namespaces` permission claim, which the agent then adds to its
    /// APIExport.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consumer_namespace: Option<bool>,
    /// Plugins may `get` the LogicalCluster of the object's workspace
    /// (`core.kcp.io/v1alpha1 logicalclusters`, side kcp, name `cluster`):
    /// its annotations (`kcp.io/path`), labels, owner and phase. Needs the
    /// `core.kcp.io logicalclusters` permission claim, which the agent then
    /// adds to its APIExport.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logical_cluster: Option<bool>,
    /// Plugins may `get` and `list` the kcp-side objects of this
    /// PublishedResource's related resources (`spec.related`, by their kcp
    /// group/version/resource), in the workspace and namespace of the
    /// object they are called for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub related: Option<bool>,
    /// Service-cluster kinds plugins may `get` and `list`, each in the
    /// namespaces named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<Vec<ServiceRead>>,
}

/// One service-cluster kind in `spec.reads.service`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServiceRead {
    /// API group; empty or unset for the core group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    pub version: String,
    /// Plural resource name (`configmaps`).
    pub resource: String,
    /// The namespaces whose objects may be read (at least one).
    pub namespaces: Vec<String>,
}

impl ReadsSpec {
    /// Whether anything at all is readable.
    pub fn any(&self) -> bool {
        self.consumer_namespace == Some(true)
            || self.logical_cluster == Some(true)
            || self.related == Some(true)
            || self.service.as_ref().is_some_and(|s| !s.is_empty())
    }

    /// What Kubernetes or the agent would refuse, found before any watch.
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (i, s) in self.service.iter().flatten().enumerate() {
            let at = format!("spec.reads.service[{i}]");
            if s.version.is_empty() || s.resource.is_empty() {
                out.push(format!(
                    "{at}: needs a version and a plural resource (e.g. version: v1, resource: \
                     configmaps)"
                ));
            }
            if s.resource.chars().any(|c| c.is_ascii_uppercase()) {
                out.push(format!(
                    "{at}.resource: {:?} looks like a kind; give the plural resource name in \
                     lower case (e.g. configmaps)",
                    s.resource
                ));
            }
            if s.namespaces.is_empty() {
                out.push(format!(
                    "{at}.namespaces: name at least one namespace; reads of a whole service \
                     cluster are not allowed"
                ));
            }
            for n in &s.namespaces {
                if let Err(e) = crate::apis::validation::dns1123_label(n) {
                    out.push(format!("{at}.namespaces: {n:?} {e}"));
                }
            }
        }
        out
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LifecycleSpec {
    /// The finalizer that holds kcp-origin related objects until their
    /// copies are gone. `Shared` (default, as upstream):
    /// `syncagent.kcp.io/cleanup`, the name every agent uses, so two
    /// providers' agents holding one object release each other's hold
    /// (api-syncagent #172). `PerAgent`: `cleanup.syncagent.kcp.io/<agent
    /// name>`, released only by this agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub related_finalizer: Option<RelatedFinalizer>,

    /// When a kcp object is deleted, wait before deleting its copy while
    /// the object has finalizers other than the agent's own (another
    /// controller still cleaning up; api-syncagent #115), at most `timeout`
    /// after the deletion began; then the copy is deleted anyway.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_for_other_finalizers: Option<WaitForOtherFinalizers>,

    /// What a consumer's deleted workspace (or removed APIBinding) leaves
    /// on the service cluster.
    /// Unset (as upstream): its objects' copies and state Secrets are
    /// deleted object by object, and the namespaces stay. `Delete`: the
    /// same, and the namespaces the agent created for the workspace (while
    /// this was set) are deleted once its last copy is gone. `Orphan`: the
    /// copies (and their namespaces) stay on the service cluster, annotated
    /// `syncweave.dev/orphaned`; only the state Secrets are deleted. Needs
    /// the `core.kcp.io/logicalclusters` permission claim, which the agent
    /// then adds to the APIExport.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace_deletion: Option<WorkspaceDeletion>,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum WorkspaceDeletion {
    Delete,
    Orphan,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WaitForOtherFinalizers {
    /// A Go duration (`30s`, `10m`), counted from the object's
    /// deletionTimestamp; default `5m`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<String>,
}

/// How long `spec.lifecycle.waitForOtherFinalizers` waits by default.
pub const FINALIZER_WAIT_DEFAULT: std::time::Duration = std::time::Duration::from_secs(300);

impl WaitForOtherFinalizers {
    pub fn timeout(&self) -> Result<std::time::Duration, String> {
        match self.timeout.as_deref() {
            None => Ok(FINALIZER_WAIT_DEFAULT),
            Some(t) => crate::apis::wasmplugin::parse_duration(t)
                .map_err(|e| format!("spec.lifecycle.waitForOtherFinalizers.timeout: {e}")),
        }
    }
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum RelatedFinalizer {
    #[default]
    Shared,
    PerAgent,
}

impl PublishedResourceSpec {
    /// `spec.lifecycle.relatedFinalizer`, defaulted.
    pub fn related_finalizer(&self) -> RelatedFinalizer {
        self.lifecycle
            .as_ref()
            .and_then(|l| l.related_finalizer)
            .unwrap_or_default()
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManagedNamespaceMetadata {
    /// Labels set on every such namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
    /// Annotations set on every such namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
    /// Keys copied from the object's Namespace in the consumer's workspace
    /// (needs the `namespaces` permission claim, which the agent's
    /// APIExport asks for). A static key of the same name wins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_consumer_namespace: Option<ConsumerNamespaceKeys>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConsumerNamespaceKeys {
    /// Label keys to copy: an exact key, or a prefix ending in `*`
    /// (`example.com/*`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<Vec<String>>,
    /// Annotation keys to copy, as `labels`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Vec<String>>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SourceResourceDescriptor {
    /// API group of the CRD on the service cluster.
    pub api_group: String,
    /// Deprecated: use `versions`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Versions to publish; empty means all served versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub versions: Option<Vec<String>>,
    /// Kind of the CRD on the service cluster.
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
#[schemars(extend("x-kubernetes-validations" = [{
    "rule": "!has(self.wasm) || ((!has(self.name) || self.name == '') && (!has(self.namespace) || self.namespace == ''))",
    "message": NAMING_WASM_WITH_TEMPLATES,
}]))]
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

/// One mutation step; exactly one field must be set.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{
    // Exactly one set; written as nested conditionals because a sum or a
    // list literal exceeds the API server's cost budget for rules on the
    // items of an unbounded list.
    "rule": "has(self.delete) ? !(has(self.regex) || has(self.template) || has(self.cel) || has(self.wasm)) : has(self.regex) ? !(has(self.template) || has(self.cel) || has(self.wasm)) : has(self.template) ? !(has(self.cel) || has(self.wasm)) : has(self.cel) != has(self.wasm)",
    "message": MUTATION_RULE_NOT_ONE,
}]))]
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

/// Which side a related object comes from.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RelatedResourceOrigin {
    /// The service cluster: copied up into the consumer's workspace.
    #[default]
    Service,
    /// The consumer's workspace in kcp: copied down to the service cluster.
    Kcp,
}

/// One related resource: objects that belong to each primary object.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {"rule": "has(self.kind) != (has(self.version) || has(self.resource))", "message": RELATED_KIND_XOR_GVR},
    {"rule": "has(self.resource) == has(self.version)", "message": RELATED_RESOURCE_NEEDS_VERSION},
    {"rule": "!has(self.group) || (has(self.resource) && has(self.version))", "message": RELATED_GROUP_NEEDS_GVR},
    {"rule": "!has(self.identityHash) || (has(self.group) && has(self.version) && has(self.resource))", "message": RELATED_IDENTITY_NEEDS_GVR},
    {"rule": "!(self.origin == 'service' && has(self.syncStatus) && self.syncStatus) || has(self.watch)", "message": RELATED_STATUS_NEEDS_WATCH},
]))]
pub struct RelatedResourceSpec {
    /// Unique name of this related resource within the PublishedResource
    /// (used in the primary's annotation).
    pub identifier: String,
    /// `service` or `kcp`: where the original lives.
    pub origin: RelatedResourceOrigin,
    /// API group (empty for the core group).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Plural resource name, e.g. `secrets`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    /// Deprecated: `ConfigMap` or `Secret`; use group/version/resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "related_kind_schema")]
    pub kind: Option<String>,
    /// Identity hash of the APIExport that owns the GVR in kcp, for
    /// resources of another export.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity_hash: Option<String>,
    /// Delete copies (in kcp) of service-origin objects when the primary is
    /// deleted. Copies of kcp-origin objects are always deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cleanup: Option<bool>,
    /// The GVR of the copies on the destination side (default: the origin's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub projection: Option<RelatedResourceProjection>,
    /// How to find the originals (and name their copies).
    pub object: RelatedResourceObject,
    /// Mutation rules for the copy (status rules only with origin kcp).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mutation: Option<ResourceMutationSpec>,
    /// Reconcile the primary when a related original changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watch: Option<RelatedResourceWatch>,
    /// Forward the original's status to the copy through `/status`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync_status: Option<bool>,
}

fn related_kind_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "string", "enum": ["ConfigMap", "Secret"]})
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {"rule": "has(self.byOwner) != has(self.bySelector)", "message": RELATED_WATCH_ONE},
]))]
pub struct RelatedResourceWatch {
    /// Find the primary through the related object's ownerReferences.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "empty_object")]
    pub by_owner: Option<serde_json::Value>,
    /// Reconcile every primary (on the origin side) matching this selector.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by_selector: Option<LabelSelector>,
}

fn empty_object(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "object"})
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct RelatedResourceProjection {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
}

/// How to find related objects: one mechanism for the name, and optionally
/// one for the namespace (default: the primary's namespace on each side).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct RelatedResourceObject {
    #[serde(flatten)]
    pub spec: RelatedResourceObjectSpec,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<RelatedResourceObjectSpec>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct RelatedResourceObjectSpec {
    /// Select originals by labels, and name copies with a rewrite.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<RelatedResourceObjectSelector>,
    /// A path in each primary (origin and destination side) holding the name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<RelatedResourceObjectReference>,
    /// A Go template evaluated on each side.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<TemplateExpression>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct RelatedResourceObjectReference {
    /// gjson path, e.g. `spec.credentials.secretName`.
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regex: Option<RegularExpression>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RelatedResourceObjectSelector {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_labels: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_expressions:
        Option<Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement>>,
    /// How an origin name becomes the destination name.
    pub rewrite: RelatedResourceSelectorRewrite,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct RelatedResourceSelectorRewrite {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regex: Option<RegularExpression>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<TemplateExpression>,
}

/// A Go regular expression; an empty pattern means "replace with
/// `replacement`".
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct RegularExpression {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replacement: Option<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct TemplateExpression {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
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

/// Rules and resource names of one `spec.related[]` entry.
impl RelatedResourceSpec {
    /// What upstream's CEL rules say about one entry, for objects stored
    /// before the CRD carried the rules (messages as the CRD's).
    pub fn problems(&self) -> Vec<String> {
        let r = self;
        let mut out = Vec::new();
        let (k, g, v, res) = (
            r.kind.is_some(),
            r.group.is_some(),
            r.version.is_some(),
            r.resource.is_some(),
        );
        if k == (v || res) {
            out.push(RELATED_KIND_XOR_GVR.to_string());
        }
        if res != v {
            out.push(RELATED_RESOURCE_NEEDS_VERSION.to_string());
        }
        if g && !(res && v) {
            out.push(RELATED_GROUP_NEEDS_GVR.to_string());
        }
        if r.identity_hash.is_some() && !(g && v && res) {
            out.push(RELATED_IDENTITY_NEEDS_GVR.to_string());
        }
        if r.origin == RelatedResourceOrigin::Service
            && r.sync_status == Some(true)
            && r.watch.is_none()
        {
            out.push(RELATED_STATUS_NEEDS_WATCH.to_string());
        }
        if let Some(w) = &r.watch
            && w.by_owner.is_some() == w.by_selector.is_some()
        {
            out.push(RELATED_WATCH_ONE.to_string());
        }
        out
    }

    /// Group, version and resource on the origin side.
    pub fn origin_gvr(&self) -> (String, String, String) {
        let r = self;
        match r.kind.as_deref() {
            Some("ConfigMap") => ("".into(), "v1".into(), "configmaps".into()),
            Some("Secret") => ("".into(), "v1".into(), "secrets".into()),
            _ => (
                r.group.clone().unwrap_or_default(),
                r.version.clone().unwrap_or_default(),
                r.resource.clone().unwrap_or_default(),
            ),
        }
    }

    /// Group, version and resource on the destination side: `projection`'s
    /// non-empty fields replace the origin's (as upstream, an empty group
    /// keeps the origin's group).
    pub fn dest_gvr(&self) -> (String, String, String) {
        let r = self;
        let (mut g, mut v, mut res) = self.origin_gvr();
        if let Some(p) = &r.projection {
            if let Some(x) = p.group.clone().filter(|s| !s.is_empty()) {
                g = x;
            }
            if let Some(x) = p.version.clone().filter(|s| !s.is_empty()) {
                v = x;
            }
            if let Some(x) = p.resource.clone().filter(|s| !s.is_empty()) {
                res = x;
            }
        }
        (g, v, res)
    }

    /// Group, version and resource on the kcp side (origin or destination).
    pub fn kcp_gvr(&self) -> (String, String, String) {
        if self.origin == RelatedResourceOrigin::Kcp {
            self.origin_gvr()
        } else {
            self.dest_gvr()
        }
    }
}

/// Fields of `spec` that are set but that syncweave does not support or
/// would ignore, one message each (naming the field and what to do);
/// empty when there are none. The CRD's validation refuses the same things,
/// but objects stored before it was installed may still have them, so the
/// agent checks too and must not publish or sync such a resource.
pub fn unsupported_fields(spec: &PublishedResourceSpec) -> Vec<String> {
    let mut out = Vec::new();
    for (i, r) in spec.related.iter().flatten().enumerate() {
        for m in r.problems() {
            out.push(format!("spec.related[{i}]: {m}"));
        }
    }
    let cluster_scope =
        spec.projection.as_ref().and_then(|p| p.scope.as_deref()) == Some("Cluster");
    if cluster_scope {
        out.extend(unsupported_for_scope(spec, false));
    }
    if let Some(n) = &spec.naming {
        let set = |s: &Option<String>| s.as_deref().is_some_and(|s| !s.is_empty());
        if n.wasm.is_some() && (set(&n.name) || set(&n.namespace)) {
            out.push(NAMING_WASM_WITH_TEMPLATES.to_string());
        }
    }
    if let Some(m) = &spec.managed_namespace_metadata {
        out.extend(m.problems());
    }
    if let Some(r) = &spec.reads {
        out.extend(r.problems());
        if r.related == Some(true) && spec.related.as_ref().is_none_or(|r| r.is_empty()) {
            out.push(
                "spec.reads.related: true allows reads of the related resources' kinds, but \
                 spec.related lists none; add the related resource, or remove reads.related"
                    .into(),
            );
        }
    }
    if let Some(w) = spec
        .lifecycle
        .as_ref()
        .and_then(|l| l.wait_for_other_finalizers.as_ref())
        && let Err(e) = w.timeout()
    {
        out.push(e);
    }
    if let Some(m) = &spec.mutation {
        for (list, rules) in [("spec", &m.spec), ("status", &m.status)] {
            for (i, r) in rules.iter().flatten().enumerate() {
                let set = [
                    r.delete.is_some(),
                    r.regex.is_some(),
                    r.template.is_some(),
                    r.cel.is_some(),
                    r.wasm.is_some(),
                ];
                if set.iter().filter(|s| **s).count() != 1 {
                    out.push(format!(
                        "spec.mutation.{list}[{i}]: {MUTATION_RULE_NOT_ONE}"
                    ));
                }
            }
        }
    }
    out
}

impl ManagedNamespaceMetadata {
    /// What Kubernetes would refuse on a Namespace, found before any
    /// namespace is touched: keys must be qualified names, label values
    /// label values.
    pub fn problems(&self) -> Vec<String> {
        let field = "spec.managedNamespaceMetadata";
        let mut out = Vec::new();
        for (k, v) in self.labels.iter().flatten() {
            if let Err(e) = crate::apis::validation::qualified_name(k) {
                out.push(format!(
                    "{field}.labels: key {k:?} {e}; use a key like `example.com/team`"
                ));
            }
            if let Err(e) = crate::apis::validation::label_value(v) {
                out.push(format!("{field}.labels[{k}]: value {v:?} {e}"));
            }
        }
        for k in self.annotations.iter().flatten().map(|(k, _)| k) {
            if let Err(e) = crate::apis::validation::qualified_name(k) {
                out.push(format!(
                    "{field}.annotations: key {k:?} {e}; use a key like `example.com/owner`"
                ));
            }
        }
        let copy = self.from_consumer_namespace.as_ref();
        for (list, keys) in [
            ("labels", copy.and_then(|c| c.labels.as_ref())),
            ("annotations", copy.and_then(|c| c.annotations.as_ref())),
        ] {
            for (i, k) in keys.into_iter().flatten().enumerate() {
                let exact = k.strip_suffix('*').unwrap_or(k);
                if exact.contains('*') {
                    out.push(format!(
                        "{field}.fromConsumerNamespace.{list}[{i}]: {k:?}: `*` may only end a prefix (`example.com/*`)"
                    ));
                } else if exact.is_empty() && k != "*" {
                    out.push(format!(
                        "{field}.fromConsumerNamespace.{list}[{i}]: empty key"
                    ));
                }
            }
        }
        out
    }
}

/// Like [`unsupported_fields`], for what depends on the scope of the
/// resource as published in kcp (known once the service CRD is resolved):
/// `spec.filter.namespace` on a cluster-scoped resource would be ignored.
pub fn unsupported_for_scope(spec: &PublishedResourceSpec, kcp_namespaced: bool) -> Vec<String> {
    let namespace_filter = spec.filter.as_ref().is_some_and(|f| f.namespace.is_some());
    if namespace_filter && !kcp_namespaced {
        vec![NAMESPACE_FILTER_CLUSTER_SCOPED.to_string()]
    } else {
        vec![]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// A PublishedResource with any content in its spec's fields (as a
        /// CRD without validation lets through) is parsed and checked
        /// without a panic: it is accepted or refused with messages.
        #[test]
        fn any_spec_is_checked_without_a_panic(
            fields in proptest::collection::btree_map(
                proptest::sample::select(vec![
                    "resource", "projection", "naming", "mutation", "related", "filter",
                    "synchronization", "enableWorkspacePaths",
                ]),
                crate::testing::json_value(),
                0..6,
            ),
            resource in crate::testing::json_object(crate::testing::json_value()),
        ) {
            let mut spec: serde_json::Map<String, serde_json::Value> =
                fields.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
            // Often a well-formed resource, so the other fields are reached.
            spec.entry("resource").or_insert_with(|| {
                let mut r = resource.as_object().cloned().unwrap_or_default();
                r.insert("apiGroup".into(), "example.com".into());
                r.insert("kind".into(), "CronTab".into());
                serde_json::Value::Object(r)
            });
            let obj = serde_json::json!({"metadata": {"name": "x"}, "spec": spec});
            if let Ok(pr) = serde_json::from_value::<PublishedResource>(obj) {
                let _ = unsupported_fields(&pr.spec);
                let _ = unsupported_for_scope(&pr.spec, true);
                let _ = unsupported_for_scope(&pr.spec, false);
                let _ = pr.spec.selected_versions();
                for r in pr.spec.related.iter().flatten() {
                    let _ = (r.problems(), r.origin_gvr(), r.dest_gvr(), r.kcp_gvr());
                }
            }
        }
    }

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
    fn reads_are_checked() {
        let s = spec(
            "{resource: {apiGroup: g, kind: K}, reads: {related: true, service: [{version: v1, \
             resource: ConfigMaps, namespaces: []}, {version: v1, resource: configmaps, \
             namespaces: [Bad_NS]}]}}",
        );
        let problems = unsupported_fields(&s);
        assert_eq!(problems.len(), 4, "{problems:#?}");
        assert!(
            problems[0]
                .starts_with("spec.reads.service[0].resource: \"ConfigMaps\" looks like a kind")
        );
        assert!(problems[1].starts_with("spec.reads.service[0].namespaces: name at least one"));
        assert!(problems[2].starts_with("spec.reads.service[1].namespaces: \"Bad_NS\""));
        assert!(problems[3].starts_with("spec.reads.related: true allows"));
        let s = spec("{resource: {apiGroup: g, kind: K}, reads: {consumerNamespace: true}}");
        assert_eq!(unsupported_fields(&s), Vec::<String>::new());
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

    fn spec(yaml: &str) -> PublishedResourceSpec {
        serde_yaml_ng::from_str(yaml).unwrap()
    }

    #[test]
    fn supported_fields_pass() {
        let s = spec(
            r#"
resource: {apiGroup: example.com, kind: CronTab, versions: [v1]}
projection: {group: g, kind: K, scope: Namespaced, shortNames: [], categories: [all]}
naming: {namespace: "{{ .ClusterName }}", name: "{{ .Object.metadata.name }}"}
filter:
  namespace: {matchLabels: {tenant: a}}
  resource: {matchLabels: {sync: "yes"}}
enableWorkspacePaths: true
related: []
mutation:
  spec:
    - delete: {path: spec.a}
    - wasm: {plugin: p}
  status:
    - cel: {path: status.b, expression: "1"}
synchronization: {enabled: false}
"#,
        );
        assert_eq!(unsupported_fields(&s), Vec::<String>::new());
        assert_eq!(unsupported_for_scope(&s, true), Vec::<String>::new());
        // Empty templates next to a namer plugin mean "unset".
        let s =
            spec("{resource: {apiGroup: g, kind: K}, naming: {name: '', wasm: {source: naming}}}");
        assert_eq!(unsupported_fields(&s), Vec::<String>::new());
    }

    #[test]
    fn related_rules_are_checked() {
        let s = spec(
            "{resource: {apiGroup: g, kind: K}, related: [{identifier: x, origin: service, kind: Secret, object: {reference: {path: spec.a}}}]}",
        );
        assert_eq!(unsupported_fields(&s), Vec::<String>::new());
        let s = spec(
            "{resource: {apiGroup: g, kind: K}, related: [{identifier: x, origin: service, kind: Secret, version: v1, object: {reference: {path: spec.a}}}]}",
        );
        assert_eq!(
            unsupported_fields(&s),
            vec![
                format!("spec.related[0]: {RELATED_KIND_XOR_GVR}"),
                format!("spec.related[0]: {RELATED_RESOURCE_NEEDS_VERSION}"),
            ]
        );
    }

    #[test]
    fn namespace_filter_on_cluster_scope_is_refused() {
        let s = spec(
            "{resource: {apiGroup: g, kind: K}, projection: {scope: Cluster}, filter: {namespace: {}}}",
        );
        assert_eq!(
            unsupported_fields(&s),
            vec![NAMESPACE_FILTER_CLUSTER_SCOPED.to_string()]
        );
        // Scope known only from the service CRD.
        let s =
            spec("{resource: {apiGroup: g, kind: K}, filter: {namespace: {matchLabels: {a: b}}}}");
        assert_eq!(unsupported_fields(&s), Vec::<String>::new());
        assert_eq!(
            unsupported_for_scope(&s, false),
            vec![NAMESPACE_FILTER_CLUSTER_SCOPED.to_string()]
        );
        assert_eq!(unsupported_for_scope(&s, true), Vec::<String>::new());
        let s = spec("{resource: {apiGroup: g, kind: K}, filter: {resource: {}}}");
        assert_eq!(unsupported_for_scope(&s, false), Vec::<String>::new());
    }

    #[test]
    fn naming_plugin_with_templates_is_refused() {
        let s = spec(
            "{resource: {apiGroup: g, kind: K}, naming: {namespace: x, wasm: {source: naming}}}",
        );
        assert_eq!(
            unsupported_fields(&s),
            vec![NAMING_WASM_WITH_TEMPLATES.to_string()]
        );
    }

    #[test]
    fn mutation_rules_set_exactly_one_mechanism() {
        let s = spec(
            r#"
resource: {apiGroup: g, kind: K}
mutation:
  spec:
    - delete: {path: a}
    - {delete: {path: a}, regex: {path: b}}
  status:
    - {}
"#,
        );
        assert_eq!(
            unsupported_fields(&s),
            vec![
                format!("spec.mutation.spec[1]: {MUTATION_RULE_NOT_ONE}"),
                format!("spec.mutation.status[0]: {MUTATION_RULE_NOT_ONE}"),
            ]
        );
    }

    /// The CRD carries the same rules, with the same messages.
    #[test]
    fn crd_refuses_unsupported_fields() {
        use kube::CustomResourceExt;
        let crd = serde_json::to_value(PublishedResource::crd()).unwrap();
        let spec = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
        let messages = |v: &serde_json::Value| -> Vec<String> {
            v["x-kubernetes-validations"]
                .as_array()
                .unwrap_or_else(|| panic!("no x-kubernetes-validations in {v}"))
                .iter()
                .map(|r| r["message"].as_str().unwrap().to_string())
                .collect()
        };
        assert_eq!(messages(spec), [NAMESPACE_FILTER_CLUSTER_SCOPED]);
        assert_eq!(
            messages(&spec["properties"]["related"]["items"]),
            [
                RELATED_KIND_XOR_GVR,
                RELATED_RESOURCE_NEEDS_VERSION,
                RELATED_GROUP_NEEDS_GVR,
                RELATED_IDENTITY_NEEDS_GVR,
                RELATED_STATUS_NEEDS_WATCH,
            ]
        );
        assert_eq!(
            messages(&spec["properties"]["related"]["items"]["properties"]["watch"]),
            [RELATED_WATCH_ONE]
        );
        assert_eq!(
            messages(&spec["properties"]["naming"]),
            [NAMING_WASM_WITH_TEMPLATES]
        );
        for list in ["spec", "status"] {
            assert_eq!(
                messages(&spec["properties"]["mutation"]["properties"][list]["items"]),
                [MUTATION_RULE_NOT_ONE]
            );
        }
    }

    #[test]
    fn gvrs_and_rules() {
        use serde_json::json;
        let mut r: RelatedResourceSpec = serde_json::from_value(json!({
            "identifier": "x", "origin": "service", "kind": "Secret",
            "object": {"reference": {"path": "spec.a"}}
        }))
        .unwrap();
        assert_eq!(r.origin_gvr(), ("".into(), "v1".into(), "secrets".into()));
        assert!(r.problems().is_empty());
        r.projection = Some(crate::apis::RelatedResourceProjection {
            group: None,
            version: None,
            resource: Some("configmaps".into()),
        });
        assert_eq!(r.dest_gvr(), ("".into(), "v1".into(), "configmaps".into()));
        assert_eq!(r.kcp_gvr(), ("".into(), "v1".into(), "configmaps".into()));
        r.sync_status = Some(true);
        assert_eq!(r.problems(), [crate::apis::RELATED_STATUS_NEEDS_WATCH]);
        r.kind = None;
        r.group = Some("g".into());
        r.identity_hash = Some("h".into());
        assert_eq!(
            r.problems(),
            [
                crate::apis::RELATED_KIND_XOR_GVR,
                crate::apis::RELATED_GROUP_NEEDS_GVR,
                crate::apis::RELATED_IDENTITY_NEEDS_GVR,
                crate::apis::RELATED_STATUS_NEEDS_WATCH,
            ]
        );
    }
}
