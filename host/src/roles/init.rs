//! `syncweave init`, the init-agent role: connect to kcp, elect a leader,
//! then initialize workspaces until SIGTERM/SIGINT.

use anyhow::Context;
use tokio_util::sync::CancellationToken;
use tracing::info;

use super::{PROBE_EVERY, SHUTDOWN_GRACE, finish, serve, shutdown_signal};
use crate::cli::InitOptions;
use crate::kube::health::{self, CHECK_INIT, CHECK_KCP, Health};
use crate::kube::kubeconfig;

pub async fn run_init(opts: InitOptions) -> anyhow::Result<()> {
    opts.common.apply_rate_limits();
    crate::kube::client::set_identity(&crate::kube::leader::identity());
    let cancel = CancellationToken::new();
    let health = Health::new(&[CHECK_KCP], &[CHECK_INIT]);
    let servers = serve::start(
        opts.common.metrics_address.0,
        opts.common.health_address.0,
        health.clone(),
        cancel.clone(),
    )
    .await?;
    // For this role --kubeconfig points at kcp; any /clusters/<x> in its
    // server URL is dropped, as upstream does.
    let kcp_cfg = match kubeconfig::load_service(opts.common.kubeconfig.as_deref()).await {
        Ok(c) => c,
        Err(kubeconfig::KubeconfigError::Infer(e)) => anyhow::bail!(
            "no kubeconfig for kcp: pass --kubeconfig, set $KUBECONFIG, or run in a cluster ({e})"
        ),
        Err(e) => return Err(e.into()),
    };
    tokio::spawn(crate::kube::liveness::run(
        kcp_cfg.clone(),
        "kcp",
        cancel.clone(),
    ));
    let config_client = crate::init::config_client(&kcp_cfg, &opts.config_workspace)?;
    let lease_client = crate::init::lease_client(&kcp_cfg, &opts.config_workspace)?;
    let runtime = syncweave_runtime::Runtime::new(syncweave_runtime::RuntimeConfig::default())
        .context("starting the Wasm plugin runtime")?;
    crate::ops::metrics::instrument(&runtime);
    servers.debug(opts.common.debug_address.0, &runtime).await?;
    // configmap:// renderer sources are read from the config workspace.
    let fetch = crate::plugin::fetch::FetchContext::new(
        crate::plugin::fetch::FetchOptions::for_runtime(&runtime, Some(config_client.clone())),
    )?;
    let agent = crate::init::InitAgent::new(
        kcp_cfg,
        crate::init::InitConfig {
            config_workspace: opts.config_workspace.clone(),
            selector: opts.selector.clone(),
        },
        crate::init::render::Renderers::new(runtime.clone(), fetch),
    )?;
    agent.check_access().await?;
    info!(
        config_workspace = %opts.config_workspace,
        builtins = ?runtime.builtin_names(),
        "connected to kcp"
    );
    health.follow_server(CHECK_KCP, &["kcp", "lease"]);
    health.set_standby(opts.common.enable_leader_election);
    // The Lease `init-agent.kcp.io` lives in the config workspace, in
    // --leader-election-namespace, as upstream init-agent's.
    let lease = crate::kube::leader::acquire_if_enabled(
        opts.common.enable_leader_election,
        &lease_client,
        &opts.leader_election_namespace,
        crate::init::LEASE_NAME,
        opts.common.leader_timings()?,
        None,
        cancel.clone(),
    )
    .await?;
    health.set_standby(false);
    health::spawn_probe(health.clone(), CHECK_INIT, PROBE_EVERY, cancel.clone(), {
        let agent = agent.clone_probe();
        move || {
            let agent = agent.clone();
            async move { agent.can_list_targets().await }
        }
    });
    // Joined at shutdown; it supervises what it starts.
    let run = tokio::spawn(agent.run(cancel.clone()));
    shutdown_signal(cancel.clone()).await;
    info!("shutting down");
    cancel.cancel();
    if tokio::time::timeout(SHUTDOWN_GRACE, run).await.is_err() {
        tracing::warn!(grace = ?SHUTDOWN_GRACE, "workers did not stop in time; exiting anyway");
    }
    finish(lease, servers).await
}
