//! The kcp object is being deleted: with
//! `spec.lifecycle.waitForOtherFinalizers`, other finalizers are waited for
//! first (bounded); then related objects in delete mode go, then the copy;
//! once it is gone, its state, then the finalizer is released. When the
//! workspace itself goes, `spec.lifecycle.workspaceDeletion` orphans the
//! copy or deletes its namespaces as well ([`super::leaving`]).

use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams};
use serde_json::json;
use tracing::info;

use super::context::{Pass, SyncContext};
use super::error::{REQUEUE_SOON, SyncError, kerr, to_json};
use super::events;
use super::labels::FINALIZER;
use super::ports::Origin;
use crate::apis::WorkspaceDeletion;
use crate::controller::runner::Outcome;
use crate::controller::store::ObjectKey;

/// The deletion of the kcp object `remote` (`key`), whose finalizer is ours
/// when `has_finalizer`.
pub(super) async fn run(
    sync: &SyncContext,
    key: &ObjectKey,
    kcp_api: Api<DynamicObject>,
    remote: &DynamicObject,
    has_finalizer: bool,
) -> Result<Outcome, SyncError> {
    sync.handle_deletion(key, kcp_api, remote, has_finalizer)
        .await
}

impl SyncContext {
    async fn handle_deletion(
        &self,
        key: &ObjectKey,
        kcp_api: Api<DynamicObject>,
        remote: &DynamicObject,
        has_finalizer: bool,
    ) -> Result<Outcome, SyncError> {
        if !has_finalizer {
            return Ok(Outcome::Done);
        }
        let leaving = self.workspace_leaving(key).await?;
        if leaving == Some(WorkspaceDeletion::Orphan) {
            // The workspace goes, the copy stays (related copies too).
            self.orphan_copy(key).await?;
        } else {
            if let Some(outcome) = self.wait_for_other_finalizers(key, remote) {
                return Ok(outcome);
            }
            if let Some(local) = self.find_local(key).await? {
                // Related objects first, in delete mode (while both primaries
                // still exist to resolve them).
                let plugins = self.plugins();
                if !plugins.related.is_empty() && local.metadata.deletion_timestamp.is_none() {
                    let path = self.workspace_path(&key.cluster).await?;
                    let object = to_json(key, "the kcp object", remote)?;
                    let pass = Pass {
                        sync: self,
                        plugins,
                        key,
                        origin: Origin::of(key, path.as_deref(), remote),
                        kcp_api: kcp_api.clone(),
                        object: &object,
                        reported: Default::default(),
                    };
                    let local_json = to_json(key, "the service copy", &local)?;
                    if let Some(outcome) = super::related::run(&pass, &local_json, true).await? {
                        return Ok(outcome);
                    }
                }
                if local.metadata.deletion_timestamp.is_none() {
                    let ns = local.metadata.namespace.as_deref();
                    let name = local.metadata.name.clone().unwrap_or_default();
                    self.local_api(ns)
                        .delete(&name, &DeleteParams::background())
                        .await
                        .map_err(kerr("deleting service copy of", key))?;
                    info!(%key, local = %name, "deleted service copy");
                    if let Ok(v) = serde_json::to_value(remote) {
                        self.emit(
                            key,
                            &v,
                            false,
                            events::OBJECT_CLEANUP,
                            format!("deleting the copy {name} on the service cluster"),
                        );
                    }
                }
                // Wait until it is really gone before letting kcp delete the object.
                return Ok(Outcome::Requeue(REQUEUE_SOON));
            }
        }
        // Before the finalizer goes, so that a failure is retried and shown
        // (on the object and the PublishedResource), not lost.
        if leaving == Some(WorkspaceDeletion::Delete) {
            self.delete_created_namespaces(key).await?;
        }
        // The copy is gone (or orphaned): its state goes first (a crash before the
        // finalizer is released leaves nothing behind either).
        self.state
            .delete(key, &self.remote.ar.api_version, &self.remote.ar.kind)
            .await
            .map_err(kerr("deleting the sync state of", key))?;
        if let Some(m) = &self.namespace_metadata {
            m.forget(key);
        }
        if let Some(w) = &self.finalizer_waits {
            w.ended(key);
        }
        let finalizers: Vec<String> = remote
            .metadata
            .finalizers
            .clone()
            .unwrap_or_default()
            .into_iter()
            .filter(|f| f != FINALIZER)
            .collect();
        let p = json!({"metadata": {"finalizers": finalizers, "resourceVersion": remote.metadata.resource_version}});
        let released = kcp_api
            .patch(&key.name, &PatchParams::default(), &Patch::Merge(&p))
            .await
            .map_err(kerr("releasing finalizer of", key))?;
        self.kcp_written(released);
        info!(%key, "service copy gone; finalizer released");
        if let Ok(v) = serde_json::to_value(remote) {
            self.emit(
                key,
                &v,
                false,
                events::OBJECT_DELETED,
                "the copy on the service cluster is gone; finalizer removed".into(),
            );
        }
        Ok(Outcome::Done)
    }
}

/// How often a copy that waits for other finalizers is looked at again
/// (their removal is also a watch event, which comes sooner).
const FINALIZER_WAIT_RECHECK: std::time::Duration = std::time::Duration::from_secs(5);

/// The finalizers on `obj` that are not `ours`.
fn other_finalizers<'a>(obj: &'a DynamicObject, ours: &[&str]) -> Vec<&'a str> {
    obj.metadata
        .finalizers
        .iter()
        .flatten()
        .map(String::as_str)
        .filter(|f| !ours.contains(f))
        .collect()
}

impl SyncContext {
    /// `Some` (check again later) while `spec.lifecycle.waitForOtherFinalizers`
    /// holds the copy: the kcp object has finalizers not the agent's and
    /// its deletion began less than the timeout ago. Said once per object
    /// with an Event; a timeout is said with a Warning, and the copy goes.
    fn wait_for_other_finalizers(
        &self,
        key: &ObjectKey,
        remote: &DynamicObject,
    ) -> Option<Outcome> {
        let timeout = self.finalizer_wait?;
        let waits = self.finalizer_waits.as_ref()?;
        let mut ours = vec![FINALIZER, self.related_finalizer.as_str()];
        ours.extend(self.former_related_finalizer.as_deref());
        let others = other_finalizers(remote, &ours);
        let object = || serde_json::to_value(remote).unwrap_or_default();
        if others.is_empty() {
            if waits.ended(key) {
                info!(%key, "other finalizers gone; deleting the service copy");
            }
            return None;
        }
        let since = remote.metadata.deletion_timestamp.as_ref()?.0;
        let waited = k8s_openapi::jiff::Timestamp::now()
            .duration_since(since)
            .unsigned_abs();
        if waited >= timeout {
            if !waits.timed_out(key, &others) {
                return None;
            }
            let message = format!(
                "waited {}s (spec.lifecycle.waitForOtherFinalizers.timeout) for finalizers {} \
                 to be removed; deleting the copy on the service cluster anyway",
                timeout.as_secs(),
                others.join(", ")
            );
            tracing::warn!(%key, finalizers = ?others, "{message}");
            self.emit(
                key,
                &object(),
                true,
                events::FINALIZER_WAIT_TIMED_OUT,
                message,
            );
            return None;
        }
        if waits.waiting(key, &others) {
            let message = format!(
                "waiting up to {}s for finalizers {} to be removed before deleting the copy on \
                 the service cluster (spec.lifecycle.waitForOtherFinalizers)",
                timeout.as_secs(),
                others.join(", ")
            );
            info!(%key, finalizers = ?others, "waiting for other finalizers");
            self.emit(
                key,
                &object(),
                false,
                events::WAITING_FOR_FINALIZERS,
                message,
            );
        }
        Some(Outcome::Requeue(
            FINALIZER_WAIT_RECHECK.min(timeout - waited),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_finalizers_leave_out_the_agents_own() {
        let mut obj = DynamicObject::new(
            "x",
            &kube::api::ApiResource::from_gvk(&kube::api::GroupVersionKind::gvk(
                "example.com",
                "v1",
                "CronTab",
            )),
        );
        obj.metadata.finalizers = Some(vec![
            FINALIZER.to_string(),
            "example.com/backup".to_string(),
            "cleanup.syncagent.kcp.io/agent-b".to_string(),
        ]);
        assert_eq!(
            other_finalizers(&obj, &[FINALIZER, "cleanup.syncagent.kcp.io/agent-b"]),
            ["example.com/backup"]
        );
        assert_eq!(
            other_finalizers(&obj, &[FINALIZER, FINALIZER]),
            ["example.com/backup", "cleanup.syncagent.kcp.io/agent-b"]
        );
    }
}
