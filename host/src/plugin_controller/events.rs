//! core/v1 Events on WasmPlugins, so `kubectl describe wasmplugin` and
//! `kubectl get events` show why a plugin is not ready.
//!
//! WasmPlugins are cluster-scoped; like client-go's recorder, their Events
//! go to the `default` namespace. A repeat of the same reason and message
//! bumps the existing Event's count instead of creating another.

use std::collections::HashMap;
use std::sync::Mutex;

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::{Client, Resource, ResourceExt};
use serde_json::json;

use crate::apis::WasmPlugin;

pub const EVENT_NAMESPACE: &str = "default";
pub const COMPONENT: &str = "syncweave-wasmplugin-controller";
/// Event messages are for people; the status condition has the full text.
const MAX_MESSAGE: usize = 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    Normal,
    Warning,
}

impl EventType {
    fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

/// (uid, reason, message) of an Event already written.
type EventKey = (String, String, String);

pub struct EventRecorder {
    api: Api<Event>,
    instance: String,
    /// Event name and count per key, for aggregation.
    seen: Mutex<HashMap<EventKey, (String, i32)>>,
}

impl EventRecorder {
    pub fn new(client: Client, instance: impl Into<String>) -> Self {
        EventRecorder {
            api: Api::namespaced(client, EVENT_NAMESPACE),
            instance: instance.into(),
            seen: Mutex::default(),
        }
    }

    /// Record an Event on `wp`. Failures are logged, never returned: an
    /// Event is a courtesy, the status condition is the record.
    pub async fn record(&self, wp: &WasmPlugin, type_: EventType, reason: &str, message: &str) {
        let message = truncate(message, MAX_MESSAGE);
        let uid = wp.uid().unwrap_or_default();
        let key = (uid.clone(), reason.to_string(), message.clone());
        let now = Time(Timestamp::now());
        let previous = self
            .seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
            .cloned();
        if let Some((name, count)) = previous {
            let patch = json!({"count": count + 1, "lastTimestamp": now});
            match self
                .api
                .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                Ok(_) => {
                    self.seen
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(key, (name, count + 1));
                    return;
                }
                // Expired or deleted: start a new one.
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(e) => {
                    tracing::warn!(wasmplugin = %wp.name_any(), reason, error = %e, "cannot update Event");
                    return;
                }
            }
        }
        let name = format!(
            "{}.{:x}",
            wp.name_any(),
            now.0.as_nanosecond().unsigned_abs()
        );
        let event = Event {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(EVENT_NAMESPACE.into()),
                ..Default::default()
            },
            involved_object: ObjectReference {
                api_version: Some(WasmPlugin::api_version(&()).into_owned()),
                kind: Some(WasmPlugin::kind(&()).into_owned()),
                name: Some(wp.name_any()),
                uid: Some(uid),
                resource_version: wp.resource_version(),
                ..Default::default()
            },
            reason: Some(reason.into()),
            message: Some(message),
            type_: Some(type_.as_str().into()),
            count: Some(1),
            first_timestamp: Some(now.clone()),
            last_timestamp: Some(now),
            source: Some(EventSource {
                component: Some(COMPONENT.into()),
                host: None,
            }),
            reporting_component: Some(COMPONENT.into()),
            reporting_instance: Some(self.instance.clone()),
            ..Default::default()
        };
        match self.api.create(&PostParams::default(), &event).await {
            Ok(_) => {
                self.seen
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(key, (name, 1));
            }
            Err(e) => {
                tracing::warn!(wasmplugin = %wp.name_any(), reason, error = %e, "cannot create Event");
            }
        }
    }

    /// Forget aggregation state of a deleted object.
    pub fn forget(&self, uid: &str) {
        self.seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|(u, _, _), _| u != uid);
    }
}

fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max - 3;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &s[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncates_on_char_boundaries() {
        assert_eq!(truncate("short", 10), "short");
        let long = "é".repeat(600);
        let t = truncate(&long, MAX_MESSAGE);
        assert!(t.len() <= MAX_MESSAGE);
        assert!(t.ends_with("..."));
    }
}
