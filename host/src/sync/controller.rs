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

use super::ObjectKey;
use super::cache::{Change, KcpCache};
use super::labels::*;
use super::queue::WorkQueue;
use super::syncer::{Outcome, SyncContext};

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
    // The Event recorder owns its queue's receiver: it runs once, and
    // ends only when the sync stops (it has no fallible step to supervise).
    tasks.spawn(ctx.recorder.clone().run());
    // Every other loop is supervised (crate::supervise): one that panics or
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
    // Workers are supervised one by one (supervise_workers); their
    // supervisor is supervised like every other loop.
    {
        let (ctx, queue) = (ctx.clone(), queue.clone());
        tasks.spawn(crate::supervise::supervised(
            "sync-workers",
            pr.clone(),
            cancel.clone(),
            move || supervise_workers(ctx.clone(), queue.clone()),
        ));
    }
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
async fn watch_copies(ctx: Arc<SyncContext>, queue: Arc<WorkQueue<ObjectKey>>) {
    let api: Api<DynamicObject> = Api::all_with(ctx.service.clone(), &ctx.local.ar);
    let cfg = watcher::Config::default().labels(&format!("{AGENT_NAME_LABEL}={}", ctx.agent_name));
    let copies = &ctx.copies;
    watch_loop("service", api, cfg, queue, move |ev| {
        copies.feed(ev, |o, _| local_key(o).into_iter().collect())
    })
    .await;
}

/// What workers need of a sync context; a trait so the worker loop and its
/// supervision can be tested without clusters.
pub(super) trait Reconciler: Send + Sync + 'static {
    fn name(&self) -> &str;
    fn reconcile<'a>(&'a self, key: &'a ObjectKey) -> BoxFuture<'a, ReconcileResult>;
    /// Report the outcome (conditions, Events, metrics of failures).
    fn record<'a>(&'a self, key: &'a ObjectKey, result: &'a ReconcileResult) -> BoxFuture<'a, ()>;
    fn failing(&self) -> usize;
    /// When to check an object in sync again.
    fn resync_period(&self) -> Duration {
        RESYNC_UNWATCHED
    }
}

type ReconcileResult = Result<Outcome, super::syncer::SyncError>;

impl Reconciler for SyncContext {
    fn name(&self) -> &str {
        &self.published_resource
    }
    fn reconcile<'a>(&'a self, key: &'a ObjectKey) -> BoxFuture<'a, ReconcileResult> {
        Box::pin(SyncContext::reconcile(self, key))
    }
    fn record<'a>(&'a self, key: &'a ObjectKey, result: &'a ReconcileResult) -> BoxFuture<'a, ()> {
        Box::pin(self.record_result(key, result))
    }
    fn failing(&self) -> usize {
        self.failures.len()
    }
    fn resync_period(&self) -> Duration {
        if self.plugins().related.is_empty() && self.namespace_filter.is_none() {
            self.resync
        } else {
            RESYNC_UNWATCHED.min(self.resync)
        }
    }
}

async fn supervise_workers<R: Reconciler>(ctx: Arc<R>, queue: Arc<WorkQueue<ObjectKey>>) {
    let mut workers = JoinSet::new();
    for _ in 0..WORKERS {
        workers.spawn(worker(ctx.clone(), queue.clone()));
    }
    while let Some(ended) = workers.join_next().await {
        if queue.is_shut_down() {
            return;
        }
        match ended {
            Err(e) if e.is_cancelled() => return,
            Err(e) => {
                error!(published_resource = %ctx.name(), error = %e, "a sync worker died; restarting it")
            }
            Ok(()) => {
                warn!(published_resource = %ctx.name(), "a sync worker stopped; restarting it")
            }
        }
        workers.spawn(worker(ctx.clone(), queue.clone()));
    }
}

/// Take keys off the queue and reconcile them, until the queue shuts down.
async fn worker<R: Reconciler>(ctx: Arc<R>, queue: Arc<WorkQueue<ObjectKey>>) {
    use futures::FutureExt;
    let metrics = &crate::metrics::METRICS;
    let pr = ctx.name().to_string();
    let pr = pr.as_str();
    while let Some(key) = queue.get().await {
        metrics.set_queue_depth(pr, queue.len());
        let started = std::time::Instant::now();
        // A panic in a reconcile is a bug; it fails this key (reported like
        // any error) instead of taking the worker and the key down with it.
        let result = match std::panic::AssertUnwindSafe(ctx.reconcile(&key))
            .catch_unwind()
            .await
        {
            Ok(r) => r,
            Err(panic) => Err(super::syncer::SyncError::Panicked(
                crate::supervise::panic_message(&panic),
            )),
        };
        ctx.record(&key, &result).await;
        let label = match &result {
            Ok(Outcome::Done | Outcome::Gone) => "success",
            Ok(Outcome::Requeue(_)) => "requeue",
            Err(_) => "error",
        };
        metrics.reconciled(pr, label, started.elapsed());
        metrics.set_objects_failing(pr, ctx.failing());
        match result {
            Ok(Outcome::Done) => {
                queue.forget(&key);
                queue.add_after(key.clone(), ctx.resync_period());
            }
            Ok(Outcome::Gone) => queue.remove(&key),
            Ok(Outcome::Requeue(d)) => {
                queue.forget(&key);
                if d.is_zero() {
                    queue.done(&key);
                    queue.add(key);
                    continue;
                }
                queue.add_after(key.clone(), d);
            }
            Err(_) => queue.add_rate_limited(key.clone()),
        }
        queue.done(&key);
    }
}

/// How often failing objects are summarised in the log.
const FAILURE_SUMMARY_EVERY: Duration = Duration::from_secs(60);

/// Every minute while objects fail: one line per PublishedResource with how
/// many fail and their commonest causes, instead of a line per retry.
async fn summarise_failures(ctx: Arc<SyncContext>) {
    let mut tick = tokio::time::interval(FAILURE_SUMMARY_EVERY);
    tick.tick().await;
    loop {
        tick.tick().await;
        let (n, causes) = ctx.failures.by_cause(3);
        if n == 0 {
            continue;
        }
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
        |e, retry| {
            if crate::watch::is_forbidden(e) {
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
    Some(ObjectKey {
        cluster: labels.get(REMOTE_CLUSTER_LABEL)?.clone(),
        namespace: ann.get(REMOTE_NAMESPACE_ANNOTATION).cloned(),
        name: ann.get(REMOTE_NAME_ANNOTATION)?.clone(),
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::sync::syncer::SyncError;

    const RESYNC: Duration = Duration::from_secs(300);

    /// Panics on the first reconcile of `bad`, fails the second, then
    /// succeeds; counts calls per key.
    #[derive(Default)]
    struct Flaky {
        calls: Mutex<std::collections::HashMap<String, usize>>,
        recorded_errors: AtomicUsize,
    }

    impl Reconciler for Flaky {
        fn name(&self) -> &str {
            "flaky"
        }
        fn reconcile<'a>(&'a self, key: &'a ObjectKey) -> BoxFuture<'a, ReconcileResult> {
            Box::pin(async move {
                let n = {
                    let mut c = self.calls.lock().unwrap();
                    let n = c.entry(key.name.clone()).or_default();
                    *n += 1;
                    *n
                };
                if key.name == "bad" {
                    match n {
                        1 => panic!("mutation output was not an object"),
                        2 => return Err(SyncError::NoShard("abc".into())),
                        _ => {}
                    }
                }
                Ok(Outcome::Done)
            })
        }
        fn record<'a>(
            &'a self,
            _key: &'a ObjectKey,
            result: &'a ReconcileResult,
        ) -> BoxFuture<'a, ()> {
            Box::pin(async move {
                if result.is_err() {
                    self.recorded_errors.fetch_add(1, Ordering::SeqCst);
                }
            })
        }
        fn failing(&self) -> usize {
            0
        }
    }

    fn key(name: &str) -> ObjectKey {
        ObjectKey {
            cluster: "c".into(),
            namespace: None,
            name: name.into(),
        }
    }

    /// Objects that exist until removed from the set: reconciles of an
    /// existing key are `Done`, of a removed one `Gone`.
    #[derive(Default)]
    struct Objects {
        existing: Mutex<std::collections::HashSet<String>>,
        reconciles: AtomicUsize,
    }

    impl Reconciler for Objects {
        fn name(&self) -> &str {
            "objects"
        }
        fn reconcile<'a>(&'a self, key: &'a ObjectKey) -> BoxFuture<'a, ReconcileResult> {
            Box::pin(async move {
                self.reconciles.fetch_add(1, Ordering::SeqCst);
                if self.existing.lock().unwrap().contains(&key.name) {
                    Ok(Outcome::Done)
                } else {
                    Ok(Outcome::Gone)
                }
            })
        }
        fn record<'a>(&'a self, _: &'a ObjectKey, _: &'a ReconcileResult) -> BoxFuture<'a, ()> {
            Box::pin(async {})
        }
        fn failing(&self) -> usize {
            0
        }
        fn resync_period(&self) -> Duration {
            RESYNC
        }
    }

    /// Bounded memory: 10 000 objects are created (each reconciled once and
    /// scheduled for its resync: one entry and one timer each), then deleted
    /// (the watch's delete event enqueues each key once more): the scheduler
    /// ends with no entry and no timer, and the resync period passing
    /// reconciles nothing.
    #[tokio::test(start_paused = true)]
    async fn deleted_keys_leave_no_entry_and_no_timer() {
        const N: usize = 10_000;
        let queue: Arc<WorkQueue<ObjectKey>> =
            WorkQueue::new(Duration::from_millis(5), Duration::from_secs(30));
        let ctx = Arc::new(Objects::default());
        let supervisor = tokio::spawn(supervise_workers(ctx.clone(), queue.clone()));
        let wait_for = |n: usize| {
            let ctx = ctx.clone();
            async move {
                while ctx.reconciles.load(Ordering::SeqCst) < n {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            }
        };
        for i in 0..N {
            let name = format!("obj-{i}");
            ctx.existing.lock().unwrap().insert(name.clone());
            queue.add(key(&name));
        }
        wait_for(N).await;
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert_eq!(queue.scheduled_len(), N, "one resync entry per object");
        assert_eq!(queue.timers_len(), N, "one timer per object");

        ctx.existing.lock().unwrap().clear();
        for i in 0..N {
            queue.add(key(&format!("obj-{i}")));
        }
        wait_for(2 * N).await;
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert_eq!(queue.scheduled_len(), 0, "entries left after deletion");
        assert_eq!(queue.timers_len(), 0, "timers left after deletion");
        assert_eq!(queue.failures_len(), 0);
        assert!(queue.is_empty());

        tokio::time::sleep(RESYNC * 2).await;
        assert_eq!(
            ctx.reconciles.load(Ordering::SeqCst),
            2 * N,
            "a deleted object is never reconciled again"
        );
        queue.shut_down();
        supervisor.abort();
    }

    /// A reconcile that panics neither kills the workers nor loses the key:
    /// the panic is reported as an error and the key retried until it
    /// succeeds, while other keys keep flowing.
    #[tokio::test]
    async fn a_panicking_reconcile_is_reported_and_retried() {
        let queue: Arc<WorkQueue<ObjectKey>> =
            WorkQueue::new(Duration::from_millis(1), Duration::from_millis(5));
        let ctx = Arc::new(Flaky::default());
        let supervisor = tokio::spawn(supervise_workers(ctx.clone(), queue.clone()));
        queue.add(key("bad"));
        for i in 0..20 {
            queue.add(key(&format!("good-{i}")));
        }
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            let done = {
                let c = ctx.calls.lock().unwrap();
                c.get("bad").copied().unwrap_or(0) >= 3
                    && (0..20).all(|i| c.contains_key(&format!("good-{i}")))
            };
            if done {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "keys not all reconciled: {:?}",
                ctx.calls.lock().unwrap()
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(
            ctx.recorded_errors.load(Ordering::SeqCst),
            2,
            "the panic and the error were both reported"
        );
        queue.shut_down();
        supervisor.abort();
    }
}
