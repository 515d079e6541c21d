//! A work queue in the style of client-go's: a key is queued at most once,
//! never processed by two workers at the same time (a key added while in
//! flight is re-queued when the worker finishes), can be added after a delay,
//! and failing keys back off exponentially (jittered: [`crate::backoff`]).
//!
//! A key has at most one pending delayed entry and one timer: a later
//! `add_after` keeps the earlier deadline (or moves the one timer earlier),
//! an immediate `add` cancels it, and [`WorkQueue::remove`] drops everything
//! of a key whose object is gone. All timers live in one
//! [`DelayQueue`] (a timer wheel) driven by one task, so memory is bounded
//! by the keys that exist, not by how often they were scheduled.

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::Hash;
use std::sync::{Arc, Mutex, Weak};
use std::task::Poll;
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::time::DelayQueue;
use tokio_util::time::delay_queue;

pub struct WorkQueue<K> {
    inner: Mutex<Inner<K>>,
    notify: Notify,
    base_delay: Duration,
    max_delay: Duration,
}

struct Inner<K> {
    queue: VecDeque<K>,
    queued: HashSet<K>,
    in_flight: HashSet<K>,
    /// Keys added while in flight; re-queued on `done`.
    dirty: HashSet<K>,
    failures: HashMap<K, u32>,
    /// The one pending delayed add per key: its deadline and its timer.
    scheduled: HashMap<K, (Instant, delay_queue::Key)>,
    timers: DelayQueue<K>,
    /// The timer task runs (started on the first delayed add).
    driver: bool,
    shut_down: bool,
}

impl<K: Clone + Eq + Hash + Send + Sync + 'static> WorkQueue<K> {
    pub fn new(base_delay: Duration, max_delay: Duration) -> Arc<Self> {
        Arc::new(WorkQueue {
            inner: Mutex::new(Inner {
                queue: VecDeque::new(),
                queued: HashSet::new(),
                in_flight: HashSet::new(),
                dirty: HashSet::new(),
                failures: HashMap::new(),
                scheduled: HashMap::new(),
                timers: DelayQueue::new(),
                driver: false,
                shut_down: false,
            }),
            notify: Notify::new(),
            base_delay,
            max_delay,
        })
    }

    pub fn add(&self, key: K) {
        let mut g = self.lock();
        if g.shut_down {
            return;
        }
        // Handled now: a pending delayed add would only repeat it.
        if let Some((_, t)) = g.scheduled.remove(&key) {
            g.timers.remove(&t);
        }
        if g.in_flight.contains(&key) {
            g.dirty.insert(key);
            return;
        }
        if g.queued.insert(key.clone()) {
            g.queue.push_back(key);
            drop(g);
            self.notify.notify_one();
        }
    }

    /// Add `key` after `delay`, unless an earlier add is already pending.
    pub fn add_after(self: &Arc<Self>, key: K, delay: Duration) {
        let deadline = Instant::now() + delay;
        let mut g = self.lock();
        if g.shut_down {
            return;
        }
        let inner = &mut *g;
        match inner.scheduled.get_mut(&key) {
            Some((at, _)) if *at <= deadline => {}
            Some((at, t)) => {
                *at = deadline;
                inner.timers.reset_at(t, deadline);
            }
            None => {
                let t = inner.timers.insert_at(key.clone(), deadline);
                inner.scheduled.insert(key, (deadline, t));
            }
        }
        if !g.driver {
            g.driver = true;
            // Holds only a Weak: it ends when the queue is shut down or
            // dropped, so it needs no owner.
            tokio::spawn(drive_timers(Arc::downgrade(self)));
        }
    }

    /// Forget everything about `key` (its object is gone): its pending
    /// delayed add, its timer and its failure count. An add that is already
    /// queued or in flight still runs.
    pub fn remove(&self, key: &K) {
        let mut g = self.lock();
        if let Some((_, t)) = g.scheduled.remove(key) {
            g.timers.remove(&t);
        }
        g.failures.remove(key);
    }

    /// Keys with a pending delayed add.
    pub fn scheduled_len(&self) -> usize {
        self.lock().scheduled.len()
    }

    /// Timers pending (one per scheduled key).
    pub fn timers_len(&self) -> usize {
        self.lock().timers.len()
    }

    /// Keys with a failure count (backing off).
    pub fn failures_len(&self) -> usize {
        self.lock().failures.len()
    }

    /// The queue's state; a panic elsewhere cannot leave it half-updated
    /// (every critical section is a few map operations), so poisoning is
    /// ignored rather than spreading the panic to every worker.
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner<K>> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Requeue a failed key with exponential backoff.
    pub fn add_rate_limited(self: &Arc<Self>, key: K) {
        let n = {
            let mut g = self.lock();
            let n = g.failures.entry(key.clone()).or_insert(0);
            *n += 1;
            *n
        };
        self.add_after(
            key,
            crate::backoff::nth_delay(self.base_delay, self.max_delay, n),
        );
    }

    /// Forget a key's failure history (after a success).
    pub fn forget(&self, key: &K) {
        self.lock().failures.remove(key);
    }

    /// Wait for the next key; `None` after shutdown.
    pub async fn get(&self) -> Option<K> {
        loop {
            let notified = self.notify.notified();
            {
                let mut g = self.lock();
                if g.shut_down {
                    return None;
                }
                if let Some(k) = g.queue.pop_front() {
                    g.queued.remove(&k);
                    g.in_flight.insert(k.clone());
                    return Some(k);
                }
            }
            notified.await;
        }
    }

    /// Mark a key finished; re-queues it if it was added meanwhile.
    pub fn done(&self, key: &K) {
        let mut g = self.lock();
        g.in_flight.remove(key);
        if g.dirty.remove(key) && g.queued.insert(key.clone()) {
            g.queue.push_back(key.clone());
            drop(g);
            self.notify.notify_one();
        }
    }

    pub fn is_shut_down(&self) -> bool {
        self.lock().shut_down
    }

    pub fn shut_down(&self) {
        let mut g = self.lock();
        g.shut_down = true;
        g.scheduled.clear();
        g.timers.clear();
        drop(g);
        self.notify.notify_waiters();
    }

    pub fn len(&self) -> usize {
        self.lock().queue.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The one timer task of a queue: moves due keys from the timer wheel into
/// the queue. Ends when the queue is shut down or dropped.
async fn drive_timers<K: Clone + Eq + Hash + Send + Sync + 'static>(q: Weak<WorkQueue<K>>) {
    loop {
        let due = std::future::poll_fn(|cx| {
            let Some(q) = q.upgrade() else {
                return Poll::Ready(None);
            };
            let mut g = q.lock();
            if g.shut_down {
                return Poll::Ready(None);
            }
            match g.timers.poll_expired(cx) {
                Poll::Ready(Some(expired)) => {
                    let key = expired.into_inner();
                    g.scheduled.remove(&key);
                    Poll::Ready(Some(key))
                }
                // Empty: the queue keeps our waker and wakes it on insert.
                Poll::Ready(None) | Poll::Pending => Poll::Pending,
            }
        })
        .await;
        let (Some(key), Some(q)) = (due, q.upgrade()) else {
            return;
        };
        q.add(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn dedupes_and_serialises_a_key() {
        let q = WorkQueue::new(Duration::from_millis(1), Duration::from_millis(10));
        q.add("a");
        q.add("a");
        q.add("b");
        assert_eq!(q.len(), 2);
        let k = q.get().await.unwrap();
        assert_eq!(k, "a");
        // Added while in flight: not handed out twice concurrently.
        q.add("a");
        assert_eq!(q.get().await.unwrap(), "b");
        assert!(q.is_empty());
        q.done(&"a");
        assert_eq!(q.get().await.unwrap(), "a");
    }

    #[tokio::test]
    async fn rate_limited_requeue_arrives() {
        let q = WorkQueue::new(Duration::from_millis(1), Duration::from_millis(5));
        q.add_rate_limited("x");
        let k = tokio::time::timeout(Duration::from_secs(5), q.get())
            .await
            .unwrap();
        assert_eq!(k, Some("x"));
    }

    /// The controller's loop: every reconcile schedules a resync. Ten
    /// events, then five quiet minutes with a 30 s resync: 10 reconciles for
    /// the events and about 10 resyncs, not one timer chain per event.
    #[tokio::test(start_paused = true)]
    async fn resyncs_do_not_multiply_with_events() {
        const RESYNC: Duration = Duration::from_secs(30);
        let q: Arc<WorkQueue<&str>> =
            WorkQueue::new(Duration::from_millis(5), Duration::from_secs(1));
        let count = Arc::new(std::sync::atomic::AtomicU32::new(0));
        let worker = {
            let (q, count) = (q.clone(), count.clone());
            tokio::spawn(async move {
                while let Some(k) = q.get().await {
                    count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    q.forget(&k);
                    q.add_after(k, RESYNC);
                    q.done(&k);
                }
            })
        };
        for _ in 0..10 {
            q.add("obj");
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        tokio::time::sleep(Duration::from_secs(300)).await;
        q.shut_down();
        worker.await.unwrap();
        let n = count.load(std::sync::atomic::Ordering::SeqCst);
        assert!((18..=22).contains(&n), "{n} reconciles, expected about 20");
        assert!(q.scheduled_len() <= 1);
    }

    #[tokio::test(start_paused = true)]
    async fn an_earlier_delay_wins_and_add_cancels_the_pending_one() {
        let q: Arc<WorkQueue<&str>> =
            WorkQueue::new(Duration::from_millis(5), Duration::from_secs(1));
        q.add_after("k", Duration::from_secs(60));
        q.add_after("k", Duration::from_secs(5));
        q.add_after("k", Duration::from_secs(30));
        assert_eq!(q.scheduled_len(), 1);
        tokio::time::sleep(Duration::from_secs(6)).await;
        assert_eq!(q.len(), 1, "due after the earliest delay");
        assert_eq!(q.get().await, Some("k"));
        q.done(&"k");
        q.add_after("k", Duration::from_secs(10));
        q.add("k");
        assert_eq!(
            q.scheduled_len(),
            0,
            "an immediate add replaces the delayed one"
        );
        assert_eq!(q.get().await, Some("k"));
        q.done(&"k");
        tokio::time::sleep(Duration::from_secs(20)).await;
        assert!(q.is_empty(), "the cancelled timer does not fire");
    }

    #[tokio::test]
    async fn shutdown_wakes_waiters() {
        let q: Arc<WorkQueue<&str>> =
            WorkQueue::new(Duration::from_millis(1), Duration::from_millis(5));
        let q2 = q.clone();
        let h = tokio::spawn(async move { q2.get().await });
        tokio::task::yield_now().await;
        q.shut_down();
        assert_eq!(h.await.unwrap(), None);
    }
}
