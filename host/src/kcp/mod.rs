//! The kcp side: resolving the APIExportEndpointSlice to the APIExport and
//! its virtual-workspace URLs, and handing out clients for them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use kube::api::{Api, DynamicObject};
use kube::{Client, Config};
use serde_json::Value;
use tokio::sync::watch;

use crate::apis::kcp as kcpapi;
use crate::kube::kubeconfig::{base_of, with_url, workspace_of};

#[derive(Debug, thiserror::Error)]
pub enum KcpError {
    #[error(
        "APIExportEndpointSlice {name:?} not found in workspace {workspace:?}: create it, or fix --apiexportendpointslice-ref"
    )]
    SliceNotFound { name: String, workspace: String },
    #[error("APIExportEndpointSlice {name:?} has no spec.export.name")]
    SliceWithoutExport { name: String },
    #[error(
        "APIExport {name:?} not found in workspace {workspace:?} (referenced by the APIExportEndpointSlice)"
    )]
    ExportNotFound { name: String, workspace: String },
    #[error("{what}: {source}{}", forbidden_hint(source))]
    Kube {
        what: String,
        #[source]
        source: kube::Error,
    },
    #[error(transparent)]
    Config(#[from] crate::kube::kubeconfig::KubeconfigError),
}

/// For an error kcp answered with 403: what to do about it. Empty otherwise.
/// The agent's kcp identity needs exactly what docs/rbac.md lists; naming
/// the document saves a provider from guessing from the raw RBAC message.
pub fn forbidden_hint(err: &kube::Error) -> &'static str {
    match err {
        kube::Error::Api(s) if s.code == 403 => {
            "; kcp refused the agent's identity (the user in --kcp-kubeconfig): grant it the \
             sync role's kcp permissions listed in docs/rbac.md, in the APIExport's workspace"
        }
        _ => "",
    }
}

fn kube_err(what: impl Into<String>) -> impl FnOnce(kube::Error) -> KcpError {
    let what = what.into();
    move |source| KcpError::Kube { what, source }
}

/// Everything the agent knows about its place in kcp.
#[derive(Clone)]
pub struct KcpContext {
    base_config: Config,
    /// `https://host:port`, without `/clusters/…`.
    pub base_url: String,
    pub slice_name: String,
    /// The slice's `spec.partition`: it lists only the shards that
    /// Partition selects, and other agents serve the other partitions of
    /// the same APIExport.
    pub partition: Option<String>,
    /// Workspace of the endpoint slice (as given in the kubeconfig).
    pub slice_workspace: String,
    pub slice_client: Client,
    pub export_name: String,
    /// Workspace (path or cluster name) holding the APIExport and its schemas.
    pub export_workspace: String,
    pub export_client: Client,
    /// By (rate limiter, URL): per shard URL a connection pool, per
    /// workspace URL a view on it.
    vw_clients: Arc<Mutex<HashMap<(&'static str, String), Client>>>,
    /// The slice's virtual-workspace URLs, kept current by
    /// [`KcpContext::watch_endpoints`].
    endpoints: Arc<watch::Sender<Vec<String>>>,
}

impl KcpContext {
    /// Resolve the endpoint slice and its APIExport.
    pub async fn resolve(cfg: Config, slice_name: &str) -> Result<Self, KcpError> {
        let server = cfg.cluster_url.to_string();
        let slice_workspace = workspace_of(&server).unwrap_or_default().to_string();
        let base_url = base_of(&server).to_string();
        let slice_client = client_for(&with_url(
            &cfg,
            &format!("{base_url}/clusters/{slice_workspace}"),
        )?)?;
        let slices: Api<DynamicObject> =
            Api::all_with(slice_client.clone(), &kcpapi::apiexport_endpoint_slice());
        let slice = slices
            .get_opt(slice_name)
            .await
            .map_err(kube_err(format!(
                "reading APIExportEndpointSlice {slice_name}"
            )))?
            .ok_or_else(|| KcpError::SliceNotFound {
                name: slice_name.into(),
                workspace: slice_workspace.clone(),
            })?;
        let export_name = slice
            .data
            .pointer("/spec/export/name")
            .and_then(Value::as_str)
            .ok_or_else(|| KcpError::SliceWithoutExport {
                name: slice_name.into(),
            })?
            .to_string();
        let export_workspace = slice
            .data
            .pointer("/spec/export/path")
            .and_then(Value::as_str)
            .filter(|p| !p.is_empty())
            .map(str::to_string)
            .unwrap_or_else(|| slice_workspace.clone());
        let export_client = client_for(&with_url(
            &cfg,
            &format!("{base_url}/clusters/{export_workspace}"),
        )?)?;
        let exports: Api<DynamicObject> =
            Api::all_with(export_client.clone(), &kcpapi::apiexport());
        if exports
            .get_opt(&export_name)
            .await
            .map_err(kube_err(format!("reading APIExport {export_name}")))?
            .is_none()
        {
            return Err(KcpError::ExportNotFound {
                name: export_name,
                workspace: export_workspace,
            });
        }
        let endpoints = Arc::new(watch::Sender::new(urls_of(&slice)));
        let partition = slice
            .data
            .pointer("/spec/partition")
            .and_then(Value::as_str)
            .filter(|p| !p.is_empty())
            .map(str::to_string);
        Ok(KcpContext {
            endpoints,
            partition,
            base_config: cfg,
            base_url,
            slice_name: slice_name.into(),
            slice_workspace,
            slice_client,
            export_name,
            export_workspace,
            export_client,
            vw_clients: Default::default(),
        })
    }

    /// The virtual-workspace URLs of the export (one per shard; none until
    /// a workspace binds the export), as the one watch of the slice
    /// ([`KcpContext::watch_endpoints`]) last saw them; the receiver sees
    /// every change.
    pub fn endpoints(&self) -> watch::Receiver<Vec<String>> {
        self.endpoints.subscribe()
    }

    /// Follow the endpoint slice until cancelled, publishing its URLs to
    /// [`KcpContext::endpoints`]. Shards join the slice when a workspace on
    /// them binds the export and leave when the last one unbinds.
    pub async fn watch_endpoints(self, cancel: tokio_util::sync::CancellationToken) {
        use kube::runtime::watcher;
        let slices: Api<DynamicObject> = Api::all_with(
            self.slice_client.clone(),
            &kcpapi::apiexport_endpoint_slice(),
        );
        let cfg = watcher::Config::default().fields(&format!("metadata.name={}", self.slice_name));
        let follow = crate::controller::watch::drive(
            watcher(slices, cfg),
            |ev| {
                if let watcher::Event::Apply(s) | watcher::Event::InitApply(s) = ev {
                    let urls = urls_of(&s);
                    if self
                        .endpoints
                        .send_if_modified(|cur| replace_if_changed(cur, &urls))
                    {
                        tracing::info!(slice = %self.slice_name, ?urls, "endpoint slice URLs changed");
                    }
                }
            },
            |e, retry, report| {
                if report {
                    tracing::warn!(slice = %self.slice_name, error = %e, ?retry, "watching the endpoint slice failed")
                } else {
                    tracing::debug!(slice = %self.slice_name, error = %e, ?retry, "watching the endpoint slice failed again")
                }
            },
        );
        tokio::select! {
            _ = follow => {}
            _ = cancel.cancelled() => {}
        }
    }

    /// A client for workspace `cluster` (or `*`, for wildcard list/watch
    /// across every bound workspace) through the virtual workspace at
    /// `vw_url`. Every workspace of a shard shares one client and so one
    /// connection pool (and TLS setup); a workspace's client is a cached,
    /// thin view on it that puts `/clusters/<cluster>` before each path.
    pub fn vw_client(&self, vw_url: &str, cluster: &str) -> Result<Client, KcpError> {
        self.view("kcp", vw_url, cluster)
    }

    /// Like [`KcpContext::vw_client`], for posting Events: a connection
    /// pool with a rate limit of its own ([`crate::kube::client::EVENTS`]), so
    /// that Events (best effort; a new object gets two) never take the
    /// budget objects sync with.
    pub fn vw_event_client(&self, vw_url: &str, cluster: &str) -> Result<Client, KcpError> {
        self.view(crate::kube::client::EVENTS, vw_url, cluster)
    }

    fn view(&self, limiter: &'static str, vw_url: &str, cluster: &str) -> Result<Client, KcpError> {
        let url = (limiter, format!("{vw_url}/clusters/{cluster}"));
        let mut cache = self.vw_clients.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = cache.get(&url) {
            return Ok(c.clone());
        }
        let pool = (limiter, vw_url.to_string());
        let base = match cache.get(&pool) {
            Some(b) => b.clone(),
            None => {
                let b = crate::kube::client::build(with_url(&self.base_config, vw_url)?, limiter)
                    .map_err(kube_err("building kcp client"))?;
                cache.insert(pool, b.clone());
                b
            }
        };
        let c = crate::kube::client::with_path_prefix(&base, format!("/clusters/{cluster}"));
        cache.insert(url, c.clone());
        Ok(c)
    }

    /// Drop the clients of a shard that left the endpoint slice.
    pub fn forget_vw(&self, vw_url: &str) {
        let views = format!("{vw_url}/clusters/");
        self.vw_clients
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|(_, u), _| u != vw_url && !u.starts_with(&views));
    }

    /// Clients held: (shard connection pools, workspace views).
    pub fn vw_client_counts(&self) -> (usize, usize) {
        let cache = self.vw_clients.lock().unwrap_or_else(|e| e.into_inner());
        let views = cache
            .keys()
            .filter(|(_, u)| u.contains("/clusters/"))
            .count();
        (cache.len() - views, views)
    }
}

fn urls_of(slice: &DynamicObject) -> Vec<String> {
    let mut urls: Vec<String> = slice
        .data
        .pointer("/status/endpoints")
        .and_then(Value::as_array)
        .map(|eps| {
            eps.iter()
                .filter_map(|e| e["url"].as_str())
                .filter(|u| !u.is_empty())
                .map(|u| u.trim_end_matches('/').to_string())
                .collect()
        })
        .unwrap_or_default();
    urls.dedup();
    urls
}

fn replace_if_changed(cur: &mut Vec<String>, new: &[String]) -> bool {
    if cur.as_slice() == new {
        return false;
    }
    *cur = new.to_vec();
    true
}

fn client_for(cfg: &Config) -> Result<Client, KcpError> {
    crate::kube::client::build(cfg.clone(), "kcp").map_err(kube_err("building kcp client"))
}
