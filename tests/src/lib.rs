//! End-to-end harness: a real kcp and a real kube-apiserver + etcd (the
//! provider's service cluster), started from the binaries `tests/setup.sh`
//! builds; kcp workspaces for the provider and consumers; and the `syncweave`
//! binary run as a real process against them, with least-privilege identities.
//!
//! One kcp serves a whole test binary (it takes tens of seconds to start on
//! two cores); each test isolates itself in its own workspaces.

pub mod agent;
pub mod author;
pub mod env;
pub mod kcp;
pub mod proxy;
pub mod registry;
pub mod resources;
pub mod service;

pub use self::env::Env;
pub use agent::Agent;
pub use kcp::{
    AGENT_KCP_TOKEN, AGENT_KCP_USER, Kcp, LIMITED_KCP_TOKEN, LIMITED_KCP_USER, ROOT_SHARD_REGION,
    SHARD_1_REGION, Workspace, kcp, own_kcp, sharded_kcp,
};
pub use libc;
pub use registry::{Registry, RegistryAuth};
pub use resources::*;
pub use service::ServiceCluster;

use std::collections::BTreeMap;
use std::future::Future;
use std::time::{Duration, Instant};

/// Poll `check` until it yields `Some`, or fail after `timeout` with the
/// description of what was awaited and the last observed state.
pub async fn eventually<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Option<T>, String>>,
{
    let deadline = Instant::now() + timeout;
    let mut last;
    loop {
        match check().await {
            Ok(Some(v)) => return v,
            Ok(None) => last = "condition not met yet".into(),
            Err(e) => last = e,
        }
        if Instant::now() > deadline {
            panic!("timed out after {timeout:?} waiting for {what}; last state: {last}");
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// A short unique suffix for names, so tests never collide in the shared kcp.
pub fn unique(prefix: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis()
        % 1_000_000;
    format!("{prefix}-{}-{t}-{n}", std::process::id() % 10_000)
}

/// `GET path` on 127.0.0.1:`port` (the agent's metrics, health and debug
/// servers), as curl through `kubectl port-forward` sends it (the debug
/// endpoint refuses Host headers that are not loopback names): the status
/// code and the body.
pub async fn http_get(port: u16, path: &str) -> Result<(u16, String), String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .map_err(|e| e.to_string())?;
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: localhost:{port}\r\n\r\n").as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    let mut out = String::new();
    s.read_to_string(&mut out)
        .await
        .map_err(|e| e.to_string())?;
    let code = out
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| format!("not HTTP: {out}"))?;
    let body = out
        .split_once("\r\n\r\n")
        .map(|(_, b)| b)
        .unwrap_or_default();
    Ok((code, body.to_string()))
}

/// A free TCP port on loopback.
pub fn free_port() -> u16 {
    crate::kcp::free_port().expect("a free port")
}

/// Non-watch requests the agent has sent so far, by server and verb
/// (`server="service",verb="patch"`), from its
/// `syncweave_api_requests_total` metric on `metrics_port`.
pub async fn requests_sent(metrics_port: u16) -> std::collections::BTreeMap<String, u64> {
    let (_, body) = http_get(metrics_port, "/metrics").await.expect("/metrics");
    body.lines()
        .filter_map(|l| l.strip_prefix("syncweave_api_requests_total{"))
        .filter_map(|l| l.split_once("} "))
        .filter(|(labels, _)| !labels.contains("verb=\"watch\""))
        .map(|(labels, n)| (labels.to_string(), n.trim().parse().unwrap_or(0)))
        .collect()
}

/// One event of a Kubernetes audit log (the fields the tests read).
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditEvent {
    pub verb: String,
    #[serde(default)]
    pub user_agent: String,
    pub user: AuditUser,
    /// Set on requests a kcp virtual workspace forwards on a user's behalf
    /// (`user` is then kcp itself).
    #[serde(default)]
    pub impersonated_user: Option<AuditUser>,
    #[serde(rename = "requestURI")]
    pub request_uri: String,
    /// RFC 3339 with microseconds.
    pub request_received_timestamp: String,
    #[serde(default)]
    pub response_status: Option<serde_json::Value>,
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
}

#[derive(Debug, Clone, serde::Deserialize)]
pub struct AuditUser {
    #[serde(default)]
    pub username: String,
}

impl AuditEvent {
    /// Whether it is about one of `clusters` (logical-cluster names), or a
    /// workspace under `path` (kcp records both as annotations).
    pub fn in_workspaces(&self, path: &str, clusters: &[&str]) -> bool {
        self.annotations
            .get("kcp.io/path")
            .is_some_and(|p| p == path || p.starts_with(&format!("{path}:")))
            || self
                .annotations
                .get("kcp.io/cluster")
                .is_some_and(|c| clusters.contains(&c.as_str()))
    }

    /// Whether `user` sent it, directly or through a virtual workspace.
    pub fn by(&self, user: &str) -> bool {
        self.user.username == user
            || self
                .impersonated_user
                .as_ref()
                .is_some_and(|u| u.username == user)
    }
}

/// The events of the audit log at `path` (JSON lines). A line that does not
/// parse fails the test (a silently empty result would prove nothing),
/// except a last line still being written.
pub fn audit_events(path: &std::path::Path) -> Vec<AuditEvent> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let mut events = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        match serde_json::from_str(l) {
            Ok(e) => events.push(e),
            Err(_) if i + 1 == lines.len() => {}
            Err(e) => panic!("{}:{}: not an audit event: {e}", path.display(), i + 1),
        }
    }
    events
}

/// Seconds since the Unix epoch of an RFC 3339 timestamp as audit logs
/// write them (`2026-11-25T17:20:01.123456Z`).
pub fn rfc3339_seconds(ts: &str) -> Option<f64> {
    let (date, time) = ts.trim_end_matches('Z').split_once('T')?;
    let mut d = date.split('-').map(|p| p.parse::<i64>().ok());
    let (y, m, day) = (d.next()??, d.next()??, d.next()??);
    let mut t = time.split(':');
    let (h, min) = (
        t.next()?.parse::<i64>().ok()?,
        t.next()?.parse::<i64>().ok()?,
    );
    let sec: f64 = t.next()?.parse().ok()?;
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146097 + doe - 719468;
    Some((days * 86400 + h * 3600 + min * 60) as f64 + sec)
}

/// Now, in seconds since the Unix epoch.
pub fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or_default()
}
