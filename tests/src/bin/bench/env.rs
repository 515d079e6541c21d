//! What every run of an agent starts from: a fresh provider workspace and
//! service cluster reached through counting proxies, the same identities and
//! RBAC for every agent, the agents' command lines, and "quiet".

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde_json::json;
use syncweave_tests::env::*;
use syncweave_tests::*;

use crate::process::AgentProcess;
use crate::proxy::{Proxy, Tls};
use crate::{log, progress_interval};

fn kubeconfig_yaml(server: &str, ca_pem: &str, token: &str) -> String {
    use base64::Engine as _;
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    serde_yaml_ng::to_string(&json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": server, "certificate-authority-data": ca}}],
        "users": [{"name": "agent", "user": {"token": token}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "agent"}}],
        "current-context": "c",
    }))
    .unwrap()
}

/// The same broad permissions for both agents on both sides, so neither
/// trips over RBAC the other does not need (the identities are otherwise
/// those of the e2e tests: the chart's ServiceAccount and a kcp token user).
const ALL_RBAC: &str = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: bench-agent-all}
rules:
  - {apiGroups: ["*"], resources: ["*"], verbs: ["*"]}
  - {nonResourceURLs: ["*"], verbs: ["*"]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: bench-agent-all}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: bench-agent-all}
subjects: [SUBJECT]
"#;

/// Whether `agent` is a build of upstream api-syncagent.
pub fn is_upstream(agent: &str) -> bool {
    agent.starts_with("upstream")
}

/// Ports the bench gives an agent: its health endpoint (both agents have
/// `--health-address`) and, for syncweave, its metrics (`/metrics`, read
/// for plugin calls and API requests per object; upstream's are off).
pub struct Ports {
    pub health: u16,
    pub metrics: Option<u16>,
}

impl Ports {
    pub fn new(agent: &str) -> Ports {
        Ports {
            health: free_port(),
            metrics: (!is_upstream(agent)).then(free_port),
        }
    }

    pub fn args(&self) -> Vec<String> {
        vec![
            format!("--health-address=127.0.0.1:{}", self.health),
            match self.metrics {
                Some(p) => format!("--metrics-address=127.0.0.1:{p}"),
                None => "--metrics-address=0".into(),
            },
        ]
    }

    /// What the bench polls every --probe-interval, as a kubelet would:
    /// syncweave's readiness; upstream v0.7.0 serves /readyz and /healthz
    /// through controller-runtime without registering a check, so both
    /// are polled and their answers recorded as they are.
    pub fn probe_paths(agent: &str) -> &'static [&'static str] {
        if is_upstream(agent) {
            &["/readyz", "/healthz"]
        } else {
            &["/readyz"]
        }
    }
}

const AGENT_NAME_BENCH: &str = "bench-agent";

/// The agent's command line: both agents take the same flags (syncweave
/// after its `sync` subcommand). The ceiling runs syncweave for its set-up.
fn agent_args(agent: &str, kcp_kc: &Path, svc_kc: &Path) -> Vec<String> {
    let mut a: Vec<String> = Vec::new();
    if !is_upstream(agent) {
        a.push("sync".into());
    }
    for s in [
        "--kcp-kubeconfig",
        kcp_kc.to_str().unwrap(),
        "--kubeconfig",
        svc_kc.to_str().unwrap(),
        "--namespace",
        AGENT_NAMESPACE,
        "--apiexportendpointslice-ref",
        EXPORT,
        "--agent-name",
        AGENT_NAME_BENCH,
        "--log-format",
        "Console",
    ] {
        a.push(s.into());
    }
    if agent == "syncweave-fifo" {
        a.push("--sync-priority=false".into());
    }
    if std::env::var_os("BENCH_AGENT_DEBUG").is_some() {
        a.push("--log-debug".into());
    }
    a
}

/// Wait until kcp and the service cluster authorize the agents' identities
/// (kcp's authorizer follows new RBAC after a moment, and upstream's agent
/// exits on its first 403).
async fn wait_for_access(env: &Env) -> Result<()> {
    let mut kcp_cfg = env.kcp.config(&env.provider.path).await?;
    kcp_cfg.auth_info = kube::config::AuthInfo {
        token: Some(AGENT_KCP_TOKEN.to_string().into()),
        ..Default::default()
    };
    let kcp_agent = kube::Client::try_from(kcp_cfg)?;
    let svc_cfg = kube::Config::from_custom_kubeconfig(
        env.service
            .kubeconfig(CHART_SERVICE_ACCOUNT, &env.agent_token),
        &Default::default(),
    )
    .await?;
    let svc_agent = kube::Client::try_from(svc_cfg)?;
    let slices = dynamic_api(
        &kcp_agent,
        &gvk("apis.kcp.io", "v1alpha1", "APIExportEndpointSlice"),
        "apiexportendpointslices",
        None,
    );
    eventually(
        "the agents' identities to be authorized",
        Duration::from_secs(60),
        || async {
            for (c, path) in [
                (&kcp_agent, "/api"),
                (&kcp_agent, "/apis"),
                (&svc_agent, "/apis"),
            ] {
                let req = http::Request::get(path).body(vec![]).unwrap();
                c.request_text(req)
                    .await
                    .map_err(|e| format!("{path}: {e}"))?;
            }
            slices.get(EXPORT).await.map_err(|e| e.to_string())?;
            let secrets = kube::Api::<k8s_openapi::api::core::v1::Secret>::namespaced(
                svc_agent.clone(),
                AGENT_NAMESPACE,
            );
            secrets
                .list(&Default::default())
                .await
                .map_err(|e| e.to_string())?;
            Ok(Some(()))
        },
    )
    .await;
    Ok(())
}

/// Requests per 10 s (to kcp and the service cluster together) under which
/// an agent counts as quiet (syncweave's readiness probes make none; its
/// periodic publishing pass a few).
const QUIET_REQUESTS_PER_10S: u64 = 20;

/// Wait until the agent makes fewer than [`QUIET_REQUESTS_PER_10S`] requests
/// in 10 s, at most `timeout` s; the seconds it took, or None.
pub async fn wait_until_quiet(
    agent: &str,
    proc_: &AgentProcess,
    kcp_proxy: &Proxy,
    svc_proxy: &Proxy,
    timeout: u64,
) -> Option<f64> {
    let t0 = Instant::now();
    let mut last_print = Instant::now();
    loop {
        let (k, s) = (kcp_proxy.counter.snapshot(), svc_proxy.counter.snapshot());
        tokio::time::sleep(Duration::from_secs(10)).await;
        let dk = kcp_proxy.counter.snapshot().since(&k);
        let ds = svc_proxy.counter.snapshot().since(&s);
        if dk.total + ds.total < QUIET_REQUESTS_PER_10S || !proc_.is_running() {
            return Some(t0.elapsed().as_secs_f64());
        }
        if t0.elapsed() > Duration::from_secs(timeout) {
            log(format!(
                "  {agent} still busy after {timeout}s (--quiet-timeout); going on"
            ));
            return None;
        }
        if last_print.elapsed() > progress_interval(t0) {
            last_print = Instant::now();
            log(format!(
                "  waiting for {agent} to go quiet: {} requests to kcp [{}], {} to the service cluster in the last 10s",
                dk.total,
                dk.top(3),
                ds.total
            ));
        }
    }
}

/// What every run of an agent starts from.
pub struct Setup {
    pub env: Env,
    /// The counting proxy in front of the service cluster.
    pub svc_proxy: Proxy,
    /// The agent's command line (without health and metrics addresses).
    pub args: Vec<String>,
    /// The agents' kubeconfigs: kcp and the service cluster through the
    /// counting proxies, with the agents' identities.
    pub kcp_kubeconfig: std::path::PathBuf,
    pub service_kubeconfig: std::path::PathBuf,
}

/// A fresh provider workspace and service cluster for `agent`, both reached
/// through counting proxies, and the same RBAC for either agent.
pub async fn set_up(agent: &str, binary: &Path, kcp_proxy: &Proxy, tls: &Tls) -> Result<Setup> {
    // Env::prepare never runs the binary it is given; we start agents here.
    let env = Env::prepare(&format!("bench-{agent}"), binary).await;
    log(format!(
        "provider {} and a fresh service cluster ready",
        env.provider.path
    ));
    apply_yaml(
        &env.service_client,
        &ALL_RBAC.replace(
            "SUBJECT",
            &format!(
                "{{kind: ServiceAccount, name: {CHART_SERVICE_ACCOUNT}, namespace: {AGENT_NAMESPACE}}}"
            ),
        ),
    )
    .await
    .context("agent RBAC on the service cluster")?;
    let provider_client = env.kcp.client(&env.provider.path).await?;
    apply_yaml(
        &provider_client,
        &ALL_RBAC.replace(
            "SUBJECT",
            &format!("{{apiGroup: rbac.authorization.k8s.io, kind: User, name: {AGENT_KCP_USER}}}"),
        ),
    )
    .await
    .context("agent RBAC in kcp")?;

    let svc_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let svc_upstream = kube::Config::from_custom_kubeconfig(
        env.service.kubeconfig("admin", "-"),
        &Default::default(),
    )
    .await?;
    let svc_proxy = Proxy::start(svc_listener, svc_upstream, tls);
    let kcp_kc = env.dir.join("bench-kcp.kubeconfig");
    let svc_kc = env.dir.join("bench-service.kubeconfig");
    std::fs::write(
        &kcp_kc,
        kubeconfig_yaml(
            &format!("{}/clusters/{}", kcp_proxy.url, env.provider.path),
            &tls.ca_pem,
            AGENT_KCP_TOKEN,
        ),
    )?;
    std::fs::write(
        &svc_kc,
        kubeconfig_yaml(&svc_proxy.url, &tls.ca_pem, &env.agent_token),
    )?;
    wait_for_access(&env).await?;
    let args = agent_args(agent, &kcp_kc, &svc_kc);
    Ok(Setup {
        env,
        svc_proxy,
        kcp_kubeconfig: kcp_kc,
        service_kubeconfig: svc_kc,
        args,
    })
}
