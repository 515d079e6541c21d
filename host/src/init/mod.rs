//! The init role (`syncweave init`), replacing kcp's init-agent: InitTargets
//! in the config workspace name a WorkspaceType; every new workspace of that
//! type waits in phase Initializing until the agent has created the objects
//! the targets' InitTemplates render (and, for objects annotated
//! `initialization.kcp.io/wait-for-ready`, until they are ready), then the
//! agent removes its initializer and kcp marks the workspace Ready. For an
//! InitTarget with `spec.termination`, the agent also serves the type's
//! terminator: when a workspace of the type is deleted it runs the
//! termination steps, then removes its terminator.
//!
//! Top to bottom:
//! - [`targets`]: the InitTarget controller. It keeps the InitTargets of the
//!   config workspace, resolves each one's WorkspaceType to the logical
//!   cluster that holds it, and gives it to the [`worker`] of that type
//!   (started with the first target, stopped with the last one).
//! - [`worker`]: one per WorkspaceType (initializer). It follows the type for
//!   its virtual-workspace URLs, watches the initializing (and, when it
//!   serves the terminator, terminating) LogicalClusters there, and
//!   reconciles each workspace through a work queue: [`initialize`] applies
//!   the sources of every target of the type in one pass, [`terminate`] runs
//!   their termination steps.
//! - [`render`] picks the renderer plugin, [`apply`] orders, creates,
//!   checks readiness of and deletes the rendered objects.
//! - [`status`]: what the agent reports on each InitTarget (conditions,
//!   counts, waiting and failing workspaces) and its Events, written by one
//!   task, only on change.

pub mod apply;
mod cache;
mod initialize;
mod key;
pub mod render;
pub mod status;
mod targets;
mod terminate;
mod worker;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams};
use kube::{Client, Config};
use tokio_util::sync::CancellationToken;
use tracing::warn;

use render::{RendererError, Renderers};
use syncweave_runtime::PluginFailure;

pub use worker::{TypeKey, WorkspaceKey};

/// How long a workspace waits when a rendered kind is not served yet, or an
/// object annotated `wait-for-ready` is not ready (upstream: 5 s for both).
pub const WAIT_RETRY: Duration = Duration::from_secs(5);

/// The annotation on a rendered object that holds back the removal of the
/// initializer until the object's condition of that type is `True`.
pub const WAIT_FOR_READY: &str = "initialization.kcp.io/wait-for-ready";

/// Name of the leader-election Lease, as upstream init-agent names it.
pub const LEASE_NAME: &str = "init-agent.kcp.io";

/// What went wrong while initializing or terminating one workspace. Every
/// variant names the InitTarget and, where there is one, the template or
/// step and the object.
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
    #[error("InitTarget {target}: {problem}")]
    InvalidSpec { target: String, problem: String },
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
    #[error("InitTarget {target}: spec.termination[{step}]: {source}")]
    Step {
        target: String,
        step: usize,
        #[source]
        source: Box<apply::ApplyError>,
    },
    #[error("{0}")]
    Setup(String),
    #[error(
        "reconciling the workspace panicked (a bug in syncweave: please report it with this \
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
    /// Workspace path, logical-cluster name, or `/`-prefixed URL path
    /// holding InitTargets and InitTemplates.
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

/// The server URL without a trailing `/clusters/<name>` and without
/// trailing slashes; any other path is kept (upstream's `StripCluster`).
pub fn strip_cluster(server: &str) -> &str {
    let s = server.trim_end_matches('/');
    let s = match s.rfind("/clusters/") {
        Some(i) if !s[i + "/clusters/".len()..].contains('/') => &s[..i],
        _ => s,
    };
    s.trim_end_matches('/')
}

/// The URL of the config workspace: `--config-workspace` as a workspace
/// path or logical-cluster name (`<base>/clusters/<value>`), or, when it
/// starts with `/`, a URL path appended verbatim to the base (for example
/// a virtual workspace).
pub fn config_url(server: &str, config_workspace: &str) -> String {
    let base = strip_cluster(server);
    if config_workspace.starts_with('/') {
        format!("{base}{config_workspace}")
    } else {
        format!("{base}/clusters/{config_workspace}")
    }
}

/// A client for the config workspace (`--config-workspace`, any form) on
/// the kcp that `kcp` points at, whatever workspace its own URL names.
pub fn config_client(kcp: &Config, config_workspace: &str) -> Result<Client, InitError> {
    client_at(
        kcp,
        &config_url(&kcp.cluster_url.to_string(), config_workspace),
    )
}

/// A client for the config workspace without the write fence, for leader
/// election itself (it renews and releases the lease that opens the
/// fence). The Lease lives where the InitTargets do, as upstream's.
pub fn lease_client(kcp: &Config, config_workspace: &str) -> Result<Client, InitError> {
    let url = config_url(&kcp.cluster_url.to_string(), config_workspace);
    let cfg = with_url(kcp, &url)?;
    crate::kube::client::build_unfenced(cfg, "lease")
        .map_err(|e| InitError::Setup(format!("building a client for {url}: {e}")))
}

fn with_url(base: &Config, url: &str) -> Result<Config, InitError> {
    let mut cfg = base.clone();
    cfg.cluster_url = url.parse().map_err(|e: http::uri::InvalidUri| {
        InitError::Setup(format!(
            "invalid URL {url:?} for kcp: {e}; check the kubeconfig's server and --config-workspace"
        ))
    })?;
    Ok(cfg)
}

fn client_at(base: &Config, url: &str) -> Result<Client, InitError> {
    crate::kube::client::build(with_url(base, url)?, "kcp")
        .map_err(|e| InitError::Setup(format!("building a client for {url}: {e}")))
}

/// The kcp connection and plugins every worker shares.
pub(crate) struct Shared {
    /// Credentials and TLS settings; the URL is replaced per use.
    base: Config,
    /// The kubeconfig's server without `/clusters/…` (see [`strip_cluster`]).
    base_url: String,
    config_workspace: String,
    config_client: Client,
    renderers: Renderers,
    /// Clients for `<base>/clusters/<workspace>`, by workspace.
    workspaces: Mutex<HashMap<String, Client>>,
}

impl Shared {
    /// A client for an absolute URL (a workspace or a virtual workspace).
    fn client_at(&self, url: &str) -> Result<Client, InitError> {
        client_at(&self.base, url)
    }

    /// A client for a workspace (path or logical-cluster name), reused.
    fn workspace_client(&self, workspace: &str) -> Result<Client, InitError> {
        let mut clients = self.workspaces.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = clients.get(workspace) {
            return Ok(c.clone());
        }
        let c = self.client_at(&format!("{}/clusters/{workspace}", self.base_url))?;
        clients.insert(workspace.to_string(), c.clone());
        Ok(c)
    }
}

/// The init role's controller.
pub struct InitAgent {
    shared: Arc<Shared>,
    selector: String,
}

impl InitAgent {
    /// `kcp` is a config for kcp (any `/clusters/<x>` suffix is ignored);
    /// `renderers` loads the template renderers.
    pub fn new(kcp: Config, cfg: InitConfig, renderers: Renderers) -> Result<Self, InitError> {
        let config_client = config_client(&kcp, &cfg.config_workspace)?;
        let shared = Shared {
            base_url: strip_cluster(&kcp.cluster_url.to_string()).to_string(),
            base: kcp,
            config_workspace: cfg.config_workspace.clone(),
            config_client,
            renderers,
            workspaces: Mutex::new(HashMap::new()),
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

    /// Run until `cancel` fires (see [`targets::run`]).
    pub async fn run(self, cancel: CancellationToken) {
        targets::run(self.shared, self.selector, cancel).await
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resources_have_upstream_names() {
        assert_eq!(
            inittarget_resource().api_version,
            "initialization.kcp.io/v1alpha1"
        );
        assert_eq!(inittemplate_resource().plural, "inittemplates");
        assert_eq!(workspacetype_resource().group, "tenancy.kcp.io");
        assert_eq!(LEASE_NAME, "init-agent.kcp.io");
    }

    /// Upstream's StripCluster: only a trailing `/clusters/<x>` goes, any
    /// other base path stays.
    #[test]
    fn strip_cluster_keeps_other_paths() {
        assert_eq!(
            strip_cluster("https://kcp.example.com/clusters/root:old/"),
            "https://kcp.example.com"
        );
        assert_eq!(
            strip_cluster("https://kcp.example.com/clusters/root"),
            "https://kcp.example.com"
        );
        assert_eq!(
            strip_cluster("https://kcp.example.com/prefix/clusters/root"),
            "https://kcp.example.com/prefix"
        );
        assert_eq!(
            strip_cluster("https://kcp.example.com/"),
            "https://kcp.example.com"
        );
        assert_eq!(
            strip_cluster("https://kcp.example.com/clusters/a/b"),
            "https://kcp.example.com/clusters/a/b"
        );
    }

    /// The three forms of --config-workspace, with upstream's examples.
    #[test]
    fn config_url_forms() {
        let server = "https://kcp.example.com/clusters/root:old/";
        assert_eq!(
            config_url(server, "root:my-init-agent"),
            "https://kcp.example.com/clusters/root:my-init-agent"
        );
        assert_eq!(
            config_url(server, "34ejyubde4a0b5uw"),
            "https://kcp.example.com/clusters/34ejyubde4a0b5uw"
        );
        assert_eq!(
            config_url(server, "/services/apiexport/root:system/my-export"),
            "https://kcp.example.com/services/apiexport/root:system/my-export"
        );
        assert_eq!(config_url(server, "/"), "https://kcp.example.com/");
        // Used verbatim, as upstream: no normalization.
        assert_eq!(
            config_url("https://kcp/", "//services/test"),
            "https://kcp//services/test"
        );
    }
}
