//! `spec.managedNamespaceMetadata`: labels and annotations kept on the
//! service-cluster namespaces a PublishedResource places copies in.
//!
//! They are written with server-side apply under a field manager of the
//! PublishedResource's own, so keys that others set (or other
//! PublishedResources) are left alone, and a key this one set earlier but
//! wants no more is removed by the next apply. What the namespace should
//! carry is the static part plus the keys copied from the consumer
//! Namespaces of the objects placed in it; several consumer Namespaces can
//! feed one service namespace (the default naming puts a whole workspace
//! in one), and where they disagree the first object by key wins, so the
//! result does not depend on the order objects are reconciled in.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use kube::api::{Api, ObjectMeta, Patch, PatchParams};
use serde_json::json;
use tracing::{debug, info};

use crate::apis::published_resource::ManagedNamespaceMetadata;
use crate::controller::store::ObjectKey;

/// Labels and annotations.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Meta {
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
}

impl Meta {
    fn is_empty(&self) -> bool {
        self.labels.is_empty() && self.annotations.is_empty()
    }

    /// Whether a Namespace with metadata `ns` carries every key of `self`
    /// with its value.
    fn carried_by(&self, ns: &ObjectMeta) -> bool {
        let has = |theirs: &Option<BTreeMap<String, String>>, ours: &BTreeMap<String, String>| {
            ours.iter()
                .all(|(k, v)| theirs.as_ref().and_then(|t| t.get(k)) == Some(v))
        };
        has(&ns.labels, &self.labels) && has(&ns.annotations, &self.annotations)
    }
}

/// The keys one PublishedResource keeps on its namespaces, and what it has
/// applied. Memory is bounded by the objects synced (one entry per object
/// whose consumer Namespace contributes keys) and the namespaces they go to.
pub struct NamespaceMetadata {
    config: ManagedNamespaceMetadata,
    field_manager: String,
    /// Per service namespace, what each object's consumer Namespace adds.
    sources: Mutex<HashMap<String, BTreeMap<String, Meta>>>,
    /// Per service namespace, the last set applied.
    applied: Mutex<HashMap<String, Meta>>,
}

/// Whether `key` is selected by `patterns`: an exact key, or a prefix
/// ending in `*`.
fn selected(patterns: &[String], key: &str) -> bool {
    patterns.iter().any(|p| match p.strip_suffix('*') {
        Some(prefix) => key.starts_with(prefix),
        None => p == key,
    })
}

impl NamespaceMetadata {
    pub fn new(config: ManagedNamespaceMetadata, agent: &str, published_resource: &str) -> Self {
        NamespaceMetadata {
            config,
            // Field managers are at most 128 characters.
            field_manager: format!("syncweave/{agent}/{published_resource}")
                .chars()
                .take(128)
                .collect(),
            sources: Default::default(),
            applied: Default::default(),
        }
    }

    /// Whether keys are copied from consumer Namespaces (which then must be
    /// read, and are cached on the kcp side).
    pub fn copies(&self) -> bool {
        self.config
            .from_consumer_namespace
            .as_ref()
            .is_some_and(|c| {
                c.labels.as_ref().is_some_and(|l| !l.is_empty())
                    || c.annotations.as_ref().is_some_and(|a| !a.is_empty())
            })
    }

    /// The keys of a consumer Namespace with metadata `ns` that are copied.
    pub fn copied_from(&self, ns: &ObjectMeta) -> Meta {
        let Some(c) = &self.config.from_consumer_namespace else {
            return Meta::default();
        };
        let pick = |theirs: &Option<BTreeMap<String, String>>, patterns: &Option<Vec<String>>| {
            let patterns = patterns.as_deref().unwrap_or_default();
            theirs
                .iter()
                .flatten()
                .filter(|(k, _)| selected(patterns, k))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        };
        Meta {
            labels: pick(&ns.labels, &c.labels),
            annotations: pick(&ns.annotations, &c.annotations),
        }
    }

    /// Record what the object `key` (placed in `namespace`) contributes.
    pub fn contribute(&self, namespace: &str, key: &ObjectKey, from_consumer: Meta) {
        let mut sources = self.sources.lock().unwrap_or_else(|e| e.into_inner());
        let entries = sources.entry(namespace.to_string()).or_default();
        if from_consumer.is_empty() {
            entries.remove(&key.to_string());
        } else {
            entries.insert(key.to_string(), from_consumer);
        }
        if entries.is_empty() {
            sources.remove(namespace);
        }
    }

    /// The object `key` is gone: it contributes nothing any more. (Its
    /// namespace keeps the keys until the next object there is synced.)
    pub fn forget(&self, key: &ObjectKey) {
        let k = key.to_string();
        let mut sources = self.sources.lock().unwrap_or_else(|e| e.into_inner());
        sources.retain(|_, entries| {
            entries.remove(&k);
            !entries.is_empty()
        });
    }

    /// What `namespace` should carry: the static keys, then the copied
    /// ones not set statically (first object by key wins).
    pub fn desired(&self, namespace: &str) -> Meta {
        let mut out = Meta {
            labels: self.config.labels.clone().unwrap_or_default(),
            annotations: self.config.annotations.clone().unwrap_or_default(),
        };
        let sources = self.sources.lock().unwrap_or_else(|e| e.into_inner());
        for m in sources.get(namespace).into_iter().flat_map(|e| e.values()) {
            for (k, v) in &m.labels {
                out.labels.entry(k.clone()).or_insert_with(|| v.clone());
            }
            for (k, v) in &m.annotations {
                out.annotations
                    .entry(k.clone())
                    .or_insert_with(|| v.clone());
            }
        }
        out
    }

    /// Whether `namespace` must be written: its desired keys changed since
    /// the last apply, or the namespace (from the cache, when it has it)
    /// lost or changed one of them.
    pub fn needs_apply(
        &self,
        namespace: &str,
        desired: &Meta,
        current: Option<&ObjectMeta>,
    ) -> bool {
        let applied = self.applied.lock().unwrap_or_else(|e| e.into_inner());
        applied.get(namespace) != Some(desired) || current.is_some_and(|c| !desired.carried_by(c))
    }

    /// Apply `desired` to `namespace` (server-side apply, forced: a value
    /// someone else changed is set back).
    pub async fn apply(
        &self,
        client: &kube::Client,
        namespace: &str,
        desired: &Meta,
    ) -> Result<(), kube::Error> {
        let api: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
        let body = json!({
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {
                "name": namespace,
                "labels": desired.labels,
                "annotations": desired.annotations,
            },
        });
        let pp = PatchParams::apply(&self.field_manager).force();
        api.patch(namespace, &pp, &Patch::Apply(&body)).await?;
        let before = self
            .applied
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(namespace.to_string(), desired.clone());
        if before.is_none() {
            debug!(namespace, field_manager = %self.field_manager, "namespace metadata applied");
        } else {
            info!(namespace, field_manager = %self.field_manager, labels = desired.labels.len(), annotations = desired.annotations.len(), "namespace metadata updated");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apis::published_resource::ConsumerNamespaceKeys;
    use crate::controller::store::KeyParts;

    fn key(ns: &str, name: &str) -> ObjectKey {
        ObjectKey::new(KeyParts {
            cluster: "c1".into(),
            namespace: Some(ns.into()),
            name: name.into(),
        })
    }

    /// The metadata of a Namespace written as JSON.
    fn meta_of(ns: serde_json::Value) -> ObjectMeta {
        serde_json::from_value(ns["metadata"].clone()).unwrap()
    }

    fn config() -> ManagedNamespaceMetadata {
        ManagedNamespaceMetadata {
            labels: Some(BTreeMap::from([("team".into(), "provider".into())])),
            annotations: None,
            from_consumer_namespace: Some(ConsumerNamespaceKeys {
                labels: Some(vec!["team".into(), "example.com/*".into()]),
                annotations: Some(vec!["services.k8s.aws/owner-account-id".into()]),
            }),
        }
    }

    #[test]
    fn copies_exact_keys_and_prefixes_only() {
        let m = NamespaceMetadata::new(config(), "agent", "pr");
        let ns = json!({"metadata": {
            "labels": {"team": "a", "example.com/tier": "gold", "other": "x", "kcp.io/cluster": "c1"},
            "annotations": {"services.k8s.aws/owner-account-id": "123", "note": "n"},
        }});
        let c = m.copied_from(&meta_of(ns));
        assert_eq!(
            c.labels,
            BTreeMap::from([
                ("team".into(), "a".into()),
                ("example.com/tier".into(), "gold".into()),
            ])
        );
        assert_eq!(
            c.annotations,
            BTreeMap::from([("services.k8s.aws/owner-account-id".into(), "123".into())])
        );
    }

    #[test]
    fn static_keys_win_and_first_object_by_key_wins() {
        let m = NamespaceMetadata::new(config(), "agent", "pr");
        let meta = |tier: &str| Meta {
            labels: BTreeMap::from([
                ("team".into(), "consumer".into()),
                ("example.com/tier".into(), tier.into()),
            ]),
            annotations: BTreeMap::new(),
        };
        // Contributed in either order, "a/x" sorts first.
        m.contribute("svc", &key("b", "y"), meta("silver"));
        m.contribute("svc", &key("a", "x"), meta("gold"));
        let d = m.desired("svc");
        assert_eq!(d.labels["team"], "provider");
        assert_eq!(d.labels["example.com/tier"], "gold");
        m.forget(&key("a", "x"));
        assert_eq!(m.desired("svc").labels["example.com/tier"], "silver");
        m.forget(&key("b", "y"));
        assert_eq!(m.desired("svc").labels.len(), 1);
        assert!(m.sources.lock().unwrap().is_empty());
    }

    #[test]
    fn applies_when_desired_changes_or_the_namespace_drifts() {
        let m = NamespaceMetadata::new(config(), "agent", "pr");
        let d = m.desired("svc");
        assert!(m.needs_apply("svc", &d, None));
        m.applied.lock().unwrap().insert("svc".into(), d.clone());
        assert!(!m.needs_apply("svc", &d, None));
        let carried = meta_of(json!({"metadata": {"labels": {"team": "provider", "mine": "x"}}}));
        assert!(!m.needs_apply("svc", &d, Some(&carried)));
        let drifted = meta_of(json!({"metadata": {"labels": {"team": "someone-else"}}}));
        assert!(m.needs_apply("svc", &d, Some(&drifted)));
    }
}
