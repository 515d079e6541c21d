//! `oci://` sources: Wasm artifacts in OCI registries, pinned by manifest
//! digest, optionally signed (cosign's layout, see [`super::signature`]);
//! and `syncweave plugin push`, which publishes them.
//!
//! Two artifact layouts are read: the one Kubewarden's `kwctl push` and
//! wasm-to-oci write, and `syncweave plugin push` writes (config
//! `application/vnd.wasm.config.v1+json`, one
//! `application/vnd.wasm.content.layer.v1+wasm` layer), and the CNCF TAG
//! Runtime one (config `application/vnd.wasm.config.v0+json`, one
//! `application/wasm` layer) that `wkg oci push` writes.
//!
//! The manifest, the layer and signature payloads are each read with a size
//! cap before anything is parsed or hashed, and the manifest and layer are
//! stored in the content-addressed cache under their digests, so a pinned
//! reference resolves offline once pulled. Signatures are looked up in the
//! registry on every check (one can be added or removed under the same
//! digest); only when the registry is unreachable is the signature that
//! verified last time verified again from the cache.

use std::collections::BTreeMap;

use bytes::Bytes;
use futures::StreamExt;
use oci_client::Reference;
use serde::Deserialize;
use serde_json::json;

use super::distribution::{
    DOCKER_LIST, OCI_INDEX, OCI_MANIFEST, Operation, RegistryError, Session,
};
use super::signature::{self, PublicKeys};
use super::{Access, BlobCache, FetchError, FetchErrorKind, Fetched, Inner, PluginRef};

/// The CNCF TAG Runtime Wasm artifact media types.
pub const WASM_CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";
pub const WASM_LAYER_MEDIA_TYPE: &str = "application/wasm";
/// What Kubewarden (`kwctl push`) and wasm-to-oci push, and what
/// `syncweave plugin push` writes, so other tools can pull it.
pub const KUBEWARDEN_CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v1+json";
pub const KUBEWARDEN_LAYER_MEDIA_TYPE: &str = "application/vnd.wasm.content.layer.v1+wasm";
/// Manifests are capped before they are parsed: the OCI distribution spec
/// lets registries refuse manifests over 4 MiB (distribution's does), so no
/// artifact has a bigger one, and a bigger answer (a misbehaving or hostile
/// server) is not buffered. A Wasm artifact's manifest is well under 1 KiB.
pub const MAX_MANIFEST_BYTES: u64 = 4 << 20;

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
    #[serde(default)]
    annotations: BTreeMap<String, String>,
}

/// Registry, API host and repository of `reference`.
pub(crate) struct Parsed {
    pub registry: String,
    pub api_host: String,
    pub repository: String,
    pub tag: Option<String>,
}

pub(crate) fn parse_reference(reference: &str) -> Result<Parsed, String> {
    let image = Reference::try_from(reference)
        .map_err(|e| format!("{reference:?} is not a valid OCI reference: {e}"))?;
    Ok(Parsed {
        registry: image.registry().to_string(),
        api_host: image.resolve_registry().to_string(),
        repository: image.repository().to_string(),
        tag: image.tag().map(str::to_string),
    })
}

fn fetch_error(r: &PluginRef, e: RegistryError) -> FetchError {
    FetchError::new(r, e.kind, e.message)
}

pub(super) async fn fetch(
    inner: &Inner,
    r: &PluginRef,
    reference: &str,
    manifest_digest: &str,
    access: &Access,
) -> Result<Fetched, FetchError> {
    let max = inner.opts.max_bytes;
    let p = parse_reference(reference)
        .map_err(|m| FetchError::new(r, FetchErrorKind::InvalidSource, m))?;
    let mut session = Session::new(
        &inner.http,
        &p.registry,
        &p.api_host,
        &p.repository,
        access.credentials.as_ref(),
        &access.anonymous_hint,
        Operation::Pull,
    );

    let (manifest_bytes, manifest_cached) = match inner
        .cache
        .as_ref()
        .and_then(|c| c.get(manifest_digest, MAX_MANIFEST_BYTES))
    {
        Some(b) => {
            // The bytes are here, but whether these credentials (or none)
            // may read them is the registry's call: ask it, so a plugin
            // pulled once with a pull Secret is not served to a WasmPlugin
            // without one. Only when it cannot be reached does the cached
            // copy stand on its own (an agent restart during an outage).
            match session.manifest_exists(manifest_digest).await {
                Ok(_) => {}
                Err(e) if matches!(e.kind, FetchErrorKind::Network | FetchErrorKind::Timeout) => {
                    tracing::debug!(source = %r, error = %e.message, "registry unreachable; using the cached manifest");
                }
                Err(e) => return Err(fetch_error(r, e)),
            }
            (b, true)
        }
        None => {
            let got = session
                .manifest(manifest_digest, MAX_MANIFEST_BYTES)
                .await
                .map_err(|e| fetch_error(r, e))?;
            let Some((bytes, _)) = got else {
                return Err(FetchError::new(
                    r,
                    FetchErrorKind::NotFound,
                    format!(
                        "{} has no manifest {manifest_digest} in repository {}; check the \
                         repository and digest (`syncweave plugin push` prints the reference \
                         to use; `oras manifest fetch <ref>` shows what is there)",
                        p.registry, p.repository
                    ),
                ));
            };
            (bytes, false)
        }
    };
    // Checked here for the cached copy too: the digest is the pin.
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
    // Before a single byte of the component is downloaded.
    let signature = match &access.keys {
        Some(keys) => Some(
            verify_signature(&mut session, inner.cache.as_ref(), r, manifest_digest, keys).await?,
        ),
        None => None,
    };
    if !manifest_cached && let Some(c) = &inner.cache {
        c.put(&manifest_bytes);
    }
    if let Some(bytes) = inner.cache.as_ref().and_then(|c| c.get(&layer.digest, max)) {
        let mut f = Fetched::new(bytes, true);
        f.signature = signature;
        return Ok(f);
    }

    let resp = session
        .blob(&layer.digest)
        .await
        .map_err(|e| fetch_error(r, e))?
        .ok_or_else(|| {
            FetchError::new(
                r,
                FetchErrorKind::NotFound,
                format!(
                    "{} has the manifest but not its Wasm layer {} in {}; the artifact is \
                     incomplete: push it again",
                    p.registry, layer.digest, p.repository
                ),
            )
        })?;
    if let Some(len) = resp.content_length()
        && len > max
    {
        return Err(super::too_large(r, "the Wasm layer", len, max));
    }
    let mut body = Vec::with_capacity(layer.size as usize);
    let mut stream = resp.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| {
            FetchError::new(
                r,
                if e.is_timeout() {
                    FetchErrorKind::Timeout
                } else {
                    FetchErrorKind::Network
                },
                format!(
                    "downloading the Wasm layer from {}: {}",
                    p.registry,
                    super::error_chain(&e)
                ),
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
    let mut fetched = Fetched::new(body, false);
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
    fetched.signature = signature;
    Ok(fetched)
}

/// Where signature data is read from: the registry, or (when it cannot be
/// reached) the copies kept from the last successful check.
enum SigSource<'s, 'a> {
    Online(&'s mut Session<'a>),
    Cached(&'s BlobCache),
}

impl SigSource<'_, '_> {
    async fn payload(&mut self, digest: &str) -> Result<Option<Vec<u8>>, RegistryError> {
        match self {
            SigSource::Online(session) => match session.blob(digest).await? {
                Some(resp) => super::distribution::read_capped(
                    resp,
                    signature::MAX_PAYLOAD_BYTES,
                    "the signature payload",
                )
                .await
                .map(Some),
                None => Ok(None),
            },
            SigSource::Cached(cache) => Ok(cache.get(digest, signature::MAX_PAYLOAD_BYTES)),
        }
    }
}

/// `<cache>/signatures/<hex>`: the digest of the signature manifest that
/// last verified artifact `sha256:<hex>`.
fn signature_index(cache: &BlobCache, digest: &str) -> Option<std::path::PathBuf> {
    cache.path(digest)?;
    Some(
        cache
            .dir()
            .join("signatures")
            .join(digest.trim_start_matches("sha256:")),
    )
}

/// Check that one of `keys` signed `digest` (cosign's tag-based layout);
/// returns what verified it, for the Fetched condition.
///
/// The signature manifest and payload that verified are kept in `cache`:
/// when the registry cannot be reached later (an agent restart during an
/// outage), they are verified again from there. That is as safe as reading
/// them from the registry: the signature itself is checked every time, and
/// only a signature by a trusted key over this digest passes.
async fn verify_signature(
    session: &mut Session<'_>,
    cache: Option<&BlobCache>,
    r: &PluginRef,
    digest: &str,
    keys: &PublicKeys,
) -> Result<String, FetchError> {
    let tag = signature::signature_tag(digest);
    let at = format!("{}/{}:{tag}", session.registry(), session.repository());
    let sign_hint = format!(
        "sign it with `syncweave plugin push --sign KEY` or `cosign sign --key KEY \
         {}/{}@{digest}`",
        session.registry(),
        session.repository()
    );
    let missing = |m: String| FetchError::new(r, FetchErrorKind::SignatureMissing, m);
    let online = session.manifest(&tag, MAX_MANIFEST_BYTES).await;
    let cached_copy = || {
        let cache = cache?;
        let index = std::fs::read_to_string(signature_index(cache, digest)?).ok()?;
        let bytes = cache.get(index.trim(), MAX_MANIFEST_BYTES)?;
        Some((cache, bytes))
    };
    let (bytes, mut source, offline_note) = match online {
        Ok(Some((bytes, _))) => (bytes, SigSource::Online(session), ""),
        Ok(None) => {
            return Err(missing(format!(
                "spec.signature requires {digest} to be signed by {}, but it has no signature \
                 ({at} does not exist); {sign_hint}",
                keys.describe()
            )));
        }
        Err(e) if matches!(e.kind, FetchErrorKind::Network | FetchErrorKind::Timeout) => {
            match cached_copy() {
                Some((cache, bytes)) => (
                    bytes,
                    SigSource::Cached(cache),
                    " (from the copy kept at the last check: the registry is unreachable)",
                ),
                None => return Err(FetchError::new(r, e.kind, e.message)),
            }
        }
        Err(e) => return Err(FetchError::new(r, e.kind, e.message)),
    };
    let m: Manifest = serde_json::from_slice(&bytes).map_err(|e| {
        FetchError::new(
            r,
            FetchErrorKind::SignatureInvalid,
            format!("{at} is not an OCI manifest ({e}); it cannot hold cosign signatures"),
        )
    })?;
    let layers: Vec<&Descriptor> = m
        .layers
        .iter()
        .filter(|l| l.media_type == signature::SIMPLE_SIGNING_MEDIA_TYPE)
        .take(64)
        .collect();
    if layers.is_empty() {
        return Err(missing(format!(
            "spec.signature requires {digest} to be signed by {}, but {at} holds no \
             simple-signing signatures (key-based cosign signatures; Sigstore bundles are not \
             read); {sign_hint}",
            keys.describe()
        )));
    }
    let one_key = if keys.keys.len() == 1 {
        "this key"
    } else {
        "any of these keys"
    };
    let mut why = Vec::new();
    for (i, l) in layers.iter().enumerate() {
        let n = i + 1;
        let Some(sig) = l.annotations.get(signature::SIGNATURE_ANNOTATION) else {
            why.push(format!(
                "signature {n} has no {} annotation",
                signature::SIGNATURE_ANNOTATION
            ));
            continue;
        };
        if l.size < 0 || l.size as u64 > signature::MAX_PAYLOAD_BYTES {
            why.push(format!(
                "signature {n}'s payload is {} bytes, too large",
                l.size
            ));
            continue;
        }
        let payload = match source.payload(&l.digest).await {
            Ok(Some(p)) => p,
            Ok(None) => {
                why.push(format!("signature {n}'s payload {} is missing", l.digest));
                continue;
            }
            Err(e) => return Err(FetchError::new(r, e.kind, e.message)),
        };
        if super::sha256_digest(&payload) != l.digest {
            why.push(format!(
                "signature {n}'s payload does not match its digest {}",
                l.digest
            ));
            continue;
        }
        let Some(key) = keys.keys.iter().find(|k| k.verifies(&payload, sig)) else {
            why.push(format!("signature {n} was not made by {one_key}"));
            continue;
        };
        match signature::payload_digest(&payload) {
            Ok(d) if d == digest => {
                if let (SigSource::Online(_), Some(cache)) = (&source, cache) {
                    cache.put(&bytes);
                    cache.put(&payload);
                    if let Some(index) = signature_index(cache, digest)
                        && let Err(e) = syncweave_runtime::fsutil::write_atomically(
                            &index,
                            super::sha256_digest(&bytes).as_bytes(),
                        )
                    {
                        tracing::warn!(path = %index.display(), error = %e, "cannot keep the verified signature for offline checks; continuing");
                    }
                }
                return Ok(format!(
                    "signature by key {} (from {}) verified{offline_note}",
                    key.fingerprint, keys.origin
                ));
            }
            Ok(other) => why.push(format!(
                "signature {n} is by key {}, but it signs {other}, not this digest (copied from \
                 another artifact?)",
                key.fingerprint
            )),
            Err(e) => why.push(format!(
                "signature {n} is by key {}, but {e}",
                key.fingerprint
            )),
        }
    }
    Err(FetchError::new(
        r,
        FetchErrorKind::SignatureInvalid,
        format!(
            "spec.signature requires {digest} to be signed by {}, and none of the {} \
             signature(s) at {at}{offline_note} is valid: {}; sign it with the private key of \
             one of these keys, or fix spec.signature",
            keys.describe(),
            layers.len(),
            why.join("; ")
        ),
    ))
}

/// What to publish.
pub struct PushRequest<'a> {
    /// `registry/repository:tag`.
    pub reference: &'a str,
    pub wasm: Bytes,
    /// Manifest annotations (`org.opencontainers.image.*` and the user's).
    pub annotations: BTreeMap<String, String>,
    pub credentials: Option<super::Credentials>,
    /// Sign the pushed digest with this key (cosign's layout).
    pub sign: Option<&'a p256::ecdsa::SigningKey>,
}

/// What was published.
#[derive(Debug, Clone)]
pub struct Pushed {
    /// `oci://registry/repository@sha256:…`: the reference to pin.
    pub pinned: String,
    pub digest: String,
    pub layer_digest: String,
    /// The component was uploaded (false: the registry had it already).
    pub uploaded: bool,
    /// `registry/repository:sha256-….sig` when signed.
    pub signature_tag: Option<String>,
}

/// Push `req.wasm` as a Wasm artifact in Kubewarden's layout (which
/// `kwctl`, wasm-to-oci and every syncweave pull read), tag it, and sign
/// its digest when asked. `progress` hears each step.
pub(crate) async fn push(
    http: &reqwest::Client,
    req: PushRequest<'_>,
    progress: &dyn Fn(String),
) -> Result<Pushed, String> {
    let p = parse_reference(req.reference)?;
    let Some(tag) = p.tag.clone() else {
        return Err(format!(
            "oci://{} names no tag; push to a tag (oci://{}/{}:v1), the digest to pin is printed \
             afterwards",
            req.reference, p.registry, p.repository
        ));
    };
    if req.reference.contains('@') {
        return Err(format!(
            "oci://{}: push to a tag, not a digest (the digest is the result)",
            req.reference
        ));
    }
    let hint = "the registry requires credentials: `docker login` to it, or pass \
                --docker-config with an auths entry for it";
    let mut session = Session::new(
        http,
        &p.registry,
        &p.api_host,
        &p.repository,
        req.credentials.as_ref(),
        hint,
        Operation::Push,
    );
    let msg = |e: RegistryError| e.message;
    let config = Bytes::from_static(b"{}");
    let config_digest = super::sha256_digest(&config);
    let layer_digest = super::sha256_digest(&req.wasm);
    let size = req.wasm.len();
    progress(format!(
        "pushing {size} bytes ({:.1} MiB, {layer_digest}) to {}/{}",
        size as f64 / (1 << 20) as f64,
        p.registry,
        p.repository
    ));
    let started = std::time::Instant::now();
    let uploaded = session
        .push_blob(req.wasm.clone(), &layer_digest)
        .await
        .map_err(msg)?;
    if uploaded {
        progress(format!(
            "uploaded the component in {:.1?}",
            started.elapsed()
        ));
    } else {
        progress("the registry already has this component; not uploaded again".to_string());
    }
    session
        .push_blob(config.clone(), &config_digest)
        .await
        .map_err(msg)?;
    let mut manifest = json!({
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": {
            "mediaType": KUBEWARDEN_CONFIG_MEDIA_TYPE,
            "digest": config_digest,
            "size": config.len(),
        },
        "layers": [{
            "mediaType": KUBEWARDEN_LAYER_MEDIA_TYPE,
            "digest": layer_digest,
            "size": size,
        }],
    });
    if !req.annotations.is_empty() {
        manifest["annotations"] = json!(req.annotations);
    }
    let manifest = Bytes::from(serde_json::to_vec(&manifest).expect("JSON serializes"));
    let digest = session
        .put_manifest(&tag, OCI_MANIFEST, manifest)
        .await
        .map_err(msg)?;
    progress(format!(
        "tagged {}/{}:{tag} = {digest}",
        p.registry, p.repository
    ));

    let mut signature_tag = None;
    if let Some(key) = req.sign {
        let tag = signature::signature_tag(&digest);
        let docker_reference = format!("{}/{}", p.registry, p.repository);
        let payload = Bytes::from(signature::payload(&docker_reference, &digest));
        let payload_digest = super::sha256_digest(&payload);
        let layer = signature::Layer {
            digest: payload_digest.clone(),
            size: payload.len() as u64,
            signature: signature::sign(key, &payload),
        };
        // Other signers' signatures stay.
        let existing = session
            .manifest(&tag, MAX_MANIFEST_BYTES)
            .await
            .map_err(msg)?
            .map(|(b, _)| b);
        let (sig_manifest, sig_config) = signature::signature_manifest(existing.as_deref(), &layer);
        session
            .push_blob(payload, &payload_digest)
            .await
            .map_err(msg)?;
        let sig_config = Bytes::from(sig_config);
        let sig_config_digest = super::sha256_digest(&sig_config);
        session
            .push_blob(sig_config, &sig_config_digest)
            .await
            .map_err(msg)?;
        session
            .put_manifest(&tag, OCI_MANIFEST, Bytes::from(sig_manifest))
            .await
            .map_err(msg)?;
        let fp = signature::PublicKey::of(*key.verifying_key()).fingerprint;
        progress(format!(
            "signed {digest} with key {fp} ({docker_reference}:{tag})"
        ));
        signature_tag = Some(format!("{docker_reference}:{tag}"));
    }
    Ok(Pushed {
        pinned: format!("oci://{}/{}@{digest}", p.registry, p.repository),
        digest,
        layer_digest,
        uploaded,
        signature_tag,
    })
}

/// Verify `digest`'s signature with `keys` on its own (`plugin verify`).
pub(crate) async fn verify(
    http: &reqwest::Client,
    r: &PluginRef,
    access: &Access,
) -> Result<String, FetchError> {
    let super::Location::Oci {
        reference,
        manifest_digest,
    } = &r.location
    else {
        return Err(FetchError::new(
            r,
            FetchErrorKind::InvalidSource,
            "signatures are kept in OCI registries; give an oci://…@sha256:… reference",
        ));
    };
    let Some(keys) = &access.keys else {
        return Err(FetchError::new(
            r,
            FetchErrorKind::InvalidSource,
            "no public key to verify with",
        ));
    };
    let p = parse_reference(reference)
        .map_err(|m| FetchError::new(r, FetchErrorKind::InvalidSource, m))?;
    let mut session = Session::new(
        http,
        &p.registry,
        &p.api_host,
        &p.repository,
        access.credentials.as_ref(),
        &access.anonymous_hint,
        Operation::Pull,
    );
    verify_signature(&mut session, None, r, manifest_digest, keys).await
}

/// The one Wasm layer of a Wasm artifact manifest, or why there is none.
fn wasm_layer(r: &PluginRef, manifest: &[u8]) -> Result<Descriptor, FetchError> {
    let not_wasm = |msg: String| FetchError::new(r, FetchErrorKind::NotWasmArtifact, msg);
    let push_hint = "push the component as a Wasm artifact: `syncweave plugin push plugin.wasm \
                     oci://<registry>/<repo>:<tag>` (or `kwctl push`, `wkg oci push`)";
    let m: Manifest = serde_json::from_slice(manifest)
        .map_err(|e| not_wasm(format!("the manifest is not valid JSON ({e}); {push_hint}")))?;
    if m.manifests.is_some() || matches!(m.media_type.as_deref(), Some(OCI_INDEX | DOCKER_LIST)) {
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
        KUBEWARDEN_CONFIG_MEDIA_TYPE => KUBEWARDEN_LAYER_MEDIA_TYPE,
        other => {
            return Err(not_wasm(format!(
                "config media type is {other:?}, neither {KUBEWARDEN_CONFIG_MEDIA_TYPE:?} nor \
                 {WASM_CONFIG_MEDIA_TYPE:?}, so this is not a Wasm artifact (a container \
                 image?); {push_hint}"
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

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::time::Duration;

    use serde_json::json;

    use super::super::testserver::{Response, TestServer};
    use super::super::{FetchContext, FetchOptions, sha256_digest};
    use super::*;
    use crate::testing::tempdir;

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
                    .header("Content-Type", OCI_MANIFEST)
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
            "mediaType": OCI_MANIFEST,
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
            cache_bound: None,
            max_bytes,
            timeout: Duration::from_secs(20),
            connect_timeout: Duration::from_secs(5),
            extra_root_certs: vec![server.ca_pem().into_bytes()],
            ca_file: None,
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

        // Again: manifest and layer both come from the cache; the registry
        // is only asked whether the manifest may still be read.
        let before = server.requests().len();
        let f = ctx.fetch(&r).await.unwrap();
        assert!(f.cached);
        assert_eq!(
            server.requests()[before..],
            [format!(
                "HEAD /v2/plugins/x/manifests/{}",
                sha256_digest(&manifest)
            )]
        );

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
            KUBEWARDEN_CONFIG_MEDIA_TYPE,
            &[(KUBEWARDEN_LAYER_MEDIA_TYPE, &wasm)],
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

        // Kubewarden's (and wasm-to-oci's) layout works too.
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

    /// The manifest is capped before it is parsed or hashed: a server that
    /// answers with more than 4 MiB gets an error, not a 4 GiB buffer.
    #[tokio::test]
    async fn manifests_are_capped_before_parsing() {
        let huge = vec![b' '; (MAX_MANIFEST_BYTES + 1) as usize];
        let server = registry(vec![huge.clone()], vec![]).await;
        let dir = tempdir("oci-huge");
        let ctx = ctx(&server, &dir, 1 << 20);
        let e = ctx.fetch(&oci_ref(&server, &huge)).await.unwrap_err();
        assert_eq!(e.kind, FetchErrorKind::TooLarge, "{e}");
        assert!(e.message.contains("over the limit of 4194304 bytes"), "{e}");
    }

    /// An anonymous pull the registry refuses says how to give credentials.
    #[tokio::test]
    async fn refused_anonymous_pulls_say_what_to_do() {
        let server = TestServer::start(|_| {
            Response::status(401)
                .header("WWW-Authenticate", "Basic realm=\"test\"")
                .with_body(
                    br#"{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}"#,
                )
        })
        .await;
        let dir = tempdir("oci-401");
        let ctx = ctx(&server, &dir, 1 << 20);
        let e = ctx.fetch(&oci_ref(&server, b"m")).await.unwrap_err();
        assert_eq!(e.kind, FetchErrorKind::Denied, "{e}");
        assert!(e.message.contains("requires credentials"), "{e}");
        assert!(e.message.contains("spec.imagePullSecret"), "{e}");
    }

    /// Serve exactly `routes` (path → body); anything else is a 404 with a
    /// registry error body.
    async fn serve(routes: HashMap<String, Vec<u8>>) -> TestServer {
        let routes = std::sync::Arc::new(routes);
        TestServer::start(move |path| match routes.get(path) {
            Some(b) => Response::ok(b.clone()).header("Content-Type", OCI_MANIFEST),
            None => Response::status(404)
                .with_body(br#"{"errors":[{"code":"MANIFEST_UNKNOWN","message":"unknown"}]}"#),
        })
        .await
    }

    fn with_keys(pem: &str) -> Access {
        Access {
            keys: Some(PublicKeys::parse(pem, "spec.signature.publicKey").unwrap()),
            ..Access::anonymous()
        }
    }

    /// A signature is checked before the component is downloaded, a wrong
    /// key or a missing signature is refused saying so, and the signature
    /// that verified is verified again from the cache when the registry is
    /// down.
    #[tokio::test]
    async fn signatures_are_checked_first_and_kept_for_outages() {
        let wasm = b"\0asm\x0d\0\x01\0 signed component".to_vec();
        let (signed, mut blobs) = artifact(
            KUBEWARDEN_CONFIG_MEDIA_TYPE,
            &[(KUBEWARDEN_LAYER_MEDIA_TYPE, &wasm)],
        );
        let (unsigned, more) = artifact(WASM_CONFIG_MEDIA_TYPE, &[(WASM_LAYER_MEDIA_TYPE, &wasm)]);
        blobs.extend(more);
        let digest = sha256_digest(&signed);
        let key = signature::generate().unwrap();
        let payload = signature::payload("127.0.0.1/plugins/x", &digest);
        let layer = signature::Layer {
            digest: sha256_digest(&payload),
            size: payload.len() as u64,
            signature: signature::sign(&key, &payload),
        };
        let (sig_manifest, _) = signature::signature_manifest(None, &layer);
        let mut routes = HashMap::new();
        for m in [&signed, &unsigned] {
            routes.insert(
                format!("/v2/plugins/x/manifests/{}", sha256_digest(m)),
                m.clone(),
            );
        }
        routes.insert(
            format!(
                "/v2/plugins/x/manifests/{}",
                signature::signature_tag(&digest)
            ),
            sig_manifest,
        );
        for b in blobs.iter().chain([&payload]) {
            routes.insert(
                format!("/v2/plugins/x/blobs/{}", sha256_digest(b)),
                b.clone(),
            );
        }
        let server = serve(routes).await;
        let good = signature::public_pem(&key).unwrap();
        let other = signature::public_pem(&signature::generate().unwrap()).unwrap();
        let wasm_blob = format!("GET /v2/plugins/x/blobs/{}", sha256_digest(&wasm));

        // Another key: refused, and the component is never downloaded.
        let dir = tempdir("oci-sig-wrong");
        let c = ctx(&server, &dir, 1 << 20);
        let e = c
            .fetch_with(&oci_ref(&server, &signed), &with_keys(&other))
            .await
            .unwrap_err();
        assert_eq!(e.kind, FetchErrorKind::SignatureInvalid, "{e}");
        assert!(
            e.message.contains("signature 1 was not made by this key"),
            "{e}"
        );
        assert!(e.message.contains(&digest), "{e}");
        assert!(
            !server.requests().contains(&wasm_blob),
            "{:?}",
            server.requests()
        );

        // No signature at all.
        let e = c
            .fetch_with(&oci_ref(&server, &unsigned), &with_keys(&good))
            .await
            .unwrap_err();
        assert_eq!(e.kind, FetchErrorKind::SignatureMissing, "{e}");
        assert!(e.message.contains("has no signature"), "{e}");

        // The right key: fetched, and the condition can say what verified it.
        let dir = tempdir("oci-sig-good");
        let c = ctx(&server, &dir, 1 << 20);
        let f = c
            .fetch_with(&oci_ref(&server, &signed), &with_keys(&good))
            .await
            .unwrap();
        assert_eq!(&*f.bytes, &wasm[..]);
        let how = f.signature.unwrap();
        assert!(how.starts_with("signature by key sha256:"), "{how}");
        assert!(!how.contains("unreachable"), "{how}");

        // The registry goes away: the kept signature is verified again (a
        // new context: the old one's pooled connection would still work).
        let r = oci_ref(&server, &signed);
        drop(server);
        let c = empty_ctx(&dir);
        let f = c.fetch_with(&r, &with_keys(&good)).await.unwrap();
        assert!(f.cached);
        assert!(f.signature.unwrap().contains("the registry is unreachable"));
        // ... but only for a key that signed it.
        let e = c.fetch_with(&r, &with_keys(&other)).await.unwrap_err();
        assert_eq!(e.kind, FetchErrorKind::SignatureInvalid, "{e}");
        // Without a kept copy, an outage is a network failure (retried).
        let e = empty_ctx(&tempdir("oci-sig-none"))
            .fetch_with(&r, &with_keys(&good))
            .await
            .unwrap_err();
        assert!(e.kind.is_transient(), "{e}");
    }

    /// A context with the cache under `dir` and no extra CA.
    fn empty_ctx(dir: &std::path::Path) -> FetchContext {
        FetchContext::new(FetchOptions {
            service: None,
            builtin_dirs: vec![],
            cache_dir: Some(dir.join("cache")),
            cache_bound: None,
            max_bytes: 1 << 20,
            timeout: Duration::from_secs(20),
            connect_timeout: Duration::from_secs(5),
            extra_root_certs: vec![],
            ca_file: None,
        })
        .unwrap()
    }
}
