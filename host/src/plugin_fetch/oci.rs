//! `oci://` sources: CNCF Wasm artifacts (config media type
//! `application/vnd.wasm.config.v0+json`, one `application/wasm` layer),
//! pinned by manifest digest and pulled with the `oci-client` crate.
//!
//! Both the manifest and the layer are stored in the content-addressed
//! cache under their digests, so a pinned reference resolves offline once
//! pulled.

use futures::StreamExt;
use oci_client::client::{Certificate, CertificateEncoding, ClientConfig, ClientProtocol};
use oci_client::errors::{OciDistributionError, OciErrorCode};
use oci_client::manifest::{OCI_IMAGE_INDEX_MEDIA_TYPE, OCI_IMAGE_MEDIA_TYPE, OciDescriptor};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};
use serde::Deserialize;

use super::{FetchError, FetchErrorKind, FetchOptions, Fetched, Inner, PluginRef, error_chain};

/// The CNCF TAG Runtime Wasm artifact media types.
pub const WASM_CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";
pub const WASM_LAYER_MEDIA_TYPE: &str = "application/wasm";
/// What the older wasm-to-oci tool pushes; still found in registries.
const LEGACY_CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v1+json";
const LEGACY_LAYER_MEDIA_TYPE: &str = "application/vnd.wasm.content.layer.v1+wasm";
/// Docker's schema 2 manifest, which some tools use for artifacts too.
const DOCKER_MANIFEST_MEDIA_TYPE: &str = "application/vnd.docker.distribution.manifest.v2+json";
const DOCKER_LIST_MEDIA_TYPE: &str = "application/vnd.docker.distribution.manifest.list.v2+json";
/// Registries cap manifests at 4 MiB; a bigger one is not a Wasm artifact.
const MAX_MANIFEST_BYTES: u64 = 4 << 20;

pub(super) fn client(opts: &FetchOptions) -> Result<Client, String> {
    let cfg = ClientConfig {
        protocol: ClientProtocol::Https,
        extra_root_certificates: opts
            .extra_root_certs
            .iter()
            .map(|pem| Certificate {
                encoding: CertificateEncoding::Pem,
                data: pem.clone(),
            })
            .collect(),
        // Wasm is platform-neutral: an image index is a mistake, not a
        // choice to resolve for the host's platform.
        platform_resolver: None,
        connect_timeout: Some(opts.connect_timeout),
        read_timeout: Some(opts.connect_timeout.max(std::time::Duration::from_secs(30))),
        user_agent: concat!("syncweave/", env!("CARGO_PKG_VERSION")),
        ..Default::default()
    };
    Client::try_from(cfg).map_err(|e| format!("building the OCI client: {}", error_chain(&e)))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Manifest {
    #[serde(default)]
    media_type: Option<String>,
    #[serde(default)]
    config: Option<Descriptor>,
    #[serde(default)]
    layers: Vec<Descriptor>,
    /// Present only in image indexes.
    #[serde(default)]
    manifests: Option<Vec<serde_json::Value>>,
}

#[derive(Deserialize, Clone)]
#[serde(rename_all = "camelCase")]
struct Descriptor {
    media_type: String,
    digest: String,
    #[serde(default)]
    size: i64,
}

pub(super) async fn fetch(
    inner: &Inner,
    r: &PluginRef,
    reference: &str,
    manifest_digest: &str,
) -> Result<Fetched, FetchError> {
    let max = inner.opts.max_bytes;
    let image = Reference::try_from(reference).map_err(|e| {
        FetchError::new(
            r,
            FetchErrorKind::InvalidSource,
            format!("{reference:?} is not a valid OCI reference: {e}"),
        )
    })?;
    let registry = image.resolve_registry().to_string();

    let (manifest_bytes, manifest_cached) = match inner
        .cache
        .as_ref()
        .and_then(|c| c.get(manifest_digest, MAX_MANIFEST_BYTES))
    {
        Some(b) => (b, true),
        None => {
            let (bytes, _) = inner
                .oci
                .pull_manifest_raw(
                    &image,
                    &RegistryAuth::Anonymous,
                    &[
                        OCI_IMAGE_MEDIA_TYPE,
                        DOCKER_MANIFEST_MEDIA_TYPE,
                        OCI_IMAGE_INDEX_MEDIA_TYPE,
                        DOCKER_LIST_MEDIA_TYPE,
                    ],
                )
                .await
                .map_err(|e| map_oci_error(r, &registry, "the manifest", e))?;
            (bytes.to_vec(), false)
        }
    };
    // oci-client checks the digest too; checking here keeps the guarantee
    // independent of the library and covers the cached copy.
    let actual = super::sha256_digest(&manifest_bytes);
    if actual != manifest_digest {
        return Err(FetchError::new(
            r,
            FetchErrorKind::DigestMismatch,
            format!(
                "the registry served a manifest with digest {actual} for {manifest_digest}; \
                 the registry or a proxy in between is misbehaving"
            ),
        ));
    }
    let layer = wasm_layer(r, &manifest_bytes)?;
    if let Some(pin) = &r.sha256
        && layer.digest != format!("sha256:{pin}")
    {
        return Err(FetchError::new(
            r,
            FetchErrorKind::DigestMismatch,
            format!(
                "the artifact's Wasm layer is {}, but sha256 pins sha256:{pin}; drop sha256 (the \
                 manifest digest already pins the bytes) or correct it",
                layer.digest
            ),
        ));
    }
    if layer.size < 0 || layer.size as u64 > max {
        return Err(super::too_large(
            r,
            "the artifact's Wasm layer",
            layer.size.max(0) as u64,
            max,
        ));
    }
    if !manifest_cached && let Some(c) = &inner.cache {
        c.put(&manifest_bytes);
    }
    if let Some(bytes) = inner.cache.as_ref().and_then(|c| c.get(&layer.digest, max)) {
        return Ok(Fetched::new(bytes, true));
    }

    let desc = OciDescriptor {
        media_type: layer.media_type.clone(),
        digest: layer.digest.clone(),
        size: layer.size,
        ..Default::default()
    };
    let mut stream = inner
        .oci
        .pull_blob_stream(&image, &desc)
        .await
        .map_err(|e| map_oci_error(r, &registry, "the Wasm layer", e))?;
    if let Some(len) = stream.content_length
        && len > max
    {
        return Err(super::too_large(r, "the Wasm layer", len, max));
    }
    let mut body = Vec::with_capacity(layer.size as usize);
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| {
            FetchError::new(
                r,
                FetchErrorKind::Network,
                format!("downloading the Wasm layer from {registry}: {e}"),
            )
        })?;
        if (body.len() + chunk.len()) as u64 > max {
            return Err(super::too_large(
                r,
                "the Wasm layer",
                (body.len() + chunk.len()) as u64,
                max,
            ));
        }
        body.extend_from_slice(&chunk);
    }
    let fetched = Fetched::new(body, false);
    if fetched.digest != layer.digest {
        return Err(FetchError::new(
            r,
            FetchErrorKind::DigestMismatch,
            format!(
                "the registry served a Wasm layer with digest {} for {}; the registry or a proxy \
                 in between is misbehaving",
                fetched.digest, layer.digest
            ),
        ));
    }
    if let Some(c) = &inner.cache {
        c.put(&fetched.bytes);
    }
    Ok(fetched)
}

/// The one Wasm layer of a Wasm artifact manifest, or why there is none.
fn wasm_layer(r: &PluginRef, manifest: &[u8]) -> Result<Descriptor, FetchError> {
    let not_wasm = |msg: String| FetchError::new(r, FetchErrorKind::NotWasmArtifact, msg);
    let push_hint = "push the component as a Wasm artifact (`wkg oci push`, or `oras push \
                     --config config.json:application/vnd.wasm.config.v0+json <ref> \
                     plugin.wasm:application/wasm`)";
    let m: Manifest = serde_json::from_slice(manifest)
        .map_err(|e| not_wasm(format!("the manifest is not valid JSON ({e}); {push_hint}")))?;
    if m.manifests.is_some()
        || matches!(
            m.media_type.as_deref(),
            Some(OCI_IMAGE_INDEX_MEDIA_TYPE | DOCKER_LIST_MEDIA_TYPE)
        )
    {
        return Err(not_wasm(format!(
            "the digest names an image index, not a Wasm artifact; pin the digest of the \
             artifact's own manifest instead; {push_hint}"
        )));
    }
    let config_type = m
        .config
        .as_ref()
        .map(|c| c.media_type.as_str())
        .unwrap_or("");
    let layer_type = match config_type {
        WASM_CONFIG_MEDIA_TYPE => WASM_LAYER_MEDIA_TYPE,
        LEGACY_CONFIG_MEDIA_TYPE => LEGACY_LAYER_MEDIA_TYPE,
        other => {
            return Err(not_wasm(format!(
                "config media type is {other:?}, not {WASM_CONFIG_MEDIA_TYPE:?}, so this is not \
                 a Wasm artifact (a container image?); {push_hint}"
            )));
        }
    };
    let wasm: Vec<&Descriptor> = m
        .layers
        .iter()
        .filter(|l| l.media_type == layer_type)
        .collect();
    match wasm.as_slice() {
        [one] => Ok((*one).clone()),
        [] => Err(not_wasm(format!(
            "the artifact has no {layer_type:?} layer (layers: {}); {push_hint}",
            if m.layers.is_empty() {
                "none".to_string()
            } else {
                m.layers
                    .iter()
                    .map(|l| l.media_type.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        ))),
        many => Err(not_wasm(format!(
            "the artifact has {} {layer_type:?} layers; a plugin artifact holds exactly one \
             component",
            many.len()
        ))),
    }
}

fn map_oci_error(r: &PluginRef, registry: &str, what: &str, e: OciDistributionError) -> FetchError {
    let (kind, hint) = match &e {
        OciDistributionError::RegistryError { envelope, .. }
            if envelope.errors.iter().any(|x| {
                matches!(
                    x.code,
                    OciErrorCode::ManifestUnknown
                        | OciErrorCode::BlobUnknown
                        | OciErrorCode::NameUnknown
                        | OciErrorCode::NotFound
                )
            }) =>
        {
            (
                FetchErrorKind::NotFound,
                "check the repository and digest (`oras manifest fetch <ref>`)",
            )
        }
        OciDistributionError::RegistryError { envelope, .. }
            if envelope
                .errors
                .iter()
                .any(|x| matches!(x.code, OciErrorCode::Unauthorized | OciErrorCode::Denied)) =>
        {
            (
                FetchErrorKind::Denied,
                "the registry refused an anonymous pull; make the repository public, mirror it, \
                 or use configmap://",
            )
        }
        OciDistributionError::ServerError { code: 404, .. } => (
            FetchErrorKind::NotFound,
            "check the repository and digest (`oras manifest fetch <ref>`)",
        ),
        OciDistributionError::UnauthorizedError { .. }
        | OciDistributionError::AuthenticationFailure(_)
        | OciDistributionError::ServerError {
            code: 401 | 403, ..
        } => (
            FetchErrorKind::Denied,
            "the registry refused an anonymous pull; make the repository public, mirror it, or \
             use configmap://",
        ),
        OciDistributionError::DigestError(_) => (
            FetchErrorKind::DigestMismatch,
            "the registry served other bytes than the digest names; it or a proxy in between is \
             misbehaving",
        ),
        OciDistributionError::RequestError(re) if re.is_timeout() => (
            FetchErrorKind::Timeout,
            "the registry did not answer in time; it will be retried",
        ),
        _ => (
            FetchErrorKind::Network,
            "check that the registry is reachable from the agent; it will be retried",
        ),
    };
    FetchError::new(
        r,
        kind,
        format!(
            "pulling {what} from {registry}: {}; {hint}",
            error_chain(&e)
        ),
    )
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::time::Duration;

    use serde_json::json;

    use super::super::testserver::{Response, TestServer};
    use super::super::{FetchContext, sha256_digest, tests::tempdir};
    use super::*;

    /// A registry holding one repository, `plugins/x`, with the given
    /// manifests and blobs (by digest).
    async fn registry(manifests: Vec<Vec<u8>>, blobs: Vec<Vec<u8>>) -> TestServer {
        let mut routes: HashMap<String, Response> = HashMap::new();
        let mut add = |path: String, r: Response| {
            routes.insert(path, r);
        };
        for m in &manifests {
            let d = sha256_digest(m);
            add(
                format!("/v2/plugins/x/manifests/{d}"),
                Response::ok(m.clone())
                    .header("Content-Type", OCI_IMAGE_MEDIA_TYPE)
                    .header("Docker-Content-Digest", &d),
            );
        }
        for b in &blobs {
            let d = sha256_digest(b);
            add(format!("/v2/plugins/x/blobs/{d}"), Response::ok(b.clone()));
        }
        let routes = std::sync::Arc::new(routes);
        TestServer::start(move |path| {
            if path == "/v2/" {
                return Response::ok(b"{}".to_vec());
            }
            match routes.get(path) {
                Some(r) => Response {
                    status: r.status,
                    headers: r.headers.clone(),
                    body: r.body.clone(),
                },
                None if path.contains("/manifests/") => Response::status(404).with_body(
                    br#"{"errors":[{"code":"MANIFEST_UNKNOWN","message":"manifest unknown"}]}"#,
                ),
                None => Response::status(404)
                    .with_body(br#"{"errors":[{"code":"BLOB_UNKNOWN","message":"blob unknown"}]}"#),
            }
        })
        .await
    }

    fn artifact(config_type: &str, layers: &[(&str, &[u8])]) -> (Vec<u8>, Vec<Vec<u8>>) {
        let config = b"{}".to_vec();
        let manifest = json!({
            "schemaVersion": 2,
            "mediaType": OCI_IMAGE_MEDIA_TYPE,
            "config": {"mediaType": config_type, "digest": sha256_digest(&config), "size": config.len()},
            "layers": layers.iter().map(|(t, b)| json!({
                "mediaType": t, "digest": sha256_digest(b), "size": b.len(),
            })).collect::<Vec<_>>(),
        });
        let mut blobs = vec![config];
        blobs.extend(layers.iter().map(|(_, b)| b.to_vec()));
        (serde_json::to_vec(&manifest).unwrap(), blobs)
    }

    fn ctx(server: &TestServer, dir: &std::path::Path, max_bytes: u64) -> FetchContext {
        FetchContext::new(FetchOptions {
            service: None,
            builtin_dirs: vec![],
            cache_dir: Some(dir.join("cache")),
            max_bytes,
            timeout: Duration::from_secs(20),
            connect_timeout: Duration::from_secs(5),
            extra_root_certs: vec![server.ca_pem().into_bytes()],
        })
        .unwrap()
    }

    fn oci_ref(server: &TestServer, manifest: &[u8]) -> PluginRef {
        let s = format!(
            "oci://{}/plugins/x@{}",
            server.host(),
            sha256_digest(manifest)
        );
        PluginRef::parse(&s, None, "spec").unwrap()
    }

    #[tokio::test]
    async fn pulls_a_wasm_artifact_by_digest_and_caches_it() {
        let wasm = b"\0asm\x0d\0\x01\0 the component".to_vec();
        let (manifest, blobs) = artifact(WASM_CONFIG_MEDIA_TYPE, &[(WASM_LAYER_MEDIA_TYPE, &wasm)]);
        let server = registry(vec![manifest.clone()], blobs).await;
        let dir = tempdir("oci");
        let ctx = ctx(&server, &dir, 1 << 20);
        let r = oci_ref(&server, &manifest);

        let f = ctx.fetch(&r).await.unwrap();
        assert_eq!(&*f.bytes, &wasm[..]);
        assert_eq!(f.digest, sha256_digest(&wasm));
        assert!(!f.cached);
        let reqs = server.requests();
        assert!(
            reqs.contains(&format!(
                "GET /v2/plugins/x/manifests/{}",
                sha256_digest(&manifest)
            )),
            "{reqs:?}"
        );
        assert!(
            reqs.contains(&format!("GET /v2/plugins/x/blobs/{}", sha256_digest(&wasm))),
            "{reqs:?}"
        );

        // Again: manifest and layer both come from the cache, offline.
        let before = server.requests().len();
        let f = ctx.fetch(&r).await.unwrap();
        assert!(f.cached);
        assert_eq!(server.requests().len(), before);

        // The sha256 field, when set, pins the layer.
        let pinned = PluginRef::parse(&r.source, Some(&"0".repeat(64)), "spec").unwrap();
        let e = ctx.fetch(&pinned).await.unwrap_err();
        assert_eq!(e.kind, FetchErrorKind::DigestMismatch);
        assert!(e.message.contains("Wasm layer"), "{e}");
    }

    #[tokio::test]
    async fn refuses_what_is_not_a_wasm_artifact() {
        let wasm = b"\0asm component".to_vec();
        let (image, image_blobs) = artifact(
            "application/vnd.oci.image.config.v1+json",
            &[("application/vnd.oci.image.layer.v1.tar+gzip", b"tarball")],
        );
        let (two, two_blobs) = artifact(
            WASM_CONFIG_MEDIA_TYPE,
            &[
                (WASM_LAYER_MEDIA_TYPE, &wasm),
                (WASM_LAYER_MEDIA_TYPE, b"other"),
            ],
        );
        let (legacy, legacy_blobs) = artifact(
            LEGACY_CONFIG_MEDIA_TYPE,
            &[(LEGACY_LAYER_MEDIA_TYPE, &wasm)],
        );
        let mut blobs = image_blobs;
        blobs.extend(two_blobs);
        blobs.extend(legacy_blobs);
        let server = registry(vec![image.clone(), two.clone(), legacy.clone()], blobs).await;
        let dir = tempdir("oci-not-wasm");
        let ctx = ctx(&server, &dir, 1 << 20);

        let e = ctx.fetch(&oci_ref(&server, &image)).await.unwrap_err();
        assert_eq!(e.kind, FetchErrorKind::NotWasmArtifact);
        assert!(
            e.message
                .contains("not a Wasm artifact (a container image?)"),
            "{e}"
        );

        let e = ctx.fetch(&oci_ref(&server, &two)).await.unwrap_err();
        assert!(e.message.contains("exactly one"), "{e}");

        // The older wasm-to-oci layout still works.
        let f = ctx.fetch(&oci_ref(&server, &legacy)).await.unwrap();
        assert_eq!(&*f.bytes, &wasm[..]);
    }

    #[tokio::test]
    async fn unknown_digest_and_size_limit() {
        let wasm = vec![1u8; 2048];
        let (manifest, blobs) = artifact(WASM_CONFIG_MEDIA_TYPE, &[(WASM_LAYER_MEDIA_TYPE, &wasm)]);
        let server = registry(vec![manifest.clone()], blobs).await;
        let dir = tempdir("oci-errors");

        let small = ctx(&server, &dir, 1024);
        let e = small.fetch(&oci_ref(&server, &manifest)).await.unwrap_err();
        assert_eq!(e.kind, FetchErrorKind::TooLarge);
        assert!(
            e.message
                .contains("2048 bytes, over the plugin size limit of 1024"),
            "{e}"
        );

        let other = b"some other manifest".to_vec();
        let e = small.fetch(&oci_ref(&server, &other)).await.unwrap_err();
        assert_eq!(e.kind, FetchErrorKind::NotFound, "{e}");
        assert!(e.message.contains("check the repository and digest"), "{e}");
    }
}
