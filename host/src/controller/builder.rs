//! A controller, wired once: a reconciler ([`Reconcile`]), the queue that
//! schedules its keys, the loops that feed the queue (watches), the workers
//! and the shutdown. Each controller of the agent (sync, related objects,
//! publishing, WasmPlugins, InitTargets, init) declares only what it
//! watches and how it reconciles; this is kube-runtime's `Controller`
//! builder with keys of our own (kcp objects are keyed by logical cluster).
//!
//! ```ignore
//! Controller::new(reconciler, queue, cancel)
//!     .workers(4)
//!     .feed("kcp-watch", move |queue| kcp_watch(ctx.clone(), queue))
//!     .start_when(caches_synced(ctx.clone()))
//!     .run()
//!     .await;
//! ```
//!
//! Every feed runs under [`supervise`](super::supervise) (restarted when it
//! panics or ends) unless it owns something that cannot be made twice (a
//! reflector's writer): [`Controller::feed_once`]. At shutdown the queue is
//! shut down first, so no worker starts another reconcile, then every loop
//! is stopped and joined.

use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::queue::WorkQueue;
use super::runner::{Reconcile, spawn_workers};

pub struct Controller<R: Reconcile> {
    reconciler: Arc<R>,
    queue: Arc<WorkQueue<R::Key>>,
    cancel: CancellationToken,
    workers: usize,
    tasks: JoinSet<()>,
    start_when: Option<BoxFuture<'static, ()>>,
    on_stop: Vec<Box<dyn FnOnce() + Send>>,
}

impl<R: Reconcile> Controller<R> {
    /// A controller of `reconciler` over `queue`, running until `cancel`.
    /// One worker unless [`Controller::workers`] says otherwise.
    pub fn new(
        reconciler: Arc<R>,
        queue: Arc<WorkQueue<R::Key>>,
        cancel: CancellationToken,
    ) -> Self {
        Controller {
            reconciler,
            queue,
            cancel,
            workers: 1,
            tasks: JoinSet::new(),
            start_when: None,
            on_stop: Vec::new(),
        }
    }

    /// How many keys are reconciled at once (never the same key twice).
    pub fn workers(mut self, n: usize) -> Self {
        self.workers = n.max(1);
        self
    }

    /// The queue, for feeds set up outside the builder.
    pub fn queue(&self) -> &Arc<WorkQueue<R::Key>> {
        &self.queue
    }

    /// A loop that feeds the queue, supervised: restarted (after a
    /// backoff) when it panics or ends. `task` names it in logs and metrics.
    pub fn feed<F, Fut>(mut self, task: &'static str, make: F) -> Self
    where
        F: Fn(Arc<WorkQueue<R::Key>>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let queue = self.queue.clone();
        self.tasks.spawn(super::supervise::supervised(
            task,
            self.reconciler.name().to_string(),
            self.cancel.clone(),
            move || make(queue.clone()),
        ));
        self
    }

    /// A loop that runs once, for the controller's life: it owns something
    /// that cannot be made twice (a reflector's writer, a receiver) and
    /// retries by itself.
    pub fn feed_once(mut self, fut: impl Future<Output = ()> + Send + 'static) -> Self {
        self.tasks.spawn(fut);
        self
    }

    /// The workers start once `fut` resolves (the caches have listed once,
    /// so the first reconciles see the objects): until then keys collect in
    /// the queue.
    pub fn start_when(mut self, fut: impl Future<Output = ()> + Send + 'static) -> Self {
        self.start_when = Some(Box::pin(fut));
        self
    }

    /// Run after the workers and feeds have stopped.
    pub fn on_stop(mut self, f: impl FnOnce() + Send + 'static) -> Self {
        self.on_stop.push(Box::new(f));
        self
    }

    /// Start the workers (after [`Controller::start_when`]) and run until
    /// cancelled; then stop everything this controller started.
    pub async fn run(mut self) {
        let started = match self.start_when.take() {
            Some(ready) => tokio::select! {
                _ = ready => true,
                _ = self.cancel.cancelled() => false,
            },
            None => true,
        };
        if started {
            spawn_workers(
                &mut self.tasks,
                self.workers,
                self.reconciler.clone(),
                self.queue.clone(),
                self.cancel.clone(),
            );
            self.cancel.cancelled().await;
        }
        self.queue.shut_down();
        self.tasks.abort_all();
        while self.tasks.join_next().await.is_some() {}
        for f in self.on_stop {
            f();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::time::Duration;

    use super::super::runner::Outcome;
    use super::*;

    #[derive(Default)]
    struct Counter {
        seen: Mutex<Vec<u32>>,
    }

    impl Reconcile for Counter {
        type Key = u32;
        type Error = String;
        const TASK: &'static str = "test-worker";
        fn name(&self) -> &str {
            "counter"
        }
        fn reconcile<'a>(&'a self, key: &'a u32) -> BoxFuture<'a, Result<Outcome, String>> {
            Box::pin(async move {
                self.seen.lock().unwrap().push(*key);
                Ok(Outcome::Done)
            })
        }
        fn panicked(&self, message: String) -> String {
            message
        }
        fn record<'a>(
            &'a self,
            _: &'a u32,
            _: &'a Result<Outcome, String>,
            _: Duration,
        ) -> BoxFuture<'a, ()> {
            Box::pin(async {})
        }
        fn resync_period(&self) -> Option<Duration> {
            None
        }
    }

    /// Feeds run, a feed that panics is restarted, workers wait for
    /// `start_when`, and cancelling stops every loop and shuts the queue.
    #[tokio::test(start_paused = true)]
    async fn feeds_workers_start_and_stop_are_wired_once() {
        let counter = Arc::new(Counter::default());
        let queue: Arc<WorkQueue<u32>> =
            WorkQueue::new(Duration::from_millis(1), Duration::from_millis(10));
        let cancel = CancellationToken::new();
        let starts = Arc::new(AtomicUsize::new(0));
        let (ready_tx, ready_rx) = tokio::sync::oneshot::channel::<()>();
        let stopped = Arc::new(AtomicBool::new(false));
        let ctl = Controller::new(counter.clone(), queue.clone(), cancel.clone())
            .workers(2)
            .feed("test-feed", {
                let starts = starts.clone();
                move |q| {
                    let n = starts.fetch_add(1, Ordering::SeqCst);
                    async move {
                        q.add(n as u32);
                        if n == 0 {
                            panic!("first run of the feed fails");
                        }
                        std::future::pending::<()>().await
                    }
                }
            })
            .start_when(async move {
                let _ = ready_rx.await;
            })
            .on_stop({
                let stopped = stopped.clone();
                move || stopped.store(true, Ordering::SeqCst)
            });
        let run = tokio::spawn(ctl.run());
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert_eq!(
            starts.load(Ordering::SeqCst),
            2,
            "the panicked feed was restarted"
        );
        assert!(
            counter.seen.lock().unwrap().is_empty(),
            "no reconcile before start_when"
        );
        ready_tx.send(()).unwrap();
        tokio::time::sleep(Duration::from_secs(1)).await;
        let mut seen = counter.seen.lock().unwrap().clone();
        seen.sort();
        assert_eq!(seen, [0, 1]);
        cancel.cancel();
        run.await.unwrap();
        assert!(queue.is_shut_down());
        assert!(stopped.load(Ordering::SeqCst));
    }
}
