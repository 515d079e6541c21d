//! One sync controller per PublishedResource: a wildcard watch on the
//! export's virtual workspace (every bound consumer workspace at once) and a
//! watch on the service-cluster copies feed one work queue keyed by
//! (logical cluster, namespace, name); workers run the [`syncer`].
//!
//! kube-runtime's `Controller` is not used on purpose: its store keys
//! objects by (namespace, name) only, so same-named objects from two
//! workspaces would collide. Workers read the object fresh instead.

use std::sync::Arc;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use kube::api::{Api, DynamicObject};
use kube::runtime::watcher;
use tokio_util::sync::CancellationToken;
use tracing::{debug, error, info, warn};

use super::ObjectKey;
use super::labels::*;
use super::queue::WorkQueue;
use super::syncer::{Outcome, SyncContext};
use crate::apis::kcp::CLUSTER_ANNOTATION;

pub const WORKERS: usize = 4;
/// Upstream resyncs every object every few seconds; a periodic resync also
/// heals anything a missed watch event left behind.
const RESYNC: Duration = Duration::from_secs(30);

/// Run until `cancel` fires.
pub async fn run(ctx: Arc<SyncContext>, cancel: CancellationToken) {
    let queue: Arc<WorkQueue<ObjectKey>> =
        WorkQueue::new(Duration::from_millis(100), Duration::from_secs(30));
    info!(published_resource = %ctx.published_resource, vw = %ctx.vw_url, "starting sync controller");

    let kcp_watch = {
        let (ctx, queue) = (ctx.clone(), queue.clone());
        async move {
            let client = match ctx.kcp.vw_client(&ctx.vw_url, "*") {
                Ok(c) => c,
                Err(e) => {
                    error!(error = %e, "cannot build wildcard client");
                    return;
                }
            };
            let api: Api<DynamicObject> = Api::all_with(client, &ctx.remote.ar);
            watch_loop(
                "kcp",
                api,
                watcher::Config::default(),
                move |obj| kcp_key(&obj),
                queue,
            )
            .await;
        }
    };
    let local_watch = {
        let (ctx, queue) = (ctx.clone(), queue.clone());
        async move {
            let api: Api<DynamicObject> = Api::all_with(ctx.service.clone(), &ctx.local.ar);
            let cfg = watcher::Config::default()
                .labels(&format!("{AGENT_NAME_LABEL}={}", ctx.agent_name));
            watch_loop("service", api, cfg, move |obj| local_key(&obj), queue).await;
        }
    };
    let mut tasks = tokio::task::JoinSet::new();
    tasks.spawn(kcp_watch);
    tasks.spawn(local_watch);
    // Related objects with `watch` enqueue their primary when they change.
    for r in ctx.related.iter().filter(|r| r.spec.watch.is_some()) {
        tasks.spawn(super::related::watch(ctx.clone(), r.index, queue.clone()));
    }
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

/// Watch `api` forever (the watcher re-lists on errors) and enqueue keys.
async fn watch_loop<F>(
    side: &'static str,
    api: Api<DynamicObject>,
    cfg: watcher::Config,
    key_of: F,
    queue: Arc<WorkQueue<ObjectKey>>,
) where
    F: Fn(DynamicObject) -> Option<ObjectKey>,
{
    let mut stream = watcher(api, cfg).boxed();
    let mut backoff = crate::backoff::Backoff::new(Duration::from_secs(1), Duration::from_secs(30));
    loop {
        match stream.try_next().await {
            Ok(Some(ev)) => {
                backoff.reset();
                let objs: Vec<DynamicObject> = match ev {
                    watcher::Event::Apply(o)
                    | watcher::Event::Delete(o)
                    | watcher::Event::InitApply(o) => vec![o],
                    watcher::Event::Init | watcher::Event::InitDone => vec![],
                };
                for o in objs {
                    if let Some(k) = key_of(o) {
                        debug!(side, key = %k, "event");
                        queue.add(k);
                    }
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

fn kcp_key(obj: &DynamicObject) -> Option<ObjectKey> {
    let cluster = obj
        .metadata
        .annotations
        .as_ref()?
        .get(CLUSTER_ANNOTATION)?
        .clone();
    Some(ObjectKey {
        cluster,
        namespace: obj.metadata.namespace.clone(),
        name: obj.metadata.name.clone()?,
    })
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
