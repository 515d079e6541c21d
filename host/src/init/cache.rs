//! The selected InitTargets as the InitTarget controller keeps them and
//! the type workers read them, and the gate that holds the workers until
//! the first list has been reconciled.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use kube::api::DynamicObject;
use kube::runtime::watcher;

use super::key::{TargetKey, key_of};
use crate::apis::InitTarget;

/// An InitTarget as watched, parsed once.
pub struct Cached {
    pub obj: DynamicObject,
    /// The typed target, or why it does not match the schema.
    pub target: Result<InitTarget, String>,
}

impl Cached {
    pub(super) fn new(obj: DynamicObject) -> Self {
        let target = serde_json::to_value(&obj)
            .and_then(serde_json::from_value::<InitTarget>)
            .map_err(|e| e.to_string());
        Cached { obj, target }
    }
}

/// The selected InitTargets, by [`TargetKey`] (kube-runtime's store keys by
/// name only).
#[derive(Default)]
pub struct TargetCache {
    map: RwLock<HashMap<TargetKey, Arc<Cached>>>,
    listing: Mutex<HashMap<TargetKey, Arc<Cached>>>,
}

impl TargetCache {
    pub fn get(&self, key: &TargetKey) -> Option<Arc<Cached>> {
        self.map
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(key)
            .cloned()
    }

    pub(super) fn keys(&self) -> Vec<TargetKey> {
        self.map
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .keys()
            .cloned()
            .collect()
    }

    pub(super) fn on_event(&self, ev: &watcher::Event<DynamicObject>) {
        let mut listing = self.listing.lock().unwrap_or_else(|e| e.into_inner());
        match ev {
            watcher::Event::Init => listing.clear(),
            watcher::Event::InitApply(o) => {
                if let Some(k) = key_of(o) {
                    listing.insert(k, Arc::new(Cached::new(o.clone())));
                }
            }
            watcher::Event::InitDone => {
                *self.map.write().unwrap_or_else(|e| e.into_inner()) = std::mem::take(&mut listing);
            }
            watcher::Event::Apply(o) => {
                if let Some(k) = key_of(o) {
                    self.map
                        .write()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(k, Arc::new(Cached::new(o.clone())));
                }
            }
            watcher::Event::Delete(o) => {
                if let Some(k) = key_of(o) {
                    self.map
                        .write()
                        .unwrap_or_else(|e| e.into_inner())
                        .remove(&k);
                }
            }
        }
    }
}

/// Until every InitTarget of the first list has been reconciled once, no
/// worker initializes a workspace: one started by the first target of a
/// type must not apply only that target's sources when the type has more.
pub(crate) struct InitialSync {
    pending: Mutex<Option<std::collections::HashSet<TargetKey>>>,
    done: tokio::sync::watch::Sender<bool>,
}

impl InitialSync {
    pub(super) fn new() -> Self {
        InitialSync {
            pending: Mutex::new(None),
            done: tokio::sync::watch::Sender::new(false),
        }
    }

    /// The first list completed with `keys`.
    pub(super) fn listed(&self, keys: impl IntoIterator<Item = TargetKey>) {
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        if pending.is_some() || *self.done.borrow() {
            return;
        }
        let keys: std::collections::HashSet<TargetKey> = keys.into_iter().collect();
        if keys.is_empty() {
            self.done.send_replace(true);
        } else {
            *pending = Some(keys);
        }
    }

    /// `key` was reconciled (whatever the outcome).
    pub(super) fn reconciled(&self, key: &TargetKey) {
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(p) = pending.as_mut() {
            p.remove(key);
            if p.is_empty() {
                *pending = None;
                self.done.send_replace(true);
            }
        }
    }

    /// Resolves once the first list has been reconciled.
    pub(crate) fn wait(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let mut rx = self.done.subscribe();
        async move {
            let _ = rx.wait_for(|d| *d).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn workers_wait_for_every_listed_target() {
        let k = |n: &str| TargetKey {
            cluster: "c".into(),
            name: n.into(),
        };
        let s = InitialSync::new();
        let wait = s.wait();
        s.listed([k("a"), k("b")]);
        s.reconciled(&k("a"));
        assert!(!*s.done.borrow());
        // A second list (a re-list later on) does not hold workers back.
        s.listed([k("c")]);
        s.reconciled(&k("b"));
        assert!(*s.done.borrow());
        wait.await;
        let empty = InitialSync::new();
        empty.listed([]);
        empty.wait().await;
    }
}
