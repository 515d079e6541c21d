//! What a consumer sees in their own workspace about their objects: Events
//! with upstream's reasons, written through the APIExport's virtual
//! workspace (the export claims `events`), and what a provider sees on the
//! PublishedResource: which objects keep failing.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::api::{DynamicObject, PostParams};
use tokio::sync::Notify;
use tracing::debug;

use super::ObjectKey;

/// Upstream's event reasons on kcp objects.
pub const OBJECT_ACCEPTED: &str = "ObjectAccepted";
pub const OBJECT_PLACED: &str = "ObjectPlaced";
pub const OBJECT_SYNCED: &str = "ObjectSynced";
pub const OBJECT_STATUS_SYNCED: &str = "ObjectStatusSynced";
pub const OBJECT_CLEANUP: &str = "ObjectCleanup";
pub const OBJECT_DELETED: &str = "ObjectDeleted";
pub const RECONCILING_ERROR: &str = "ReconcilingError";

/// A core/v1 Event about `obj` (its namespace, or `default` for a
/// cluster-scoped object, where `kubectl describe` looks).
pub fn event_for(
    obj: &DynamicObject,
    agent_name: &str,
    warning: bool,
    reason: &str,
    message: &str,
) -> Event {
    let name = obj.metadata.name.clone().unwrap_or_default();
    let namespace = obj
        .metadata
        .namespace
        .clone()
        .unwrap_or_else(|| "default".into());
    let now = Time(Timestamp::now());
    let types = obj.types.clone().unwrap_or_default();
    Event {
        metadata: ObjectMeta {
            generate_name: Some(format!("{name}.")),
            namespace: Some(namespace),
            ..Default::default()
        },
        involved_object: ObjectReference {
            api_version: Some(types.api_version),
            kind: Some(types.kind),
            name: Some(name),
            namespace: obj.metadata.namespace.clone(),
            uid: obj.metadata.uid.clone(),
            resource_version: obj.metadata.resource_version.clone(),
            ..Default::default()
        },
        reason: Some(reason.to_string()),
        // The API server caps messages; keep well under it.
        message: Some(message.chars().take(1024).collect()),
        type_: Some(if warning { "Warning" } else { "Normal" }.to_string()),
        count: Some(1),
        first_timestamp: Some(now.clone()),
        last_timestamp: Some(now),
        source: Some(EventSource {
            component: Some(format!("syncweave/{agent_name}")),
            host: None,
        }),
        reporting_component: Some("syncweave".into()),
        reporting_instance: Some(agent_name.to_string()),
        ..Default::default()
    }
}

/// Post `event` with `client` (the virtual-workspace client of the object's
/// cluster). Events are best effort: a failure is logged, never returned.
pub async fn post(client: kube::Client, event: Event) {
    let ns = event.metadata.namespace.clone().unwrap_or_default();
    let reason = event.reason.clone().unwrap_or_default();
    if let Err(e) = Api::<Event>::namespaced(client, &ns)
        .create(&PostParams::default(), &event)
        .await
    {
        debug!(%reason, error = %e, "could not record an event in kcp (does the APIBinding accept the events claim?)");
    }
}

/// Objects of one PublishedResource whose last reconcile failed, with the
/// error. The publisher turns a non-empty set into `Ready=False`.
#[derive(Debug, Default)]
pub struct Failures {
    failing: Mutex<BTreeMap<ObjectKey, String>>,
    /// Woken when the set turns empty or non-empty, so the condition follows
    /// at once instead of at the next periodic pass.
    changed: Arc<Notify>,
}

impl Failures {
    pub fn new(changed: Arc<Notify>) -> Arc<Failures> {
        Arc::new(Failures {
            failing: Mutex::new(BTreeMap::new()),
            changed,
        })
    }

    pub fn failed(&self, key: &ObjectKey, error: String) {
        let mut f = self.failing.lock().unwrap_or_else(|e| e.into_inner());
        let was_empty = f.is_empty();
        f.insert(key.clone(), error);
        if was_empty {
            self.changed.notify_one();
        }
    }

    pub fn succeeded(&self, key: &ObjectKey) {
        let mut f = self.failing.lock().unwrap_or_else(|e| e.into_inner());
        if f.remove(key).is_some() && f.is_empty() {
            self.changed.notify_one();
        }
    }

    pub fn len(&self) -> usize {
        self.failing.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `None` when nothing fails, else a message for the condition: how many
    /// objects fail and the first one's error.
    pub fn summary(&self) -> Option<String> {
        let f = self.failing.lock().unwrap_or_else(|e| e.into_inner());
        let (key, error) = f.iter().next()?;
        Some(match f.len() {
            1 => format!("1 object is failing: {key}: {error}"),
            n => format!("{n} objects are failing, e.g. {key}: {error}"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> ObjectKey {
        ObjectKey {
            cluster: "c".into(),
            namespace: Some("ns".into()),
            name: name.into(),
        }
    }

    #[test]
    fn failures_summarise_and_clear() {
        let f = Failures::new(Arc::new(Notify::new()));
        assert_eq!(f.summary(), None);
        f.failed(&key("a"), "boom".into());
        assert_eq!(f.summary().unwrap(), "1 object is failing: c|ns/a: boom");
        f.failed(&key("b"), "bang".into());
        assert_eq!(
            f.summary().unwrap(),
            "2 objects are failing, e.g. c|ns/a: boom"
        );
        f.succeeded(&key("a"));
        f.succeeded(&key("b"));
        assert_eq!(f.summary(), None);
    }

    #[test]
    fn events_name_the_object_and_default_the_namespace() {
        let mut obj = DynamicObject::new(
            "x",
            &kube::api::ApiResource::from_gvk(&kube::api::GroupVersionKind::gvk(
                "example.com",
                "v1",
                "CronTab",
            )),
        );
        obj.metadata.uid = Some("u1".into());
        let e = event_for(&obj, "agent", true, RECONCILING_ERROR, &"m".repeat(5000));
        assert_eq!(e.metadata.namespace.as_deref(), Some("default"));
        assert_eq!(e.involved_object.kind.as_deref(), Some("CronTab"));
        assert_eq!(e.involved_object.namespace, None);
        assert_eq!(e.type_.as_deref(), Some("Warning"));
        assert_eq!(e.message.unwrap().len(), 1024);
    }
}
