//! Supervision for the agent's long-running loops (watches, workers,
//! per-PublishedResource and per-InitTarget controllers): a loop that panics
//! or returns while it should still run is logged, counted
//! (`syncweave_task_restarts_total{task,reason}`) and started again after a
//! jittered backoff, instead of leaving a cache or a queue silently dead.
//!
//! A loop is given as a factory (`make`) because a future cannot be
//! restarted; each restart builds a fresh one from the same inputs.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::time::Duration;

use futures::FutureExt;
use tokio_util::sync::CancellationToken;
use tracing::{error, warn};

use crate::controller::backoff::Backoff;

/// The first restart waits this long; repeated restarts back off to
/// [`MAX_RESTART_DELAY`].
const FIRST_RESTART: Duration = Duration::from_millis(500);
const MAX_RESTART_DELAY: Duration = Duration::from_secs(30);
/// How long a cancelled loop may take to finish by itself.
const STOP_GRACE: Duration = Duration::from_secs(2);
/// A loop that ran this long before failing starts over from the first
/// delay.
const HEALTHY_AFTER: Duration = Duration::from_secs(60);

/// Run `make()` until `cancel` fires, restarting it whenever it panics or
/// returns. `task` names the loop in logs and metrics, `scope` the object it
/// works for (a PublishedResource, an InitTarget; may be empty).
pub async fn supervised<F, Fut>(
    task: &'static str,
    scope: String,
    cancel: CancellationToken,
    make: F,
) where
    F: Fn() -> Fut,
    Fut: Future<Output = ()>,
{
    let mut backoff = Backoff::new(FIRST_RESTART, MAX_RESTART_DELAY);
    loop {
        let started = tokio::time::Instant::now();
        let run = AssertUnwindSafe(make()).catch_unwind();
        tokio::pin!(run);
        let ended = tokio::select! {
            r = &mut run => r,
            _ = cancel.cancelled() => {
                // A loop that watches `cancel` itself finishes its own
                // shutdown (stops its workers, logs); one that does not is
                // dropped after the grace.
                let _ = tokio::time::timeout(STOP_GRACE, run).await;
                return;
            }
        };
        if cancel.is_cancelled() {
            return;
        }
        if started.elapsed() >= HEALTHY_AFTER {
            backoff.reset();
        }
        let retry_in = backoff.next_delay();
        let reason = match ended {
            Ok(()) => {
                warn!(
                    task,
                    scope,
                    ?retry_in,
                    "a loop that should run until shutdown ended; restarting it"
                );
                "ended"
            }
            Err(panic) => {
                let message = panic_message(&panic);
                error!(task, scope, panic = %message, ?retry_in, "a loop panicked (a bug: please report it); restarting it");
                "panic"
            }
        };
        crate::ops::metrics::METRICS.task_restarted(task, reason);
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = tokio::time::sleep(retry_in) => {}
        }
    }
}

/// The message of a caught panic.
pub fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};

    /// A loop that panics twice and then runs is restarted twice, counted,
    /// and stops when cancelled. Without supervision the first panic would
    /// have ended it for good.
    #[tokio::test(start_paused = true)]
    async fn a_panicking_loop_is_restarted_until_cancelled() {
        let runs = Arc::new(AtomicU32::new(0));
        let cancel = CancellationToken::new();
        let before = restarts("test-loop", "panic");
        let task = tokio::spawn(supervised("test-loop", "pr".into(), cancel.clone(), {
            let runs = runs.clone();
            move || {
                let runs = runs.clone();
                async move {
                    if runs.fetch_add(1, Ordering::SeqCst) < 2 {
                        panic!("boom");
                    }
                    std::future::pending::<()>().await
                }
            }
        }));
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert_eq!(runs.load(Ordering::SeqCst), 3);
        assert_eq!(restarts("test-loop", "panic") - before, 2);
        cancel.cancel();
        tokio::time::timeout(STOP_GRACE + Duration::from_secs(1), task)
            .await
            .expect("ends on cancel")
            .unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn a_loop_that_returns_is_restarted_with_backoff() {
        let runs = Arc::new(AtomicU32::new(0));
        let cancel = CancellationToken::new();
        let task = tokio::spawn(supervised("ending-loop", String::new(), cancel.clone(), {
            let runs = runs.clone();
            move || {
                runs.fetch_add(1, Ordering::SeqCst);
                async {}
            }
        }));
        // Restarts wait 0.25–0.5 s, 0.5–1 s, 1–2 s, 2–4 s …: in 4 s, 3 to 5 runs,
        // not thousands.
        tokio::time::sleep(Duration::from_secs(4)).await;
        let n = runs.load(Ordering::SeqCst);
        assert!((3..=6).contains(&n), "{n} runs in 4 s");
        cancel.cancel();
        task.await.unwrap();
    }

    fn restarts(task: &'static str, reason: &'static str) -> u64 {
        crate::ops::metrics::METRICS
            .task_restarts
            .get_or_create(&crate::ops::metrics::TaskLabels { task, reason })
            .get()
    }
}
