//! Reconciling one kcp object with its copy on the service cluster.
//!
//! kcp is the source of truth for everything but `status`, which flows up.
//! One pass ([`SyncContext::reconcile`]) runs the phases in order, each in
//! its own module:
//! 1. [`deletion`]: delete the copy, wait for it to go, release the finalizer;
//! 2. finalizer: make sure the kcp object carries ours before any copy
//!    exists (here, in the pass);
//! 3. [`spec`] down: create, adopt or three-way-patch the copy;
//! 4. [`status`] up: replace the kcp object's status with the copy's;
//! 5. related objects ([`super::related`]), once the primary is in sync
//!    (and, in delete mode, first thing on deletion).
//!
//! A new object goes through all of them in one pass. [`locate`] finds the
//! clients and the copy; the [`memo`] skips a pass whose inputs did not
//! change since it was last in sync.
mod deletion;
mod locate;
mod memo;
mod spec;
mod status;

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
use crate::plugin_controller::{Labels, Subject};
use crate::selector::{Selector, SelectorExt};
use memo::{InSync, WROTE};
pub(in crate::sync) use spec::without_identity;

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
/// `enableWorkspacePaths`, its workspace path; and the object itself
/// (identity and labels), by which a WasmPlugin in a staged rollout picks
/// the digest for every call made for it (its status and related objects
/// included).
#[derive(Debug, Clone, Copy)]
pub struct Origin<'a> {
    pub cluster: &'a str,
    pub path: Option<&'a str>,
    pub subject: Subject<'a>,
}

impl<'a> Origin<'a> {
    /// The origin of the kcp object `remote` with key `key`.
    pub(crate) fn of(key: &'a ObjectKey, path: Option<&'a str>, remote: &'a DynamicObject) -> Self {
        Origin {
            cluster: &key.cluster,
            path,
            subject: Subject {
                cluster: &key.cluster,
                namespace: key.namespace.as_deref(),
                name: &key.name,
                labels: remote
                    .metadata
                    .labels
                    .as_ref()
                    .map_or(Labels::None, Labels::Map),
            },
        }
    }
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

pub use crate::runner::Outcome;

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
        "{key} is too large to sync: its last-synced state takes {bytes} bytes, and the \
         Secret that keeps it may hold at most 1 MiB. Nothing was written to the service \
         cluster; make the object smaller (keep bulk data out of it, e.g. in related \
         ConfigMaps or Secrets)"
    )]
    StateTooLarge { key: ObjectKey, bytes: usize },
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
        let Some(url) = self.cache.route(&key.cluster) else {
            return;
        };
        let Ok(client) = self.kcp.vw_event_client(&url, &key.cluster) else {
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

    async fn reconcile_changed(&self, key: &ObjectKey) -> Result<Outcome, SyncError> {
        // Read from the informer cache: the watch keeps it current, and
        // the agent's own writes are written through.
        let Some(remote) = self.cache.get(key) else {
            debug!(%key, "object is gone from kcp");
            self.convergence.forget(key);
            return Ok(Outcome::Gone);
        };
        let mut remote = remote;
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
            if let Ok(v) = serde_json::to_value(&*remote) {
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
            remote = Arc::new(accepted);
        }
        let origin = Origin::of(key, path.as_deref(), &remote);

        let mut local = self.find_local(key).await?;
        if let Some(l) = &local
            && l.metadata.deletion_timestamp.is_some()
        {
            debug!(%key, "service copy is being deleted; leaving it alone");
            return Ok(Outcome::Requeue(REQUEUE_SOON));
        }
        // Each object's JSON form, made once for every phase (and every
        // plugin call) of this pass.
        let remote_json = to_json(key, "the kcp object", &remote)?;
        let mut local_json = local
            .as_deref()
            .map(|l| to_json(key, "the service copy", l))
            .transpose()?;
        // A spec that does not settle holds back its own writes only: status
        // and related objects still sync, then the key fails (and backs off).
        let mut unsettled = None;
        match self
            .sync_spec(
                key,
                &origin,
                &remote_json,
                local.as_deref().zip(local_json.as_ref()),
            )
            .await
        {
            Ok(Spec::Requeue(outcome)) => return Ok(outcome),
            Ok(Spec::InSync) => {}
            // Just placed: status and related objects follow in this pass.
            Ok(Spec::Created(copy)) => {
                local_json = Some(to_json(key, "the service copy", &copy)?);
                local = Some(Arc::new(*copy));
            }
            Err(e @ SyncError::NotConverging(..)) => unsettled = Some(e),
            Err(e) => return Err(e),
        }
        if let (Some(local), Some(local_json)) = (&local, &local_json)
            && self.remote.status_subresource
        {
            self.sync_status(key, &origin, &kcp_api, &remote_json, local, local_json)
                .await?;
        }
        // The primary is in sync: now its related objects.
        if let Some(local_json) = &local_json
            && !self.plugins().related.is_empty()
        {
            let pair = super::related::PrimaryPair {
                key,
                origin: &origin,
                remote: &remote_json,
                local: local_json,
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
}
