//! From one watch's events to the keys a controller must reconcile: the
//! glue between a reflector-fed store and a [`WorkQueue`], in kube-runtime's
//! terms the trigger of a `Controller`.
//!
//! - A key is enqueued when its object appears or its *version* changes
//!   (the controller says what counts: a spec hash, so that its own status
//!   writes do not trigger it, or the resourceVersion).
//! - A deleted object's key is enqueued once more: its reconcile finds the
//!   object gone, cleans up, and returns [`super::Outcome::Gone`].
//! - After each (re-)list, the keys of objects that vanished while the watch
//!   was down are enqueued the same way, and a listed object is enqueued only
//!   if it changed meanwhile; both at [`Priority::Low`], behind the watch
//!   events of objects that change now.

use std::collections::HashMap;
use std::hash::Hash;

use kube::runtime::watcher::Event;

use super::queue::{Priority, WorkQueue};

pub struct Feed<O, K> {
    key: fn(&O) -> Option<K>,
    version: fn(&O) -> u64,
    /// The version each existing object was last enqueued for.
    seen: HashMap<K, u64>,
    /// The objects of the list in progress.
    listing: HashMap<K, u64>,
}

impl<O, K: Clone + Eq + Hash + Send + Sync + 'static> Feed<O, K> {
    pub fn new(key: fn(&O) -> Option<K>, version: fn(&O) -> u64) -> Self {
        Feed {
            key,
            version,
            seen: HashMap::new(),
            listing: HashMap::new(),
        }
    }

    /// Enqueue on `queue` what `ev` asks to reconcile.
    pub fn on_event(&mut self, ev: &Event<O>, queue: &WorkQueue<K>) {
        match ev {
            Event::Init => self.listing.clear(),
            Event::InitApply(o) => {
                if let Some(k) = (self.key)(o) {
                    self.listing.insert(k, (self.version)(o));
                }
            }
            // What a (re-)list finds goes behind watch events.
            Event::InitDone => {
                let listed = std::mem::take(&mut self.listing);
                self.seen.retain(|k, _| {
                    let keep = listed.contains_key(k);
                    if !keep {
                        queue.add_low(k.clone());
                    }
                    keep
                });
                for (k, version) in listed {
                    self.changed(k, version, queue, Priority::Low);
                }
            }
            Event::Apply(o) => {
                if let Some(k) = (self.key)(o) {
                    self.changed(k, (self.version)(o), queue, Priority::High);
                }
            }
            Event::Delete(o) => {
                if let Some(k) = (self.key)(o) {
                    self.seen.remove(&k);
                    queue.add(k);
                }
            }
        }
    }

    /// Whether the object of `key` exists, as of the last complete list and
    /// the events since.
    pub fn contains(&self, key: &K) -> bool {
        self.seen.contains_key(key)
    }

    fn changed(&mut self, k: K, version: u64, queue: &WorkQueue<K>, priority: Priority) {
        if self.seen.insert(k.clone(), version) != Some(version) {
            queue.add_with(k, priority);
        }
    }
}

/// Watch `api` for as long as it runs (the watcher re-lists after errors,
/// paced by [`super::watch::drive`]) and enqueue the keys that `on_change`
/// returns for each event. `side` names the server in logs;
/// `forbidden_fix` says what to grant when the agent may not list or watch
/// (logged as an error: readers fall back to the API meanwhile).
pub async fn watch_changes<O, K>(
    side: &'static str,
    forbidden_fix: &'static str,
    api: kube::Api<O>,
    cfg: kube::runtime::watcher::Config,
    queue: std::sync::Arc<WorkQueue<K>>,
    mut on_change: impl FnMut(super::store::Change<O>) -> Vec<K>,
) where
    O: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
    K: Clone + Eq + Hash + Send + Sync + std::fmt::Display + 'static,
{
    super::watch::drive(
        kube::runtime::watcher(api, cfg),
        |ev| {
            // What a list finds goes behind what a watch event says.
            let priority = match ev {
                kube::runtime::watcher::Event::Apply(_)
                | kube::runtime::watcher::Event::Delete(_) => Priority::High,
                _ => Priority::Low,
            };
            for k in on_change(super::store::Change::from(ev)) {
                tracing::debug!(side, key = %k, %priority, "event");
                queue.add_with(k, priority);
            }
        },
        |e, retry, report| {
            if !report {
                tracing::debug!(side, error = %e, ?retry, "watch failed again");
            } else if super::watch::is_forbidden(e) {
                tracing::error!(side, error = %e, ?retry, fix = forbidden_fix, "the agent may not list/watch these objects; reading them one by one meanwhile");
            } else {
                tracing::warn!(side, error = %e, ?retry, "watch failed");
            }
        },
    )
    .await;
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;

    /// (name, version) stands for an object.
    type Obj = (&'static str, u64);

    fn feed() -> Feed<Obj, String> {
        Feed::new(|o| Some(o.0.to_string()), |o| o.1)
    }

    fn drain(queue: &Arc<WorkQueue<String>>) -> Vec<String> {
        let mut keys = Vec::new();
        while !queue.is_empty() {
            let k = futures::executor::block_on(queue.get()).unwrap();
            queue.done(&k);
            keys.push(k);
        }
        keys.sort();
        keys
    }

    #[test]
    fn changes_deletions_and_relists_enqueue_exactly_what_to_reconcile() {
        let queue: Arc<WorkQueue<String>> =
            WorkQueue::new(Duration::from_millis(1), Duration::from_millis(2));
        let mut f = feed();
        for ev in [
            Event::Init,
            Event::InitApply(("a", 1)),
            Event::InitApply(("b", 1)),
            Event::InitDone,
        ] {
            f.on_event(&ev, &queue);
        }
        assert_eq!(drain(&queue), ["a", "b"], "the first list enqueues all");

        f.on_event(&Event::Apply(("a", 1)), &queue);
        assert!(drain(&queue).is_empty(), "same version: nothing to do");
        f.on_event(&Event::Apply(("a", 2)), &queue);
        assert_eq!(drain(&queue), ["a"]);

        f.on_event(&Event::Delete(("a", 2)), &queue);
        assert_eq!(drain(&queue), ["a"], "a deletion is reconciled once more");
        assert!(!f.contains(&"a".to_string()));

        // The watch was down: b vanished, c appeared, d is unchanged.
        f.on_event(&Event::Apply(("d", 1)), &queue);
        drain(&queue);
        for ev in [
            Event::Init,
            Event::InitApply(("c", 1)),
            Event::InitApply(("d", 1)),
            Event::InitDone,
        ] {
            f.on_event(&ev, &queue);
        }
        assert_eq!(drain(&queue), ["b", "c"], "vanished and new, not unchanged");
        assert!(f.contains(&"d".to_string()) && !f.contains(&"b".to_string()));
    }
}
