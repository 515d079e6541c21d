//! S (start-up): time to Ready and memory of an agent starting on a
//! provider's configuration, with an empty compiled-plugin cache.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use kube::api::{DynamicObject, PostParams};
use serde::Serialize;
use serde_json::json;
use syncweave_tests::env::*;
use syncweave_tests::*;

use crate::env::{Setup, set_up};
use crate::process::AgentProcess;
use crate::proxy::{Proxy, Tls};
use crate::{log, mb};

const STARTUP_RESOURCES: &str = r#"
apiVersion: syncagent.kcp.io/v1alpha1
kind: PublishedResource
metadata: {name: publish-crontabs}
spec:
  resource: {kind: CronTab, apiGroup: example.com, versions: [v1]}
  naming:
    namespace: "{{ .ClusterName }}"
    name: "{{ .Object.metadata.name }}-{{ .Object.metadata.namespace | sha3short }}"
  mutation:
    spec:
      - cel: {path: spec.cronSpec, expression: "value + ' # synced'"}
---
apiVersion: syncagent.kcp.io/v1alpha1
kind: PublishedResource
metadata: {name: publish-notes}
spec:
  resource: {kind: Note, apiGroup: example.com, versions: [v1]}
  naming:
    namespace: "{{ .ClusterName }}"
    name: "{{ .Object.metadata.name }}-{{ .Object.metadata.namespace | sha3short }}"
  mutation:
    spec:
      # value is a double, as in upstream (numbers come from JSON)
      - cel: {path: spec.replicas, expression: "value * 2.0"}
"#;

/// S: one agent's start-up figures.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Startup {
    pub agent: String,
    pub binary: String,
    pub error: Option<String>,
    /// Seconds from exec until `/readyz` answers 200. syncweave only:
    /// upstream v0.7.0 registers no readiness check.
    pub ready_seconds: Option<f64>,
    /// Seconds from exec until the copies of two objects (one per
    /// PublishedResource) created while the agent was stopped exist on the
    /// service cluster: start-up until real work is done, for both agents.
    pub first_copies_seconds: Option<f64>,
    /// VmHWM (peak RSS) and VmRSS 20 s after the copies appeared.
    pub vm_hwm_kb: Option<u64>,
    pub vm_rss_kb: Option<u64>,
    /// VmRSS split: anonymous memory (heap, stacks, the compiled plugins'
    /// code) and file-backed pages (mostly the agent's own binary, mapped in
    /// as it runs: how much of it shows depends on the page cache, e.g. on
    /// whether the binary was just built, not on the agent).
    pub rss_anon_kb: Option<u64>,
    pub rss_file_kb: Option<u64>,
    /// CPU seconds the agent used until then.
    pub cpu_seconds: Option<f64>,
}

/// S: start the agent with an empty compiled-plugin cache (a new pod's
/// emptyDir) on [`STARTUP_RESOURCES`], after a first run has published the
/// schemas and bound a consumer.
pub async fn run_startup(
    agent: &str,
    binary: &Path,
    kcp_proxy: &Proxy,
    tls: &Tls,
) -> Result<Startup> {
    let mut f = Startup {
        agent: agent.into(),
        binary: binary.display().to_string(),
        ..Default::default()
    };
    let Setup {
        env,
        svc_proxy: _svc_proxy,
        mut args,
        ..
    } = set_up(agent, binary, kcp_proxy, tls).await?;
    args.push("--metrics-address=0".into());
    let log_path = |phase: &str| env.dir.join(format!("agent-{agent}-{phase}.log"));
    apply_crds(&env.service_client, NOTE_CRD)
        .await
        .context("Note CRD")?;
    env.publish_yaml(STARTUP_RESOURCES).await;
    let setup_agent = AgentProcess::start(binary, &args, &log_path("setup"))?;
    env.wait_for_schema("publish-crontabs").await;
    env.wait_for_schema("publish-notes").await;
    let (_ws, client) = env.consumer("c00").await;
    let crontabs = crontabs(&client, "default");
    let notes = dynamic_api(
        &client,
        &gvk("example.com", "v1", "Note"),
        "notes",
        Some("default"),
    );
    let copies = |name: &str| {
        let svc = env.service_client.clone();
        let name = name.to_string();
        async move {
            let mut n = 0;
            for (kind, plural) in [("CronTab", "crontabs"), ("Note", "notes")] {
                let api = dynamic_api(&svc, &gvk("example.com", "v1", kind), plural, None);
                let list = api.list(&Default::default()).await.ok()?;
                n += list
                    .items
                    .iter()
                    .filter(|o| o.metadata.name.as_deref().unwrap_or("").starts_with(&name))
                    .count();
            }
            Some(n)
        }
    };
    let note = |name: &str| -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "example.com/v1", "kind": "Note",
            "metadata": {"name": name}, "spec": {"replicas": 3}
        }))
        .unwrap()
    };
    // Warm-up: one object each, synced by the set-up run.
    create(&crontabs, "warm-up").await?;
    notes
        .create(&PostParams::default(), &note("warm-up"))
        .await?;
    let t = Instant::now();
    while copies("warm-up").await != Some(2) {
        anyhow::ensure!(
            t.elapsed() < Duration::from_secs(300),
            "the set-up run did not sync the warm-up objects in 300 s; see {}",
            log_path("setup").display()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    setup_agent.stop();
    drop(setup_agent);

    // Pending work for the measured start.
    create(&crontabs, "pending").await?;
    notes
        .create(&PostParams::default(), &note("pending"))
        .await?;
    let health = if agent == "syncweave" {
        let port = free_port();
        args.push(format!("--health-address=127.0.0.1:{port}"));
        Some(port)
    } else {
        None
    };
    let cache = env.dir.join(format!("plugin-cache-{agent}"));
    let _ = std::fs::remove_dir_all(&cache);
    std::fs::create_dir_all(&cache)?;
    log(format!("{agent}: measured start (empty plugin cache)…"));
    let t0 = Instant::now();
    let proc_ = AgentProcess::start_with_env(
        binary,
        &args,
        &[("SYNCWEAVE_CACHE_DIR", cache.as_path())],
        &log_path("startup"),
    )?;
    loop {
        if f.ready_seconds.is_none()
            && let Some(port) = health
            && readyz_ok(port).await
        {
            f.ready_seconds = Some(t0.elapsed().as_secs_f64());
        }
        if f.first_copies_seconds.is_none() && copies("pending").await == Some(2) {
            f.first_copies_seconds = Some(t0.elapsed().as_secs_f64());
        }
        if f.first_copies_seconds.is_some() && (health.is_none() || f.ready_seconds.is_some()) {
            break;
        }
        if !proc_.is_running() {
            bail!("the agent exited; see {}", log_path("startup").display());
        }
        if t0.elapsed() > Duration::from_secs(300) {
            bail!(
                "not ready and synced 300 s after start; see {}",
                log_path("startup").display()
            );
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    tokio::time::sleep(Duration::from_secs(20)).await;
    f.vm_hwm_kb = proc_.status_kb("VmHWM");
    f.vm_rss_kb = proc_.status_kb("VmRSS");
    f.rss_anon_kb = proc_.status_kb("RssAnon");
    f.rss_file_kb = proc_.status_kb("RssFile");
    f.cpu_seconds = proc_.cpu_seconds();
    proc_.stop();
    log(format!(
        "{agent}: ready {}, copies after {}, peak RSS {}, RSS {}, CPU {}",
        f.ready_seconds
            .map_or("- (no readiness check)".into(), |s| format!("{s:.2} s")),
        f.first_copies_seconds
            .map_or("-".into(), |s| format!("{s:.2} s")),
        mb(f.vm_hwm_kb),
        mb(f.vm_rss_kb),
        f.cpu_seconds.map_or("-".into(), |s| format!("{s:.2} s")),
    ));
    Ok(f)
}

/// Whether `GET /readyz` on the health port answers 200 within 500 ms.
async fn readyz_ok(port: u16) -> bool {
    tokio::time::timeout(Duration::from_millis(500), http_get(port, "/readyz"))
        .await
        .is_ok_and(|r| r.is_ok_and(|(code, _)| code == 200))
}

fn crontab_obj(name: &str) -> DynamicObject {
    serde_json::from_value(crontab(name, "bench-image")).unwrap()
}

/// Create, retrying transient failures (kcp on two busy cores answers 429s
/// and timeouts now and then).
async fn create(api: &kube::Api<DynamicObject>, name: &str) -> Result<()> {
    let obj = crontab_obj(name);
    let mut attempt = 0;
    loop {
        match api.create(&PostParams::default(), &obj).await {
            Ok(_) => return Ok(()),
            Err(kube::Error::Api(s)) if s.code == 409 => return Ok(()),
            Err(e) if attempt < 8 => {
                attempt += 1;
                tokio::time::sleep(Duration::from_millis(250 * attempt)).await;
                if attempt == 8 {
                    return Err(e).with_context(|| format!("creating CronTab {name}"));
                }
            }
            Err(e) => return Err(e).with_context(|| format!("creating CronTab {name}")),
        }
    }
}
