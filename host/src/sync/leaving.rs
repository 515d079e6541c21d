//! A consumer workspace going away (`spec.lifecycle.workspaceDeletion`).
//!
//! kcp deletes a workspace's content as soon as its LogicalCluster is
//! marked for deletion, so the agent sees ordinary deletions of the kcp
//! objects it holds. Which of them are "the workspace is going away" rather
//! than "the consumer deleted this object" is told by the LogicalCluster's
//! deletionTimestamp (read through the virtual workspace, which needs the
//! `core.kcp.io/logicalclusters` claim). `Orphan` then leaves the copy on
//! the service cluster; `Delete` deletes the namespaces the agent created
//! for the workspace once its last copy is gone ([`super::deletion`]
//! calls these on its way). Nothing is cached: an answer kept even for
//! seconds would treat a workspace deleted right after one of its objects
//! as a single deletion (and a consumer who binds again as leaving), and
//! the reads happen only on deletions.

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use serde_json::json;
use tracing::info;

use super::context::SyncContext;
use super::error::{SyncError, kerr};
use super::labels::{
    CREATED_BY_LABEL, CREATED_FOR_LABEL, ORPHANED_ANNOTATION, REMOTE_CLUSTER_LABEL,
};
use crate::apis::WorkspaceDeletion;
use crate::controller::store::ObjectKey;

impl SyncContext {
    /// The policy, when set and the workspace of `key` is being deleted.
    pub(super) async fn workspace_leaving(
        &self,
        key: &ObjectKey,
    ) -> Result<Option<WorkspaceDeletion>, SyncError> {
        let Some(policy) = self.workspace_deletion else {
            return Ok(None);
        };
        let client = self.kcp_client(&key.cluster)?;
        let api: Api<DynamicObject> = Api::all_with(client, &crate::apis::kcp::logical_cluster());
        let lc = api
            .get_opt("cluster")
            .await
            .map_err(|source| SyncError::Kube {
                action: "reading the LogicalCluster (for spec.lifecycle.workspaceDeletion) of",
                what: format!(
                    "workspace {}; the consumer's APIBinding must accept the core.kcp.io \
                     logicalclusters permission claim (until then objects deleted there \
                     are retried, not deleted or orphaned)",
                    key.cluster
                ),
                source,
            })?;
        // Gone already: the workspace went.
        let leaving = lc.is_none_or(|lc| lc.metadata.deletion_timestamp.is_some())
            || self.unbinding(&key.cluster).await;
        Ok(leaving.then_some(policy))
    }

    /// Whether the workspace `cluster` is removing its APIBinding to this
    /// agent's APIExport (the consumer unbinds; kcp then deletes the bound
    /// objects). The export's virtual workspace serves APIBindings
    /// read-only. When they cannot be read, the workspace counts as not
    /// unbinding: the LogicalCluster already answered for the workspace.
    async fn unbinding(&self, cluster: &str) -> bool {
        let Ok(client) = self.kcp_client(cluster) else {
            return false;
        };
        let api: Api<DynamicObject> = Api::all_with(client, &crate::apis::kcp::apibinding());
        match api.list(&ListParams::default()).await {
            Ok(list) => list.items.iter().any(|b| {
                b.metadata.deletion_timestamp.is_some()
                    && b.data["spec"]["reference"]["export"]["name"].as_str()
                        == Some(self.kcp.export_name.as_str())
            }),
            Err(e) => {
                tracing::debug!(%cluster, error = %e, "cannot read the workspace's APIBindings");
                false
            }
        }
    }

    /// `Orphan`: the copy of `key` stays, marked; its state goes, and the
    /// finalizer is released by the caller.
    pub(super) async fn orphan_copy(&self, key: &ObjectKey) -> Result<(), SyncError> {
        if let Some(local) = self.find_local(key).await? {
            let ns = local.metadata.namespace.as_deref();
            let name = local.metadata.name.clone().unwrap_or_default();
            let at = k8s_openapi::jiff::Timestamp::now()
                .strftime("%Y-%m-%dT%H:%M:%SZ")
                .to_string();
            let patch = json!({"metadata": {"annotations": {ORPHANED_ANNOTATION: at}}});
            let orphaned = self
                .local_api(ns)
                .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .map_err(kerr("marking as orphaned the service copy of", key))?;
            self.copy_written(orphaned);
            info!(%key, local = %name, "workspace deleted; service copy orphaned (spec.lifecycle.workspaceDeletion: Orphan)");
        }
        Ok(())
    }

    /// `Delete`: once no copy of this PublishedResource for the workspace
    /// of `key` is left, delete the namespaces the agent created for it
    /// that hold no copy of this PublishedResource.
    pub(super) async fn delete_created_namespaces(&self, key: &ObjectKey) -> Result<(), SyncError> {
        let cluster = key.cluster.as_str();
        let left = self.copies.list(|o| {
            o.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(REMOTE_CLUSTER_LABEL))
                .is_some_and(|c| c == cluster)
        });
        if !left.is_empty() {
            return Ok(());
        }
        let api: Api<Namespace> = Api::all(self.service.clone());
        let selector = format!(
            "{CREATED_BY_LABEL}={},{CREATED_FOR_LABEL}={cluster}",
            self.agent_name
        );
        let created = api
            .list(&ListParams::default().labels(&selector))
            .await
            .map_err(kerr(
                "listing the namespaces created for workspace",
                cluster,
            ))?;
        for ns in created.items {
            let Some(name) = ns.metadata.name else {
                continue;
            };
            if ns.metadata.deletion_timestamp.is_some() {
                continue;
            }
            // A naming that puts several workspaces in one namespace: it
            // stays while it holds another workspace's copies.
            if !self
                .copies
                .list(|o| o.metadata.namespace.as_deref() == Some(name.as_str()))
                .is_empty()
            {
                continue;
            }
            match api.delete(&name, &DeleteParams::background()).await {
                Ok(_) => {
                    info!(namespace = %name, %cluster, "workspace deleted; deleted the namespace created for it (spec.lifecycle.workspaceDeletion: Delete)");
                }
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(source) => {
                    return Err(SyncError::Kube {
                        action: "deleting (spec.lifecycle.workspaceDeletion: Delete) namespace",
                        what: format!(
                            "{name}, created for the deleted workspace {cluster}; the agent needs \
                             `delete` on namespaces on the service cluster (chart: \
                             rbac.deleteNamespaces=true)"
                        ),
                        source,
                    });
                }
            }
            self.namespaces
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&name);
        }
        Ok(())
    }
}
