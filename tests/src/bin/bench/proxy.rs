//! A counting HTTP proxy between an agent and one API server (kcp or the
//! service cluster).
//!
//! The agent is given a kubeconfig whose server is `https://127.0.0.1:<port>`
//! of this proxy (with the bench's own CA, [`Tls`]); each request is counted
//! (by verb and resource, parsed from the path) and forwarded unchanged
//! (method, path, query, headers with the agent's own bearer token, body) to
//! the real server over TLS; the response, watch streams included, is
//! streamed back. This counts exactly what goes over the wire, the same way
//! for any client, whatever its own metrics say. The proxy speaks HTTP/2 and
//! HTTP/1.1 (ALPN), so each agent keeps the protocol it would use with a real
//! API server (client-go: HTTP/2, kube-rs: HTTP/1.1).
//!
//! TLS is needed even on loopback: client-go's kubeconfig loader drops the
//! bearer token of a plain-`http` server.
//!
//! Only the agents go through the proxies: the bench's own set-up, object
//! creation and watches talk to the servers directly, so they are never
//! counted.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use http::{Request, Response, StatusCode};
use http_body_util::BodyExt as _;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use kube::client::Body;

/// Requests seen by one proxy, cumulative since it started.
#[derive(Default)]
pub struct Counter {
    total: AtomicU64,
    by_kind: Mutex<BTreeMap<String, u64>>,
}

/// A copy of a [`Counter`] at one moment; subtract two to get a window.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    pub total: u64,
    pub by_kind: BTreeMap<String, u64>,
}

impl Counter {
    fn record(&self, kind: String) {
        self.total.fetch_add(1, Ordering::Relaxed);
        *self.by_kind.lock().unwrap().entry(kind).or_default() += 1;
    }

    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            total: self.total.load(Ordering::Relaxed),
            by_kind: self.by_kind.lock().unwrap().clone(),
        }
    }
}

impl Snapshot {
    /// What happened between `earlier` and `self`.
    pub fn since(&self, earlier: &Snapshot) -> Snapshot {
        let by_kind = self
            .by_kind
            .iter()
            .filter_map(|(k, v)| {
                let d = v - earlier.by_kind.get(k).copied().unwrap_or(0);
                (d > 0).then(|| (k.clone(), d))
            })
            .collect();
        Snapshot {
            total: self.total - earlier.total,
            by_kind,
        }
    }

    /// Writes among them: creates, updates, patches and deletes.
    pub fn writes(&self) -> u64 {
        self.by_kind
            .iter()
            .filter(|(k, _)| {
                ["create ", "update ", "patch ", "delete"]
                    .iter()
                    .any(|p| k.starts_with(p))
            })
            .map(|(_, v)| v)
            .sum()
    }

    /// The `n` most frequent kinds, "verb resource ×count", most first.
    pub fn top(&self, n: usize) -> String {
        let mut v: Vec<_> = self.by_kind.iter().collect();
        v.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        v.iter()
            .take(n)
            .map(|(k, c)| format!("{k} ×{c}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// A CA made for this bench run and a serving certificate for 127.0.0.1
/// signed by it.
pub struct Tls {
    /// PEM of the CA, for the agents' kubeconfigs.
    pub ca_pem: String,
    config: Arc<rustls::ServerConfig>,
}

impl Tls {
    pub fn generate() -> anyhow::Result<Tls> {
        use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
        let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "syncweave bench proxy CA");
        let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate()?)?;
        let key = KeyPair::generate()?;
        let leaf = CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])?
            .signed_by(&key, &ca)?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(
                vec![leaf.der().clone()],
                rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
            )?;
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(Tls {
            ca_pem: ca.pem(),
            config: Arc::new(config),
        })
    }
}

pub struct Proxy {
    /// `https://127.0.0.1:<port>`.
    pub url: String,
    pub counter: Arc<Counter>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Proxy {
    /// Serve on `listener`, forwarding to the server of `upstream` (its
    /// `cluster_url` and CA; its credentials are dropped, the agent's own
    /// are passed through).
    pub fn start(
        listener: tokio::net::TcpListener,
        mut upstream: kube::Config,
        tls: &Tls,
    ) -> Proxy {
        upstream.auth_info = Default::default();
        upstream.headers.clear();
        // Watches may stay silent for minutes.
        upstream.read_timeout = None;
        upstream.write_timeout = None;
        let client = kube::Client::try_from(upstream).expect("a client for the proxy's upstream");
        let counter = Arc::new(Counter::default());
        let url = format!("https://{}", listener.local_addr().unwrap());
        let c = counter.clone();
        let acceptor = tokio_rustls::TlsAcceptor::from(tls.config.clone());
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let _ = stream.set_nodelay(true);
                let (client, counter, acceptor) = (client.clone(), c.clone(), acceptor.clone());
                tokio::spawn(async move {
                    let Ok(stream) = acceptor.accept(stream).await else {
                        return;
                    };
                    let svc = hyper::service::service_fn(move |req| {
                        forward(req, client.clone(), counter.clone())
                    });
                    let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(stream), svc)
                        .await;
                });
            }
        });
        Proxy { url, counter, task }
    }
}

async fn forward(
    req: Request<Incoming>,
    client: kube::Client,
    counter: Arc<Counter>,
) -> Result<Response<Body>, Infallible> {
    let started = std::time::Instant::now();
    counter.record(classify(req.method(), req.uri()));
    let (mut parts, body) = req.into_parts();
    let body = match body.collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => return Ok(error(StatusCode::BAD_REQUEST, e.to_string())),
    };
    for h in [
        "host",
        "connection",
        "keep-alive",
        "proxy-connection",
        "transfer-encoding",
        "te",
        "trailer",
        "upgrade",
    ] {
        parts.headers.remove(h);
    }
    // The upstream leg is kube's client (HTTP/1.1), whatever the agent spoke.
    parts.version = http::Version::HTTP_11;
    parts.uri = match parts.uri.path_and_query() {
        Some(pq) => pq.as_str().parse().unwrap(),
        None => "/".parse().unwrap(),
    };
    let (method, uri) = (parts.method.clone(), parts.uri.clone());
    let resp = match client
        .send(Request::from_parts(parts, Body::from(body)))
        .await
    {
        Ok(resp) => resp,
        Err(e) => error(StatusCode::BAD_GATEWAY, e.to_string()),
    };
    if std::env::var_os("BENCH_PROXY_LOG").is_some() {
        // Wall-clock start (µs since the epoch) and time to the response
        // headers, to lay one object's requests out on a timeline.
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .saturating_sub(started.elapsed());
        eprintln!(
            "proxy: {} {method} {uri} -> {} in {:.1} ms",
            now.as_micros(),
            resp.status(),
            started.elapsed().as_secs_f64() * 1000.0
        );
    }
    Ok(resp)
}

fn error(code: StatusCode, msg: String) -> Response<Body> {
    let mut r = Response::new(Body::from(msg.into_bytes()));
    *r.status_mut() = code;
    r
}

/// "verb resource[.group][/subresource]" of a Kubernetes API request, e.g.
/// `watch crontabs.example.com`, `patch crontabs.example.com`, `get secrets`,
/// `list apiexportendpointslices.apis.kcp.io`, `discovery`.
pub fn classify(method: &http::Method, uri: &http::Uri) -> String {
    let mut segs: Vec<&str> = uri.path().split('/').filter(|s| !s.is_empty()).collect();
    // kcp virtual workspace: /services/apiexport/<cluster>/<export>/…
    if segs.first() == Some(&"services") {
        segs.drain(..segs.len().min(4));
    }
    if segs.first() == Some(&"clusters") {
        segs.drain(..segs.len().min(2));
    }
    let (group, rest) = match segs.as_slice() {
        ["api", _v, rest @ ..] => ("", rest),
        ["apis", g, _v, rest @ ..] => (*g, rest),
        [] | ["api"] | ["apis"] | ["apis", _] => return "discovery".into(),
        [other, ..] => return format!("{} /{other}", method.as_str().to_lowercase()),
    };
    if rest.is_empty() {
        return "discovery".into();
    }
    let rest = match rest {
        ["namespaces", _ns, r @ ..] if !r.is_empty() => r,
        r => r,
    };
    let mut resource = rest[0].to_string();
    if !group.is_empty() {
        resource = format!("{resource}.{group}");
    }
    if let Some(sub) = rest.get(2) {
        resource = format!("{resource}/{sub}");
    }
    let named = rest.len() >= 2;
    let query = uri.query().unwrap_or("");
    let watch = query
        .split('&')
        .any(|kv| kv == "watch=true" || kv == "watch=1");
    let verb = match *method {
        http::Method::GET if watch => "watch",
        http::Method::GET if named => "get",
        http::Method::GET => "list",
        http::Method::POST => "create",
        http::Method::PUT => "update",
        http::Method::PATCH => "patch",
        http::Method::DELETE if named => "delete",
        http::Method::DELETE => "deletecollection",
        ref m => return format!("{} {resource}", m.as_str().to_lowercase()),
    };
    format!("{verb} {resource}")
}

#[cfg(test)]
mod tests {
    use super::classify;
    use http::Method;

    fn c(m: Method, u: &str) -> String {
        classify(&m, &u.parse().unwrap())
    }

    #[test]
    fn classifies_requests() {
        assert_eq!(
            c(
                Method::GET,
                "/services/apiexport/abc/example.com/clusters/*/apis/example.com/v1/crontabs?watch=true&rv=1"
            ),
            "watch crontabs.example.com"
        );
        assert_eq!(
            c(
                Method::PATCH,
                "/services/apiexport/abc/example.com/clusters/x/apis/example.com/v1/namespaces/default/crontabs/a"
            ),
            "patch crontabs.example.com"
        );
        assert_eq!(
            c(
                Method::PUT,
                "/apis/example.com/v1/namespaces/n/crontabs/a/status"
            ),
            "update crontabs.example.com/status"
        );
        assert_eq!(
            c(Method::GET, "/api/v1/namespaces/n/secrets"),
            "list secrets"
        );
        assert_eq!(c(Method::GET, "/api/v1/namespaces/n"), "get namespaces");
        assert_eq!(c(Method::GET, "/api/v1/namespaces"), "list namespaces");
        assert_eq!(c(Method::GET, "/clusters/root:a/apis"), "discovery");
        assert_eq!(c(Method::GET, "/version"), "get /version");
    }
}
