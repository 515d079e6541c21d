//! Filling kcp for a run: consumer workspaces bound to the export, and
//! CronTabs in them, fast enough for 1 000 workspaces and 100 000 objects on
//! two cores: bounded parallelism, one HTTP client for everything (kcp's
//! `/clusters/<name>` paths, no client per workspace), retries of transient
//! failures, progress every few seconds, and errors that name the workspace
//! or object and the step. Every step tolerates "already exists", so a step
//! retried after a timeout picks up where it was.
//!
//! The bench talks to kcp directly as its admin: none of this goes through
//! the counting proxies.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use futures::StreamExt;
use serde_json::{Value, json};
use syncweave_tests::env::*;
use syncweave_tests::*;

use crate::log;

/// Where an object goes: a consumer workspace (its logical-cluster name, as
/// the copies' labels name it, and its path).
#[derive(Clone, Debug)]
pub struct ObjectPlace {
    pub cluster: String,
    pub path: String,
}

impl ObjectPlace {
    /// The key [`crate::latency::Seen`] records a copy of `name` under.
    pub fn key(&self, name: &str) -> String {
        format!("{}/{name}", self.cluster)
    }
}

/// The kcp admin's client at kcp's base URL; paths carry `/clusters/<x>`.
#[derive(Clone)]
pub struct KcpRaw {
    client: kube::Client,
}

/// An answer that is worth retrying: throttling, server trouble, timeouts.
fn transient(e: &kube::Error) -> bool {
    match e {
        kube::Error::Api(s) => s.code == 429 || s.code >= 500,
        _ => true,
    }
}

impl KcpRaw {
    pub async fn new(kcp: &Kcp) -> Result<KcpRaw> {
        let mut cfg = kcp.config("root").await?;
        cfg.cluster_url = kcp.base_url.parse()?;
        // Long lists (100 000 objects) and busy moments.
        cfg.read_timeout = Some(Duration::from_secs(120));
        Ok(KcpRaw {
            client: kube::Client::try_from(cfg)?,
        })
    }

    /// POST `body` to `path`; Ok(false) when it already existed (409).
    pub async fn create(&self, path: &str, body: &Value) -> Result<bool, kube::Error> {
        let req = http::Request::post(path)
            .header("content-type", "application/json")
            .body(serde_json::to_vec(body).unwrap())
            .unwrap();
        match self.client.request_text(req).await {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// [`KcpRaw::create`], retrying transient failures with backoff (kcp on
    /// two busy cores answers 429s and timeouts now and then).
    pub async fn create_retrying(&self, path: &str, body: &Value, what: &str) -> Result<()> {
        let mut attempt = 0u64;
        loop {
            match self.create(path, body).await {
                Ok(_) => return Ok(()),
                Err(e) if transient(&e) && attempt < 8 => {
                    attempt += 1;
                    tokio::time::sleep(Duration::from_millis(250 * attempt)).await;
                }
                Err(e) => return Err(e).with_context(|| format!("creating {what} (POST {path})")),
            }
        }
    }

    pub async fn get(&self, path: &str) -> Result<Value, kube::Error> {
        let req = http::Request::get(path).body(vec![]).unwrap();
        let text = self.client.request_text(req).await?;
        Ok(serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    /// Create CronTab `name` in namespace `default` of `place`.
    pub async fn create_crontab(&self, place: &ObjectPlace, name: &str) -> Result<()> {
        self.create_retrying(
            &format!(
                "/clusters/{}/apis/example.com/v1/namespaces/default/crontabs",
                place.cluster
            ),
            &crontab(name, "bench-image"),
            &format!("CronTab {name} in {}", place.path),
        )
        .await
    }
}

/// Progress every 5 s for two minutes, then every 15 s.
fn every(since: Instant) -> Duration {
    if since.elapsed() < Duration::from_secs(120) {
        Duration::from_secs(5)
    } else {
        Duration::from_secs(15)
    }
}

fn eta(done: usize, total: usize, elapsed: f64) -> String {
    if done == 0 {
        return "?".into();
    }
    let left = (total - done) as f64 * elapsed / done as f64;
    format!("{:.0}s", left)
}

/// `n` consumer workspaces `c0000…` under the org of `env`, each bound to
/// the export, returned once CronTabs are served in every one. At most
/// `parallel` workspaces are in flight.
pub async fn workspaces(
    env: &Env,
    raw: &KcpRaw,
    n: usize,
    parallel: usize,
    namespaces_claim: bool,
) -> Result<Vec<ObjectPlace>> {
    let width = (n.max(2) - 1).to_string().len().max(2);
    let t0 = Instant::now();
    let done = Arc::new(AtomicUsize::new(0));
    let mut out: Vec<Option<ObjectPlace>> = vec![None; n];
    let mut stream = futures::stream::iter((0..n).map(|i| {
        let name = format!("c{i:0width$}");
        let done = done.clone();
        async move {
            let mut last = None;
            for attempt in 1..=3 {
                match consumer(env, raw, &name, namespaces_claim).await {
                    Ok(p) => {
                        done.fetch_add(1, Ordering::Relaxed);
                        return Ok((i, p));
                    }
                    Err(e) => {
                        log(format!(
                            "  workspace {name}: attempt {attempt} failed: {e:#}"
                        ));
                        last = Some(e);
                    }
                }
            }
            Err(last.unwrap()).with_context(|| {
                format!(
                    "consumer workspace {}:{name} failed 3 times (kcp log: {})",
                    env.org.path,
                    env.kcp.log_file.display()
                )
            })
        }
    }))
    .buffer_unordered(parallel.max(1));
    let mut last_print = Instant::now();
    while let Some(r) = stream.next().await {
        let (i, p) = r?;
        out[i] = Some(p);
        if last_print.elapsed() > every(t0) {
            last_print = Instant::now();
            let d = done.load(Ordering::Relaxed);
            let el = t0.elapsed().as_secs_f64();
            log(format!(
                "  workspaces: {d}/{n} bound and serving ({:.1}/s, about {} left)",
                d as f64 / el,
                eta(d, n, el)
            ));
        }
    }
    Ok(out.into_iter().map(Option::unwrap).collect())
}

/// One consumer workspace: created (waits for Ready), bound to the export
/// accepting the Events claim (and the Namespaces claim of a plugin that
/// reads them), CronTabs served.
async fn consumer(
    env: &Env,
    raw: &KcpRaw,
    name: &str,
    namespaces_claim: bool,
) -> Result<ObjectPlace> {
    let ws = env
        .kcp
        .create_workspace_in(&env.org.path, name, None)
        .await
        .context("creating the workspace")?;
    let mut claims =
        vec![json!({"group": "", "resource": "events", "all": true, "state": "Accepted"})];
    if namespaces_claim {
        claims
            .push(json!({"group": "", "resource": "namespaces", "all": true, "state": "Accepted"}));
    }
    let binding = json!({
        "apiVersion": "apis.kcp.io/v1alpha1",
        "kind": "APIBinding",
        "metadata": {"name": EXPORT},
        "spec": {
            "reference": {"export": {"path": env.provider.path, "name": EXPORT}},
            "permissionClaims": claims,
        },
    });
    // A workspace that just turned Ready can answer 403/404 for a moment
    // while kcp's indexes catch up.
    let path = format!(
        "/clusters/{}/apis/apis.kcp.io/v1alpha1/apibindings",
        ws.cluster
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match raw.create(&path, &binding).await {
            Ok(_) => break,
            Err(e) if Instant::now() > deadline => {
                return Err(e).with_context(|| format!("creating the APIBinding (POST {path})"));
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(300)).await,
        }
    }
    let deadline = Instant::now() + Duration::from_secs(120);
    let served = format!(
        "/clusters/{}/apis/example.com/v1/namespaces/default/crontabs?limit=1",
        ws.cluster
    );
    loop {
        match raw.get(&served).await {
            Ok(_) => break,
            Err(e) if Instant::now() > deadline => {
                bail!("CronTabs not served 120 s after binding (GET {served}: {e})")
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(300)).await,
        }
    }
    Ok(ObjectPlace {
        cluster: ws.cluster,
        path: ws.path,
    })
}

/// Create `n` CronTabs `<prefix>-NNNNNN`, object i in workspace i mod the
/// number of workspaces, at most `parallel` requests in flight. Returns the
/// names and the seconds it took.
pub async fn objects(
    raw: &KcpRaw,
    places: &[ObjectPlace],
    prefix: &str,
    n: usize,
    parallel: usize,
) -> Result<(Vec<String>, f64)> {
    if places.is_empty() {
        return Err(anyhow!("no consumer workspace to create objects in"));
    }
    let names: Vec<String> = (0..n).map(|i| format!("{prefix}-{i:06}")).collect();
    log(format!(
        "creating {n} CronTabs in {} workspaces ({parallel} at a time)…",
        places.len()
    ));
    let t0 = Instant::now();
    let done = AtomicUsize::new(0);
    let mut stream = futures::stream::iter(names.iter().enumerate().map(|(i, name)| {
        let place = &places[i % places.len()];
        let done = &done;
        async move {
            raw.create_crontab(place, name).await?;
            done.fetch_add(1, Ordering::Relaxed);
            Ok::<_, anyhow::Error>(())
        }
    }))
    .buffer_unordered(parallel.max(1));
    let mut last_print = Instant::now();
    while let Some(r) = stream.next().await {
        r?;
        if last_print.elapsed() > every(t0) {
            last_print = Instant::now();
            let d = done.load(Ordering::Relaxed);
            let el = t0.elapsed().as_secs_f64();
            log(format!(
                "  created {d}/{n} ({:.0}/s, about {} left)",
                d as f64 / el,
                eta(d, n, el)
            ));
        }
    }
    drop(stream);
    let secs = t0.elapsed().as_secs_f64();
    log(format!(
        "created {n} CronTabs in {secs:.1}s ({:.0}/s)",
        n as f64 / secs.max(0.001)
    ));
    Ok((names, secs))
}
