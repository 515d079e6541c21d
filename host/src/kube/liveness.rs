//! Is an API server alive? Found out without sending it requests: the
//! agent keeps one HTTP/2 connection of its own to each server and sends a
//! PING frame on it every [`PERIOD`], as client-go's HTTP/2 health check
//! does. A frozen or black-holed server stops answering, and `/readyz`
//! names it within three periods ([`crate::kube::client::servers_health`]). A
//! PING is not a request: the server's request metrics, audit log and
//! priority-and-fairness never see it, so a steady agent sends nothing but
//! its watches.
//!
//! A server reached through a proxy or over plain HTTP, or one that does
//! not offer HTTP/2, is asked `GET /version` every period instead.

use std::sync::Arc;
use std::time::Duration;

use kube::client::ConfigExt;
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;
use tokio::time::timeout;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info};

/// How often each server is pinged; three periods without an answer and
/// `/readyz` reports it.
pub const PERIOD: Duration = Duration::from_secs(10);

/// Check `server` (the name its requests are counted and limited under)
/// at `cfg`'s URL until cancelled. Supervised: a panic restarts it.
pub async fn run(cfg: kube::Config, server: &'static str, cancel: CancellationToken) {
    crate::kube::client::expect_answers(server, PERIOD * 3);
    let check = {
        let cancel = cancel.clone();
        move || check(cfg.clone(), server, cancel.clone())
    };
    crate::controller::supervise::supervised("liveness", server.to_string(), cancel, check).await
}

async fn check(cfg: kube::Config, server: &'static str, cancel: CancellationToken) {
    let fallback = match Target::of(&cfg) {
        Ok(target) => pings(&target, server, &cancel).await,
        Err(why) => Some(why),
    };
    if let Some(why) = fallback {
        info!(server, reason = %why, "checking the server with GET /version every 10 s (no HTTP/2 pings)");
        requests(cfg, server, &cancel).await;
    }
}

/// Ping until cancelled; `Some(why)` if the server cannot be pinged at all
/// (it does not speak HTTP/2).
async fn pings(
    target: &Target,
    server: &'static str,
    cancel: &CancellationToken,
) -> Option<String> {
    loop {
        match target.connect().await {
            Ok(mut conn) => {
                // Pinged until it stops answering; a server closing an idle
                // connection (GOAWAY) ends it too. Either way: reconnect.
                loop {
                    let answered = tokio::select! {
                        _ = cancel.cancelled() => return None,
                        a = timeout(PERIOD, conn.pings.ping(h2::Ping::opaque())) => a,
                    };
                    match answered {
                        Ok(Ok(_)) => crate::kube::client::record_alive(server),
                        Ok(Err(e)) => {
                            debug!(server, error = %e, "the liveness connection closed; reconnecting");
                            break;
                        }
                        Err(_) => {
                            debug!(server, "no answer to a ping within 10 s; reconnecting");
                            break;
                        }
                    }
                    tokio::select! {
                        _ = cancel.cancelled() => return None,
                        _ = tokio::time::sleep(PERIOD) => {}
                    }
                }
            }
            Err(Failure::NoHttp2) => return Some("the server does not offer HTTP/2".into()),
            // The agent's own requests report an unreachable server; this
            // only stops vouching for it.
            Err(Failure::Io(e)) => debug!(server, error = %e, "liveness connection failed"),
        }
        tokio::select! {
            _ = cancel.cancelled() => return None,
            _ = tokio::time::sleep(PERIOD) => {}
        }
    }
}

/// The fallback: one cheap request each period, through the agent's own
/// client stack (which records how the server answered).
async fn requests(cfg: kube::Config, server: &'static str, cancel: &CancellationToken) {
    let client = match crate::kube::client::build_unfenced(cfg, server) {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!(server, error = %e, "cannot build a client to check the server; /readyz follows the agent's other requests only");
            cancel.cancelled().await;
            return;
        }
    };
    loop {
        if let Err(e) = client.apiserver_version().await {
            debug!(server, error = %e, "GET /version failed");
        }
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = tokio::time::sleep(PERIOD) => {}
        }
    }
}

#[derive(Debug)]
enum Failure {
    NoHttp2,
    Io(String),
}

/// Where and how to open the liveness connection.
struct Target {
    host: String,
    port: u16,
    name: ServerName<'static>,
    tls: Arc<rustls::ClientConfig>,
}

impl Target {
    /// `Err(why)` when the server cannot be pinged this way.
    fn of(cfg: &kube::Config) -> Result<Target, String> {
        if cfg.proxy_url.is_some() {
            return Err("it is reached through a proxy".into());
        }
        let url = &cfg.cluster_url;
        if url.scheme_str() != Some("https") {
            return Err("it is reached over plain HTTP".into());
        }
        let host = url
            .host()
            .ok_or("its URL has no host")?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let port = url.port_u16().unwrap_or(443);
        let name = ServerName::try_from(cfg.tls_server_name.clone().unwrap_or(host.clone()))
            .map_err(|e| format!("invalid TLS server name: {e}"))?;
        let mut tls = cfg
            .rustls_client_config()
            .map_err(|e| format!("its TLS configuration: {e}"))?;
        tls.alpn_protocols = vec![b"h2".to_vec()];
        Ok(Target {
            host,
            port,
            name,
            tls: Arc::new(tls),
        })
    }

    async fn connect(&self) -> Result<Conn, Failure> {
        let io = |e: String| Failure::Io(e);
        let tcp = timeout(PERIOD, TcpStream::connect((self.host.as_str(), self.port)))
            .await
            .map_err(|_| io("connect timed out".into()))?
            .map_err(|e| io(e.to_string()))?;
        let _ = tcp.set_nodelay(true);
        let tls = timeout(
            PERIOD,
            tokio_rustls::TlsConnector::from(self.tls.clone()).connect(self.name.clone(), tcp),
        )
        .await
        .map_err(|_| io("TLS handshake timed out".into()))?
        .map_err(|e| io(e.to_string()))?;
        if tls.get_ref().1.alpn_protocol() != Some(b"h2") {
            return Err(Failure::NoHttp2);
        }
        let (send, mut connection) = timeout(PERIOD, h2::client::handshake(tls))
            .await
            .map_err(|_| io("HTTP/2 handshake timed out".into()))?
            .map_err(|e| io(e.to_string()))?;
        let pings = connection
            .ping_pong()
            .ok_or_else(|| io("no ping handle".into()))?;
        // The connection does its I/O in its own task, ended when `Conn` is
        // dropped.
        let driver = tokio::spawn(async move {
            let _ = connection.await;
        });
        Ok(Conn {
            pings,
            _send: send,
            driver,
        })
    }
}

/// One open liveness connection.
struct Conn {
    pings: h2::PingPong,
    /// Held: the connection closes once no handle can send on it.
    _send: h2::client::SendRequest<bytes::Bytes>,
    driver: tokio::task::JoinHandle<()>,
}

impl Drop for Conn {
    fn drop(&mut self) {
        self.driver.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(url: &str) -> kube::Config {
        kube::Config::new(url.parse().unwrap())
    }

    #[test]
    fn https_servers_are_pinged_others_asked() {
        let t = Target::of(&cfg("https://10.0.0.1:6443/clusters/root")).unwrap();
        assert_eq!((t.host.as_str(), t.port), ("10.0.0.1", 6443));
        assert_eq!(t.tls.alpn_protocols, vec![b"h2".to_vec()]);
        let t = Target::of(&cfg("https://[::1]/")).unwrap();
        assert_eq!((t.host.as_str(), t.port), ("::1", 443));
        let e = Target::of(&cfg("http://127.0.0.1:8080")).err().unwrap();
        assert!(e.contains("plain HTTP"), "{e}");
        let mut proxied = cfg("https://example.com");
        proxied.proxy_url = Some("http://proxy:3128".parse().unwrap());
        assert!(Target::of(&proxied).err().unwrap().contains("proxy"));
    }
}
