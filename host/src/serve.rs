//! The metrics (`--metrics-address`) and health (`--health-address`)
//! endpoints. Both are tiny plain-text HTTP/1.1 servers: a full web framework
//! would be a large dependency for three read-only paths.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tracing::info;

use crate::health::Health;

fn render_metrics() -> String {
    let stats = crate::metrics::RUNTIME_STATS.get().map(|f| f());
    crate::metrics::METRICS.render(stats)
}

/// Servers stop when the returned guard is dropped or `cancel` fires.
pub struct Servers {
    cancel: CancellationToken,
}

impl Drop for Servers {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

/// Start the metrics and health servers. Call this first thing, so that
/// `/healthz` answers while the agent is still connecting.
pub async fn start(
    metrics_address: Option<SocketAddr>,
    health_address: Option<SocketAddr>,
    health: Arc<Health>,
    cancel: CancellationToken,
) -> anyhow::Result<Servers> {
    let own = cancel.child_token();
    if let Some(addr) = metrics_address {
        let l = TcpListener::bind(addr)
            .await
            .with_context(|| format!("--metrics-address {addr}: cannot listen"))?;
        info!(%addr, "serving metrics on /metrics");
        // Ends with `own` (Servers::cancel), after the workers stopped.
        tokio::spawn(serve(l, health.clone(), own.clone()));
    }
    if let Some(addr) = health_address {
        let l = TcpListener::bind(addr)
            .await
            .with_context(|| format!("--health-address {addr}: cannot listen"))?;
        info!(%addr, "serving /healthz and /readyz");
        // Ends with `own`, like the metrics server.
        tokio::spawn(serve(l, health, own.clone()));
    }
    Ok(Servers { cancel: own })
}

async fn serve(listener: TcpListener, health: Arc<Health>, cancel: CancellationToken) {
    loop {
        let (mut sock, _) = tokio::select! {
            r = listener.accept() => match r { Ok(s) => s, Err(_) => continue },
            _ = cancel.cancelled() => return,
        };
        let health = health.clone();
        // One short-lived task per connection, bounded by its 5 s read
        // timeout and a single response.
        tokio::spawn(async move {
            let mut buf = [0u8; 2048];
            let n =
                match tokio::time::timeout(std::time::Duration::from_secs(5), sock.read(&mut buf))
                    .await
                {
                    Ok(Ok(n)) => n,
                    _ => return,
                };
            let req = String::from_utf8_lossy(&buf[..n]);
            let path = req.split_whitespace().nth(1).unwrap_or("/");
            let (status, body) = match path.split('?').next().unwrap_or("/") {
                "/metrics" => ("200 OK", render_metrics()),
                "/healthz" | "/livez" => ("200 OK", "ok\n".to_string()),
                "/readyz" => match health.readiness() {
                    (true, report) => ("200 OK", report),
                    (false, report) => ("503 Service Unavailable", report),
                },
                _ => ("404 Not Found", "not found\n".to_string()),
            };
            let resp = format!(
                "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = sock.write_all(resp.as_bytes()).await;
        });
    }
}
