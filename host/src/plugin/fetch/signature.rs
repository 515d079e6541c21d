//! Cosign-style signatures of OCI artifacts, key-based (no Fulcio, no
//! Rekor): what `cosign sign --key` writes and `cosign verify --key` checks.
//!
//! The signature of the artifact whose manifest digest is `sha256:<hex>`
//! lives in the same repository under the tag `sha256-<hex>.sig`: an OCI
//! image manifest whose layers are "simple signing" payloads (media type
//! [`SIMPLE_SIGNING_MEDIA_TYPE`]), each a small JSON document naming the
//! signed digest in `critical.image.docker-manifest-digest`, with the
//! base64 ASN.1 ECDSA-P256/SHA-256 signature of the payload bytes in the
//! layer annotation [`SIGNATURE_ANNOTATION`]. Several signatures (several
//! signers, re-signing) are several layers of that one manifest.

use base64::Engine as _;
use p256::ecdsa::signature::{Signer as _, Verifier as _};
use p256::ecdsa::{Signature, SigningKey, VerifyingKey};
use p256::pkcs8::{
    DecodePrivateKey, DecodePublicKey, EncodePrivateKey, EncodePublicKey, LineEnding,
};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

pub const SIMPLE_SIGNING_MEDIA_TYPE: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";
/// `critical.type` of a cosign image signature payload.
pub const SIGNATURE_TYPE: &str = "cosign container image signature";
/// The config media type cosign gives signature manifests.
pub const SIGNATURE_CONFIG_MEDIA_TYPE: &str = "application/vnd.oci.image.config.v1+json";
/// Simple-signing payloads are a few hundred bytes; anything near this is
/// not one.
pub const MAX_PAYLOAD_BYTES: u64 = 64 << 10;

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// `sha256-<hex>.sig`, the tag of `digest`'s signatures.
pub fn signature_tag(digest: &str) -> String {
    format!("{}.sig", digest.replacen(':', "-", 1))
}

/// The simple-signing payload cosign signs for `digest` in repository
/// `docker_reference` (`registry/repo`).
pub fn payload(docker_reference: &str, digest: &str) -> Vec<u8> {
    // serde_json writes object keys sorted, which is the order cosign uses.
    let v = json!({
        "critical": {
            "identity": {"docker-reference": docker_reference},
            "image": {"docker-manifest-digest": digest},
            "type": SIGNATURE_TYPE,
        },
        "optional": null,
    });
    serde_json::to_vec(&v).expect("a JSON value serializes")
}

/// Member `key` of object `v`, matching case-insensitively as Go's JSON
/// decoder does (cosign reads payloads with it, so `Docker-manifest-digest`
/// is the same field).
fn member<'v>(v: &'v Value, key: &str) -> Option<&'v Value> {
    let o = v.as_object()?;
    o.get(key).or_else(|| {
        o.iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v)
    })
}

/// The digest a simple-signing payload vouches for, or why it is not a
/// cosign image signature payload.
pub fn payload_digest(payload: &[u8]) -> Result<String, String> {
    let v: Value =
        serde_json::from_slice(payload).map_err(|e| format!("the payload is not JSON ({e})"))?;
    let critical = member(&v, "critical").ok_or("the payload has no critical section")?;
    let kind = member(critical, "type")
        .and_then(Value::as_str)
        .unwrap_or("");
    if kind != SIGNATURE_TYPE {
        return Err(format!(
            "the payload's critical.type is {kind:?}, not {SIGNATURE_TYPE:?}"
        ));
    }
    member(critical, "image")
        .and_then(|i| member(i, "docker-manifest-digest"))
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| "the payload names no critical.image.docker-manifest-digest".to_string())
}

/// One trusted public key.
#[derive(Clone)]
pub struct PublicKey {
    key: VerifyingKey,
    /// `sha256:<16 hex>` of its DER SubjectPublicKeyInfo: how messages name it.
    pub fingerprint: String,
}

impl std::fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PublicKey({})", self.fingerprint)
    }
}

impl PublicKey {
    pub fn of(key: VerifyingKey) -> PublicKey {
        let der = key
            .to_public_key_der()
            .map(|d| d.as_bytes().to_vec())
            .unwrap_or_default();
        PublicKey {
            fingerprint: format!("sha256:{}", &hex::encode(Sha256::digest(der))[..16]),
            key,
        }
    }

    /// Whether `signature` (base64 of an ASN.1 DER ECDSA signature, or of
    /// the 64-byte r‖s form) is this key's over `payload`.
    pub fn verifies(&self, payload: &[u8], signature: &str) -> bool {
        let Ok(raw) = B64.decode(signature.trim()) else {
            return false;
        };
        let sig = Signature::from_der(&raw).or_else(|_| Signature::from_slice(&raw));
        sig.is_ok_and(|s| self.key.verify(payload, &s).is_ok())
    }
}

/// The keys a plugin may be signed with, and where they were read from.
#[derive(Clone, Debug)]
pub struct PublicKeys {
    pub keys: Vec<PublicKey>,
    /// e.g. `spec.signature.publicKey` or `ConfigMap plugins/keys key cosign.pub`.
    pub origin: String,
}

impl PublicKeys {
    /// Every `PUBLIC KEY` PEM block of `text` (at least one).
    pub fn parse(text: &str, origin: &str) -> Result<PublicKeys, String> {
        let mut keys = Vec::new();
        for (label, block) in pem_blocks(text) {
            match label.as_str() {
                "PUBLIC KEY" => {
                    let key = VerifyingKey::from_public_key_pem(&block).map_err(|e| {
                        format!(
                            "{origin}: PEM block {} is not an ECDSA P-256 public key ({e}); \
                             signatures are ECDSA P-256 (`cosign generate-key-pair`, \
                             `syncweave plugin keygen`)",
                            keys.len() + 1
                        )
                    })?;
                    keys.push(PublicKey::of(key));
                }
                l if l.contains("PRIVATE KEY") => {
                    return Err(format!(
                        "{origin} holds a {l}; it must hold only the public key (the .pub \
                         file): remove the private key from there and treat it as leaked"
                    ));
                }
                other => {
                    return Err(format!(
                        "{origin} holds a {other:?} PEM block; give the public key \
                         (-----BEGIN PUBLIC KEY-----)"
                    ));
                }
            }
        }
        if keys.is_empty() {
            return Err(format!(
                "{origin} holds no PEM public key (-----BEGIN PUBLIC KEY----- …); paste the \
                 whole .pub file"
            ));
        }
        Ok(PublicKeys {
            keys,
            origin: origin.to_string(),
        })
    }

    /// `key sha256:… (origin)` or `keys sha256:…, sha256:… (origin)`.
    pub fn describe(&self) -> String {
        let fps: Vec<&str> = self.keys.iter().map(|k| k.fingerprint.as_str()).collect();
        let noun = if fps.len() == 1 { "key" } else { "keys" };
        format!("{noun} {} from {}", fps.join(", "), self.origin)
    }
}

/// `(label, whole block)` of each PEM block in `text`.
fn pem_blocks(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("-----BEGIN ") {
        let after = &rest[start + 11..];
        let Some(label_end) = after.find("-----") else {
            break;
        };
        let label = after[..label_end].to_string();
        let end_marker = format!("-----END {label}-----");
        let Some(end) = rest[start..].find(&end_marker) else {
            out.push((label, rest[start..].to_string()));
            break;
        };
        let stop = start + end + end_marker.len();
        out.push((label, rest[start..stop].to_string()));
        rest = &rest[stop..];
    }
    out
}

/// A private signing key, from a PEM file: PKCS#8 (`PRIVATE KEY`, what
/// `syncweave plugin keygen` writes), SEC1 (`EC PRIVATE KEY`, what
/// `openssl ecparam -genkey` writes) or cosign's encrypted format
/// (`ENCRYPTED SIGSTORE PRIVATE KEY`, decrypted with `password`).
pub fn load_signing_key(
    pem_text: &str,
    origin: &str,
    password: Option<&str>,
) -> Result<SigningKey, String> {
    let blocks = pem_blocks(pem_text);
    let Some((label, block)) = blocks.into_iter().find(|(l, _)| l.contains("PRIVATE KEY")) else {
        return Err(format!(
            "{origin} holds no PEM private key; make one with `syncweave plugin keygen` (or \
             `openssl ecparam -name prime256v1 -genkey -noout -out key.pem`)"
        ));
    };
    let not_p256 = |e: String| {
        format!("{origin}: the {label} is not an ECDSA P-256 key ({e}); signatures are ECDSA P-256")
    };
    match label.as_str() {
        "PRIVATE KEY" => SigningKey::from_pkcs8_pem(&block).map_err(|e| not_p256(e.to_string())),
        "EC PRIVATE KEY" => p256::SecretKey::from_sec1_pem(&block)
            .map(SigningKey::from)
            .map_err(|e| not_p256(e.to_string())),
        "ENCRYPTED SIGSTORE PRIVATE KEY" | "ENCRYPTED COSIGN PRIVATE KEY" => {
            let Some(password) = password else {
                return Err(format!(
                    "{origin} is a cosign key encrypted with a password; set COSIGN_PASSWORD \
                     to it"
                ));
            };
            let der = decrypt_cosign_key(&block, password).map_err(|e| format!("{origin}: {e}"))?;
            SigningKey::from_pkcs8_der(&der).map_err(|e| not_p256(e.to_string()))
        }
        "ENCRYPTED PRIVATE KEY" => Err(format!(
            "{origin} is a password-protected PKCS#8 key, which is not read here; write an \
             unencrypted copy (`openssl pkcs8 -in {origin} -out plain.pem`) and keep it safe, \
             or use a cosign key with COSIGN_PASSWORD"
        )),
        other => Err(format!(
            "{origin}: a {other} is not a key this can sign with"
        )),
    }
}

/// The PKCS#8 DER inside cosign's encrypted key format: a JSON document
/// (scrypt key derivation, NaCl secretbox) in a PEM block.
fn decrypt_cosign_key(block: &str, password: &str) -> Result<Vec<u8>, String> {
    use crypto_secretbox::aead::Aead as _;
    use crypto_secretbox::{KeyInit as _, XSalsa20Poly1305};
    let body: String = block
        .lines()
        .filter(|l| !l.starts_with("-----") && !l.contains(':'))
        .collect();
    let doc = B64
        .decode(body.trim())
        .map_err(|e| format!("the encrypted key is not base64 ({e})"))?;
    let v: Value = serde_json::from_slice(&doc)
        .map_err(|e| format!("the encrypted key is not cosign's JSON format ({e})"))?;
    let field = |path: &str| -> Result<&Value, String> {
        v.pointer(path)
            .ok_or_else(|| format!("the encrypted key has no {path}"))
    };
    let kdf = field("/kdf/name")?.as_str().unwrap_or("");
    let cipher = field("/cipher/name")?.as_str().unwrap_or("");
    if kdf != "scrypt" || cipher != "nacl/secretbox" {
        return Err(format!(
            "the key is encrypted with {kdf}/{cipher}; only cosign's scrypt/nacl-secretbox \
             format is supported"
        ));
    }
    let num = |p: &str| field(p).and_then(|x| x.as_u64().ok_or(format!("{p} is not a number")));
    let (n, r, p) = (
        num("/kdf/params/N")?,
        num("/kdf/params/r")?,
        num("/kdf/params/p")?,
    );
    if !n.is_power_of_two() || !(2..=1 << 22).contains(&n) {
        return Err(format!("scrypt N={n} is not a power of two in range"));
    }
    let b64 = |p: &str| {
        field(p).and_then(|x| {
            B64.decode(x.as_str().unwrap_or(""))
                .map_err(|e| format!("{p} is not base64 ({e})"))
        })
    };
    let (salt, nonce, ciphertext) = (
        b64("/kdf/salt")?,
        b64("/cipher/nonce")?,
        b64("/ciphertext")?,
    );
    if nonce.len() != 24 {
        return Err("the secretbox nonce is not 24 bytes".into());
    }
    let params = scrypt::Params::new(n.trailing_zeros() as u8, r as u32, p as u32, 32)
        .map_err(|e| format!("bad scrypt parameters: {e}"))?;
    let mut key = [0u8; 32];
    scrypt::scrypt(password.as_bytes(), &salt, &params, &mut key)
        .map_err(|e| format!("scrypt: {e}"))?;
    XSalsa20Poly1305::new(&key.into())
        .decrypt(nonce.as_slice().into(), ciphertext.as_slice())
        .map_err(|_| "wrong password (COSIGN_PASSWORD), or the key file is damaged".to_string())
}

/// base64 of the ASN.1 DER ECDSA-P256/SHA-256 signature of `payload`.
pub fn sign(key: &SigningKey, payload: &[u8]) -> String {
    let sig: Signature = key.sign(payload);
    B64.encode(sig.to_der().as_bytes())
}

/// A new random P-256 key.
pub fn generate() -> Result<SigningKey, String> {
    loop {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).map_err(|e| format!("no randomness from the OS: {e}"))?;
        // Almost every 32-byte string is a valid scalar; retry the rest.
        if let Ok(k) = SigningKey::from_bytes(&bytes.into()) {
            return Ok(k);
        }
    }
}

/// `key` as an unencrypted PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`).
pub fn private_pem(key: &SigningKey) -> Result<String, String> {
    key.to_pkcs8_pem(LineEnding::LF)
        .map(|p| p.to_string())
        .map_err(|e| format!("encoding the private key: {e}"))
}

/// The public half of `key` as PEM (`-----BEGIN PUBLIC KEY-----`).
pub fn public_pem(key: &SigningKey) -> Result<String, String> {
    key.verifying_key()
        .to_public_key_pem(LineEnding::LF)
        .map_err(|e| format!("encoding the public key: {e}"))
}

/// One signature layer: its payload blob and annotation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layer {
    pub digest: String,
    pub size: u64,
    pub signature: String,
}

/// The signature manifest holding `existing`'s layers (those already there
/// for other signers) plus `new` (unless it is there already), and its
/// config blob (an image config whose rootfs lists the layers, as cosign
/// writes it).
pub fn signature_manifest(existing: Option<&[u8]>, new: &Layer) -> (Vec<u8>, Vec<u8>) {
    let mut layers: Vec<Value> = existing
        .and_then(|m| serde_json::from_slice::<Value>(m).ok())
        .and_then(|m| m.get("layers").and_then(Value::as_array).cloned())
        .unwrap_or_default();
    let already = layers.iter().any(|l| {
        l.get("digest").and_then(Value::as_str) == Some(new.digest.as_str())
            && l.pointer(&format!(
                "/annotations/{}",
                SIGNATURE_ANNOTATION.replace('/', "~1")
            ))
            .and_then(Value::as_str)
                == Some(new.signature.as_str())
    });
    if !already {
        layers.push(json!({
            "mediaType": SIMPLE_SIGNING_MEDIA_TYPE,
            "size": new.size,
            "digest": new.digest,
            "annotations": {SIGNATURE_ANNOTATION: new.signature},
        }));
    }
    let diff_ids: Vec<Value> = layers
        .iter()
        .filter_map(|l| l.get("digest").cloned())
        .collect();
    let config = serde_json::to_vec(&json!({
        "architecture": "",
        "created": "0001-01-01T00:00:00Z",
        "history": [{"created": "0001-01-01T00:00:00Z"}],
        "os": "",
        "rootfs": {"type": "layers", "diff_ids": diff_ids},
        "config": {},
    }))
    .expect("JSON serializes");
    let manifest = serde_json::to_vec(&json!({
        "schemaVersion": 2,
        "mediaType": super::distribution::OCI_MANIFEST,
        "config": {
            "mediaType": SIGNATURE_CONFIG_MEDIA_TYPE,
            "size": config.len(),
            "digest": super::sha256_digest(&config),
        },
        "layers": layers,
    }))
    .expect("JSON serializes");
    (manifest, config)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Made with `COSIGN_PASSWORD=syncweave-test cosign generate-key-pair`
    /// (cosign v2.6.5), and a signature `cosign sign --key` made with it:
    /// facts about cosign's formats, checked here without cosign.
    const COSIGN_KEY: &str = include_str!("testdata/cosign.key");
    const COSIGN_PUB: &str = include_str!("testdata/cosign.pub");
    const COSIGN_PAYLOAD: &str = include_str!("testdata/cosign-payload.json");
    const COSIGN_SIGNATURE: &str = include_str!("testdata/cosign-signature.b64");

    #[test]
    fn verifies_what_cosign_signed_and_decrypts_its_keys() {
        let keys = PublicKeys::parse(COSIGN_PUB, "cosign.pub").unwrap();
        assert_eq!(keys.keys.len(), 1);
        let cosign_payload = COSIGN_PAYLOAD.trim_end().as_bytes();
        assert!(keys.keys[0].verifies(cosign_payload, COSIGN_SIGNATURE.trim()));
        assert!(!keys.keys[0].verifies(b"other", COSIGN_SIGNATURE.trim()));
        let digest = payload_digest(cosign_payload).unwrap();
        assert!(digest.starts_with("sha256:"), "{digest}");

        let e = load_signing_key(COSIGN_KEY, "cosign.key", None).unwrap_err();
        assert!(e.contains("COSIGN_PASSWORD"), "{e}");
        let e = load_signing_key(COSIGN_KEY, "cosign.key", Some("wrong")).unwrap_err();
        assert!(e.contains("wrong password"), "{e}");
        let key = load_signing_key(COSIGN_KEY, "cosign.key", Some("syncweave-test")).unwrap();
        assert_eq!(
            PublicKey::of(*key.verifying_key()).fingerprint,
            keys.keys[0].fingerprint
        );
        // What we sign with it, cosign's key verifies.
        let ours = payload("127.0.0.1:5000/team/p", &digest);
        assert!(keys.keys[0].verifies(&ours, &sign(&key, &ours)));
    }

    #[test]
    fn keys_round_trip_and_other_keys_do_not_verify() {
        let key = generate().unwrap();
        let private = private_pem(&key).unwrap();
        let public = public_pem(&key).unwrap();
        assert!(private.starts_with("-----BEGIN PRIVATE KEY-----"));
        let again = load_signing_key(&private, "k", None).unwrap();
        assert_eq!(again.verifying_key(), key.verifying_key());

        let other = generate().unwrap();
        let bundle = format!("{}\n{public}", public_pem(&other).unwrap());
        let keys = PublicKeys::parse(&bundle, "spec.signature.publicKey").unwrap();
        assert_eq!(keys.keys.len(), 2);
        let p = payload("r/x", "sha256:abc");
        let sig = sign(&key, &p);
        assert!(!keys.keys[0].verifies(&p, &sig));
        assert!(keys.keys[1].verifies(&p, &sig));
        assert!(
            keys.describe().starts_with("keys sha256:"),
            "{}",
            keys.describe()
        );

        let e = PublicKeys::parse(&private, "spec.signature.publicKey").unwrap_err();
        assert!(e.contains("treat it as leaked"), "{e}");
        let e = PublicKeys::parse("nothing", "x").unwrap_err();
        assert!(e.contains("holds no PEM public key"), "{e}");
    }

    #[test]
    fn sec1_keys_load() {
        let key = generate().unwrap();
        let sec1 = p256::SecretKey::from_bytes(&key.to_bytes())
            .unwrap()
            .to_sec1_pem(LineEnding::LF)
            .unwrap();
        let again = load_signing_key(&sec1, "k", None).unwrap();
        assert_eq!(again.verifying_key(), key.verifying_key());
    }

    #[test]
    fn payloads_and_tags() {
        let d = format!("sha256:{}", "a".repeat(64));
        assert_eq!(signature_tag(&d), format!("sha256-{}.sig", "a".repeat(64)));
        let p = payload("reg/x", &d);
        assert_eq!(
            String::from_utf8(p.clone()).unwrap(),
            format!(
                r#"{{"critical":{{"identity":{{"docker-reference":"reg/x"}},"image":{{"docker-manifest-digest":"{d}"}},"type":"cosign container image signature"}},"optional":null}}"#
            )
        );
        assert_eq!(payload_digest(&p).unwrap(), d);
        // Go reads JSON keys case-insensitively; so does this.
        let upper = format!(
            r#"{{"Critical":{{"Image":{{"Docker-manifest-digest":"{d}"}},"Type":"cosign container image signature"}}}}"#
        );
        assert_eq!(payload_digest(upper.as_bytes()).unwrap(), d);
        let e = payload_digest(br#"{"critical":{"type":"other"}}"#).unwrap_err();
        assert!(e.contains("critical.type"), "{e}");
    }

    #[test]
    fn signature_manifests_keep_other_signatures() {
        let a = Layer {
            digest: "sha256:aa".into(),
            size: 10,
            signature: "sigA".into(),
        };
        let b = Layer {
            digest: "sha256:bb".into(),
            size: 11,
            signature: "sigB".into(),
        };
        let (m1, _) = signature_manifest(None, &a);
        let (m2, config) = signature_manifest(Some(&m1), &b);
        let v: Value = serde_json::from_slice(&m2).unwrap();
        assert_eq!(v["layers"].as_array().unwrap().len(), 2);
        assert_eq!(v["layers"][1]["annotations"][SIGNATURE_ANNOTATION], "sigB");
        let c: Value = serde_json::from_slice(&config).unwrap();
        assert_eq!(c["rootfs"]["diff_ids"][0], "sha256:aa");
        // The same signature again adds nothing.
        let (m3, _) = signature_manifest(Some(&m2), &b);
        assert_eq!(m3, m2);
    }
}
