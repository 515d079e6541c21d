//! The WasmPlugin controller: for each WasmPlugin on the service cluster,
//! fetch → compile (or reuse) → describe → validate the default config →
//! run its worked examples (the self-test gate), then decide which digests
//! serve ([`decide`]: a failing new digest leaves the previous one serving;
//! a canary splits objects between the new and the stable digest) and
//! record it in status, in Events and in the [`WasmPluginRegistry`] the
//! sync path reads.

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
use syncweave_runtime::{FailureKind, Limits, Plugin, PluginErrorKind, PluginFailure, Runtime};
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use super::configmaps::{ConfigMapKey, ConfigMapWatches};
use super::registry::{Canary, ReadyPlugin, Serving, WasmPluginRegistry};
use super::rollout::CanaryRule;
use super::selftest::SelfTest;
use crate::apis::wasmplugin::{
    CONDITION_COMPILED, CONDITION_FETCHED, CONDITION_READY, CONDITION_SELF_TESTED,
    WasmPluginCanaryStatus, WasmPluginStable,
};
use crate::apis::{WasmPlugin, WasmPluginInfo, WasmPluginStatus};
use crate::controller::Controller;
use crate::controller::feed::Feed;
use crate::controller::queue::WorkQueue;
use crate::controller::runner::Outcome as RunOutcome;
use crate::plugin::fetch::{FetchContext, Fetched, PluginRef};
use kube::runtime::events::{Event as KubeEvent, EventType, Recorder};

/// How often every WasmPlugin is checked again even without changes: file
/// and ConfigMap sources can change under the same spec.
pub const DEFAULT_RESYNC: Duration = Duration::from_secs(60);
pub const DEFAULT_WORKERS: usize = 2;
/// How often the error counts of active digests are written to status
/// (only those that changed).
pub const DEFAULT_STATS_INTERVAL: Duration = Duration::from_secs(10);
/// Field manager of the controller's status writes.
pub const COMPONENT: &str = "syncweave-wasmplugin-controller";

#[derive(Debug, Clone)]
pub struct ControllerConfig {
    pub resync: Duration,
    pub workers: usize,
    /// See [`DEFAULT_STATS_INTERVAL`].
    pub stats_interval: Duration,
}

impl Default for ControllerConfig {
    fn default() -> Self {
        ControllerConfig {
            resync: DEFAULT_RESYNC,
            workers: DEFAULT_WORKERS,
            stats_interval: DEFAULT_STATS_INTERVAL,
        }
    }
}

/// What checking one WasmPlugin found.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Status without timestamps (see [`merge_status`]), and without
    /// `stable`/`canary`, which depend on what served before
    /// ([`decide`]).
    pub status: WasmPluginStatus,
    pub ready: Option<ReadyPlugin>,
    pub failure: Option<Failure>,
    /// `spec.rollout.canary`, checked; `None` without one or at fraction 1.
    pub canary: Option<Arc<CanaryRule>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The condition that went False: Fetched, Compiled, SelfTested or Ready.
    pub condition: &'static str,
    /// Condition and Event reason, e.g. FetchFailed.
    pub reason: String,
    pub message: String,
    /// Retry with backoff rather than waiting for the next resync.
    pub transient: bool,
    /// Whether the digest that served before keeps serving. True for every
    /// check of the plugin itself: a new digest that fails them is not
    /// used, and nothing that worked stops. A failure that must revoke the
    /// old code too (a trust decision) sets it to false.
    pub keep_previous: bool,
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

/// The conditions before Ready, in the order they are reached.
const STEPS: [&str; 3] = [CONDITION_FETCHED, CONDITION_COMPILED, CONDITION_SELF_TESTED];

/// A failed check: `condition` False (or, for a Ready-level failure,
/// every step not reached Unknown), Ready False, with what went wrong.
fn failed(
    mut status: WasmPluginStatus,
    condition_type: &'static str,
    reason: &str,
    message: String,
    transient: bool,
) -> Outcome {
    let generation = status.observed_generation;
    let mut conds = status.conditions.take().unwrap_or_default();
    let mut unknown = None;
    for step in STEPS.into_iter().skip(conds.len()) {
        if step == condition_type {
            conds.push(condition(step, Some(false), reason, &message, generation));
            unknown = Some(format!("Not{}", step));
            continue;
        }
        let (why, msg) = match &unknown {
            // After a failed step: that step has to pass first.
            Some(r) => (r.clone(), format!("{condition_type} is False")),
            // A Ready-level failure before this step (the spec).
            None => (reason.to_string(), format!("not attempted: {message}")),
        };
        conds.push(condition(step, None, &why, &msg, generation));
    }
    conds.push(condition(
        CONDITION_READY,
        Some(false),
        reason,
        &message,
        generation,
    ));
    status.conditions = Some(conds);
    Outcome {
        status,
        ready: None,
        failure: Some(Failure {
            condition: condition_type,
            reason: reason.into(),
            message,
            transient,
            keep_previous: true,
        }),
        canary: None,
    }
}

impl Checker {
    fn limits(&self, wp: &WasmPlugin) -> Result<Limits, String> {
        let rcfg = self.runtime.config();
        match wp
            .spec
            .limits
            .as_ref()
            .map(|l| l.to_limits(rcfg.default_limits, rcfg.max_memory_bytes, "spec.limits"))
        {
            None => Ok(rcfg.default_limits),
            Some(Ok(l)) => Ok(l),
            Some(Err(e)) => Err(format!("{e}; fix spec.limits")),
        }
    }

    pub async fn check(&self, wp: &WasmPlugin) -> Outcome {
        let spec = &wp.spec;
        let status = WasmPluginStatus {
            observed_generation: wp.metadata.generation,
            ..Default::default()
        };
        let limits = match self.limits(wp) {
            Ok(l) => l,
            Err(msg) => return failed(status, CONDITION_READY, "InvalidLimits", msg, false),
        };
        let canary = match spec.rollout.as_ref().and_then(|r| r.canary.as_ref()) {
            None => None,
            Some(c) => match CanaryRule::from_spec(c, "spec.rollout.canary") {
                Ok(rule) => rule.map(Arc::new),
                Err(msg) => {
                    return failed(status, CONDITION_READY, "InvalidRollout", msg, false);
                }
            },
        };
        let r = match PluginRef::parse(&spec.source, spec.sha256.as_deref(), "spec") {
            Ok(r) => r,
            Err(e) => {
                return failed(
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
                let mut o = failed(
                    status,
                    CONDITION_FETCHED,
                    e.kind.reason(),
                    e.to_string(),
                    e.kind.is_transient(),
                );
                // A trust decision, not a check of the new code: with a
                // signature required that is missing or does not verify (or
                // keys that cannot be read), nothing of this plugin may run,
                // the digest that served before included (it was loaded
                // under other rules). Fail closed.
                if e.kind.is_trust()
                    && let Some(f) = o.failure.as_mut()
                {
                    f.keep_previous = false;
                }
                return o;
            }
        };
        let fetched_msg = match &fetched.signature {
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
        };
        let mut o = self
            .check_fetched(wp, limits, &fetched, &spec.source, &fetched_msg, status)
            .await;
        if o.ready.is_some() {
            self.remember(&r, &fetched).await;
        }
        o.canary = canary;
        o
    }

    /// A file or ConfigMap can change under the same reference: keep the
    /// bytes of a digest that passed its checks in the content-addressed
    /// cache, so that a restarted agent still finds it while a newer one
    /// fails (remote sources are cached by the fetch itself; built-ins ship
    /// with the agent).
    async fn remember(&self, r: &PluginRef, fetched: &Fetched) {
        use crate::plugin::fetch::Location;
        let (Location::File { .. } | Location::ConfigMap { .. }, Some(cache)) =
            (&r.location, self.fetch.cache().cloned())
        else {
            return;
        };
        let bytes = fetched.bytes.clone();
        let _ = tokio::task::spawn_blocking(move || cache.put(&bytes)).await;
    }

    /// Load `stable` (from status, after an agent restart) again: from the
    /// content-addressed cache, else from its source pinned to its digest,
    /// then through every check, under the current spec (limits, config).
    pub async fn restore(
        &self,
        wp: &WasmPlugin,
        stable: &WasmPluginStable,
    ) -> Result<ReadyPlugin, String> {
        let limits = self.limits(wp)?;
        // A signature required now is checked again: the content cache
        // holds bytes, not the trust they were loaded under.
        let cached = match self
            .fetch
            .cache()
            .cloned()
            .filter(|_| wp.spec.signature.is_none())
        {
            Some(cache) => {
                let (digest, max) = (stable.digest.clone(), self.fetch.options().max_bytes);
                tokio::task::spawn_blocking(move || cache.get(&digest, max))
                    .await
                    .ok()
                    .flatten()
            }
            None => None,
        };
        let fetched = match cached {
            Some(bytes) => Fetched {
                bytes: bytes.into(),
                digest: stable.digest.clone(),
                cached: true,
                signature: None,
                source: stable.source.clone(),
            },
            None => {
                let hex = stable.digest.strip_prefix("sha256:").ok_or_else(|| {
                    format!(
                        "status.stable.digest {:?} is not sha256:<hex>",
                        stable.digest
                    )
                })?;
                let r = PluginRef::parse(&stable.source, Some(hex), "status.stable")
                    .map_err(|e| e.to_string())?;
                // With the pull Secret, and the signature checked again.
                self.fetch
                    .fetch_for(&r, &wp.spec)
                    .await
                    .map_err(|e| e.to_string())?
            }
        };
        let status = WasmPluginStatus {
            observed_generation: wp.metadata.generation,
            ..Default::default()
        };
        let o = self
            .check_fetched(wp, limits, &fetched, &stable.source, "restored", status)
            .await;
        o.ready
            .ok_or_else(|| o.failure.map(|f| f.message).unwrap_or_default())
    }

    /// Compile (or reuse), check the spec against the world, describe,
    /// validate the default config and run the self-test.
    async fn check_fetched(
        &self,
        wp: &WasmPlugin,
        limits: Limits,
        fetched: &Fetched,
        source: &str,
        fetched_msg: &str,
        mut status: WasmPluginStatus,
    ) -> Outcome {
        let name = wp.name_any();
        let generation = wp.metadata.generation;
        let spec = &wp.spec;
        let cond = |t, ok, reason: &str, msg: &str| condition(t, ok, reason, msg, generation);
        let mut conds = vec![cond(CONDITION_FETCHED, Some(true), "Fetched", fetched_msg)];
        status.digest = Some(fetched.digest.clone());
        status.conditions = Some(conds.clone());

        let plugin = match fetched.load(&self.runtime, &name, Some(limits)).await {
            Ok(p) => p,
            Err(f) => {
                return failed(
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

        let unsupported = spec.unsupported_for_world(plugin.world());
        if !unsupported.is_empty() {
            return failed(
                status,
                CONDITION_READY,
                "UnsupportedSpec",
                unsupported.join("; "),
                false,
            );
        }

        let default_config = spec.config.clone();
        let check = move |p: &Plugin| {
            let info = p.describe().map_err(|f| ("DescribeFailed", f))?;
            if let Some(c) = &default_config {
                p.validate_config(&c.to_string())
                    .map_err(|f| ("InvalidConfig", f))?;
            }
            let examples = p.run_examples().map_err(|f| ("DescribeFailed", f))?;
            Ok::<_, (&str, PluginFailure)>((info, examples))
        };
        // On the blocking pool; a failure of the call itself (a panic) is
        // a broken describe().
        let checked = self
            .runtime
            .call_pool()
            .run(&plugin, move |p| Ok(check(p)))
            .await
            .unwrap_or_else(|f| Err(("DescribeFailed", f)));
        let (info, examples) = match checked {
            Ok(x) => x,
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
                return failed(
                    status,
                    CONDITION_READY,
                    reason,
                    message,
                    f.kind.is_transient(),
                );
            }
        };
        status.info = Some(WasmPluginInfo {
            name: info.name.clone(),
            version: info.version.clone(),
            description: Some(info.description.clone()).filter(|d| !d.is_empty()),
        });
        let test = SelfTest::from_outcomes(examples);
        if let Some(summary) = test.failure_summary() {
            return failed(
                status,
                CONDITION_SELF_TESTED,
                "SelfTestFailed",
                format!(
                    "{} failed its self-test: {summary}; reproduce with `syncweave plugin test \
                     --examples {source}`",
                    fetched.digest
                ),
                test.is_transient(),
            );
        }
        conds.push(cond(
            CONDITION_SELF_TESTED,
            Some(true),
            "Passed",
            &match test.total() {
                0 => "describe() ships no examples; nothing to run".to_string(),
                n => format!("{n} of {n} examples passed"),
            },
        ));
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
                source: source.to_string(),
                stats: Default::default(),
            }),
            failure: None,
            canary: None,
        }
    }
}

/// What serves a WasmPlugin after a check, given what served before.
#[derive(Debug)]
pub struct Decision {
    /// `None`: nothing can serve (no previous digest, or the failure
    /// revokes it); the plugin is not Ready.
    pub serving: Option<Serving>,
    /// Said on the Ready condition after the check's own message.
    pub note: Option<String>,
    /// The Ready condition's reason when it is True (`Ready`, `Canary`,
    /// `Promoted`).
    pub ready_reason: &'static str,
}

/// The rollout rules. `previous` is what served this WasmPlugin (same uid)
/// before the check:
/// - the checked digest failed: `previous` keeps serving (canary included),
///   and says why spec.source is held back; without one, nothing serves;
/// - it passed, a canary is set, and `previous` has another stable digest:
///   the new digest serves the canary's objects, the stable one the rest;
/// - it passed otherwise (no canary, fraction 1, nothing before, or the
///   stable digest itself): it serves every object. A canary digest that
///   becomes stable this way is promoted.
pub fn decide(outcome: &Outcome, previous: Option<Serving>) -> Decision {
    match (&outcome.ready, &outcome.failure, previous) {
        (Some(new), _, Some(prev))
            if outcome.canary.is_some() && prev.stable.digest() != new.digest() =>
        {
            let rule = outcome.canary.clone().expect("checked above");
            let note = format!(
                "canary: {} serves {}, and the stable {} the other objects; remove \
                 spec.rollout (or set canary.fraction to 1) to promote it",
                new.digest(),
                rule.describe(),
                prev.stable.digest()
            );
            Decision {
                serving: Some(Serving {
                    stable: prev.stable,
                    canary: Some(Canary {
                        plugin: new.clone(),
                        rule,
                    }),
                    held_back: None,
                }),
                note: Some(note),
                ready_reason: "Canary",
            }
        }
        (Some(new), _, prev) => {
            let promoted = prev
                .as_ref()
                .and_then(|p| p.canary.as_ref())
                .is_some_and(|c| c.plugin.digest() == new.digest());
            let note = if promoted {
                Some(format!(
                    "{} is promoted: it serves every object",
                    new.digest()
                ))
            } else if outcome.canary.is_some() {
                Some(format!(
                    "spec.rollout.canary: there is no other digest to keep for the objects \
                     outside the canary, so {} serves every object",
                    new.digest()
                ))
            } else {
                None
            };
            Decision {
                serving: Some(Serving::new(new.clone())),
                note,
                ready_reason: if promoted { "Promoted" } else { "Ready" },
            }
        }
        (None, Some(f), Some(prev)) if f.keep_previous => {
            let mut serving = prev;
            let mut note = format!(
                "{} keeps serving (the last digest that passed its checks)",
                serving.stable.digest()
            );
            if let Some(c) = &serving.canary {
                note.push_str(&format!(
                    ", and the canary {} still serves {}",
                    c.plugin.digest(),
                    c.rule.describe()
                ));
            }
            serving.held_back = Some(format!("spec.source is not used: {}; {note}", f.message));
            Decision {
                serving: Some(serving),
                note: Some(note),
                ready_reason: "Ready",
            }
        }
        _ => Decision {
            serving: None,
            note: None,
            ready_reason: "Ready",
        },
    }
}

impl Outcome {
    /// The status to write once `d` is in the registry (`stored`, with its
    /// counts): the check's conditions with `d`'s note on Ready, and the
    /// digests that serve.
    pub fn status_with(&self, d: &Decision, stored: Option<&Serving>) -> WasmPluginStatus {
        let mut status = self.status.clone();
        if let Some(ready) = status
            .conditions
            .iter_mut()
            .flatten()
            .find(|c| c.type_ == CONDITION_READY)
        {
            if ready.status == "True" {
                ready.reason = d.ready_reason.into();
            }
            if let Some(note) = &d.note {
                ready.message = format!("{}; {note}", ready.message);
            }
        }
        serving_status(&mut status, stored);
        status
    }
}

/// `status.stable` and `status.canary` from what serves, with its counts.
fn serving_status(status: &mut WasmPluginStatus, serving: Option<&Serving>) {
    let count = |p: &ReadyPlugin| i64::try_from(p.stats.errors()).unwrap_or(i64::MAX);
    status.stable = serving.map(|s| WasmPluginStable {
        digest: s.stable.digest().to_string(),
        source: s.stable.source.clone(),
        errors: count(&s.stable),
    });
    status.canary = serving.and_then(|s| s.canary.as_ref()).map(|c| {
        let (fraction, selector) = match &*c.rule {
            CanaryRule::Fraction { fraction, .. } => (Some(*fraction), None),
            CanaryRule::Selector { text, .. } => (None, Some(text.clone())),
        };
        WasmPluginCanaryStatus {
            digest: c.plugin.digest().to_string(),
            errors: count(&c.plugin),
            fraction,
            selector,
        }
    });
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
) -> Result<(), crate::plugin::fetch::SetupError> {
    let fetch = FetchContext::new(crate::plugin::fetch::FetchOptions::for_runtime(
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
    use crate::plugin::fetch::reference::Location;
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

/// [`run`] with explicit parts, on the agent's runner ([`crate::controller::runner`]):
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
    let counts = {
        let ctl = ctl.clone();
        let mut every = tokio::time::interval(cfg.stats_interval.max(Duration::from_millis(100)));
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        async move {
            loop {
                every.tick().await;
                ctl.refresh_counts().await;
            }
        }
    };
    // A plugin is checked when its spec changes, not on the controller's
    // own status writes.
    let mut feed = Feed::new(|wp: &WasmPlugin| wp.metadata.name.clone(), spec_version);
    // The reflector owns its store's writer, which cannot be made twice: the
    // watch runs once, for the life of the controller (it re-lists and
    // retries by itself).
    let watch = {
        let queue = queue.clone();
        async move {
            crate::controller::watch::drive_reported(
                reflector::reflector(writer, watcher(api, watcher::Config::default())),
                "WasmPlugins",
                |e| {
                    (crate::controller::watch::status_code(e) == Some(404)).then(|| {
                        "the WasmPlugin CRD is not installed on the service cluster: apply \
                         charts/syncweave/crds/syncweave.dev_wasmplugins.yaml"
                            .to_string()
                    })
                },
                |ev| {
                    // A deleted plugin is reconciled once more: it finds the
                    // object gone, drops it from the registry and its
                    // ConfigMap watch, and forgets the key (no timer is left
                    // behind).
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
            )
            .await
        }
    };
    Controller::new(ctl, queue, cancel)
        .workers(cfg.workers)
        .feed_once(counts)
        .feed_once(watch)
        .run()
        .await;
    info!("WasmPlugin controller stopped");
}

impl crate::controller::runner::Reconcile for Ctl {
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
            note: Some(crate::kube::recorder::note(message)),
            action: "Check".into(),
            secondary: None,
        };
        if let Err(e) = self.events.publish(&ev, &wp.object_ref(&())).await {
            warn!(wasmplugin = %wp.name_any(), reason, error = %e, "cannot record an Event");
        }
    }

    /// Check one WasmPlugin and apply the rollout rules ([`decide`]);
    /// returns whether to retry with backoff.
    async fn check(&self, wp: &WasmPlugin) -> bool {
        let name = wp.name_any();
        let name = name.as_str();
        let uid = wp.uid().unwrap_or_default();
        let outcome = self.checker.check(wp).await;
        let old = wp.status.as_ref();

        // What served before: in memory, else (after a restart) the stable
        // digest status recorded, when this check needs one.
        let mut previous = self
            .registry
            .serving(name)
            .ok()
            .filter(|s| s.stable.uid == uid);
        let desired = outcome.ready.as_ref().map(|r| r.digest().to_string());
        let needs_previous = match (&outcome.ready, &outcome.failure) {
            (Some(_), _) => outcome.canary.is_some(),
            (None, Some(f)) => f.keep_previous,
            (None, None) => false,
        };
        let mut restore_error = None;
        if previous.is_none()
            && needs_previous
            && let Some(stable) = old.and_then(|s| s.stable.as_ref())
            && desired.as_deref() != Some(stable.digest.as_str())
        {
            match self.checker.restore(wp, stable).await {
                Ok(p) => {
                    info!(wasmplugin = name, digest = %stable.digest, "loaded the stable digest recorded in status again");
                    previous = Some(Serving::new(p));
                }
                Err(e) => {
                    warn!(wasmplugin = name, digest = %stable.digest, error = %e, "cannot load the stable digest recorded in status again");
                    restore_error = Some(format!(
                        "the previous digest {} could not be loaded again: {e}",
                        stable.digest
                    ));
                }
            }
        }
        let mut decision = decide(&outcome, previous.clone());
        if let Some(e) = restore_error {
            decision.note = Some(match decision.note.take() {
                Some(n) => format!("{n} ({e})"),
                None => e,
            });
        }

        let stored = match &decision.serving {
            Some(s) => Some(self.registry.set_serving(s.clone())),
            None => {
                let f = outcome
                    .failure
                    .as_ref()
                    .expect("nothing serves only after a failure");
                let mut reason = format!("{}=False ({}): {}", f.condition, f.reason, f.message);
                if let Some(n) = &decision.note {
                    reason.push_str(&format!("; {n}"));
                }
                self.registry.set_failed(name, reason);
                None
            }
        };
        let now = Time(Timestamp::now());
        let status = merge_status(old, outcome.status_with(&decision, stored.as_ref()), &now);

        let mut retry = outcome.failure.as_ref().is_some_and(|f| f.transient);
        if old != Some(&status) && !self.write_status(wp, &status, None).await {
            retry = true;
        }

        let (old_ready, new_ready) = (ready_condition(old), ready_condition(Some(&status)));
        let unchanged = match (old_ready, new_ready) {
            (Some(o), Some(n)) => {
                o.status == n.status && o.reason == n.reason && o.message == n.message
            }
            _ => false,
        };
        match (&outcome.failure, new_ready) {
            (Some(f), Some(c)) => {
                if unchanged {
                    // Reported when it started; resyncs only confirm it.
                    debug!(wasmplugin = name, reason = %f.reason, "WasmPlugin is still not ready");
                } else {
                    warn!(wasmplugin = name, reason = %f.reason, message = %c.message, "WasmPlugin is not ready");
                    self.event(wp, EventType::Warning, &f.reason, &c.message)
                        .await;
                }
            }
            (None, Some(c)) if !unchanged => {
                let msg = format!(
                    "{}; world {}, digest {}",
                    c.message,
                    status.world.as_deref().unwrap_or("?"),
                    status.digest.as_deref().unwrap_or("?"),
                );
                info!(wasmplugin = name, digest = ?status.digest, world = ?status.world, canary = ?status.canary.as_ref().map(|c| &c.digest), "WasmPlugin is ready");
                self.event(wp, EventType::Normal, &c.reason, &msg).await;
            }
            _ => {}
        }
        retry
    }

    /// Write `status` (server-side apply, as the only manager of status).
    /// With `resource_version`, only over that version (a conflict means
    /// the object changed: nothing is written). Returns whether it worked.
    async fn write_status(
        &self,
        wp: &WasmPlugin,
        status: &WasmPluginStatus,
        resource_version: Option<&str>,
    ) -> bool {
        let name = wp.name_any();
        let mut patch = json!({
            "apiVersion": WasmPlugin::api_version(&()),
            "kind": WasmPlugin::kind(&()),
            "status": status,
        });
        if let Some(rv) = resource_version {
            patch["metadata"] = json!({"resourceVersion": rv});
        }
        match self
            .api
            .patch_status(
                &name,
                &PatchParams::apply(COMPONENT).force(),
                &Patch::Apply(&patch),
            )
            .await
        {
            Ok(_) => true,
            Err(kube::Error::Api(e)) if e.code == 409 && resource_version.is_some() => {
                debug!(wasmplugin = %name, "WasmPlugin changed meanwhile; its counts are written next time");
                false
            }
            Err(e) => {
                warn!(wasmplugin = %name, error = %e, "cannot write WasmPlugin status; retrying");
                false
            }
        }
    }

    /// Bring the error counts in status up to date: every WasmPlugin whose
    /// counts changed since they were written gets one status write (the
    /// rest of its status as it is). Run every stats interval, so a plugin
    /// that keeps failing costs one write per interval, and an idle one none.
    async fn refresh_counts(&self) {
        for (name, serving) in self.registry.all_serving() {
            let Some(wp) = self.store.get(&ObjectRef::new(&name)) else {
                continue;
            };
            let Some(old) = wp.status.as_ref() else {
                continue;
            };
            // Only counts of the digests the status already shows: anything
            // else is a check in flight, which writes its own.
            let same_digests = old.stable.as_ref().map(|s| s.digest.as_str())
                == Some(serving.stable.digest())
                && old.canary.as_ref().map(|c| c.digest.as_str())
                    == serving.canary.as_ref().map(|c| c.plugin.digest());
            if !same_digests || wp.uid().as_deref() != Some(serving.stable.uid.as_str()) {
                continue;
            }
            let mut status = old.clone();
            serving_status(&mut status, Some(&serving));
            if status.stable.as_ref().map(|s| &s.source) != old.stable.as_ref().map(|s| &s.source) {
                continue;
            }
            if &status != old {
                debug!(wasmplugin = %name, "writing WasmPlugin error counts");
                self.write_status(&wp, &status, wp.metadata.resource_version.as_deref())
                    .await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use kube::api::ObjectMeta;
    use serde_json::json;
    use syncweave_runtime::World;

    use super::*;
    use crate::apis::{FailurePolicy, WasmPluginLimits, WasmPluginSpec, WasmUse};
    use crate::plugin::resolve::{PluginResolver, ResolveErrorKind};
    use crate::testing::{fetch_context, runtime, test_plugin};

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
        let dir = crate::testing::tempdir("file-stamp");
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
                t("SelfTested", "True", "Passed"),
                t("Ready", "True", "Ready")
            ]
        );
        let bytes = std::fs::read(&echo).unwrap();
        assert_eq!(
            o.status.digest.as_deref(),
            Some(crate::plugin::fetch::sha256_digest(&bytes).as_str())
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
                t("SelfTested", "Unknown", "NotFetched"),
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

        let junk = crate::testing::tempdir("ctl-junk").join("junk.wasm");
        std::fs::write(&junk, b"\0asm\x01\0\0\0").unwrap();
        let o = checker.check(&wp("junk", file_spec(&junk))).await;
        assert_eq!(
            conds(&o),
            [
                t("Fetched", "True", "Fetched"),
                t("Compiled", "False", "CompileFailed"),
                t("SelfTested", "Unknown", "NotCompiled"),
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
                t("SelfTested", "Unknown", "InvalidConfig"),
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

    fn checker() -> Checker {
        let rt = runtime();
        Checker {
            runtime: rt.clone(),
            fetch: fetch_context(&rt),
        }
    }

    fn canary_spec(fraction: f64) -> Option<crate::apis::WasmPluginRollout> {
        Some(crate::apis::WasmPluginRollout {
            canary: Some(crate::apis::WasmPluginCanary {
                fraction: Some(fraction),
                selector: None,
            }),
        })
    }

    /// The self-test gate: a digest whose worked example gives another
    /// answer than it promises is refused, and the conditions say which
    /// example failed and how (expected vs got).
    #[tokio::test(flavor = "multi_thread")]
    async fn a_digest_whose_example_fails_is_refused() {
        let o = checker()
            .check(&wp("namer", file_spec(&test_plugin("test-namer"))))
            .await;
        assert_eq!(
            conds(&o),
            [
                t("Fetched", "True", "Fetched"),
                t("Compiled", "True", "Compiled"),
                t("SelfTested", "False", "SelfTestFailed"),
                t("Ready", "False", "SelfTestFailed")
            ]
        );
        assert!(o.ready.is_none());
        let f = o.failure.clone().unwrap();
        assert_eq!(f.condition, CONDITION_SELF_TESTED);
        assert!(f.keep_previous && !f.transient, "{f:?}");
        let digest = o.status.digest.clone().unwrap();
        assert!(
            f.message.starts_with(&format!(
                "{digest} failed its self-test: example \"deliberately-wrong\" failed: output \
                 differs at /name: expected \"a\", got \"fixture-cluster-a\"; reproduce with \
                 `syncweave plugin test --examples file://"
            )),
            "{}",
            f.message
        );
        // describe() ran: status still says what the digest is.
        assert_eq!(o.status.info.as_ref().unwrap().name, "test-namer");

        // Nothing served before: nothing serves now.
        let d = decide(&o, None);
        assert!(d.serving.is_none());
    }

    /// Spec fields the world cannot honour are refused, not ignored.
    #[tokio::test(flavor = "multi_thread")]
    async fn fields_the_world_cannot_honour_are_refused() {
        let mut spec = WasmPluginSpec {
            source: "projection".into(),
            rollout: canary_spec(0.5),
            ..Default::default()
        };
        let o = checker().check(&wp("proj", spec.clone())).await;
        let f = o.failure.unwrap();
        assert_eq!(f.reason, "UnsupportedSpec");
        assert!(
            f.message
                .starts_with("spec.rollout.canary applies only to mutator and namer plugins"),
            "{}",
            f.message
        );
        spec.rollout = None;
        spec.source = "naming".into();
        spec.failure_policy = FailurePolicy::Ignore;
        let o = checker().check(&wp("namer", spec)).await;
        let f = o.failure.unwrap();
        assert_eq!(f.reason, "UnsupportedSpec");
        assert!(
            f.message.starts_with("spec.failurePolicy: Ignore"),
            "{}",
            f.message
        );

        // A canary the CRD would refuse (stored under an older CRD).
        let o = checker()
            .check(&wp(
                "bad-canary",
                WasmPluginSpec {
                    source: "naming".into(),
                    rollout: canary_spec(0.0),
                    ..Default::default()
                },
            ))
            .await;
        let f = o.failure.unwrap();
        assert_eq!(f.reason, "InvalidRollout");
        assert!(
            f.message
                .starts_with("spec.rollout.canary.fraction: 0 is outside (0, 1]"),
            "{}",
            f.message
        );
    }

    /// Two digests that pass their checks (the test mutator and the
    /// built-in namer; the rules do not look at worlds).
    async fn two_ready(canary: Option<f64>) -> (Outcome, Outcome) {
        let c = checker();
        let mut a = file_spec(&test_plugin("test-echo"));
        a.rollout = canary.and_then(canary_spec);
        let mut b = WasmPluginSpec {
            source: "naming".into(),
            ..Default::default()
        };
        b.rollout = canary.and_then(canary_spec);
        let a = c.check(&wp("p", a)).await;
        let b = c.check(&wp("p", b)).await;
        assert!(
            a.ready.is_some() && b.ready.is_some(),
            "{:?} {:?}",
            a.failure,
            b.failure
        );
        (a, b)
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn rollout_rules() {
        let (old, new) = two_ready(None).await;
        let old_digest = old.ready.as_ref().unwrap().digest().to_string();
        let new_digest = new.ready.as_ref().unwrap().digest().to_string();
        let first = decide(&old, None);
        let stable = first.serving.clone().unwrap();
        assert!(stable.canary.is_none() && stable.held_back.is_none());
        assert_eq!(first.ready_reason, "Ready");

        // No canary: the new digest serves everything at once.
        let d = decide(&new, Some(stable.clone()));
        assert_eq!(d.serving.unwrap().stable.digest(), new_digest);

        // A failing new spec: the previous digest keeps serving, and says why.
        let bad = checker()
            .check(&wp("p", file_spec(&test_plugin("test-namer"))))
            .await;
        let d = decide(&bad, Some(stable.clone()));
        let s = d.serving.unwrap();
        assert_eq!(s.stable.digest(), old_digest);
        let held = s.held_back.unwrap();
        assert!(
            held.starts_with("spec.source is not used: sha256:"),
            "{held}"
        );
        assert!(
            held.contains("example \"deliberately-wrong\" failed"),
            "{held}"
        );
        assert!(
            held.ends_with(&format!(
                "{old_digest} keeps serving (the last digest that passed its checks)"
            )),
            "{held}"
        );
        let status = bad.status_with(&decide(&bad, Some(stable.clone())), None);
        let ready = status
            .conditions
            .iter()
            .flatten()
            .find(|c| c.type_ == "Ready")
            .unwrap();
        assert_eq!(
            (ready.status.as_str(), ready.reason.as_str()),
            ("False", "SelfTestFailed")
        );
        assert!(
            ready
                .message
                .ends_with("keeps serving (the last digest that passed its checks)"),
            "{}",
            ready.message
        );
        // A failure that revokes the old code too leaves nothing serving.
        let mut revoking = bad.clone();
        revoking.failure.as_mut().unwrap().keep_previous = false;
        assert!(decide(&revoking, Some(stable.clone())).serving.is_none());

        // A canary: the new digest serves the canary's share, the previous
        // one the rest; status shows both.
        let (_, new_canary) = two_ready(Some(0.25)).await;
        let d = decide(&new_canary, Some(stable.clone()));
        assert_eq!(d.ready_reason, "Canary");
        let s = d.serving.clone().unwrap();
        assert_eq!(s.stable.digest(), old_digest);
        let c = s.canary.clone().unwrap();
        assert_eq!(c.plugin.digest(), new_digest);
        s.stable.stats.failed();
        let status = new_canary.status_with(&d, Some(&s));
        assert_eq!(
            status.stable,
            Some(WasmPluginStable {
                digest: old_digest.clone(),
                source: stable.stable.source.clone(),
                errors: 1
            })
        );
        assert_eq!(
            status.canary,
            Some(WasmPluginCanaryStatus {
                digest: new_digest.clone(),
                errors: 0,
                fraction: Some(0.25),
                selector: None
            })
        );
        let ready = status
            .conditions
            .iter()
            .flatten()
            .find(|c| c.type_ == "Ready")
            .unwrap();
        assert_eq!(
            (ready.status.as_str(), ready.reason.as_str()),
            ("True", "Canary")
        );
        assert!(
            ready.message.contains("serves 25% of objects"),
            "{}",
            ready.message
        );

        // A canary with nothing before it serves everything.
        let d = decide(&new_canary, None);
        assert!(d.serving.unwrap().canary.is_none());
        assert!(d.note.unwrap().contains("no other digest to keep"));

        // Promotion: the canary digest without a canary becomes stable.
        let d = decide(&new, Some(s.clone()));
        assert_eq!(d.ready_reason, "Promoted");
        let promoted = d.serving.unwrap();
        assert_eq!(promoted.stable.digest(), new_digest);
        assert!(promoted.canary.is_none());

        // Back to the stable digest (with the canary still set): the canary ends.
        let (old_canary, _) = two_ready(Some(0.25)).await;
        let d = decide(&old_canary, Some(s.clone()));
        let back = d.serving.unwrap();
        assert_eq!(back.stable.digest(), old_digest);
        assert!(back.canary.is_none());

        // During a canary, a failing newer spec keeps both serving.
        let d = decide(&bad, Some(s.clone()));
        let kept = d.serving.unwrap();
        assert_eq!(kept.canary.unwrap().plugin.digest(), new_digest);
        assert!(kept.held_back.unwrap().contains("and the canary"));
    }

    /// A file's digest that passed its checks is kept in the source cache,
    /// so a restarted agent loads it again after the file changed.
    #[tokio::test(flavor = "multi_thread")]
    async fn the_stable_digest_is_restored_after_its_file_changed() {
        let c = checker();
        let dir = crate::testing::tempdir("restore");
        let path = dir.join("p.wasm");
        std::fs::copy(test_plugin("test-echo"), &path).unwrap();
        let w = wp("p", file_spec(&path));
        let o = c.check(&w).await;
        let ready = o.ready.unwrap();
        let stable = WasmPluginStable {
            digest: ready.digest().into(),
            source: ready.source.clone(),
            errors: 0,
        };
        std::fs::copy(test_plugin("test-namer"), &path).unwrap();
        let restored = c.restore(&w, &stable).await.unwrap();
        assert_eq!(restored.digest(), stable.digest);

        // Neither in the cache nor at its source: the error says so.
        let missing = WasmPluginStable {
            digest: format!("sha256:{}", "0".repeat(64)),
            ..stable
        };
        let e = c.restore(&w, &missing).await.unwrap_err();
        assert!(e.contains("sha256 pins sha256:000"), "{e}");
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
