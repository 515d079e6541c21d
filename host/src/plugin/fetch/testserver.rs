//! A tiny HTTPS server on 127.0.0.1 for fetcher tests: a fresh CA signs a
//! certificate for 127.0.0.1, and the tests trust that CA, so the real
//! client code paths (TLS, redirects, streaming) run unchanged.

use std::sync::{Arc, Mutex};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose,
};
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn ok(body: Vec<u8>) -> Response {
        Response {
            status: 200,
            headers: vec![],
            body,
        }
    }

    pub fn status(status: u16) -> Response {
        Response {
            status,
            headers: vec![],
            body: vec![],
        }
    }

    pub fn redirect(to: &str) -> Response {
        Response {
            status: 302,
            headers: vec![("Location".into(), to.into())],
            body: vec![],
        }
    }

    pub fn with_body(mut self, body: &[u8]) -> Response {
        self.body = body.to_vec();
        self
    }

    pub fn header(mut self, name: &str, value: &str) -> Response {
        self.headers.push((name.into(), value.into()));
        self
    }
}

type Handler = dyn Fn(&str) -> Response + Send + Sync;

pub struct TestServer {
    addr: std::net::SocketAddr,
    ca_pem: String,
    requests: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl TestServer {
    /// Serve `handler(path)` for every request until dropped.
    pub async fn start(handler: impl Fn(&str) -> Response + Send + Sync + 'static) -> TestServer {
        super::ensure_crypto_provider();
        let ca_key = KeyPair::generate().unwrap();
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "syncweave test CA");
        ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca = CertifiedIssuer::self_signed(ca_params, ca_key).unwrap();

        let leaf_key = KeyPair::generate().unwrap();
        let leaf_params =
            CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()]).unwrap();
        let leaf = leaf_params.signed_by(&leaf_key, &ca).unwrap();

        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der()));
        let tls = rustls::ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(vec![leaf.der().clone()], key)
            .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));

        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let handler: Arc<Handler> = Arc::new(handler);
        let task = {
            let requests = requests.clone();
            tokio::spawn(async move {
                loop {
                    let Ok((tcp, _)) = listener.accept().await else {
                        return;
                    };
                    let (acceptor, handler, requests) =
                        (acceptor.clone(), handler.clone(), requests.clone());
                    tokio::spawn(async move {
                        // Handshake failures (untrusted-CA tests) just end the connection.
                        if let Ok(stream) = acceptor.accept(tcp).await {
                            let _ = serve(stream, &*handler, &requests).await;
                        }
                    });
                }
            })
        };
        TestServer {
            addr,
            ca_pem: ca.pem(),
            requests,
            task,
        }
    }

    /// `https://127.0.0.1:<port>`
    pub fn url(&self) -> String {
        format!("https://{}", self.addr)
    }

    /// `127.0.0.1:<port>`, as an OCI registry name.
    pub fn host(&self) -> String {
        self.addr.to_string()
    }

    pub fn ca_pem(&self) -> String {
        self.ca_pem.clone()
    }

    /// `"<METHOD> <path>"` of every request so far.
    pub fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }
}

/// HTTP/1.1, keep-alive, no request bodies (the fetchers only GET/HEAD).
async fn serve<S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin>(
    mut stream: S,
    handler: &Handler,
    requests: &Mutex<Vec<String>>,
) -> std::io::Result<()> {
    let mut buf = Vec::new();
    loop {
        let head_end = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            let mut chunk = [0u8; 4096];
            let n = stream.read(&mut chunk).await?;
            if n == 0 {
                return Ok(());
            }
            buf.extend_from_slice(&chunk[..n]);
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
        buf.drain(..head_end);
        let mut parts = head.split_whitespace();
        let method = parts.next().unwrap_or_default().to_string();
        let target = parts.next().unwrap_or_default().to_string();
        let path = target.split('?').next().unwrap_or_default().to_string();
        requests.lock().unwrap().push(format!("{method} {path}"));
        let resp = handler(&path);
        let mut out = format!(
            "HTTP/1.1 {} X\r\nContent-Length: {}\r\n",
            resp.status,
            resp.body.len()
        );
        for (k, v) in &resp.headers {
            out.push_str(&format!("{k}: {v}\r\n"));
        }
        out.push_str("\r\n");
        stream.write_all(out.as_bytes()).await?;
        if method != "HEAD" {
            stream.write_all(&resp.body).await?;
        }
        stream.flush().await?;
    }
}
