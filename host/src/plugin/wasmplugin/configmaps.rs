//! Watches of the ConfigMaps that `configmap://` WasmPlugin sources name,
//! so such a plugin is fetched again when its ConfigMap changes, and never
//! on a timer.
//!
//! One watch per referenced ConfigMap, narrowed by a field selector on its
//! name and metadata-only (a plugin's bytes can be megabytes; the watch
//! needs only the resourceVersion). A watch lives while some WasmPlugin
//! names its ConfigMap. Its namespace needs `list` and `watch` on
//! ConfigMaps besides `get` (the chart's `rbac.pluginConfigMapNamespaces`
//! grants all three); while a watch has not listed, the controller falls
//! back to re-reading the ConfigMap every resync period.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Client;
use kube::api::Api;
use kube::core::PartialObjectMeta;
use kube::runtime::watcher;
use tokio_util::sync::{CancellationToken, DropGuard};
use tracing::{debug, warn};

use crate::controller::queue::WorkQueue;

/// `namespace/name` of a ConfigMap.
pub type ConfigMapKey = (String, String);

struct Watch {
    /// The WasmPlugins whose source is this ConfigMap.
    users: Arc<Mutex<BTreeSet<String>>>,
    /// The watch has listed: changes reach the controller as events.
    listed: Arc<AtomicBool>,
    _stop: DropGuard,
}

pub struct ConfigMapWatches {
    client: Client,
    queue: Arc<WorkQueue<String>>,
    cancel: CancellationToken,
    watches: Mutex<HashMap<ConfigMapKey, Watch>>,
}

impl ConfigMapWatches {
    pub fn new(client: Client, queue: Arc<WorkQueue<String>>, cancel: CancellationToken) -> Self {
        ConfigMapWatches {
            client,
            queue,
            cancel,
            watches: Mutex::default(),
        }
    }

    /// Record that WasmPlugin `plugin` reads `source` (`None`: no
    /// ConfigMap). Starts the watch of a newly named ConfigMap and stops
    /// one that no WasmPlugin names any more. Returns whether changes of
    /// `source` are known to reach the controller (its watch has listed).
    pub fn track(&self, plugin: &str, source: Option<ConfigMapKey>) -> bool {
        let mut watches = self.watches.lock().unwrap_or_else(|e| e.into_inner());
        watches.retain(|key, w| {
            if Some(key) == source.as_ref() {
                return true;
            }
            let mut users = w.users.lock().unwrap_or_else(|e| e.into_inner());
            users.remove(plugin);
            !users.is_empty()
        });
        let Some(key) = source else {
            return true;
        };
        let w = watches
            .entry(key.clone())
            .or_insert_with(|| self.start(key));
        w.users
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(plugin.to_string());
        w.listed.load(Ordering::Acquire)
    }

    /// How many ConfigMaps are watched.
    pub fn len(&self) -> usize {
        self.watches.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn start(&self, (namespace, name): ConfigMapKey) -> Watch {
        let users: Arc<Mutex<BTreeSet<String>>> = Arc::default();
        let listed: Arc<AtomicBool> = Arc::default();
        let stop = self.cancel.child_token();
        let api: Api<PartialObjectMeta<ConfigMap>> =
            Api::namespaced(self.client.clone(), &namespace);
        let cfg = watcher::Config::default().fields(&format!("metadata.name={name}"));
        let (queue, task_users, task_listed, token) = (
            self.queue.clone(),
            users.clone(),
            listed.clone(),
            stop.clone(),
        );
        let configmap = format!("{namespace}/{name}");
        // Owned by `stop` (dropped with the last WasmPlugin that names this
        // ConfigMap, or with the controller); it has no step that can
        // panic, and the watch restarts itself after errors.
        tokio::spawn(async move {
            // The resourceVersion last seen; `None` while the ConfigMap is
            // missing. Any change, including the first listing, re-checks
            // the plugins that read it: the ConfigMap may have changed
            // between their fetch and this watch's list.
            let mut seen: Option<Option<String>> = None;
            let mut listing: Option<String> = None;
            let mut changed = |now: Option<String>| {
                if seen.as_ref() != Some(&now) {
                    seen = Some(now);
                    for plugin in task_users.lock().unwrap_or_else(|e| e.into_inner()).iter() {
                        queue.add(plugin.clone());
                    }
                }
            };
            let drive = crate::controller::watch::drive(
                watcher(api, cfg),
                |ev| match ev {
                    watcher::Event::Init => listing = None,
                    watcher::Event::InitApply(m) => listing = m.metadata.resource_version,
                    watcher::Event::InitDone => {
                        task_listed.store(true, Ordering::Release);
                        changed(listing.take());
                    }
                    watcher::Event::Apply(m) => changed(m.metadata.resource_version),
                    watcher::Event::Delete(_) => changed(None),
                },
                |e, retry, report| {
                    if !report {
                        debug!(configmap = %configmap, error = %e, ?retry, "ConfigMap watch failed again");
                    } else if crate::controller::watch::is_forbidden(e) {
                        warn!(
                            configmap = %configmap,
                            "cannot watch the ConfigMap of a configmap:// WasmPlugin source: the agent \
                             may not list/watch ConfigMaps in its namespace; grant them (chart: \
                             rbac.pluginConfigMapNamespaces). Until then it is re-read every resync period"
                        );
                    } else {
                        warn!(configmap = %configmap, error = %e, ?retry, "ConfigMap watch failed; retrying");
                    }
                },
            );
            tokio::select! {
                _ = token.cancelled() => {}
                _ = drive => {}
            }
        });
        Watch {
            users,
            listed,
            _stop: stop.drop_guard(),
        }
    }
}
