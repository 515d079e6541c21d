//! The in-memory view of WasmPlugins the sync path reads: name → the
//! loaded, checked plugin, or why there is none.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use serde_json::Value;
use syncweave_runtime::{Limits, Plugin, World};
use tokio::sync::watch;

use crate::apis::FailurePolicy;

/// A WasmPlugin whose status is Ready: compiled, described, default config
/// valid.
#[derive(Clone, Debug)]
pub struct ReadyPlugin {
    /// The WasmPlugin's name.
    pub name: String,
    /// `metadata.uid` and `metadata.generation` this entry was built from.
    pub uid: String,
    pub generation: Option<i64>,
    pub plugin: Arc<Plugin>,
    pub limits: Limits,
    pub failure_policy: FailurePolicy,
    /// `spec.config`: used when a use sets no config of its own.
    pub default_config: Option<Value>,
}

impl ReadyPlugin {
    pub fn digest(&self) -> &str {
        self.plugin.digest()
    }

    pub fn world(&self) -> World {
        self.plugin.world()
    }
}

/// Why [`WasmPluginRegistry::get`] has no plugin to give.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("WasmPlugin {name:?} is not ready: {reason}")]
pub struct NotReady {
    pub name: String,
    pub reason: String,
}

#[derive(Clone)]
enum Entry {
    Ready(ReadyPlugin),
    Failed(String),
}

/// Shared by the controller (writer) and every sync worker (readers);
/// cheap to clone.
#[derive(Clone)]
pub struct WasmPluginRegistry {
    inner: Arc<Inner>,
}

struct Inner {
    entries: RwLock<HashMap<String, Entry>>,
    /// Bumped on every change, so users of plugins can re-resolve.
    changes: watch::Sender<u64>,
    /// Whether the controller has listed WasmPlugins at least once.
    synced: watch::Sender<bool>,
}

impl Default for WasmPluginRegistry {
    fn default() -> Self {
        WasmPluginRegistry::new()
    }
}

impl std::fmt::Debug for WasmPluginRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let entries = self.read();
        let mut names: Vec<(&String, bool)> = entries
            .iter()
            .map(|(k, v)| (k, matches!(v, Entry::Ready(_))))
            .collect();
        names.sort();
        f.debug_struct("WasmPluginRegistry")
            .field("entries", &names)
            .finish()
    }
}

impl WasmPluginRegistry {
    pub fn new() -> Self {
        WasmPluginRegistry {
            inner: Arc::new(Inner {
                entries: RwLock::default(),
                changes: watch::channel(0).0,
                synced: watch::channel(false).0,
            }),
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<String, Entry>> {
        self.inner.entries.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self, f: impl FnOnce(&mut HashMap<String, Entry>) -> bool) {
        let changed = {
            let mut g = self
                .inner
                .entries
                .write()
                .unwrap_or_else(|e| e.into_inner());
            f(&mut g)
        };
        if changed {
            self.inner.changes.send_modify(|n| *n += 1);
        }
    }

    /// The Ready plugin called `name`, or why it is not available.
    pub fn get(&self, name: &str) -> Result<ReadyPlugin, NotReady> {
        let not_ready = |reason: String| NotReady {
            name: name.to_string(),
            reason,
        };
        match self.read().get(name) {
            Some(Entry::Ready(p)) => Ok(p.clone()),
            Some(Entry::Failed(reason)) => Err(not_ready(format!(
                "{reason}; see `kubectl describe wasmplugin {name}`"
            ))),
            None if !*self.inner.synced.borrow() => Err(not_ready(
                "the agent has not listed WasmPlugins yet; this resolves by itself shortly \
                 (if it persists, check that the WasmPlugin CRD is installed)"
                    .into(),
            )),
            None => Err(not_ready(
                "no WasmPlugin of that name exists, or it has not been checked yet; create it \
                 or fix the name (`kubectl get wasmplugins`)"
                    .into(),
            )),
        }
    }

    /// Names of the Ready plugins, sorted.
    pub fn ready_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .read()
            .iter()
            .filter(|(_, e)| matches!(e, Entry::Ready(_)))
            .map(|(k, _)| k.clone())
            .collect();
        names.sort();
        names
    }

    /// A receiver that changes whenever any entry does: sync controllers
    /// wait on it to retry objects whose plugin was not ready.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.inner.changes.subscribe()
    }

    pub fn is_synced(&self) -> bool {
        *self.inner.synced.borrow()
    }

    /// Written by the WasmPlugin controller.
    pub fn set_ready(&self, p: ReadyPlugin) {
        self.write(|m| {
            let same = matches!(m.get(&p.name), Some(Entry::Ready(old))
                if old.uid == p.uid && old.generation == p.generation
                    && old.plugin.digest() == p.plugin.digest());
            m.insert(p.name.clone(), Entry::Ready(p));
            !same
        });
    }

    /// Written by the WasmPlugin controller.
    pub fn set_failed(&self, name: &str, reason: impl Into<String>) {
        let reason = reason.into();
        self.write(|m| {
            let same = matches!(m.get(name), Some(Entry::Failed(r)) if *r == reason);
            m.insert(name.to_string(), Entry::Failed(reason));
            !same
        });
    }

    /// Written by the WasmPlugin controller when the object is deleted.
    pub fn remove(&self, name: &str) {
        self.write(|m| m.remove(name).is_some());
    }

    /// Drop entries whose WasmPlugin no longer exists (deleted while the
    /// watch was down).
    pub fn retain(&self, exists: impl Fn(&str) -> bool) {
        self.write(|m| {
            let before = m.len();
            m.retain(|k, _| exists(k));
            m.len() != before
        });
    }

    /// Marks the first full list done.
    pub fn mark_synced(&self) {
        self.inner
            .synced
            .send_if_modified(|s| !std::mem::replace(s, true));
        self.inner.changes.send_modify(|n| *n += 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_ready_reasons_say_what_to_do() {
        let r = WasmPluginRegistry::new();
        let e = r.get("p").unwrap_err();
        assert!(e.reason.contains("has not listed WasmPlugins yet"), "{e}");
        let mut rx = r.subscribe();
        r.mark_synced();
        assert!(rx.has_changed().unwrap());
        rx.borrow_and_update();
        let e = r.get("p").unwrap_err();
        assert!(e.reason.contains("no WasmPlugin of that name"), "{e}");

        r.set_failed("p", "Fetched=False: cannot read /x.wasm");
        assert!(rx.has_changed().unwrap());
        rx.borrow_and_update();
        let e = r.get("p").unwrap_err();
        assert_eq!(
            e.to_string(),
            "WasmPlugin \"p\" is not ready: Fetched=False: cannot read /x.wasm; see `kubectl \
             describe wasmplugin p`"
        );
        // Same failure again: no change notification.
        r.set_failed("p", "Fetched=False: cannot read /x.wasm");
        assert!(!rx.has_changed().unwrap());

        r.remove("p");
        assert!(rx.has_changed().unwrap());
        assert!(r.ready_names().is_empty());
    }
}
