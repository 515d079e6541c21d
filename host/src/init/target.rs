//! One worker per InitTarget: resolve its WorkspaceType to an initializer
//! and virtual-workspace URLs (one per shard), watch the initializing
//! LogicalClusters behind each URL, and reconcile them through a work queue.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kube::Client;
use kube::api::{Api, DynamicObject};
use kube::runtime::watcher;
use serde_json::Value;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tokio_util::task::AbortOnDropHandle;
use tracing::{debug, info, warn};

use super::{InitError, Shared, workspacetype_resource};
use crate::apis::WorkspaceTypeReference;
use crate::apis::kcp::{CLUSTER_ANNOTATION, logical_cluster};
use crate::controller::Controller;
use crate::controller::queue::WorkQueue;
use crate::controller::runner::Outcome;
use crate::ops::metrics::METRICS;

/// Upstream runs 4 workers per target.
const WORKERS: usize = 4;

/// One initializing workspace, as seen through one virtual workspace.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ClusterKey {
    pub vw_url: Arc<str>,
    /// Logical-cluster name.
    pub cluster: String,
}

impl std::fmt::Display for ClusterKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (through {})", self.cluster, self.vw_url)
    }
}

/// Which InitTarget a worker serves.
#[derive(Debug, Clone)]
pub(crate) struct TargetId {
    pub name: String,
    pub uid: String,
    /// Logical cluster of the InitTarget (its `kcp.io/cluster`).
    pub own_cluster: String,
    pub workspace_type: WorkspaceTypeReference,
}

#[derive(Default)]
struct State {
    /// `<cluster of the WorkspaceType>:<name>`, once the type is known.
    initializer: Option<String>,
    /// Initializing workspaces currently listed by each virtual workspace.
    known: HashMap<Arc<str>, HashSet<String>>,
    /// Clients for `<vw>/clusters/<cluster>`, dropped with the workspace.
    clients: HashMap<ClusterKey, Client>,
}

pub(crate) struct Target {
    pub shared: Arc<Shared>,
    pub id: TargetId,
    /// Workspace holding the WorkspaceType (path or cluster name).
    pub wst_workspace: String,
    queue: Arc<WorkQueue<ClusterKey>>,
    state: Mutex<State>,
}

impl Target {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn initializer(&self) -> Option<String> {
        self.state().initializer.clone()
    }

    /// Whether the virtual workspace still lists the workspace as
    /// initializing with our initializer: once it drops out, retries stop.
    pub fn is_known(&self, key: &ClusterKey) -> bool {
        self.state()
            .known
            .get(&key.vw_url)
            .is_some_and(|s| s.contains(&key.cluster))
    }

    pub fn cluster_client(&self, key: &ClusterKey) -> Result<Client, InitError> {
        if let Some(c) = self.state().clients.get(key) {
            return Ok(c.clone());
        }
        let c = self
            .shared
            .client_at(&format!("{}/clusters/{}", key.vw_url, key.cluster))?;
        self.state().clients.insert(key.clone(), c.clone());
        Ok(c)
    }

    fn forget_cluster(&self, key: &ClusterKey) {
        let mut st = self.state();
        if let Some(s) = st.known.get_mut(&key.vw_url) {
            s.remove(&key.cluster);
        }
        st.clients.remove(key);
    }

    fn add_cluster(&self, key: ClusterKey) {
        {
            let mut st = self.state();
            st.known
                .entry(key.vw_url.clone())
                .or_default()
                .insert(key.cluster.clone());
        }
        self.queue.add(key);
    }

    /// Replace the known set of one virtual workspace after a (re)list.
    fn replace_known(&self, url: &Arc<str>, clusters: HashSet<String>) {
        let mut st = self.state();
        st.clients
            .retain(|k, _| k.vw_url != *url || clusters.contains(&k.cluster));
        st.known.insert(url.clone(), clusters);
    }

    fn drop_vw(&self, url: &Arc<str>) {
        let mut st = self.state();
        st.known.remove(url);
        st.clients.retain(|k, _| k.vw_url != *url);
    }

    /// Retry every known workspace now, forgetting backoff.
    fn kick_all(&self) {
        let keys: Vec<ClusterKey> = {
            let st = self.state();
            st.known
                .iter()
                .flat_map(|(url, cs)| {
                    cs.iter().map(|c| ClusterKey {
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
}

/// Run the worker of one InitTarget until `cancel` fires.
pub(crate) async fn run(
    shared: Arc<Shared>,
    id: TargetId,
    cancel: CancellationToken,
    kick: Arc<Notify>,
) {
    let wst_workspace = if id.workspace_type.path.is_empty() {
        id.own_cluster.clone()
    } else {
        id.workspace_type.path.clone()
    };
    info!(init_target = %id.name, workspace_type = %format!("{wst_workspace}:{}", id.workspace_type.name), "starting InitTarget worker");
    let target = Arc::new(Target {
        shared,
        id,
        wst_workspace,
        queue: WorkQueue::new(Duration::from_millis(500), Duration::from_secs(120)),
        state: Mutex::new(State::default()),
    });
    Controller::new(target.clone(), target.queue.clone(), cancel)
        .workers(WORKERS)
        .feed_once({
            let target = target.clone();
            async move {
                loop {
                    kick.notified().await;
                    target.kick_all();
                }
            }
        })
        // Follows the WorkspaceType; it starts and stops the watches of its
        // virtual workspaces itself (they end with it).
        .feed("workspacetype-watch", {
            let target = target.clone();
            move |_| watch_workspace_type(target.clone())
        })
        .run()
        .await;
    info!(init_target = %target.id.name, "stopped InitTarget worker");
}

impl crate::controller::runner::Reconcile for Target {
    type Key = ClusterKey;
    type Error = InitError;
    const TASK: &'static str = "init-worker";

    fn name(&self) -> &str {
        &self.id.name
    }

    fn reconcile<'a>(
        &'a self,
        key: &'a ClusterKey,
    ) -> futures::future::BoxFuture<'a, Result<Outcome, InitError>> {
        Box::pin(Target::reconcile(self, key))
    }

    fn panicked(&self, message: String) -> InitError {
        InitError::Panicked(message)
    }

    fn record<'a>(
        &'a self,
        key: &'a ClusterKey,
        result: &'a Result<Outcome, InitError>,
        _took: Duration,
    ) -> futures::future::BoxFuture<'a, ()> {
        Box::pin(async move {
            match result {
                Ok(Outcome::Done | Outcome::Gone) => {
                    METRICS.init_reconciled(&self.id.name, "success")
                }
                Ok(Outcome::Requeue(_)) => METRICS.init_reconciled(&self.id.name, "requeue"),
                Err(e) => {
                    METRICS.init_reconciled(&self.id.name, "error");
                    warn!(init_target = %self.id.name, cluster = %key.cluster, error = %e, "initializing workspace failed; will retry");
                }
            }
        })
    }

    /// A workspace is initialized once; it is looked at again only when its
    /// virtual workspace shows it again.
    fn resync_period(&self) -> Option<Duration> {
        None
    }
}

/// The `initializingworkspaces` URLs a WorkspaceType publishes.
pub fn initializing_urls(wst: &Value) -> Vec<String> {
    let mut urls: Vec<String> = wst
        .pointer("/status/virtualWorkspaces")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v["url"].as_str())
        .filter(|u| u.contains("/initializingworkspaces/"))
        .map(|u| u.trim_end_matches('/').to_string())
        .collect();
    urls.sort();
    urls.dedup();
    urls
}

/// `<logical cluster of the WorkspaceType>:<name>`, kcp's initializer name.
pub fn initializer_for(wst: &DynamicObject) -> Option<String> {
    let cluster = wst.metadata.annotations.as_ref()?.get(CLUSTER_ANNOTATION)?;
    Some(format!("{cluster}:{}", wst.metadata.name.as_deref()?))
}

/// Follow the WorkspaceType; start and stop virtual-workspace watches as
/// its URLs change. Runs until the worker is cancelled.
async fn watch_workspace_type(target: Arc<Target>) {
    let name = target.id.workspace_type.name.clone();
    let client = loop {
        match target.shared.workspace_client(&target.wst_workspace) {
            Ok(c) => break c,
            Err(e) => {
                warn!(init_target = %target.id.name, error = %e, "cannot reach the WorkspaceType's workspace; retrying");
                tokio::time::sleep(Duration::from_secs(10)).await;
            }
        }
    };
    let api: Api<DynamicObject> = Api::all_with(client, &workspacetype_resource());
    let cfg = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let mut vws: HashMap<Arc<str>, AbortOnDropHandle<()>> = HashMap::new();
    let mut found_in_list = false;
    let describe = format!("WorkspaceType {}:{name}", target.wst_workspace);
    crate::controller::watch::drive_reported(
        watcher(api, cfg),
        &describe,
        |e| {
            (crate::controller::watch::status_code(e) == Some(403)).then(|| {
                "grant the agent's user list/watch on workspacetypes in that workspace".into()
            })
        },
        |ev| match ev {
            watcher::Event::Init => found_in_list = false,
            watcher::Event::InitApply(wst) | watcher::Event::Apply(wst) => {
                found_in_list = true;
                on_workspace_type(&target, &wst, &mut vws);
            }
            watcher::Event::InitDone => {
                if !found_in_list {
                    warn!(init_target = %target.id.name, "{describe} not found; create it or fix spec.workspaceTypeRef (waiting)");
                    stop_all(&target, &mut vws);
                }
            }
            watcher::Event::Delete(_) => {
                warn!(init_target = %target.id.name, "{describe} was deleted; waiting for it to come back");
                stop_all(&target, &mut vws);
            }
        },
    )
    .await;
    stop_all(&target, &mut vws);
}

fn stop_all(target: &Target, vws: &mut HashMap<Arc<str>, AbortOnDropHandle<()>>) {
    for (url, h) in vws.drain() {
        h.abort();
        target.drop_vw(&url);
    }
}

fn on_workspace_type(
    target: &Arc<Target>,
    wst: &DynamicObject,
    vws: &mut HashMap<Arc<str>, AbortOnDropHandle<()>>,
) {
    let Some(initializer) = initializer_for(wst) else {
        warn!(init_target = %target.id.name, "WorkspaceType has no kcp.io/cluster annotation; is the workspace a kcp workspace?");
        return;
    };
    let changed = {
        let mut st = target.state();
        let changed = st.initializer.as_deref() != Some(initializer.as_str());
        st.initializer = Some(initializer.clone());
        changed
    };
    if changed {
        stop_all(target, vws);
        if wst.data.pointer("/spec/initializer") != Some(&Value::Bool(true)) {
            warn!(init_target = %target.id.name, %initializer, "the WorkspaceType does not set spec.initializer: true, so its workspaces never wait for this agent; set it");
        }
        info!(init_target = %target.id.name, %initializer, "serving initializer");
    }
    let urls = initializing_urls(&wst.data);
    if urls.is_empty() {
        info!(init_target = %target.id.name, "waiting for kcp to publish the WorkspaceType's virtual workspace URLs");
    }
    let wanted: HashSet<Arc<str>> = urls.into_iter().map(Arc::from).collect();
    vws.retain(|url, h| {
        let keep = wanted.contains(url);
        if !keep {
            h.abort();
            target.drop_vw(url);
        }
        keep
    });
    for url in wanted {
        if vws.contains_key(&url) {
            continue;
        }
        debug!(init_target = %target.id.name, vw = %url, "watching initializing workspaces");
        // Supervised; the handle aborts it when dropped (the URL left the
        // WorkspaceType, or the worker stopped), so no watch outlives it.
        let h = AbortOnDropHandle::new(tokio::spawn({
            let (target, url) = (target.clone(), url.clone());
            crate::controller::supervise::supervised(
                "init-vw-watch",
                target.id.name.clone(),
                CancellationToken::new(),
                move || watch_vw(target.clone(), url.clone()),
            )
        }));
        vws.insert(url, h);
    }
}

/// Wildcard watch of the LogicalClusters waiting for our initializer.
async fn watch_vw(target: Arc<Target>, url: Arc<str>) {
    let client = match target.shared.client_at(&format!("{url}/clusters/*")) {
        Ok(c) => c,
        Err(e) => {
            warn!(init_target = %target.id.name, vw = %url, error = %e, "cannot watch initializing workspaces");
            return;
        }
    };
    let api: Api<DynamicObject> = Api::all_with(client, &logical_cluster());
    let mut relist: Option<HashSet<String>> = None;
    let key_of = |o: &DynamicObject| -> Option<ClusterKey> {
        let cluster = o.metadata.annotations.as_ref()?.get(CLUSTER_ANNOTATION)?;
        Some(ClusterKey {
            vw_url: url.clone(),
            cluster: cluster.clone(),
        })
    };
    let describe = format!("initializing workspaces at {url}");
    crate::controller::watch::drive_reported(
        watcher(api, watcher::Config::default()),
        &describe,
        |e| {
            (crate::controller::watch::status_code(e) == Some(403)).then(|| {
                format!(
                    "grant the agent's user verb initialize on workspacetypes/{} in workspace {}",
                    target.id.workspace_type.name, target.wst_workspace
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
                    target.add_cluster(k);
                }
            }
            watcher::Event::InitDone => {
                if let Some(r) = relist.take() {
                    target.replace_known(&url, r);
                }
            }
            watcher::Event::Apply(o) => {
                if let Some(k) = key_of(&o) {
                    debug!(init_target = %target.id.name, cluster = %k.cluster, "initializing workspace");
                    target.add_cluster(k);
                }
            }
            watcher::Event::Delete(o) => {
                if let Some(k) = key_of(&o) {
                    debug!(init_target = %target.id.name, cluster = %k.cluster, "workspace no longer initializing");
                    target.forget_cluster(&k);
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
    fn only_initializing_urls_are_used() {
        let wst = json!({"status": {"virtualWorkspaces": [
            {"type": "initializing", "url": "https://s1:6443/services/initializingworkspaces/abc:t/"},
            {"type": "terminating", "url": "https://s1:6443/services/terminatingworkspaces/abc:t"},
            {"type": "initializing", "url": "https://s2:6443/services/initializingworkspaces/abc:t"},
        ]}});
        assert_eq!(
            initializing_urls(&wst),
            [
                "https://s1:6443/services/initializingworkspaces/abc:t",
                "https://s2:6443/services/initializingworkspaces/abc:t"
            ]
        );
        assert!(initializing_urls(&json!({})).is_empty());
    }

    #[test]
    fn initializer_is_cluster_and_name() {
        let wst: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "WorkspaceType",
            "metadata": {"name": "my-type", "annotations": {"kcp.io/cluster": "34ejyubde4a0b5uw", "kcp.io/path": "root:org"}},
        }))
        .unwrap();
        assert_eq!(
            initializer_for(&wst).as_deref(),
            Some("34ejyubde4a0b5uw:my-type")
        );
        let bare: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "WorkspaceType", "metadata": {"name": "x"},
        }))
        .unwrap();
        assert_eq!(initializer_for(&bare), None);
    }
}
