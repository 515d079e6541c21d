//! The WasmPlugin controller: for each WasmPlugin on the service cluster,
//! fetch → compile (or reuse) → describe → validate the default config,
//! then record the result in status conditions, in Events and in the
//! [`WasmPluginRegistry`] the sync path reads.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::watcher;
use kube::{Client, Resource, ResourceExt};
use serde_json::json;
use syncweave_runtime::{FailureKind, Plugin, PluginErrorKind, PluginFailure, Runtime};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use super::configmaps::{ConfigMapKey, ConfigMapWatches};
use super::registry::{ReadyPlugin, WasmPluginRegistry};
use crate::apis::wasmplugin::{CONDITION_COMPILED, CONDITION_FETCHED, CONDITION_READY};
use crate::apis::{WasmPlugin, WasmPluginInfo, WasmPluginStatus};
use crate::plugin_fetch::{FetchContext, PluginRef};
use crate::runner::Outcome as RunOutcome;
use crate::runner::feed::Feed;
use crate::runner::queue::WorkQueue;
use kube::runtime::events::{Event as KubeEvent, EventType, Recorder};

/// How often every WasmPlugin is checked again even without changes: file
/// and ConfigMap sources can change under the same spec.
pub const DEFAULT_RESYNC: Duration = Duration::from_secs(60);
pub const DEFAULT_WORKERS: usize = 2;
/// Field manager of the controller's status writes.
pub const COMPONENT: &str = "syncweave-wasmplugin-controller";

#[derive(Debug, Clone)]
pub struct ControllerConfig {
    pub resync: Duration,
    pub workers: usize,
}

impl Default for ControllerConfig {
    fn default() -> Self {
        ControllerConfig {
            resync: DEFAULT_RESYNC,
            workers: DEFAULT_WORKERS,
        }
    }
}

/// What checking one WasmPlugin found.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Status without timestamps (see [`merge_status`]).
    pub status: WasmPluginStatus,
    pub ready: Option<ReadyPlugin>,
    pub failure: Option<Failure>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The condition that went False: Fetched, Compiled or Ready.
    pub condition: &'static str,
    /// Condition and Event reason, e.g. FetchFailed.
    pub reason: String,
    pub message: String,
    /// Retry with backoff rather than waiting for the next resync.
    pub transient: bool,
}

/// Fetches, loads and checks WasmPlugins; the part of the controller that
/// needs no API server.
#[derive(Clone)]
pub struct Checker {
    pub runtime: Runtime,
    pub fetch: FetchContext,
}

fn condition(
    type_: &str,
    ok: Option<bool>,
    reason: &str,
    message: &str,
    generation: Option<i64>,
) -> Condition {
    Condition {
        type_: type_.into(),
        status: match ok {
            Some(true) => "True",
            Some(false) => "False",
            None => "Unknown",
        }
        .into(),
        reason: reason.into(),
        message: message.into(),
        observed_generation: generation,
        // Filled in by merge_status, which keeps the old time when the
        // status did not change.
        last_transition_time: Time(Timestamp::UNIX_EPOCH),
    }
}

impl Checker {
    pub async fn check(&self, wp: &WasmPlugin) -> Outcome {
        let name = wp.name_any();
        let generation = wp.metadata.generation;
        let spec = &wp.spec;
        let mut status = WasmPluginStatus {
            observed_generation: generation,
            ..Default::default()
        };
        let cond = |t, ok, reason: &str, msg: &str| condition(t, ok, reason, msg, generation);
        let fail = |mut status: WasmPluginStatus,
                    condition: &'static str,
                    reason: &str,
                    message: String,
                    transient: bool| {
            let mut conds = status.conditions.take().unwrap_or_default();
            let waiting = format!("{condition} is False");
            if condition == CONDITION_FETCHED {
                conds.push(cond(CONDITION_FETCHED, Some(false), reason, &message));
                conds.push(cond(CONDITION_COMPILED, None, "NotFetched", &waiting));
            } else if condition == CONDITION_COMPILED {
                conds.push(cond(CONDITION_COMPILED, Some(false), reason, &message));
            }
            conds.push(cond(CONDITION_READY, Some(false), reason, &message));
            status.conditions = Some(conds);
            Outcome {
                status,
                ready: None,
                failure: Some(Failure {
                    condition,
                    reason: reason.into(),
                    message,
                    transient,
                }),
            }
        };

        let rcfg = self.runtime.config();
        let limits = match spec
            .limits
            .as_ref()
            .map(|l| l.to_limits(rcfg.default_limits, rcfg.max_memory_bytes, "spec.limits"))
        {
            None => rcfg.default_limits,
            Some(Ok(l)) => l,
            Some(Err(e)) => {
                let msg = format!("{e}; fix spec.limits");
                status.conditions = Some(vec![
                    cond(
                        CONDITION_FETCHED,
                        None,
                        "InvalidLimits",
                        "not attempted: spec.limits is invalid",
                    ),
                    cond(
                        CONDITION_COMPILED,
                        None,
                        "InvalidLimits",
                        "not attempted: spec.limits is invalid",
                    ),
                ]);
                return fail(status, CONDITION_READY, "InvalidLimits", msg, false);
            }
        };
        let r = match PluginRef::parse(&spec.source, spec.sha256.as_deref(), "spec") {
            Ok(r) => r,
            Err(e) => {
                return fail(
                    status,
                    CONDITION_FETCHED,
                    "InvalidSource",
                    e.to_string(),
                    false,
                );
            }
        };
        // With spec.imagePullSecret's credentials and, when spec.signature
        // is set, only once the signature is verified.
        let fetched = match self.fetch.fetch_for(&r, spec).await {
            Ok(f) => f,
            Err(e) => {
                return fail(
                    status,
                    CONDITION_FETCHED,
                    e.kind.reason(),
                    e.to_string(),
                    e.kind.is_transient(),
                );
            }
        };
        let mut conds = vec![cond(
            CONDITION_FETCHED,
            Some(true),
            "Fetched",
            &match &fetched.signature {
                Some(sig) => format!(
                    "{} bytes from {} source {}; {sig}",
                    fetched.bytes.len(),
                    r.kind(),
                    r.source
                ),
                None => format!(
                    "{} bytes from {} source {}",
                    fetched.bytes.len(),
                    r.kind(),
                    r.source
                ),
            },
        )];
        status.digest = Some(fetched.digest.clone());
        status.conditions = Some(conds.clone());

        let loaded = fetched.load(&self.runtime, &name, Some(limits)).await;
        let plugin = match loaded {
            Ok(p) => p,
            Err(f) => {
                return fail(
                    status,
                    CONDITION_COMPILED,
                    "CompileFailed",
                    f.to_string(),
                    false,
                );
            }
        };
        conds.push(cond(
            CONDITION_COMPILED,
            Some(true),
            "Compiled",
            &format!("world {}, {} bytes", plugin.world(), plugin.size()),
        ));
        status.world = Some(plugin.world().to_string());
        status.conditions = Some(conds.clone());

        let default_config = spec.config.clone();
        let check = move |p: &Plugin| {
            let info = p.describe().map_err(|f| ("DescribeFailed", f))?;
            if let Some(c) = &default_config {
                p.validate_config(&c.to_string())
                    .map_err(|f| ("InvalidConfig", f))?;
            }
            Ok::<_, (&str, PluginFailure)>(info)
        };
        // On the blocking pool; a failure of the call itself (a panic) is
        // a broken describe().
        let checked = self
            .runtime
            .call_pool()
            .run(&plugin, move |p| Ok(check(p)))
            .await
            .unwrap_or_else(|f| Err(("DescribeFailed", f)));
        let info = match checked {
            Ok(info) => info,
            Err((reason, f)) => {
                let message = match (reason, f.kind) {
                    ("InvalidConfig", FailureKind::PluginError(PluginErrorKind::InvalidConfig)) => {
                        format!(
                            "spec.config: the plugin rejected its default config: {}; fix spec.config",
                            f.message
                        )
                    }
                    ("InvalidConfig", _) => {
                        format!("spec.config: checking the default config failed: {f}")
                    }
                    _ => format!(
                        "describe() failed: {f}; the plugin is broken, rebuild it or report it to its author"
                    ),
                };
                return fail(
                    status,
                    CONDITION_READY,
                    reason,
                    message,
                    f.kind.is_transient(),
                );
            }
        };
        let version = if info.version.is_empty() {
            "(no version)".to_string()
        } else {
            info.version.clone()
        };
        conds.push(cond(
            CONDITION_READY,
            Some(true),
            "Ready",
            &format!("plugin {} {version} is ready", info.name),
        ));
        status.conditions = Some(conds);
        status.info = Some(WasmPluginInfo {
            name: info.name,
            version: info.version,
            description: Some(info.description).filter(|d| !d.is_empty()),
        });
        Outcome {
            status,
            ready: Some(ReadyPlugin {
                name,
                uid: wp.uid().unwrap_or_default(),
                generation,
                plugin,
                limits,
                failure_policy: spec.failure_policy,
                default_config: spec.config.clone(),
            }),
            failure: None,
        }
    }
}

/// `new` with each condition's lastTransitionTime taken from `old` when
/// its status did not change, and `now` otherwise; so re-checking an
/// unchanged plugin produces an identical status and no write.
pub fn merge_status(
    old: Option<&WasmPluginStatus>,
    mut new: WasmPluginStatus,
    now: &Time,
) -> WasmPluginStatus {
    let old_conds = old
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or_default();
    if let Some(conds) = new.conditions.as_mut() {
        for c in conds {
            c.last_transition_time = old_conds
                .iter()
                .find(|o| o.type_ == c.type_ && o.status == c.status)
                .map(|o| o.last_transition_time.clone())
                .unwrap_or_else(|| now.clone());
        }
    }
    new
}

fn ready_condition(s: Option<&WasmPluginStatus>) -> Option<&Condition> {
    s?.conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == CONDITION_READY)
}

/// Run the controller until `cancel` fires, with default settings and a
/// fetch context built from the runtime (built-in dirs, cache) and the
/// service-cluster client (configmap:// sources).
pub async fn run(
    service: Client,
    runtime: Runtime,
    registry: WasmPluginRegistry,
    events: Recorder,
    cancel: CancellationToken,
) -> Result<(), crate::plugin_fetch::SetupError> {
    let fetch = FetchContext::new(crate::plugin_fetch::FetchOptions::for_runtime(
        &runtime,
        Some(service.clone()),
    ))?;
    run_with(
        service,
        Checker { runtime, fetch },
        registry,
        events,
        ControllerConfig::default(),
        cancel,
    )
    .await;
    Ok(())
}

struct Ctl {
    api: Api<WasmPlugin>,
    store: Store<WasmPlugin>,
    checker: Checker,
    registry: WasmPluginRegistry,
    events: Recorder,
    resync: Duration,
    configmaps: ConfigMapWatches,
    /// Per file-sourced WasmPlugin, the spec and the file's stamp at its
    /// last successful check: an unchanged file is not read again.
    files: std::sync::Mutex<HashMap<String, (u64, FileStamp)>>,
}

/// What tells that a file changed without reading it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FileStamp {
    len: u64,
    modified: Option<std::time::SystemTime>,
    inode: u64,
}

impl FileStamp {
    fn of(path: &std::path::Path) -> Option<FileStamp> {
        let m = std::fs::metadata(path).ok()?;
        #[cfg(unix)]
        let inode = std::os::unix::fs::MetadataExt::ino(&m);
        #[cfg(not(unix))]
        let inode = 0;
        Some(FileStamp {
            len: m.len(),
            modified: m.modified().ok(),
            inode,
        })
    }
}

/// Retrying a transient failure (fetch, status write): 1 s, doubling with
/// jitter, at most 5 min.
const RETRY_FIRST: Duration = Duration::from_secs(1);
const RETRY_MAX: Duration = Duration::from_secs(300);

/// A transient failure (fetch, status write): retried with backoff.
#[derive(Debug, thiserror::Error)]
#[error("WasmPlugin {0}: transient failure, retrying")]
pub struct Transient(String);

/// What a WasmPlugin's bytes can change with while its spec stays the same.
#[derive(Debug, PartialEq, Eq)]
enum Mutable {
    /// Built-ins, https:// (always pinned by sha256) and oci:// (pinned by
    /// digest) never change: fetched again only when the spec changes.
    No,
    /// A file can be rewritten in place: its size, modification time and
    /// inode are looked at every resync period, and it is read again when
    /// they change.
    File(std::path::PathBuf),
    /// A ConfigMap: checked when its watch sees it change.
    ConfigMap(ConfigMapKey),
}

fn mutable(wp: &WasmPlugin) -> Mutable {
    use crate::plugin_fetch::reference::Location;
    match PluginRef::parse(&wp.spec.source, wp.spec.sha256.as_deref(), "spec") {
        Ok(r) => match r.location {
            Location::File { path } => Mutable::File(path),
            Location::ConfigMap {
                namespace, name, ..
            } => Mutable::ConfigMap((namespace, name)),
            _ => Mutable::No,
        },
        // Refused until its spec is fixed, which is an event.
        Err(_) => Mutable::No,
    }
}

/// A WasmPlugin is checked again only when its spec (generation) or
/// identity (uid) changes: the controller's own status writes do not.
fn spec_version(wp: &WasmPlugin) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    wp.uid().hash(&mut h);
    wp.metadata.generation.hash(&mut h);
    h.finish()
}

/// [`run`] with explicit parts, on the agent's runner ([`crate::runner`]):
/// one queue entry and at most one timer per WasmPlugin, supervised
/// workers, jittered backoff on transient failures. The watch feeds the
/// store and enqueues a plugin when its spec changes, so plugins present at
/// start-up are checked as soon as the first list ends; a deleted one is
/// dropped from the registry and the queue.
pub async fn run_with(
    service: Client,
    checker: Checker,
    registry: WasmPluginRegistry,
    events: Recorder,
    cfg: ControllerConfig,
    cancel: CancellationToken,
) {
    let api: Api<WasmPlugin> = Api::all(service.clone());
    let (store, writer) = reflector::store();
    let queue: Arc<WorkQueue<String>> = WorkQueue::new(RETRY_FIRST, RETRY_MAX);
    let ctl = Arc::new(Ctl {
        api: api.clone(),
        store,
        checker,
        registry: registry.clone(),
        events,
        resync: cfg.resync,
        configmaps: ConfigMapWatches::new(service, queue.clone(), cancel.clone()),
        files: Default::default(),
    });
    info!(workers = cfg.workers, resync = ?cfg.resync, "starting WasmPlugin controller");
    let mut tasks = JoinSet::new();
    crate::runner::spawn_workers(
        &mut tasks,
        cfg.workers.max(1),
        ctl.clone(),
        queue.clone(),
        cancel.clone(),
    );

    // A plugin is checked when its spec changes, not on the controller's
    // own status writes.
    let mut feed = Feed::new(|wp: &WasmPlugin| wp.metadata.name.clone(), spec_version);
    // The reflector owns its store's writer, which cannot be made twice: the
    // watch runs once, for the life of the controller (it re-lists and
    // retries by itself; crate::watch::drive paces it).
    let watch = crate::watch::drive(
        reflector::reflector(writer, watcher(api, watcher::Config::default())),
        |ev| {
            // A deleted plugin is reconciled once more: it finds the object
            // gone, drops it from the registry and its ConfigMap watch, and
            // forgets the key (no timer is left behind).
            feed.on_event(&ev, &queue);
            match ev {
                watcher::Event::InitDone => {
                    // Objects deleted while the watch was down.
                    registry.retain(|n| feed.contains(&n.to_string()));
                    registry.mark_synced();
                }
                watcher::Event::Delete(wp) => {
                    debug!(wasmplugin = %wp.name_any(), "WasmPlugin deleted");
                }
                _ => {}
            }
        },
        |e, retry, report| {
            let missing_crd = matches!(
                e,
                watcher::Error::InitialListFailed(kube::Error::Api(s))
                    | watcher::Error::WatchStartFailed(kube::Error::Api(s))
                    if s.code == 404
            );
            if !report {
                debug!(error = %e, ?retry, "WasmPlugin watch failed again");
            } else if missing_crd {
                warn!(
                    "cannot list WasmPlugins: the CRD is not installed on the service cluster; \
                     apply charts/syncweave/crds/syncweave.dev_wasmplugins.yaml"
                );
            } else {
                warn!(error = %e, ?retry, "WasmPlugin watch failed; retrying");
            }
        },
    );
    tokio::select! {
        _ = cancel.cancelled() => {}
        _ = watch => {}
    }
    queue.shut_down();
    while tasks.join_next().await.is_some() {}
    info!("WasmPlugin controller stopped");
}

impl crate::runner::Reconcile for Ctl {
    type Key = String;
    type Error = Transient;
    const TASK: &'static str = "wasmplugin-worker";

    fn name(&self) -> &str {
        "wasmplugins"
    }

    fn reconcile<'a>(&'a self, name: &'a String) -> BoxFuture<'a, Result<RunOutcome, Transient>> {
        Box::pin(async move {
            let wp = self
                .store
                .get(&ObjectRef::new(name))
                .filter(|wp| wp.meta().deletion_timestamp.is_none());
            let Some(wp) = wp else {
                self.registry.remove(name);
                self.configmaps.track(name, None);
                self.files_lock().remove(name);
                return Ok(RunOutcome::Gone);
            };
            let mutable = mutable(&wp);
            let watched = self.configmaps.track(
                name,
                match &mutable {
                    Mutable::ConfigMap(key) => Some(key.clone()),
                    _ => None,
                },
            );
            // A file-sourced plugin is read again only when its file (or
            // its spec) changed since the last successful check.
            let stamp = match &mutable {
                Mutable::File(path) => {
                    let now = FileStamp::of(path).map(|s| (spec_version(&wp), s));
                    let files = self.files_lock();
                    if now.is_some() && files.get(name.as_str()) == now.as_ref() {
                        debug!(wasmplugin = %name, "the plugin's file is unchanged");
                        return Ok(RunOutcome::Requeue(self.resync));
                    }
                    now
                }
                _ => None,
            };
            self.files_lock().remove(name.as_str());
            if self.check(&wp).await {
                return Err(Transient(name.clone()));
            }
            if let Some(stamp) = stamp {
                self.files_lock().insert(name.clone(), stamp);
            }
            Ok(match mutable {
                Mutable::File(_) => RunOutcome::Requeue(self.resync),
                // Until its watch has listed, a change might not be seen.
                Mutable::ConfigMap(_) if !watched => RunOutcome::Requeue(self.resync),
                Mutable::ConfigMap(_) | Mutable::No => RunOutcome::Done,
            })
        })
    }

    fn panicked(&self, message: String) -> Transient {
        warn!(%message, "a WasmPlugin check panicked; retrying");
        Transient(message)
    }

    fn record<'a>(
        &'a self,
        name: &'a String,
        result: &'a Result<RunOutcome, Transient>,
        _took: Duration,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            if let Err(e) = result {
                debug!(wasmplugin = %name, error = %e, "WasmPlugin check will be retried");
            }
        })
    }

    /// Pinned content never changes; what can change is scheduled by the
    /// reconcile itself (files) or by a watch (ConfigMaps).
    fn resync_period(&self) -> Option<Duration> {
        None
    }
}

impl Ctl {
    fn files_lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (u64, FileStamp)>> {
        self.files.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Record an Event on `wp` (in `default`, where `kubectl describe`
    /// looks for a cluster-scoped object's). Best effort: the status
    /// condition is the record.
    async fn event(&self, wp: &WasmPlugin, type_: EventType, reason: &str, message: &str) {
        let ev = KubeEvent {
            type_,
            reason: reason.into(),
            note: Some(crate::recorder::note(message)),
            action: "Check".into(),
            secondary: None,
        };
        if let Err(e) = self.events.publish(&ev, &wp.object_ref(&())).await {
            warn!(wasmplugin = %wp.name_any(), reason, error = %e, "cannot record an Event");
        }
    }

    /// Check one WasmPlugin; returns whether to retry with backoff.
    async fn check(&self, wp: &WasmPlugin) -> bool {
        let name = wp.name_any();
        let name = name.as_str();
        let outcome = self.checker.check(wp).await;
        let old = wp.status.as_ref();
        let now = Time(Timestamp::now());
        let status = merge_status(old, outcome.status, &now);

        match (&outcome.ready, &outcome.failure) {
            (Some(p), _) => self.registry.set_ready(p.clone()),
            (None, Some(f)) => self.registry.set_failed(
                name,
                format!("{}=False ({}): {}", f.condition, f.reason, f.message),
            ),
            (None, None) => unreachable!("an outcome is either ready or failed"),
        }

        let mut retry = outcome.failure.as_ref().is_some_and(|f| f.transient);
        if old != Some(&status) {
            let patch = json!({
                "apiVersion": WasmPlugin::api_version(&()),
                "kind": WasmPlugin::kind(&()),
                "status": status,
            });
            if let Err(e) = self
                .api
                .patch_status(
                    name,
                    &PatchParams::apply(COMPONENT).force(),
                    &Patch::Apply(&patch),
                )
                .await
            {
                warn!(wasmplugin = name, error = %e, "cannot write WasmPlugin status; retrying");
                retry = true;
            }
        }

        let old_ready = ready_condition(old);
        match &outcome.failure {
            Some(f) => {
                let already = old_ready.is_some_and(|c| {
                    c.status == "False" && c.reason == f.reason && c.message == f.message
                });
                if already {
                    // Reported when it started; resyncs only confirm it.
                    debug!(wasmplugin = name, reason = %f.reason, "WasmPlugin is still not ready");
                } else {
                    warn!(wasmplugin = name, reason = %f.reason, message = %f.message, "WasmPlugin is not ready");
                    self.event(wp, EventType::Warning, &f.reason, &f.message)
                        .await;
                }
            }
            None => {
                let was_ready = old_ready.is_some_and(|c| c.status == "True")
                    && old.and_then(|s| s.digest.as_ref()) == status.digest.as_ref();
                if !was_ready {
                    let msg = format!(
                        "{}; world {}, digest {}",
                        ready_condition(Some(&status))
                            .map(|c| c.message.as_str())
                            .unwrap_or("ready"),
                        status.world.as_deref().unwrap_or("?"),
                        status.digest.as_deref().unwrap_or("?"),
                    );
                    info!(wasmplugin = name, digest = ?status.digest, world = ?status.world, "WasmPlugin is ready");
                    self.event(wp, EventType::Normal, "Ready", &msg).await;
                }
            }
        }
        retry
    }
}

#[cfg(test)]
mod tests {
    use kube::api::ObjectMeta;
    use serde_json::json;
    use syncweave_runtime::World;

    use super::super::tests::{fetch_context, runtime, test_plugin};
    use super::super::{PluginResolver, ResolveErrorKind};
    use super::*;
    use crate::apis::{FailurePolicy, WasmPluginLimits, WasmPluginSpec, WasmUse};

    fn wp(name: &str, spec: WasmPluginSpec) -> WasmPlugin {
        let mut w = WasmPlugin::new(name, spec);
        w.metadata = ObjectMeta {
            name: Some(name.into()),
            uid: Some(format!("uid-{name}")),
            generation: Some(3),
            ..Default::default()
        };
        w
    }

    fn file_spec(path: &std::path::Path) -> WasmPluginSpec {
        WasmPluginSpec {
            source: format!("file://{}", path.display()),
            ..Default::default()
        }
    }

    /// Only sources whose bytes can change under the same spec are looked
    /// at again: files on a timer (by their stamp), ConfigMaps by a watch;
    /// pinned ones wait for a spec change.
    #[test]
    fn only_mutable_sources_are_looked_at_again() {
        let spec = |source: &str, sha: Option<&str>| WasmPluginSpec {
            source: source.into(),
            sha256: sha.map(str::to_string),
            ..Default::default()
        };
        let hex = "a".repeat(64);
        assert_eq!(
            mutable(&wp("f", spec("file:///p.wasm", None))),
            Mutable::File("/p.wasm".into())
        );
        assert_eq!(
            mutable(&wp("c", spec("configmap://ns/cm/p.wasm", None))),
            Mutable::ConfigMap(("ns".into(), "cm".into()))
        );
        assert_eq!(mutable(&wp("b", spec("mutation", None))), Mutable::No);
        assert_eq!(
            mutable(&wp("h", spec("https://example.com/p.wasm", Some(&hex)))),
            Mutable::No
        );
        assert_eq!(
            mutable(&wp(
                "o",
                spec(&format!("oci://registry.example.com/p@sha256:{hex}"), None)
            )),
            Mutable::No
        );
    }

    /// A file's stamp changes when it is rewritten (size or time) or
    /// replaced (inode), and not when it is only read.
    #[test]
    fn a_file_stamp_follows_rewrites() {
        let dir = crate::plugin_fetch::tests::tempdir("file-stamp");
        let path = dir.join("p.wasm");
        std::fs::write(&path, b"one").unwrap();
        let first = FileStamp::of(&path).unwrap();
        let _ = std::fs::read(&path).unwrap();
        assert_eq!(FileStamp::of(&path).unwrap(), first);
        std::fs::write(&path, b"three").unwrap();
        assert_ne!(FileStamp::of(&path).unwrap(), first, "rewritten");
        let second = FileStamp::of(&path).unwrap();
        let other = dir.join("q.wasm");
        std::fs::write(&other, b"three").unwrap();
        std::fs::rename(&other, &path).unwrap();
        assert_ne!(FileStamp::of(&path).unwrap(), second, "replaced");
        assert!(FileStamp::of(&dir.join("missing.wasm")).is_none());
    }

    fn conds(o: &Outcome) -> Vec<(String, String, String)> {
        o.status
            .conditions
            .iter()
            .flatten()
            .map(|c| (c.type_.clone(), c.status.clone(), c.reason.clone()))
            .collect()
    }

    fn t(a: &str, b: &str, c: &str) -> (String, String, String) {
        (a.into(), b.into(), c.into())
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_good_plugin_becomes_ready_and_resolvable_by_name() {
        let rt = runtime();
        let checker = Checker {
            runtime: rt.clone(),
            fetch: fetch_context(&rt),
        };
        let echo = test_plugin("test-echo");
        let mut spec = file_spec(&echo);
        spec.failure_policy = FailurePolicy::Ignore;
        spec.config = Some(json!({"label": "from-default"}));
        spec.limits = Some(WasmPluginLimits {
            timeout: Some("250ms".into()),
            ..Default::default()
        });
        let o = checker.check(&wp("echo", spec)).await;
        assert!(o.failure.is_none(), "{:?}", o.failure);
        assert_eq!(
            conds(&o),
            [
                t("Fetched", "True", "Fetched"),
                t("Compiled", "True", "Compiled"),
                t("Ready", "True", "Ready")
            ]
        );
        let bytes = std::fs::read(&echo).unwrap();
        assert_eq!(
            o.status.digest.as_deref(),
            Some(crate::plugin_fetch::sha256_digest(&bytes).as_str())
        );
        assert_eq!(o.status.world.as_deref(), Some("mutator"));
        assert_eq!(o.status.observed_generation, Some(3));
        let info = o.status.info.clone().unwrap();
        assert_eq!(
            (info.name.as_str(), info.version.as_str()),
            ("test-echo", "0.1.0")
        );
        let ready = o.ready.clone().unwrap();
        assert_eq!(ready.limits.timeout, Duration::from_millis(250));

        // Through the registry, as the sync path sees it.
        let registry = WasmPluginRegistry::new();
        registry.set_ready(ready);
        let resolver = PluginResolver::new(rt.clone(), registry, fetch_context(&rt));
        let by_name = WasmUse {
            plugin: Some("echo".into()),
            ..Default::default()
        };
        let r = resolver
            .resolve_use(&by_name, World::Mutator, "spec.mutation.spec[0].wasm")
            .await
            .unwrap();
        assert_eq!(r.config, r#"{"label":"from-default"}"#);
        assert_eq!(r.failure_policy, FailurePolicy::Ignore);
        assert_eq!(r.plugin.limits().timeout, Duration::from_millis(250));
        let out = r
            .plugin
            .mutate(
                &syncweave_runtime::CallContext {
                    cluster_name: "c".into(),
                    cluster_path: None,
                    direction: syncweave_runtime::Direction::KcpToService,
                    owner: "pr".into(),
                },
                &r.config,
                r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}"#,
                None,
            )
            .unwrap();
        assert!(out.contains("from-default"), "{out}");

        // A use's own config replaces the default and is validated.
        let bad = WasmUse {
            plugin: Some("echo".into()),
            config: Some(json!({"label": 1})),
            ..Default::default()
        };
        let e = resolver
            .resolve_use(&bad, World::Mutator, "spec.mutation.spec[0].wasm")
            .await
            .unwrap_err();
        assert_eq!(e.kind, ResolveErrorKind::InvalidConfig);
        assert_eq!(e.field, "spec.mutation.spec[0].wasm.config");
        assert!(
            e.message
                .contains("WasmPlugin \"echo\" rejected this config"),
            "{e}"
        );

        let e = resolver
            .resolve_use(&by_name, World::Namer, "spec.naming.wasm")
            .await
            .unwrap_err();
        assert_eq!(e.field, "spec.naming.wasm.plugin");
        assert_eq!(e.kind, ResolveErrorKind::WrongWorld);
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn each_failure_sets_the_right_condition() {
        let rt = runtime();
        let checker = Checker {
            runtime: rt.clone(),
            fetch: fetch_context(&rt),
        };

        let o = checker
            .check(&wp(
                "missing",
                file_spec(std::path::Path::new("/nope/x.wasm")),
            ))
            .await;
        assert_eq!(
            conds(&o),
            [
                t("Fetched", "False", "FetchFailed"),
                t("Compiled", "Unknown", "NotFetched"),
                t("Ready", "False", "FetchFailed")
            ]
        );
        let f = o.failure.unwrap();
        assert!(f.message.contains("/nope/x.wasm"), "{f:?}");
        assert!(f.transient);
        assert!(o.ready.is_none());

        let o = checker
            .check(&wp(
                "bad-ref",
                WasmPluginSpec {
                    source: "oci://ghcr.io/x/y:v1".into(),
                    ..Default::default()
                },
            ))
            .await;
        assert_eq!(o.failure.as_ref().unwrap().reason, "InvalidSource");
        assert!(
            o.failure.as_ref().unwrap().message.contains("spec.source"),
            "{:?}",
            o.failure
        );
        assert!(!o.failure.unwrap().transient);

        let junk = crate::plugin_fetch::tests::tempdir("ctl-junk").join("junk.wasm");
        std::fs::write(&junk, b"\0asm\x01\0\0\0").unwrap();
        let o = checker.check(&wp("junk", file_spec(&junk))).await;
        assert_eq!(
            conds(&o),
            [
                t("Fetched", "True", "Fetched"),
                t("Compiled", "False", "CompileFailed"),
                t("Ready", "False", "CompileFailed")
            ]
        );
        assert!(o.status.digest.is_some());
        assert!(o.failure.unwrap().message.contains("core Wasm module"));

        let mut spec = file_spec(&test_plugin("test-echo"));
        spec.config = Some(json!({"label": ["not", "a", "string"]}));
        let o = checker.check(&wp("bad-config", spec)).await;
        assert_eq!(
            conds(&o),
            [
                t("Fetched", "True", "Fetched"),
                t("Compiled", "True", "Compiled"),
                t("Ready", "False", "InvalidConfig")
            ]
        );
        let f = o.failure.unwrap();
        assert!(
            f.message.starts_with(
                "spec.config: the plugin rejected its default config: label: must be a string"
            ),
            "{f:?}"
        );

        let mut spec = file_spec(&test_plugin("test-echo"));
        spec.limits = Some(WasmPluginLimits {
            timeout: Some("soon".into()),
            ..Default::default()
        });
        let o = checker.check(&wp("bad-limits", spec)).await;
        assert_eq!(o.failure.as_ref().unwrap().reason, "InvalidLimits");
        assert!(
            o.failure
                .unwrap()
                .message
                .starts_with("spec.limits.timeout:")
        );
    }

    #[test]
    fn merging_keeps_transition_times_of_unchanged_conditions() {
        let then = Time(Timestamp::from_second(1_000_000).unwrap());
        let now = Time(Timestamp::from_second(2_000_000).unwrap());
        let mk = |ready: bool| WasmPluginStatus {
            conditions: Some(vec![
                condition(CONDITION_FETCHED, Some(true), "Fetched", "m", Some(1)),
                condition(CONDITION_READY, Some(ready), "X", "m", Some(1)),
            ]),
            ..Default::default()
        };
        let old = merge_status(None, mk(false), &then);
        assert!(
            old.conditions
                .as_ref()
                .unwrap()
                .iter()
                .all(|c| c.last_transition_time == then)
        );
        // Unchanged: identical, so no status write.
        assert_eq!(merge_status(Some(&old), mk(false), &now), old);
        // Ready flips: only its time moves.
        let new = merge_status(Some(&old), mk(true), &now);
        let c = new.conditions.unwrap();
        assert_eq!(c[0].last_transition_time, then);
        assert_eq!(c[1].last_transition_time, now);
    }
}
