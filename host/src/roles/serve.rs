//! The metrics (`--metrics-address`), health (`--health-address`) and
//! debug (`--debug-address`) endpoints. All are tiny HTTP/1.1 servers: a
//! full web framework would be a large dependency for a few read-only paths.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tracing::info;

use crate::kube::health::Health;
use crate::plugin::capture::{CaptureLimits, CaptureStore};

fn render_metrics() -> String {
    let stats = crate::ops::metrics::RUNTIME_STATS.get().map(|f| f());
    crate::ops::metrics::METRICS.render(stats)
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

impl Servers {
    /// With `--debug-address`: keep the inputs of `runtime`'s failing
    /// plugin calls ([`CaptureStore`]) and serve them on that (loopback)
    /// address until the servers stop. Without it nothing is captured.
    pub async fn debug(
        &self,
        address: Option<SocketAddr>,
        runtime: &syncweave_runtime::Runtime,
    ) -> anyhow::Result<()> {
        let Some(addr) = address else {
            return Ok(());
        };
        // The flag's parser refuses other addresses; a caller that skipped
        // it must not expose consumers' objects either.
        anyhow::ensure!(
            addr.ip().is_loopback(),
            "--debug-address {addr}: the debug endpoint listens on loopback addresses only"
        );
        let l = TcpListener::bind(addr)
            .await
            .with_context(|| format!("--debug-address {addr}: cannot listen"))?;
        let store = CaptureStore::new(CaptureLimits::default());
        store.attach(runtime);
        let limits = store.limits();
        info!(
            %addr,
            per_digest = limits.per_digest,
            max_capture_bytes = limits.max_capture_bytes,
            max_total_bytes = limits.max_total_bytes,
            "capturing failed plugin calls; serving them on /debug/captures"
        );
        // Ends with the other servers.
        tokio::spawn(serve_debug(l, store, self.cancel.clone()));
        Ok(())
    }
}

/// What the debug endpoint answers: its paths, for `GET /`.
const DEBUG_INDEX: &str = "syncweave debug endpoint\n\n\
GET /debug/captures        failed plugin calls kept for replay (JSON list, newest first)\n\
GET /debug/captures/<id>   one capture (JSON): `syncweave plugin replay <this URL>`\n";

async fn serve_debug(listener: TcpListener, store: Arc<CaptureStore>, cancel: CancellationToken) {
    serve_http(
        listener,
        cancel,
        "Cache-Control: no-store\r\n",
        move |req| debug_response(req, &store),
    )
    .await
}

/// Status line, content type and body of one response.
type Response = (&'static str, &'static str, String);

/// The agent's small HTTP/1.1 servers: one short-lived task per connection,
/// bounded by its 5 s read timeout and a single response to one request of
/// at most 4 KiB (`headers`: more header lines, each ending in CRLF).
async fn serve_http(
    listener: TcpListener,
    cancel: CancellationToken,
    headers: &'static str,
    respond: impl Fn(&str) -> Response + Send + Sync + 'static,
) {
    let respond = Arc::new(respond);
    loop {
        let (mut sock, _) = tokio::select! {
            r = listener.accept() => match r { Ok(s) => s, Err(_) => continue },
            _ = cancel.cancelled() => return,
        };
        let respond = respond.clone();
        tokio::spawn(async move {
            let mut buf = [0u8; 4096];
            let n =
                match tokio::time::timeout(std::time::Duration::from_secs(5), sock.read(&mut buf))
                    .await
                {
                    Ok(Ok(n)) => n,
                    _ => return,
                };
            let (status, kind, body) = respond(&String::from_utf8_lossy(&buf[..n]));
            let head = format!(
                "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\n{headers}Connection: close\r\n\r\n",
                body.len()
            );
            if sock.write_all(head.as_bytes()).await.is_ok() {
                let _ = sock.write_all(body.as_bytes()).await;
            }
        });
    }
}

const JSON: &str = "application/json";
const TEXT: &str = "text/plain; charset=utf-8";

/// Status, content type and body for one request to the debug endpoint.
fn debug_response(req: &str, store: &CaptureStore) -> (&'static str, &'static str, String) {
    let mut words = req.split_whitespace();
    let (method, target) = (words.next().unwrap_or(""), words.next().unwrap_or("/"));
    if method != "GET" {
        return (
            "405 Method Not Allowed",
            TEXT,
            "the debug endpoint is read-only: use GET\n".into(),
        );
    }
    // A browser on the same machine could be steered here by DNS
    // rebinding; such a request names a foreign host.
    let host = req
        .lines()
        .skip(1)
        .take_while(|l| !l.is_empty())
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim().eq_ignore_ascii_case("host").then(|| v.trim())
        });
    if let Some(h) = host
        && !is_loopback_host(h)
    {
        return (
            "403 Forbidden",
            TEXT,
            format!("Host {h:?} is not a loopback name; use localhost or 127.0.0.1\n"),
        );
    }
    let path = target
        .split('?')
        .next()
        .unwrap_or("/")
        .trim_end_matches('/');
    match path {
        "" | "/debug" => ("200 OK", TEXT, DEBUG_INDEX.into()),
        "/debug/captures" => match serde_json::to_string_pretty(&store.list()) {
            Ok(body) => ("200 OK", JSON, body + "\n"),
            Err(e) => ("500 Internal Server Error", TEXT, format!("{e}\n")),
        },
        p => match p.strip_prefix("/debug/captures/") {
            Some(id) => match store.get(id) {
                Some(c) => match serde_json::to_string_pretty(&c) {
                    Ok(body) => ("200 OK", JSON, body + "\n"),
                    Err(e) => ("500 Internal Server Error", TEXT, format!("{e}\n")),
                },
                None => (
                    "404 Not Found",
                    TEXT,
                    format!(
                        "no capture {id:?}: it was never taken, or was dropped (a newer one \
                         took its place, or its plugin digest is no longer in use); see \
                         /debug/captures\n"
                    ),
                ),
            },
            None => ("404 Not Found", TEXT, DEBUG_INDEX.into()),
        },
    }
}

/// `localhost`, `127.0.0.1`, `[::1]` and the like, with or without a port.
fn is_loopback_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(h, _)| h),
    };
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

async fn serve(listener: TcpListener, health: Arc<Health>, cancel: CancellationToken) {
    serve_http(listener, cancel, "", move |req| {
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
        (status, "text/plain; version=0.0.4", body)
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_endpoint_answers_loopback_gets_only() {
        let store = CaptureStore::new(CaptureLimits::default());
        let get = |path: &str, host: &str| {
            debug_response(
                &format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n"),
                &store,
            )
        };
        let (status, kind, body) = get("/debug/captures", "localhost:8086");
        assert_eq!((status, kind), ("200 OK", JSON));
        let list: crate::plugin::capture::CaptureList = serde_json::from_str(&body).unwrap();
        assert!(list.captures.is_empty());
        assert_eq!(list.per_digest, 16);
        assert_eq!(get("/debug/captures/", "127.0.0.1:8086").0, "200 OK");
        assert_eq!(get("/", "[::1]:8086").0, "200 OK");
        let (status, _, body) = get("/debug/captures/7", "localhost");
        assert_eq!(status, "404 Not Found");
        assert!(body.contains("no capture \"7\""), "{body}");
        assert_eq!(
            get("/debug/captures", "evil.example:8086").0,
            "403 Forbidden"
        );
        let (status, _, _) = debug_response("POST /debug/captures HTTP/1.1\r\n\r\n", &store);
        assert_eq!(status, "405 Method Not Allowed");
        assert!(is_loopback_host("127.0.0.2"));
        assert!(!is_loopback_host("10.0.0.1:80"));
    }
}
