//! The condition this agent writes on PublishedResources, and the Warning
//! Event that repeats it where `kubectl describe` shows it.

use kube::Resource;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::events::{Event, EventType};
use kube::runtime::reflector;
use serde_json::json;
use std::sync::Arc;
use tracing::warn;

use super::Publisher;
use crate::apis::PublishedResource;

impl Publisher {
    /// The type of the condition this agent writes on PublishedResources:
    /// `Ready`, as upstream; with a partitioned endpoint slice
    /// `<slice>/Ready`, one per agent, since each sees only its partition's
    /// objects (sharing one condition, agents would overwrite each other's
    /// failures on every pass).
    fn condition_type(&self) -> String {
        match &self.kcp.partition {
            Some(_) => format!("{}/Ready", self.kcp.slice_name),
            None => "Ready".into(),
        }
    }

    pub(super) async fn set_condition(
        &self,
        api: &Api<PublishedResource>,
        name: &str,
        status: &str,
        reason: &str,
        message: &str,
    ) {
        // The watch's copy: the condition is compared without a request.
        let cached = self.prs.get(&reflector::ObjectRef::new(name));
        let pr = match cached {
            Some(pr) => pr,
            None => match api.get_status(name).await {
                Ok(pr) => Arc::new(pr),
                Err(_) => return,
            },
        };
        let current = pr
            .status
            .as_ref()
            .and_then(|s| s.conditions.clone())
            .unwrap_or_default();
        let type_ = self.condition_type();
        if current.iter().any(|c| {
            c.type_ == type_ && c.status == status && c.reason == reason && c.message == message
        }) {
            return;
        }
        if status == "False" {
            // Events say the same as the condition, where `kubectl describe` shows them.
            let ev = Event {
                type_: EventType::Warning,
                reason: reason.to_string(),
                note: Some(crate::kube::recorder::note(message)),
                action: "Reconcile".into(),
                secondary: None,
            };
            if let Err(e) = self.events.publish(&ev, &pr.object_ref(&())).await {
                warn!(published_resource = %name, error = %e, "cannot record event");
            }
        }
        let now = k8s_openapi::jiff::Timestamp::now();
        let ours = json!({
            "type": type_, "status": status, "reason": reason, "message": message,
            "lastTransitionTime": now.to_string(),
        });
        let p = if self.kcp.partition.is_some() {
            // The agents of the other partitions keep their conditions: the
            // list is written whole (a merge patch replaces arrays), so only
            // over the version it was read from (a conflict is retried by
            // the pass its watch event wakes).
            let mut conditions: Vec<serde_json::Value> = current
                .iter()
                .filter(|c| c.type_ != type_)
                .filter_map(|c| serde_json::to_value(c).ok())
                .collect();
            conditions.push(ours);
            json!({
                "metadata": {"resourceVersion": pr.metadata.resource_version},
                "status": {"conditions": conditions},
            })
        } else {
            json!({"status": {"conditions": [ours]}})
        };
        if let Err(e) = api
            .patch_status(name, &PatchParams::default(), &Patch::Merge(&p))
            .await
        {
            warn!(published_resource = %name, error = %e, "cannot update status condition");
        }
    }
}
