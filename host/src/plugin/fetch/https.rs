//! `https://` sources: one GET, streamed with a size cap, verified against
//! the required sha256, cached by digest.

use futures::StreamExt;
use reqwest::Url;
use reqwest::redirect::Policy;

use super::{FetchError, FetchErrorKind, FetchOptions, Fetched, Inner, PluginRef, error_chain};

const MAX_REDIRECTS: usize = 5;

pub(super) fn client(opts: &FetchOptions) -> Result<reqwest::Client, String> {
    // A redirect may move between hosts (CDNs do) but never off https:
    // the sha256 protects integrity, not the privacy of what is fetched.
    let policy = Policy::custom(|attempt| {
        if attempt.previous().len() >= MAX_REDIRECTS {
            attempt.error(format!("stopped after {MAX_REDIRECTS} redirects"))
        } else if attempt.url().scheme() != "https" {
            let to = attempt.url().to_string();
            attempt.error(format!("refused a redirect to the non-https URL {to}"))
        } else {
            attempt.follow()
        }
    });
    let mut b = reqwest::Client::builder()
        .redirect(policy)
        .https_only(true)
        .connect_timeout(opts.connect_timeout)
        .read_timeout(opts.connect_timeout.max(std::time::Duration::from_secs(30)))
        .user_agent(concat!("syncweave/", env!("CARGO_PKG_VERSION")));
    if !opts.extra_root_certs.is_empty() {
        // Each entry may be a bundle of several certificates.
        let certs = opts
            .extra_root_certs
            .iter()
            .map(|pem| reqwest::Certificate::from_pem_bundle(pem).map_err(|e| e.to_string()))
            .collect::<Result<Vec<_>, _>>()?
            .into_iter()
            .flatten()
            .collect::<Vec<_>>();
        b = b.tls_certs_merge(certs);
    }
    b.build()
        .map_err(|e| format!("building the https client: {}", error_chain(&e)))
}

pub(super) async fn fetch(inner: &Inner, r: &PluginRef, url: &Url) -> Result<Fetched, FetchError> {
    let max = inner.opts.max_bytes;
    // Parsing guarantees the pin; without it nothing here could be trusted.
    let want = r
        .sha256
        .as_deref()
        .map(|h| format!("sha256:{h}"))
        .ok_or_else(|| {
            FetchError::new(
                r,
                FetchErrorKind::InvalidSource,
                "https:// sources need sha256; set it to the 64-hex SHA-256 of the file",
            )
        })?;
    if let Some(bytes) = inner.cache.as_ref().and_then(|c| c.get(&want, max)) {
        return Ok(Fetched::new(bytes, true));
    }
    let net = |e: reqwest::Error| {
        let kind = if e.is_timeout() {
            FetchErrorKind::Timeout
        } else if e.is_redirect() {
            FetchErrorKind::InvalidSource
        } else {
            FetchErrorKind::Network
        };
        FetchError::new(
            r,
            kind,
            format!(
                "GET {url}: {}; check that the URL is right and reachable from the agent",
                error_chain(&e)
            ),
        )
    };
    let resp = inner.http.get(url.clone()).send().await.map_err(net)?;
    let status = resp.status();
    if !status.is_success() {
        let kind = match status.as_u16() {
            404 | 410 => FetchErrorKind::NotFound,
            401 | 403 => FetchErrorKind::Denied,
            _ => FetchErrorKind::Network,
        };
        let hint = match kind {
            FetchErrorKind::NotFound => "check the URL",
            FetchErrorKind::Denied => {
                "the server wants credentials, which a source URL cannot carry; publish the \
                 plugin without authentication, or use configmap:// or oci://"
            }
            _ => "the server failed; it will be retried",
        };
        return Err(FetchError::new(
            r,
            kind,
            format!("GET {} answered {status}; {hint}", resp.url()),
        ));
    }
    if let Some(len) = resp.content_length()
        && len > max
    {
        return Err(super::too_large(r, "the download", len, max));
    }
    let mut body = Vec::with_capacity(resp.content_length().unwrap_or(0).min(max) as usize);
    let mut stream = resp.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(net)?;
        if (body.len() + chunk.len()) as u64 > max {
            return Err(super::too_large(
                r,
                "the download",
                (body.len() + chunk.len()) as u64,
                max,
            ));
        }
        body.extend_from_slice(&chunk);
    }
    let fetched = Fetched::new(body, false);
    // Verified here, before caching: the cache must only ever hold bytes
    // someone pinned.
    if fetched.digest != want {
        return Err(FetchError::new(
            r,
            FetchErrorKind::DigestMismatch,
            format!(
                "{url} served bytes with {}, but sha256 pins {want}; if the file was replaced \
                 on purpose, update sha256, otherwise the server is not serving what you tested",
                fetched.digest
            ),
        ));
    }
    if let Some(c) = &inner.cache {
        c.put(&fetched.bytes);
    }
    Ok(fetched)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::testserver::{Response, TestServer};
    use super::super::{FetchContext, FetchOptions, sha256_digest};
    use super::*;
    use crate::testing::tempdir;

    fn ctx(server: &TestServer, dir: &std::path::Path, max_bytes: u64) -> FetchContext {
        FetchContext::new(FetchOptions {
            service: None,
            builtin_dirs: vec![],
            cache_dir: Some(dir.join("cache")),
            cache_bound: None,
            max_bytes,
            timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(5),
            extra_root_certs: vec![server.ca_pem().into_bytes()],
            ca_file: None,
        })
        .unwrap()
    }

    fn pin(bytes: &[u8]) -> String {
        sha256_digest(bytes)
            .strip_prefix("sha256:")
            .unwrap()
            .to_string()
    }

    #[tokio::test]
    async fn fetches_verifies_and_caches_over_real_tls() {
        let body = b"\0asm\x0d\0\x01\0 a component".to_vec();
        let server = TestServer::start(|path| match path {
            "/p.wasm" => Response::ok(b"\0asm\x0d\0\x01\0 a component".to_vec()),
            _ => Response::status(404),
        })
        .await;
        let dir = tempdir("https");
        let ctx = ctx(&server, &dir, 1 << 20);
        let url = format!("{}/p.wasm", server.url());

        let r = PluginRef::parse(&url, Some(&pin(&body)), "spec").unwrap();
        let f = ctx.fetch(&r).await.unwrap();
        assert_eq!(&*f.bytes, &body[..]);
        assert!(!f.cached);
        assert_eq!(server.requests(), vec!["GET /p.wasm"]);

        // Second fetch: from the cache, no request.
        let f = ctx.fetch(&r).await.unwrap();
        assert!(f.cached);
        assert_eq!(server.requests().len(), 1);

        // A corrupted cache entry is detected and refetched.
        let path = ctx.cache().unwrap().path(&f.digest).unwrap();
        std::fs::write(&path, b"garbage").unwrap();
        let f = ctx.fetch(&r).await.unwrap();
        assert!(!f.cached);
        assert_eq!(&*f.bytes, &body[..]);
        assert_eq!(server.requests().len(), 2);
    }

    #[tokio::test]
    async fn wrong_digest_is_refused_and_not_cached() {
        let server = TestServer::start(|_| Response::ok(b"evil bytes".to_vec())).await;
        let dir = tempdir("https-mismatch");
        let ctx = ctx(&server, &dir, 1 << 20);
        let want = pin(b"good bytes");
        let r = PluginRef::parse(&format!("{}/p.wasm", server.url()), Some(&want), "spec").unwrap();
        let e = ctx.fetch(&r).await.unwrap_err();
        assert_eq!(e.kind, FetchErrorKind::DigestMismatch);
        assert!(
            e.message.contains(&format!("sha256 pins sha256:{want}")),
            "{e}"
        );
        assert!(
            ctx.cache()
                .unwrap()
                .get(&sha256_digest(b"evil bytes"), 1 << 20)
                .is_none()
        );
    }

    #[tokio::test]
    async fn size_limit_status_codes_and_redirects() {
        let server = TestServer::start(|path| match path {
            "/big.wasm" => Response::ok(vec![7u8; 4096]),
            "/gone.wasm" => Response::status(404),
            "/private.wasm" => Response::status(403),
            "/to-http" => Response::redirect("http://127.0.0.1:1/p.wasm"),
            _ => Response::status(500),
        })
        .await;
        let dir = tempdir("https-errors");
        let ctx = ctx(&server, &dir, 1024);
        let get = |path: &str| {
            let r = PluginRef::parse(
                &format!("{}{path}", server.url()),
                Some(&"a".repeat(64)),
                "spec",
            )
            .unwrap();
            let ctx = ctx.clone();
            async move { ctx.fetch(&r).await.unwrap_err() }
        };
        let e = get("/big.wasm").await;
        assert_eq!(e.kind, FetchErrorKind::TooLarge);
        assert!(
            e.message
                .contains("4096 bytes, over the plugin size limit of 1024"),
            "{e}"
        );

        let e = get("/gone.wasm").await;
        assert_eq!(e.kind, FetchErrorKind::NotFound);
        assert!(e.message.contains("404"), "{e}");

        let e = get("/private.wasm").await;
        assert_eq!(e.kind, FetchErrorKind::Denied);

        let e = get("/to-http").await;
        assert!(e.message.contains("non-https"), "{e}");

        let e = get("/boom").await;
        assert_eq!(e.kind, FetchErrorKind::Network);
        assert!(e.kind.is_transient());
    }

    #[tokio::test]
    async fn untrusted_certificate_is_refused() {
        let server = TestServer::start(|_| Response::ok(b"x".to_vec())).await;
        let dir = tempdir("https-untrusted");
        // No extra roots: the test CA is unknown.
        let ctx = FetchContext::new(FetchOptions {
            service: None,
            builtin_dirs: vec![],
            cache_dir: Some(dir.join("cache")),
            cache_bound: None,
            max_bytes: 1024,
            timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(5),
            extra_root_certs: vec![],
            ca_file: None,
        })
        .unwrap();
        let r = PluginRef::parse(
            &format!("{}/p.wasm", server.url()),
            Some(&"a".repeat(64)),
            "spec",
        )
        .unwrap();
        let e = ctx.fetch(&r).await.unwrap_err();
        assert_eq!(e.kind, FetchErrorKind::Network);
        assert!(e.message.to_lowercase().contains("certificate"), "{e}");
        assert!(server.requests().is_empty());
    }
}
