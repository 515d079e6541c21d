//! The init role (`syncweave init`), replacing kcp's init-agent: InitTargets
//! in the config workspace name a WorkspaceType; every new workspace of that
//! type waits in phase Initializing until the agent has created the objects
//! the target's InitTemplates render, then the agent removes its
//! initializer and kcp marks the workspace Ready.
//!
//! Top to bottom:
//! - [`InitAgent`] runs the agent's runner ([`crate::controller::runner`]) over the
//!   InitTargets (and watches InitTemplates) in the config
//!   workspace and runs one [`target`] worker per InitTarget, keyed by UID;
//!   a worker stops when its InitTarget is deleted, stops matching the
//!   selector, or points at another WorkspaceType.
//! - A target worker resolves the WorkspaceType to its initializer and
//!   virtual-workspace URLs, watches the initializing LogicalClusters there
//!   and reconciles each through a work queue ([`reconcile`]).
//! - [`render`] picks the renderer plugin, [`apply`] orders and creates
//!   the rendered objects.

pub mod apply;
mod reconcile;
pub mod render;
mod target;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::Stream;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Client, Config};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::apis::InitTarget;
use crate::apis::kcp::CLUSTER_ANNOTATION;
use crate::controller::Controller;
use crate::controller::feed::Feed;
use crate::controller::queue::WorkQueue;
use crate::controller::runner::Outcome;
use crate::kube::kubeconfig::base_of;
use render::{RendererError, Renderers};
use syncweave_runtime::PluginFailure;

pub use target::ClusterKey;

/// How long a workspace waits when a rendered kind is not served yet
/// (upstream: 5 s).
pub const MISSING_KIND_RETRY: Duration = Duration::from_secs(5);

/// What went wrong while initializing one workspace. Every variant names
/// the InitTarget and, where there is one, the template and the object.
#[derive(Debug, thiserror::Error)]
pub enum InitError {
    #[error("{what}: {source}")]
    Kube {
        what: String,
        #[source]
        source: Box<kube::Error>,
    },
    #[error("InitTarget {target}: {source}")]
    Renderer {
        target: String,
        #[source]
        source: Box<RendererError>,
    },
    #[error(
        "InitTarget {target}: spec.sources[{index}]: no known source configured (set template.name)"
    )]
    NoSource { target: String, index: usize },
    #[error(
        "InitTarget {target}: spec.sources[{index}]: InitTemplate {template:?} not found in workspace {workspace}; create it there (an InitTemplate must live in its InitTarget's workspace)"
    )]
    TemplateNotFound {
        target: String,
        index: usize,
        template: String,
        workspace: String,
    },
    #[error("InitTarget {target}: InitTemplate {template:?}: {source}")]
    Render {
        target: String,
        template: String,
        #[source]
        source: Box<PluginFailure>,
    },
    #[error("InitTarget {target}: InitTemplate {template:?}: {object}: {source}")]
    Apply {
        target: String,
        template: String,
        object: String,
        #[source]
        source: Box<apply::ApplyError>,
    },
    #[error("{0}")]
    Setup(String),
    #[error(
        "initializing the workspace panicked (a bug in syncweave: please report it with this \
         message): {0}; the workspace is retried"
    )]
    Panicked(String),
}

impl InitError {
    fn kube(what: impl Into<String>) -> impl FnOnce(kube::Error) -> InitError {
        let what = what.into();
        move |source| InitError::Kube {
            what,
            source: Box::new(source),
        }
    }
}

/// Settings of the init role.
#[derive(Debug, Clone)]
pub struct InitConfig {
    /// Workspace path or logical-cluster name holding InitTargets and InitTemplates.
    pub config_workspace: String,
    /// Label selector for InitTargets ("" = all).
    pub selector: String,
}

pub fn inittarget_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(crate::apis::init::INIT_GROUP, "v1alpha1", "InitTarget"),
        "inittargets",
    )
}

pub fn inittemplate_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(crate::apis::init::INIT_GROUP, "v1alpha1", "InitTemplate"),
        "inittemplates",
    )
}

pub fn workspacetype_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("tenancy.kcp.io", "v1alpha1", "WorkspaceType"),
        "workspacetypes",
    )
}

/// The kcp connection and plugins every target worker shares.
pub(crate) struct Shared {
    /// Credentials and TLS settings; the URL is replaced per use.
    base: Config,
    /// `https://host:port`, without `/clusters/…`.
    base_url: String,
    config_workspace: String,
    config_client: Client,
    renderers: Renderers,
}

impl Shared {
    /// A client for an absolute URL (a workspace or a virtual workspace).
    fn client_at(&self, url: &str) -> Result<Client, InitError> {
        client_at(&self.base, url)
    }

    fn workspace_client(&self, workspace: &str) -> Result<Client, InitError> {
        self.client_at(&format!("{}/clusters/{workspace}", self.base_url))
    }
}

/// A client for `workspace` (path or logical-cluster name) on the kcp that
/// `kcp` points at, whatever workspace its own URL names.
pub fn workspace_client(kcp: &Config, workspace: &str) -> Result<Client, InitError> {
    let url = format!(
        "{}/clusters/{workspace}",
        base_of(&kcp.cluster_url.to_string())
    );
    client_at(kcp, &url)
}

/// A client for `workspace` without the write fence, for leader election
/// itself (it renews and releases the lease that opens the fence).
pub fn lease_client(kcp: &Config, workspace: &str) -> Result<Client, InitError> {
    let url = format!(
        "{}/clusters/{workspace}",
        base_of(&kcp.cluster_url.to_string())
    );
    let mut cfg = kcp.clone();
    cfg.cluster_url = url.parse().map_err(|e: http::uri::InvalidUri| {
        InitError::Setup(format!("invalid URL {url:?} for kcp: {e}"))
    })?;
    crate::kube::client::build_unfenced(cfg, "lease")
        .map_err(|e| InitError::Setup(format!("building a client for {url}: {e}")))
}

fn client_at(base: &Config, url: &str) -> Result<Client, InitError> {
    let mut cfg = base.clone();
    cfg.cluster_url = url.parse().map_err(|e: http::uri::InvalidUri| {
        InitError::Setup(format!("invalid URL {url:?} for kcp: {e}"))
    })?;
    crate::kube::client::build(cfg, "kcp")
        .map_err(|e| InitError::Setup(format!("building a client for {url}: {e}")))
}

struct Running {
    /// The InitTarget's name.
    name: String,
    /// `spec.workspaceTypeRef` the worker was started for.
    fingerprint: String,
    resource_version: Option<String>,
    cancel: CancellationToken,
    /// Asks the worker to retry every pending workspace now.
    kick: Arc<Notify>,
}

/// The init role's controller: one worker per selected InitTarget.
pub struct InitAgent {
    shared: Arc<Shared>,
    selector: String,
}

impl InitAgent {
    /// `kcp` is a config for kcp (any `/clusters/<x>` suffix is ignored);
    /// `renderers` loads the template renderers.
    pub fn new(kcp: Config, cfg: InitConfig, renderers: Renderers) -> Result<Self, InitError> {
        let config_client = workspace_client(&kcp, &cfg.config_workspace)?;
        let shared = Shared {
            base_url: base_of(&kcp.cluster_url.to_string()).to_string(),
            base: kcp,
            config_workspace: cfg.config_workspace.clone(),
            config_client,
            renderers,
        };
        Ok(InitAgent {
            shared: Arc::new(shared),
            selector: cfg.selector,
        })
    }

    /// Fail fast on credentials kcp refuses; anything else (CRDs not
    /// installed yet, kcp still starting) is retried by [`InitAgent::run`].
    pub async fn check_access(&self) -> Result<(), InitError> {
        let api: Api<DynamicObject> =
            Api::all_with(self.shared.config_client.clone(), &inittarget_resource());
        match api.list(&ListParams::default().limit(1)).await {
            Err(kube::Error::Api(s)) if s.code == 401 || s.code == 403 => {
                Err(InitError::Setup(format!(
                    "--config-workspace {}: listing InitTargets: access denied ({}); grant the agent's user access to the workspace and get/list/watch on initialization.kcp.io inittargets and inittemplates",
                    self.shared.config_workspace, s.message
                )))
            }
            Err(e) => {
                warn!(error = %e, "--config-workspace {}: cannot list InitTargets yet; retrying in the background", self.shared.config_workspace);
                Ok(())
            }
            Ok(_) => Ok(()),
        }
    }

    /// A cheap handle for readiness probes.
    pub fn clone_probe(&self) -> InitProbe {
        InitProbe {
            client: self.shared.config_client.clone(),
        }
    }

    /// Run until `cancel` fires. InitTargets go through the agent's runner
    /// ([`crate::controller::runner`]: one queue entry per target, supervised workers);
    /// each reconcile starts, restarts or kicks the target's worker, or
    /// stops the workers of a target that is gone. The watch enqueues a
    /// target on every change and, after each (re-)list, every target
    /// listed and every one that vanished while it was down. An InitTemplate
    /// change kicks every worker.
    pub async fn run(self, cancel: CancellationToken) {
        use kube::runtime::reflector;

        let ar = inittarget_resource();
        let writer = reflector::store::Writer::new(ar.clone());
        let mgr = Arc::new(Manager {
            shared: self.shared.clone(),
            store: writer.as_reader(),
            running: std::sync::Mutex::new(HashMap::new()),
            cancel: cancel.clone(),
        });
        let templates_changed = Arc::new(Notify::new());
        let templates: Api<DynamicObject> =
            Api::all_with(self.shared.config_client.clone(), &inittemplate_resource());
        info!(workspace = %self.shared.config_workspace, selector = %self.selector, "watching InitTargets");

        let queue: Arc<WorkQueue<String>> =
            WorkQueue::new(Duration::from_millis(500), Duration::from_secs(30));
        let targets: Api<DynamicObject> = Api::all_with(self.shared.config_client.clone(), &ar);
        let config_workspace = self.shared.config_workspace.clone();
        // Every change of a target is a new resourceVersion; a target gone
        // (deleted, no longer selected, or vanished while the watch was
        // down) is reconciled once more, to stop its worker.
        let mut feed = Feed::new(
            |o: &DynamicObject| o.metadata.name.clone(),
            |o: &DynamicObject| {
                use std::hash::{Hash, Hasher};
                let mut h = std::collections::hash_map::DefaultHasher::new();
                o.metadata.resource_version.hash(&mut h);
                h.finish()
            },
        );
        // The reflector owns its store's writer, which cannot be made twice:
        // the watch runs once, for the life of the agent (it re-lists and
        // retries by itself).
        let watch = {
            let queue = queue.clone();
            let selector = self.selector.clone();
            async move {
                crate::controller::watch::drive_reported(
                    reflector::reflector(
                        writer,
                        watcher(targets, watcher::Config::default().labels(&selector)),
                    ),
                    &format!("InitTargets in workspace {config_workspace}"),
                    |e| match crate::controller::watch::status_code(e) {
                        Some(404) => Some(
                            "install the InitTarget and InitTemplate CRDs there \
                             (charts/syncweave/crds/initialization.kcp.io_*.yaml)"
                                .into(),
                        ),
                        Some(401 | 403) => Some(
                            "grant the agent's user get/list/watch on inittargets and \
                             inittemplates there"
                                .into(),
                        ),
                        _ => None,
                    },
                    |ev| feed.on_event(&ev, &queue),
                )
                .await
            }
        };
        let stop = mgr.clone();
        Controller::new(mgr.clone(), queue, cancel)
            .feed_once(notify_on_events(
                "InitTemplates",
                watcher(templates, watcher::Config::default()),
                templates_changed.clone(),
            ))
            .feed_once(async move {
                loop {
                    templates_changed.notified().await;
                    // A fixed template should not wait for the backoff of
                    // every workspace that failed with the broken one.
                    mgr.kick_all();
                }
            })
            .feed_once(watch)
            .on_stop(move || stop.stop_all())
            .run()
            .await;
    }
}

impl crate::controller::runner::Reconcile for Manager {
    type Key = String;
    type Error = String;
    const TASK: &'static str = "inittarget-worker";

    fn name(&self) -> &str {
        "inittargets"
    }

    /// In memory only: starts, restarts, kicks or stops a target's worker.
    fn reconcile<'a>(
        &'a self,
        name: &'a String,
    ) -> futures::future::BoxFuture<'a, Result<Outcome, String>> {
        Box::pin(async move {
            match self
                .store
                .get(&ObjectRef::new_with(name, inittarget_resource()))
            {
                Some(obj) => {
                    self.reconcile_target(&obj);
                    Ok(Outcome::Done)
                }
                None => {
                    self.stop_named(name);
                    Ok(Outcome::Gone)
                }
            }
        })
    }

    fn panicked(&self, message: String) -> String {
        message
    }

    fn record<'a>(
        &'a self,
        name: &'a String,
        result: &'a Result<Outcome, String>,
        _took: Duration,
    ) -> futures::future::BoxFuture<'a, ()> {
        Box::pin(async move {
            if let Err(e) = result {
                warn!(init_target = %name, error = %e, "reconciling the InitTarget failed; retrying");
            }
        })
    }

    /// Every change is a watch event and the reconcile reads only the
    /// store: nothing to heal on a timer.
    fn resync_period(&self) -> Option<Duration> {
        None
    }
}

/// The running target workers, by InitTarget UID.
struct Manager {
    shared: Arc<Shared>,
    store: kube::runtime::reflector::Store<DynamicObject>,
    running: std::sync::Mutex<HashMap<String, Running>>,
    cancel: CancellationToken,
}

impl Manager {
    fn running(&self) -> std::sync::MutexGuard<'_, HashMap<String, Running>> {
        self.running.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn kick_all(&self) {
        for r in self.running().values() {
            r.kick.notify_one();
        }
    }

    /// Stop the worker of the InitTarget called `name` (gone, or no longer
    /// selected).
    fn stop_named(&self, name: &str) {
        self.running().retain(|_, r| {
            let keep = r.name != name;
            if !keep {
                info!(init_target = %name, "InitTarget is gone; stopping its worker");
                r.cancel.cancel();
            }
            keep
        });
    }

    fn stop_all(&self) {
        for (_, r) in self.running().drain() {
            r.cancel.cancel();
        }
    }

    /// Start, restart or kick the worker of one InitTarget.
    fn reconcile_target(&self, obj: &DynamicObject) {
        let name = obj.metadata.name.clone().unwrap_or_default();
        let Some(uid) = obj.metadata.uid.clone() else {
            return;
        };
        let own_cluster = obj
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(CLUSTER_ANNOTATION))
            .cloned()
            .unwrap_or_else(|| self.shared.config_workspace.clone());
        let resource_version = obj.metadata.resource_version.clone();
        let target: InitTarget = match serde_json::to_value(obj).and_then(serde_json::from_value) {
            Ok(t) => t,
            Err(e) => {
                warn!(init_target = %name, error = %e, "InitTarget does not match the schema; fix it (see docs/init-target.md)");
                return;
            }
        };
        // A typed struct with string keys: serializing cannot fail.
        let fingerprint =
            serde_json::to_string(&target.spec.workspace_type_ref).expect("serializes");
        let mut running = self.running();
        // The same name with another UID: the target was deleted and
        // created again; the old worker goes.
        running.retain(|old_uid, r| {
            let keep = r.name != name || *old_uid == uid;
            if !keep {
                r.cancel.cancel();
            }
            keep
        });
        if let Some(r) = running.get_mut(&uid) {
            if r.fingerprint == fingerprint {
                if r.resource_version != resource_version {
                    r.resource_version = resource_version;
                    r.kick.notify_one();
                }
                return;
            }
            info!(init_target = %name, "spec.workspaceTypeRef changed; restarting its worker");
            r.cancel.cancel();
            running.remove(&uid);
        }
        let worker_cancel = self.cancel.child_token();
        let kick = Arc::new(Notify::new());
        // Owned by `worker_cancel` (kept in `Running`): the worker ends when
        // its InitTarget goes or changes; until then it is supervised.
        let id = target::TargetId {
            name: name.clone(),
            uid: uid.clone(),
            own_cluster,
            workspace_type: target.spec.workspace_type_ref.clone(),
        };
        tokio::spawn({
            let (shared, cancel, kick) = (self.shared.clone(), worker_cancel.clone(), kick.clone());
            crate::controller::supervise::supervised(
                "init-target",
                name.clone(),
                cancel.clone(),
                move || target::run(shared.clone(), id.clone(), cancel.clone(), kick.clone()),
            )
        });
        running.insert(
            uid,
            Running {
                name,
                fingerprint,
                resource_version,
                cancel: worker_cancel,
                kick,
            },
        );
    }
}

/// Drive a watch and wake `notify` on every change (paced and reported by
/// [`crate::controller::watch::drive`], so a missing CRD does not spin).
async fn notify_on_events<S>(what: &'static str, stream: S, notify: Arc<Notify>)
where
    S: Stream<Item = Result<watcher::Event<DynamicObject>, watcher::Error>> + Send,
{
    crate::controller::watch::drive_reported(
        stream,
        what,
        |_| None,
        |ev| {
            if matches!(
                ev,
                watcher::Event::Apply(_) | watcher::Event::Delete(_) | watcher::Event::InitDone
            ) {
                notify.notify_one();
            }
        },
    )
    .await;
}

/// Lease name for leader election: one per config workspace, so agents
/// serving different config workspaces never block each other.
pub fn lease_name(config_workspace: &str) -> String {
    use sha2::{Digest, Sha256};
    let h = hex::encode(Sha256::digest(config_workspace.as_bytes()));
    format!("init-agent-{}", &h[..10])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lease_name_is_stable_and_valid() {
        let a = lease_name("root:my-init-agent");
        assert_eq!(a, lease_name("root:my-init-agent"));
        assert_ne!(a, lease_name("root:other"));
        assert!(a.starts_with("init-agent-") && a.len() == 21, "{a}");
        assert!(crate::apis::validation::dns1035_label(&a).is_ok());
    }

    #[test]
    fn resources_have_upstream_names() {
        assert_eq!(
            inittarget_resource().api_version,
            "initialization.kcp.io/v1alpha1"
        );
        assert_eq!(inittemplate_resource().plural, "inittemplates");
        assert_eq!(workspacetype_resource().group, "tenancy.kcp.io");
    }
}

/// Checks that the agent can still read its InitTargets (for `/readyz`).
#[derive(Clone)]
pub struct InitProbe {
    client: kube::Client,
}

impl InitProbe {
    pub async fn can_list_targets(&self) -> Result<(), String> {
        let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &inittarget_resource());
        api.list(&ListParams::default().limit(1))
            .await
            .map(|_| ())
            .map_err(|e| format!("cannot list InitTargets: {e}"))
    }
}
