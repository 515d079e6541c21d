//! Publishing: turns PublishedResources on the service cluster into
//! APIResourceSchemas in the APIExport, and runs one sync controller per
//! published resource once kcp serves it.
//!
//! A controller on the agent's runner ([`crate::controller::runner`]), with two kinds of
//! key ([`Key`]):
//!
//! - **a PublishedResource** ([`resource`]): resolve its CRD and projection
//!   into a schema (remembered until one of its inputs changes), claim its
//!   group/resource (the oldest resource wins a conflict), create the
//!   APIResourceSchema, then start, swap or stop its sync controller and set
//!   its condition;
//! - **the APIExport** ([`apiexport`]): list the claimed schemas and the
//!   permission claims they need, written only when they differ.
//!
//! What enqueues which key: a PublishedResource's own watch events; a CRD's
//! events only the resources that select it; the endpoint slice gaining URLs
//! and WasmPlugins moving to new code every resource; a running sync's
//! failing objects its own resource (paced, so a burst of failures is one
//! status write); a resource's contribution to the export changing the
//! export, and a written export the resources waiting for it. Nothing is
//! re-listed and nothing runs on a timer except a resource waiting for kcp
//! to serve it.
//!
//! The three upstream controllers (apiresourceschema, apiexport, sync) can
//! each be disabled with `--disabled-controllers`.

pub mod apiexport;
mod condition;
pub mod error;
pub mod openapi;
mod resource;
pub mod schema;
mod sync_start;

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures::future::BoxFuture;
use kube::Client;
use kube::api::{Api, DynamicObject};
use kube::runtime::events::Recorder;
use kube::runtime::reflector::{self, ObjectRef};
use kube::runtime::watcher;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use crate::apis::PublishedResource;
use crate::apis::kcp as kcpapi;
use crate::controller::Controller;
use crate::controller::feed::Feed;
use crate::controller::queue::WorkQueue;
use crate::controller::runner::Outcome;
use crate::kcp::KcpContext;
use crate::kube::health::Health;
use crate::plugin::chain::PluginHost;
use crate::sync::context::SyncContext;
use crate::sync::state::StateStore;

/// The shortest time between two reconciles of a resource woken by its
/// failing objects: conditions follow within a second, without a status
/// write per failure.
const PACE: Duration = Duration::from_secs(1);
/// While a shard's virtual workspace does not serve a published resource
/// yet, the longest wait before looking again: kcp gets there within
/// seconds of a binding, which no event the agent watches tells. (A slice
/// without URLs is not polled: its watch tells when a workspace binds.)
const SERVE_POLL_MAX: Duration = Duration::from_secs(5);
/// Retries of a failing key (a CRD that is missing, kcp refusing a
/// schema): jittered, doubling from the first to the last.
const RETRY_FIRST: Duration = Duration::from_millis(500);
const RETRY_MAX: Duration = Duration::from_secs(60);

pub struct PublishConfig {
    pub agent_name: String,
    pub namespace: String,
    pub selector: String,
    pub disabled: Vec<String>,
    /// How often synced objects are checked again (`--resync-period`).
    pub resync: Duration,
    /// Objects of one PublishedResource reconciled at a time
    /// (`--sync-workers`).
    pub workers: usize,
    /// Watch events ahead of the initial list (`--sync-priority`, hidden).
    pub priority: bool,
}

/// What the publisher reconciles.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Key {
    /// A PublishedResource, by name (they are cluster-scoped).
    Resource(String),
    /// The agent's APIExport.
    Export,
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Key::Resource(name) => write!(f, "publishedresource/{name}"),
            Key::Export => write!(f, "apiexport"),
        }
    }
}

/// A reconcile that could not finish; its key is retried with backoff.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    /// Said on the resource's condition already.
    #[error("{0}")]
    Resource(String),
    #[error(transparent)]
    Export(#[from] apiexport::ExportError),
    #[error("updating the status of PublishedResource {name}: {source}")]
    Status {
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("internal error (a bug, please report it): publishing panicked: {0}")]
    Panicked(String),
}

/// A running sync controller.
struct Running {
    /// What it was built from (PR uid, generation, schema).
    fingerprint: String,
    /// The WasmPlugin digests its plugin set was built from.
    plugin_versions: String,
    /// The group/resource it syncs (for conflicts).
    group_resource: String,
    cancel: CancellationToken,
    ctx: Arc<SyncContext>,
}

/// What a resource's schema step resolved, with the inputs it came from
/// ([`resource::schema_inputs`]): reconciles woken by anything else (its
/// own status writes, failing objects, other resources' changes) reuse it,
/// with no CRD read, projection plugin call or schema request.
struct Memo {
    inputs: Option<String>,
    resolved: Arc<schema::Resolved>,
    /// Its APIResourceSchema exists and the status names it.
    published: bool,
}

/// What a resource that holds its group/resource puts into the APIExport.
#[derive(Clone)]
struct Contribution {
    /// group/resource → schema name.
    group_resource: String,
    schema_name: String,
    /// The resource (its related resources and filters need claims).
    pr: Arc<PublishedResource>,
}

impl Contribution {
    fn same_as(&self, other: &Contribution) -> bool {
        self.schema_name == other.schema_name
            && self.pr.metadata.uid == other.pr.metadata.uid
            && self.pr.metadata.generation == other.pr.metadata.generation
    }
}

/// The publisher's bookkeeping across keys. Held only between requests,
/// never across one.
#[derive(Default)]
struct Book {
    memos: HashMap<String, Memo>,
    /// Resources whose schema step failed (they claim nothing until fixed).
    unresolvable: std::collections::HashSet<String>,
    contributions: BTreeMap<String, Contribution>,
    running: HashMap<String, Running>,
    /// Times each resource looked for kcp to serve it, in a row.
    serve_attempts: HashMap<String, u32>,
    /// The schemas the APIExport lists, as its reconcile last saw or wrote
    /// them: a resource starts syncing once its schema is among them.
    export_schemas: Option<std::collections::BTreeSet<String>>,
}

pub struct Publisher {
    cfg: PublishConfig,
    kcp: KcpContext,
    service: Client,
    plugins: PluginHost,
    /// PublishedResource events on the service cluster.
    events: Recorder,
    health: Arc<Health>,
    /// The PublishedResources, as the watch last saw them.
    prs: reflector::Store<PublishedResource>,
    /// Which CRDs the service cluster has.
    crds: Arc<schema::CrdIndex>,
    /// The state Secrets, one cache for every sync of this agent.
    state: StateStore,
    /// Consumers' Events in kcp, one recorder for every sync of this agent
    /// (its repeat window and backlog bound the agent, not each resource).
    kcp_events: Arc<crate::sync::events::Recorder>,
    queue: Arc<WorkQueue<Key>>,
    book: Mutex<Book>,
}

/// The PublishedResource watch's writer, until [`Publisher::run`] starts it.
pub struct PublisherParts {
    pr_writer: reflector::store::Writer<PublishedResource>,
}

impl Publisher {
    pub fn new(
        cfg: PublishConfig,
        kcp: KcpContext,
        service: Client,
        plugins: PluginHost,
        health: Arc<Health>,
        events: Recorder,
    ) -> (Arc<Self>, PublisherParts) {
        let state = StateStore::new(service.clone(), &cfg.namespace);
        let (prs, pr_writer) = reflector::store();
        let publisher = Publisher {
            health,
            events,
            cfg,
            kcp,
            service,
            plugins,
            prs,
            crds: Default::default(),
            state,
            kcp_events: Default::default(),
            queue: WorkQueue::new(RETRY_FIRST, RETRY_MAX),
            book: Mutex::default(),
        };
        (Arc::new(publisher), PublisherParts { pr_writer })
    }

    fn enabled(&self, controller: &str) -> bool {
        !self.cfg.disabled.iter().any(|d| d == controller)
    }

    fn book(&self) -> MutexGuard<'_, Book> {
        self.book.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The PublishedResource `name`, unless it is gone or being deleted.
    fn published_resource(&self, name: &str) -> Option<Arc<PublishedResource>> {
        self.prs
            .get(&ObjectRef::new(name))
            .filter(|pr| pr.metadata.deletion_timestamp.is_none())
    }

    /// Enqueue every PublishedResource `which` picks.
    fn enqueue_where(&self, which: impl Fn(&PublishedResource) -> bool) {
        for pr in self.prs.state() {
            if which(&pr)
                && let Some(name) = &pr.metadata.name
            {
                self.queue.add(Key::Resource(name.clone()));
            }
        }
    }

    /// Enqueue the resources without a running sync (waiting for the
    /// export, the slice or kcp).
    fn enqueue_not_running(&self) {
        let running: Vec<String> = self.book().running.keys().cloned().collect();
        self.enqueue_where(|pr| {
            pr.metadata
                .name
                .as_ref()
                .is_some_and(|n| !running.contains(n))
        });
    }

    /// Run until cancelled.
    pub async fn run(self: Arc<Self>, parts: PublisherParts, cancel: CancellationToken) {
        // PublishedResources: any change (its status too: a condition
        // someone else changed is put back) enqueues the resource; a
        // deleted one is reconciled once more to stop its sync.
        let prs = {
            let this = self.clone();
            let api: Api<PublishedResource> = Api::all(self.service.clone());
            let cfg = watcher::Config::default().labels(&self.cfg.selector);
            let stream = reflector::reflector(parts.pr_writer, watcher(api, cfg));
            let mut feed = Feed::new(
                |pr: &PublishedResource| pr.metadata.name.clone().map(Key::Resource),
                |pr| {
                    use std::hash::{Hash, Hasher};
                    let mut h = std::collections::hash_map::DefaultHasher::new();
                    (&pr.metadata.uid, &pr.metadata.resource_version).hash(&mut h);
                    h.finish()
                },
            );
            // The reflector owns its store's writer, which cannot be made
            // twice: the watch runs once, for the life of the publisher (it
            // re-lists and retries by itself).
            async move {
                crate::controller::watch::drive_reported(
                    stream,
                    "PublishedResources",
                    |_| None,
                    |ev| {
                        feed.on_event(&ev, &this.queue);
                        crate::ops::metrics::METRICS
                            .published_resources
                            .set(this.prs.state().len() as i64);
                        // After each (re-)list, behind the resources it
                        // enqueued: the export is checked once (its
                        // annotation; readiness follows the first check).
                        if matches!(ev, watcher::Event::InitDone) {
                            this.queue.add(Key::Export);
                        }
                    },
                )
                .await
            }
        };
        let this = self.clone();
        // One worker: publishing is a few requests per change, and in order
        // it resolves the resources present at start-up oldest first.
        Controller::new(self.clone(), self.queue.clone(), cancel)
            .feed_once(prs)
            // CRDs: a change enqueues only the resources that select it;
            // after a (re-)list, every resource (any CRD may have changed
            // meanwhile).
            .feed("crd-watch", {
                let this = self.clone();
                let api: Api<DynamicObject> = Api::all_with(self.service.clone(), &kcpapi::crd());
                move |_| feed_crd_index(api.clone(), this.clone())
            })
            // The recorder owns its queue's receiver: it runs once, for the
            // life of the publisher (it has no fallible step to supervise).
            .feed_once(self.kcp_events.clone().run())
            .feed("state-watch", {
                let state = self.state.clone();
                move |_| feed_state_cache(state.clone())
            })
            // The slice gains its URLs when the first workspace binds the
            // export: resources waiting for it start at once. The agent's
            // one watch of the slice (KcpContext::watch_endpoints)
            // publishes them.
            .feed_once({
                let this = self.clone();
                let mut endpoints = self.kcp.endpoints();
                async move {
                    while endpoints.changed().await.is_ok() {
                        this.enqueue_not_running();
                    }
                }
            })
            // A WasmPlugin that turns Ready or moves to a new digest: syncs
            // that use it swap in the new code (see resource::manage_sync).
            .feed_once({
                let this = self.clone();
                let mut plugin_changes = self.plugins.registry().subscribe();
                async move {
                    while plugin_changes.changed().await.is_ok() {
                        this.enqueue_where(|_| true);
                    }
                }
            })
            .on_stop(move || {
                for (_, r) in this.book().running.drain() {
                    r.cancel.cancel();
                }
            })
            .run()
            .await;
    }

    /// Stop `name`'s sync controller, if one runs.
    fn stop_sync(&self, name: &str, why: &str) {
        if let Some(r) = self.book().running.remove(name) {
            info!(published_resource = %name, why, "stopping sync controller");
            r.cancel.cancel();
            crate::ops::metrics::METRICS.forget_published_resource(name);
        }
    }

    /// Set what `name` contributes to the export (`None`: nothing), and
    /// enqueue the export when that changed.
    fn contribute(&self, name: &str, contribution: Option<Contribution>) {
        let mut book = self.book();
        let changed = match (&contribution, book.contributions.get(name)) {
            (Some(new), Some(old)) => !new.same_as(old),
            (None, None) => false,
            _ => true,
        };
        match contribution {
            Some(c) => book.contributions.insert(name.to_string(), c),
            None => book.contributions.remove(name),
        };
        drop(book);
        if changed {
            self.queue.add(Key::Export);
        }
    }

    /// Forget everything of a resource that is gone: its sync, its
    /// contribution and its memo; resources refused because it held their
    /// group/resource may take it now.
    fn forget(&self, name: &str) {
        self.stop_sync(name, "the PublishedResource is gone");
        self.contribute(name, None);
        let released = {
            let mut book = self.book();
            book.unresolvable.remove(name);
            book.serve_attempts.remove(name);
            book.memos
                .remove(name)
                .and_then(|m| schema::group_resource_of(&m.resolved.schema_name).map(str::to_owned))
        };
        if let Some(gr) = released {
            self.enqueue_holders_of(&gr, name);
        }
    }

    /// Enqueue the resources (but `except`) whose schema publishes `gr`.
    fn enqueue_holders_of(&self, gr: &str, except: &str) {
        let names: Vec<String> = self
            .book()
            .memos
            .iter()
            .filter(|(n, m)| {
                n.as_str() != except
                    && schema::group_resource_of(&m.resolved.schema_name) == Some(gr)
            })
            .map(|(n, _)| n.clone())
            .collect();
        for n in names {
            self.queue.add(Key::Resource(n));
        }
    }
}

impl Publisher {
    /// The APIExport lists the schema of every resource that holds its
    /// group/resource, and claims what they need. It is read (one GET) only
    /// when a contribution changed, and written only when it differs.
    async fn reconcile_export(&self) -> Result<Outcome, PublishError> {
        if !self.enabled("apiexport") {
            return Ok(Outcome::Done);
        }
        let (schemas, prs): (BTreeMap<String, String>, Vec<Arc<PublishedResource>>) = {
            let book = self.book();
            (
                book.contributions
                    .values()
                    .map(|c| (c.group_resource.clone(), c.schema_name.clone()))
                    .collect(),
                book.contributions.values().map(|c| c.pr.clone()).collect(),
            )
        };
        let prs: Vec<&PublishedResource> = prs.iter().map(|p| &**p).collect();
        let claims = apiexport::permission_claims(&prs, &schemas);
        let listed = apiexport::reconcile(
            &self.kcp.export_client,
            &self.kcp.export_name,
            &self.cfg.agent_name,
            &schemas,
            &claims,
        )
        .await?;
        let listed: std::collections::BTreeSet<String> = listed.into_iter().collect();
        let changed = {
            let mut book = self.book();
            let changed = book.export_schemas.as_ref() != Some(&listed);
            book.export_schemas = Some(listed);
            changed
        };
        // Resources waiting for their schema to be listed can start (or
        // restart on a new schema).
        if changed {
            self.enqueue_where(|_| true);
        }
        Ok(Outcome::Done)
    }
}

impl crate::controller::runner::Reconcile for Publisher {
    type Key = Key;
    type Error = PublishError;
    const TASK: &'static str = "publish-worker";

    fn name(&self) -> &str {
        "publishing"
    }

    fn reconcile<'a>(&'a self, key: &'a Key) -> BoxFuture<'a, Result<Outcome, PublishError>> {
        Box::pin(async move {
            match key {
                Key::Resource(name) => self.reconcile_resource(name).await,
                Key::Export => self.reconcile_export().await,
            }
        })
    }

    fn panicked(&self, message: String) -> PublishError {
        PublishError::Panicked(message)
    }

    fn record<'a>(
        &'a self,
        key: &'a Key,
        result: &'a Result<Outcome, PublishError>,
        _took: Duration,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            match (key, result) {
                (Key::Export, Ok(_)) => self.health.ok(crate::kube::health::CHECK_SYNC),
                (Key::Export, Err(e)) => {
                    warn!(error = %e, "publishing the APIExport failed; retrying");
                    self.health
                        .fail(crate::kube::health::CHECK_SYNC, format!("publishing: {e}"));
                }
                (Key::Resource(name), Err(e)) => {
                    debug!(published_resource = %name, error = %e, "publishing will be retried");
                }
                (Key::Resource(_), Ok(_)) => {}
            }
        })
    }

    /// Every input is watched: nothing needs a periodic check.
    fn resync_period(&self) -> Option<Duration> {
        None
    }
}

/// Keep the agent's one cache of state Secrets current (every sync reads
/// it; a sync in steady state reads no Secret from the API).
async fn feed_state_cache(state: StateStore) {
    use crate::controller::store::Change;
    use crate::sync::labels::OBJECT_STATE_LABEL;
    let cfg = watcher::Config::default().labels(&format!("{OBJECT_STATE_LABEL}=true"));
    let cache = state.cache();
    crate::controller::watch::drive_reported(
        watcher(state.api(), cfg),
        "state Secrets (reading them one by one meanwhile)",
        |_| Some("docs/rbac.md: list and watch Secrets in the agent's namespace".into()),
        |ev| {
            cache.feed(Change::from(ev), |_, _| vec![]);
        },
    )
    .await;
}

/// Keep the CRD index current from a watch of the CRDs. A changed CRD
/// enqueues the resources that select its group and kind; a finished
/// (re-)list enqueues them all.
async fn feed_crd_index(api: Api<DynamicObject>, publisher: Arc<Publisher>) {
    use crate::controller::store::Change;
    crate::controller::watch::drive_reported(
        watcher(api, watcher::Config::default()),
        "CustomResourceDefinitions",
        |_| None,
        |ev| {
            // What the event selects, read before the index takes it: the
            // resources are enqueued once the index knows the change.
            let (selected, all) = match &ev {
                watcher::Event::Apply(crd) | watcher::Event::Delete(crd) => (
                    Some((
                        crd.data["spec"]["group"]
                            .as_str()
                            .unwrap_or_default()
                            .to_string(),
                        crd.data["spec"]["names"]["kind"]
                            .as_str()
                            .unwrap_or_default()
                            .to_string(),
                    )),
                    false,
                ),
                watcher::Event::InitDone => (None, true),
                watcher::Event::Init | watcher::Event::InitApply(_) => (None, false),
            };
            publisher.crds.feed(Change::from(ev));
            if let Some((group, kind)) = selected {
                publisher.enqueue_where(|pr| {
                    pr.spec.resource.api_group == group && pr.spec.resource.kind == kind
                });
            } else if all {
                publisher.enqueue_where(|_| true);
            }
        },
    )
    .await;
}
