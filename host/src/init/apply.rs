//! Creating rendered objects in a workspace being initialized: ordering by
//! kind, resolving kinds to resources through discovery, and plain creates
//! (an object that already exists is left as it is, like upstream).

use std::collections::HashMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::APIResource;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, PostParams};
use serde_json::Value;

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
}

/// What happened to one object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Created {
    Created,
    AlreadyExisted,
}

/// Discovery for one workspace, filled lazily per group-version and kept
/// for one reconcile only: the set of served kinds changes while a
/// workspace is initialized (its CRDs are created by us).
pub struct Discovery {
    client: Client,
    by_version: HashMap<String, Vec<APIResource>>,
}

impl Discovery {
    pub fn new(client: Client) -> Self {
        Discovery {
            client,
            by_version: HashMap::new(),
        }
    }

    /// The resource serving `kind` in `api_version`, and whether it is
    /// namespaced; `None` when not served.
    async fn resolve(
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
}

/// Create `obj` unless it exists.
pub async fn create(disc: &mut Discovery, obj: &Value) -> Result<Created, ApplyError> {
    let api_version = obj["apiVersion"]
        .as_str()
        .filter(|s| !s.is_empty())
        .ok_or_else(|| ApplyError::Invalid("the object has no apiVersion".into()))?;
    let kind = obj["kind"]
        .as_str()
        .filter(|s| !s.is_empty())
        .ok_or_else(|| ApplyError::Invalid("the object has no kind".into()))?;
    let Some((plural, namespaced)) = disc.resolve(api_version, kind).await? else {
        return Err(ApplyError::MissingKind {
            api_version: api_version.into(),
            kind: kind.into(),
        });
    };
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let ar =
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), &plural);
    let api: Api<DynamicObject> = if namespaced {
        let ns = obj
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| {
                ApplyError::Invalid(format!(
                    "{kind} is namespaced but metadata.namespace is not set"
                ))
            })?;
        Api::namespaced_with(disc.client.clone(), ns, &ar)
    } else {
        Api::all_with(disc.client.clone(), &ar)
    };
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
}
