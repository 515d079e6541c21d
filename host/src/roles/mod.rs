//! The two roles (`syncweave sync`, `syncweave init`): connect, then run controllers
//! until SIGTERM/SIGINT.

mod init;
pub mod serve;
mod sync;

pub use init::run_init;
pub use sync::run_sync;

use kube::Client;
use tokio_util::sync::CancellationToken;

pub(crate) const PROBE_EVERY: std::time::Duration = std::time::Duration::from_secs(5);
/// How long a stop waits for workers (a request to a server that hangs must
/// not keep a replica that lost its lease alive; Kubernetes allows 30 s).
pub(crate) const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(10);

/// After the workers stopped: hand the lease over (a graceful stop) and
/// fail the process if leadership was lost, so Kubernetes restarts it as a
/// standby, as controller-runtime does.
pub(crate) async fn finish<S>(lease: crate::kube::leader::Lease, servers: S) -> anyhow::Result<()> {
    let lost = lease.lost();
    lease.release().await;
    drop(servers);
    anyhow::ensure!(
        !lost,
        "lost the leader lease (see the log above); exiting so that this replica restarts as a standby"
    );
    Ok(())
}

pub(crate) async fn ensure_namespace(client: &Client, ns: &str) -> anyhow::Result<()> {
    crate::kube::namespace::ensure(client, ns)
        .await
        .map_err(|e| {
            anyhow::Error::new(e.source).context(format!("--namespace {ns}: {}", e.action))
        })
}

/// Resolve on SIGTERM (what Kubernetes sends) or Ctrl-C, or when cancelled
/// from inside (e.g. a lost leader lease).
pub(crate) async fn shutdown_signal(cancel: CancellationToken) {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("SIGTERM handler");
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
        _ = cancel.cancelled() => {}
    }
}
