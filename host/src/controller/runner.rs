//! The one way keyed work is done: by the sync controllers (a key per kcp
//! object), the init workers (a key per initializing workspace), the
//! InitTarget manager (a key per InitTarget) and the WasmPlugin controller
//! (a key per WasmPlugin). In kube-runtime's terms, the scheduler and the
//! runner.
//!
//! - [`queue::WorkQueue`] schedules keys: each at most once, never by two
//!   workers at a time, with one pending entry and one timer per key, and a
//!   jittered per-key backoff for failures ([`crate::controller::backoff`]).
//! - [`spawn_workers`] runs a fixed pool of workers over it, each under
//!   [`crate::controller::supervise`]: a reconcile that panics fails its key (reported
//!   and retried like any error), a worker that ends is restarted.
//! - What a reconcile returns decides what happens to its key ([`Outcome`]):
//!   checked again after the resync period, after a delay, or forgotten.
//!
//! What feeds the queue (watches into caches, see [`crate::controller::watch`]) belongs
//! to each controller: kcp objects are keyed by logical cluster, which
//! kube-runtime's `Controller` cannot do.

use std::fmt::Display;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::queue::WorkQueue;

/// What a reconcile asks for its key.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// In sync: check again after the resync period (if the reconciler has
    /// one), else only when an event asks.
    Done,
    /// Check again after this long (zero: at once, behind other keys),
    /// without counting a failure.
    Requeue(Duration),
    /// The object is gone: forget the key (no resync, no timer).
    Gone,
}

/// A controller's reconcile, as the runner calls it.
pub trait Reconcile: Send + Sync + 'static {
    type Key: Clone + Eq + Hash + Display + Send + Sync + 'static;
    type Error: Display + Send + Sync + 'static;

    /// The task name in metrics and logs (`sync-worker`, `init-worker`).
    const TASK: &'static str;

    /// What the controller serves (a PublishedResource, an InitTarget).
    fn name(&self) -> &str;

    fn reconcile<'a>(&'a self, key: &'a Self::Key) -> BoxFuture<'a, Result<Outcome, Self::Error>>;

    /// The error a reconcile that panicked becomes (a bug, reported and
    /// retried like any error).
    fn panicked(&self, message: String) -> Self::Error;

    /// After every reconcile: report it (conditions, Events, metrics, logs).
    fn record<'a>(
        &'a self,
        key: &'a Self::Key,
        result: &'a Result<Outcome, Self::Error>,
        took: Duration,
    ) -> BoxFuture<'a, ()>;

    /// When a key that is [`Outcome::Done`] is checked again; `None`: only
    /// when something enqueues it.
    fn resync_period(&self) -> Option<Duration>;

    /// The queue's length, before each reconcile (for a metric).
    fn queued(&self, _depth: usize) {}
}

/// Start `n` supervised workers on `queue` into `tasks`; they end when the
/// queue shuts down or `cancel` fires.
pub fn spawn_workers<R: Reconcile>(
    tasks: &mut JoinSet<()>,
    n: usize,
    ctx: Arc<R>,
    queue: Arc<WorkQueue<R::Key>>,
    cancel: CancellationToken,
) {
    for _ in 0..n {
        let (ctx, queue) = (ctx.clone(), queue.clone());
        tasks.spawn(crate::controller::supervise::supervised(
            R::TASK,
            ctx.name().to_string(),
            cancel.clone(),
            move || work(ctx.clone(), queue.clone()),
        ));
    }
}

/// One worker: take keys off the queue and reconcile them, until the queue
/// shuts down.
pub async fn work<R: Reconcile>(ctx: Arc<R>, queue: Arc<WorkQueue<R::Key>>) {
    use futures::FutureExt;
    while let Some(key) = queue.get().await {
        ctx.queued(queue.len());
        let started = std::time::Instant::now();
        // A panic in a reconcile is a bug; it fails this key (reported like
        // any error) instead of taking the worker and the key down with it.
        let result = match std::panic::AssertUnwindSafe(ctx.reconcile(&key))
            .catch_unwind()
            .await
        {
            Ok(r) => r,
            Err(panic) => Err(ctx.panicked(crate::controller::supervise::panic_message(&panic))),
        };
        ctx.record(&key, &result, started.elapsed()).await;
        match result {
            Ok(Outcome::Done) => {
                queue.forget(&key);
                if let Some(period) = ctx.resync_period() {
                    queue.add_after(key.clone(), period);
                }
            }
            Ok(Outcome::Gone) => queue.remove(&key),
            Ok(Outcome::Requeue(d)) => {
                queue.forget(&key);
                if d.is_zero() {
                    queue.done(&key);
                    queue.add_low(key);
                    continue;
                }
                queue.add_after(key.clone(), d);
            }
            Err(_) => queue.add_rate_limited(key.clone()),
        }
        queue.done(&key);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    const RESYNC: Duration = Duration::from_secs(300);

    /// Panics on the first reconcile of `bad`, fails the second, then
    /// succeeds; counts calls per key.
    #[derive(Default)]
    struct Flaky {
        calls: Mutex<std::collections::HashMap<String, usize>>,
        recorded_errors: AtomicUsize,
    }

    impl Reconcile for Flaky {
        type Key = String;
        type Error = String;
        const TASK: &'static str = "test-worker";
        fn name(&self) -> &str {
            "flaky"
        }
        fn reconcile<'a>(&'a self, key: &'a String) -> BoxFuture<'a, Result<Outcome, String>> {
            Box::pin(async move {
                let n = {
                    let mut c = self.calls.lock().unwrap();
                    let n = c.entry(key.clone()).or_default();
                    *n += 1;
                    *n
                };
                if key == "bad" {
                    match n {
                        1 => panic!("mutation output was not an object"),
                        2 => return Err("no shard serves workspace abc".into()),
                        _ => {}
                    }
                }
                Ok(Outcome::Done)
            })
        }
        fn panicked(&self, message: String) -> String {
            format!("panicked: {message}")
        }
        fn record<'a>(
            &'a self,
            _key: &'a String,
            result: &'a Result<Outcome, String>,
            _took: Duration,
        ) -> BoxFuture<'a, ()> {
            Box::pin(async move {
                if result.is_err() {
                    self.recorded_errors.fetch_add(1, Ordering::SeqCst);
                }
            })
        }
        fn resync_period(&self) -> Option<Duration> {
            Some(RESYNC)
        }
    }

    /// Objects that exist until removed from the set: reconciles of an
    /// existing key are `Done`, of a removed one `Gone`.
    #[derive(Default)]
    struct Objects {
        existing: Mutex<std::collections::HashSet<String>>,
        reconciles: AtomicUsize,
    }

    impl Reconcile for Objects {
        type Key = String;
        type Error = String;
        const TASK: &'static str = "test-worker";
        fn name(&self) -> &str {
            "objects"
        }
        fn reconcile<'a>(&'a self, key: &'a String) -> BoxFuture<'a, Result<Outcome, String>> {
            Box::pin(async move {
                self.reconciles.fetch_add(1, Ordering::SeqCst);
                if self.existing.lock().unwrap().contains(key) {
                    Ok(Outcome::Done)
                } else {
                    Ok(Outcome::Gone)
                }
            })
        }
        fn panicked(&self, message: String) -> String {
            message
        }
        fn record<'a>(
            &'a self,
            _: &'a String,
            _: &'a Result<Outcome, String>,
            _: Duration,
        ) -> BoxFuture<'a, ()> {
            Box::pin(async {})
        }
        fn resync_period(&self) -> Option<Duration> {
            Some(RESYNC)
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
        let queue: Arc<WorkQueue<String>> =
            WorkQueue::new(Duration::from_millis(5), Duration::from_secs(30));
        let ctx = Arc::new(Objects::default());
        let cancel = CancellationToken::new();
        let mut tasks = JoinSet::new();
        spawn_workers(&mut tasks, 4, ctx.clone(), queue.clone(), cancel.clone());
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
            queue.add(name);
        }
        wait_for(N).await;
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert_eq!(queue.scheduled_len(), N, "one resync entry per object");
        assert_eq!(queue.timers_len(), N, "one timer per object");

        ctx.existing.lock().unwrap().clear();
        for i in 0..N {
            queue.add(format!("obj-{i}"));
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
        cancel.cancel();
        tasks.abort_all();
    }

    /// A reconcile that panics neither kills the workers nor loses the key:
    /// the panic is reported as an error and the key retried until it
    /// succeeds, while other keys keep flowing.
    #[tokio::test]
    async fn a_panicking_reconcile_is_reported_and_retried() {
        let queue: Arc<WorkQueue<String>> =
            WorkQueue::new(Duration::from_millis(1), Duration::from_millis(5));
        let ctx = Arc::new(Flaky::default());
        let cancel = CancellationToken::new();
        let mut tasks = JoinSet::new();
        spawn_workers(&mut tasks, 4, ctx.clone(), queue.clone(), cancel.clone());
        queue.add("bad".to_string());
        for i in 0..20 {
            queue.add(format!("good-{i}"));
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
        cancel.cancel();
        tasks.abort_all();
    }
}
