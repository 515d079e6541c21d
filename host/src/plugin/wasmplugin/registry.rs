//! The in-memory view of WasmPlugins the sync path reads: name → the
//! loaded, checked digests that serve it (a stable one, and a canary
//! during a staged rollout), or why there is none.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use serde_json::Value;
use syncweave_runtime::{Limits, Plugin, World};
use tokio::sync::watch;

use super::rollout::CanaryRule;
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
    /// The source it was fetched from (`spec.source` when it was checked),
    /// recorded in status so a restarted agent can fetch this digest again.
    pub source: String,
    /// Failed calls of this digest since it became active; shared by every
    /// copy, and carried over while the digest stays active.
    pub stats: Arc<DigestStats>,
}

/// Counts kept per active digest of a WasmPlugin.
#[derive(Debug, Default)]
pub struct DigestStats {
    errors: AtomicU64,
}

impl DigestStats {
    /// A call of this digest failed (whatever the failure policy did).
    pub fn failed(&self) {
        self.errors.fetch_add(1, Ordering::Relaxed);
    }

    pub fn errors(&self) -> u64 {
        self.errors.load(Ordering::Relaxed)
    }
}

/// A new digest serving the objects a canary selects.
#[derive(Clone, Debug)]
pub struct Canary {
    pub plugin: ReadyPlugin,
    pub rule: Arc<CanaryRule>,
}

/// What serves a WasmPlugin's uses.
#[derive(Clone, Debug)]
pub struct Serving {
    /// Serves every object the canary does not select (all without one).
    pub stable: ReadyPlugin,
    pub canary: Option<Canary>,
    /// Why `spec.source` is not (or not wholly) what serves, when it is
    /// not: its new digest failed a check and the previous one stays.
    /// PublishedResources using the plugin show it.
    pub held_back: Option<String>,
}

impl Serving {
    pub fn new(stable: ReadyPlugin) -> Serving {
        Serving {
            stable,
            canary: None,
            held_back: None,
        }
    }

    /// Everything that changes what runs: which digest of which version
    /// serves whom (not the error counts or `held_back`).
    fn same_code(&self, other: &Serving) -> bool {
        let same = |a: &ReadyPlugin, b: &ReadyPlugin| {
            a.uid == b.uid && a.generation == b.generation && a.digest() == b.digest()
        };
        same(&self.stable, &other.stable)
            && match (&self.canary, &other.canary) {
                (None, None) => true,
                (Some(a), Some(b)) => same(&a.plugin, &b.plugin) && a.rule == b.rule,
                _ => false,
            }
    }

    /// The active digests, stable first.
    fn plugins_mut(&mut self) -> impl Iterator<Item = &mut ReadyPlugin> {
        std::iter::once(&mut self.stable).chain(self.canary.as_mut().map(|c| &mut c.plugin))
    }

    fn plugins(&self) -> impl Iterator<Item = &ReadyPlugin> {
        std::iter::once(&self.stable).chain(self.canary.as_ref().map(|c| &c.plugin))
    }
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
    Serving(Box<Serving>),
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
            .map(|(k, v)| (k, matches!(v, Entry::Serving(_))))
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

    /// The stable digest of the plugin called `name` (what serves every
    /// object outside a canary), or why there is none.
    pub fn get(&self, name: &str) -> Result<ReadyPlugin, NotReady> {
        self.serving(name).map(|s| s.stable)
    }

    /// What serves the plugin called `name`, or why nothing does.
    pub fn serving(&self, name: &str) -> Result<Serving, NotReady> {
        let not_ready = |reason: String| NotReady {
            name: name.to_string(),
            reason,
        };
        match self.read().get(name) {
            Some(Entry::Serving(s)) => Ok(Serving::clone(s)),
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

    /// Every WasmPlugin that something serves, by name.
    pub fn all_serving(&self) -> Vec<(String, Serving)> {
        self.read()
            .iter()
            .filter_map(|(k, e)| match e {
                Entry::Serving(s) => Some((k.clone(), Serving::clone(s))),
                Entry::Failed(_) => None,
            })
            .collect()
    }

    /// Names of the Ready plugins, sorted.
    pub fn ready_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .read()
            .iter()
            .filter(|(_, e)| matches!(e, Entry::Serving(_)))
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

    /// `p` serves every object of its plugin (no canary, nothing held back).
    pub fn set_ready(&self, p: ReadyPlugin) {
        self.set_serving(Serving::new(p));
    }

    /// Written by the WasmPlugin controller. A digest that was already
    /// active (as stable or canary) keeps its counts; the returned value is
    /// what was stored, with those counts.
    pub fn set_serving(&self, mut s: Serving) -> Serving {
        let name = s.stable.name.clone();
        self.write(|m| {
            let old = match m.get(&name) {
                Some(Entry::Serving(old)) => Some(old),
                _ => None,
            };
            if let Some(old) = old {
                for p in s.plugins_mut() {
                    if let Some(o) = old
                        .plugins()
                        .find(|o| o.digest() == p.digest() && o.uid == p.uid)
                    {
                        p.stats = o.stats.clone();
                    }
                }
            }
            let changed = match old {
                Some(old) => !old.same_code(&s) || old.held_back != s.held_back,
                None => true,
            };
            m.insert(name.clone(), Entry::Serving(Box::new(s.clone())));
            changed
        });
        s
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

    fn ready(name: &str, builtin: &str, generation: i64) -> ReadyPlugin {
        let rt = crate::testing::runtime();
        ReadyPlugin {
            name: name.into(),
            uid: "uid".into(),
            generation: Some(generation),
            plugin: rt.load_builtin(builtin).unwrap(),
            limits: Default::default(),
            failure_policy: FailurePolicy::Fail,
            default_config: None,
            source: builtin.into(),
            stats: Default::default(),
        }
    }

    /// A digest that stays active keeps its error count across re-checks
    /// and promotion; a digest that becomes active starts at zero. Only
    /// changes to what runs (or to what is held back) notify the sync path.
    #[test]
    fn counts_follow_the_digest() {
        let r = WasmPluginRegistry::new();
        let mut rx = r.subscribe();
        let a = r.set_serving(Serving::new(ready("p", "naming", 1)));
        a.stable.stats.failed();
        a.stable.stats.failed();
        assert!(rx.has_changed().unwrap());
        rx.borrow_and_update();

        // Checked again, same code: same counts, no notification.
        let again = r.set_serving(Serving::new(ready("p", "naming", 1)));
        assert_eq!(again.stable.stats.errors(), 2);
        assert!(!rx.has_changed().unwrap());

        // A canary: the stable digest keeps its count, the canary starts at 0.
        let rule = Arc::new(CanaryRule::Fraction {
            fraction: 0.5,
            threshold: u64::MAX / 2,
        });
        let with_canary = r.set_serving(Serving {
            stable: ready("p", "naming", 1),
            canary: Some(Canary {
                plugin: ready("p", "mutation", 2),
                rule: rule.clone(),
            }),
            held_back: None,
        });
        assert!(rx.has_changed().unwrap());
        rx.borrow_and_update();
        assert_eq!(with_canary.stable.stats.errors(), 2);
        let canary = with_canary.canary.unwrap().plugin;
        assert_eq!(canary.stats.errors(), 0);
        canary.stats.failed();
        assert_eq!(
            r.serving("p")
                .unwrap()
                .canary
                .unwrap()
                .plugin
                .stats
                .errors(),
            1
        );

        // Something held back is news for the PublishedResources using it.
        let mut held = r.serving("p").unwrap();
        held.held_back = Some("spec.source is not used: …".into());
        r.set_serving(held);
        assert!(rx.has_changed().unwrap());
        rx.borrow_and_update();

        // Promoted: the canary's count goes with it; the old stable is gone.
        let promoted = r.set_serving(Serving::new(ready("p", "mutation", 3)));
        assert_eq!(promoted.stable.stats.errors(), 1);
        assert!(rx.has_changed().unwrap());
        assert_eq!(r.get("p").unwrap().digest(), promoted.stable.digest());
    }
}
