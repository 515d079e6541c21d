//! `syncweave sync`, the api-syncagent role: connect to kcp and the service
//! cluster, elect a leader, then publish and sync until SIGTERM/SIGINT.

use anyhow::Context;
use tokio_util::sync::CancellationToken;
use tracing::info;

use super::{SHUTDOWN_GRACE, ensure_namespace, finish, serve, shutdown_signal};
use crate::cli::SyncOptions;
use crate::kcp::KcpContext;
use crate::kube::health::{CHECK_KCP, CHECK_SERVICE, CHECK_SYNC, Health};
use crate::kube::kubeconfig;
use crate::plugin::chain::PluginHost;
use crate::publish::{PublishConfig, Publisher};

pub async fn run_sync(opts: SyncOptions) -> anyhow::Result<()> {
    opts.common.apply_rate_limits();
    crate::kube::client::set_identity(&crate::kube::leader::identity());
    let cancel = CancellationToken::new();
    let health = Health::new(&[CHECK_KCP, CHECK_SERVICE], &[CHECK_SYNC]);
    let servers = serve::start(
        opts.common.metrics_address.0,
        opts.common.health_address.0,
        health.clone(),
        cancel.clone(),
    )
    .await?;
    let kcp_cfg = kubeconfig::load_kcp(&opts.kcp_kubeconfig).await?;
    let service_cfg = kubeconfig::load_service_with(
        opts.common.kubeconfig.as_deref(),
        opts.host_override.as_deref(),
        opts.ca_file_override.as_deref(),
    )
    .await?;
    // A server that hangs shows on /readyz, found by pings (no requests).
    tokio::spawn(crate::kube::liveness::run(
        service_cfg.clone(),
        "service",
        cancel.clone(),
    ));
    tokio::spawn(crate::kube::liveness::run(
        kcp_cfg.clone(),
        "kcp",
        cancel.clone(),
    ));
    // Leader election uses its own client, outside the write fence it opens.
    let lease_client = crate::kube::client::build_unfenced(service_cfg.clone(), "lease")
        .context("--kubeconfig: building service-cluster client")?;
    let service = crate::kube::client::build(service_cfg, "service")
        .context("--kubeconfig: building service-cluster client")?;
    // Readiness follows how each server answers the agent's own requests
    // (watches included): no probe requests in steady state.
    health.follow_server(CHECK_SERVICE, &["service", "lease"]);
    health.follow_server(CHECK_KCP, &["kcp"]);
    let kcp = tokio::select! {
        k = resolve_kcp(kcp_cfg, &opts.endpoint_slice, &health) => k?,
        _ = shutdown_signal(cancel.clone()) => return Ok(()),
    };
    // Shards join and leave the endpoint slice; sync controllers follow.
    // Supervised; ends with `cancel`.
    tokio::spawn({
        let (kcp, cancel) = (kcp.clone(), cancel.clone());
        crate::controller::supervise::supervised(
            "endpoint-slice-watch",
            String::new(),
            cancel.clone(),
            move || kcp.clone().watch_endpoints(cancel.clone()),
        )
    });
    info!(
        agent = %opts.agent_name,
        export = %kcp.export_name,
        export_workspace = %kcp.export_workspace,
        partition = ?kcp.partition,
        "connected to kcp"
    );
    // The namespace holds the Lease too: created before the election (and
    // so outside the fence), by whichever replica comes first.
    ensure_namespace(&lease_client, &opts.namespace).await?;

    let runtime = syncweave_runtime::Runtime::new(syncweave_runtime::RuntimeConfig::default())
        .context("starting the Wasm plugin runtime")?;
    crate::ops::metrics::instrument(&runtime);
    servers.debug(opts.common.debug_address.0, &runtime).await?;
    // WasmPlugins are reconciled by the leader only (it writes their status).
    let registry = crate::plugin::wasmplugin::WasmPluginRegistry::new();
    let fetch = crate::plugin::fetch::FetchContext::new(
        crate::plugin::fetch::FetchOptions::for_runtime(&runtime, Some(service.clone())),
    )
    .context("setting up plugin fetching")?;
    let resolver =
        crate::plugin::resolve::PluginResolver::new(runtime.clone(), registry.clone(), fetch);
    let plugins = PluginHost::new(runtime.clone(), resolver);
    info!(builtins = ?plugins.runtime().builtin_names(), "plugin runtime ready");

    health.set_standby(opts.common.enable_leader_election);
    let lease = crate::kube::leader::acquire_if_enabled(
        opts.common.enable_leader_election,
        &lease_client,
        &opts.namespace,
        &lease_name(&opts.agent_name, &kcp),
        opts.common.leader_timings()?,
        Some(crate::kube::leader::Configuration(format!(
            "kcp={} apiexportendpointslice={}:{} selector={:?}",
            kcp.base_url, kcp.slice_workspace, kcp.slice_name, opts.selector
        ))),
        cancel.clone(),
    )
    .await?;
    health.set_standby(false);
    // One Event recorder for the service cluster: its series aggregation
    // works across every controller that reports there.
    let recorder = crate::kube::recorder::for_service(service.clone());

    // Joined at shutdown. It ends only on a setup error, which stops the
    // agent (cancel) rather than restarting: its runner retries every
    // WasmPlugin by itself, under the supervisor.
    let wasmplugins = tokio::spawn({
        let (service, runtime, cancel) = (service.clone(), runtime.clone(), cancel.clone());
        let recorder = recorder.clone();
        async move {
            if let Err(e) =
                crate::plugin::wasmplugin::run(service, runtime, registry, recorder, cancel.clone())
                    .await
            {
                tracing::error!(error = %e, "WasmPlugin controller failed; shutting down");
                cancel.cancel();
            }
        }
    });
    // The SyncTarget of a cluster registered with `syncweave cluster register`.
    let reporter = opts.sync_target.clone().map(|name| {
        // Joined at shutdown; ends with `cancel`.
        tokio::spawn(crate::register::target::report(
            kcp.export_client.clone(),
            service.clone(),
            name,
            opts.selector.clone(),
            cancel.clone(),
        ))
    });
    let (publisher, parts) = Publisher::new(
        PublishConfig {
            agent_name: opts.agent_name.clone(),
            namespace: opts.namespace.clone(),
            selector: opts.selector.clone(),
            disabled: opts.disabled_controllers.clone(),
            resync: opts.resync_period,
            workers: opts.sync_workers,
            priority: opts.sync_priority,
        },
        kcp,
        service,
        plugins,
        health.clone(),
        recorder,
    );
    // Joined at shutdown; it supervises what it starts.
    let run = tokio::spawn(publisher.run(parts, cancel.clone()));
    shutdown_signal(cancel.clone()).await;
    info!("shutting down");
    cancel.cancel();
    let stopping = async {
        let _ = run.await;
        let _ = wasmplugins.await;
        if let Some(r) = reporter {
            let _ = r.await;
        }
    };
    if tokio::time::timeout(SHUTDOWN_GRACE, stopping)
        .await
        .is_err()
    {
        tracing::warn!(grace = ?SHUTDOWN_GRACE, "workers did not stop in time; exiting anyway");
    }
    finish(lease, servers).await
}

/// Resolve the endpoint slice, waiting while it or its APIExport does not
/// exist yet: kcp creates the slice asynchronously after the APIExport, and
/// in a fresh installation the agent often starts first.
async fn resolve_kcp(
    cfg: kube::Config,
    slice: &str,
    health: &Health,
) -> anyhow::Result<KcpContext> {
    let mut delay = std::time::Duration::from_millis(500);
    loop {
        match KcpContext::resolve(cfg.clone(), slice).await {
            Ok(k) => {
                health.ok(CHECK_KCP);
                return Ok(k);
            }
            Err(
                e @ (crate::kcp::KcpError::SliceNotFound { .. }
                | crate::kcp::KcpError::ExportNotFound { .. }),
            ) => {
                health.fail(CHECK_KCP, e.to_string());
                tracing::warn!(error = %e, retry_in = ?delay, "waiting for kcp objects");
            }
            Err(crate::kcp::KcpError::Kube {
                what,
                source: kube::Error::Api(s),
            }) if s.code == 401 || s.code == 403 => {
                anyhow::bail!(
                    "--kcp-kubeconfig: {what}: access denied ({}); grant the agent's user the sync role's kcp permissions listed in docs/rbac.md",
                    s.message
                );
            }
            Err(e) => {
                health.fail(CHECK_KCP, e.to_string());
                tracing::warn!(error = %e, retry_in = ?delay, "cannot reach kcp yet; retrying");
            }
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(std::time::Duration::from_secs(30));
    }
}

/// The sync agent's Lease: `syncagent.<agent-name>` as upstream's, so
/// replicas of either binary elect among themselves; for a partitioned
/// endpoint slice, one per slice, so that the agents serving the other
/// partitions of the same export under the same name each have their own.
fn lease_name(agent_name: &str, kcp: &crate::kcp::KcpContext) -> String {
    match &kcp.partition {
        Some(_) => format!("syncagent.{agent_name}.{}", kcp.slice_name),
        None => format!("syncagent.{agent_name}"),
    }
}
