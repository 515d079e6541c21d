//! A work queue in the style of client-go's: a key is queued at most once,
//! never processed by two workers at the same time (a key added while in
//! flight is re-queued when the worker finishes), can be added after a delay,
//! and failing keys back off exponentially.

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::Hash;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;

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
                shut_down: false,
            }),
            notify: Notify::new(),
            base_delay,
            max_delay,
        })
    }

    pub fn add(&self, key: K) {
        let mut g = self.inner.lock().expect("queue poisoned");
        if g.shut_down {
            return;
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

    pub fn add_after(self: &Arc<Self>, key: K, delay: Duration) {
        let q = Arc::clone(self);
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            q.add(key);
        });
    }

    /// Requeue a failed key with exponential backoff.
    pub fn add_rate_limited(self: &Arc<Self>, key: K) {
        let n = {
            let mut g = self.inner.lock().expect("queue poisoned");
            let n = g.failures.entry(key.clone()).or_insert(0);
            *n += 1;
            *n
        };
        let delay = self
            .base_delay
            .saturating_mul(1u32 << (n - 1).min(16))
            .min(self.max_delay);
        self.add_after(key, delay);
    }

    /// Forget a key's failure history (after a success).
    pub fn forget(&self, key: &K) {
        self.inner
            .lock()
            .expect("queue poisoned")
            .failures
            .remove(key);
    }

    /// Wait for the next key; `None` after shutdown.
    pub async fn get(&self) -> Option<K> {
        loop {
            let notified = self.notify.notified();
            {
                let mut g = self.inner.lock().expect("queue poisoned");
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
        let mut g = self.inner.lock().expect("queue poisoned");
        g.in_flight.remove(key);
        if g.dirty.remove(key) && g.queued.insert(key.clone()) {
            g.queue.push_back(key.clone());
            drop(g);
            self.notify.notify_one();
        }
    }

    pub fn shut_down(&self) {
        self.inner.lock().expect("queue poisoned").shut_down = true;
        self.notify.notify_waiters();
    }

    pub fn len(&self) -> usize {
        self.inner.lock().expect("queue poisoned").queue.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
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
