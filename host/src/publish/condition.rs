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
use crate::sync::context::SyncContext;

/// One condition this agent writes: its type without the partition
/// prefix, and what it says.
pub(super) struct Said<'a> {
    pub type_: &'static str,
    pub status: &'a str,
    pub reason: &'a str,
    pub message: &'a str,
}

/// The condition types this agent owns on a PublishedResource (without the
/// partition prefix): written together, so that one it no longer says
/// (waitForOtherFinalizers turned off) goes.
const OWNED: [&str; 3] = [
    "Ready",
    crate::sync::finalizer_wait::CONDITION,
    crate::sync::plugin_reports::CONDITION,
];

impl Publisher {
    /// The type of a condition this agent writes on PublishedResources:
    /// `Ready` as upstream (and `WaitingForFinalizers`); with a partitioned
    /// endpoint slice `<slice>/Ready`, one per agent, since each sees only
    /// its partition's objects (sharing one condition, agents would
    /// overwrite each other's failures on every pass).
    fn condition_type(&self, type_: &str) -> String {
        match &self.kcp.partition {
            Some(_) => format!("{}/{type_}", self.kcp.slice_name),
            None => type_.into(),
        }
    }

    /// Set the Ready condition (and drop the agent's other conditions).
    pub(super) async fn set_condition(
        &self,
        api: &Api<PublishedResource>,
        name: &str,
        status: &str,
        reason: &str,
        message: &str,
    ) {
        let ready = Said {
            type_: "Ready",
            status,
            reason,
            message,
        };
        self.set_conditions(api, name, &[ready]).await
    }

    /// Set the agent's conditions on `name` to `said`, in one status write
    /// and none when they already say that. A False Ready is repeated as a
    /// Warning Event.
    pub(super) async fn set_conditions(
        &self,
        api: &Api<PublishedResource>,
        name: &str,
        said: &[Said<'_>],
    ) {
        // The watch's copy: the conditions are compared without a request.
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
        let owned: Vec<String> = OWNED.iter().map(|t| self.condition_type(t)).collect();
        let ours: Vec<(String, &Said)> = said
            .iter()
            .map(|c| (self.condition_type(c.type_), c))
            .collect();
        // Whether the resource already says `c` under type `t`.
        let said_already = |t: &String, c: &Said| {
            current.iter().any(|x| {
                &x.type_ == t
                    && x.status == c.status
                    && x.reason == c.reason
                    && x.message == c.message
            })
        };
        let unchanged = ours.iter().all(|(t, c)| said_already(t, c));
        let stale = current
            .iter()
            .any(|x| owned.contains(&x.type_) && !ours.iter().any(|(t, _)| t == &x.type_));
        if unchanged && !stale {
            return;
        }
        for (t, c) in &ours {
            if c.type_ == "Ready" && c.status == "False" && !said_already(t, c) {
                // Events say the same as the condition, where `kubectl describe` shows them.
                let ev = Event {
                    type_: EventType::Warning,
                    reason: c.reason.to_string(),
                    note: Some(crate::kube::recorder::note(c.message)),
                    action: "Reconcile".into(),
                    secondary: None,
                };
                if let Err(e) = self.events.publish(&ev, &pr.object_ref(&())).await {
                    warn!(published_resource = %name, error = %e, "cannot record event");
                }
            }
        }
        let now = k8s_openapi::jiff::Timestamp::now().to_string();
        let written = ours.iter().map(|(t, c)| {
            // The time of the last change of status, not of every message.
            let since = current
                .iter()
                .find(|x| &x.type_ == t && x.status == c.status)
                .map(|x| serde_json::to_value(&x.last_transition_time).unwrap_or_default())
                .unwrap_or_else(|| json!(now));
            json!({
                "type": t, "status": c.status, "reason": c.reason, "message": c.message,
                "lastTransitionTime": since,
            })
        });
        let p = if self.kcp.partition.is_some() {
            // The agents of the other partitions keep their conditions: the
            // list is written whole (a merge patch replaces arrays), so only
            // over the version it was read from (a conflict is retried by
            // the pass its watch event wakes).
            let conditions: Vec<serde_json::Value> = current
                .iter()
                .filter(|c| !owned.contains(&c.type_))
                .filter_map(|c| serde_json::to_value(c).ok())
                .chain(written)
                .collect();
            json!({
                "metadata": {"resourceVersion": pr.metadata.resource_version},
                "status": {"conditions": conditions},
            })
        } else {
            json!({"status": {"conditions": written.collect::<Vec<_>>()}})
        };
        if let Err(e) = api
            .patch_status(name, &PatchParams::default(), &Patch::Merge(&p))
            .await
        {
            warn!(published_resource = %name, error = %e, "cannot update status condition");
        }
    }

    /// The conditions of a running sync: Ready ([`Publisher::sync_condition`])
    /// and, with `spec.lifecycle.waitForOtherFinalizers`, which copies wait.
    pub(super) async fn say_syncing(
        &self,
        api: &Api<PublishedResource>,
        pr: &PublishedResource,
        ctx: &SyncContext,
        failing: Option<String>,
        syncing_message: &str,
    ) {
        let name = pr.metadata.name.clone().unwrap_or_default();
        let (status, reason, message) = self.sync_condition(pr, failing, syncing_message);
        let mut said = vec![Said {
            type_: "Ready",
            status,
            reason,
            message: &message,
        }];
        let waits = ctx.finalizer_waits.as_ref().map(|w| w.condition());
        if let Some((status, reason, message)) = &waits {
            said.push(Said {
                type_: crate::sync::finalizer_wait::CONDITION,
                status,
                reason,
                message,
            });
        }
        // Only where a plugin of the resource's own can report (a `wasm`
        // use): upstream's rules never warn.
        let warnings = uses_wasm(pr).then(|| ctx.plugin_reports.condition());
        if let Some((status, reason, message)) = &warnings {
            said.push(Said {
                type_: crate::sync::plugin_reports::CONDITION,
                status,
                reason,
                message,
            });
        }
        self.set_conditions(api, &name, &said).await
    }
}

/// Whether `pr` runs a plugin of its own anywhere (`wasm` in naming, a
/// mutation or a related resource's mutation).
fn uses_wasm(pr: &PublishedResource) -> bool {
    let chain = |m: &crate::apis::ResourceMutationSpec| {
        m.spec
            .iter()
            .chain(m.status.iter())
            .flatten()
            .any(|r| r.wasm.is_some())
    };
    pr.spec.naming.as_ref().is_some_and(|n| n.wasm.is_some())
        || pr.spec.mutation.as_ref().is_some_and(chain)
        || pr
            .spec
            .related
            .iter()
            .flatten()
            .any(|r| r.mutation.as_ref().is_some_and(chain))
}
