//! One sync controller per PublishedResource: what it watches
//! ([`super::watches`]) feeds one work queue keyed by (logical cluster,
//! namespace, name), and workers run [`super::reconcile`] on what the caches
//! hold. Built with [`Controller`], the agent's one controller builder.
//!
//! kube-runtime's `Controller` is not used on purpose: its store keys
//! objects by (namespace, name) only, so same-named objects from two
//! workspaces would collide; the kcp cache keys by logical cluster too.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use super::context::SyncContext;
use super::error::SyncError;
use super::watches::{follow_shards, kinds, recheck_on_plugin_change, watch_copies, watch_related};
use crate::controller::Controller;
use crate::controller::queue::WorkQueue;
use crate::controller::runner::Outcome;
use crate::controller::store::ObjectKey;

/// Objects of one PublishedResource reconciled at a time, unless
/// `--sync-workers` says otherwise. Upstream's 4 left the agent far below
/// what the servers take once no client-side limit holds it back
/// (docs/performance.md); more workers only mean more requests in flight,
/// which the servers' Priority and Fairness paces.
pub const DEFAULT_WORKERS: usize = 8;
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
    if !ctx.priority {
        queue.one_lane();
    }
    ctx.recorder.give_way_to(&queue);
    info!(published_resource = %ctx.published_resource, "starting sync controller");
    let mut controller = Controller::new(ctx.clone(), queue, cancel)
        .workers(ctx.workers)
        .feed("failure-summary", {
            let ctx = ctx.clone();
            move |_| summarise_failures(ctx.clone())
        })
        .feed("follow-shards", {
            let ctx = ctx.clone();
            move |queue| follow_shards(ctx.clone(), queue)
        })
        .feed("service-watch", {
            let ctx = ctx.clone();
            move |queue| watch_copies(ctx.clone(), queue)
        })
        // A server that answers again: objects that failed on it are
        // retried now, not after the backoff they reached during the outage.
        .feed("retry-on-recovery", {
            let ctx = ctx.clone();
            move |queue| retry_on_recovery(ctx.clone(), queue)
        })
        // After a plugin swap every object is checked again with the new code.
        .feed("plugin-resync", {
            let ctx = ctx.clone();
            move |queue| recheck_on_plugin_change(ctx.clone(), queue)
        });
    // (The state Secrets are cached once per agent, by the publisher: see
    // `publish::feed_state_cache`.)
    // Related objects on the service cluster, cached (kcp-side ones are
    // watched per shard); with `watch`, a change enqueues the primary.
    for gvr in kinds(&ctx, true) {
        let ctx = ctx.clone();
        controller = controller.feed("related-watch", move |queue| {
            watch_related(ctx.clone(), true, gvr.clone(), None, queue)
        });
    }
    controller
        .start_when(wait_for_initial_lists(ctx.clone()))
        .run()
        .await;
    info!(published_resource = %ctx.published_resource, "stopped sync controller");
}

/// When failed objects are pulled forward after a server answers again
/// (gaps, from its first proper answer). One retry is not enough: a
/// kube-apiserver that just restarted answers 403 to everything for its
/// first moments, until its RBAC cache is loaded (seen in the outage
/// test), and those 403s grow the backoff further. At most four early
/// retries per recovery, 7 s apart in all, so a server that flaps does
/// not turn backoff into a retry storm.
const RECOVERY_RETRIES: [Duration; 4] = [
    Duration::ZERO,
    Duration::from_secs(1),
    Duration::from_secs(2),
    Duration::from_secs(4),
];

/// Retry the failed objects early whenever kcp or the service cluster
/// answers properly again after trouble, instead of at the end of a
/// backoff that grew during the outage (up to 30 s).
async fn retry_on_recovery(ctx: Arc<SyncContext>, queue: Arc<WorkQueue<ObjectKey>>) {
    let mut kcp = crate::kube::client::recoveries("kcp");
    let mut service = crate::kube::client::recoveries("service");
    loop {
        let server = tokio::select! {
            r = kcp.changed() => r.map(|_| "kcp"),
            r = service.changed() => r.map(|_| "service"),
        };
        let Ok(server) = server else {
            return;
        };
        for gap in RECOVERY_RETRIES {
            tokio::time::sleep(gap).await;
            let n = queue.retry_failed_now();
            if n > 0 {
                info!(published_resource = %ctx.published_resource, server, objects = n, "the API server answers again: retrying failed objects now");
            }
        }
    }
}

impl crate::controller::runner::Reconcile for SyncContext {
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
            let metrics = &crate::ops::metrics::METRICS;
            metrics.reconciled(&self.published_resource, label, took);
            metrics.set_objects_failing(&self.published_resource, self.failures.len());
            // One line per pass at debug level: what an operator (and the
            // e2e tests) read to see that the agent looked at an object.
            debug!(published_resource = %self.published_resource, %key, result = label, "reconcile pass finished");
        })
    }

    /// Every input of a plain PublishedResource is watched; related objects
    /// and Namespace labels (filters, managed namespace metadata) are not
    /// (see [`RESYNC_UNWATCHED`]).
    fn resync_period(&self) -> Option<Duration> {
        Some(
            if self.plugins().related.is_empty()
                && self.namespace_filter.is_none()
                && self.namespace_metadata.is_none()
            {
                self.resync
            } else {
                RESYNC_UNWATCHED.min(self.resync)
            },
        )
    }

    fn queued(&self, depth: usize) {
        crate::ops::metrics::METRICS.set_queue_depth(&self.published_resource, depth);
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
async fn wait_for_initial_lists(ctx: Arc<SyncContext>) {
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
