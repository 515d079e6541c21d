//! One sync controller per PublishedResource. Top to bottom:
//! - the endpoint slice lists one virtual-workspace URL per kcp shard that
//!   has consumers; [`follow_shards`] keeps one wildcard watch per URL (every
//!   bound workspace of that shard at once) feeding the [`KcpCache`], and
//!   starts or stops watches as shards join or leave the slice;
//! - a watch on the service-cluster copies maps them back to their kcp keys;
//! - both feed one work queue keyed by (logical cluster, namespace, name);
//!   workers run the [`syncer`](super::syncer) on what the cache holds.
//!
//! kube-runtime's `Controller` is not used on purpose: its store keys
//! objects by (namespace, name) only, so same-named objects from two
//! workspaces would collide; [`KcpCache`] keys by logical cluster too.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use kube::api::{Api, DynamicObject};
use kube::runtime::watcher;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::{debug, error, info, warn};

use super::cache::{Change, KcpCache};
use super::labels::*;
use super::syncer::{Outcome, SyncContext, SyncError};
use super::{KeyParts, ObjectKey};
use crate::runner::queue::WorkQueue;

pub const WORKERS: usize = 4;
/// How often an object in sync is checked again. Every input of a plain
/// PublishedResource is watched (the kcp object, its copy, its state
/// Secret) and plugin swaps re-check everything, so the periodic check only
/// heals a missed event and can be rare: at 10 000 objects a 30 s period
/// keeps a core busy with checks that find nothing. Related objects without
/// `watch` and Namespace labels (`filter.namespace`) have no event that
/// leads to their primary, so there it stays at 30 s (upstream requeues
/// every object every 5 s).
/// (The default period is `--resync-period`, 5 minutes.)
const RESYNC_UNWATCHED: Duration = Duration::from_secs(30);
/// How long workers wait for the first list of every shard before they
/// start anyway (a shard that cannot be listed must not hold up the others).
const INITIAL_SYNC_WAIT: Duration = Duration::from_secs(30);

/// Run until `cancel` fires.
pub async fn run(ctx: Arc<SyncContext>, cancel: CancellationToken) {
    let queue: Arc<WorkQueue<ObjectKey>> =
        WorkQueue::new(Duration::from_millis(100), Duration::from_secs(30));
    info!(published_resource = %ctx.published_resource, "starting sync controller");

    let pr = ctx.published_resource.clone();
    let mut tasks = JoinSet::new();
    // Every loop is supervised (crate::supervise): one that panics or
    // ends is restarted, so a cache or a queue cannot die silently.
    {
        let ctx = ctx.clone();
        tasks.spawn(crate::supervise::supervised(
            "failure-summary",
            pr.clone(),
            cancel.clone(),
            move || summarise_failures(ctx.clone()),
        ));
    }
    {
        let (ctx, queue) = (ctx.clone(), queue.clone());
        tasks.spawn(crate::supervise::supervised(
            "follow-shards",
            pr.clone(),
            cancel.clone(),
            move || follow_shards(ctx.clone(), queue.clone()),
        ));
    }
    {
        let (ctx, queue) = (ctx.clone(), queue.clone());
        tasks.spawn(crate::supervise::supervised(
            "service-watch",
            pr.clone(),
            cancel.clone(),
            move || watch_copies(ctx.clone(), queue.clone()),
        ));
    }
    // (The state Secrets are cached once per agent, by the publisher: see
    // `publish::feed_state_cache`.)
    // Related objects on the service cluster, cached (kcp-side ones are
    // watched per shard); with `watch`, a change enqueues the primary.
    for gvr in super::related_cache::kinds(&ctx, true) {
        let (ctx, queue) = (ctx.clone(), queue.clone());
        tasks.spawn(crate::supervise::supervised(
            "related-watch",
            pr.clone(),
            cancel.clone(),
            move || {
                super::related_cache::watch(ctx.clone(), true, gvr.clone(), None, queue.clone())
            },
        ));
    }
    // After a plugin swap every object is checked again with the new code.
    {
        let (ctx, queue) = (ctx.clone(), queue.clone());
        tasks.spawn(crate::supervise::supervised(
            "plugin-resync",
            pr.clone(),
            cancel.clone(),
            move || recheck_on_plugin_change(ctx.clone(), queue.clone()),
        ));
    }
    wait_for_initial_lists(&ctx).await;
    // The workers, each supervised (crate::runner).
    crate::runner::spawn_workers(
        &mut tasks,
        WORKERS,
        ctx.clone(),
        queue.clone(),
        cancel.clone(),
    );
    cancel.cancelled().await;
    queue.shut_down();
    tasks.abort_all();
    info!(published_resource = %ctx.published_resource, "stopped sync controller");
}

/// Check every object again whenever the plugins change.
async fn recheck_on_plugin_change(ctx: Arc<SyncContext>, queue: Arc<WorkQueue<ObjectKey>>) {
    loop {
        ctx.resync_all.notified().await;
        let keys = ctx.cache.keys();
        info!(published_resource = %ctx.published_resource, objects = keys.len(), "plugins changed; re-checking every object");
        for key in keys {
            queue.add(key);
        }
    }
}

/// The copies on the service cluster: every event of a copy (the initial
/// list too) re-checks the kcp object it belongs to.
/// Every copy of the kind (anything with the identity labels), so that the
/// cache alone answers "is there a copy of this kcp object?": a new object
/// costs no request to find out, where a LIST by label per object would
/// make the API server scan every object of the kind each time. Copies of
/// other agents (another kcp syncing into this cluster) are not cached;
/// copies with no agent label (made before agents had names) are, and are
/// adopted.
async fn watch_copies(ctx: Arc<SyncContext>, queue: Arc<WorkQueue<ObjectKey>>) {
    let api: Api<DynamicObject> = Api::all_with(ctx.service.clone(), &ctx.local.ar);
    let cfg = watcher::Config::default().labels(REMOTE_CLUSTER_LABEL);
    let copies = &ctx.copies;
    let agent = ctx.agent_name.as_str();
    watch_loop("service", api, cfg, queue, move |ev| {
        let ev = match ev {
            Change::Listed(o) if !ours(&o, agent) => return vec![],
            // Relabelled for another agent: no longer this one's.
            Change::Apply(o) | Change::Delete(o) if !ours(&o, agent) => {
                if !copies.contains(&o) {
                    return vec![];
                }
                Change::Delete(o)
            }
            ev => ev,
        };
        copies.feed(ev, |o, _| local_key(o).into_iter().collect())
    })
    .await;
}

/// Whether `copy` is this agent's: labelled with its name, or with none.
pub fn ours(copy: &DynamicObject, agent: &str) -> bool {
    copy.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(AGENT_NAME_LABEL))
        .is_none_or(|a| a == agent)
}

impl crate::runner::Reconcile for SyncContext {
    type Key = ObjectKey;
    type Error = SyncError;
    const TASK: &'static str = "sync-worker";

    fn name(&self) -> &str {
        &self.published_resource
    }

    fn reconcile<'a>(&'a self, key: &'a ObjectKey) -> BoxFuture<'a, Result<Outcome, SyncError>> {
        Box::pin(SyncContext::reconcile(self, key))
    }

    fn panicked(&self, message: String) -> SyncError {
        SyncError::Panicked(message)
    }

    fn record<'a>(
        &'a self,
        key: &'a ObjectKey,
        result: &'a Result<Outcome, SyncError>,
        took: Duration,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            self.record_result(key, result).await;
            let label = match result {
                Ok(Outcome::Done | Outcome::Gone) => "success",
                Ok(Outcome::Requeue(_)) => "requeue",
                Err(_) => "error",
            };
            let metrics = &crate::metrics::METRICS;
            metrics.reconciled(&self.published_resource, label, took);
            metrics.set_objects_failing(&self.published_resource, self.failures.len());
            // One line per pass at debug level: what an operator (and the
            // e2e tests) read to see that the agent looked at an object.
            debug!(published_resource = %self.published_resource, %key, result = label, "reconcile pass finished");
        })
    }

    /// Every input of a plain PublishedResource is watched; related objects
    /// and Namespace labels are not (see [`RESYNC_UNWATCHED`]).
    fn resync_period(&self) -> Option<Duration> {
        Some(
            if self.plugins().related.is_empty() && self.namespace_filter.is_none() {
                self.resync
            } else {
                RESYNC_UNWATCHED.min(self.resync)
            },
        )
    }

    fn queued(&self, depth: usize) {
        crate::metrics::METRICS.set_queue_depth(&self.published_resource, depth);
    }
}

/// How often failing objects are summarised in the log.
const FAILURE_SUMMARY_EVERY: Duration = Duration::from_secs(60);

/// Every minute while objects fail: one line per PublishedResource with how
/// many fail and their commonest causes, instead of a line per retry.
async fn summarise_failures(ctx: Arc<SyncContext>) {
    let mut tick = tokio::time::interval(FAILURE_SUMMARY_EVERY);
    tick.tick().await;
    let mut failing_before = 0;
    loop {
        tick.tick().await;
        let (n, causes) = ctx.failures.by_cause(3);
        if n == 0 {
            if failing_before > 0 {
                info!(published_resource = %ctx.published_resource, "no object failing any more");
            }
            failing_before = 0;
            continue;
        }
        failing_before = n;
        let causes = causes
            .iter()
            .map(|(n, c)| format!("{n}× {c}"))
            .collect::<Vec<_>>()
            .join("; ");
        warn!(published_resource = %ctx.published_resource, failing = n, %causes, "objects failing");
    }
}

/// Wait (bounded) until every current shard has been listed once, so the
/// first reconciles see the objects instead of a cache still filling.
async fn wait_for_initial_lists(ctx: &SyncContext) {
    let deadline = tokio::time::Instant::now() + INITIAL_SYNC_WAIT;
    loop {
        let urls = ctx.kcp.endpoints().borrow().clone();
        if ctx.cache.synced(&urls) {
            debug!(objects = ctx.cache.len(), "kcp cache synced");
            return;
        }
        if tokio::time::Instant::now() > deadline {
            warn!(published_resource = %ctx.published_resource, "not every shard could be listed yet; starting workers anyway");
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Keep one kcp watch per virtual-workspace URL of the endpoint slice (one
/// per shard), following the slice as shards join and leave.
async fn follow_shards(ctx: Arc<SyncContext>, queue: Arc<WorkQueue<ObjectKey>>) {
    let mut endpoints = ctx.kcp.endpoints();
    // Dropping a URL's JoinSet aborts its watches.
    let mut shards: HashMap<String, JoinSet<()>> = HashMap::new();
    loop {
        let urls = endpoints.borrow_and_update().clone();
        let gone: Vec<String> = shards
            .keys()
            .filter(|u| !urls.contains(u))
            .cloned()
            .collect();
        for url in gone {
            shards.remove(&url);
            let dropped = ctx.cache.forget_url(&url);
            ctx.related_caches.forget_url(&url);
            ctx.kcp.forget_vw(&url);
            info!(published_resource = %ctx.published_resource, %url, objects = dropped.len(), "shard left the endpoint slice; stopped watching it");
        }
        for url in urls {
            if shards.contains_key(&url) {
                continue;
            }
            info!(published_resource = %ctx.published_resource, %url, "watching shard");
            let url: Arc<str> = url.into();
            // Supervised like the controller's other loops; they end when
            // their set is dropped (the shard left), so no token fires them.
            let never = CancellationToken::new();
            let pr = ctx.published_resource.clone();
            let mut set = JoinSet::new();
            {
                let (ctx, url, queue) = (ctx.clone(), url.clone(), queue.clone());
                set.spawn(crate::supervise::supervised(
                    "kcp-watch",
                    pr.clone(),
                    never.clone(),
                    move || kcp_watch(ctx.clone(), url.clone(), queue.clone()),
                ));
            }
            for gvr in super::related_cache::kinds(&ctx, false) {
                let (ctx, url, queue) = (ctx.clone(), url.clone(), queue.clone());
                set.spawn(crate::supervise::supervised(
                    "related-watch",
                    pr.clone(),
                    never.clone(),
                    move || {
                        super::related_cache::watch(
                            ctx.clone(),
                            false,
                            gvr.clone(),
                            Some(url.clone()),
                            queue.clone(),
                        )
                    },
                ));
            }
            shards.insert(url.to_string(), set);
        }
        if endpoints.changed().await.is_err() {
            // The agent is shutting down; keep the current watches until
            // the controller is cancelled.
            std::future::pending::<()>().await;
        }
    }
}

/// The wildcard watch of one shard's virtual workspace, into the cache.
async fn kcp_watch(ctx: Arc<SyncContext>, url: Arc<str>, queue: Arc<WorkQueue<ObjectKey>>) {
    let client = match ctx.kcp.vw_client(&url, "*") {
        Ok(c) => c,
        Err(e) => {
            error!(%url, error = %e, "cannot build wildcard client");
            return;
        }
    };
    let api: Api<DynamicObject> = Api::all_with(client, &ctx.remote.ar);
    let cache: &KcpCache = &ctx.cache;
    watch_loop(
        "kcp",
        api,
        watcher::Config::default(),
        queue,
        |ev| match ev {
            Change::ListStart => {
                cache.list_started(&url);
                vec![]
            }
            Change::Listed(o) => {
                cache.listed(&url, o);
                vec![]
            }
            Change::ListDone => cache.list_done(&url),
            Change::Apply(o) => cache.apply(&url, o).into_iter().collect(),
            Change::Delete(o) => cache.delete(&url, &o).into_iter().collect(),
        },
    )
    .await;
}

/// Watch `api` forever (the watcher re-lists on errors, with backoff) and
/// enqueue the keys `on_change` returns.
pub(super) async fn watch_loop<K, F>(
    side: &'static str,
    api: Api<K>,
    cfg: watcher::Config,
    queue: Arc<WorkQueue<ObjectKey>>,
    mut on_change: F,
) where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
    F: FnMut(Change<K>) -> Vec<ObjectKey>,
{
    crate::watch::drive(
        watcher(api, cfg),
        |ev| {
            for k in on_change(Change::from(ev)) {
                debug!(side, key = %k, "event");
                queue.add(k);
            }
        },
        |e, retry, report| {
            if !report {
                debug!(side, error = %e, ?retry, "watch failed again");
            } else if crate::watch::is_forbidden(e) {
                // Until the RBAC is fixed, readers fall back to the API.
                let fix = if side == "kcp" {
                    "check the APIExport's permission claims and the agent's kcp RBAC (docs/rbac.md)"
                } else {
                    "grant list and watch as docs/rbac.md lists"
                };
                error!(side, error = %e, ?retry, fix, "the agent may not list/watch these objects; reading them one by one meanwhile");
            } else {
                warn!(side, error = %e, ?retry, "watch failed");
            }
        },
    )
    .await;
}

/// Map a service-cluster copy back to the kcp object it came from.
pub fn local_key(obj: &DynamicObject) -> Option<ObjectKey> {
    let labels = obj.metadata.labels.as_ref()?;
    let ann = obj.metadata.annotations.as_ref()?;
    Some(ObjectKey::new(KeyParts {
        cluster: labels.get(REMOTE_CLUSTER_LABEL)?.clone(),
        namespace: ann.get(REMOTE_NAMESPACE_ANNOTATION).cloned(),
        name: ann.get(REMOTE_NAME_ANNOTATION)?.clone(),
    }))
}
