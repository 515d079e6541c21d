//! One worker per WorkspaceType: it follows the type for its
//! virtual-workspace URLs (one per shard), watches the LogicalClusters
//! waiting for its initializer behind each `initializingworkspaces` URL
//! and, when one of its InitTargets declares `spec.termination`, those
//! waiting for its terminator behind each `terminatingworkspaces` URL, and
//! reconciles each workspace through a work queue: [`initialize`] and
//! [`terminate`] passes over every InitTarget of the type at once.
//!
//! [`initialize`]: super::initialize
//! [`terminate`]: super::terminate

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kube::Client;
use kube::api::{Api, DynamicObject};
use kube::runtime::watcher;
use serde_json::Value;
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::AbortOnDropHandle;
use tracing::{debug, info, warn};

use super::cache::{InitialSync, TargetCache};
use super::key::TargetKey;
use super::status::{Book, Problem, Slot};
use super::{InitError, Shared, workspacetype_resource};
use crate::apis::InitTarget;
use crate::apis::kcp::{CLUSTER_ANNOTATION, logical_cluster};
use crate::controller::Controller;
use crate::controller::queue::WorkQueue;
use crate::controller::runner::Outcome;
use crate::ops::metrics::METRICS;

/// Upstream runs 4 workers per type.
const WORKERS: usize = 4;

/// A WorkspaceType by the logical cluster that holds it and its name. Its
/// display, `<cluster>:<name>`, is kcp's name for both the type's
/// initializer and its terminator.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TypeKey {
    pub cluster: String,
    pub name: String,
}

impl std::fmt::Display for TypeKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.cluster, self.name)
    }
}

pub use super::key::Phase;

impl Phase {
    /// The marker of this phase's virtual-workspace URLs.
    fn url_marker(self) -> &'static str {
        match self {
            Phase::Initializing => "/initializingworkspaces/",
            Phase::Terminating => "/terminatingworkspaces/",
        }
    }

    /// The verb kcp checks on the WorkspaceType for this virtual workspace.
    fn verb(self) -> &'static str {
        match self {
            Phase::Initializing => "initialize",
            Phase::Terminating => "terminate",
        }
    }
}

/// One workspace waiting for this worker, as seen through one virtual
/// workspace.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct WorkspaceKey {
    pub phase: Phase,
    pub vw_url: Arc<str>,
    /// Logical-cluster name.
    pub cluster: String,
}

impl std::fmt::Display for WorkspaceKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({}, through {})",
            self.cluster,
            self.phase.to_string().to_lowercase(),
            self.vw_url
        )
    }
}

type VwId = (Phase, Arc<str>);

#[derive(Default)]
pub(super) struct State {
    /// The WorkspaceType as last watched (`None` while it does not exist).
    wst: Option<DynamicObject>,
    /// Workspaces each virtual workspace currently lists.
    known: HashMap<VwId, HashSet<String>>,
    /// Clients for `<vw>/clusters/<cluster>`, dropped with the workspace.
    clients: HashMap<WorkspaceKey, Client>,
    /// The watch of each virtual workspace; dropping one stops it.
    vws: HashMap<VwId, AbortOnDropHandle<()>>,
    /// When each termination step of a workspace started waiting: by
    /// (cluster, InitTarget, step index).
    pub(super) steps: HashMap<(String, TargetKey, usize), Instant>,
}

pub struct TypeWorker {
    pub(super) shared: Arc<Shared>,
    pub(super) ty: TypeKey,
    cache: Arc<TargetCache>,
    pub(super) book: Arc<Book>,
    members: Mutex<BTreeSet<TargetKey>>,
    initial: Arc<InitialSync>,
    queue: Arc<WorkQueue<WorkspaceKey>>,
    state: Mutex<State>,
    kick: Notify,
    changed: Notify,
}

impl TypeWorker {
    pub(super) fn new(
        shared: Arc<Shared>,
        ty: TypeKey,
        cache: Arc<TargetCache>,
        book: Arc<Book>,
        initial: Arc<InitialSync>,
    ) -> Arc<Self> {
        Arc::new(TypeWorker {
            shared,
            ty,
            cache,
            book,
            members: Mutex::new(BTreeSet::new()),
            initial,
            queue: WorkQueue::new(Duration::from_millis(500), Duration::from_secs(120)),
            state: Mutex::new(State::default()),
            kick: Notify::new(),
            changed: Notify::new(),
        })
    }

    pub(super) fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn member_keys(&self) -> std::sync::MutexGuard<'_, BTreeSet<TargetKey>> {
        self.members.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn add_target(&self, key: TargetKey) {
        if self.member_keys().insert(key) {
            self.targets_changed();
            self.kick();
        }
    }

    /// Whether no target is left.
    pub(super) fn remove_target(&self, key: &TargetKey) -> bool {
        let mut m = self.member_keys();
        m.remove(key);
        let empty = m.is_empty();
        drop(m);
        self.targets_changed();
        empty
    }

    /// Retry every known workspace now, forgetting backoff.
    pub(super) fn kick(&self) {
        self.kick.notify_one();
    }

    /// A target came, went or changed its spec.
    pub(super) fn targets_changed(&self) {
        self.changed.notify_one();
    }

    /// The InitTargets of this type as they are now, in key order (the
    /// order their sources are applied in). Targets whose spec does not
    /// parse are left out (their status says why).
    pub(super) fn members(&self) -> Vec<(TargetKey, InitTarget)> {
        let keys: Vec<TargetKey> = self.member_keys().iter().cloned().collect();
        keys.into_iter()
            .filter_map(|k| {
                let c = self.cache.get(&k)?;
                let t = c.target.as_ref().ok()?.clone();
                Some((k, t))
            })
            .collect()
    }

    fn serves_terminator(&self, wst: &DynamicObject) -> bool {
        flag(wst, "terminator")
            && self
                .members()
                .iter()
                .any(|(_, t)| t.spec.termination.is_some())
    }

    /// Whether the virtual workspace still lists the workspace: once it
    /// drops out, retries stop.
    pub(super) fn is_known(&self, key: &WorkspaceKey) -> bool {
        self.state()
            .known
            .get(&(key.phase, key.vw_url.clone()))
            .is_some_and(|s| s.contains(&key.cluster))
    }

    pub(super) fn cluster_client(&self, key: &WorkspaceKey) -> Result<Client, InitError> {
        if let Some(c) = self.state().clients.get(key) {
            return Ok(c.clone());
        }
        let c = self
            .shared
            .client_at(&format!("{}/clusters/{}", key.vw_url, key.cluster))?;
        self.state().clients.insert(key.clone(), c.clone());
        Ok(c)
    }

    fn forget_cluster(&self, key: &WorkspaceKey) {
        let mut st = self.state();
        if let Some(s) = st.known.get_mut(&(key.phase, key.vw_url.clone())) {
            s.remove(&key.cluster);
        }
        st.clients.remove(key);
        if key.phase == Phase::Terminating {
            st.steps.retain(|(c, _, _), _| *c != key.cluster);
        }
        drop(st);
        self.book.forget_workspace(key.phase, &key.cluster);
    }

    fn add_cluster(&self, key: WorkspaceKey) {
        self.state()
            .known
            .entry((key.phase, key.vw_url.clone()))
            .or_default()
            .insert(key.cluster.clone());
        self.queue.add(key);
    }

    /// Replace the known set of one virtual workspace after a (re)list.
    fn replace_known(&self, vw: &VwId, clusters: HashSet<String>) {
        let gone: Vec<String> = {
            let mut st = self.state();
            st.clients.retain(|k, _| {
                k.phase != vw.0 || k.vw_url != vw.1 || clusters.contains(&k.cluster)
            });
            let old = st.known.insert(vw.clone(), clusters.clone());
            old.into_iter()
                .flatten()
                .filter(|c| !clusters.contains(c))
                .collect()
        };
        for c in gone {
            self.book.forget_workspace(vw.0, &c);
        }
    }

    fn kick_all(&self) {
        let keys: Vec<WorkspaceKey> = {
            let st = self.state();
            st.known
                .iter()
                .flat_map(|((phase, url), cs)| {
                    cs.iter().map(|c| WorkspaceKey {
                        phase: *phase,
                        vw_url: url.clone(),
                        cluster: c.clone(),
                    })
                })
                .collect()
        };
        for k in keys {
            self.queue.forget(&k);
            self.queue.add(k);
        }
    }

    /// Run until `cancel` fires.
    pub(super) async fn run(self: Arc<Self>, cancel: CancellationToken) {
        info!(workspace_type = %self.ty, "WorkspaceType worker started");
        let ty = self.ty.clone();
        Controller::new(self.clone(), self.queue.clone(), cancel)
            .workers(WORKERS)
            // Every InitTarget listed at start-up is on its worker first.
            .start_when(self.initial.wait())
            .feed_once({
                let w = self.clone();
                async move {
                    loop {
                        w.kick.notified().await;
                        w.kick_all();
                    }
                }
            })
            .feed_once({
                let w = self.clone();
                async move {
                    loop {
                        w.changed.notified().await;
                        w.sync_watches();
                    }
                }
            })
            // Follows the WorkspaceType; the virtual-workspace watches it
            // starts end with it.
            .feed("workspacetype-watch", {
                let w = self.clone();
                move |_| watch_workspace_type(w.clone())
            })
            .on_stop({
                let w = self.clone();
                move || {
                    w.state().vws.clear();
                }
            })
            .run()
            .await;
        info!(workspace_type = %ty, "WorkspaceType worker stopped");
    }

    /// Start and stop the virtual-workspace watches the WorkspaceType and
    /// the targets ask for, and say on each target what the type lacks.
    fn sync_watches(self: &Arc<Self>) {
        let wst = self.state().wst.clone();
        let members = self.members();
        let ty = self.ty.to_string();
        let mut wanted: HashSet<VwId> = HashSet::new();
        match &wst {
            None => {
                for (k, _) in &members {
                    self.book.set_problem(
                        k,
                        Slot::Type,
                        Some(Problem {
                            reason: "WorkspaceTypeNotFound",
                            message: format!(
                                "WorkspaceType {} (logical cluster {}) does not exist (any more); create it, or fix spec.workspaceTypeRef",
                                self.ty.name, self.ty.cluster
                            ),
                        }),
                    );
                    self.book.set_served(k, Some(ty.clone()), None);
                }
            }
            Some(wst) => {
                let initializer = flag(wst, "initializer");
                let serve_terminator = self.serves_terminator(wst);
                if initializer {
                    for u in vw_urls(&wst.data, Phase::Initializing) {
                        wanted.insert((Phase::Initializing, u.into()));
                    }
                }
                if serve_terminator {
                    for u in vw_urls(&wst.data, Phase::Terminating) {
                        wanted.insert((Phase::Terminating, u.into()));
                    }
                }
                for (k, t) in &members {
                    let problem = if !initializer && !t.spec.sources.is_empty() {
                        Some(Problem {
                            reason: "NotAnInitializer",
                            message: format!(
                                "WorkspaceType {ty} does not set spec.initializer: true, so its workspaces never wait for spec.sources; set it on the type (or empty spec.sources)"
                            ),
                        })
                    } else if t.spec.termination.is_some() && !flag(wst, "terminator") {
                        Some(Problem {
                            reason: "NotATerminator",
                            message: format!(
                                "WorkspaceType {ty} does not set spec.terminator: true, so spec.termination never runs; set it on the type (or remove spec.termination)"
                            ),
                        })
                    } else {
                        None
                    };
                    self.book.set_problem(k, Slot::Type, problem);
                    let terminator =
                        (serve_terminator && t.spec.termination.is_some()).then(|| ty.clone());
                    self.book.set_served(k, Some(ty.clone()), terminator);
                }
                let published = !vw_urls(&wst.data, Phase::Initializing).is_empty();
                if !published {
                    info!(workspace_type = %self.ty, "waiting for kcp to publish the WorkspaceType's virtual-workspace URLs");
                }
            }
        }
        let mut st = self.state();
        let stale: Vec<VwId> = st
            .vws
            .keys()
            .filter(|id| !wanted.contains(*id))
            .cloned()
            .collect();
        for id in stale {
            st.vws.remove(&id);
            st.known.remove(&id);
            st.clients
                .retain(|k, _| k.phase != id.0 || k.vw_url != id.1);
            debug!(workspace_type = %self.ty, vw = %id.1, "stopped watching");
        }
        for id in wanted {
            if st.vws.contains_key(&id) {
                continue;
            }
            debug!(workspace_type = %self.ty, phase = %id.0, vw = %id.1, "watching workspaces");
            // Supervised; the handle aborts it when dropped (the URL left
            // the WorkspaceType, or the worker stopped).
            let h = AbortOnDropHandle::new(tokio::spawn({
                let (w, id) = (self.clone(), id.clone());
                crate::controller::supervise::supervised(
                    "init-vw-watch",
                    self.ty.to_string(),
                    CancellationToken::new(),
                    move || watch_vw(w.clone(), id.clone()),
                )
            }));
            st.vws.insert(id, h);
        }
    }
}

impl crate::controller::runner::Reconcile for TypeWorker {
    type Key = WorkspaceKey;
    type Error = InitError;
    const TASK: &'static str = "init-worker";

    fn name(&self) -> &str {
        &self.ty.name
    }

    fn reconcile<'a>(
        &'a self,
        key: &'a WorkspaceKey,
    ) -> futures::future::BoxFuture<'a, Result<Outcome, InitError>> {
        Box::pin(async move {
            match key.phase {
                Phase::Initializing => self.initialize(key).await,
                Phase::Terminating => self.terminate(key).await,
            }
        })
    }

    fn panicked(&self, message: String) -> InitError {
        InitError::Panicked(message)
    }

    fn record<'a>(
        &'a self,
        key: &'a WorkspaceKey,
        result: &'a Result<Outcome, InitError>,
        _took: Duration,
    ) -> futures::future::BoxFuture<'a, ()> {
        Box::pin(async move {
            let result_label = match result {
                Ok(Outcome::Done | Outcome::Gone) => "success",
                Ok(Outcome::Requeue(_)) => "requeue",
                Err(_) => "error",
            };
            if key.phase == Phase::Initializing {
                for k in self.member_keys().iter() {
                    METRICS.init_reconciled(&k.name, result_label);
                }
            }
            if let Err(e) = result {
                let what = match key.phase {
                    Phase::Initializing => "initializing workspace failed; will retry",
                    Phase::Terminating => "terminating workspace failed; will retry",
                };
                warn!(workspace_type = %self.ty, cluster = %key.cluster, error = %e, "{what}");
            }
        })
    }

    /// A workspace is looked at again only when its virtual workspace shows
    /// it again, or a pass asked for it.
    fn resync_period(&self) -> Option<Duration> {
        None
    }
}

/// `spec.<name>` of a WorkspaceType is `true`.
fn flag(wst: &DynamicObject, name: &str) -> bool {
    wst.data.pointer(&format!("/spec/{name}")) == Some(&Value::Bool(true))
}

/// The virtual-workspace URLs of `phase` a WorkspaceType publishes (one per
/// shard).
pub fn vw_urls(wst: &Value, phase: Phase) -> Vec<String> {
    let mut urls: Vec<String> = wst
        .pointer("/status/virtualWorkspaces")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v["url"].as_str())
        .filter(|u| u.contains(phase.url_marker()))
        .map(|u| u.trim_end_matches('/').to_string())
        .collect();
    urls.sort();
    urls.dedup();
    urls
}

/// Follow the WorkspaceType in its logical cluster. Runs until the worker
/// is cancelled.
async fn watch_workspace_type(w: Arc<TypeWorker>) {
    let client = loop {
        match w.shared.workspace_client(&w.ty.cluster) {
            Ok(c) => break c,
            Err(e) => {
                warn!(workspace_type = %w.ty, error = %e, "cannot reach the WorkspaceType's workspace; retrying");
                tokio::time::sleep(Duration::from_secs(10)).await;
            }
        }
    };
    let api: Api<DynamicObject> = Api::all_with(client, &workspacetype_resource());
    let cfg = watcher::Config::default().fields(&format!("metadata.name={}", w.ty.name));
    let mut found_in_list = false;
    let describe = format!("WorkspaceType {}", w.ty);
    crate::controller::watch::drive_reported(
        watcher(api, cfg),
        &describe,
        |e| {
            (crate::controller::watch::status_code(e) == Some(403)).then(|| {
                format!(
                    "grant the agent's user list and watch on workspacetypes/{} in logical cluster {}",
                    w.ty.name, w.ty.cluster
                )
            })
        },
        |ev| match ev {
            watcher::Event::Init => found_in_list = false,
            watcher::Event::InitApply(wst) | watcher::Event::Apply(wst) => {
                found_in_list = true;
                w.state().wst = Some(wst);
                w.sync_watches();
            }
            watcher::Event::InitDone => {
                if !found_in_list {
                    warn!(workspace_type = %w.ty, "{describe} not found; waiting for it");
                    w.state().wst = None;
                    w.sync_watches();
                }
            }
            watcher::Event::Delete(_) => {
                warn!(workspace_type = %w.ty, "{describe} was deleted; waiting for it to come back");
                w.state().wst = None;
                w.sync_watches();
            }
        },
    )
    .await;
}

/// Wildcard watch of the LogicalClusters waiting for this worker in one
/// virtual workspace.
async fn watch_vw(w: Arc<TypeWorker>, id: VwId) {
    let (phase, url) = id.clone();
    let client = match w.shared.client_at(&format!("{url}/clusters/*")) {
        Ok(c) => c,
        Err(e) => {
            warn!(workspace_type = %w.ty, vw = %url, error = %e, "cannot watch the virtual workspace");
            return;
        }
    };
    let api: Api<DynamicObject> = Api::all_with(client, &logical_cluster());
    let mut relist: Option<HashSet<String>> = None;
    let key_of = |o: &DynamicObject| -> Option<WorkspaceKey> {
        let cluster = o.metadata.annotations.as_ref()?.get(CLUSTER_ANNOTATION)?;
        Some(WorkspaceKey {
            phase,
            vw_url: url.clone(),
            cluster: cluster.clone(),
        })
    };
    let describe = format!("{} workspaces at {url}", phase.to_string().to_lowercase());
    crate::controller::watch::drive_reported(
        watcher(api, watcher::Config::default()),
        &describe,
        |e| {
            (crate::controller::watch::status_code(e) == Some(403)).then(|| {
                format!(
                    "grant the agent's user verb {} on workspacetypes/{} in logical cluster {} (docs/rbac.md)",
                    phase.verb(),
                    w.ty.name,
                    w.ty.cluster
                )
            })
        },
        |ev| match ev {
            watcher::Event::Init => relist = Some(HashSet::new()),
            watcher::Event::InitApply(o) => {
                if let Some(k) = key_of(&o) {
                    if let Some(r) = relist.as_mut() {
                        r.insert(k.cluster.clone());
                    }
                    w.add_cluster(k);
                }
            }
            watcher::Event::InitDone => {
                if let Some(r) = relist.take() {
                    w.replace_known(&id, r);
                }
            }
            watcher::Event::Apply(o) => {
                if let Some(k) = key_of(&o) {
                    debug!(workspace_type = %w.ty, %phase, cluster = %k.cluster, "workspace waits for us");
                    w.add_cluster(k);
                }
            }
            watcher::Event::Delete(o) => {
                if let Some(k) = key_of(&o) {
                    debug!(workspace_type = %w.ty, %phase, cluster = %k.cluster, "workspace no longer waits for us");
                    w.forget_cluster(&k);
                }
            }
        },
    )
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn urls_by_phase() {
        let wst = json!({"status": {"virtualWorkspaces": [
            {"type": "initializing", "url": "https://s1:6443/services/initializingworkspaces/abc:t/"},
            {"type": "terminating", "url": "https://s1:6443/services/terminatingworkspaces/abc:t"},
            {"type": "initializing", "url": "https://s2:6443/services/initializingworkspaces/abc:t"},
        ]}});
        assert_eq!(
            vw_urls(&wst, Phase::Initializing),
            [
                "https://s1:6443/services/initializingworkspaces/abc:t",
                "https://s2:6443/services/initializingworkspaces/abc:t"
            ]
        );
        assert_eq!(
            vw_urls(&wst, Phase::Terminating),
            ["https://s1:6443/services/terminatingworkspaces/abc:t"]
        );
        assert!(vw_urls(&json!({}), Phase::Initializing).is_empty());
    }

    /// kcp names initializers and terminators `<cluster of the type>:<name>`.
    #[test]
    fn type_key_is_kcps_initializer_name() {
        let k = TypeKey {
            cluster: "34ejyubde4a0b5uw".into(),
            name: "my-type".into(),
        };
        assert_eq!(k.to_string(), "34ejyubde4a0b5uw:my-type");
    }
}
