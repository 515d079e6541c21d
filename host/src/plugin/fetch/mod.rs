//! Where plugins come from: parsing plugin references ([`reference`]) and
//! fetching their bytes, verified and cached.
//!
//! | source | example | pinned by |
//! |---|---|---|
//! | built-in | `naming` | — (ships with the agent) |
//! | file | `file:///opt/plugins/x.wasm`, `/opt/plugins/x.wasm` | optional `sha256` |
//! | https | `https://example.com/x.wasm` | `sha256` (required) |
//! | ConfigMap | `configmap://plugins/x/x.wasm` (binaryData key, service cluster) | optional `sha256` |
//! | OCI | `oci://ghcr.io/org/x@sha256:…` (Wasm artifact) | manifest digest, then layer digest |
//!
//! Remote bytes (https, OCI) are kept in a content-addressed [`cache`], so
//! a pinned plugin is downloaded once per machine and agent restarts work
//! offline. OCI pulls may carry registry [`credentials`] and require a
//! [`signature`] ([`Access`]; a WasmPlugin's `imagePullSecret` and
//! `signature`, resolved by [`FetchContext::access_for`]).

pub mod cache;
pub mod credentials;
mod distribution;
mod https;
mod oci;
pub mod reference;
pub mod signature;
#[cfg(test)]
pub(crate) mod testserver;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Secret as KubeSecret};
use kube::Api;
use syncweave_runtime::{Limits, Plugin, PluginFailure, Runtime};

pub use cache::{BlobCache, sha256_digest};
pub use credentials::{Credentials, DockerConfig};
pub use oci::{KUBEWARDEN_CONFIG_MEDIA_TYPE, KUBEWARDEN_LAYER_MEDIA_TYPE, PushRequest, Pushed};
pub use reference::{Location, PluginRef, RefError};
pub use signature::PublicKeys;

use crate::apis::WasmPluginSpec;

/// Where the agent reads extra CA certificates (PEM) trusted for https and
/// OCI sources, e.g. a private registry's CA.
pub const CA_FILE_ENV: &str = "SYNCWEAVE_PLUGIN_CA_FILE";

/// Largest plugin accepted unless configured otherwise: larger than any
/// component we know of (Python guests are ~18 MB), small enough that a
/// wrong URL cannot fill memory.
pub const DEFAULT_MAX_BYTES: u64 = 50 << 20;
/// Budget for one whole fetch, from connecting to the last byte.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Bytes of one plugin.
#[derive(Clone, PartialEq, Eq)]
pub struct Fetched {
    pub bytes: Arc<[u8]>,
    /// `sha256:<hex>` of `bytes`.
    pub digest: String,
    /// Served from the on-disk cache without touching the network.
    pub cached: bool,
    /// What verified its signature, when one was required.
    pub signature: Option<String>,
    /// The reference these bytes were fetched for, as written; recorded on
    /// the loaded plugin so a failed call can be fetched again to replay it.
    pub source: String,
}

impl Fetched {
    /// Compile (or load from the compiled cache) these bytes as plugin
    /// `name`, on a blocking thread. The digest was verified while fetching,
    /// so the component is not hashed again.
    pub async fn load(
        &self,
        runtime: &Runtime,
        name: &str,
        limits: Option<Limits>,
    ) -> Result<Arc<Plugin>, PluginFailure> {
        let (runtime, name, bytes, digest) = (
            runtime.clone(),
            name.to_string(),
            self.bytes.clone(),
            self.digest.clone(),
        );
        let plugin = tokio::task::spawn_blocking(move || {
            runtime.load_with_digest(&name, &digest, &bytes, limits)
        })
        .await
        .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))?;
        if !self.source.is_empty() {
            plugin.set_source(&self.source);
        }
        Ok(plugin)
    }
}

impl std::fmt::Debug for Fetched {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fetched")
            .field("len", &self.bytes.len())
            .field("digest", &self.digest)
            .field("cached", &self.cached)
            .field("signature", &self.signature)
            .finish()
    }
}

impl Fetched {
    fn new(bytes: Vec<u8>, cached: bool) -> Fetched {
        Fetched {
            digest: sha256_digest(&bytes),
            bytes: bytes.into(),
            cached,
            signature: None,
            source: String::new(),
        }
    }
}

/// Why a fetch failed, coarse enough to pick a condition reason and a
/// retry strategy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FetchErrorKind {
    /// The reference is malformed or cannot be used in this setup.
    InvalidSource,
    /// Nothing at that location.
    NotFound,
    /// The server or cluster refused access.
    Denied,
    /// The bytes are not the ones the reference pins.
    DigestMismatch,
    /// Over the size limit.
    TooLarge,
    /// An OCI artifact that is not a Wasm component artifact.
    NotWasmArtifact,
    /// Connection, TLS, server-side or protocol failure.
    Network,
    /// The fetch ran out of time.
    Timeout,
    /// Local I/O failed.
    Io,
    /// The registry credentials named (a WasmPlugin's imagePullSecret) are
    /// missing or unusable.
    PullSecret,
    /// The public keys named (spec.signature) are missing or unusable.
    PublicKey,
    /// A signature is required and the artifact has none.
    SignatureMissing,
    /// A signature is required and none of the artifact's verifies.
    SignatureInvalid,
}

impl FetchErrorKind {
    /// A failure of trust (a required signature missing or invalid, keys
    /// that cannot be read), as opposed to one of getting the bytes.
    pub fn is_trust(self) -> bool {
        matches!(
            self,
            FetchErrorKind::PublicKey
                | FetchErrorKind::SignatureMissing
                | FetchErrorKind::SignatureInvalid
        )
    }

    /// The condition/Event reason for this failure.
    pub fn reason(self) -> &'static str {
        match self {
            FetchErrorKind::InvalidSource => "InvalidSource",
            FetchErrorKind::DigestMismatch => "DigestMismatch",
            FetchErrorKind::TooLarge => "TooLarge",
            FetchErrorKind::NotWasmArtifact => "NotWasmArtifact",
            FetchErrorKind::PullSecret => "PullSecretInvalid",
            FetchErrorKind::PublicKey => "PublicKeyInvalid",
            FetchErrorKind::SignatureMissing => "SignatureMissing",
            FetchErrorKind::SignatureInvalid => "SignatureInvalid",
            _ => "FetchFailed",
        }
    }

    /// Whether trying again later may succeed without anyone changing the
    /// reference: the network, a server, a ConfigMap or Secret yet to be
    /// created or fixed, a signature yet to be pushed.
    pub fn is_transient(self) -> bool {
        matches!(
            self,
            FetchErrorKind::Network
                | FetchErrorKind::Timeout
                | FetchErrorKind::NotFound
                | FetchErrorKind::Denied
                | FetchErrorKind::Io
                | FetchErrorKind::PullSecret
                | FetchErrorKind::PublicKey
                | FetchErrorKind::SignatureMissing
                | FetchErrorKind::SignatureInvalid
        )
    }
}

/// A failed fetch: which source, what kind of failure, and a message that
/// says what was wrong and what to do.
#[derive(Debug, Clone, thiserror::Error)]
#[error("fetching {source_ref:?}: {message}")]
pub struct FetchError {
    pub source_ref: String,
    pub kind: FetchErrorKind,
    pub message: String,
}

impl FetchError {
    pub(crate) fn new(r: &PluginRef, kind: FetchErrorKind, message: impl Into<String>) -> Self {
        FetchError {
            source_ref: r.source.clone(),
            kind,
            message: message.into(),
        }
    }
}

/// Settings for fetching.
#[derive(Clone)]
pub struct FetchOptions {
    /// Service-cluster client for `configmap://` sources.
    pub service: Option<kube::Client>,
    /// Directories searched for built-in `<name>.wasm`, in order.
    pub builtin_dirs: Vec<PathBuf>,
    /// Root of the content-addressed cache; `None` disables it.
    pub cache_dir: Option<PathBuf>,
    /// The limit that cache shares with the compiled plugins beside it
    /// (least recently used entries are evicted); `None`: unbounded.
    pub cache_bound: Option<syncweave_runtime::DiskCache>,
    pub max_bytes: u64,
    pub timeout: Duration,
    pub connect_timeout: Duration,
    /// Extra PEM-encoded CA certificates trusted for https and OCI, on top
    /// of the system's (private registries, internal servers).
    pub extra_root_certs: Vec<Vec<u8>>,
    /// A PEM bundle file whose certificates are added to those, read when
    /// the context is made (`$SYNCWEAVE_PLUGIN_CA_FILE` by default).
    pub ca_file: Option<PathBuf>,
}

impl std::fmt::Debug for FetchOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FetchOptions")
            .field("service", &self.service.is_some())
            .field("builtin_dirs", &self.builtin_dirs)
            .field("cache_dir", &self.cache_dir)
            .field("max_bytes", &self.max_bytes)
            .field("timeout", &self.timeout)
            .field("extra_root_certs", &self.extra_root_certs.len())
            .field("ca_file", &self.ca_file)
            .finish()
    }
}

impl FetchOptions {
    /// Defaults for `runtime`: its built-in directories, a `sources/`
    /// cache beside its compiled-component cache, and the CA bundle named
    /// by `$SYNCWEAVE_PLUGIN_CA_FILE`.
    pub fn for_runtime(runtime: &Runtime, service: Option<kube::Client>) -> FetchOptions {
        FetchOptions {
            service,
            builtin_dirs: runtime.builtin_dirs(),
            cache_dir: runtime
                .config()
                .cache_dir
                .as_ref()
                .map(|d| d.join(syncweave_runtime::SOURCES_DIR)),
            cache_bound: runtime.disk_cache(),
            max_bytes: DEFAULT_MAX_BYTES,
            timeout: DEFAULT_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            extra_root_certs: Vec::new(),
            ca_file: std::env::var_os(CA_FILE_ENV)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from),
        }
    }
}

#[derive(Debug, thiserror::Error)]
#[error("cannot set up plugin fetching: {0}")]
pub struct SetupError(String);

/// Everything a fetch needs; cheap to clone.
#[derive(Clone)]
pub struct FetchContext {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub opts: FetchOptions,
    pub cache: Option<BlobCache>,
    /// https:// sources and registries alike.
    pub http: reqwest::Client,
}

impl std::fmt::Debug for FetchContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.inner.opts.fmt(f)
    }
}

/// reqwest is built without a built-in crypto provider so that, like kube,
/// it uses ring; rustls needs the process default set once.
fn ensure_crypto_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            // Losing a race to another installer is fine: any provider works.
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
    });
}

impl FetchContext {
    pub fn new(mut opts: FetchOptions) -> Result<FetchContext, SetupError> {
        ensure_crypto_provider();
        if let Some(path) = &opts.ca_file {
            let pem = std::fs::read(path).map_err(|e| {
                SetupError(format!(
                    "cannot read the CA bundle {} (${CA_FILE_ENV}): {e}",
                    path.display()
                ))
            })?;
            let certs = reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| {
                SetupError(format!(
                    "{} (${CA_FILE_ENV}) is not a PEM certificate bundle: {e}",
                    path.display()
                ))
            })?;
            if certs.is_empty() {
                return Err(SetupError(format!(
                    "{} (${CA_FILE_ENV}) holds no PEM certificate",
                    path.display()
                )));
            }
            opts.extra_root_certs.push(pem);
        }
        for (i, pem) in opts.extra_root_certs.iter().enumerate() {
            reqwest::Certificate::from_pem_bundle(pem)
                .map_err(|e| SetupError(format!("extra root certificate {i} is not PEM: {e}")))?;
        }
        let http = https::client(&opts).map_err(SetupError)?;
        Ok(FetchContext {
            inner: Arc::new(Inner {
                cache: opts
                    .cache_dir
                    .as_ref()
                    .map(|d| BlobCache::new(d).with_bound(opts.cache_bound.clone())),
                opts,
                http,
            }),
        })
    }

    pub fn options(&self) -> &FetchOptions {
        &self.inner.opts
    }

    pub fn cache(&self) -> Option<&BlobCache> {
        self.inner.cache.as_ref()
    }

    /// Fetch `r` anonymously, without signature checks; see [`fetch`].
    pub async fn fetch(&self, r: &PluginRef) -> Result<Fetched, FetchError> {
        fetch(r, self, &Access::anonymous()).await
    }

    /// Fetch `r` with `access` (credentials, required signature).
    pub async fn fetch_with(&self, r: &PluginRef, access: &Access) -> Result<Fetched, FetchError> {
        fetch(r, self, access).await
    }

    /// Fetch WasmPlugin `spec`'s source `r` as its spec says: with the
    /// credentials of its imagePullSecret, verifying its signature.
    pub async fn fetch_for(
        &self,
        r: &PluginRef,
        spec: &WasmPluginSpec,
    ) -> Result<Fetched, FetchError> {
        let access = self.access_for(r, spec).await?;
        self.fetch_with(r, &access).await
    }

    /// Push a Wasm artifact (and sign it); see [`PushRequest`].
    pub async fn push(
        &self,
        req: PushRequest<'_>,
        progress: &dyn Fn(String),
    ) -> Result<Pushed, String> {
        let work = oci::push(&self.inner.http, req, progress);
        // Uploads take longer than fetches: a 50 MiB component on a slow
        // link; the per-read timeout still catches a stalled registry.
        tokio::time::timeout(self.inner.opts.timeout * 5, work)
            .await
            .map_err(|_| {
                format!(
                    "the push did not finish within {:?}",
                    self.inner.opts.timeout * 5
                )
            })?
    }

    /// Check the signature of oci:// reference `r` with `access.keys`
    /// without fetching the component; returns what verified it.
    pub async fn verify(&self, r: &PluginRef, access: &Access) -> Result<String, FetchError> {
        oci::verify(&self.inner.http, r, access).await
    }

    /// What WasmPlugin `spec` asks of fetching its source `r`: the
    /// credentials of `spec.imagePullSecret` for `r`'s registry and the keys
    /// of `spec.signature`, read from the service cluster. Errors name the
    /// field and say how to fix it.
    pub async fn access_for(
        &self,
        r: &PluginRef,
        spec: &WasmPluginSpec,
    ) -> Result<Access, FetchError> {
        let registry = match &r.location {
            Location::Oci { reference, .. } => Some(
                oci::parse_reference(reference)
                    .map_err(|m| FetchError::new(r, FetchErrorKind::InvalidSource, m))?
                    .registry,
            ),
            _ => None,
        };
        let invalid = |m: String| FetchError::new(r, FetchErrorKind::InvalidSource, m);
        let Some(registry) = registry else {
            if spec.image_pull_secret.is_some() {
                return Err(invalid(format!(
                    "spec.imagePullSecret: applies to oci:// sources only, and this source is                      {}; remove imagePullSecret",
                    r.kind()
                )));
            }
            if spec.signature.is_some() {
                return Err(invalid(format!(
                    "spec.signature: signatures are verified for oci:// sources only (they are                      kept in the registry beside the artifact), and this source is {}; publish                      the plugin with `syncweave plugin push --sign` and reference it by                      oci://…@sha256:…, or remove signature",
                    r.kind()
                )));
            }
            return Ok(Access::anonymous());
        };
        let mut access = Access {
            anonymous_hint: format!(
                "set spec.imagePullSecret to a kubernetes.io/dockerconfigjson Secret with                  credentials for {registry} (`kubectl create secret docker-registry`)"
            ),
            ..Default::default()
        };
        if let Some(s) = &spec.image_pull_secret {
            access.credentials = Some(self.pull_secret(r, &registry, s).await?);
        }
        if let Some(sig) = &spec.signature {
            access.keys = Some(self.public_keys(r, sig).await?);
        }
        Ok(access)
    }

    fn service(&self, r: &PluginRef, field: &str) -> Result<&kube::Client, FetchError> {
        self.inner.opts.service.as_ref().ok_or_else(|| {
            FetchError::new(
                r,
                FetchErrorKind::InvalidSource,
                format!(
                    "{field} is read from the service cluster, and this agent has no                      service-cluster client"
                ),
            )
        })
    }

    async fn pull_secret(
        &self,
        r: &PluginRef,
        registry: &str,
        s: &crate::apis::SecretReference,
    ) -> Result<Credentials, FetchError> {
        const FIELD: &str = "spec.imagePullSecret";
        let fail =
            |m: String| FetchError::new(r, FetchErrorKind::PullSecret, format!("{FIELD}: {m}"));
        let (ns, name) = (s.namespace.as_str(), s.name.as_str());
        if ns.is_empty() || name.is_empty() {
            return Err(FetchError::new(
                r,
                FetchErrorKind::InvalidSource,
                format!("{FIELD}: set both namespace and name of the Secret"),
            ));
        }
        let create = format!(
            "kubectl create secret docker-registry {name} -n {ns} --docker-server={registry}              --docker-username=… --docker-password=…"
        );
        let client = self.service(r, FIELD)?;
        let secret = match Api::<KubeSecret>::namespaced(client.clone(), ns)
            .get_opt(name)
            .await
        {
            Ok(Some(s)) => s,
            Ok(None) => {
                return Err(fail(format!(
                    "Secret {ns}/{name} does not exist on the service cluster; create it:                      `{create}`"
                )));
            }
            Err(kube::Error::Api(e)) if e.code == 401 || e.code == 403 => {
                return Err(fail(format!(
                    "reading Secret {ns}/{name} was refused ({}); grant the agent's service                      account `get` on secrets in namespace {ns} (chart value                      rbac.pluginSecretNamespaces)",
                    e.message
                )));
            }
            Err(e) => {
                return Err(FetchError::new(
                    r,
                    FetchErrorKind::Network,
                    format!("{FIELD}: reading Secret {ns}/{name}: {e}"),
                ));
            }
        };
        let type_ = secret.type_.as_deref().unwrap_or("Opaque");
        let data = secret.data.unwrap_or_default();
        let origin = format!("Secret {ns}/{name} ({FIELD})");
        let (key, legacy) = match type_ {
            "kubernetes.io/dockerconfigjson" => (".dockerconfigjson", false),
            "kubernetes.io/dockercfg" => (".dockercfg", true),
            other => {
                return Err(fail(format!(
                    "Secret {ns}/{name} is of type {other}, not kubernetes.io/dockerconfigjson;                      recreate it with `{create}` (or `--from-file=.dockerconfigjson=config.json                      --type=kubernetes.io/dockerconfigjson`)"
                )));
            }
        };
        let Some(bytes) = data.get(key) else {
            return Err(fail(format!(
                "Secret {ns}/{name} has no {key} key; recreate it with `{create}`"
            )));
        };
        let config = DockerConfig::parse(&bytes.0, &origin, legacy).map_err(fail)?;
        match config.credentials_for(registry).map_err(fail)? {
            Some(c) => Ok(c),
            None => {
                let have = config.registries();
                Err(fail(format!(
                    "Secret {ns}/{name} has no credentials for registry {registry} (it has                      entries for: {}); add them: `{create}`",
                    if have.is_empty() {
                        "none".to_string()
                    } else {
                        have.join(", ")
                    }
                )))
            }
        }
    }

    async fn public_keys(
        &self,
        r: &PluginRef,
        sig: &crate::apis::SignatureVerification,
    ) -> Result<PublicKeys, FetchError> {
        let invalid = |m: &str| {
            FetchError::new(
                r,
                FetchErrorKind::InvalidSource,
                format!("spec.signature: {m}"),
            )
        };
        let key_err = |m: String| FetchError::new(r, FetchErrorKind::PublicKey, m);
        let from = sig.public_key_from.as_ref();
        match (&sig.public_key, from) {
            (Some(_), Some(_)) => {
                return Err(invalid("sets both publicKey and publicKeyFrom; keep one"));
            }
            (None, None) => {
                return Err(invalid(
                    "names no key; set publicKey (PEM) or publicKeyFrom (a Secret or ConfigMap                      key holding it)",
                ));
            }
            (Some(pem), None) => {
                return PublicKeys::parse(pem, "spec.signature.publicKey")
                    .map_err(|m| FetchError::new(r, FetchErrorKind::InvalidSource, m));
            }
            (None, Some(_)) => {}
        }
        let from = from.expect("matched above");
        let (kind, field, k) = match (&from.secret_key_ref, &from.config_map_key_ref) {
            (Some(k), None) => ("Secret", "spec.signature.publicKeyFrom.secretKeyRef", k),
            (None, Some(k)) => (
                "ConfigMap",
                "spec.signature.publicKeyFrom.configMapKeyRef",
                k,
            ),
            _ => {
                return Err(invalid(
                    "publicKeyFrom must set exactly one of secretKeyRef and configMapKeyRef",
                ));
            }
        };
        let (ns, name, key) = (k.namespace.as_str(), k.name.as_str(), k.key.as_str());
        if ns.is_empty() || name.is_empty() || key.is_empty() {
            return Err(invalid(&format!("{field}: set namespace, name and key")));
        }
        let client = self.service(r, field)?;
        let origin = format!("{kind} {ns}/{name} key {key} ({field})");
        let refused = |code: u16, m: &str| {
            key_err(format!(
                "{field}: reading {kind} {ns}/{name} was refused ({code} {m}); grant the agent's                  service account `get` on {}s in namespace {ns}",
                kind.to_ascii_lowercase()
            ))
        };
        let text = if kind == "Secret" {
            match Api::<KubeSecret>::namespaced(client.clone(), ns)
                .get_opt(name)
                .await
            {
                Ok(Some(s)) => s
                    .data
                    .unwrap_or_default()
                    .get(key)
                    .map(|b| String::from_utf8_lossy(&b.0).into_owned()),
                Ok(None) => None,
                Err(kube::Error::Api(e)) if e.code == 401 || e.code == 403 => {
                    return Err(refused(e.code, &e.message));
                }
                Err(e) => {
                    return Err(FetchError::new(
                        r,
                        FetchErrorKind::Network,
                        format!("{field}: reading {kind} {ns}/{name}: {e}"),
                    ));
                }
            }
        } else {
            match Api::<ConfigMap>::namespaced(client.clone(), ns)
                .get_opt(name)
                .await
            {
                Ok(Some(c)) => c.data.unwrap_or_default().get(key).cloned(),
                Ok(None) => None,
                Err(kube::Error::Api(e)) if e.code == 401 || e.code == 403 => {
                    return Err(refused(e.code, &e.message));
                }
                Err(e) => {
                    return Err(FetchError::new(
                        r,
                        FetchErrorKind::Network,
                        format!("{field}: reading {kind} {ns}/{name}: {e}"),
                    ));
                }
            }
        };
        let Some(text) = text else {
            return Err(key_err(format!(
                "{field}: {kind} {ns}/{name} with key {key} does not exist on the service                  cluster; create it: `kubectl create {} {name} -n {ns} --from-file={key}=cosign.pub`",
                if kind == "Secret" {
                    "secret generic"
                } else {
                    "configmap"
                }
            )));
        };
        PublicKeys::parse(&text, &origin).map_err(key_err)
    }
}

/// Credentials and signature requirements of one fetch: a WasmPlugin's
/// imagePullSecret and signature ([`FetchContext::access_for`]), or the
/// CLI's docker config and keys. Only oci:// sources use them.
#[derive(Clone, Debug, Default)]
pub struct Access {
    pub credentials: Option<Credentials>,
    /// When set, the artifact must carry a signature by one of these keys.
    pub keys: Option<PublicKeys>,
    /// What to do when the registry wants credentials and none were given.
    pub anonymous_hint: String,
}

impl Access {
    /// No credentials, no signature: inline `wasm: {source: …}` uses.
    pub fn anonymous() -> Access {
        Access {
            anonymous_hint: "inline sources are pulled anonymously; create a WasmPlugin for                              this source with spec.imagePullSecret and use it by name"
                .to_string(),
            ..Default::default()
        }
    }
}

/// Fetch the bytes `r` names, verified against every pin it carries (and,
/// for oci://, the signature `access` requires), within the size limit and
/// the time budget.
pub async fn fetch(
    r: &PluginRef,
    ctx: &FetchContext,
    access: &Access,
) -> Result<Fetched, FetchError> {
    let inner = &*ctx.inner;
    if !matches!(r.location, Location::Oci { .. })
        && (access.credentials.is_some() || access.keys.is_some())
    {
        return Err(FetchError::new(
            r,
            FetchErrorKind::InvalidSource,
            format!(
                "registry credentials and signatures apply to oci:// sources only, and this                  source is {}",
                r.kind()
            ),
        ));
    }
    let work = async {
        match &r.location {
            Location::Builtin { name } => fetch_builtin(inner, r, name).await,
            Location::File { path } => fetch_file(inner, r, path).await,
            Location::Https { url } => https::fetch(inner, r, url).await,
            Location::ConfigMap {
                namespace,
                name,
                key,
            } => fetch_configmap(inner, r, namespace, name, key).await,
            Location::Oci {
                reference,
                manifest_digest,
            } => oci::fetch(inner, r, reference, manifest_digest, access).await,
        }
    };
    let fetched = tokio::time::timeout(inner.opts.timeout, work)
        .await
        .map_err(|_| {
            FetchError::new(
                r,
                FetchErrorKind::Timeout,
                format!(
                    "did not finish within {:?}; check that the server answers from the agent's \
                     network, or mirror the plugin closer (configmap:// works air-gapped)",
                    inner.opts.timeout
                ),
            )
        })??;
    verify_pin(r, &fetched)?;
    let fetched = Fetched {
        source: r.source.clone(),
        ..fetched
    };
    tracing::debug!(source = %r, digest = %fetched.digest, bytes = fetched.bytes.len(), cached = fetched.cached, "fetched plugin");
    Ok(fetched)
}

/// The `sha256` field, when set, must match the bytes whatever the kind.
fn verify_pin(r: &PluginRef, f: &Fetched) -> Result<(), FetchError> {
    match &r.sha256 {
        Some(want) if f.digest != format!("sha256:{want}") => Err(FetchError::new(
            r,
            FetchErrorKind::DigestMismatch,
            format!(
                "the fetched bytes have {}, but sha256 pins sha256:{want}; if the plugin was \
                 changed on purpose, update sha256, otherwise find out who changed the file",
                f.digest
            ),
        )),
        _ => Ok(()),
    }
}

pub(crate) fn too_large(r: &PluginRef, what: &str, size: u64, max: u64) -> FetchError {
    FetchError::new(
        r,
        FetchErrorKind::TooLarge,
        format!(
            "{what} is {size} bytes, over the plugin size limit of {max} bytes ({} MiB); \
             shrink the component (release build, `wasm-opt -Oz`) or raise the limit",
            max >> 20
        ),
    )
}

async fn fetch_builtin(inner: &Inner, r: &PluginRef, name: &str) -> Result<Fetched, FetchError> {
    let dirs = &inner.opts.builtin_dirs;
    for dir in dirs {
        let path = dir.join(format!("{name}.wasm"));
        match read_file(inner, r, &path).await {
            Ok(f) => return Ok(f),
            Err(e) if e.kind == FetchErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        }
    }
    if let Some(b) = syncweave_runtime::builtins::get(name) {
        return Ok(Fetched {
            bytes: b.wasm().into(),
            digest: b.digest.to_string(),
            cached: true,
            signature: None,
            source: String::new(),
        });
    }
    let mut available = syncweave_runtime::fsutil::wasm_names_in(dirs);
    available.extend(syncweave_runtime::builtins::names().map(str::to_string));
    available.sort();
    available.dedup();
    Err(FetchError::new(
        r,
        FetchErrorKind::NotFound,
        format!(
            "no built-in plugin named {name:?} (built-ins: {}); check the name, or reference \
             your own plugin by WasmPlugin name or source URL",
            available.join(", ")
        ),
    ))
}

async fn fetch_file(
    inner: &Inner,
    r: &PluginRef,
    path: &std::path::Path,
) -> Result<Fetched, FetchError> {
    read_file(inner, r, path).await.map_err(|mut e| {
        if e.kind == FetchErrorKind::NotFound {
            e.message.push_str(
                "; the path is read on the machine the agent runs on (mount the file into \
                 its container, or use configmap:// or oci://)",
            );
        }
        e
    })
}

async fn read_file(
    inner: &Inner,
    r: &PluginRef,
    path: &std::path::Path,
) -> Result<Fetched, FetchError> {
    let io_err = |e: std::io::Error| {
        let kind = match e.kind() {
            std::io::ErrorKind::NotFound => FetchErrorKind::NotFound,
            std::io::ErrorKind::PermissionDenied => FetchErrorKind::Denied,
            _ => FetchErrorKind::Io,
        };
        FetchError::new(r, kind, format!("cannot read {}: {e}", path.display()))
    };
    let meta = tokio::fs::metadata(path).await.map_err(io_err)?;
    if meta.is_dir() {
        return Err(FetchError::new(
            r,
            FetchErrorKind::InvalidSource,
            format!("{} is a directory; point at the .wasm file", path.display()),
        ));
    }
    let max = inner.opts.max_bytes;
    if meta.len() > max {
        return Err(too_large(r, &path.display().to_string(), meta.len(), max));
    }
    let bytes = tokio::fs::read(path).await.map_err(io_err)?;
    // The file may have grown between the two calls.
    if bytes.len() as u64 > max {
        return Err(too_large(
            r,
            &path.display().to_string(),
            bytes.len() as u64,
            max,
        ));
    }
    Ok(Fetched::new(bytes, false))
}

async fn fetch_configmap(
    inner: &Inner,
    r: &PluginRef,
    namespace: &str,
    name: &str,
    key: &str,
) -> Result<Fetched, FetchError> {
    let Some(client) = &inner.opts.service else {
        return Err(FetchError::new(
            r,
            FetchErrorKind::InvalidSource,
            "configmap:// sources are read from the service cluster, and this agent has no \
             service-cluster client; use another source kind here",
        ));
    };
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let cm = match api.get_opt(name).await {
        Ok(Some(cm)) => cm,
        Ok(None) => {
            return Err(FetchError::new(
                r,
                FetchErrorKind::NotFound,
                format!(
                    "ConfigMap {namespace}/{name} does not exist on the service cluster; create \
                     it with `kubectl create configmap {name} -n {namespace} \
                     --from-file={key}=plugin.wasm`"
                ),
            ));
        }
        Err(kube::Error::Api(s)) if s.code == 401 || s.code == 403 => {
            return Err(FetchError::new(
                r,
                FetchErrorKind::Denied,
                format!(
                    "reading ConfigMap {namespace}/{name} was refused ({}); grant the agent's \
                     service account `get` on configmaps in namespace {namespace}",
                    s.message
                ),
            ));
        }
        Err(e) => {
            return Err(FetchError::new(
                r,
                FetchErrorKind::Network,
                format!("reading ConfigMap {namespace}/{name}: {e}"),
            ));
        }
    };
    if let Some(bytes) = cm.binary_data.as_ref().and_then(|d| d.get(key)) {
        let max = inner.opts.max_bytes;
        if bytes.0.len() as u64 > max {
            return Err(too_large(
                r,
                &format!("binaryData key {key:?}"),
                bytes.0.len() as u64,
                max,
            ));
        }
        return Ok(Fetched::new(bytes.0.clone(), false));
    }
    let message = if cm.data.as_ref().is_some_and(|d| d.contains_key(key)) {
        format!(
            "ConfigMap {namespace}/{name} has {key:?} under data, which holds only UTF-8 text; \
             a .wasm file must be under binaryData (`kubectl create configmap --from-file` puts \
             binary files there)"
        )
    } else {
        let mut keys: Vec<&str> = cm
            .binary_data
            .iter()
            .flat_map(|d| d.keys())
            .map(String::as_str)
            .collect();
        keys.sort();
        format!(
            "ConfigMap {namespace}/{name} has no binaryData key {key:?} (binaryData keys: {}); \
             fix the key in the source, or add it with `kubectl create configmap {name} -n \
             {namespace} --from-file={key}=plugin.wasm`",
            if keys.is_empty() {
                "none".to_string()
            } else {
                keys.join(", ")
            }
        )
    };
    Err(FetchError::new(r, FetchErrorKind::NotFound, message))
}

/// `error: cause: cause…`, because reqwest's Display shows only the top.
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let text = c.to_string();
        if !s.contains(&text) {
            s.push_str(": ");
            s.push_str(&text);
        }
        cur = c.source();
    }
    s
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::testing::tempdir;

    fn options(dir: &std::path::Path) -> FetchOptions {
        FetchOptions {
            service: None,
            builtin_dirs: vec![dir.join("builtins")],
            cache_dir: Some(dir.join("cache")),
            cache_bound: None,
            max_bytes: 1 << 20,
            timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(5),
            extra_root_certs: Vec::new(),
            ca_file: None,
        }
    }

    #[tokio::test]
    async fn file_and_builtin_sources() {
        let dir = tempdir("file");
        std::fs::create_dir_all(dir.join("builtins")).unwrap();
        std::fs::write(dir.join("builtins/naming.wasm"), b"naming bytes").unwrap();
        std::fs::write(dir.join("p.wasm"), b"plugin bytes").unwrap();
        let ctx = FetchContext::new(options(&dir)).unwrap();

        let r = PluginRef::parse("naming", None, "spec").unwrap();
        let f = ctx.fetch(&r).await.unwrap();
        assert_eq!(&*f.bytes, b"naming bytes");
        assert_eq!(f.digest, sha256_digest(b"naming bytes"));

        let url = format!("file://{}", dir.join("p.wasm").display());
        let f = ctx
            .fetch(&PluginRef::parse(&url, None, "spec").unwrap())
            .await
            .unwrap();
        assert_eq!(&*f.bytes, b"plugin bytes");
        assert!(!f.cached);

        let e = ctx
            .fetch(&PluginRef::parse("nope", None, "spec").unwrap())
            .await
            .unwrap_err();
        assert_eq!(e.kind, FetchErrorKind::NotFound);
        assert!(
            e.message
                .contains("built-ins: mutation, naming, projection, renderer"),
            "{e}"
        );

        // A name no directory overrides comes from the binary.
        let r = PluginRef::parse("projection", None, "spec").unwrap();
        let f = ctx.fetch(&r).await.unwrap();
        let embedded = syncweave_runtime::builtins::get("projection").unwrap();
        assert_eq!(&*f.bytes, &embedded.wasm()[..]);
        assert_eq!(f.digest, embedded.digest);
        assert_eq!(f.digest, sha256_digest(&embedded.wasm()));

        let e = ctx
            .fetch(&PluginRef::parse("/definitely/not/here.wasm", None, "spec").unwrap())
            .await
            .unwrap_err();
        assert_eq!(e.kind, FetchErrorKind::NotFound);
        assert!(e.message.contains("/definitely/not/here.wasm"), "{e}");
        assert!(e.message.contains("mount the file"), "{e}");
    }

    #[tokio::test]
    async fn pins_and_size_limits_apply_to_local_files() {
        let dir = tempdir("pin");
        std::fs::write(dir.join("p.wasm"), b"plugin bytes").unwrap();
        std::fs::write(dir.join("big.wasm"), vec![0u8; (1 << 20) + 1]).unwrap();
        let ctx = FetchContext::new(options(&dir)).unwrap();
        let path = dir.join("p.wasm").display().to_string();

        let good = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(b"plugin bytes"));
        let r = PluginRef::parse(&path, Some(&good), "spec").unwrap();
        assert!(ctx.fetch(&r).await.is_ok());

        let r = PluginRef::parse(&path, Some(&"0".repeat(64)), "spec").unwrap();
        let e = ctx.fetch(&r).await.unwrap_err();
        assert_eq!(e.kind, FetchErrorKind::DigestMismatch);
        assert!(e.message.contains(&format!("have sha256:{good}")), "{e}");

        let big = dir.join("big.wasm").display().to_string();
        let e = ctx
            .fetch(&PluginRef::parse(&big, None, "spec").unwrap())
            .await
            .unwrap_err();
        assert_eq!(e.kind, FetchErrorKind::TooLarge);
        assert!(e.message.contains("limit of 1048576 bytes (1 MiB)"), "{e}");
    }

    #[tokio::test]
    async fn configmap_without_a_client_says_so() {
        let dir = tempdir("cm");
        let ctx = FetchContext::new(options(&dir)).unwrap();
        let r = PluginRef::parse("configmap://ns/cm/k", None, "spec").unwrap();
        let e = ctx.fetch(&r).await.unwrap_err();
        assert_eq!(e.kind, FetchErrorKind::InvalidSource);
        assert!(e.message.contains("no service-cluster client"), "{e}");
    }

    #[test]
    fn reasons_and_transience() {
        assert_eq!(FetchErrorKind::Network.reason(), "FetchFailed");
        assert_eq!(FetchErrorKind::DigestMismatch.reason(), "DigestMismatch");
        assert!(FetchErrorKind::Timeout.is_transient());
        assert!(!FetchErrorKind::DigestMismatch.is_transient());
        assert!(!FetchErrorKind::InvalidSource.is_transient());
    }
}
