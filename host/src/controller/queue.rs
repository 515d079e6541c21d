//! A work queue in the style of client-go's: a key is queued at most once,
//! never processed by two workers at the same time (a key added while in
//! flight is re-queued when the worker finishes), can be added after a delay,
//! and failing keys back off exponentially (jittered: [`crate::controller::backoff`]).
//!
//! Keys have a [`Priority`], as in controller-runtime's priority queue: a
//! watch event of an object that is new or changed (someone just acted) is
//! [`Priority::High`] and goes ahead of the initial list, resyncs, requeues
//! and retries ([`Priority::Low`]), which after a start can be tens of
//! thousands of keys. Low keys are not starved: a waiting low key ages with
//! every high key handed out before it, and after [`AGE_LIMIT`] of them the
//! oldest low key goes next, so under a flood of events the backlog still
//! gets one key in `AGE_LIMIT + 1`.
//!
//! A key has at most one pending delayed entry and one timer: a later
//! `add_after` keeps the earlier deadline (or moves the one timer earlier),
//! an immediate `add` cancels it, and [`WorkQueue::remove`] drops everything
//! of a key whose object is gone. All timers live in one
//! [`DelayQueue`] (a timer wheel) driven by one task, so memory is bounded
//! by the keys that exist, not by how often they were scheduled.

use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;
use std::hash::Hash;
use std::sync::{Arc, Mutex, Weak};
use std::task::Poll;
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::time::DelayQueue;
use tokio_util::time::delay_queue;

/// How urgent a key is (see the module's documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Priority {
    /// The initial list, resyncs, requeues, retries, bulk re-checks.
    Low,
    /// A watch event: an object appeared, changed or went.
    High,
}

impl fmt::Display for Priority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Priority::Low => "low",
            Priority::High => "high",
        })
    }
}

/// High keys handed out while a low key waits before that key goes next.
pub const AGE_LIMIT: u32 = 8;

pub struct WorkQueue<K> {
    inner: Mutex<Inner<K>>,
    notify: Notify,
    base_delay: Duration,
    max_delay: Duration,
}

struct Inner<K> {
    /// Queued keys by priority, oldest first, each with the sequence number
    /// of its entry. A key raised from low to high leaves a stale entry in
    /// `low` (its number no longer matches `queued`), skipped when reached.
    high: VecDeque<(K, u64)>,
    low: VecDeque<(K, u64)>,
    /// Every queued key: its priority and the number of its live entry.
    queued: HashMap<K, (Priority, u64)>,
    next_seq: u64,
    /// Stale entries in `low`; compacted when they outnumber live ones.
    stale: usize,
    /// High keys handed out in a row while low keys waited.
    aged: u32,
    in_flight: HashSet<K>,
    /// Keys added while in flight, with the highest priority asked;
    /// re-queued on `done`.
    dirty: HashMap<K, Priority>,
    failures: HashMap<K, u32>,
    /// The one pending delayed add per key: its deadline and its timer.
    scheduled: HashMap<K, (Instant, delay_queue::Key)>,
    timers: DelayQueue<K>,
    /// The timer task runs (started on the first delayed add).
    driver: bool,
    shut_down: bool,
    /// Every key at [`Priority::Low`]: one line in arrival order
    /// ([`WorkQueue::one_lane`]).
    one_lane: bool,
}

impl<K: Clone + Eq + Hash + Send + Sync + 'static> WorkQueue<K> {
    pub fn new(base_delay: Duration, max_delay: Duration) -> Arc<Self> {
        Arc::new(WorkQueue {
            inner: Mutex::new(Inner {
                high: VecDeque::new(),
                low: VecDeque::new(),
                queued: HashMap::new(),
                next_seq: 0,
                stale: 0,
                aged: 0,
                in_flight: HashSet::new(),
                dirty: HashMap::new(),
                failures: HashMap::new(),
                scheduled: HashMap::new(),
                timers: DelayQueue::new(),
                driver: false,
                shut_down: false,
                one_lane: false,
            }),
            notify: Notify::new(),
            base_delay,
            max_delay,
        })
    }

    /// From now on, queue every key in one line in arrival order, whatever
    /// its priority: the queue as it was before priorities, kept so that
    /// what the priority costs can be measured (`--sync-priority=false`).
    pub fn one_lane(&self) {
        self.lock().one_lane = true;
    }

    /// Queue `key` at [`Priority::High`]: a watch event.
    pub fn add(&self, key: K) {
        self.add_with(key, Priority::High)
    }

    /// Queue `key` at [`Priority::Low`]: listed, resynced, re-checked.
    pub fn add_low(&self, key: K) {
        self.add_with(key, Priority::Low)
    }

    /// Queue `key` at `priority`; a key queued lower is raised, one queued
    /// as high or higher stays where it is.
    pub fn add_with(&self, key: K, priority: Priority) {
        let mut g = self.lock();
        if g.shut_down {
            return;
        }
        // Handled now: a pending delayed add would only repeat it.
        if let Some((_, t)) = g.scheduled.remove(&key) {
            g.timers.remove(&t);
        }
        if g.in_flight.contains(&key) {
            let p = g.dirty.entry(key).or_insert(priority);
            *p = (*p).max(priority);
            return;
        }
        if g.enqueue(key, priority) {
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

    /// Queue now, at [`Priority::Low`], every failed key that waits out
    /// its backoff (the server they failed on answers again); their failure
    /// counts stay, so a key that still fails backs off further. Returns
    /// how many were queued.
    pub fn retry_failed_now(&self) -> usize {
        let mut g = self.lock();
        if g.shut_down {
            return 0;
        }
        let waiting: Vec<K> = g
            .failures
            .keys()
            .filter(|k| g.scheduled.contains_key(*k))
            .cloned()
            .collect();
        let mut queued = 0;
        for key in waiting {
            if let Some((_, t)) = g.scheduled.remove(&key) {
                g.timers.remove(&t);
            }
            if !g.in_flight.contains(&key) && g.enqueue(key, Priority::Low) {
                queued += 1;
            }
        }
        drop(g);
        if queued > 0 {
            self.notify.notify_waiters();
        }
        queued
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
            crate::controller::backoff::nth_delay(self.base_delay, self.max_delay, n),
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
                if let Some(k) = g.pop() {
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
        if let Some(priority) = g.dirty.remove(key)
            && g.enqueue(key.clone(), priority)
        {
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
        self.lock().queued.len()
    }

    /// Queued keys at each priority: (high, low).
    pub fn len_by_priority(&self) -> (usize, usize) {
        let g = self.lock();
        let high = g
            .queued
            .values()
            .filter(|(p, _)| *p == Priority::High)
            .count();
        (high, g.queued.len() - high)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<K: Clone + Eq + Hash> Inner<K> {
    /// Put `key` in line at `priority`; `true` when it was not queued yet.
    fn enqueue(&mut self, key: K, priority: Priority) -> bool {
        let priority = if self.one_lane {
            Priority::Low
        } else {
            priority
        };
        let seq = self.next_seq;
        match self.queued.get(&key) {
            Some((p, _)) if *p >= priority => return false,
            Some(_) => {
                // Raised: its low entry goes stale.
                self.stale += 1;
            }
            None => {}
        }
        self.next_seq += 1;
        let fresh = self.queued.insert(key.clone(), (priority, seq)).is_none();
        match priority {
            Priority::High => self.high.push_back((key, seq)),
            Priority::Low => self.low.push_back((key, seq)),
        }
        if self.stale > 64 && self.stale > self.low.len() / 2 {
            let queued = &self.queued;
            self.low
                .retain(|(k, s)| queued.get(k).is_some_and(|(_, live)| live == s));
            self.stale = 0;
        }
        fresh
    }

    /// The next key to hand out: high keys first, unless a low key has
    /// waited through [`AGE_LIMIT`] of them.
    fn pop(&mut self) -> Option<K> {
        loop {
            self.skip_stale_low();
            let take_low = !self.low.is_empty() && (self.high.is_empty() || self.aged >= AGE_LIMIT);
            let (k, seq) = if take_low {
                self.aged = 0;
                self.low.pop_front()?
            } else {
                let e = self.high.pop_front()?;
                if !self.low.is_empty() {
                    self.aged += 1;
                }
                e
            };
            if self.queued.get(&k).is_some_and(|(_, live)| *live == seq) {
                self.queued.remove(&k);
                return Some(k);
            }
        }
    }

    /// Drop stale entries at the front of `low`, so that "a low key waits"
    /// means a live one.
    fn skip_stale_low(&mut self) {
        while let Some((k, seq)) = self.low.front() {
            if self.queued.get(k).is_some_and(|(_, live)| live == seq) {
                return;
            }
            self.low.pop_front();
            self.stale = self.stale.saturating_sub(1);
        }
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
        // Resyncs, requeues and retries: behind watch events.
        q.add_low(key);
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

    /// After an outage, failed keys wait out backoffs that grew while the
    /// server was down (up to the cap); when it answers again they are
    /// queued at once, keeping their failure counts, and a key that is
    /// only scheduled (a resync, not a failure) keeps its schedule.
    #[tokio::test(start_paused = true)]
    async fn failed_keys_are_retried_at_once_when_asked() {
        let q: Arc<WorkQueue<&str>> =
            WorkQueue::new(Duration::from_secs(1), Duration::from_secs(30));
        for _ in 0..6 {
            q.add_rate_limited("failing");
        }
        q.add_after("resync", Duration::from_secs(300));
        assert!(q.is_empty(), "both wait");
        assert_eq!(q.retry_failed_now(), 1);
        assert_eq!(q.get().await, Some("failing"));
        assert_eq!(q.scheduled_len(), 1, "the resync keeps its schedule");
        assert_eq!(q.failures_len(), 1, "the failure count stays");
        assert_eq!(q.retry_failed_now(), 0, "in flight: nothing to queue");
        q.done(&"failing");
        // Without the call it would have waited up to 30 s.
        assert!(q.is_empty());
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

    fn drain<K: Clone + Eq + Hash + Send + Sync + 'static>(q: &WorkQueue<K>) -> Vec<K> {
        let mut out = Vec::new();
        while !q.is_empty() {
            let k = futures::executor::block_on(q.get()).unwrap();
            q.done(&k);
            out.push(k);
        }
        out
    }

    /// A watch event goes ahead of a backlog of listed keys; a listed key
    /// that an event touches is raised, not queued twice.
    #[tokio::test]
    async fn events_go_ahead_of_the_backlog_and_raise_listed_keys() {
        let q = WorkQueue::new(Duration::from_millis(1), Duration::from_millis(10));
        for k in ["l1", "l2", "l3"] {
            q.add_low(k);
        }
        q.add("new");
        q.add("l3");
        assert_eq!(q.len(), 4);
        assert_eq!(q.len_by_priority(), (2, 2));
        assert_eq!(drain(&q), ["new", "l3", "l1", "l2"]);
        // A high key stays high when listed again.
        q.add("x");
        q.add_low("x");
        q.add_low("y");
        assert_eq!(drain(&q), ["x", "y"]);
    }

    /// With one lane (`--sync-priority=false`) keys go in arrival order,
    /// whatever their priority.
    #[tokio::test]
    async fn one_lane_keeps_arrival_order() {
        let q = WorkQueue::new(Duration::from_millis(1), Duration::from_millis(10));
        q.one_lane();
        for k in ["l1", "l2", "l3"] {
            q.add_low(k);
        }
        q.add("new");
        q.add("l3");
        assert_eq!(q.len_by_priority(), (0, 4));
        assert_eq!(drain(&q), ["l1", "l2", "l3", "new"]);
    }

    /// Under a steady flood of events the backlog still moves: the oldest
    /// low key goes after every AGE_LIMIT high ones.
    #[tokio::test]
    async fn a_low_key_ages_and_is_not_starved() {
        let q = WorkQueue::new(Duration::from_millis(1), Duration::from_millis(10));
        for i in 0..3 {
            q.add_low(format!("low{i}"));
        }
        for i in 0..20 {
            q.add(format!("high{i}"));
        }
        let order = drain(&q);
        let pos = |k: &str| order.iter().position(|x| x == k).unwrap();
        let limit = AGE_LIMIT as usize;
        assert_eq!(pos("low0"), limit, "{order:?}");
        assert_eq!(pos("low1"), 2 * limit + 1, "{order:?}");
        // The events ran out first: the last low key follows them.
        assert_eq!(pos("low2"), 22, "{order:?}");
        assert_eq!(order.len(), 23);
    }

    /// A key added while in flight keeps the highest priority asked for;
    /// a key whose timer fires (resync, retry) is low.
    #[tokio::test(start_paused = true)]
    async fn in_flight_re_adds_keep_their_priority_and_timers_are_low() {
        let q: Arc<WorkQueue<&str>> =
            WorkQueue::new(Duration::from_millis(1), Duration::from_millis(10));
        q.add("a");
        let a = q.get().await.unwrap();
        q.add_low("a");
        q.add("a");
        q.add_low("b");
        q.done(&a);
        assert_eq!(q.len_by_priority(), (1, 1));
        assert_eq!(drain(&q), ["a", "b"]);
        q.add_after("resync", Duration::from_secs(1));
        tokio::time::sleep(Duration::from_secs(2)).await;
        q.add("event");
        assert_eq!(q.len_by_priority(), (1, 1));
        assert_eq!(drain(&q), ["event", "resync"]);
    }

    /// Raising many keys leaves stale entries behind; they are compacted,
    /// never handed out, and memory stays bounded by the queued keys.
    #[tokio::test]
    async fn raised_keys_leave_no_stale_entries_behind() {
        let q = WorkQueue::new(Duration::from_millis(1), Duration::from_millis(10));
        for round in 0..5 {
            for i in 0..1000 {
                q.add_low(i);
            }
            for i in 0..1000 {
                q.add(i);
            }
            let g = q.lock();
            assert!(
                g.low.len() <= 1000,
                "round {round}: {} low entries",
                g.low.len()
            );
            drop(g);
            let out = drain(&q);
            assert_eq!(out.len(), 1000);
            assert_eq!(out, (0..1000).collect::<Vec<_>>());
            // What stale entries are left is below the compaction threshold.
            assert!(q.lock().low.len() <= 64 && q.lock().high.is_empty());
        }
    }
}
