//! Where plugins come from: parsing plugin references ([`reference`]) and
//! fetching their bytes, verified and cached.
//!
//! | source | example | pinned by |
//! |---|---|---|
//! | built-in | `naming` | — (ships with the agent) |
//! | file | `file:///opt/plugins/x.wasm`, `/opt/plugins/x.wasm` | optional `sha256` |
//! | https | `https://example.com/x.wasm` | `sha256` (required) |
//! | ConfigMap | `configmap://plugins/x/x.wasm` (binaryData key, service cluster) | optional `sha256` |
//! | OCI | `oci://ghcr.io/org/x@sha256:…` (CNCF Wasm artifact) | manifest digest, then layer digest |
//!
//! Remote bytes (https, OCI) are kept in a content-addressed [`cache`], so
//! a pinned plugin is downloaded once per machine and agent restarts work
//! offline.

pub mod cache;
mod https;
mod oci;
pub mod reference;
#[cfg(test)]
pub(crate) mod testserver;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use syncweave_runtime::{Limits, Plugin, PluginFailure, Runtime};

pub use cache::{BlobCache, sha256_digest};
pub use reference::{Location, PluginRef, RefError};

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
            .finish()
    }
}

impl Fetched {
    fn new(bytes: Vec<u8>, cached: bool) -> Fetched {
        Fetched {
            digest: sha256_digest(&bytes),
            bytes: bytes.into(),
            cached,
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
}

impl FetchErrorKind {
    /// The condition/Event reason for this failure.
    pub fn reason(self) -> &'static str {
        match self {
            FetchErrorKind::InvalidSource => "InvalidSource",
            FetchErrorKind::DigestMismatch => "DigestMismatch",
            FetchErrorKind::TooLarge => "TooLarge",
            FetchErrorKind::NotWasmArtifact => "NotWasmArtifact",
            _ => "FetchFailed",
        }
    }

    /// Whether trying again later may succeed without anyone changing the
    /// reference: the network, a server, or a ConfigMap yet to be created.
    pub fn is_transient(self) -> bool {
        matches!(
            self,
            FetchErrorKind::Network
                | FetchErrorKind::Timeout
                | FetchErrorKind::NotFound
                | FetchErrorKind::Denied
                | FetchErrorKind::Io
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
    pub max_bytes: u64,
    pub timeout: Duration,
    pub connect_timeout: Duration,
    /// Extra PEM-encoded CA certificates trusted for https and OCI, on top
    /// of the system's (private registries, internal servers).
    pub extra_root_certs: Vec<Vec<u8>>,
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
            .finish()
    }
}

impl FetchOptions {
    /// Defaults for `runtime`: its built-in directories, and a `sources/`
    /// cache beside its compiled-component cache.
    pub fn for_runtime(runtime: &Runtime, service: Option<kube::Client>) -> FetchOptions {
        FetchOptions {
            service,
            builtin_dirs: runtime.builtin_dirs(),
            cache_dir: runtime
                .config()
                .cache_dir
                .as_ref()
                .map(|d| d.join("sources")),
            max_bytes: DEFAULT_MAX_BYTES,
            timeout: DEFAULT_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            extra_root_certs: Vec::new(),
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
    pub http: reqwest::Client,
    pub oci: oci_client::Client,
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
    pub fn new(opts: FetchOptions) -> Result<FetchContext, SetupError> {
        ensure_crypto_provider();
        for (i, pem) in opts.extra_root_certs.iter().enumerate() {
            reqwest::Certificate::from_pem(pem)
                .map_err(|e| SetupError(format!("extra root certificate {i} is not PEM: {e}")))?;
        }
        let http = https::client(&opts).map_err(SetupError)?;
        let oci = oci::client(&opts).map_err(SetupError)?;
        Ok(FetchContext {
            inner: Arc::new(Inner {
                cache: opts.cache_dir.as_ref().map(BlobCache::new),
                opts,
                http,
                oci,
            }),
        })
    }

    pub fn options(&self) -> &FetchOptions {
        &self.inner.opts
    }

    pub fn cache(&self) -> Option<&BlobCache> {
        self.inner.cache.as_ref()
    }

    /// Fetch `r`; see [`fetch`].
    pub async fn fetch(&self, r: &PluginRef) -> Result<Fetched, FetchError> {
        fetch(r, self).await
    }
}

/// Fetch the bytes `r` names, verified against every pin it carries,
/// within the size limit and the time budget.
pub async fn fetch(r: &PluginRef, ctx: &FetchContext) -> Result<Fetched, FetchError> {
    let inner = &*ctx.inner;
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
            } => oci::fetch(inner, r, reference, manifest_digest).await,
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
            bytes: b.wasm.into(),
            digest: b.digest.to_string(),
            cached: true,
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

    pub(crate) fn tempdir(tag: &str) -> PathBuf {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let d = std::env::temp_dir().join(format!(
            "syncweave-sources-{tag}-{}-{n}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn options(dir: &std::path::Path) -> FetchOptions {
        FetchOptions {
            service: None,
            builtin_dirs: vec![dir.join("builtins")],
            cache_dir: Some(dir.join("cache")),
            max_bytes: 1 << 20,
            timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(5),
            extra_root_certs: Vec::new(),
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
        assert_eq!(&*f.bytes, embedded.wasm);
        assert_eq!(f.digest, embedded.digest);
        assert_eq!(f.digest, sha256_digest(embedded.wasm));

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
