//! Where things are: clients for a consumer workspace (through its shard's
//! virtual workspace) and the service cluster, the labels that identify a
//! copy, and finding the copy of a kcp object.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Namespace;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, ListParams};

use super::caches::{Gvr, SideApi, SideCache, namespaces_gvr};
use super::context::SyncContext;
use super::error::{SyncError, kerr};
use super::labels::*;
use crate::controller::store::ObjectKey;

impl SyncContext {
    /// A client for one consumer workspace, through the virtual workspace of
    /// the shard that serves it.
    pub(super) fn kcp_client(&self, cluster: &str) -> Result<Client, SyncError> {
        let url = self
            .cache
            .route(cluster)
            .ok_or_else(|| SyncError::NoShard(cluster.to_string()))?;
        Ok(self.kcp.vw_client(&url, cluster)?)
    }

    pub(super) fn kcp_api(&self, key: &ObjectKey) -> Result<Api<DynamicObject>, SyncError> {
        let client = self.kcp_client(&key.cluster)?;
        Ok(match &key.namespace {
            Some(ns) => Api::namespaced_with(client, ns, &self.remote.ar),
            None => Api::all_with(client, &self.remote.ar),
        })
    }

    pub(super) fn local_api(&self, namespace: Option<&str>) -> Api<DynamicObject> {
        match namespace {
            Some(ns) if self.local.namespaced => {
                Api::namespaced_with(self.service.clone(), ns, &self.local.ar)
            }
            _ => Api::all_with(self.service.clone(), &self.local.ar),
        }
    }

    /// Labels that identify the copy of `key` on the service cluster.
    pub(super) fn identity_labels(&self, key: &ObjectKey) -> BTreeMap<String, String> {
        let mut l = BTreeMap::from([
            (REMOTE_CLUSTER_LABEL.to_string(), key.cluster.clone()),
            (REMOTE_NAME_HASH_LABEL.to_string(), sha1_hex(&key.name)),
        ]);
        if let Some(ns) = &key.namespace {
            l.insert(REMOTE_NAMESPACE_HASH_LABEL.to_string(), sha1_hex(ns));
        }
        l
    }

    pub(super) fn sync_metadata(
        &self,
        key: &ObjectKey,
        path: Option<&str>,
    ) -> (BTreeMap<String, String>, BTreeMap<String, String>) {
        let mut labels = self.identity_labels(key);
        labels.insert(AGENT_NAME_LABEL.to_string(), self.agent_name.clone());
        let mut annotations =
            BTreeMap::from([(REMOTE_NAME_ANNOTATION.to_string(), key.name.clone())]);
        if let Some(ns) = &key.namespace {
            annotations.insert(REMOTE_NAMESPACE_ANNOTATION.to_string(), ns.clone());
        }
        if let Some(path) = path {
            annotations.insert(
                REMOTE_WORKSPACE_PATH_ANNOTATION.to_string(),
                path.to_string(),
            );
        }
        (labels, annotations)
    }

    /// The workspace path of `cluster` (annotation `kcp.io/path` of its
    /// LogicalCluster), when `enableWorkspacePaths` is on.
    pub(super) async fn workspace_path(&self, cluster: &str) -> Result<Option<String>, SyncError> {
        if !self.workspace_paths {
            return Ok(None);
        }
        if let Some(p) = self
            .paths
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(cluster)
        {
            return Ok(Some(p.clone()));
        }
        let client = self.kcp_client(cluster)?;
        let api: Api<DynamicObject> = Api::all_with(client, &crate::apis::kcp::logical_cluster());
        let lc = api.get("cluster").await.map_err(|source| SyncError::Kube {
            action: "reading the LogicalCluster (for enableWorkspacePaths) of",
            what: format!(
                "workspace {cluster}; the consumer's APIBinding must accept the \
                 core.kcp.io logicalclusters permission claim"
            ),
            source,
        })?;
        let path = lc
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("kcp.io/path"))
            .cloned()
            .ok_or_else(|| SyncError::NoWorkspacePath(cluster.to_string()))?;
        self.paths
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(cluster.to_string(), path.clone());
        Ok(Some(path))
    }

    /// Find the service-side copy by its identity labels (not by name, so a
    /// changed naming scheme still finds copies made under the old one).
    pub(super) async fn find_local(
        &self,
        key: &ObjectKey,
    ) -> Result<Option<Arc<DynamicObject>>, SyncError> {
        if self.copies.synced() {
            // The copies watch sees every copy this agent may own (its
            // own and unlabelled ones), so the cache is the whole answer.
            let found = self.copies.get_all(&key.to_string());
            match found.len() {
                0 => return Ok(None),
                1 => return Ok(found.into_iter().next()),
                count => {
                    return Err(SyncError::Ambiguous {
                        count,
                        key: key.clone(),
                        selector: self
                            .identity_labels(key)
                            .iter()
                            .map(|(k, v)| format!("{k}={v}"))
                            .collect::<Vec<_>>()
                            .join(","),
                    });
                }
            }
        }
        // The cache has not listed yet: ask the API, from its watch cache
        // (resourceVersion 0; a quorum LIST by label would scan every
        // object of the kind in etcd). A copy made a moment ago that this
        // misses makes the create fail with AlreadyExists, which adopts it.
        let selector = self
            .identity_labels(key)
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(",");
        let list = self
            .local_api(None)
            .list(&ListParams::default().labels(&selector).match_any())
            .await
            .map_err(kerr("listing", format!("service copies of {key}")))?;
        let mut items: Vec<_> = (list.items.into_iter())
            .filter(|o| ours(o, &self.agent_name))
            .collect();
        match items.len() {
            0 => Ok(None),
            1 => Ok(items.pop().map(Arc::new)),
            count => Err(SyncError::Ambiguous {
                count,
                key: key.clone(),
                selector,
            }),
        }
    }

    /// The cache of `gvr` on one side, for objects of the workspace
    /// `cluster` (kcp side), if the controller watches that kind.
    pub(super) fn side_cache(&self, service_side: bool, gvr: &Gvr, cluster: &str) -> SideCache {
        if service_side {
            self.related_caches.service(gvr).map(SideCache::Service)
        } else {
            self.related_caches
                .kcp(gvr)
                .zip(self.cache.route(cluster))
                .map(|(cache, url)| SideCache::Kcp {
                    cache,
                    cluster: cluster.to_string(),
                    url,
                })
        }
        .unwrap_or(SideCache::None)
    }

    /// Namespaces on one side (kcp: of the workspace `cluster`), cached
    /// when the PublishedResource filters or selects by namespace labels.
    pub(super) fn namespaces_api(
        &self,
        service_side: bool,
        cluster: &str,
    ) -> Result<SideApi, SyncError> {
        let client = if service_side {
            self.service.clone()
        } else {
            self.kcp_client(cluster)?
        };
        Ok(SideApi {
            client,
            ar: ApiResource::erase::<Namespace>(&()),
            cache: self.side_cache(service_side, &namespaces_gvr(), cluster),
        })
    }
}
