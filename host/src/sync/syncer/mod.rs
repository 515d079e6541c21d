//! Reconciling one kcp object with its copy on the service cluster.
//!
//! kcp is the source of truth for everything but `status`, which flows up.
//! The phases, in order (each returns early with a requeue when it changed
//! something, so every step starts from fresh state):
//! 1. deletion: delete the copy, wait for it to go, release the finalizer;
//! 2. finalizer: make sure the kcp object carries ours before any copy exists;
//! 3. spec down: create, adopt or three-way-patch the copy;
//! 4. status up: replace the kcp object's status with the copy's;
//! 5. related objects ([`super::related`]), once the primary is in sync
//!    (and, in delete mode, first thing on deletion).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use kube::Client;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams,
};
use serde_json::{Value, json};
use tracing::{debug, info};

use super::converge::Phase;
use super::events::{self, Failures};
use super::labels::*;
use super::naming::LocalName;
use super::state::StateStore;
use super::strip::{drop_subresources, strip_metadata};
use super::{ObjectKey, patch};
use crate::kcp::KcpContext;
use crate::selector::Selector;

/// A resource on one side: how to reach it and whether it is namespaced.
#[derive(Clone, Debug)]
pub struct Side {
    pub ar: ApiResource,
    pub namespaced: bool,
    /// The CRD has a `status` subresource: status is left out of spec sync
    /// and flows up through `/status`. Without one it is an ordinary field.
    pub status_subresource: bool,
    /// The CRD has a `scale` subresource (its field is left out of spec sync).
    pub scale_subresource: bool,
}

/// Turns an object into its service-side name. The default is upstream's
/// scheme; templates and plugins implement it as Wasm. Async because plugin
/// calls run on the blocking pool, never on the caller's async worker.
pub trait Namer: Send + Sync {
    fn name<'a>(
        &'a self,
        cluster: &'a str,
        cluster_path: Option<&'a str>,
        object: &'a Value,
    ) -> BoxFuture<'a, Result<LocalName, String>>;
}

/// Rewrites objects on their way (spec down, status up). Async like
/// [`Namer`].
pub trait Mutator: Send + Sync {
    /// `object` is mutated in place; `other` is the counterpart (for spec
    /// mutations, the projected destination when no copy exists yet).
    fn mutate_spec<'a>(
        &'a self,
        origin: &'a Origin<'a>,
        object: &'a mut Value,
        other: Option<&'a Value>,
    ) -> BoxFuture<'a, Result<(), String>>;
    fn mutate_status<'a>(
        &'a self,
        origin: &'a Origin<'a>,
        object: &'a mut Value,
        other: Option<&'a Value>,
    ) -> BoxFuture<'a, Result<(), String>>;
}

/// Where a kcp object lives: its logical cluster and, with
/// `enableWorkspacePaths`, its workspace path.
#[derive(Debug, Clone, Copy)]
pub struct Origin<'a> {
    pub cluster: &'a str,
    pub path: Option<&'a str>,
}

/// Everything needed to sync one PublishedResource's objects.
pub struct SyncContext {
    pub agent_name: String,
    pub published_resource: String,
    /// The resource as consumers see it in kcp (projected).
    pub remote: Side,
    /// The resource on the service cluster.
    pub local: Side,
    pub kcp: KcpContext,
    /// Every kcp object of the resource, across all shards, and which
    /// shard's virtual workspace serves each workspace.
    pub cache: Arc<super::cache::KcpCache>,
    /// The service-side copies made by this agent, by the kcp object they
    /// belong to.
    pub copies: Arc<super::cache::Store<DynamicObject>>,
    /// Namespaces on the service cluster known to exist.
    pub namespaces: std::sync::Mutex<std::collections::HashSet<String>>,
    pub service: Client,
    pub state: StateStore,
    /// Naming, mutations, templates and related resources: everything
    /// that runs plugin code, swapped as one when a WasmPlugin moves to new
    /// code (see [`SyncContext::swap_plugins`]).
    pub plugins: std::sync::RwLock<Arc<PluginSet>>,
    /// Notified to re-check every object (after a plugin swap).
    pub resync_all: tokio::sync::Notify,
    /// `spec.filter.resource`, already converted.
    pub resource_filter: Option<Selector>,
    /// `spec.filter.namespace`: a selector on the labels of the object's
    /// Namespace in the consumer's workspace (read through the virtual
    /// workspace, which needs the `namespaces` permission claim).
    pub namespace_filter: Option<Selector>,
    /// `spec.enableWorkspacePaths`: resolve each consumer workspace's path
    /// (through the virtual workspace, which needs the
    /// `core.kcp.io/logicalclusters` permission claim).
    pub workspace_paths: bool,
    /// Workspace paths by logical cluster; a path never changes.
    pub paths: std::sync::Mutex<BTreeMap<String, String>>,
    /// Objects whose last reconcile failed (for the PublishedResource's
    /// condition).
    pub failures: Arc<Failures>,
    /// Discovered kinds of related resources, by side and GVR.
    pub related_kinds: std::sync::Mutex<BTreeMap<String, ApiResource>>,
    /// Related objects on both sides, by kind.
    pub related_caches: super::related_cache::RelatedCaches,
    /// Writes per key and input version, to stop a sync that does not settle.
    pub convergence: super::converge::Convergence,
    /// Events about kcp objects, de-duplicated and posted by one task.
    pub recorder: Arc<events::Recorder>,
    /// How often an object in sync is checked again (`--resync-period`).
    pub resync: Duration,
    /// Per key, the (kcp, copy) resourceVersions a reconcile left in sync:
    /// a check that finds both unchanged has nothing to do (no plugin call,
    /// no request). Only where every input is watched (no related
    /// resources, no namespace filter).
    pub in_sync: std::sync::Mutex<std::collections::HashMap<ObjectKey, InSync>>,
}

tokio::task_local! {
    /// The (kcp object, copy) resourceVersions the running reconcile wrote.
    static WROTE: std::cell::Cell<(Option<u64>, Option<u64>)>;
}

/// What a reconcile left in sync.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InSync {
    /// The (kcp object, copy) resourceVersions.
    versions: (u64, u64),
    /// When the reconcile wrote (a finalizer, a new copy): the plugins ran
    /// on the objects *before* those writes, not on these versions (a copy
    /// just placed was computed with no copy for `other` to read). Such an
    /// entry answers the echoes of the writes for half a resync period;
    /// the periodic check after that runs the plugins on what was written,
    /// so a mutation that reads the copy is seen, without a second plugin
    /// run per new object in a burst.
    written_at: Option<tokio::time::Instant>,
}

/// The parts of a sync that run plugin code.
pub struct PluginSet {
    pub namer: Arc<dyn Namer>,
    pub mutator: Option<Arc<dyn Mutator>>,
    /// `spec.related`, in order, with their mutations.
    pub related: Vec<super::related::Related>,
    /// Evaluates related-object templates (in the sandbox).
    pub templates: Option<Arc<dyn super::related::Templates>>,
}

/// What the spec step did.
enum Spec {
    /// The copy matches: go on with status and related objects.
    InSync,
    /// The copy was just created: go on with it.
    Created(Box<DynamicObject>),
    /// Stop here and check again (after a write that must be seen to settle).
    Requeue(Outcome),
}

#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// In sync; check again after the resync period.
    Done,
    /// Check again after this long (zero: at once, behind other keys).
    Requeue(Duration),
    /// The object is gone: forget the key (no resync, no timer).
    Gone,
}

#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error("{action} {what}: {source}")]
    Kube {
        action: &'static str,
        what: String,
        #[source]
        source: kube::Error,
    },
    #[error("naming {key}: {0}", key = .1)]
    Naming(String, ObjectKey),
    #[error("mutating {key}: {0}", key = .1)]
    Mutation(String, ObjectKey),
    #[error(
        "found {count} copies of {key} on the service cluster (labels {selector}); delete the extra ones"
    )]
    Ambiguous {
        count: usize,
        key: ObjectKey,
        selector: String,
    },
    #[error(
        "LogicalCluster of workspace {0} has no kcp.io/path annotation, so enableWorkspacePaths cannot name it"
    )]
    NoWorkspacePath(String),
    #[error(
        "workspace {0} is not served by any URL of the APIExportEndpointSlice (yet); \
         retrying until its shard's virtual workspace lists it"
    )]
    NoShard(String),
    #[error(
        "internal error (a bug, please report it): the reconcile panicked: {0}; \
         the object is retried"
    )]
    Panicked(String),
    #[error(transparent)]
    Kcp(#[from] crate::kcp::KcpError),
    #[error("{key}: {0}", key = .1)]
    NotConverging(super::converge::NotConverging, ObjectKey),
    #[error("related resource {0}")]
    Related(Box<super::related::RelatedError>),
    /// An object (from an API server, or built from one and a mutation's
    /// result) that does not convert between its JSON and typed forms.
    #[error("{what} of {key} is not a valid object: {message}")]
    BadObject {
        what: &'static str,
        key: ObjectKey,
        message: String,
    },
}

/// `obj` as JSON (`what` names it in the error).
fn to_json(key: &ObjectKey, what: &'static str, obj: &DynamicObject) -> Result<Value, SyncError> {
    serde_json::to_value(obj).map_err(|e| SyncError::BadObject {
        what,
        key: key.clone(),
        message: e.to_string(),
    })
}

/// `v` as an object to send to an API server.
fn from_json(key: &ObjectKey, what: &'static str, v: Value) -> Result<DynamicObject, SyncError> {
    serde_json::from_value(v).map_err(|e| SyncError::BadObject {
        what,
        key: key.clone(),
        message: e.to_string(),
    })
}

impl From<super::related::RelatedError> for SyncError {
    fn from(e: super::related::RelatedError) -> Self {
        SyncError::Related(Box::new(e))
    }
}

fn kerr(
    action: &'static str,
    what: impl std::fmt::Display,
) -> impl FnOnce(kube::Error) -> SyncError {
    let what = what.to_string();
    move |source| SyncError::Kube {
        action,
        what,
        source,
    }
}

const REQUEUE_SOON: Duration = Duration::from_secs(1);

impl SyncContext {
    /// The plugin-bound parts in use now.
    pub fn plugins(&self) -> Arc<PluginSet> {
        self.plugins
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Swap in parts built from new plugin code and re-check every object
    /// with them; reconciles already running finish with the old ones.
    pub fn swap_plugins(&self, set: PluginSet) {
        *self.plugins.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(set);
        // New code may compute something else: held-back keys may write
        // again, and objects in sync must be checked with it.
        self.convergence.reset();
        self.in_sync
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        self.resync_all.notify_one();
    }

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

    fn local_api(&self, namespace: Option<&str>) -> Api<DynamicObject> {
        match namespace {
            Some(ns) if self.local.namespaced => {
                Api::namespaced_with(self.service.clone(), ns, &self.local.ar)
            }
            _ => Api::all_with(self.service.clone(), &self.local.ar),
        }
    }

    /// Labels that identify the copy of `key` on the service cluster.
    fn identity_labels(&self, key: &ObjectKey) -> BTreeMap<String, String> {
        let mut l = BTreeMap::from([
            (REMOTE_CLUSTER_LABEL.to_string(), key.cluster.clone()),
            (REMOTE_NAME_HASH_LABEL.to_string(), sha1_hex(&key.name)),
        ]);
        if let Some(ns) = &key.namespace {
            l.insert(REMOTE_NAMESPACE_HASH_LABEL.to_string(), sha1_hex(ns));
        }
        l
    }

    fn sync_metadata(
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
    async fn workspace_path(&self, cluster: &str) -> Result<Option<String>, SyncError> {
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
    async fn find_local(&self, key: &ObjectKey) -> Result<Option<DynamicObject>, SyncError> {
        if self.copies.synced() {
            let found = self.copies.get_all(&key.to_string());
            match found.len() {
                0 => {}
                1 => return Ok(Some(DynamicObject::clone(&found[0]))),
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
        // Not in the cache: a new object, or a copy without this agent's
        // label (made by an earlier agent); ask the API. From its watch
        // cache (resourceVersion 0): a quorum LIST by label scans every
        // object of the kind in etcd, once per new object. A copy made a
        // moment ago that this misses makes the create fail with
        // AlreadyExists, which adopts it.
        let selector = self
            .identity_labels(key)
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(",");
        let list = self
            .local_api(None)
            .list(&ListParams::default().labels(&selector).limit(2).match_any())
            .await
            .map_err(kerr("listing", format!("service copies of {key}")))?;
        match list.items.len() {
            0 => Ok(None),
            1 => Ok(list.items.into_iter().next()),
            count => Err(SyncError::Ambiguous {
                count,
                key: key.clone(),
                selector,
            }),
        }
    }

    /// Record an Event about the kcp object `remote` in its workspace, in the
    /// background (events never hold up or fail a sync).
    pub(super) fn emit(
        &self,
        key: &ObjectKey,
        remote: &Value,
        warning: bool,
        reason: &str,
        message: String,
    ) {
        let Ok(obj) = serde_json::from_value::<DynamicObject>(remote.clone()) else {
            return;
        };
        let Ok(client) = self.kcp_client(&key.cluster) else {
            return;
        };
        let event = events::event_for(&obj, &self.agent_name, warning, reason, &message);
        self.recorder.record(client, event);
    }

    /// After a reconcile: remember the outcome for the PublishedResource's
    /// condition and, on failure, tell the consumer with a Warning Event on
    /// their object (as upstream's ReconcilingError).
    pub async fn record_result(&self, key: &ObjectKey, result: &Result<Outcome, SyncError>) {
        match result {
            Ok(_) => {
                if self.failures.succeeded(key) {
                    info!(published_resource = %self.published_resource, %key, "object recovered");
                }
            }
            Err(e) => {
                // Repeats of the same cause are counted (and summarised by
                // the controller every minute), not logged one by one.
                if self.failures.failed(key, e.to_string()) {
                    tracing::warn!(published_resource = %self.published_resource, %key, error = %e, "reconciling failed; retrying with backoff");
                } else {
                    debug!(%key, error = %e, "reconciling failed again");
                }
                if let Some(obj) = self.cache.get(key)
                    && let Ok(v) = serde_json::to_value(&*obj)
                {
                    self.emit(key, &v, true, events::RECONCILING_ERROR, e.to_string());
                }
            }
        }
    }

    pub async fn reconcile(&self, key: &ObjectKey) -> Result<Outcome, SyncError> {
        let before = self.versions(key);
        if let Some(versions) = before
            && let Some(memo) = self
                .in_sync
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(key)
            && memo.versions == versions
            && memo
                .written_at
                .is_none_or(|t| t.elapsed() < self.resync / 2)
        {
            return Ok(Outcome::Done);
        }
        let (result, wrote) = WROTE
            .scope(Default::default(), async {
                let r = self.reconcile_changed(key).await;
                (r, WROTE.with(|w| w.get()))
            })
            .await;
        // What this reconcile left: its own writes, else what it read. Any
        // other version now (someone changed an object meanwhile) is news
        // for the next check, not in sync.
        let left = match (
            wrote.0.or(before.map(|b| b.0)),
            wrote.1.or(before.map(|b| b.1)),
        ) {
            (Some(k), Some(c)) => Some((k, c)),
            _ => None,
        };
        let mut memo = self.in_sync.lock().unwrap_or_else(|e| e.into_inner());
        match (&result, self.versions(key)) {
            (Ok(Outcome::Done), Some(versions)) if Some(versions) == left => {
                let written_at = (before != Some(versions)).then(tokio::time::Instant::now);
                memo.insert(
                    key.clone(),
                    InSync {
                        versions,
                        written_at,
                    },
                );
            }
            _ => {
                memo.remove(key);
            }
        }
        result
    }

    /// The agent wrote `obj` (the kcp object): into the cache, and noted as
    /// this reconcile's own version of it.
    fn kcp_written(&self, obj: DynamicObject) {
        let rv = super::cache::resource_version(&obj);
        let _ = WROTE.try_with(|w| w.set((rv, w.get().1)));
        self.cache.write_through(obj);
    }

    /// The agent wrote the copy `obj`: as [`SyncContext::kcp_written`].
    fn copy_written(&self, obj: DynamicObject) {
        let rv = super::cache::resource_version(&obj);
        let _ = WROTE.try_with(|w| w.set((w.get().0, rv)));
        self.copies.write_through(obj);
    }

    /// The (kcp object, copy) resourceVersions of `key` as the caches hold
    /// them, when the in-sync shortcut applies.
    /// Read from the caches' index, without decoding either object: this
    /// runs twice per reconcile.
    fn versions(&self, key: &ObjectKey) -> Option<(u64, u64)> {
        if !self.plugins().related.is_empty()
            || self.namespace_filter.is_some()
            || !self.copies.synced()
        {
            return None;
        }
        let remote = self.cache.resource_version(key)?;
        let copy = self.copies.resource_version(&key.to_string())?;
        Some((remote, copy))
    }

    async fn reconcile_changed(&self, key: &ObjectKey) -> Result<Outcome, SyncError> {
        // Read from the informer cache: the watch keeps it current, and
        // the agent's own writes are written through.
        let Some(remote) = self.cache.get(key) else {
            debug!(%key, "object is gone from kcp");
            self.convergence.forget(key);
            return Ok(Outcome::Gone);
        };
        let mut remote = DynamicObject::clone(&remote);
        let kcp_api = self.kcp_api(key)?;
        let has_finalizer = remote
            .metadata
            .finalizers
            .as_ref()
            .is_some_and(|f| f.iter().any(|x| x == FINALIZER));

        // Deletion first: an object accepted earlier that no longer matches
        // a filter must still have its copy removed and its finalizer released.
        if remote.metadata.deletion_timestamp.is_some() {
            return self
                .handle_deletion(key, &kcp_api, &remote, has_finalizer)
                .await;
        }
        if let Some(f) = &self.resource_filter {
            let labels = remote.metadata.labels.clone().unwrap_or_default();
            if !f.matches(&labels) {
                debug!(%key, "object does not match spec.filter.resource; skipping");
                return Ok(Outcome::Done);
            }
        }
        if !self.namespace_admitted(key).await? {
            debug!(%key, "object's namespace does not match spec.filter.namespace; skipping");
            return Ok(Outcome::Done);
        }
        let path = self.workspace_path(&key.cluster).await?;
        let origin = Origin {
            cluster: &key.cluster,
            path: path.as_deref(),
        };
        if !has_finalizer {
            let mut finalizers = remote.metadata.finalizers.clone().unwrap_or_default();
            finalizers.push(FINALIZER.to_string());
            let p = json!({"metadata": {"finalizers": finalizers, "resourceVersion": remote.metadata.resource_version}});
            let accepted = kcp_api
                .patch(&key.name, &PatchParams::default(), &Patch::Merge(&p))
                .await
                .map_err(kerr("adding finalizer to", key))?;
            self.kcp_written(accepted.clone());
            info!(%key, "accepted object (finalizer added)");
            if let Ok(v) = serde_json::to_value(&remote) {
                self.emit(
                    key,
                    &v,
                    false,
                    events::OBJECT_ACCEPTED,
                    "object accepted by the sync agent".into(),
                );
            }
            // Go on with the accepted object: a new object becomes a copy in
            // this one reconcile, not one requeue per write.
            remote = accepted;
        }

        let mut local = self.find_local(key).await?;
        if let Some(l) = &local
            && l.metadata.deletion_timestamp.is_some()
        {
            debug!(%key, "service copy is being deleted; leaving it alone");
            return Ok(Outcome::Requeue(REQUEUE_SOON));
        }
        let remote_json = to_json(key, "the kcp object", &remote)?;
        // A spec that does not settle holds back its own writes only: status
        // and related objects still sync, then the key fails (and backs off).
        let mut unsettled = None;
        match self
            .sync_spec(key, &origin, &remote_json, local.as_ref())
            .await
        {
            Ok(Spec::Requeue(outcome)) => return Ok(outcome),
            Ok(Spec::InSync) => {}
            // Just placed: status and related objects follow in this pass.
            Ok(Spec::Created(copy)) => local = Some(*copy),
            Err(e @ SyncError::NotConverging(..)) => unsettled = Some(e),
            Err(e) => return Err(e),
        }
        if let Some(local) = &local
            && self.remote.status_subresource
        {
            self.sync_status(key, &origin, &kcp_api, &remote_json, local)
                .await?;
        }
        // The primary is in sync: now its related objects.
        if let Some(local) = &local
            && !self.plugins().related.is_empty()
        {
            let pair = super::related::PrimaryPair {
                key,
                origin: &origin,
                remote: &remote_json,
                local: &to_json(key, "the service copy", local)?,
            };
            if let Some(outcome) = self.process_related(&pair, false).await? {
                return Ok(outcome);
            }
        }
        match unsettled {
            Some(e) => Err(e),
            None => Ok(Outcome::Done),
        }
    }

    /// Whether `spec.filter.namespace` lets the object through. It fails
    /// closed: when the Namespace cannot be read, the reconcile fails (and is
    /// retried) rather than syncing an object that might be excluded.
    /// Cluster-scoped objects have no namespace to filter on.
    async fn namespace_admitted(&self, key: &ObjectKey) -> Result<bool, SyncError> {
        let (Some(filter), Some(ns)) = (&self.namespace_filter, &key.namespace) else {
            return Ok(true);
        };
        let namespaces = self.namespaces_api(false, &key.cluster)?;
        let err = |source| SyncError::Kube {
            action: "reading the Namespace (for spec.filter.namespace) of",
            what: format!(
                "{key}; the consumer's APIBinding must accept the `namespaces` permission claim"
            ),
            source,
        };
        // A Namespace the cache has not seen yet (its watch event may trail
        // the object's) is read from the API.
        let namespace = match namespaces.get("", ns).await.map_err(err)? {
            Some(n) => n,
            None => namespaces.api("").get(ns).await.map_err(err)?,
        };
        Ok(filter.matches(&namespace.metadata.labels.unwrap_or_default()))
    }

    async fn handle_deletion(
        &self,
        key: &ObjectKey,
        kcp_api: &Api<DynamicObject>,
        remote: &DynamicObject,
        has_finalizer: bool,
    ) -> Result<Outcome, SyncError> {
        if !has_finalizer {
            return Ok(Outcome::Done);
        }
        if let Some(local) = self.find_local(key).await? {
            // Related objects first, in delete mode (while both primaries
            // still exist to resolve them).
            if !self.plugins().related.is_empty() && local.metadata.deletion_timestamp.is_none() {
                let path = self.workspace_path(&key.cluster).await?;
                let origin = Origin {
                    cluster: &key.cluster,
                    path: path.as_deref(),
                };
                let pair = super::related::PrimaryPair {
                    key,
                    origin: &origin,
                    remote: &to_json(key, "the kcp object", remote)?,
                    local: &to_json(key, "the service copy", &local)?,
                };
                if let Some(outcome) = self.process_related(&pair, true).await? {
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

    /// The desired service-side object, and the state to remember for it.
    /// The copy the service cluster should have, and the state to remember
    /// (kcp's view: kcp GVK and name). Mutations see the unstripped kcp
    /// object, and as `other` the existing copy or, before one exists, the
    /// projected copy they would otherwise get (as upstream).
    async fn desired(
        &self,
        key: &ObjectKey,
        origin: &Origin<'_>,
        remote: &Value,
        local: Option<&Value>,
    ) -> Result<(Value, Value), SyncError> {
        let plugins = self.plugins();
        let name = plugins
            .namer
            .name(origin.cluster, origin.path, remote)
            .await
            .map_err(|e| SyncError::Naming(e, key.clone()))?;
        let mut source = remote.clone();
        if let Some(m) = &plugins.mutator {
            let projected;
            let other = match local {
                Some(l) => l,
                None => {
                    projected = self.as_copy(key, origin, self.stripped(remote.clone()), &name)?;
                    &projected
                }
            };
            m.mutate_spec(origin, &mut source, Some(other))
                .await
                .map_err(|e| SyncError::Mutation(e, key.clone()))?;
            if !source.is_object() || !source["metadata"].is_object() {
                return Err(SyncError::Mutation(
                    "the spec mutation returned something that is not an object with metadata"
                        .into(),
                    key.clone(),
                ));
            }
        }
        let state = self.stripped(source);
        let desired = self.as_copy(key, origin, state.clone(), &name)?;
        Ok((desired, state))
    }

    /// `obj` without kcp-only metadata and without the fields of the
    /// subresources the resource has.
    fn stripped(&self, mut obj: Value) -> Value {
        strip_metadata(&mut obj);
        drop_subresources(
            &mut obj,
            self.remote.status_subresource,
            self.remote.scale_subresource,
        );
        obj
    }

    /// `source` under the service cluster's GVK and `name`, with the sync
    /// labels and annotations.
    fn as_copy(
        &self,
        key: &ObjectKey,
        origin: &Origin<'_>,
        mut source: Value,
        name: &LocalName,
    ) -> Result<Value, SyncError> {
        let (labels, annotations) = self.sync_metadata(key, origin.path);
        let Some(obj) = source.as_object_mut() else {
            return Err(SyncError::Mutation(
                "the object is not a JSON object".into(),
                key.clone(),
            ));
        };
        obj.insert("apiVersion".into(), json!(self.local.ar.api_version));
        obj.insert("kind".into(), json!(self.local.ar.kind));
        let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) else {
            return Err(SyncError::Mutation(
                "the object has no metadata".into(),
                key.clone(),
            ));
        };
        meta.insert("name".into(), json!(name.name));
        match name.namespace.clone().filter(|_| self.local.namespaced) {
            Some(ns) => meta.insert("namespace".into(), json!(ns)),
            None => meta.remove("namespace"),
        };
        for (field, entries) in [("labels", labels), ("annotations", annotations)] {
            let Some(m) = meta
                .entry(field)
                .or_insert_with(|| json!({}))
                .as_object_mut()
            else {
                return Err(SyncError::Mutation(
                    format!("metadata.{field} is not a map of strings"),
                    key.clone(),
                ));
            };
            for (k, v) in entries {
                m.insert(k, json!(v));
            }
        }
        Ok(source)
    }

    /// Spec down.
    async fn sync_spec(
        &self,
        key: &ObjectKey,
        origin: &Origin<'_>,
        remote: &Value,
        local: Option<&DynamicObject>,
    ) -> Result<Spec, SyncError> {
        let api_version = self.remote.ar.api_version.as_str();
        let kind = self.remote.ar.kind.as_str();
        let local_json = local
            .map(|l| to_json(key, "the service copy", l))
            .transpose()?;
        let (desired, state) = self
            .desired(key, origin, remote, local_json.as_ref())
            .await?;

        let (Some(local), Some(local_json)) = (local, local_json) else {
            return self.create(key, origin, remote, desired, &state).await;
        };
        let local_ns = local.metadata.namespace.as_deref();
        let local_name = local.metadata.name.clone().unwrap_or_default();
        let local_api = self.local_api(local_ns);
        // The spec's inputs: what a consumer changes on the kcp object (its
        // generation, labels and annotations), not its resourceVersion,
        // which the agent's own status writes move too.
        let inputs = &spec_inputs(remote);
        let guard = |patch: &Value| {
            self.convergence
                .check(key, Phase::Spec, inputs, patch)
                .map_err(|e| SyncError::NotConverging(e, key.clone()))
        };
        let last = self
            .state
            .get(key, api_version, kind)
            .await
            .map_err(kerr("reading sync state of", key))?;

        let written;
        match last {
            Some(last) => {
                let mut p = patch::diff(&without_identity(&last), &without_identity(&state))
                    .unwrap_or_else(|| json!({}));
                // Repair sync metadata someone removed from the copy.
                inject_missing_metadata(&mut p, local, &desired);
                if p.as_object().is_some_and(|m| m.is_empty()) {
                    self.convergence.settled(key, Phase::Spec);
                    return Ok(Spec::InSync);
                }
                guard(&p)?;
                let patched = local_api
                    .patch(&local_name, &PatchParams::default(), &Patch::Merge(&p))
                    .await
                    .map_err(kerr("patching service copy of", key))?;
                self.copy_written(patched);
                written = p;
                info!(%key, local = %local_name, "synced spec change to the service cluster");
                self.emit(
                    key,
                    remote,
                    false,
                    events::OBJECT_SYNCED,
                    format!("synced the change to {local_name} on the service cluster"),
                );
            }
            None => {
                // No usable state: take kcp's content wholesale, merge metadata.
                guard(&state)?;
                let obj = merged_into_copy(key, local_json, &desired)?;
                let updated = local_api
                    .replace(
                        &local_name,
                        &PostParams::default(),
                        &from_json(key, "the updated service copy", obj)?,
                    )
                    .await
                    .map_err(kerr("updating service copy of", key))?;
                self.copy_written(updated);
                written = state.clone();
                info!(%key, local = %local_name, "updated service copy (no previous state)");
                self.emit(
                    key,
                    remote,
                    false,
                    events::OBJECT_SYNCED,
                    format!("synced the object to {local_name} on the service cluster"),
                );
            }
        }
        self.state
            .put(key, api_version, kind, &state)
            .await
            .map_err(kerr("storing sync state of", key))?;
        self.convergence.wrote(key, Phase::Spec, inputs, &written);
        // Check again at once that it settled (a mutation that keeps
        // changing its answer is caught by the convergence guard).
        Ok(Spec::Requeue(Outcome::Requeue(Duration::ZERO)))
    }

    async fn create(
        &self,
        key: &ObjectKey,
        origin: &Origin<'_>,
        remote: &Value,
        desired: Value,
        state: &Value,
    ) -> Result<Spec, SyncError> {
        let ns = desired
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .map(str::to_string);
        let name = desired
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if let Some(ns) = &ns {
            self.ensure_namespace(ns).await?;
        }
        let api = self.local_api(ns.as_deref());
        let obj: DynamicObject = serde_json::from_value(desired.clone()).map_err(|e| {
            SyncError::Mutation(format!("the copy is not a valid object: {e}"), key.clone())
        })?;
        let placed = match api.create(&PostParams::default(), &obj).await {
            Ok(created) => {
                self.copy_written(created.clone());
                info!(%key, local = %name, namespace = ns.as_deref().unwrap_or(""), "placed object on the service cluster");
                self.emit(
                    key,
                    remote,
                    false,
                    events::OBJECT_PLACED,
                    format!(
                        "placed on the service cluster as {}{name}",
                        ns.as_deref().map(|n| format!("{n}/")).unwrap_or_default()
                    ),
                );
                Some(created)
            }
            Err(kube::Error::Api(s)) if s.code == 409 => {
                // Adopt an existing object: take over its identity metadata.
                let mut existing = api
                    .get(&name)
                    .await
                    .map_err(kerr("reading existing copy of", key))?;
                if existing.metadata.deletion_timestamp.is_some() {
                    return Ok(Spec::Requeue(Outcome::Requeue(REQUEUE_SOON)));
                }
                let (labels, annotations) = self.sync_metadata(key, origin.path);
                existing
                    .metadata
                    .labels
                    .get_or_insert_with(Default::default)
                    .extend(labels);
                existing
                    .metadata
                    .annotations
                    .get_or_insert_with(Default::default)
                    .extend(annotations);
                let adopted = api
                    .replace(&name, &PostParams::default(), &existing)
                    .await
                    .map_err(kerr("adopting existing copy of", key))?;
                self.copy_written(adopted);
                info!(%key, local = %name, "adopted existing object on the service cluster");
                // Adopted content is brought in line by a patch next pass.
                None
            }
            Err(e) => {
                // The namespace may have been deleted since it was created.
                if let (kube::Error::Api(s), Some(ns)) = (&e, &ns)
                    && s.code == 404
                {
                    self.namespaces
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .remove(ns);
                }
                return Err(kerr("creating service copy of", key)(e));
            }
        };
        let api_version = self.remote.ar.api_version.as_str();
        let kind = self.remote.ar.kind.as_str();
        self.state
            .put(key, api_version, kind, state)
            .await
            .map_err(kerr("storing sync state of", key))?;
        Ok(match placed {
            Some(copy) => Spec::Created(Box::new(copy)),
            None => Spec::Requeue(Outcome::Requeue(Duration::ZERO)),
        })
    }

    async fn ensure_namespace(&self, ns: &str) -> Result<(), SyncError> {
        if self
            .namespaces
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(ns)
        {
            return Ok(());
        }
        crate::namespace::ensure(&self.service, ns)
            .await
            .map_err(|e| kerr(e.action, ns)(e.source))?;
        self.namespaces
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(ns.to_string());
        Ok(())
    }

    /// Status up: replace the kcp object's status with the copy's.
    async fn sync_status(
        &self,
        key: &ObjectKey,
        origin: &Origin<'_>,
        kcp_api: &Api<DynamicObject>,
        remote: &Value,
        local: &DynamicObject,
    ) -> Result<(), SyncError> {
        let mut local_json = to_json(key, "the service copy", local)?;
        if let Some(m) = &self.plugins().mutator {
            m.mutate_status(origin, &mut local_json, Some(remote))
                .await
                .map_err(|e| SyncError::Mutation(e, key.clone()))?;
        }
        let status = local_json.get("status").cloned().unwrap_or(Value::Null);
        let current = remote.get("status").cloned().unwrap_or(Value::Null);
        if patch::json_eq(&status, &current) {
            self.convergence.settled(key, Phase::Status);
            return Ok(());
        }
        // The status's inputs: the copy, and the kcp object's spec (a
        // status mutation may read it), not the kcp object's own
        // resourceVersion, which each status write changes.
        let inputs = format!(
            "{}/{}",
            local
                .metadata
                .resource_version
                .as_deref()
                .unwrap_or_default(),
            remote
                .pointer("/metadata/generation")
                .and_then(Value::as_i64)
                .unwrap_or_default()
        );
        let status_patch = json!({ "status": status.clone() });
        self.convergence
            .check(key, Phase::Status, &inputs, &status_patch)
            .map_err(|e| SyncError::NotConverging(e, key.clone()))?;
        // A status cleared on the service side is cleared in kcp too.
        let mut updated = remote.clone();
        match updated.as_object_mut() {
            Some(o) if status.is_null() => {
                o.remove("status");
            }
            Some(o) => {
                o.insert("status".into(), status);
            }
            None => {}
        }
        let written = kcp_api
            .replace_status(
                &key.name,
                &PostParams::default(),
                &from_json(key, "the kcp object with the copy's status", updated)?,
            )
            .await
            .map_err(kerr("updating status in kcp of", key))?;
        self.kcp_written(written);
        self.convergence
            .wrote(key, Phase::Status, &inputs, &status_patch);
        info!(%key, "synced status to kcp");
        self.emit(
            key,
            remote,
            false,
            events::OBJECT_STATUS_SYNCED,
            "status synced from the service cluster".into(),
        );
        Ok(())
    }
}

/// A version of what a spec sync is computed from: the kcp object's
/// generation (spec changes), labels and annotations.
fn spec_inputs(remote: &Value) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    remote["metadata"]["labels"].to_string().hash(&mut h);
    remote["metadata"]["annotations"].to_string().hash(&mut h);
    format!(
        "{}/{:x}",
        remote["metadata"]["generation"]
            .as_i64()
            .unwrap_or_default(),
        h.finish()
    )
}

/// apiVersion/kind/name/namespace differ between kcp and service sides by
/// design; they are never part of a patch.
pub(super) fn without_identity(v: &Value) -> Value {
    let mut v = v.clone();
    if let Some(m) = v.as_object_mut() {
        m.remove("apiVersion");
        m.remove("kind");
    }
    if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("name");
        meta.remove("namespace");
    }
    v
}

/// The existing copy (`local`, as JSON) with every field of `desired` but
/// its identity, status and scale, and `desired`'s labels and annotations
/// added to its own.
fn merged_into_copy(
    key: &ObjectKey,
    mut local: Value,
    desired: &Value,
) -> Result<Value, SyncError> {
    let bad = |message: &str| SyncError::BadObject {
        what: "the service copy",
        key: key.clone(),
        message: message.into(),
    };
    let (Some(obj), Some(want)) = (local.as_object_mut(), desired.as_object()) else {
        return Err(bad("not a JSON object"));
    };
    for (k, v) in want {
        if !matches!(
            k.as_str(),
            "apiVersion" | "kind" | "metadata" | "status" | "scale"
        ) {
            obj.insert(k.clone(), v.clone());
        }
    }
    for field in ["labels", "annotations"] {
        let Some(m) = desired["metadata"][field].as_object() else {
            continue;
        };
        let target = obj
            .entry("metadata")
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .ok_or_else(|| bad("metadata is not an object"))?
            .entry(field)
            .or_insert_with(|| json!({}));
        if target.is_null() {
            *target = json!({});
        }
        let target = target
            .as_object_mut()
            .ok_or_else(|| bad(&format!("metadata.{field} is not a map")))?;
        for (k, v) in m {
            target.insert(k.clone(), v.clone());
        }
    }
    Ok(local)
}

/// Add to `patch` the sync labels and annotations of `desired` that the
/// copy lacks. A patch that is not an object (it always is: see
/// `patch::diff` of two objects) is left alone.
fn inject_missing_metadata(patch: &mut Value, local: &DynamicObject, desired: &Value) {
    let have_l = local.metadata.labels.clone().unwrap_or_default();
    let have_a = local.metadata.annotations.clone().unwrap_or_default();
    for (field, have) in [("labels", have_l), ("annotations", have_a)] {
        let Some(want) = desired["metadata"][field].as_object() else {
            continue;
        };
        for (k, v) in want {
            let is_sync_key = k.starts_with("syncagent.kcp.io/");
            if is_sync_key && have.get(k).map(|s| json!(s)) != Some(v.clone()) {
                let Some(obj) = patch.as_object_mut() else {
                    return;
                };
                let meta = obj.entry("metadata").or_insert_with(|| json!({}));
                if !meta.is_object() {
                    *meta = json!({});
                }
                let Some(m) = meta.as_object_mut() else {
                    return;
                };
                let m = m.entry(field).or_insert_with(|| json!({}));
                if !m.is_object() {
                    *m = json!({});
                }
                if let Some(m) = m.as_object_mut() {
                    m.insert(k.clone(), v.clone());
                }
            }
        }
    }
}
