//! Registry credentials, in docker's config format: a `config.json` on the
//! CLI (`--docker-config`, `$DOCKER_CONFIG`, `~/.docker/config.json`) and a
//! `kubernetes.io/dockerconfigjson` Secret in the cluster.
//!
//! An entry of `auths` gives one of: `auth` (base64 `user:password`),
//! `username` + `password`, `identitytoken` (an OAuth2 refresh token, traded
//! at the registry's token server) or `registrytoken` (a bearer token sent
//! as it is). Nothing here is ever logged: [`Credentials`]' Debug shows
//! where they came from and the user name only.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use serde::Deserialize;

/// What is presented to the registry.
#[derive(Clone, PartialEq, Eq)]
pub enum Secret {
    Basic { username: String, password: String },
    IdentityToken(String),
    RegistryToken(String),
}

/// The kind and user name only, never a password or token.
impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Secret::Basic { username, .. } => write!(f, "Basic({username:?}, <redacted>)"),
            Secret::IdentityToken(_) => f.write_str("IdentityToken(<redacted>)"),
            Secret::RegistryToken(_) => f.write_str("RegistryToken(<redacted>)"),
        }
    }
}

/// Credentials for one registry, and where they came from (for messages).
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    pub secret: Secret,
    /// e.g. `Secret plugins/regcred (spec.imagePullSecret)` or
    /// `docker config /home/me/.docker/config.json`.
    pub origin: String,
    /// The registry entry they were found under.
    pub entry: String,
}

impl Credentials {
    /// For messages: what they are and where they came from, no secrets.
    pub fn describe(&self) -> String {
        let what = match &self.secret {
            Secret::Basic { username, .. } => format!("the password of user {username:?}"),
            Secret::IdentityToken(_) => "the identity token".to_string(),
            Secret::RegistryToken(_) => "the registry token".to_string(),
        };
        format!("{what} for {} from {}", self.entry, self.origin)
    }
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
struct Entry {
    #[serde(default)]
    auth: Option<String>,
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    password: Option<String>,
    #[serde(default)]
    identitytoken: Option<String>,
    #[serde(default)]
    registrytoken: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct File {
    #[serde(default)]
    auths: BTreeMap<String, Entry>,
    #[serde(default)]
    creds_store: Option<String>,
    #[serde(default)]
    cred_helpers: BTreeMap<String, String>,
}

/// A parsed docker config.
#[derive(Clone, Default)]
pub struct DockerConfig {
    file: File,
    origin: String,
}

impl std::fmt::Debug for DockerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DockerConfig")
            .field("origin", &self.origin)
            .field("registries", &self.file.auths.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// Docker Hub answers to several names; its entry is usually
/// `https://index.docker.io/v1/`.
const DOCKER_HUB: [&str; 4] = [
    "docker.io",
    "index.docker.io",
    "registry-1.docker.io",
    "registry.hub.docker.com",
];

/// `host[:port]` of an `auths` key or a registry name: no scheme, no path,
/// lower case, Docker Hub's aliases folded into `docker.io`.
pub fn registry_key(s: &str) -> String {
    let s = s.trim();
    let s = s
        .strip_prefix("https://")
        .or_else(|| s.strip_prefix("http://"))
        .unwrap_or(s);
    let host = s.split('/').next().unwrap_or(s).to_ascii_lowercase();
    if DOCKER_HUB.contains(&host.as_str()) {
        "docker.io".to_string()
    } else {
        host
    }
}

impl DockerConfig {
    /// Parse a config.json (`{"auths": {...}}`). `legacy` is the older
    /// `.dockercfg` layout: the map of registries at the top level.
    pub fn parse(bytes: &[u8], origin: &str, legacy: bool) -> Result<DockerConfig, String> {
        let file = if legacy {
            let auths: BTreeMap<String, Entry> = serde_json::from_slice(bytes)
                .map_err(|e| format!("{origin} is not a .dockercfg JSON map of registries: {e}"))?;
            File {
                auths,
                ..Default::default()
            }
        } else {
            serde_json::from_slice(bytes).map_err(|e| {
                format!("{origin} is not a docker config JSON document ({{\"auths\": {{…}}}}): {e}")
            })?
        };
        Ok(DockerConfig {
            file,
            origin: origin.to_string(),
        })
    }

    /// `$DOCKER_CONFIG/config.json`, else `~/.docker/config.json`.
    pub fn default_path() -> Option<PathBuf> {
        if let Some(d) = std::env::var_os("DOCKER_CONFIG").filter(|d| !d.is_empty()) {
            return Some(PathBuf::from(d).join("config.json"));
        }
        std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(|h| PathBuf::from(h).join(".docker/config.json"))
    }

    /// Read `path`; a missing file is an empty config only when it is the
    /// default one (`explicit` false).
    pub fn load(path: &Path, explicit: bool) -> Result<DockerConfig, String> {
        let origin = format!("docker config {}", path.display());
        match std::fs::read(path) {
            Ok(b) => DockerConfig::parse(&b, &origin, false),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !explicit => Ok(DockerConfig {
                origin,
                ..Default::default()
            }),
            Err(e) => Err(format!("cannot read {origin}: {e}")),
        }
    }

    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The registries it has entries for, as written.
    pub fn registries(&self) -> Vec<&str> {
        self.file.auths.keys().map(String::as_str).collect()
    }

    /// The credentials of `registry`'s entry, `None` when it has none.
    pub fn credentials_for(&self, registry: &str) -> Result<Option<Credentials>, String> {
        let want = registry_key(registry);
        let Some((key, entry)) = self
            .file
            .auths
            .iter()
            .find(|(k, _)| registry_key(k) == want)
        else {
            return Ok(None);
        };
        let err = |m: String| format!("{}: entry {key:?}: {m}", self.origin);
        let nonempty =
            |o: &Option<String>| o.as_deref().filter(|s| !s.is_empty()).map(str::to_string);
        let secret = if let Some(t) = nonempty(&entry.registrytoken) {
            Secret::RegistryToken(t)
        } else if let Some(t) = nonempty(&entry.identitytoken) {
            Secret::IdentityToken(t)
        } else if let Some(auth) = nonempty(&entry.auth) {
            let raw = base64::engine::general_purpose::STANDARD
                .decode(auth.trim())
                .map_err(|e| {
                    err(format!(
                        "auth is not base64 ({e}); it must be base64 of user:password"
                    ))
                })?;
            let text = String::from_utf8(raw)
                .map_err(|_| err("auth does not decode to UTF-8 text".into()))?;
            let (username, password) = text
                .split_once(':')
                .ok_or_else(|| err("auth does not decode to user:password (no ':')".into()))?;
            Secret::Basic {
                username: username.to_string(),
                password: password.to_string(),
            }
        } else if let (Some(username), Some(password)) =
            (nonempty(&entry.username), nonempty(&entry.password))
        {
            Secret::Basic { username, password }
        } else {
            return Err(err(
                "has none of auth, username and password, identitytoken or registrytoken".into(),
            ));
        };
        Ok(Some(Credentials {
            secret,
            origin: self.origin.clone(),
            entry: key.clone(),
        }))
    }

    /// The credential helper docker would ask for `registry` (credHelpers,
    /// then credsStore), if any.
    pub fn helper_for(&self, registry: &str) -> Option<&str> {
        let want = registry_key(registry);
        self.file
            .cred_helpers
            .iter()
            .find(|(k, _)| registry_key(k) == want)
            .map(|(_, v)| v.as_str())
            .or(self.file.creds_store.as_deref())
            .filter(|h| !h.is_empty())
    }
}

/// Ask `docker-credential-<helper> get` for `registry`'s credentials, as
/// docker does (the server URL on stdin, JSON on stdout). `None` when the
/// helper has none. For the CLI only: the agent never runs programs.
pub fn from_helper(helper: &str, registry: &str) -> Result<Option<Credentials>, String> {
    use std::io::Write as _;
    let program = format!("docker-credential-{helper}");
    let server = if registry_key(registry) == "docker.io" {
        "https://index.docker.io/v1/".to_string()
    } else {
        registry.to_string()
    };
    let mut child = std::process::Command::new(&program)
        .arg("get")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| {
            format!(
                "the docker config names credential helper {helper:?}, but {program} cannot be \
                 run ({e}); install it, or put the credentials under auths"
            )
        })?;
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(server.as_bytes());
    }
    let out = child
        .wait_with_output()
        .map_err(|e| format!("running {program}: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        let msg = format!("{stdout}{}", String::from_utf8_lossy(&out.stderr));
        if msg.to_ascii_lowercase().contains("not found") {
            return Ok(None);
        }
        return Err(format!("{program} get failed: {}", msg.trim()));
    }
    #[derive(Deserialize)]
    #[serde(rename_all = "PascalCase")]
    struct HelperAnswer {
        #[serde(default)]
        username: String,
        #[serde(default)]
        secret: String,
    }
    let a: HelperAnswer = serde_json::from_str(&stdout)
        .map_err(|e| format!("{program} get answered something that is not its JSON: {e}"))?;
    let secret = if a.username == "<token>" {
        Secret::IdentityToken(a.secret)
    } else {
        Secret::Basic {
            username: a.username,
            password: a.secret,
        }
    };
    Ok(Some(Credentials {
        secret,
        origin: format!("credential helper {program}"),
        entry: server,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b64(s: &str) -> String {
        base64::engine::general_purpose::STANDARD.encode(s)
    }

    #[test]
    fn entries_of_every_kind() {
        let cfg = format!(
            r#"{{"auths": {{
                "https://127.0.0.1:5443/v2/": {{"auth": "{}"}},
                "ghcr.io": {{"username": "bob", "password": "pw"}},
                "https://index.docker.io/v1/": {{"identitytoken": "refresh"}},
                "quay.io": {{"registrytoken": "bearer", "auth": "{}"}},
                "empty.example.com": {{}},
                "bad.example.com": {{"auth": "!!!"}}
            }}}}"#,
            b64("alice:s3:cret"),
            b64("x:y")
        );
        let c = DockerConfig::parse(cfg.as_bytes(), "docker config x", false).unwrap();
        let get = |r: &str| c.credentials_for(r).unwrap().unwrap();
        assert_eq!(
            get("127.0.0.1:5443").secret,
            Secret::Basic {
                username: "alice".into(),
                password: "s3:cret".into()
            }
        );
        assert_eq!(
            get("GHCR.io").secret,
            Secret::Basic {
                username: "bob".into(),
                password: "pw".into()
            }
        );
        assert_eq!(
            get("docker.io").secret,
            Secret::IdentityToken("refresh".into())
        );
        assert_eq!(
            get("registry-1.docker.io").secret,
            Secret::IdentityToken("refresh".into())
        );
        // A registry token wins over anything else in its entry.
        assert_eq!(
            get("quay.io").secret,
            Secret::RegistryToken("bearer".into())
        );
        assert!(c.credentials_for("other.example.com").unwrap().is_none());
        let e = c.credentials_for("empty.example.com").unwrap_err();
        assert!(e.contains("has none of auth"), "{e}");
        let e = c.credentials_for("bad.example.com").unwrap_err();
        assert!(e.contains("auth is not base64"), "{e}");
        assert!(
            e.starts_with("docker config x: entry \"bad.example.com\""),
            "{e}"
        );

        // No secret ever shows in Debug or messages.
        let shown = format!("{:?} {}", get("127.0.0.1:5443"), get("quay.io").describe());
        assert!(
            !shown.contains("s3:cret") && !shown.contains("bearer\""),
            "{shown}"
        );
        assert!(shown.contains("user \"alice\""), "{shown}");
    }

    #[test]
    fn legacy_dockercfg_and_helpers() {
        let legacy = format!(r#"{{"reg.example.com": {{"auth": "{}"}}}}"#, b64("a:b"));
        let c = DockerConfig::parse(legacy.as_bytes(), "Secret ns/x", true).unwrap();
        assert!(c.credentials_for("reg.example.com").unwrap().is_some());

        let c = DockerConfig::parse(
            br#"{"auths": {}, "credsStore": "desktop", "credHelpers": {"ghcr.io": "gh"}}"#,
            "x",
            false,
        )
        .unwrap();
        assert_eq!(c.helper_for("ghcr.io"), Some("gh"));
        assert_eq!(c.helper_for("quay.io"), Some("desktop"));
        let e = DockerConfig::parse(b"[1]", "Secret ns/x", false).unwrap_err();
        assert!(e.contains("not a docker config"), "{e}");
    }

    #[test]
    fn keys_normalise() {
        assert_eq!(
            registry_key("https://Reg.Example.com:5000/v2/"),
            "reg.example.com:5000"
        );
        assert_eq!(registry_key("index.docker.io"), "docker.io");
        assert_eq!(registry_key("127.0.0.1:5443"), "127.0.0.1:5443");
    }
}
