//! Where plugin calls run when the caller is async: on tokio's blocking
//! pool, a bounded number at once.
//!
//! A call of a Rust guest takes up to its timeout (100 ms by default) and a
//! Python or JS guest's instantiation milliseconds: run on an async worker
//! thread, that starves lease renewal and watches. [`CallPool::run`] moves
//! the call to the blocking pool and holds one permit of a semaphore shared
//! by every caller of the [`Runtime`](crate::Runtime) for as long as the
//! call runs, so plugin calls together never occupy more threads than the
//! machine has cores.

use std::any::Any;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;

use crate::failure::{FailureKind, PluginFailure};
use crate::plugin::Plugin;

/// Runs plugin calls on the blocking pool, at most [`CallPool::size`] at
/// once. Cheap to clone; clones share the permits.
#[derive(Clone)]
pub struct CallPool {
    permits: Arc<Semaphore>,
    size: usize,
    observer: Arc<OnceLock<CallObserver>>,
}

/// Told about every call that ends: the plugin's name, how long the call
/// ran (not counting the wait for a permit) and its failure class, if any.
/// The host turns this into metrics.
pub type CallObserver = Box<dyn Fn(&str, Duration, Option<FailureKind>) + Send + Sync>;

impl std::fmt::Debug for CallPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallPool")
            .field("size", &self.size)
            .field("in_use", &self.in_use())
            .finish()
    }
}

/// The number of cores this process may use (at least 1).
pub fn available_cores() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

impl CallPool {
    /// A pool letting `size` calls run at once (at least 1).
    pub fn new(size: usize) -> CallPool {
        let size = size.clamp(1, Semaphore::MAX_PERMITS);
        CallPool {
            permits: Arc::new(Semaphore::new(size)),
            size,
            observer: Arc::default(),
        }
    }

    /// Install the observer of every call through this pool and its clones
    /// (once; later calls return false).
    pub fn observe(&self, observer: CallObserver) -> bool {
        self.observer.set(observer).is_ok()
    }

    /// How many calls may run at once.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Calls running right now.
    pub fn in_use(&self) -> usize {
        self.size - self.permits.available_permits()
    }

    /// Run `f` (one or more calls of `plugin`) on the blocking pool once a
    /// permit is free. Must be called within a Tokio runtime.
    ///
    /// The permit is held by the blocking task, so a caller that stops
    /// waiting (its future dropped) does not free it before the call ends.
    /// A panic while `f` runs comes back as a [`FailureKind::Crash`] of
    /// `plugin`, never as a panic of the caller.
    pub async fn run<R, F>(&self, plugin: &Arc<Plugin>, f: F) -> Result<R, PluginFailure>
    where
        R: Send + 'static,
        F: FnOnce(&Plugin) -> Result<R, PluginFailure> + Send + 'static,
    {
        let p = plugin.clone();
        self.spawn(plugin.name(), plugin.digest(), move || f(&p))
            .await
    }

    /// [`CallPool::run`] for a call that is not tied to one loaded plugin;
    /// failures of the task itself name `name` and `digest`.
    pub(crate) async fn spawn<R, F>(
        &self,
        name: &str,
        digest: &str,
        f: F,
    ) -> Result<R, PluginFailure>
    where
        R: Send + 'static,
        F: FnOnce() -> Result<R, PluginFailure> + Send + 'static,
    {
        let fail = |message: String| PluginFailure::new(name, digest, FailureKind::Crash, message);
        // The semaphore is never closed; the error arm is for completeness.
        let permit = self
            .permits
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| fail("the plugin call pool is closed".into()))?;
        let task = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            let start = Instant::now();
            let result = f();
            (result, start.elapsed())
        });
        let (result, took) = match task.await {
            Ok(done) => done,
            Err(e) if e.is_panic() => (
                Err(fail(format!(
                    "the host panicked while running the plugin call: {}",
                    panic_message(e.into_panic().as_ref())
                ))),
                Duration::ZERO,
            ),
            Err(e) => (
                Err(fail(format!(
                    "the plugin call was cancelled (is the agent shutting down?): {e}"
                ))),
                Duration::ZERO,
            ),
        };
        if let Some(observe) = self.observer.get() {
            observe(name, took, result.as_ref().err().map(|e| e.kind));
        }
        result
    }
}

fn panic_message(payload: &(dyn Any + Send)) -> &str {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s
    } else {
        "(no message)"
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::*;

    /// However many calls are started at once, no more than the pool's
    /// size run at the same time: counted inside the calls themselves.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn permits_bound_concurrent_calls() {
        for size in [1, 3] {
            let pool = CallPool::new(size);
            let running = Arc::new(AtomicUsize::new(0));
            let peak = Arc::new(AtomicUsize::new(0));
            let calls: Vec<_> = (0..24)
                .map(|i| {
                    let (pool, running, peak) = (pool.clone(), running.clone(), peak.clone());
                    tokio::spawn(async move {
                        pool.spawn("counter", "", move || {
                            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                            peak.fetch_max(now, Ordering::SeqCst);
                            // Stay inside long enough for others to pile up.
                            std::thread::sleep(Duration::from_millis(2));
                            running.fetch_sub(1, Ordering::SeqCst);
                            Ok(i)
                        })
                        .await
                    })
                })
                .collect();
            let mut done = 0;
            for (i, c) in calls.into_iter().enumerate() {
                assert_eq!(c.await.unwrap().unwrap(), i);
                done += 1;
            }
            assert_eq!(done, 24);
            let peak = peak.load(Ordering::SeqCst);
            assert!(peak >= 1 && peak <= size, "peak {peak} with {size} permits");
            assert_eq!(pool.in_use(), 0);
        }
    }

    /// A panic on the blocking thread is a classified failure naming the
    /// plugin, and its permit is given back.
    #[tokio::test]
    async fn a_panicking_call_is_a_crash_of_the_plugin() {
        let pool = CallPool::new(1);
        let e = pool
            .spawn("naming", "sha256:00", || -> Result<(), PluginFailure> {
                panic!("boom")
            })
            .await
            .unwrap_err();
        assert_eq!(e.kind, FailureKind::Crash);
        assert_eq!(e.plugin, "naming");
        assert!(
            e.message.contains("host panicked") && e.message.contains("boom"),
            "{e}"
        );
        assert_eq!(pool.in_use(), 0);
        assert_eq!(pool.spawn("naming", "", || Ok(7)).await.unwrap(), 7);
    }

    /// A caller that gives up waiting does not free the permit early.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_abandoned_call_keeps_its_permit_until_it_ends() {
        let pool = CallPool::new(1);
        let (started_tx, started_rx) = std::sync::mpsc::channel();
        let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
        let p = pool.clone();
        let caller = tokio::spawn(async move {
            p.spawn("slow", "", move || {
                started_tx.send(()).unwrap();
                release_rx.recv().unwrap();
                Ok(())
            })
            .await
        });
        tokio::task::spawn_blocking(move || started_rx.recv().unwrap())
            .await
            .unwrap();
        caller.abort();
        let _ = caller.await;
        assert_eq!(pool.in_use(), 1);
        release_tx.send(()).unwrap();
        // The next call gets the permit once the abandoned one is done.
        assert_eq!(pool.spawn("next", "", || Ok(1)).await.unwrap(), 1);
        assert_eq!(pool.in_use(), 0);
    }
}
