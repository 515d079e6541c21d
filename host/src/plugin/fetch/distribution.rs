//! A small client for the OCI Distribution API (what registries serve under
//! `/v2/`): capped manifest and blob downloads, blob and manifest uploads,
//! and the registry auth handshake (Basic, or Bearer tokens from the
//! registry's token server).
//!
//! Every fetch or push opens its own [`Session`]: credentials and tokens
//! are never shared between WasmPlugins (one plugin's pull secret must not
//! serve another's pull), and a rotated Secret takes effect on the next
//! check.

use bytes::Bytes;
use futures::StreamExt;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderValue, WWW_AUTHENTICATE};
use reqwest::{Method, RequestBuilder, Response, StatusCode, Url};

use super::FetchErrorKind;
use super::credentials::{Credentials, Secret};
use super::error_chain;

/// OCI image manifest, what plugin artifacts and cosign signatures use.
pub const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
pub const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";
/// Docker's schema 2 manifest list (an index).
pub const DOCKER_LIST: &str = "application/vnd.docker.distribution.manifest.list.v2+json";

/// Every manifest kind asked for; the caller decides what it accepts, so an
/// image index gets a clear message instead of a 404.
pub const MANIFEST_ACCEPT: &str = "application/vnd.oci.image.manifest.v1+json, \
     application/vnd.docker.distribution.manifest.v2+json, \
     application/vnd.oci.image.index.v1+json, \
     application/vnd.docker.distribution.manifest.list.v2+json";

/// A failed registry operation: the kind (for the condition reason and
/// retries) and a message saying what happened and what to do.
#[derive(Debug, Clone)]
pub struct RegistryError {
    pub kind: FetchErrorKind,
    pub message: String,
}

impl RegistryError {
    fn new(kind: FetchErrorKind, message: impl Into<String>) -> Self {
        RegistryError {
            kind,
            message: message.into(),
        }
    }
}

type Result<T> = std::result::Result<T, RegistryError>;

/// Pull only, or pull and push: the scope asked of a token server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    Pull,
    Push,
}

/// One conversation with one repository of one registry.
pub struct Session<'a> {
    http: &'a reqwest::Client,
    /// `https://<host>` the API is served at.
    base: String,
    /// The registry as the user wrote it, for messages.
    registry: String,
    repository: String,
    creds: Option<&'a Credentials>,
    /// What to say when the registry wants credentials and none were given.
    anonymous_hint: &'a str,
    access: Operation,
    /// The Authorization header that worked, once the handshake is done.
    authorization: Option<HeaderValue>,
    /// The scopes of the challenges answered so far: a 401 asking again for
    /// one of them is a refusal.
    answered: Vec<String>,
}

/// `scheme param="value", param=value` of a WWW-Authenticate header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Challenge {
    pub scheme: String,
    pub params: Vec<(String, String)>,
}

impl Challenge {
    pub fn parse(header: &str) -> Option<Challenge> {
        let header = header.trim();
        let (scheme, mut rest) = match header.split_once(char::is_whitespace) {
            Some((s, r)) => (s, r.trim_start()),
            None => (header, ""),
        };
        if scheme.is_empty() {
            return None;
        }
        let mut params = Vec::new();
        while !rest.is_empty() {
            let eq = rest.find('=')?;
            let key = rest[..eq].trim().trim_start_matches(',').trim().to_string();
            rest = rest[eq + 1..].trim_start();
            let value;
            if let Some(quoted) = rest.strip_prefix('"') {
                let mut v = String::new();
                let mut chars = quoted.char_indices();
                let mut end = None;
                while let Some((i, c)) = chars.next() {
                    match c {
                        '\\' => {
                            if let Some((_, n)) = chars.next() {
                                v.push(n);
                            }
                        }
                        '"' => {
                            end = Some(i);
                            break;
                        }
                        c => v.push(c),
                    }
                }
                let end = end?;
                value = v;
                rest = quoted[end + 1..].trim_start();
            } else {
                let end = rest.find(',').unwrap_or(rest.len());
                value = rest[..end].trim().to_string();
                rest = &rest[end..];
            }
            rest = rest.trim_start_matches(|c: char| c == ',' || c.is_whitespace());
            params.push((key.to_ascii_lowercase(), value));
        }
        Some(Challenge {
            scheme: scheme.to_ascii_lowercase(),
            params,
        })
    }

    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// The `errors[].code: message` of a registry's error body, if it has one.
fn registry_errors(body: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Envelope {
        errors: Vec<Item>,
    }
    #[derive(serde::Deserialize)]
    struct Item {
        #[serde(default)]
        code: String,
        #[serde(default)]
        message: String,
    }
    let e: Envelope = serde_json::from_slice(body).ok()?;
    (!e.errors.is_empty()).then(|| {
        e.errors
            .iter()
            .map(|i| format!("{} ({})", i.code, i.message))
            .collect::<Vec<_>>()
            .join(", ")
    })
}

/// Read at most `max` bytes of a response body, failing beyond that
/// without buffering the rest.
pub async fn read_capped(resp: Response, max: u64, what: &str) -> Result<Vec<u8>> {
    if let Some(len) = resp.content_length()
        && len > max
    {
        return Err(RegistryError::new(
            FetchErrorKind::TooLarge,
            format!("{what} is {len} bytes, over the limit of {max} bytes"),
        ));
    }
    let mut body = Vec::new();
    let mut stream = resp.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| transport_error(&e, what))?;
        if (body.len() + chunk.len()) as u64 > max {
            return Err(RegistryError::new(
                FetchErrorKind::TooLarge,
                format!("{what} is more than {max} bytes, the limit"),
            ));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

fn transport_error(e: &reqwest::Error, what: &str) -> RegistryError {
    let chain = error_chain(e);
    if e.is_timeout() {
        return RegistryError::new(
            FetchErrorKind::Timeout,
            format!("{what}: the registry did not answer in time ({chain})"),
        );
    }
    let lower = chain.to_ascii_lowercase();
    let hint = if lower.contains("certificate") || lower.contains("unknownissuer") {
        "the registry's TLS certificate is not trusted: add its CA (the agent reads a PEM \
         bundle from $SYNCWEAVE_PLUGIN_CA_FILE; the CLI takes --ca-file)"
    } else if e.is_connect() {
        "the registry is unreachable: check the host and port, and that it is reachable from \
         here (registries are always spoken to over https)"
    } else {
        "check that the registry is reachable and serves the OCI distribution API"
    };
    RegistryError::new(FetchErrorKind::Network, format!("{what}: {chain}; {hint}"))
}

impl<'a> Session<'a> {
    /// `registry` as written in the reference, `api_host` the host its API
    /// is served at (Docker Hub's differs), `repository` without registry.
    pub fn new(
        http: &'a reqwest::Client,
        registry: &str,
        api_host: &str,
        repository: &str,
        creds: Option<&'a Credentials>,
        anonymous_hint: &'a str,
        access: Operation,
    ) -> Session<'a> {
        let authorization = match creds.map(|c| &c.secret) {
            // A registry token is presented as it is; there is no handshake.
            Some(Secret::RegistryToken(t)) => bearer(t),
            _ => None,
        };
        Session {
            http,
            base: format!("https://{api_host}"),
            registry: registry.to_string(),
            repository: repository.to_string(),
            creds,
            anonymous_hint,
            access,
            authorization,
            answered: Vec::new(),
        }
    }

    pub fn registry(&self) -> &str {
        &self.registry
    }

    pub fn repository(&self) -> &str {
        &self.repository
    }

    fn url(&self, path: &str) -> String {
        format!("{}/v2/{}/{path}", self.base, self.repository)
    }

    /// Send the request `build` makes (again after a challenge, so it must
    /// be repeatable), with the session's authorization. A 401 is answered
    /// once; a second one, or a 403, is a refusal.
    async fn send(
        &mut self,
        what: &str,
        build: impl Fn(&reqwest::Client) -> RequestBuilder,
    ) -> Result<Response> {
        loop {
            let mut req = build(self.http);
            if let Some(a) = &self.authorization {
                req = req.header(AUTHORIZATION, a.clone());
            }
            let resp = req.send().await.map_err(|e| transport_error(&e, what))?;
            let challenge = (resp.status() == StatusCode::UNAUTHORIZED).then(|| {
                resp.headers()
                    .get(WWW_AUTHENTICATE)
                    .and_then(|h| h.to_str().ok())
                    .and_then(Challenge::parse)
            });
            let scope = challenge.as_ref().map(|c| {
                c.as_ref()
                    .and_then(|c| c.param("scope"))
                    .unwrap_or("")
                    .to_string()
            });
            match resp.status() {
                // A token for another scope (a push after a pull) is asked
                // for once more; the same challenge twice is a refusal.
                StatusCode::UNAUTHORIZED
                    if scope.as_ref().is_some_and(|s| !self.answered.contains(s))
                        && self.answered.len() < 3 =>
                {
                    self.answered.push(scope.unwrap_or_default());
                    let challenge = challenge.flatten();
                    self.authorization = Some(self.answer(challenge, what).await?);
                }
                StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
                    let status = resp.status();
                    let body = resp.bytes().await.unwrap_or_default();
                    return Err(self.refused(what, status, &body));
                }
                _ => return Ok(resp),
            }
        }
    }

    fn refused(&self, what: &str, status: StatusCode, body: &[u8]) -> RegistryError {
        let detail = registry_errors(body).unwrap_or_else(|| status.to_string());
        let op = match self.access {
            Operation::Pull => "pull from",
            Operation::Push => "push to",
        };
        let message = match self.creds {
            Some(c) => format!(
                "{what}: {} refused {} to {op} {} ({detail}); check that they are current and \
                 allowed to {op} this repository",
                self.registry,
                c.describe(),
                self.repository
            ),
            None => format!(
                "{what}: {} refused an anonymous request to {op} {} ({detail}); {}",
                self.registry, self.repository, self.anonymous_hint
            ),
        };
        RegistryError::new(FetchErrorKind::Denied, message)
    }

    /// The Authorization header that answers `challenge`.
    async fn answer(&self, challenge: Option<Challenge>, what: &str) -> Result<HeaderValue> {
        let no_creds = || {
            RegistryError::new(
                FetchErrorKind::Denied,
                format!(
                    "{what}: {} requires credentials to access {}; {}",
                    self.registry, self.repository, self.anonymous_hint
                ),
            )
        };
        let Some(challenge) = challenge else {
            return Err(RegistryError::new(
                FetchErrorKind::Denied,
                format!(
                    "{what}: {} answered 401 without saying how to authenticate (no \
                     WWW-Authenticate header)",
                    self.registry
                ),
            ));
        };
        if let Some(c) = self.creds
            && matches!(c.secret, Secret::RegistryToken(_))
        {
            // Presented as it is: a 401 means it is not (or no longer) valid.
            return Err(RegistryError::new(
                FetchErrorKind::Denied,
                format!(
                    "{what}: {} refused {} to access {}; registry tokens expire: get a new one, \
                     or give auth or username/password instead",
                    self.registry,
                    c.describe(),
                    self.repository
                ),
            ));
        }
        match challenge.scheme.as_str() {
            "basic" => match self.creds.map(|c| &c.secret) {
                Some(Secret::Basic { username, password }) => {
                    use base64::Engine as _;
                    let raw = base64::engine::general_purpose::STANDARD
                        .encode(format!("{username}:{password}"));
                    Ok(sensitive(&format!("Basic {raw}")))
                }
                Some(_) => Err(RegistryError::new(
                    FetchErrorKind::Denied,
                    format!(
                        "{what}: {} asks for a username and password (Basic auth), but {} hold \
                         only a token; give auth or username/password for this registry",
                        self.registry,
                        self.creds.map(|c| c.describe()).unwrap_or_default()
                    ),
                )),
                None => Err(no_creds()),
            },
            "bearer" => self.token(&challenge, what).await,
            other => Err(RegistryError::new(
                FetchErrorKind::Denied,
                format!(
                    "{what}: {} asks for {other:?} authentication; only Basic and Bearer \
                     (token server) registries are supported",
                    self.registry
                ),
            )),
        }
    }

    /// A token from the registry's token server (docker's token auth spec):
    /// GET with Basic credentials (or none), or POST an identity token as an
    /// OAuth2 refresh token.
    async fn token(&self, challenge: &Challenge, what: &str) -> Result<HeaderValue> {
        let realm = challenge.param("realm").ok_or_else(|| {
            RegistryError::new(
                FetchErrorKind::Network,
                format!(
                    "{what}: {} asks for a bearer token but names no realm",
                    self.registry
                ),
            )
        })?;
        let realm_url = Url::parse(realm).map_err(|e| {
            RegistryError::new(
                FetchErrorKind::Network,
                format!(
                    "{what}: {} names token realm {realm:?}, which is not a URL: {e}",
                    self.registry
                ),
            )
        })?;
        if realm_url.scheme() != "https" {
            return Err(RegistryError::new(
                FetchErrorKind::Denied,
                format!(
                    "{what}: {} sends token requests to {realm}, which is not https; refusing \
                     to send credentials there",
                    self.registry
                ),
            ));
        }
        let service = challenge.param("service").unwrap_or_default().to_string();
        // Ours (a push session asks for push at once, not after a pull
        // token is refused), and the registry's own when it differs.
        let mut scopes = vec![match self.access {
            Operation::Pull => format!("repository:{}:pull", self.repository),
            Operation::Push => format!("repository:{}:pull,push", self.repository),
        }];
        if let Some(s) = challenge.param("scope").filter(|s| !s.is_empty())
            && !scopes.iter().any(|o| o == s)
        {
            scopes.push(s.to_string());
        }
        let scope = scopes.join(" ");
        let what_token = format!("{what}: getting a token from {realm}");
        let req = match self.creds.map(|c| &c.secret) {
            Some(Secret::IdentityToken(t)) => {
                let form = [
                    ("grant_type", "refresh_token"),
                    ("refresh_token", t.as_str()),
                    ("service", service.as_str()),
                    ("scope", scope.as_str()),
                    ("client_id", "syncweave"),
                    ("access_type", "online"),
                ];
                self.http.request(Method::POST, realm_url).form(&form)
            }
            creds => {
                let mut q: Vec<(&str, &str)> =
                    scopes.iter().map(|s| ("scope", s.as_str())).collect();
                if !service.is_empty() {
                    q.push(("service", service.as_str()));
                }
                let req = self.http.get(realm_url).query(&q);
                match creds {
                    Some(Secret::Basic { username, password }) => {
                        req.basic_auth(username, Some(password))
                    }
                    _ => req,
                }
            }
        };
        let resp = req
            .send()
            .await
            .map_err(|e| transport_error(&e, &what_token))?;
        let status = resp.status();
        let body = read_capped(resp, 1 << 20, "the token response").await?;
        if !status.is_success() {
            let detail = registry_errors(&body).unwrap_or_else(|| status.to_string());
            let message = match self.creds {
                Some(c) => format!(
                    "{what_token}: the token server refused {} ({detail}); check that they \
                     are current",
                    c.describe()
                ),
                None => format!(
                    "{what_token}: the token server refused an anonymous token ({detail}); {}",
                    self.anonymous_hint
                ),
            };
            return Err(RegistryError::new(FetchErrorKind::Denied, message));
        }
        #[derive(serde::Deserialize)]
        struct TokenResponse {
            #[serde(default)]
            token: Option<String>,
            #[serde(default)]
            access_token: Option<String>,
        }
        let t: TokenResponse = serde_json::from_slice(&body).map_err(|e| {
            RegistryError::new(
                FetchErrorKind::Network,
                format!("{what_token}: the answer is not a token response ({e})"),
            )
        })?;
        let token = t
            .token
            .or(t.access_token)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| {
                RegistryError::new(
                    FetchErrorKind::Network,
                    format!("{what_token}: the answer holds no token"),
                )
            })?;
        bearer(&token).ok_or_else(|| {
            RegistryError::new(
                FetchErrorKind::Network,
                format!("{what_token}: the token is not a valid header value"),
            )
        })
    }

    /// A manifest by tag or digest, at most `max` bytes (checked before
    /// anything is parsed); `None` when the registry has none. Also returns
    /// its Content-Type.
    pub async fn manifest(
        &mut self,
        reference: &str,
        max: u64,
    ) -> Result<Option<(Vec<u8>, Option<String>)>> {
        let url = self.url(&format!("manifests/{reference}"));
        let what = format!("pulling manifest {}:{reference}", self.repository);
        let resp = self
            .send(&what, |c| {
                c.get(&url).header(reqwest::header::ACCEPT, MANIFEST_ACCEPT)
            })
            .await?;
        if resp.status() == StatusCode::NOT_FOUND {
            return Ok(None);
        }
        let resp = self.check(resp, &what).await?;
        let content_type = resp
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(|s| s.split(';').next().unwrap_or(s).trim().to_string());
        let body = read_capped(resp, max, &format!("manifest {reference}")).await?;
        Ok(Some((body, content_type)))
    }

    /// Whether the registry lets this session read manifest `reference`
    /// (a HEAD: nothing is downloaded). A refusal is an error.
    pub async fn manifest_exists(&mut self, reference: &str) -> Result<bool> {
        let url = self.url(&format!("manifests/{reference}"));
        let what = format!("checking manifest {}:{reference}", self.repository);
        let resp = self
            .send(&what, |c| {
                c.head(&url)
                    .header(reqwest::header::ACCEPT, MANIFEST_ACCEPT)
            })
            .await?;
        if resp.status() == StatusCode::NOT_FOUND {
            return Ok(false);
        }
        self.check(resp, &what).await.map(|_| true)
    }

    /// A blob by digest, as a response to stream.
    pub async fn blob(&mut self, digest: &str) -> Result<Option<Response>> {
        let url = self.url(&format!("blobs/{digest}"));
        let what = format!("pulling blob {digest}");
        let resp = self.send(&what, |c| c.get(&url)).await?;
        if resp.status() == StatusCode::NOT_FOUND {
            return Ok(None);
        }
        Ok(Some(self.check(resp, &what).await?))
    }

    /// Whether the repository already has this blob.
    pub async fn blob_exists(&mut self, digest: &str) -> Result<bool> {
        let url = self.url(&format!("blobs/{digest}"));
        let what = format!("checking for blob {digest}");
        let resp = self.send(&what, |c| c.head(&url)).await?;
        Ok(resp.status().is_success())
    }

    /// Upload `bytes` as one blob (a monolithic upload: POST, then PUT with
    /// the digest), unless the repository has it already. Returns whether it
    /// was uploaded.
    pub async fn push_blob(&mut self, bytes: Bytes, digest: &str) -> Result<bool> {
        if self.blob_exists(digest).await? {
            return Ok(false);
        }
        let what = format!("uploading blob {digest}");
        let start = self.url("blobs/uploads/");
        let resp = self
            .send(&what, |c| c.post(&start).header("Content-Length", "0"))
            .await?;
        let resp = self.check(resp, &what).await?;
        let location = resp
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| {
                RegistryError::new(
                    FetchErrorKind::Network,
                    format!(
                        "{what}: {} started an upload without a Location",
                        self.registry
                    ),
                )
            })?;
        let mut put = Url::parse(&self.base)
            .and_then(|b| b.join(location))
            .map_err(|e| {
                RegistryError::new(
                    FetchErrorKind::Network,
                    format!("{what}: upload location {location:?} is not a URL: {e}"),
                )
            })?;
        put.query_pairs_mut().append_pair("digest", digest);
        let resp = self
            .send(&what, |c| {
                c.put(put.clone())
                    .header(CONTENT_TYPE, "application/octet-stream")
                    .body(bytes.clone())
            })
            .await?;
        self.check(resp, &what).await?;
        Ok(true)
    }

    /// Store `manifest` under `reference` (a tag); returns the digest the
    /// registry computed, checked against ours.
    pub async fn put_manifest(
        &mut self,
        reference: &str,
        media_type: &str,
        manifest: Bytes,
    ) -> Result<String> {
        let ours = super::sha256_digest(&manifest);
        let url = self.url(&format!("manifests/{reference}"));
        let what = format!("pushing manifest {}:{reference}", self.repository);
        let resp = self
            .send(&what, |c| {
                c.put(&url)
                    .header(CONTENT_TYPE, media_type)
                    .body(manifest.clone())
            })
            .await?;
        let resp = self.check(resp, &what).await?;
        if let Some(theirs) = resp
            .headers()
            .get("Docker-Content-Digest")
            .and_then(|v| v.to_str().ok())
            && theirs != ours
        {
            return Err(RegistryError::new(
                FetchErrorKind::DigestMismatch,
                format!(
                    "{what}: {} stored the manifest as {theirs}, but its bytes are {ours}; the \
                     registry rewrote it, so the digest to pin is unknown",
                    self.registry
                ),
            ));
        }
        Ok(ours)
    }

    /// `resp` if it succeeded, else an error with the registry's reason.
    async fn check(&self, resp: Response, what: &str) -> Result<Response> {
        let status = resp.status();
        if status.is_success() {
            return Ok(resp);
        }
        let body = read_capped(resp, 64 << 10, "the error response")
            .await
            .unwrap_or_default();
        let detail = registry_errors(&body).unwrap_or_else(|| {
            String::from_utf8_lossy(&body)
                .trim()
                .chars()
                .take(300)
                .collect()
        });
        let kind = match status.as_u16() {
            404 => FetchErrorKind::NotFound,
            401 | 403 => FetchErrorKind::Denied,
            413 => FetchErrorKind::TooLarge,
            _ => FetchErrorKind::Network,
        };
        Err(RegistryError::new(
            kind,
            format!("{what}: {} answered {status}: {detail}", self.registry),
        ))
    }
}

fn bearer(token: &str) -> Option<HeaderValue> {
    HeaderValue::from_str(&format!("Bearer {token}"))
        .ok()
        .map(|mut v| {
            v.set_sensitive(true);
            v
        })
}

fn sensitive(value: &str) -> HeaderValue {
    let mut v = HeaderValue::from_str(value).unwrap_or_else(|_| HeaderValue::from_static(""));
    v.set_sensitive(true);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_parse() {
        let c = Challenge::parse(
            r#"Bearer realm="https://auth.example.com/token",service="registry.example.com",scope="repository:org/p:pull,push""#,
        )
        .unwrap();
        assert_eq!(c.scheme, "bearer");
        assert_eq!(c.param("realm"), Some("https://auth.example.com/token"));
        assert_eq!(c.param("service"), Some("registry.example.com"));
        assert_eq!(c.param("scope"), Some("repository:org/p:pull,push"));

        let c = Challenge::parse(r#"Basic realm="syncweave \"test\"""#).unwrap();
        assert_eq!(c.scheme, "basic");
        assert_eq!(c.param("realm"), Some(r#"syncweave "test""#));

        let c = Challenge::parse("Bearer realm=https://a/t, service=s").unwrap();
        assert_eq!(c.param("realm"), Some("https://a/t"));
        assert_eq!(c.param("service"), Some("s"));
        assert_eq!(Challenge::parse("").map(|c| c.scheme), None);
        assert_eq!(Challenge::parse(r#"Bearer realm="unterminated"#), None);
    }

    #[test]
    fn registry_error_bodies() {
        assert_eq!(
            registry_errors(br#"{"errors":[{"code":"DENIED","message":"no"}]}"#).as_deref(),
            Some("DENIED (no)")
        );
        assert_eq!(registry_errors(b"not json"), None);
    }
}
