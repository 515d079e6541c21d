//! The physical limit beside the agents: a plain client (kube-rs, no
//! client-side rate limit, no cache, no plugins, no Events) that makes, for
//! every object of the backlog, the writes an agent must make to sync it,
//! in the agent's order, against the same kcp and service cluster through
//! the same counting proxies and with the agent's identities:
//!
//! 1. one LIST of the CronTabs through the export's virtual workspace
//!    (paginated), as an agent's informer starts;
//! 2. per object: the finalizer (merge patch with the resourceVersion, through
//!    the virtual workspace), the copy on the service cluster (in a namespace
//!    per workspace, created once), its state Secret, and, with
//!    `--ceiling-writes …,status`, a status update back in kcp.
//!
//! Objects run `--ceiling-concurrency` at a time. Its P2 is defined exactly
//! as the agents' (until every copy shows up in the bench's watch), so an
//! agent's P2 divided by this one is the share of what kcp and the API
//! server allow on this machine that the agent reaches.
//!
//! For P1 the same client follows a watch instead ([`follow`]): each new
//! CronTab's writes start as soon as its watch event arrives. Its P1 is the
//! floor an agent's P1 sits on (the servers' and the watches' latency),
//! so what an agent adds is its P1 minus this one.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow};
use base64::Engine as _;
use futures::StreamExt;
use serde::Serialize;
use serde_json::{Value, json};
use syncweave_tests::env::*;
use syncweave_tests::*;

use crate::log;

pub const WRITES: &[&str] = &["finalizer", "copy", "state", "status"];
pub const DEFAULT_WRITES: &[&str] = &["finalizer", "copy", "state"];

/// What the ceiling client did, beside the P2 figures the caller measures.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CeilingInfo {
    /// The writes made per object, in order.
    pub writes: Vec<String>,
    pub concurrency: usize,
    /// Seconds from the LIST to the last write's answer.
    pub client_seconds: f64,
    pub objects: usize,
    /// Write requests retried after a transient failure (429, 5xx, timeout).
    pub retries: usize,
}

struct Ctx {
    vw: kube::Client,
    svc: kube::Client,
    writes: Vec<String>,
    namespaces: tokio::sync::Mutex<HashMap<String, Arc<tokio::sync::OnceCell<()>>>>,
    retries: AtomicUsize,
}

async fn client_from(kubeconfig: &Path) -> Result<kube::Config> {
    let kc = kube::config::Kubeconfig::read_from(kubeconfig)
        .with_context(|| format!("reading {}", kubeconfig.display()))?;
    Ok(kube::Config::from_custom_kubeconfig(kc, &Default::default()).await?)
}

fn transient(e: &kube::Error) -> bool {
    match e {
        kube::Error::Api(s) => s.code == 429 || s.code >= 500,
        _ => true,
    }
}

impl Ctx {
    /// Send, retrying transient failures as an agent would; 409 on a create
    /// counts as done.
    async fn send(
        &self,
        client: &kube::Client,
        method: http::Method,
        path: &str,
        content_type: &str,
        body: &Value,
        what: &str,
    ) -> Result<Value> {
        let mut attempt = 0u64;
        loop {
            let req = http::Request::builder()
                .method(method.clone())
                .uri(path)
                .header("content-type", content_type)
                .body(serde_json::to_vec(body).unwrap())
                .unwrap();
            match client.request_text(req).await {
                Ok(t) => return Ok(serde_json::from_str(&t).unwrap_or(Value::Null)),
                Err(kube::Error::Api(s)) if s.code == 409 && method == http::Method::POST => {
                    return Ok(Value::Null);
                }
                Err(e) if transient(&e) && attempt < 8 => {
                    attempt += 1;
                    self.retries.fetch_add(1, Ordering::Relaxed);
                    tokio::time::sleep(Duration::from_millis(100 * attempt)).await;
                }
                Err(e) => return Err(e).with_context(|| format!("{what} ({method} {path})")),
            }
        }
    }

    async fn ensure_namespace(&self, ns: &str) -> Result<()> {
        let cell = self
            .namespaces
            .lock()
            .await
            .entry(ns.to_string())
            .or_default()
            .clone();
        cell.get_or_try_init(|| async {
            self.send(
                &self.svc,
                http::Method::POST,
                "/api/v1/namespaces",
                "application/json",
                &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
                "creating the copies' namespace",
            )
            .await
            .map(|_| ())
        })
        .await?;
        Ok(())
    }

    async fn sync_one(&self, obj: &Value) -> Result<()> {
        let meta = &obj["metadata"];
        let name = meta["name"].as_str().unwrap_or_default();
        let ns = meta["namespace"].as_str().unwrap_or("default");
        let cluster = meta["annotations"]["kcp.io/cluster"]
            .as_str()
            .ok_or_else(|| anyhow!("object {ns}/{name} without a kcp.io/cluster annotation"))?;
        let path =
            format!("/clusters/{cluster}/apis/example.com/v1/namespaces/{ns}/crontabs/{name}");
        let mut kcp_obj = obj.clone();
        for w in &self.writes {
            match w.as_str() {
                "finalizer" => {
                    let mut finalizers: Vec<Value> =
                        meta["finalizers"].as_array().cloned().unwrap_or_default();
                    finalizers.push(json!("syncagent.kcp.io/cleanup"));
                    kcp_obj = self
                        .send(
                            &self.vw,
                            http::Method::PATCH,
                            &path,
                            "application/merge-patch+json",
                            &json!({"metadata": {
                                "finalizers": finalizers,
                                "resourceVersion": meta["resourceVersion"],
                            }}),
                            "adding the finalizer",
                        )
                        .await?;
                }
                "copy" => {
                    self.ensure_namespace(cluster).await?;
                    let copy = json!({
                        "apiVersion": "example.com/v1",
                        "kind": "CronTab",
                        "metadata": {
                            "name": default_copy_name(ns, name),
                            "namespace": cluster,
                            "labels": {
                                "syncagent.kcp.io/agent-name": "bench-ceiling",
                                "syncagent.kcp.io/remote-object-cluster": cluster,
                                "syncagent.kcp.io/remote-object-name-hash": sha3short(name),
                                "syncagent.kcp.io/remote-object-namespace-hash": sha3short(ns),
                            },
                            "annotations": {
                                "syncagent.kcp.io/remote-object-name": name,
                                "syncagent.kcp.io/remote-object-namespace": ns,
                            },
                        },
                        "spec": obj["spec"],
                    });
                    self.send(
                        &self.svc,
                        http::Method::POST,
                        &format!("/apis/example.com/v1/namespaces/{cluster}/crontabs"),
                        "application/json",
                        &copy,
                        "creating the copy",
                    )
                    .await?;
                }
                "state" => {
                    // The object as last synced (what the agent stores for
                    // its three-way merge), without status and managedFields.
                    let mut state = kcp_obj.clone();
                    if let Some(m) = state["metadata"].as_object_mut() {
                        m.remove("managedFields");
                    }
                    if let Some(o) = state.as_object_mut() {
                        o.remove("status");
                    }
                    let data = base64::engine::general_purpose::STANDARD
                        .encode(serde_json::to_vec(&state).unwrap());
                    let secret = json!({
                        "apiVersion": "v1",
                        "kind": "Secret",
                        "metadata": {
                            "name": format!("obj-state-{cluster}-{}", sha3short(&format!("{ns}/{name}"))),
                            "labels": {
                                "syncagent.kcp.io/object-state": "true",
                                "syncagent.kcp.io/remote-object-cluster": cluster,
                                "syncagent.kcp.io/remote-object-name-hash": sha3short(name),
                            },
                        },
                        "data": {sha3short(&format!("{cluster}/{ns}/{name}")): data},
                    });
                    self.send(
                        &self.svc,
                        http::Method::POST,
                        &format!("/api/v1/namespaces/{AGENT_NAMESPACE}/secrets"),
                        "application/json",
                        &secret,
                        "creating the state Secret",
                    )
                    .await?;
                }
                "status" => {
                    self.send(
                        &self.vw,
                        http::Method::PATCH,
                        &format!("{path}/status"),
                        "application/merge-patch+json",
                        &json!({"status": {"phase": "Synced"}}),
                        "updating the status in kcp",
                    )
                    .await?;
                }
                other => return Err(anyhow!("unknown ceiling write {other:?}")),
            }
        }
        Ok(())
    }
}

/// Run the plain client over every CronTab the export's virtual workspace
/// lists. `kcp_kc` and `svc_kc` are the agents' kubeconfigs (the counting
/// proxies, the agents' identities).
pub async fn run(
    kcp_kc: &Path,
    svc_kc: &Path,
    writes: &[String],
    concurrency: usize,
) -> Result<CeilingInfo> {
    let ctx = Ctx::connect(kcp_kc, svc_kc, writes).await?;
    let t0 = Instant::now();
    // Objects that P1 already synced (they carry the finalizer) are done.
    let items: Vec<Value> = ctx
        .list()
        .await?
        .1
        .into_iter()
        .filter(|o| !finalized(o))
        .collect();
    log(format!(
        "ceiling: listed {} CronTabs in {:.1}s; writing {} per object, {concurrency} objects at a time…",
        items.len(),
        t0.elapsed().as_secs_f64(),
        writes.join(", ")
    ));
    let done = AtomicUsize::new(0);
    let mut stream = futures::stream::iter(items.iter().map(|o| {
        let (ctx, done) = (&ctx, &done);
        async move {
            ctx.sync_one(o).await?;
            done.fetch_add(1, Ordering::Relaxed);
            Ok::<_, anyhow::Error>(())
        }
    }))
    .buffer_unordered(concurrency.max(1));
    let mut last = Instant::now();
    while let Some(r) = stream.next().await {
        r?;
        if last.elapsed() > Duration::from_secs(10) {
            last = Instant::now();
            let d = done.load(Ordering::Relaxed);
            log(format!(
                "  ceiling: {d}/{} objects written ({:.1}/s)",
                items.len(),
                d as f64 / t0.elapsed().as_secs_f64()
            ));
        }
    }
    Ok(CeilingInfo {
        writes: writes.to_vec(),
        concurrency,
        client_seconds: t0.elapsed().as_secs_f64(),
        objects: items.len(),
        retries: ctx.retries.load(Ordering::Relaxed),
    })
}

/// The plain client as the simplest controller, for P1: list, then watch
/// the CronTabs through the virtual workspace, and make the writes for each
/// object without the finalizer as soon as its event arrives (a task per
/// object: no queue, no cache, no plugins). Runs until dropped; errors only
/// if it cannot connect.
pub async fn follow(kcp_kc: &Path, svc_kc: &Path, writes: &[String]) -> Result<()> {
    let ctx = Arc::new(Ctx::connect(kcp_kc, svc_kc, writes).await?);
    let started: Arc<std::sync::Mutex<std::collections::HashSet<String>>> = Arc::default();
    let start = |o: Value| {
        let key = format!(
            "{}/{}/{}",
            o["metadata"]["annotations"]["kcp.io/cluster"]
                .as_str()
                .unwrap_or(""),
            o["metadata"]["namespace"].as_str().unwrap_or(""),
            o["metadata"]["name"].as_str().unwrap_or("")
        );
        if finalized(&o) || !started.lock().unwrap().insert(key) {
            return;
        }
        let ctx = ctx.clone();
        tokio::spawn(async move {
            if let Err(e) = ctx.sync_one(&o).await {
                log(format!("ceiling P1: {e:#}"));
            }
        });
    };
    loop {
        let (rv, items) = ctx.list().await?;
        items.into_iter().for_each(&start);
        let req = http::Request::get(format!(
            "/clusters/*/apis/example.com/v1/crontabs?watch=true&resourceVersion={rv}&timeoutSeconds=600"
        ))
        .body(vec![])
        .unwrap();
        let mut events = match ctx.vw.request_events::<kube::api::DynamicObject>(req).await {
            Ok(ev) => ev.boxed(),
            Err(e) => {
                log(format!("ceiling P1: watching CronTabs: {e}; listing again"));
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        while let Some(ev) = events.next().await {
            match ev {
                Ok(kube::api::WatchEvent::Added(o) | kube::api::WatchEvent::Modified(o)) => {
                    start(serde_json::to_value(&o)?)
                }
                Ok(_) => {}
                Err(e) => {
                    log(format!(
                        "ceiling P1: the CronTab watch broke: {e}; listing again"
                    ));
                    break;
                }
            }
        }
    }
}

/// The object carries the agents' finalizer (it was synced already).
fn finalized(o: &Value) -> bool {
    o["metadata"]["finalizers"]
        .as_array()
        .is_some_and(|f| f.iter().any(|f| f == "syncagent.kcp.io/cleanup"))
}

impl Ctx {
    /// Clients for the export's virtual workspace and the service cluster,
    /// as the agents' kubeconfigs give them.
    async fn connect(kcp_kc: &Path, svc_kc: &Path, writes: &[String]) -> Result<Ctx> {
        let kcp_cfg = client_from(kcp_kc).await?;
        let provider = kube::Client::try_from(kcp_cfg.clone())?;
        let slices = dynamic_api(
            &provider,
            &gvk("apis.kcp.io", "v1alpha1", "APIExportEndpointSlice"),
            "apiexportendpointslices",
            None,
        );
        let slice = slices
            .get(EXPORT)
            .await
            .context("the APIExportEndpointSlice")?;
        let url = slice
            .data
            .pointer("/status/endpoints/0/url")
            .and_then(Value::as_str)
            .ok_or_else(|| anyhow!("APIExportEndpointSlice {EXPORT} lists no endpoint"))?
            .to_string();
        let mut vw_cfg = kcp_cfg;
        vw_cfg.cluster_url = url.parse()?;
        vw_cfg.read_timeout = Some(Duration::from_secs(660));
        Ok(Ctx {
            vw: kube::Client::try_from(vw_cfg)?,
            svc: kube::Client::try_from(client_from(svc_kc).await?)?,
            writes: writes.to_vec(),
            namespaces: Default::default(),
            retries: AtomicUsize::new(0),
        })
    }

    /// Every CronTab, through the virtual workspace (paginated), and the
    /// list's resourceVersion.
    async fn list(&self) -> Result<(String, Vec<Value>)> {
        let mut rv = String::new();
        let mut items: Vec<Value> = Vec::new();
        let mut cont = String::new();
        loop {
            let mut path = "/clusters/*/apis/example.com/v1/crontabs?limit=500".to_string();
            if !cont.is_empty() {
                path.push_str(&format!("&continue={cont}"));
            }
            let req = http::Request::get(&path).body(vec![]).unwrap();
            let page: Value = serde_json::from_str(
                &self
                    .vw
                    .request_text(req)
                    .await
                    .context("listing CronTabs through the virtual workspace")?,
            )?;
            items.extend(page["items"].as_array().cloned().unwrap_or_default());
            if let Some(v) = page["metadata"]["resourceVersion"].as_str() {
                rv = v.to_string();
            }
            match page["metadata"]["continue"].as_str() {
                Some(c) if !c.is_empty() => cont = c.to_string(),
                _ => break,
            }
        }
        Ok((rv, items))
    }
}
