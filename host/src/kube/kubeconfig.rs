//! Loading the two cluster connections: kcp (`--kcp-kubeconfig`) and the
//! service cluster (`--kubeconfig`, falling back like controller-runtime).

use std::path::{Path, PathBuf};

use kube::Config;
use kube::config::{KubeConfigOptions, Kubeconfig};

#[derive(Debug, thiserror::Error)]
pub enum KubeconfigError {
    #[error("{flag} {path}: cannot read kubeconfig: {source}")]
    Read {
        flag: &'static str,
        path: PathBuf,
        source: kube::config::KubeconfigError,
    },
    #[error("{flag}: {source}")]
    Load {
        flag: &'static str,
        source: kube::config::KubeconfigError,
    },
    #[error(
        "--kcp-kubeconfig: server {server:?} does not point at a kcp workspace; it must contain /clusters/<workspace> (e.g. https://kcp:6443/clusters/root:provider)"
    )]
    NotAWorkspace { server: String },
    #[error("{flag}: invalid server URL {server:?}: {reason}")]
    BadUrl {
        flag: &'static str,
        server: String,
        reason: String,
    },
    #[error("--kubeconfig-ca-file-override {path}: {source}")]
    CaFile {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "no kubeconfig for the service cluster: pass --kubeconfig, set $KUBECONFIG, or run in a cluster ({0})"
    )]
    Infer(String),
}

/// Load the kcp kubeconfig and check it points at a workspace.
pub async fn load_kcp(path: &Path) -> Result<Config, KubeconfigError> {
    let kc = Kubeconfig::read_from(path).map_err(|source| KubeconfigError::Read {
        flag: "--kcp-kubeconfig",
        path: path.to_path_buf(),
        source,
    })?;
    let cfg = Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .map_err(|source| KubeconfigError::Load {
            flag: "--kcp-kubeconfig",
            source,
        })?;
    if workspace_of(&cfg.cluster_url.to_string()).is_none() {
        return Err(KubeconfigError::NotAWorkspace {
            server: cfg.cluster_url.to_string(),
        });
    }
    Ok(cfg)
}

/// Load the service-cluster config (the flag, else $KUBECONFIG / in-cluster /
/// ~/.kube/config) and apply `--kubeconfig-host-override` and
/// `--kubeconfig-ca-file-override`, which, as upstream's, apply to this
/// connection: e.g. an in-cluster agent that must reach its API server by
/// another address.
pub async fn load_service_with(
    path: Option<&Path>,
    host_override: Option<&str>,
    ca_override: Option<&Path>,
) -> Result<Config, KubeconfigError> {
    let mut cfg = load_service(path).await?;
    apply_overrides(&mut cfg, host_override, ca_override)?;
    Ok(cfg)
}

fn apply_overrides(
    cfg: &mut Config,
    host_override: Option<&str>,
    ca_override: Option<&Path>,
) -> Result<(), KubeconfigError> {
    if let Some(host) = host_override {
        cfg.cluster_url =
            host.parse()
                .map_err(|e: http::uri::InvalidUri| KubeconfigError::BadUrl {
                    flag: "--kubeconfig-host-override",
                    server: host.to_string(),
                    reason: e.to_string(),
                })?;
    }
    if let Some(ca) = ca_override {
        // Replaces any CA data the kubeconfig carries, as upstream does.
        let pem = std::fs::read(ca).map_err(|source| KubeconfigError::CaFile {
            path: ca.to_path_buf(),
            source,
        })?;
        cfg.root_cert = Some(pem_to_der(&pem));
    }
    Ok(())
}

/// Load the service-cluster config: the flag, else $KUBECONFIG / in-cluster / ~/.kube/config.
pub async fn load_service(path: Option<&Path>) -> Result<Config, KubeconfigError> {
    match path {
        Some(p) => {
            let kc = Kubeconfig::read_from(p).map_err(|source| KubeconfigError::Read {
                flag: "--kubeconfig",
                path: p.to_path_buf(),
                source,
            })?;
            Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
                .await
                .map_err(|source| KubeconfigError::Load {
                    flag: "--kubeconfig",
                    source,
                })
        }
        None => Config::infer()
            .await
            .map_err(|e| KubeconfigError::Infer(e.to_string())),
    }
}

/// The workspace named in a `…/clusters/<ws>` server URL.
pub fn workspace_of(server: &str) -> Option<&str> {
    let (_, rest) = server.split_once("/clusters/")?;
    let ws = rest.split('/').next().unwrap_or("");
    (!ws.is_empty()).then_some(ws)
}

/// The server URL with any `/clusters/<x>` suffix (and trailing `/`) removed.
pub fn base_of(server: &str) -> &str {
    let s = match server.find("/clusters/") {
        Some(i) => &server[..i],
        None => server,
    };
    s.trim_end_matches('/')
}

/// A copy of `cfg` pointing at `url` (same credentials and TLS settings).
pub fn with_url(cfg: &Config, url: &str) -> Result<Config, KubeconfigError> {
    let mut c = cfg.clone();
    c.cluster_url = url
        .parse()
        .map_err(|e: http::uri::InvalidUri| KubeconfigError::BadUrl {
            flag: "--kcp-kubeconfig",
            server: url.to_string(),
            reason: e.to_string(),
        })?;
    Ok(c)
}

fn pem_to_der(pem: &[u8]) -> Vec<Vec<u8>> {
    // kube's Config carries DER certs; decode the PEM blocks ourselves to
    // avoid another dependency.
    let text = String::from_utf8_lossy(pem);
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut inside = false;
    for line in text.lines() {
        if line.starts_with("-----BEGIN CERTIFICATE") {
            inside = true;
            cur.clear();
        } else if line.starts_with("-----END CERTIFICATE") {
            inside = false;
            if let Some(der) = base64_decode(&cur) {
                out.push(der);
            }
        } else if inside {
            cur.push_str(line.trim());
        }
    }
    out
}

fn base64_decode(s: &str) -> Option<Vec<u8>> {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut buf, mut bits) = (0u32, 0u32);
    for c in s.bytes().filter(|c| *c != b'=') {
        let v = T.iter().position(|t| *t == c)? as u32;
        buf = (buf << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((buf >> bits) as u8);
            buf &= (1 << bits) - 1;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workspace_is_parsed_from_server() {
        assert_eq!(
            workspace_of("https://kcp:6443/clusters/root:org"),
            Some("root:org")
        );
        assert_eq!(workspace_of("https://kcp:6443/clusters/abc/"), Some("abc"));
        assert_eq!(workspace_of("https://kcp:6443"), None);
        assert_eq!(workspace_of("https://kcp:6443/clusters/"), None);
        assert_eq!(
            base_of("https://kcp:6443/clusters/root:org"),
            "https://kcp:6443"
        );
        assert_eq!(base_of("https://kcp:6443/"), "https://kcp:6443");
    }

    #[test]
    fn base64_roundtrip() {
        assert_eq!(base64_decode("aGVsbG8=").unwrap(), b"hello");
    }

    #[tokio::test]
    async fn kcp_kubeconfig_without_clusters_is_rejected() {
        let dir = std::env::temp_dir().join(format!("sw-kc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("kc.yaml");
        std::fs::write(
            &p,
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:6443\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\nusers:\n- name: u\n  user:\n    token: t\n",
        )
        .unwrap();
        let err = load_kcp(&p).await.unwrap_err();
        assert!(err.to_string().contains("/clusters/"), "{err}");
    }

    #[tokio::test]
    async fn overrides_apply_to_the_service_cluster_config() {
        let dir = std::env::temp_dir().join(format!("sw-kc-svc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("kc.yaml");
        std::fs::write(
            &p,
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://10.0.0.1:443\n    certificate-authority-data: aGVsbG8=\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\nusers:\n- name: u\n  user:\n    token: t\n",
        )
        .unwrap();
        let ca = dir.join("ca.crt");
        std::fs::write(
            &ca,
            "-----BEGIN CERTIFICATE-----\nd29ybGQ=\n-----END CERTIFICATE-----\n",
        )
        .unwrap();
        let cfg = load_service_with(Some(&p), Some("https://127.0.0.1:6443"), Some(&ca))
            .await
            .unwrap();
        assert_eq!(cfg.cluster_url.to_string(), "https://127.0.0.1:6443/");
        assert_eq!(cfg.root_cert, Some(vec![b"world".to_vec()]));
        let plain = load_service_with(Some(&p), None, None).await.unwrap();
        assert_eq!(plain.cluster_url.to_string(), "https://10.0.0.1:443/");
        let err = load_service_with(Some(&p), None, Some(&dir.join("missing")))
            .await
            .unwrap_err();
        assert!(
            err.to_string().contains("--kubeconfig-ca-file-override"),
            "{err}"
        );
    }
}
