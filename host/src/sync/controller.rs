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

use futures::{StreamExt, TryStreamExt};
use kube::api::{Api, DynamicObject};
use kube::runtime::watcher;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::{debug, error, info, warn};

use super::ObjectKey;
use super::cache::KcpCache;
use super::labels::*;
use super::queue::WorkQueue;
use super::syncer::{Outcome, SyncContext};

pub const WORKERS: usize = 4;
/// Upstream resyncs every object every few seconds; a periodic resync also
/// heals anything a missed watch event left behind.
const RESYNC: Duration = Duration::from_secs(30);
/// How long workers wait for the first list of every shard before they
/// start anyway (a shard that cannot be listed must not hold up the others).
const INITIAL_SYNC_WAIT: Duration = Duration::from_secs(30);

/// Run until `cancel` fires.
pub async fn run(ctx: Arc<SyncContext>, cancel: CancellationToken) {
    let queue: Arc<WorkQueue<ObjectKey>> =
        WorkQueue::new(Duration::from_millis(100), Duration::from_secs(30));
    info!(published_resource = %ctx.published_resource, "starting sync controller");

    let local_watch = {
        let (ctx, queue) = (ctx.clone(), queue.clone());
        async move {
            let api: Api<DynamicObject> = Api::all_with(ctx.service.clone(), &ctx.local.ar);
            let cfg = watcher::Config::default()
                .labels(&format!("{AGENT_NAME_LABEL}={}", ctx.agent_name));
            watch_loop("service", api, cfg, queue, move |ev| match ev {
                Change::Apply(o) | Change::Delete(o) | Change::Listed(o) => {
                    local_key(&o).into_iter().collect()
                }
                _ => vec![],
            })
            .await;
        }
    };
    let mut tasks = JoinSet::new();
    tasks.spawn(follow_shards(ctx.clone(), queue.clone()));
    tasks.spawn(local_watch);
    // Service-side related objects with `watch` enqueue their primary when
    // they change (kcp-side ones are watched per shard).
    for r in ctx
        .related
        .iter()
        .filter(|r| r.spec.watch.is_some() && r.is_service())
    {
        tasks.spawn(super::related::watch(
            ctx.clone(),
            r.index,
            queue.clone(),
            None,
        ));
    }
    wait_for_initial_lists(&ctx).await;
    for _ in 0..WORKERS {
        let (ctx, queue) = (ctx.clone(), queue.clone());
        tasks.spawn(async move {
            while let Some(key) = queue.get().await {
                let result = ctx.reconcile(&key).await;
                ctx.record_result(&key, &result).await;
                let counter = match &result {
                    Ok(_) => &crate::serve::METRICS.reconciles_ok,
                    Err(_) => &crate::serve::METRICS.reconciles_failed,
                };
                counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                match result {
                    Ok(Outcome::Done) => {
                        queue.forget(&key);
                        queue.add_after(key.clone(), RESYNC);
                    }
                    Ok(Outcome::Requeue(d)) => {
                        queue.forget(&key);
                        if d.is_zero() {
                            queue.done(&key);
                            queue.add(key);
                            continue;
                        }
                        queue.add_after(key.clone(), d);
                    }
                    Err(e) => {
                        warn!(%key, error = %e, "reconciling failed; will retry");
                        queue.add_rate_limited(key.clone());
                    }
                }
                queue.done(&key);
            }
        });
    }
    cancel.cancelled().await;
    queue.shut_down();
    tasks.abort_all();
    info!(published_resource = %ctx.published_resource, "stopped sync controller");
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
            info!(published_resource = %ctx.published_resource, %url, objects = dropped.len(), "shard left the endpoint slice; stopped watching it");
        }
        for url in urls {
            if shards.contains_key(&url) {
                continue;
            }
            info!(published_resource = %ctx.published_resource, %url, "watching shard");
            let url: Arc<str> = url.into();
            let mut set = JoinSet::new();
            set.spawn(kcp_watch(ctx.clone(), url.clone(), queue.clone()));
            for r in ctx
                .related
                .iter()
                .filter(|r| r.spec.watch.is_some() && !r.is_service())
            {
                set.spawn(super::related::watch(
                    ctx.clone(),
                    r.index,
                    queue.clone(),
                    Some(url.clone()),
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

/// A watch event, named for what it means to a cache.
enum Change {
    ListStart,
    Listed(DynamicObject),
    ListDone,
    Apply(DynamicObject),
    Delete(DynamicObject),
}

/// Watch `api` forever (the watcher re-lists on errors, with backoff) and
/// enqueue the keys `on_change` returns.
async fn watch_loop<F>(
    side: &'static str,
    api: Api<DynamicObject>,
    cfg: watcher::Config,
    queue: Arc<WorkQueue<ObjectKey>>,
    mut on_change: F,
) where
    F: FnMut(Change) -> Vec<ObjectKey>,
{
    let mut stream = watcher(api, cfg).boxed();
    let mut backoff = crate::backoff::Backoff::new(Duration::from_secs(1), Duration::from_secs(30));
    loop {
        match stream.try_next().await {
            Ok(Some(ev)) => {
                backoff.reset();
                let change = match ev {
                    watcher::Event::Init => Change::ListStart,
                    watcher::Event::InitApply(o) => Change::Listed(o),
                    watcher::Event::InitDone => Change::ListDone,
                    watcher::Event::Apply(o) => Change::Apply(o),
                    watcher::Event::Delete(o) => Change::Delete(o),
                };
                for k in on_change(change) {
                    debug!(side, key = %k, "event");
                    queue.add(k);
                }
            }
            Ok(None) => return,
            Err(e) => {
                let retry_in = backoff.next_delay();
                warn!(side, error = %e, ?retry_in, "watch failed; retrying");
                tokio::time::sleep(retry_in).await;
            }
        }
    }
}

/// Map a service-cluster copy back to the kcp object it came from.
pub(super) fn local_key(obj: &DynamicObject) -> Option<ObjectKey> {
    let labels = obj.metadata.labels.as_ref()?;
    let ann = obj.metadata.annotations.as_ref()?;
    Some(ObjectKey {
        cluster: labels.get(REMOTE_CLUSTER_LABEL)?.clone(),
        namespace: ann.get(REMOTE_NAMESPACE_ANNOTATION).cloned(),
        name: ann.get(REMOTE_NAME_ANNOTATION)?.clone(),
    })
}
