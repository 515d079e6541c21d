//! The sync of one PublishedResource as a whole ([`SyncContext`]: its two
//! sides, clients, caches, plugins, state and reporting) and one reconcile
//! of one object ([`Pass`]: what its phases share). The phases are
//! functions over a [`Pass`], each in its own module, called in order by
//! [`super::reconcile`].

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject};
use serde_json::Value;
use tracing::{debug, info};

use super::caches::RelatedCaches;
use super::error::SyncError;
use super::events::{self, Failures};
use super::ports::{Origin, PluginSet};
use super::state::StateStore;
use crate::apis::selector::Selector;
use crate::controller::runner::Outcome;
use crate::controller::store::ObjectKey;
use crate::kcp::KcpContext;

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
    pub cache: Arc<crate::controller::store::KcpCache>,
    /// The service-side copies made by this agent, by the kcp object they
    /// belong to.
    pub copies: Arc<crate::controller::store::Store<DynamicObject>>,
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
    /// The finalizer on kcp-origin related objects
    /// (`spec.lifecycle.relatedFinalizer`).
    pub related_finalizer: String,
    /// This agent's related finalizer under the other policy, when it is
    /// its own alone ([`super::labels::former_related_finalizer`]): moved to
    /// `related_finalizer` on sight, released with it.
    pub former_related_finalizer: Option<String>,
    /// `spec.lifecycle.waitForOtherFinalizers.timeout`, when set.
    pub finalizer_wait: Option<std::time::Duration>,
    /// kcp objects whose copy waits for other finalizers (for the Events
    /// and the PublishedResource's condition); `Some` with `finalizer_wait`.
    pub finalizer_waits: Option<Arc<super::finalizer_wait::FinalizerWaits>>,
    /// `spec.lifecycle.workspaceDeletion`.
    pub workspace_deletion: Option<crate::apis::WorkspaceDeletion>,
    /// `spec.managedNamespaceMetadata`.
    pub namespace_metadata: Option<super::namespace_meta::NamespaceMetadata>,
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
    /// Related objects on both sides, by kind (and the kinds `spec.reads`
    /// allows plugins to read).
    pub related_caches: RelatedCaches,
    /// `spec.reads` (what plugins may read; maybe nothing).
    pub reads: Arc<super::reads::ReadsConfig>,
    /// Which objects' last pass read what (re-synced when it changes).
    pub read_deps: super::reads::ReadDeps,
    /// Objects whose plugins reported warnings, for the condition.
    pub plugin_reports: Arc<super::plugin_reports::PluginReports>,
    /// Writes per key and input version, to stop a sync that does not settle.
    pub convergence: super::converge::Convergence,
    /// Events about kcp objects, de-duplicated and posted by one task.
    pub recorder: Arc<events::Recorder>,
    /// How often an object in sync is checked again (`--resync-period`).
    pub resync: Duration,
    /// Objects reconciled at a time (`--sync-workers`).
    pub workers: usize,
    /// Watch events go ahead of the initial list and resyncs
    /// (`--sync-priority`; off only to measure what it costs).
    pub priority: bool,
    /// Per key, the (kcp, copy) resourceVersions a reconcile left in sync:
    /// a check that finds both unchanged has nothing to do (no plugin call,
    /// no request). Only where every input is watched (no related
    /// resources, no namespace filter).
    pub in_sync: std::sync::Mutex<std::collections::HashMap<ObjectKey, InSync>>,
}

/// One reconcile of one kcp object: what its phases share. The plugins
/// are the set in use when the pass started, so a swap to new code never
/// mixes old and new within one pass.
pub struct Pass<'a> {
    pub sync: &'a SyncContext,
    pub plugins: Arc<PluginSet>,
    pub key: &'a ObjectKey,
    /// The object's workspace (and path), identity and labels.
    pub origin: Origin<'a>,
    /// The kcp object in its workspace, through its shard's virtual
    /// workspace.
    pub kcp_api: Api<DynamicObject>,
    /// The kcp object, as JSON (made once for every phase and plugin call).
    pub object: &'a Value,
    /// What the plugin calls of this pass reported (contract 0.2), for
    /// Events and the `PluginWarnings` condition once the pass is over.
    pub reported: std::sync::Mutex<super::ports::Reports>,
}

impl Pass<'_> {
    /// Keep what a phase's plugin calls reported.
    pub(super) fn reported(&self, reports: super::ports::Reports) {
        if !reports.is_empty() {
            self.reported
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .extend(reports);
        }
    }
}

/// A pass reads the sync's shared state (sides, clients, caches, state,
/// reporting) through it, and adds what is per object.
impl std::ops::Deref for Pass<'_> {
    type Target = SyncContext;
    fn deref(&self) -> &SyncContext {
        self.sync
    }
}

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
}

tokio::task_local! {
    /// The (kcp object, copy) resourceVersions the running reconcile wrote.
    pub(super) static WROTE: std::cell::Cell<(Option<u64>, Option<u64>)>;
}

/// What a reconcile left in sync.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InSync {
    /// The (kcp object, copy) resourceVersions.
    pub(super) versions: (u64, u64),
    /// When the reconcile wrote (a finalizer, a new copy): the plugins ran
    /// on the objects *before* those writes, not on these versions (a copy
    /// just placed was computed with no copy for `other` to read). Such an
    /// entry answers the echoes of the writes for half a resync period;
    /// the periodic check after that runs the plugins on what was written,
    /// so a mutation that reads the copy is seen, without a second plugin
    /// run per new object in a burst.
    pub(super) written_at: Option<tokio::time::Instant>,
}

impl SyncContext {
    /// The agent wrote `obj` (the kcp object): into the cache, and noted as
    /// this reconcile's own version of it.
    pub(super) fn kcp_written(&self, obj: DynamicObject) {
        let rv = crate::controller::pack::resource_version(&obj);
        let _ = WROTE.try_with(|w| w.set((rv, w.get().1)));
        self.cache.write_through(obj);
    }

    /// The agent wrote the copy `obj`: as [`SyncContext::kcp_written`].
    pub(super) fn copy_written(&self, obj: DynamicObject) {
        let rv = crate::controller::pack::resource_version(&obj);
        let _ = WROTE.try_with(|w| w.set((w.get().0, rv)));
        self.copies.write_through(obj);
    }

    /// The (kcp object, copy) resourceVersions of `key` as the caches hold
    /// them, when the in-sync shortcut applies.
    /// Read from the caches' index, without decoding either object: this
    /// runs twice per reconcile.
    pub(super) fn versions(&self, key: &ObjectKey) -> Option<(u64, u64)> {
        if !self.plugins().related.is_empty()
            || self.namespace_filter.is_some()
            || self.namespace_metadata.is_some()
            || !self.copies.synced()
        {
            return None;
        }
        let remote = self.cache.resource_version(key)?;
        let copy = self.copies.resource_version(&key.to_string())?;
        Some((remote, copy))
    }
}
