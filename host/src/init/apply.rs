//! The rendered objects in a workspace: ordering by kind, resolving kinds
//! to resources through discovery, plain creates (an object that already
//! exists is left as it is, like upstream), readiness checks for
//! `initialization.kcp.io/wait-for-ready`, and deletes for termination
//! steps.

use std::collections::HashMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::APIResource;
use kube::Client;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, PostParams,
};
use serde_json::Value;

use super::WAIT_FOR_READY;

/// Field manager recorded on created objects.
pub const FIELD_MANAGER: &str = "syncweave-init";

/// Weight of an object's kind: things other objects depend on come first
/// (CRDs, then APIExports, APIBindings, Namespaces, then everything else).
pub fn kind_weight(obj: &Value) -> u8 {
    let api_version = obj["apiVersion"].as_str().unwrap_or_default();
    let group = api_version
        .rsplit_once('/')
        .map(|(g, _)| g)
        .unwrap_or_default();
    let kind = obj["kind"].as_str().unwrap_or_default();
    // Upstream compares lower-cased GroupKind strings: "kind.group", or
    // just "kind" for the core group.
    let gk = if group.is_empty() {
        kind.to_ascii_lowercase()
    } else {
        format!("{kind}.{group}").to_ascii_lowercase()
    };
    match gk.as_str() {
        "customresourcedefinition.apiextensions.k8s.io" => 0,
        "apiexport.apis.kcp.io" => 1,
        "apibinding.apis.kcp.io" => 2,
        "namespace" => 3,
        _ => 4,
    }
}

/// Sort objects by [`kind_weight`]; objects of equal weight keep their order.
pub fn sort_objects(objects: &mut [Value]) {
    objects.sort_by_key(kind_weight);
}

/// `Kind namespace/name` for log lines and errors.
pub fn describe(obj: &Value) -> String {
    let kind = obj["kind"].as_str().unwrap_or("<no kind>");
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .or_else(|| {
            obj.pointer("/metadata/generateName")
                .and_then(Value::as_str)
        })
        .unwrap_or("<no name>");
    match obj.pointer("/metadata/namespace").and_then(Value::as_str) {
        Some(ns) if !ns.is_empty() => format!("{kind} {ns}/{name}"),
        _ => format!("{kind} {name}"),
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// The workspace does not serve this kind (yet): typically a CRD
    /// created moments ago that is not established. Transient.
    #[error("{api_version} {kind} is not served in this workspace (yet)")]
    MissingKind { api_version: String, kind: String },
    #[error("{0}; fix the template")]
    Invalid(String),
    #[error("discovering {api_version}: {source}")]
    Discovery {
        api_version: String,
        #[source]
        source: kube::Error,
    },
    #[error("creating: {0}")]
    Create(#[source] kube::Error),
    #[error("reading {object}: {source}")]
    Read {
        object: String,
        #[source]
        source: kube::Error,
    },
    #[error("listing {what}: {source}")]
    List {
        what: String,
        #[source]
        source: kube::Error,
    },
    #[error("deleting {object}: {source}")]
    Delete {
        object: String,
        #[source]
        source: kube::Error,
    },
}

/// What happened to one object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Created {
    Created,
    AlreadyExisted,
}

/// How kinds are resolved to resources in one workspace, filled lazily and
/// kept for one reconcile only: the set of served kinds changes while a
/// workspace is initialized (its CRDs are created by us).
pub struct Discovery {
    client: Client,
    mode: Mode,
    by_version: HashMap<String, Vec<APIResource>>,
    by_kind: HashMap<(String, String), Option<(String, bool)>>,
    crds: Option<Vec<Value>>,
    bound: Option<Vec<(String, String)>>,
}

/// Where kinds come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// The workspace's discovery documents (initializingworkspaces).
    Discovery,
    /// Resource requests only. The terminatingworkspaces virtual workspace
    /// (kcp v0.32) answers `/api*` discovery paths from a server that knows
    /// nothing but LogicalClusters and proxies only resource requests into
    /// the workspace, so discovery would call every kind "not served".
    ResourceRequests,
}

/// Kinds a kcp workspace serves without CRDs or APIBindings: `(apiVersion,
/// kind, resource, namespaced)`. Resolving these needs no request.
const BUILT_IN: &[(&str, &str, &str, bool)] = &[
    ("v1", "ConfigMap", "configmaps", true),
    ("v1", "Secret", "secrets", true),
    ("v1", "ServiceAccount", "serviceaccounts", true),
    ("v1", "Namespace", "namespaces", false),
    ("v1", "Event", "events", true),
    ("v1", "ResourceQuota", "resourcequotas", true),
    ("v1", "LimitRange", "limitranges", true),
    ("rbac.authorization.k8s.io/v1", "Role", "roles", true),
    (
        "rbac.authorization.k8s.io/v1",
        "RoleBinding",
        "rolebindings",
        true,
    ),
    (
        "rbac.authorization.k8s.io/v1",
        "ClusterRole",
        "clusterroles",
        false,
    ),
    (
        "rbac.authorization.k8s.io/v1",
        "ClusterRoleBinding",
        "clusterrolebindings",
        false,
    ),
    (
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        false,
    ),
    (
        "admissionregistration.k8s.io/v1",
        "ValidatingWebhookConfiguration",
        "validatingwebhookconfigurations",
        false,
    ),
    (
        "admissionregistration.k8s.io/v1",
        "MutatingWebhookConfiguration",
        "mutatingwebhookconfigurations",
        false,
    ),
    (
        "admissionregistration.k8s.io/v1",
        "ValidatingAdmissionPolicy",
        "validatingadmissionpolicies",
        false,
    ),
    (
        "admissionregistration.k8s.io/v1",
        "ValidatingAdmissionPolicyBinding",
        "validatingadmissionpolicybindings",
        false,
    ),
    ("coordination.k8s.io/v1", "Lease", "leases", true),
    ("events.k8s.io/v1", "Event", "events", true),
    ("apis.kcp.io/v1alpha1", "APIBinding", "apibindings", false),
    ("apis.kcp.io/v1alpha1", "APIExport", "apiexports", false),
    (
        "apis.kcp.io/v1alpha1",
        "APIResourceSchema",
        "apiresourceschemas",
        false,
    ),
    (
        "apis.kcp.io/v1alpha1",
        "APIExportEndpointSlice",
        "apiexportendpointslices",
        false,
    ),
    ("apis.kcp.io/v1alpha2", "APIBinding", "apibindings", false),
    ("apis.kcp.io/v1alpha2", "APIExport", "apiexports", false),
    ("tenancy.kcp.io/v1alpha1", "Workspace", "workspaces", false),
    (
        "tenancy.kcp.io/v1alpha1",
        "WorkspaceType",
        "workspacetypes",
        false,
    ),
];

impl Discovery {
    /// Kinds from the workspace's discovery documents.
    pub fn new(client: Client) -> Self {
        Self::with_mode(client, Mode::Discovery)
    }

    /// Kinds without discovery, for the terminatingworkspaces virtual
    /// workspace: built-in kinds from a table, CRD kinds from the
    /// workspace's CustomResourceDefinitions, kinds bound through
    /// APIBindings by probing each bound resource of the group (a list of
    /// one) and comparing the list's kind.
    pub fn without_discovery(client: Client) -> Self {
        Self::with_mode(client, Mode::ResourceRequests)
    }

    fn with_mode(client: Client, mode: Mode) -> Self {
        Discovery {
            client,
            mode,
            by_version: HashMap::new(),
            by_kind: HashMap::new(),
            crds: None,
            bound: None,
        }
    }

    /// The resource serving `kind` in `api_version`, and whether it is
    /// namespaced; `None` when not served.
    async fn resolve(
        &mut self,
        api_version: &str,
        kind: &str,
    ) -> Result<Option<(String, bool)>, ApplyError> {
        match self.mode {
            Mode::Discovery => self.by_discovery(api_version, kind).await,
            Mode::ResourceRequests => {
                let key = (api_version.to_string(), kind.to_string());
                if let Some(found) = self.by_kind.get(&key) {
                    return Ok(found.clone());
                }
                let found = self.by_resource_requests(api_version, kind).await?;
                self.by_kind.insert(key, found.clone());
                Ok(found)
            }
        }
    }

    async fn by_discovery(
        &mut self,
        api_version: &str,
        kind: &str,
    ) -> Result<Option<(String, bool)>, ApplyError> {
        if !self.by_version.contains_key(api_version) {
            let list = if api_version.contains('/') {
                self.client.list_api_group_resources(api_version).await
            } else {
                self.client.list_core_api_resources(api_version).await
            };
            let resources = match list {
                Ok(l) => l.resources,
                // kcp answers an unknown group-version with an empty list,
                // Kubernetes with 404; both mean "not served".
                Err(kube::Error::Api(s)) if s.code == 404 => Vec::new(),
                Err(source) => {
                    return Err(ApplyError::Discovery {
                        api_version: api_version.into(),
                        source,
                    });
                }
            };
            self.by_version.insert(api_version.to_string(), resources);
        }
        Ok(self
            .by_version
            .get(api_version)
            .into_iter()
            .flatten()
            .find(|r| r.kind == kind && !r.name.contains('/'))
            .map(|r| (r.name.clone(), r.namespaced)))
    }

    async fn by_resource_requests(
        &mut self,
        api_version: &str,
        kind: &str,
    ) -> Result<Option<(String, bool)>, ApplyError> {
        if let Some((_, _, plural, namespaced)) = BUILT_IN
            .iter()
            .find(|(v, k, _, _)| *v == api_version && *k == kind)
        {
            return Ok(Some((plural.to_string(), *namespaced)));
        }
        let Some((group, version)) = api_version.rsplit_once('/') else {
            // A core kind missing from the table: not one kcp serves.
            return Ok(None);
        };
        if self.crds.is_none() {
            self.crds = Some(
                self.list_values("apiextensions.k8s.io/v1", "customresourcedefinitions")
                    .await?,
            );
        }
        if let Some(found) = self
            .crds
            .iter()
            .flatten()
            .find_map(|crd| crd_serves(crd, group, version, kind))
        {
            return Ok(Some(found));
        }
        if self.bound.is_none() {
            let bindings = self
                .list_values("apis.kcp.io/v1alpha1", "apibindings")
                .await?;
            self.bound = Some(bound_resources(&bindings));
        }
        let candidates: Vec<String> = self
            .bound
            .iter()
            .flatten()
            .filter(|(g, _)| g == group)
            .map(|(_, r)| r.clone())
            .collect();
        for plural in candidates {
            if let Some(namespaced) = self.probe(group, version, kind, &plural).await? {
                return Ok(Some((plural, namespaced)));
            }
        }
        Ok(None)
    }

    /// The items of a list as JSON; a 404 (kind not served) is an empty list.
    async fn list_values(&self, api_version: &str, plural: &str) -> Result<Vec<Value>, ApplyError> {
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        let ar =
            ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, ""), plural);
        let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &ar);
        match api.list(&ListParams::default()).await {
            Ok(list) => Ok(list
                .items
                .iter()
                .map(|o| serde_json::to_value(o).unwrap_or_default())
                .collect()),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(Vec::new()),
            Err(source) => Err(ApplyError::List {
                what: format!("{plural}.{group}"),
                source,
            }),
        }
    }

    /// Whether `group/version/plural` serves `kind` (its list is a
    /// `<kind>List`) and, when an object exists, whether it is namespaced.
    /// `None` when it serves another kind or nothing.
    async fn probe(
        &self,
        group: &str,
        version: &str,
        kind: &str,
        plural: &str,
    ) -> Result<Option<bool>, ApplyError> {
        let ar =
            ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural);
        let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &ar);
        match api.list(&ListParams::default().limit(1)).await {
            Ok(list) if list.types.kind == format!("{kind}List") => Ok(Some(
                list.items
                    .first()
                    .is_some_and(|o| o.metadata.namespace.is_some()),
            )),
            Ok(_) => Ok(None),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(None),
            Err(source) => Err(ApplyError::List {
                what: format!("{plural}.{group}/{version}"),
                source,
            }),
        }
    }
}

/// `(plural, namespaced)` when `crd` defines `kind` in `group` and serves
/// `version`.
fn crd_serves(crd: &Value, group: &str, version: &str, kind: &str) -> Option<(String, bool)> {
    let spec = &crd["spec"];
    if spec["group"].as_str() != Some(group) || spec["names"]["kind"].as_str() != Some(kind) {
        return None;
    }
    let served = spec["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|v| v["name"].as_str() == Some(version) && v["served"].as_bool().unwrap_or(false));
    if !served {
        return None;
    }
    let plural = spec["names"]["plural"].as_str()?;
    Some((
        plural.to_string(),
        spec["scope"].as_str() == Some("Namespaced"),
    ))
}

/// `(group, resource)` of every resource the APIBindings bind.
fn bound_resources(bindings: &[Value]) -> Vec<(String, String)> {
    bindings
        .iter()
        .flat_map(|b| {
            b["status"]["boundResources"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|r| {
            Some((
                r["group"].as_str().unwrap_or_default().to_string(),
                r["resource"].as_str()?.to_string(),
            ))
        })
        .collect()
}

/// The API of `kind` in `api_version` (in `namespace` when the kind is
/// namespaced and one is given, else across namespaces), and whether the
/// kind is namespaced; `None` when the workspace does not serve the kind.
async fn api_for(
    disc: &mut Discovery,
    api_version: &str,
    kind: &str,
    namespace: Option<&str>,
) -> Result<Option<Served>, ApplyError> {
    let Some((plural, namespaced)) = disc.resolve(api_version, kind).await? else {
        return Ok(None);
    };
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let ar =
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), &plural);
    let api = match namespace {
        Some(ns) if namespaced => Api::namespaced_with(disc.client.clone(), ns, &ar),
        _ => Api::all_with(disc.client.clone(), &ar),
    };
    Ok(Some(Served {
        api,
        namespaced,
        ar,
    }))
}

/// A kind the workspace serves.
struct Served {
    api: Api<DynamicObject>,
    namespaced: bool,
    ar: ApiResource,
}

fn type_of(obj: &Value) -> Result<(&str, &str), ApplyError> {
    let api_version = obj["apiVersion"]
        .as_str()
        .filter(|s| !s.is_empty())
        .ok_or_else(|| ApplyError::Invalid("the object has no apiVersion".into()))?;
    let kind = obj["kind"]
        .as_str()
        .filter(|s| !s.is_empty())
        .ok_or_else(|| ApplyError::Invalid("the object has no kind".into()))?;
    Ok((api_version, kind))
}

fn namespace_of(obj: &Value) -> Option<&str> {
    obj.pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

/// Create `obj` unless it exists.
pub async fn create(disc: &mut Discovery, obj: &Value) -> Result<Created, ApplyError> {
    let (api_version, kind) = type_of(obj)?;
    let ns = namespace_of(obj);
    let Some(Served {
        api, namespaced, ..
    }) = api_for(disc, api_version, kind, ns).await?
    else {
        return Err(ApplyError::MissingKind {
            api_version: api_version.into(),
            kind: kind.into(),
        });
    };
    if namespaced && ns.is_none() {
        return Err(ApplyError::Invalid(format!(
            "{kind} is namespaced but metadata.namespace is not set"
        )));
    }
    let dynamic: DynamicObject = serde_json::from_value(obj.clone())
        .map_err(|e| ApplyError::Invalid(format!("not a Kubernetes object: {e}")))?;
    let pp = PostParams {
        field_manager: Some(FIELD_MANAGER.into()),
        ..Default::default()
    };
    match api.create(&pp, &dynamic).await {
        Ok(_) => Ok(Created::Created),
        Err(kube::Error::Api(s)) if s.code == 409 && s.reason == "AlreadyExists" => {
            Ok(Created::AlreadyExisted)
        }
        Err(e) => Err(ApplyError::Create(e)),
    }
}

/// The condition type `obj` asks to wait for
/// (`initialization.kcp.io/wait-for-ready`); an empty value asks for
/// nothing, as upstream. The value is used verbatim (no trimming).
pub fn wait_for(obj: &Value) -> Option<&str> {
    obj.pointer("/metadata/annotations")
        .and_then(|a| a.get(WAIT_FOR_READY))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

/// Whether `obj` has a condition of type `condition` with status `True`
/// (exact, case-sensitive compares; entries that are not objects are
/// skipped), upstream's test.
pub fn has_condition(obj: &Value, condition: &str) -> bool {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|c| c.is_object())
        .any(|c| c["type"].as_str() == Some(condition) && c["status"].as_str() == Some("True"))
}

/// What `obj` shows for `condition`, for messages.
fn condition_state(obj: &Value, condition: &str) -> String {
    let found = obj
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|c| c["type"].as_str() == Some(condition));
    match found {
        None => "the object has no such condition yet".into(),
        Some(c) => {
            let mut s = format!("it is {}", c["status"].as_str().unwrap_or("<no status>"));
            if let Some(r) = c["reason"].as_str().filter(|r| !r.is_empty()) {
                s.push_str(&format!(" ({r})"));
            }
            if let Some(m) = c["message"].as_str().filter(|m| !m.is_empty()) {
                s.push_str(&format!(": {m}"));
            }
            s
        }
    }
}

/// Whether a created object is ready.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Readiness {
    Ready,
    /// Not yet, and why.
    Waiting(String),
}

/// Read `obj` back and check its `condition` (upstream re-reads it,
/// uncached, on every pass).
pub async fn readiness(
    disc: &mut Discovery,
    obj: &Value,
    condition: &str,
) -> Result<Readiness, ApplyError> {
    let (api_version, kind) = type_of(obj)?;
    let Some(Served { api, .. }) = api_for(disc, api_version, kind, namespace_of(obj)).await?
    else {
        return Ok(Readiness::Waiting(format!(
            "{api_version} {kind} is not served in this workspace"
        )));
    };
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .ok_or_else(|| {
            ApplyError::Invalid(format!(
                "{WAIT_FOR_READY} needs metadata.name to read the object back"
            ))
        })?;
    match api.get_opt(name).await {
        Ok(None) => Ok(Readiness::Waiting("the object is not found".into())),
        Ok(Some(current)) => {
            let v = serde_json::to_value(&current).unwrap_or_default();
            if has_condition(&v, condition) {
                Ok(Readiness::Ready)
            } else {
                Ok(Readiness::Waiting(condition_state(&v, condition)))
            }
        }
        Err(source) => Err(ApplyError::Read {
            object: describe(obj),
            source,
        }),
    }
}

/// `Kind namespace/name`, with the finalizers that hold it.
fn describe_held(obj: &DynamicObject) -> String {
    let v = serde_json::to_value(obj).unwrap_or_default();
    let d = describe(&v);
    match obj.metadata.finalizers.as_deref() {
        Some(f) if !f.is_empty() => format!("{d} (finalizers: {})", f.join(", ")),
        _ => d,
    }
}

/// Which objects a termination step deletes.
#[derive(Debug, Clone, Default)]
pub struct Selection<'a> {
    pub api_version: &'a str,
    pub kind: &'a str,
    pub namespace: Option<&'a str>,
    pub name: Option<&'a str>,
    /// A label selector string.
    pub labels: Option<String>,
}

/// Delete what `sel` selects (objects already being deleted are left to
/// finish) and say which objects remain, each with its finalizers. A kind
/// the workspace does not serve has no objects: nothing remains (kcp
/// deletes a workspace's CRDs along with the rest of its content).
pub async fn delete_selected(
    disc: &mut Discovery,
    sel: &Selection<'_>,
) -> Result<Vec<String>, ApplyError> {
    let Some(Served {
        api,
        namespaced,
        ar,
    }) = api_for(disc, sel.api_version, sel.kind, sel.namespace).await?
    else {
        return Ok(Vec::new());
    };
    let what = match (sel.namespace, sel.name) {
        (Some(ns), Some(n)) if namespaced => format!("{} {ns}/{n}", sel.kind),
        (_, Some(n)) => format!("{} {n}", sel.kind),
        (Some(ns), None) if namespaced => format!("{} in namespace {ns}", sel.kind),
        _ => format!("{} objects", sel.kind),
    };
    let objects: Vec<DynamicObject> = match sel.name {
        // One object by name: a GET.
        Some(n) if !namespaced || sel.namespace.is_some() => api
            .get_opt(n)
            .await
            .map_err(|source| ApplyError::List {
                what: what.clone(),
                source,
            })?
            .into_iter()
            .collect(),
        _ => {
            let mut lp = ListParams::default();
            if let Some(n) = sel.name {
                lp = lp.fields(&format!("metadata.name={n}"));
            }
            if let Some(l) = &sel.labels {
                lp = lp.labels(l);
            }
            match api.list(&lp).await {
                Ok(list) => list.items,
                // Resolved without discovery and not served after all.
                Err(kube::Error::Api(s)) if s.code == 404 => Vec::new(),
                Err(source) => {
                    return Err(ApplyError::List {
                        what: what.clone(),
                        source,
                    });
                }
            }
        }
    };
    let mut remaining = Vec::new();
    for mut obj in objects {
        // List items come without apiVersion and kind; messages name them.
        if obj.types.is_none() {
            obj.types = Some(kube::api::TypeMeta {
                api_version: ar.api_version.clone(),
                kind: ar.kind.clone(),
            });
        }
        let Some(name) = obj.metadata.name.clone() else {
            continue;
        };
        if obj.metadata.deletion_timestamp.is_some() {
            remaining.push(describe_held(&obj));
            continue;
        }
        let api = match (&obj.metadata.namespace, namespaced) {
            (Some(ns), true) => Api::namespaced_with(disc.client.clone(), ns, &ar),
            _ => api.clone(),
        };
        match api.delete(&name, &DeleteParams::background()).await {
            Ok(deleted) => {
                // Returned with finalizers: it is being deleted, not gone.
                if let Some(o) = deleted.left()
                    && o.metadata
                        .finalizers
                        .as_ref()
                        .is_some_and(|f| !f.is_empty())
                {
                    remaining.push(describe_held(&o));
                }
            }
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(source) => {
                return Err(ApplyError::Delete {
                    object: describe_held(&obj),
                    source,
                });
            }
        }
    }
    Ok(remaining)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    /// Rendered objects as a template might produce them: the kinds the
    /// order cares about (in any case, in any group spelling) among others,
    /// with or without names and namespaces, and any JSON in between.
    fn rendered_object() -> impl Strategy<Value = Value> {
        let api_version = prop_oneof![
            Just("apiextensions.k8s.io/v1"),
            Just("apis.kcp.io/v1alpha1"),
            Just("v1"),
            Just("apps/v1"),
            Just(""),
            Just("/"),
            Just("a/b/c"),
        ];
        let kind = prop_oneof![
            Just("CustomResourceDefinition"),
            Just("customresourcedefinition"),
            Just("APIExport"),
            Just("APIBinding"),
            Just("Namespace"),
            Just("ConfigMap"),
            Just(""),
        ];
        let junk = crate::testing::json_value;
        (api_version, kind, junk(), junk(), any::<u8>()).prop_map(
            |(api_version, kind, metadata, extra, shape)| match shape % 4 {
                0 => json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": "x", "namespace": "ns"}}),
                1 => json!({"apiVersion": api_version, "kind": kind, "metadata": metadata, "data": extra}),
                2 => json!({"apiVersion": api_version, "kind": kind}),
                _ => extra,
            },
        )
    }

    proptest! {
        /// Whatever a template renders, ordering and describing it never
        /// panic; the order puts dependencies first and keeps the template's
        /// order within a weight.
        #[test]
        fn any_rendered_objects_are_ordered_and_described(
            objects in prop::collection::vec(rendered_object(), 0..12),
        ) {
            let mut sorted = objects.clone();
            sort_objects(&mut sorted);
            let weights: Vec<u8> = sorted.iter().map(kind_weight).collect();
            prop_assert!(weights.windows(2).all(|w| w[0] <= w[1]), "{weights:?}");
            for w in 0..=4u8 {
                let before: Vec<&Value> = objects.iter().filter(|o| kind_weight(o) == w).collect();
                let after: Vec<&Value> = sorted.iter().filter(|o| kind_weight(o) == w).collect();
                prop_assert_eq!(before, after);
            }
            for o in &sorted {
                prop_assert!(!describe(o).is_empty());
            }
        }
    }

    fn obj(api_version: &str, kind: &str) -> Value {
        json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": kind.to_lowercase()}})
    }
    fn crd() -> Value {
        obj("apiextensions.k8s.io/v1", "CustomResourceDefinition")
    }
    fn export() -> Value {
        obj("apis.kcp.io/v1alpha1", "APIExport")
    }
    fn binding() -> Value {
        obj("apis.kcp.io/v1alpha1", "APIBinding")
    }
    fn ns() -> Value {
        obj("v1", "Namespace")
    }
    fn cm() -> Value {
        obj("v1", "ConfigMap")
    }
    fn deploy() -> Value {
        obj("apps/v1", "Deployment")
    }
    fn svc() -> Value {
        obj("v1", "Service")
    }

    fn kinds(v: &[Value]) -> Vec<&str> {
        v.iter().map(|o| o["kind"].as_str().unwrap()).collect()
    }

    fn sorted(mut v: Vec<Value>) -> Vec<Value> {
        sort_objects(&mut v);
        v
    }

    // The cases of upstream's TestSortObjectsByHierarchy.
    #[test]
    fn empty_and_single() {
        assert!(sorted(vec![]).is_empty());
        assert_eq!(kinds(&sorted(vec![cm()])), ["ConfigMap"]);
    }

    #[test]
    fn already_sorted_is_unchanged() {
        let v = vec![crd(), export(), binding(), ns(), cm()];
        assert_eq!(sorted(v.clone()), v);
    }

    #[test]
    fn reverse_order_is_fixed() {
        let v = sorted(vec![cm(), ns(), binding(), export(), crd()]);
        assert_eq!(
            kinds(&v),
            [
                "CustomResourceDefinition",
                "APIExport",
                "APIBinding",
                "Namespace",
                "ConfigMap"
            ]
        );
    }

    #[test]
    fn mixed_order_keeps_equal_weights_in_input_order() {
        let v = sorted(vec![ns(), cm(), crd(), deploy(), binding(), export()]);
        assert_eq!(
            kinds(&v),
            [
                "CustomResourceDefinition",
                "APIExport",
                "APIBinding",
                "Namespace",
                "ConfigMap",
                "Deployment"
            ]
        );
    }

    #[test]
    fn duplicates() {
        let v = sorted(vec![cm(), crd(), cm(), crd()]);
        assert_eq!(
            kinds(&v),
            [
                "CustomResourceDefinition",
                "CustomResourceDefinition",
                "ConfigMap",
                "ConfigMap"
            ]
        );
    }

    #[test]
    fn only_regular_objects_keep_order() {
        let v = vec![svc(), cm(), deploy()];
        assert_eq!(sorted(v.clone()), v);
    }

    #[test]
    fn weights_need_the_right_group() {
        // A Namespace kind in some other group is an ordinary object, and
        // kind comparison ignores case like upstream's lower-casing.
        assert_eq!(kind_weight(&obj("example.com/v1", "Namespace")), 4);
        assert_eq!(kind_weight(&obj("apis.kcp.io/v1alpha2", "APIBinding")), 2);
        assert_eq!(kind_weight(&obj("v1", "namespace")), 3);
        assert_eq!(kind_weight(&json!({})), 4);
    }

    #[test]
    fn stable_beyond_twelve_items() {
        // Upstream's sort is only stable for short inputs; ours always is.
        let mut v: Vec<Value> = (0..30)
            .map(|i| {
                let mut o = if i % 3 == 0 { ns() } else { cm() };
                o["metadata"]["name"] = json!(format!("o{i}"));
                o
            })
            .collect();
        sort_objects(&mut v);
        let names: Vec<&str> = v
            .iter()
            .map(|o| o["metadata"]["name"].as_str().unwrap())
            .collect();
        let want: Vec<String> = (0..30)
            .filter(|i| i % 3 == 0)
            .chain((0..30).filter(|i| i % 3 != 0))
            .map(|i| format!("o{i}"))
            .collect();
        assert_eq!(names, want);
    }

    /// Upstream's readiness cases: only `type == X` with `status == "True"`
    /// counts, exact and case-sensitive; entries that are not objects are
    /// skipped.
    #[test]
    fn has_condition_matches_upstream() {
        let with = |conditions: Value| json!({"status": {"conditions": conditions}});
        assert!(!has_condition(&json!({}), "Ready"), "no status");
        assert!(
            !has_condition(&json!({"status": {}}), "Ready"),
            "no conditions"
        );
        assert!(!has_condition(&with(json!([])), "Ready"), "empty list");
        assert!(!has_condition(
            &with(json!([{"type": "Other", "status": "True"}])),
            "Ready"
        ));
        assert!(!has_condition(
            &with(json!([{"type": "Ready", "status": "False"}])),
            "Ready"
        ));
        assert!(!has_condition(
            &with(json!([{"type": "Ready", "status": "Unknown"}])),
            "Ready"
        ));
        assert!(!has_condition(
            &with(json!([{"type": "Ready", "status": "true"}])),
            "Ready"
        ));
        assert!(!has_condition(
            &with(json!([{"type": "ready", "status": "True"}])),
            "Ready"
        ));
        assert!(has_condition(
            &with(
                json!(["junk", 3, {"type": "Other", "status": "False"}, {"type": "Ready", "status": "True"}])
            ),
            "Ready"
        ));
        assert!(
            !has_condition(&with(json!({"type": "Ready"})), "Ready"),
            "not a list"
        );
    }

    /// An empty value asks for nothing; the value is used as written.
    #[test]
    fn wait_for_reads_the_annotation_verbatim() {
        let annotated = |v: Value| json!({"metadata": {"annotations": {"initialization.kcp.io/wait-for-ready": v}}});
        assert_eq!(
            wait_for(&annotated(json!("Established"))),
            Some("Established")
        );
        assert_eq!(wait_for(&annotated(json!(" Ready"))), Some(" Ready"));
        assert_eq!(wait_for(&annotated(json!(""))), None);
        assert_eq!(wait_for(&annotated(json!(null))), None);
        assert_eq!(wait_for(&json!({"metadata": {}})), None);
    }

    #[test]
    fn condition_state_says_what_is_there() {
        let obj = json!({"status": {"conditions": [
            {"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable", "message": "0/1"}
        ]}});
        assert_eq!(
            condition_state(&obj, "Available"),
            "it is False (MinimumReplicasUnavailable): 0/1"
        );
        assert_eq!(
            condition_state(&obj, "Ready"),
            "the object has no such condition yet"
        );
    }

    #[test]
    fn describe_names_kind_namespace_and_name() {
        assert_eq!(
            describe(
                &json!({"kind": "ConfigMap", "metadata": {"name": "info", "namespace": "foobar"}})
            ),
            "ConfigMap foobar/info"
        );
        assert_eq!(describe(&ns()), "Namespace namespace");
        assert_eq!(describe(&json!({})), "<no kind> <no name>");
    }

    #[test]
    fn crds_resolve_kind_version_and_scope() {
        let crd = json!({"spec": {
            "group": "example.io",
            "names": {"kind": "Widget", "plural": "widgets"},
            "scope": "Namespaced",
            "versions": [
                {"name": "v1", "served": true},
                {"name": "v0", "served": false},
            ],
        }});
        assert_eq!(
            crd_serves(&crd, "example.io", "v1", "Widget"),
            Some(("widgets".into(), true))
        );
        // A version not served, another group, another kind: not this CRD.
        assert_eq!(crd_serves(&crd, "example.io", "v0", "Widget"), None);
        assert_eq!(crd_serves(&crd, "other.io", "v1", "Widget"), None);
        assert_eq!(crd_serves(&crd, "example.io", "v1", "Gadget"), None);
        let mut cluster = crd.clone();
        cluster["spec"]["scope"] = json!("Cluster");
        assert_eq!(
            crd_serves(&cluster, "example.io", "v1", "Widget"),
            Some(("widgets".into(), false))
        );
    }

    #[test]
    fn bound_resources_come_from_binding_status() {
        let bindings = [
            json!({"status": {"boundResources": [
                {"group": "example.io", "resource": "widgets"},
                {"group": "example.io", "resource": "gadgets"},
            ]}}),
            json!({"status": {}}),
            json!({}),
        ];
        assert_eq!(
            bound_resources(&bindings),
            vec![
                ("example.io".to_string(), "widgets".to_string()),
                ("example.io".to_string(), "gadgets".to_string()),
            ]
        );
    }

    #[test]
    fn built_in_table_has_no_duplicates() {
        let mut seen = std::collections::HashSet::new();
        for (v, k, _, _) in BUILT_IN {
            assert!(seen.insert((v, k)), "{v} {k} listed twice");
        }
    }
}
