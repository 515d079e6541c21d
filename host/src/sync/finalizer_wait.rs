//! Which copies wait for other finalizers on their kcp object
//! (`spec.lifecycle.waitForOtherFinalizers`), for the PublishedResource's
//! `WaitingForFinalizers` condition: the Events say it per object, the
//! condition says it where a provider looks first.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::controller::store::ObjectKey;

/// The condition's type (with a partitioned endpoint slice,
/// `<slice>/WaitingForFinalizers`).
pub const CONDITION: &str = "WaitingForFinalizers";

/// The copies waiting now, and the last wait that timed out.
pub struct FinalizerWaits {
    timeout: Duration,
    inner: Mutex<Waits>,
    /// Called when what the condition shows changes, so that it follows at
    /// once (the publisher enqueues its resource, paced).
    changed: Box<dyn Fn() + Send + Sync>,
}

#[derive(Default)]
struct Waits {
    /// The other finalizers each waiting kcp object has.
    waiting: BTreeMap<ObjectKey, Vec<String>>,
    /// Waits that ended with the timeout since the agent started, and the
    /// last one's object and finalizers.
    timed_out: usize,
    last_timeout: Option<(ObjectKey, Vec<String>)>,
}

impl std::fmt::Debug for FinalizerWaits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FinalizerWaits")
            .field("waiting", &self.lock().waiting.len())
            .finish()
    }
}

impl FinalizerWaits {
    pub fn new(timeout: Duration, changed: impl Fn() + Send + Sync + 'static) -> Arc<Self> {
        Arc::new(FinalizerWaits {
            timeout,
            inner: Mutex::default(),
            changed: Box::new(changed),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Waits> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `key`'s copy waits for `finalizers`; `true` the first time (when the
    /// wait is news worth an Event).
    pub fn waiting(&self, key: &ObjectKey, finalizers: &[&str]) -> bool {
        let finalizers: Vec<String> = finalizers.iter().map(|f| f.to_string()).collect();
        let previous = self.lock().waiting.insert(key.clone(), finalizers.clone());
        if previous.as_ref() != Some(&finalizers) {
            (self.changed)();
        }
        previous.is_none()
    }

    /// `key` no longer waits (the other finalizers went, or the object
    /// and its copy are gone); `true` when it did.
    pub fn ended(&self, key: &ObjectKey) -> bool {
        let was = self.lock().waiting.remove(key).is_some();
        if was {
            (self.changed)();
        }
        was
    }

    /// `key`'s wait ended with the timeout: its copy is deleted anyway.
    /// `true` when this is news (not a later pass of the same deletion,
    /// which checks again while the copy goes).
    pub fn timed_out(&self, key: &ObjectKey, finalizers: &[&str]) -> bool {
        {
            let mut w = self.lock();
            let was_waiting = w.waiting.remove(key).is_some();
            let repeat = w.last_timeout.as_ref().is_some_and(|(k, _)| k == key);
            if repeat && !was_waiting {
                return false;
            }
            w.timed_out += 1;
            w.last_timeout = Some((
                key.clone(),
                finalizers.iter().map(|f| f.to_string()).collect(),
            ));
        }
        (self.changed)();
        true
    }

    /// The condition: `True` while copies wait, with how many and an
    /// example; `False` otherwise, saying whether a wait timed out.
    pub fn condition(&self) -> (&'static str, &'static str, String) {
        let w = self.lock();
        let timeout = self.timeout.as_secs();
        if let Some((key, finalizers)) = w.waiting.iter().next() {
            let n = w.waiting.len();
            let what = if n == 1 {
                "1 copy waits".to_string()
            } else {
                format!("{n} copies wait")
            };
            return (
                "True",
                "Waiting",
                format!(
                    "{what} (up to {timeout}s, spec.lifecycle.waitForOtherFinalizers) for other \
                     finalizers on their kcp object before being deleted, e.g. {key}: {}",
                    finalizers.join(", ")
                ),
            );
        }
        match &w.last_timeout {
            Some((key, finalizers)) => (
                "False",
                "TimedOut",
                format!(
                    "no copy waits for other finalizers now; {} wait(s) timed out after {timeout}s \
                     and their copies were deleted anyway, the last {key} (finalizers {})",
                    w.timed_out,
                    finalizers.join(", ")
                ),
            ),
            None => (
                "False",
                "NoneWaiting",
                "no copy waits for other finalizers on its kcp object".to_string(),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn key(name: &str) -> ObjectKey {
        crate::testing::object_key("c", Some("ns"), name)
    }

    #[test]
    fn the_condition_follows_the_waits() {
        let woken = Arc::new(AtomicUsize::new(0));
        let w = FinalizerWaits::new(Duration::from_secs(20), {
            let woken = woken.clone();
            move || {
                woken.fetch_add(1, Ordering::SeqCst);
            }
        });
        assert_eq!(w.condition().1, "NoneWaiting");

        assert!(w.waiting(&key("a"), &["example.com/backup"]), "news");
        assert!(!w.waiting(&key("a"), &["example.com/backup"]), "a repeat");
        assert_eq!(woken.load(Ordering::SeqCst), 1, "a repeat wakes nobody");
        let (status, reason, message) = w.condition();
        assert_eq!((status, reason), ("True", "Waiting"));
        assert!(
            message.starts_with("1 copy waits (up to 20s")
                && message.contains("c|ns/a")
                && message.contains("example.com/backup"),
            "{message}"
        );

        w.waiting(&key("b"), &["x.io/f"]);
        assert!(w.condition().2.starts_with("2 copies wait"));
        assert!(w.ended(&key("a")));
        assert!(!w.ended(&key("a")), "ended twice");
        assert!(w.timed_out(&key("b"), &["x.io/f"]));
        assert!(
            !w.timed_out(&key("b"), &["x.io/f"]),
            "the next pass of the same deletion"
        );
        let (status, reason, message) = w.condition();
        assert_eq!((status, reason), ("False", "TimedOut"));
        assert!(
            message.contains("1 wait(s) timed out after 20s") && message.contains("c|ns/b"),
            "{message}"
        );
        assert_eq!(woken.load(Ordering::SeqCst), 4);
    }
}
