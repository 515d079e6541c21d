//! The kcp object is being deleted: related objects in delete mode go
//! first, then the copy; once it is gone, its state, then the finalizer is
//! released.

use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams};
use serde_json::json;
use tracing::info;

use super::context::{Pass, SyncContext};
use super::error::{REQUEUE_SOON, SyncError, kerr, to_json};
use super::events;
use super::labels::FINALIZER;
use super::ports::Origin;
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
        // The copy is gone: its state goes first (a crash before the
        // finalizer is released leaves nothing behind either).
        self.state
            .delete(key, &self.remote.ar.api_version, &self.remote.ar.kind)
            .await
            .map_err(kerr("deleting the sync state of", key))?;
        if let Some(m) = &self.namespace_metadata {
            m.forget(key);
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
