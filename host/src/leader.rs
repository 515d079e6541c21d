//! Leader election with a coordination.k8s.io Lease on the service cluster,
//! so only one replica syncs. As with controller-runtime, losing the lease
//! ends the process (Kubernetes restarts it as a follower).

use kube::Client;
use kube_lease_manager::LeaseManagerBuilder;
use tokio_util::sync::CancellationToken;
use tracing::{error, info};

/// Holds the lease while alive.
pub struct Lease {
    _rx: Option<tokio::sync::watch::Receiver<bool>>,
}

/// When enabled, block until this replica leads, then watch the lease in the
/// background and cancel `cancel` if it is lost.
pub async fn acquire_if_enabled(
    enabled: bool,
    client: &Client,
    namespace: &str,
    name: &str,
    cancel: CancellationToken,
) -> anyhow::Result<Lease> {
    if !enabled {
        return Ok(Lease { _rx: None });
    }
    let identity = format!(
        "{}_{}",
        std::fs::read_to_string("/proc/sys/kernel/hostname")
            .unwrap_or_default()
            .trim(),
        std::process::id()
    );
    let manager = LeaseManagerBuilder::new(client.clone(), name)
        .with_namespace(namespace)
        .with_identity(identity.clone())
        .with_duration(15)
        .with_grace(5)
        .build()
        .await
        .map_err(|e| {
            anyhow::anyhow!("--enable-leader-election: cannot use Lease {namespace}/{name}: {e}")
        })?;
    let (mut rx, _task) = manager.watch().await;
    info!(lease = name, namespace, identity = %identity, "waiting to become leader");
    while !*rx.borrow_and_update() {
        tokio::select! {
            r = rx.changed() => r.map_err(|_| anyhow::anyhow!("leader election stopped before this replica became leader"))?,
            _ = cancel.cancelled() => anyhow::bail!("shut down while waiting for leadership"),
        }
    }
    info!(lease = name, "became leader");
    let mut watch = rx.clone();
    tokio::spawn(async move {
        loop {
            if watch.changed().await.is_err() || !*watch.borrow() {
                error!(lease = %identity, "lost leadership; shutting down");
                cancel.cancel();
                return;
            }
        }
    });
    Ok(Lease { _rx: Some(rx) })
}
