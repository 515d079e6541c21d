//! A real OCI registry on loopback: distribution's `registry` (built from Go
//! modules by `tests/setup.sh`), serving TLS with a certificate from a CA of
//! the test's own, with either htpasswd (bcrypt) users or token auth. Token
//! auth is real too: docker/distribution's token server (also built by
//! setup.sh) checks the same users and signs JWTs the registry trusts
//! through a JWKS file.
//!
//! The token server grants a user access to repositories under
//! `<user>/…` only, so tests push to `alice/<name>`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use base64::Engine as _;
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose,
};
use serde_json::json;

use crate::kcp::{free_port, kill_and_reap, spawn_owned, tail, tools_dir};

/// How the registry authenticates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegistryAuth {
    /// `WWW-Authenticate: Basic`, users from an htpasswd file.
    Htpasswd,
    /// `WWW-Authenticate: Bearer`: tokens from the token server.
    Token,
}

/// The registry's name in token claims (`aud`) and challenges.
pub const TOKEN_SERVICE: &str = "syncweave-test-registry";
const TOKEN_ISSUER: &str = "syncweave-test-token-server";

/// A running registry (and token server); killed when dropped.
pub struct Registry {
    pub dir: PathBuf,
    /// `127.0.0.1:<port>`: the registry part of `oci://` references.
    pub host: String,
    /// PEM of the CA that signed the registry's and token server's certificates.
    pub ca_pem: String,
    /// [`Registry::ca_pem`] as a file (for `--ca-file`, `SSL_CERT_FILE`,
    /// `SYNCWEAVE_PLUGIN_CA_FILE`).
    pub ca_file: PathBuf,
    pub auth: RegistryAuth,
    /// The token server's endpoint (token auth only).
    pub token_realm: Option<String>,
    pids: Vec<u32>,
}

fn binary(name: &str) -> Result<PathBuf> {
    let bin = tools_dir().join(name);
    if !bin.exists() {
        bail!(
            "{} not found (run tests/setup.sh, which builds it from Go modules)",
            bin.display()
        );
    }
    Ok(bin)
}

/// `user:bcrypt-hash` lines, as htpasswd -B writes them.
fn htpasswd(users: &[(&str, &str)]) -> Result<String> {
    let mut out = String::new();
    for (user, password) in users {
        // Cost 5: the lowest bcrypt allows, so logins stay fast in tests.
        let hash = bcrypt::hash(password, 5).context("bcrypt")?;
        out.push_str(&format!("{user}:{hash}\n"));
    }
    Ok(out)
}

/// A CA, and a certificate it signed for 127.0.0.1 and localhost: (CA PEM,
/// certificate PEM, key PEM).
fn tls_material() -> Result<(String, String, String)> {
    let ca_key = KeyPair::generate()?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "syncweave test registry CA");
    ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca = CertifiedIssuer::self_signed(ca_params, ca_key)?;
    let leaf_key = KeyPair::generate()?;
    let leaf = CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])?
        .signed_by(&leaf_key, &ca)?;
    Ok((ca.pem(), leaf.pem(), leaf_key.serialize_pem()))
}

/// libtrust's key ID (what the token server puts in the JWT header's `kid`):
/// the first 240 bits of the SHA-256 of the DER public key, base32, in
/// groups of four.
fn libtrust_key_id(spki_der: &[u8]) -> String {
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(spki_der);
    let b32 = base32(&digest[..30]);
    b32.as_bytes()
        .chunks(4)
        .map(|c| std::str::from_utf8(c).unwrap_or_default())
        .collect::<Vec<_>>()
        .join(":")
}

/// RFC 4648 base32 without padding.
fn base32(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let mut out = String::new();
    let (mut buf, mut bits) = (0u32, 0u32);
    for &b in bytes {
        buf = (buf << 8) | b as u32;
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            out.push(ALPHABET[((buf >> bits) & 31) as usize] as char);
        }
    }
    if bits > 0 {
        out.push(ALPHABET[((buf << (5 - bits)) & 31) as usize] as char);
    }
    out
}

fn openssl(args: &[&str], what: &str) -> Result<Vec<u8>> {
    let out = Command::new("openssl")
        .args(args)
        .output()
        .with_context(|| format!("running openssl to {what}"))?;
    if !out.status.success() {
        bail!("openssl {what}: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(out.stdout)
}

/// Wait until something accepts connections on 127.0.0.1:`port`.
async fn wait_listening(port: u16, log: &Path, within: Duration) -> Result<()> {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    bail!(
        "nothing listens on port {port} after {within:?}; log:\n{}",
        tail(log, 30)
    )
}

impl Registry {
    /// Start a registry under `dir` whose users are `users` (name, password).
    pub async fn start(dir: &Path, auth: RegistryAuth, users: &[(&str, &str)]) -> Result<Registry> {
        let registry_bin = binary("registry")?;
        std::fs::create_dir_all(dir)?;
        let dir = dir.canonicalize()?;
        let (ca_pem, cert_pem, key_pem) = tls_material()?;
        let (ca_file, cert_file, key_file) =
            (dir.join("ca.crt"), dir.join("tls.crt"), dir.join("tls.key"));
        std::fs::write(&ca_file, &ca_pem)?;
        std::fs::write(&cert_file, &cert_pem)?;
        std::fs::write(&key_file, &key_pem)?;
        let passwd = dir.join("htpasswd");
        std::fs::write(&passwd, htpasswd(users)?)?;

        let mut reg = Registry {
            host: String::new(),
            ca_pem,
            ca_file,
            auth,
            token_realm: None,
            pids: Vec::new(),
            dir: dir.clone(),
        };
        let auth_config = match auth {
            RegistryAuth::Htpasswd => json!({"htpasswd": {
                "realm": "syncweave-test",
                "path": passwd,
            }}),
            RegistryAuth::Token => {
                let token_bin = binary("token-server")?;
                let tok_key = dir.join("token-signing.key");
                let k = tok_key.to_str().context("path")?;
                openssl(
                    &[
                        "ecparam",
                        "-name",
                        "prime256v1",
                        "-genkey",
                        "-noout",
                        "-out",
                        k,
                    ],
                    "make the token signing key",
                )?;
                let der = openssl(
                    &["ec", "-in", k, "-pubout", "-outform", "DER"],
                    "read the token signing key's public half",
                )?;
                // An uncompressed P-256 point ends the SubjectPublicKeyInfo.
                anyhow::ensure!(der.len() > 65, "unexpected public key DER");
                let point = &der[der.len() - 65..];
                let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
                let jwks = json!({"keys": [{
                    "kty": "EC", "crv": "P-256",
                    "kid": libtrust_key_id(&der),
                    "x": b64.encode(&point[1..33]),
                    "y": b64.encode(&point[33..65]),
                }]});
                let jwks_file = dir.join("jwks.json");
                std::fs::write(&jwks_file, serde_json::to_vec(&jwks)?)?;

                let tport = free_port()?;
                let tlog = dir.join("token-server.log");
                let log = std::fs::File::create(&tlog)?;
                let mut cmd = Command::new(token_bin);
                cmd.arg("-addr")
                    .arg(format!("127.0.0.1:{tport}"))
                    .args(["-issuer", TOKEN_ISSUER, "-realm", "syncweave-test"])
                    .arg("-key")
                    .arg(&tok_key)
                    .arg("-passwd")
                    .arg(&passwd)
                    .arg("-tlscert")
                    .arg(&cert_file)
                    .arg("-tlskey")
                    .arg(&key_file)
                    .stdin(Stdio::null())
                    .stdout(log.try_clone()?)
                    .stderr(log);
                reg.pids
                    .push(spawn_owned(cmd).context("starting the token server")?);
                wait_listening(tport, &tlog, Duration::from_secs(30)).await?;
                let realm = format!("https://127.0.0.1:{tport}/token/");
                reg.token_realm = Some(realm.clone());
                json!({"token": {
                    "realm": realm,
                    "service": TOKEN_SERVICE,
                    "issuer": TOKEN_ISSUER,
                    "jwks": jwks_file,
                }})
            }
        };

        let port = free_port()?;
        reg.host = format!("127.0.0.1:{port}");
        let config = json!({
            "version": "0.1",
            "log": {"level": "info"},
            "storage": {
                "filesystem": {"rootdirectory": dir.join("data")},
                "delete": {"enabled": true},
            },
            "http": {
                "addr": reg.host,
                "secret": "syncweave-test-upload-state-secret",
                "tls": {"certificate": cert_file, "key": key_file},
            },
            "auth": auth_config,
        });
        // distribution reads YAML; JSON is YAML.
        let config_file = dir.join("config.yml");
        std::fs::write(&config_file, serde_json::to_vec_pretty(&config)?)?;
        let rlog = dir.join("registry.log");
        let log = std::fs::File::create(&rlog)?;
        let mut cmd = Command::new(registry_bin);
        cmd.arg("serve")
            .arg(&config_file)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        reg.pids
            .push(spawn_owned(cmd).context("starting the registry")?);
        wait_listening(port, &rlog, Duration::from_secs(30)).await?;
        Ok(reg)
    }

    /// A docker config (`{"auths": {…}}`) with `entry` for this registry.
    pub fn docker_config(&self, entry: serde_json::Value) -> serde_json::Value {
        json!({"auths": {self.host.clone(): entry}})
    }

    /// The `auth` entry for `user`/`password` (base64 `user:password`).
    pub fn auth_entry(user: &str, password: &str) -> serde_json::Value {
        let b64 = base64::engine::general_purpose::STANDARD;
        json!({"auth": b64.encode(format!("{user}:{password}"))})
    }

    /// Write [`Registry::docker_config`] with `entry` to `<dir>/config.json`
    /// and return that file.
    pub fn write_docker_config(&self, dir: &Path, entry: serde_json::Value) -> Result<PathBuf> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join("config.json");
        std::fs::write(
            &path,
            serde_json::to_vec_pretty(&self.docker_config(entry))?,
        )?;
        Ok(path)
    }

    pub fn log_tail(&self, n: usize) -> String {
        format!(
            "registry:\n{}\ntoken server:\n{}",
            tail(&self.dir.join("registry.log"), n),
            tail(&self.dir.join("token-server.log"), n)
        )
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "---- {} ----\n{}\n----",
                self.dir.display(),
                self.log_tail(30)
            );
        }
        for pid in self.pids.iter().rev() {
            kill_and_reap(*pid);
        }
        let _ = std::fs::remove_dir_all(self.dir.join("data"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base32_and_key_ids() {
        assert_eq!(base32(b"foobar"), "MZXW6YTBOI");
        assert_eq!(base32(b"f"), "MY");
        // 30 bytes -> 48 characters -> 12 groups of four.
        let id = libtrust_key_id(b"any der");
        assert_eq!(id.len(), 48 + 11);
        assert_eq!(id.split(':').count(), 12);
    }
}
