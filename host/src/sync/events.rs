//! What a consumer sees in their own workspace about their objects: Events
//! with upstream's reasons, written through the APIExport's virtual
//! workspace (the export claims `events`), and what a provider sees on the
//! PublishedResource: which objects keep failing.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::api::{DynamicObject, PostParams};
use tracing::debug;

use crate::controller::queue::WorkQueue;
use crate::controller::store::ObjectKey;

/// Upstream's event reasons on kcp objects.
pub const OBJECT_ACCEPTED: &str = "ObjectAccepted";
pub const OBJECT_PLACED: &str = "ObjectPlaced";
pub const OBJECT_SYNCED: &str = "ObjectSynced";
pub const OBJECT_STATUS_SYNCED: &str = "ObjectStatusSynced";
pub const OBJECT_CLEANUP: &str = "ObjectCleanup";
pub const OBJECT_DELETED: &str = "ObjectDeleted";
pub const RECONCILING_ERROR: &str = "ReconcilingError";
/// syncweave: the copy waits for other finalizers on the kcp object.
pub const WAITING_FOR_FINALIZERS: &str = "WaitingForFinalizers";
/// syncweave: it waited `waitForOtherFinalizers.timeout` and goes on.
pub const FINALIZER_WAIT_TIMED_OUT: &str = "FinalizerWaitTimedOut";

/// A core/v1 Event about `obj` (its namespace, or `default` for a
/// cluster-scoped object, where `kubectl describe` looks).
pub fn event_for(
    obj: &DynamicObject,
    agent_name: &str,
    warning: bool,
    reason: &str,
    message: &str,
) -> Event {
    let name = obj.metadata.name.clone().unwrap_or_default();
    let namespace = obj
        .metadata
        .namespace
        .clone()
        .unwrap_or_else(|| "default".into());
    let now = Time(Timestamp::now());
    let types = obj.types.clone().unwrap_or_default();
    Event {
        metadata: ObjectMeta {
            generate_name: Some(format!("{name}.")),
            namespace: Some(namespace),
            ..Default::default()
        },
        involved_object: ObjectReference {
            api_version: Some(types.api_version),
            kind: Some(types.kind),
            name: Some(name),
            namespace: obj.metadata.namespace.clone(),
            uid: obj.metadata.uid.clone(),
            resource_version: obj.metadata.resource_version.clone(),
            ..Default::default()
        },
        reason: Some(reason.to_string()),
        // The API server caps messages; keep well under it.
        message: Some(message.chars().take(1024).collect()),
        type_: Some(if warning { "Warning" } else { "Normal" }.to_string()),
        count: Some(1),
        first_timestamp: Some(now.clone()),
        last_timestamp: Some(now),
        source: Some(EventSource {
            component: Some(format!("syncweave/{agent_name}")),
            host: None,
        }),
        reporting_component: Some("syncweave".into()),
        reporting_instance: Some(agent_name.to_string()),
        ..Default::default()
    }
}

/// Post `event` with `client` (the virtual-workspace client of the object's
/// cluster). Events are best effort: a failure is logged, never returned.
pub async fn post(client: kube::Client, event: Event) {
    let ns = event.metadata.namespace.clone().unwrap_or_default();
    let reason = event.reason.clone().unwrap_or_default();
    if let Err(e) = Api::<Event>::namespaced(client, &ns)
        .create(&PostParams::default(), &event)
        .await
    {
        debug!(%reason, error = %e, "could not record an event in kcp (does the APIBinding accept the events claim?)");
    }
}

/// How long the same Event about the same object is not posted again
/// (client-go's spam filter keeps a similar window).
const REPEAT_WINDOW: std::time::Duration = std::time::Duration::from_secs(600);
/// Events waiting to be posted; beyond this they are dropped (and counted):
/// Events are best effort and must not pile up during an outage.
const BACKLOG: usize = 1024;
/// Distinct recent Events remembered for de-duplication.
const REMEMBERED: usize = 10_000;
/// Queued keys in a sync's work queue from which that sync has a backlog
/// (an initial sync, a resync, a burst) and Events give way to it.
const BACKLOG_KEYS: usize = 32;
/// While a sync has a backlog, at most one Event per this interval: kcp's
/// writes go to the objects first, and the Events follow once it drains.
const BACKLOG_PACE: std::time::Duration = std::time::Duration::from_millis(200);

/// The sync work queues Events give way to (weak: a sync that stops is
/// forgotten).
type Backlogs = Arc<Mutex<Vec<std::sync::Weak<WorkQueue<ObjectKey>>>>>;

/// How long to wait before the next Event: [`BACKLOG_PACE`] while any
/// queue in `backlogs` holds [`BACKLOG_KEYS`] or more keys, else none.
fn pace(backlogs: &Backlogs) -> Option<std::time::Duration> {
    let mut busy = false;
    // One pass: forget the queues of syncs that stopped, look at the rest.
    backlogs
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .retain(|q| match q.upgrade() {
            Some(q) => {
                busy |= q.len() >= BACKLOG_KEYS;
                true
            }
            None => false,
        });
    busy.then_some(BACKLOG_PACE)
}

/// Posts the agent's Events about consumers' objects (one recorder for every
/// PublishedResource): the same Event (object, reason,
/// message) is posted once per [`REPEAT_WINDOW`], through one bounded queue
/// and one task, so 10 000 failing objects retried every 30 s cost 10 000
/// Events per window, not 20 000 a minute, and no task per Event.
///
/// Events give way to the sync: while a sync's queue has a backlog (see
/// [`Recorder::give_way_to`]) they are posted at most one per
/// [`BACKLOG_PACE`], so that on saturated servers the objects' own writes
/// (finalizer, copy, state) are not slowed by Events about them; beyond the
/// bounded queue they are dropped and counted.
pub struct Recorder {
    tx: tokio::sync::mpsc::Sender<(kube::Client, Event)>,
    rx: Mutex<Option<tokio::sync::mpsc::Receiver<(kube::Client, Event)>>>,
    recent: Mutex<std::collections::HashMap<u64, tokio::time::Instant>>,
    dropped: std::sync::atomic::AtomicU64,
    backlogs: Backlogs,
}

impl Default for Recorder {
    fn default() -> Self {
        let (tx, rx) = tokio::sync::mpsc::channel(BACKLOG);
        Recorder {
            tx,
            rx: Mutex::new(Some(rx)),
            recent: Default::default(),
            dropped: Default::default(),
            backlogs: Default::default(),
        }
    }
}

impl Recorder {
    /// Queue `event` for posting with `client`, unless it is a Warning
    /// posted the same within the window (a failure retried with backoff).
    /// Normal Events mark a change each and are always posted. Returns
    /// whether it was queued.
    pub fn record(&self, client: kube::Client, event: Event) -> bool {
        if event.type_.as_deref() != Some("Warning") {
            return self.send(client, event);
        }
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (
            &event.involved_object.uid,
            &event.involved_object.namespace,
            &event.involved_object.name,
            &event.reason,
            &event.message,
        )
            .hash(&mut h);
        let id = h.finish();
        let now = tokio::time::Instant::now();
        {
            let mut recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
            if recent
                .get(&id)
                .is_some_and(|at| now.duration_since(*at) < REPEAT_WINDOW)
            {
                return false;
            }
            if recent.len() >= REMEMBERED {
                recent.retain(|_, at| now.duration_since(*at) < REPEAT_WINDOW);
                if recent.len() >= REMEMBERED {
                    // All recent: forget the lot rather than grow.
                    recent.clear();
                }
            }
            recent.insert(id, now);
        }
        self.send(client, event)
    }

    fn send(&self, client: kube::Client, event: Event) -> bool {
        if self.tx.try_send((client, event)).is_err() {
            self.dropped
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            crate::ops::metrics::METRICS.events_dropped.inc();
            return false;
        }
        true
    }

    /// Pace Events while `queue` (a sync's work queue) has a backlog.
    pub fn give_way_to(&self, queue: &Arc<WorkQueue<ObjectKey>>) {
        self.backlogs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Arc::downgrade(queue));
    }

    /// Events dropped because the backlog was full.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Post queued Events until the recorder is dropped; run once, by the
    /// publisher, for the life of the agent.
    pub async fn run(self: std::sync::Arc<Self>) {
        let Some(mut rx) = self.rx.lock().unwrap_or_else(|e| e.into_inner()).take() else {
            return;
        };
        // Only the queues: holding the recorder would hold its sender, and
        // the channel would never close.
        let backlogs = self.backlogs.clone();
        drop(self);
        while let Some((client, event)) = rx.recv().await {
            if let Some(wait) = pace(&backlogs) {
                tokio::time::sleep(wait).await;
            }
            post(client, event).await;
        }
    }
}

/// Objects of one PublishedResource whose last reconcile failed, with the
/// error. The publisher turns a non-empty set into `Ready=False`.
pub struct Failures {
    failing: Mutex<Failing>,
    /// Called when what the condition shows changes (the set turns empty or
    /// non-empty, the count or the headline cause changes), so the
    /// condition follows at once: the publisher enqueues its resource.
    changed: Box<dyn Fn() + Send + Sync>,
}

impl std::fmt::Debug for Failures {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Failures")
            .field("failing", &self.lock().errors.len())
            .finish()
    }
}

#[derive(Debug, Default)]
struct Failing {
    errors: BTreeMap<ObjectKey, String>,
    /// How many failing objects share each cause ([`cause_of`]), kept with
    /// `errors` so that a failure is classified without a scan of them all
    /// (an outage fails every object, each retry included).
    causes: HashMap<String, usize>,
}

impl Failing {
    /// Set `key`'s error; the error it had before, and how many failing
    /// objects (this one included) now share the new error's cause.
    fn insert(&mut self, key: &ObjectKey, error: String) -> (Option<String>, usize) {
        let cause = cause_of(key, &error);
        *self.causes.entry(cause.clone()).or_default() += 1;
        let previous = self.errors.insert(key.clone(), error);
        if let Some(p) = &previous {
            self.forget_cause(key, p);
        }
        (previous, self.causes.get(&cause).copied().unwrap_or(0))
    }

    fn remove(&mut self, key: &ObjectKey) -> Option<String> {
        let previous = self.errors.remove(key)?;
        self.forget_cause(key, &previous);
        Some(previous)
    }

    fn forget_cause(&mut self, key: &ObjectKey, error: &str) {
        let cause = cause_of(key, error);
        if let Some(n) = self.causes.get_mut(&cause) {
            *n -= 1;
            if *n == 0 {
                self.causes.remove(&cause);
            }
        }
    }
}

impl Failures {
    pub fn new(changed: impl Fn() + Send + Sync + 'static) -> Arc<Failures> {
        Arc::new(Failures {
            failing: Mutex::default(),
            changed: Box::new(changed),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Failing> {
        self.failing.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Record a failure; `true` when it is news worth a log line: the
    /// object was not failing or fails for another reason now, and no other
    /// failing object has that cause (during an outage every object fails
    /// the same way: the first says it, the per-minute summary counts them).
    pub fn failed(&self, key: &ObjectKey, error: String) -> bool {
        let mut f = self.lock();
        let before = headline(&f.errors);
        let (previous, sharing) = f.insert(key, error.clone());
        if headline(&f.errors) != before {
            (self.changed)();
        }
        // No other failing object has this cause.
        previous.is_none_or(|p| p != error) && sharing == 1
    }

    /// Record a success; `true` when the object was failing until now and
    /// few others still are (a line per object then; after an outage the
    /// summary says when nothing fails any more).
    pub fn succeeded(&self, key: &ObjectKey) -> bool {
        let mut f = self.lock();
        if !f.errors.contains_key(key) {
            return false;
        }
        let before = headline(&f.errors);
        let was_failing = f.errors.len();
        f.remove(key);
        if headline(&f.errors) != before {
            (self.changed)();
        }
        was_failing <= LOG_EACH_RECOVERY_UP_TO
    }

    /// The failing objects grouped by cause (the error with the object's
    /// own name taken out), largest group first, at most `max` groups:
    /// what a periodic log line summarises.
    pub fn by_cause(&self, max: usize) -> (usize, Vec<(usize, String)>) {
        let f = self.lock();
        let mut groups: Vec<(usize, String)> =
            f.causes.iter().map(|(c, n)| (*n, c.clone())).collect();
        groups.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        groups.truncate(max);
        (f.errors.len(), groups)
    }

    pub fn len(&self) -> usize {
        self.lock().errors.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `None` when nothing fails, else a message for the condition: how many
    /// objects fail and the first one's error.
    pub fn summary(&self) -> Option<String> {
        summary(&self.lock().errors)
    }
}

/// While more objects than this fail, recoveries are not logged one by
/// one.
const LOG_EACH_RECOVERY_UP_TO: usize = 10;

/// An error with the object's own name taken out: what objects failing
/// for the same reason share.
fn cause_of(key: &ObjectKey, error: &str) -> String {
    error.replace(&key.to_string(), "<object>")
}

/// What the condition shows of the failing set: the owner is woken whenever
/// this changes (a new cause, not only the set turning non-empty), so the
/// condition never keeps an outdated message until the next periodic pass.
fn headline(f: &BTreeMap<ObjectKey, String>) -> Option<(usize, ObjectKey, String)> {
    f.iter()
        .next()
        .map(|(k, e)| (f.len(), k.clone(), e.clone()))
}

fn summary(f: &BTreeMap<ObjectKey, String>) -> Option<String> {
    let (n, key, error) = headline(f)?;
    Some(match n {
        1 => format!("1 object is failing: {key}: {error}"),
        n => format!("{n} objects are failing, e.g. {key}: {error}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::sync::Notify;

    fn key(name: &str) -> ObjectKey {
        crate::testing::object_key("c", Some("ns"), name)
    }

    #[test]
    fn events_give_way_to_a_sync_with_a_backlog() {
        let recorder = Recorder::default();
        let queue = WorkQueue::new(
            std::time::Duration::from_millis(1),
            std::time::Duration::from_millis(2),
        );
        recorder.give_way_to(&queue);
        // A few queued keys (a burst a few workers take at once): no pace.
        for i in 0..BACKLOG_KEYS - 1 {
            queue.add(key(&format!("o{i}")));
        }
        assert_eq!(pace(&recorder.backlogs), None);
        // A backlog (an initial sync): one Event per BACKLOG_PACE.
        queue.add_low(key("last"));
        assert_eq!(pace(&recorder.backlogs), Some(BACKLOG_PACE));
        // A sync that stopped is forgotten.
        drop(queue);
        assert_eq!(pace(&recorder.backlogs), None);
        assert!(recorder.backlogs.lock().unwrap().is_empty());
    }

    #[test]
    fn only_news_is_worth_a_log_line() {
        let f = Failures::new(|| {});
        assert!(
            f.failed(&key("a"), "kcp: connection refused".into()),
            "first failure"
        );
        assert!(
            !f.failed(&key("a"), "kcp: connection refused".into()),
            "a repeat"
        );
        assert!(f.failed(&key("a"), "conflict".into()), "another cause");
        assert!(f.succeeded(&key("a")), "a recovery");
        assert!(!f.succeeded(&key("a")), "not failing: nothing to say");
    }

    /// An outage: 25 objects fail for the same reason (their own names in
    /// the message): one line. When they recover, a line each only for the
    /// last ten; the summary says when nothing fails any more.
    #[test]
    fn an_outage_is_one_line_not_one_per_object() {
        let f = Failures::new(|| {});
        let news: Vec<bool> = (0..25)
            .map(|i| {
                let k = key(&format!("o{i}"));
                f.failed(&k, format!("creating the copy of {k}: connection refused"))
            })
            .collect();
        assert_eq!(news.iter().filter(|n| **n).count(), 1, "{news:?}");
        assert!(news[0]);
        assert!(
            f.failed(&key("o3"), "conflict".into()),
            "a new cause is news"
        );
        let logged = (0..25)
            .filter(|i| f.succeeded(&key(&format!("o{i}"))))
            .count();
        assert_eq!(logged, LOG_EACH_RECOVERY_UP_TO);
        assert!(f.is_empty());
    }

    #[test]
    fn failures_group_by_cause() {
        let f = Failures::new(|| {});
        for n in ["a", "b", "c"] {
            let k = key(n);
            f.failed(
                &k,
                format!("patching service copy of {k}: connection refused"),
            );
        }
        f.failed(&key("d"), "mutating: bad output".into());
        let (n, groups) = f.by_cause(5);
        assert_eq!(n, 4);
        assert_eq!(
            groups,
            vec![
                (
                    3,
                    "patching service copy of <object>: connection refused".into()
                ),
                (1, "mutating: bad output".into())
            ]
        );
    }

    /// The condition follows a new cause at once: the CI failure this guards
    /// against was an object that first failed with a conflict and then with
    /// "does not settle", while the condition kept the conflict.
    #[tokio::test]
    async fn a_new_cause_wakes_the_owner() {
        let wake = Arc::new(Notify::new());
        let f = Failures::new({
            let wake = wake.clone();
            move || wake.notify_one()
        });
        let woken = || async {
            tokio::time::timeout(std::time::Duration::from_millis(50), wake.notified())
                .await
                .is_ok()
        };
        f.failed(&key("a"), "conflict".into());
        assert!(woken().await, "first failure");
        f.failed(&key("a"), "conflict".into());
        assert!(!woken().await, "a repeat changes nothing shown");
        f.failed(&key("a"), "does not settle".into());
        assert!(woken().await, "a new cause");
        f.failed(&key("b"), "other".into());
        assert!(woken().await, "another failing object changes the count");
        f.succeeded(&key("b"));
        assert!(woken().await, "a recovery");
        assert!(!f.succeeded(&key("b")));
        assert!(!woken().await, "not failing: nothing changed");
    }

    #[test]
    fn failures_summarise_and_clear() {
        let f = Failures::new(|| {});
        assert_eq!(f.summary(), None);
        f.failed(&key("a"), "boom".into());
        assert_eq!(f.summary().unwrap(), "1 object is failing: c|ns/a: boom");
        f.failed(&key("b"), "bang".into());
        assert_eq!(
            f.summary().unwrap(),
            "2 objects are failing, e.g. c|ns/a: boom"
        );
        f.succeeded(&key("a"));
        f.succeeded(&key("b"));
        assert_eq!(f.summary(), None);
    }

    #[tokio::test(start_paused = true)]
    async fn the_recorder_posts_an_event_once_per_window() {
        let client = {
            // A client that is never used (nothing runs the recorder here).
            let cfg = kube::Config::new("http://127.0.0.1:9".parse().unwrap());
            kube::Client::try_from(cfg).unwrap()
        };
        let r = Recorder::default();
        let mut obj = DynamicObject::new(
            "x",
            &kube::api::ApiResource::from_gvk(&kube::api::GroupVersionKind::gvk(
                "example.com",
                "v1",
                "CronTab",
            )),
        );
        obj.metadata.uid = Some("u1".into());
        let ev = |m: &str| event_for(&obj, "agent", true, RECONCILING_ERROR, m);
        // Normal Events (a change each) are never de-duplicated.
        let normal = event_for(&obj, "agent", false, OBJECT_SYNCED, "synced");
        assert!(r.record(client.clone(), normal.clone()));
        assert!(r.record(client.clone(), normal));
        assert!(r.record(client.clone(), ev("boom")));
        assert!(!r.record(client.clone(), ev("boom")), "a repeat is dropped");
        assert!(
            r.record(client.clone(), ev("bang")),
            "another message is new"
        );
        tokio::time::advance(REPEAT_WINDOW).await;
        assert!(
            r.record(client.clone(), ev("boom")),
            "posted again after the window"
        );
        // The backlog is bounded: beyond it Events are dropped, not queued,
        // and counted where an operator sees them.
        let exported = crate::ops::metrics::METRICS.events_dropped.get();
        for i in 0..BACKLOG {
            r.record(client.clone(), ev(&format!("m{i}")));
        }
        assert!(r.dropped() > 0);
        assert!(crate::ops::metrics::METRICS.events_dropped.get() - exported >= r.dropped());
    }

    #[test]
    fn events_name_the_object_and_default_the_namespace() {
        let mut obj = DynamicObject::new(
            "x",
            &kube::api::ApiResource::from_gvk(&kube::api::GroupVersionKind::gvk(
                "example.com",
                "v1",
                "CronTab",
            )),
        );
        obj.metadata.uid = Some("u1".into());
        let e = event_for(&obj, "agent", true, RECONCILING_ERROR, &"m".repeat(5000));
        assert_eq!(e.metadata.namespace.as_deref(), Some("default"));
        assert_eq!(e.involved_object.kind.as_deref(), Some("CronTab"));
        assert_eq!(e.involved_object.namespace, None);
        assert_eq!(e.type_.as_deref(), Some("Warning"));
        assert_eq!(e.message.unwrap().len(), 1024);
    }
}
