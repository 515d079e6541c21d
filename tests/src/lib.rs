//! End-to-end harness: a real kcp and a real kube-apiserver + etcd (the
//! provider's service cluster), started from the binaries `tests/setup.sh`
//! builds; kcp workspaces for the provider and consumers; and the `syncweave`
//! binary run as a real process against them, with least-privilege identities.
//!
//! One kcp serves a whole test binary (it takes tens of seconds to start on
//! two cores); each test isolates itself in its own workspaces.

pub mod agent;
pub mod env;
pub mod kcp;
pub mod resources;
pub mod service;

pub use self::env::Env;
pub use agent::Agent;
pub use kcp::{
    AGENT_KCP_TOKEN, AGENT_KCP_USER, Kcp, LIMITED_KCP_TOKEN, LIMITED_KCP_USER, ROOT_SHARD_REGION,
    SHARD_1_REGION, Workspace, kcp, sharded_kcp,
};
pub use resources::*;
pub use service::ServiceCluster;

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

/// `GET path` on 127.0.0.1:`port` (the agent's metrics and health servers):
/// the status code and the body.
pub async fn http_get(port: u16, path: &str) -> Result<(u16, String), String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .map_err(|e| e.to_string())?;
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
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
    let body = out.split("\r\n\r\n").nth(1).unwrap_or_default().to_string();
    Ok((code, body))
}

/// A free TCP port on loopback.
pub fn free_port() -> u16 {
    crate::kcp::free_port().expect("a free port")
}
