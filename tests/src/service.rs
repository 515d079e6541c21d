//! A real Kubernetes API server (kube-apiserver + etcd, built from Go modules
//! by `tests/setup.sh`) on loopback: the provider's service cluster.
//!
//! There is no kubelet, scheduler or controller-manager: objects are stored
//! and validated exactly as on a real cluster, but no Pod runs, namespaces
//! are not finalized and owner references are not garbage-collected.
//! A kcp workspace is not a stand-in: kcp rewrites and allows things a
//! provider's cluster does not.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use kube::config::Kubeconfig;
use kube::{Client, Config};
use serde_json::json;

use crate::kcp::{free_port, spawn_owned, tail, tools_dir};

/// The token of the cluster's admin (group `system:masters`). Only the
/// harness uses it, to set up; agents get their own identities.
const ADMIN_TOKEN: &str = "syncweave-e2e-admin";

/// A running service cluster; its processes are killed when it is dropped.
pub struct ServiceCluster {
    pub dir: PathBuf,
    /// `https://127.0.0.1:<port>`.
    pub url: String,
    /// PEM bundle that verifies the API server's certificate.
    pub ca_pem: Vec<u8>,
    pids: Vec<u32>,
    log_file: PathBuf,
    /// kube-apiserver's command line, to start it again on the same etcd.
    apiserver: Vec<std::ffi::OsString>,
    /// The API server's audit log (JSON lines): every write, at Metadata level.
    pub audit_log: PathBuf,
}

/// Audit policy of the test servers: writes only, at Metadata level (who,
/// what, when, with which User-Agent), enough to prove who wrote what.
pub const AUDIT_POLICY: &str = "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Metadata\n  verbs: [create, update, patch, delete, deletecollection]\n- level: None\n";

impl ServiceCluster {
    /// Start etcd and kube-apiserver under `dir` and wait until the API
    /// server answers `/readyz` and serves its core APIs.
    pub async fn start(dir: &Path) -> Result<ServiceCluster> {
        let tools = tools_dir();
        let (etcd_bin, apiserver_bin) = (tools.join("etcd"), tools.join("kube-apiserver"));
        for bin in [&etcd_bin, &apiserver_bin] {
            if !bin.exists() {
                bail!(
                    "{} not found (run tests/setup.sh, which builds it from Go modules)",
                    bin.display()
                );
            }
        }
        std::fs::create_dir_all(dir)?;
        let dir = dir.canonicalize()?;
        let mut sc = ServiceCluster {
            log_file: dir.join("kube-apiserver.log"),
            url: String::new(),
            ca_pem: Vec::new(),
            pids: Vec::new(),
            apiserver: Vec::new(),
            audit_log: dir.join("audit.log"),
            dir: dir.clone(),
        };

        let (client_port, peer_port) = (free_port()?, free_port()?);
        let etcd_log = std::fs::File::create(dir.join("etcd.log"))?;
        let mut etcd = Command::new(&etcd_bin);
        etcd.arg("--data-dir")
            .arg(dir.join("etcd"))
            .arg(format!(
                "--listen-client-urls=http://127.0.0.1:{client_port}"
            ))
            .arg(format!(
                "--advertise-client-urls=http://127.0.0.1:{client_port}"
            ))
            .arg(format!("--listen-peer-urls=http://127.0.0.1:{peer_port}"))
            .arg(format!(
                "--initial-advertise-peer-urls=http://127.0.0.1:{peer_port}"
            ))
            .arg(format!(
                "--initial-cluster=default=http://127.0.0.1:{peer_port}"
            ))
            .args(["--unsafe-no-fsync", "--log-level=warn"])
            .stdin(Stdio::null())
            .stdout(etcd_log.try_clone()?)
            .stderr(etcd_log);
        sc.pids.push(spawn_owned(etcd).context("starting etcd")?);

        // Service-account tokens are signed with this key (TokenRequest works
        // without a controller-manager).
        let key = dir.join("sa.key");
        let out = Command::new("openssl")
            .args(["genrsa", "-out"])
            .arg(&key)
            .arg("2048")
            .output()
            .context("running openssl to make the service-account key")?;
        if !out.status.success() {
            bail!("openssl genrsa: {}", String::from_utf8_lossy(&out.stderr));
        }
        let tokens = dir.join("tokens.csv");
        std::fs::write(
            &tokens,
            format!("{ADMIN_TOKEN},admin,admin-uid,\"system:masters\"\n"),
        )?;

        let audit_policy = dir.join("audit-policy.yaml");
        std::fs::write(&audit_policy, AUDIT_POLICY)?;
        let port = free_port()?;
        std::fs::File::create(&sc.log_file)?;
        let mut apiserver: Vec<std::ffi::OsString> = vec![apiserver_bin.into()];
        let arg = |s: String| std::ffi::OsString::from(s);
        apiserver.extend([
            arg(format!("--etcd-servers=http://127.0.0.1:{client_port}")),
            arg("--bind-address=127.0.0.1".into()),
            arg("--advertise-address=127.0.0.1".into()),
            arg(format!("--secure-port={port}")),
            arg(format!("--cert-dir={}", dir.join("certs").display())),
            arg(format!("--token-auth-file={}", tokens.display())),
            arg("--authorization-mode=RBAC".into()),
            arg("--service-account-issuer=https://kubernetes.default.svc".into()),
            arg("--service-cluster-ip-range=10.0.0.0/24".into()),
            arg("--allow-privileged=true".into()),
            // Without it v1.37 exits on loopback ("may not be in the loopback range").
            arg("--endpoint-reconciler-type=none".into()),
            arg("--v=1".into()),
            arg(format!("--audit-log-path={}", sc.audit_log.display())),
            arg(format!("--audit-policy-file={}", audit_policy.display())),
            arg(format!("--service-account-key-file={}", key.display())),
            arg(format!(
                "--service-account-signing-key-file={}",
                key.display()
            )),
        ]);
        sc.apiserver = apiserver;
        let pid = sc.spawn_apiserver()?;
        sc.pids.push(pid);
        sc.url = format!("https://127.0.0.1:{port}");
        sc.wait_ready(Duration::from_secs(120)).await?;
        Ok(sc)
    }

    fn spawn_apiserver(&self) -> Result<u32> {
        // Appends, so a restart keeps the log of the first run.
        let log = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(&self.log_file)?;
        let mut cmd = Command::new(&self.apiserver[0]);
        cmd.args(&self.apiserver[1..])
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        spawn_owned(cmd).context("starting kube-apiserver")
    }

    /// Wait until the API server answers `/readyz` and serves `default`.
    async fn wait_ready(&mut self, within: Duration) -> Result<()> {
        let deadline = Instant::now() + within;
        let cert = self.dir.join("certs/apiserver.crt");
        loop {
            if Instant::now() > deadline {
                bail!(
                    "kube-apiserver did not become ready within {within:?}; last log lines:\n{}\netcd:\n{}",
                    tail(&self.log_file, 30),
                    tail(&self.dir.join("etcd.log"), 10)
                );
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
            let Ok(pem) = std::fs::read(&cert) else {
                continue;
            };
            self.ca_pem = pem;
            let Ok(client) = self.admin_client().await else {
                continue;
            };
            let req = http::Request::get("/readyz").body(vec![])?;
            if !matches!(client.request_text(req).await, Ok(t) if t.trim() == "ok") {
                continue;
            }
            // The bootstrap controller creates `default` shortly after readyz.
            let ns: kube::Api<k8s_openapi::api::core::v1::Namespace> = kube::Api::all(client);
            if ns.get("default").await.is_ok() {
                return Ok(());
            }
        }
    }

    /// Kill the API server (SIGKILL), leaving etcd and its data: the cluster
    /// is down as when its control plane crashed.
    pub fn kill_apiserver(&self) {
        crate::kcp::kill_and_reap(self.pids[1]);
    }

    /// Start the API server again after [`ServiceCluster::kill_apiserver`],
    /// same port, certificates and etcd, and wait until it is ready.
    pub async fn restart_apiserver(&mut self) -> Result<()> {
        let pid = self.spawn_apiserver()?;
        self.pids[1] = pid;
        self.wait_ready(Duration::from_secs(120)).await
    }

    /// A kubeconfig for this cluster that authenticates with `token`.
    pub fn kubeconfig(&self, user: &str, token: &str) -> Kubeconfig {
        use base64::Engine as _;
        let encode = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
        serde_json::from_value(json!({
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "service", "cluster": {
                "server": self.url,
                "certificate-authority-data": encode(&self.ca_pem),
            }}],
            "users": [{"name": user, "user": {"token": token}}],
            "contexts": [{"name": "service", "context": {"cluster": "service", "user": user}}],
            "current-context": "service",
        }))
        .expect("kubeconfig")
    }

    /// The API server's port.
    pub fn port(&self) -> u16 {
        self.url
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .expect("the URL has a port")
    }

    /// Like [`ServiceCluster::write_kubeconfig`], reaching the API server
    /// through 127.0.0.1:`port` (a [`crate::proxy::Proxy`]).
    pub fn write_kubeconfig_via(
        &self,
        user: &str,
        token: &str,
        port: u16,
        path: &Path,
    ) -> Result<()> {
        let mut kc = self.kubeconfig(user, token);
        for c in &mut kc.clusters {
            if let Some(cluster) = c.cluster.as_mut() {
                cluster.server = Some(format!("https://127.0.0.1:{port}"));
            }
        }
        let yaml = serde_yaml_ng::to_string(&kc)?;
        std::fs::File::create(path)?.write_all(yaml.as_bytes())?;
        Ok(())
    }

    pub fn write_kubeconfig(&self, user: &str, token: &str, path: &Path) -> Result<()> {
        let yaml = serde_yaml_ng::to_string(&self.kubeconfig(user, token))?;
        std::fs::File::create(path)?.write_all(yaml.as_bytes())?;
        Ok(())
    }

    /// The admin kubeconfig, for set-up (and for a human looking around).
    pub fn write_admin_kubeconfig(&self, path: &Path) -> Result<()> {
        self.write_kubeconfig("admin", ADMIN_TOKEN, path)
    }

    async fn client_for(&self, user: &str, token: &str) -> Result<Client> {
        let cfg = Config::from_custom_kubeconfig(self.kubeconfig(user, token), &Default::default())
            .await?;
        Ok(Client::try_from(cfg)?)
    }

    /// A client with cluster-admin rights.
    pub async fn admin_client(&self) -> Result<Client> {
        self.client_for("admin", ADMIN_TOKEN).await
    }

    /// A client acting as ServiceAccount `namespace/name`, with a token from
    /// the TokenRequest API (valid for `hours`).
    pub async fn service_account_token(
        &self,
        namespace: &str,
        name: &str,
        hours: i64,
    ) -> Result<String> {
        let client = self.admin_client().await?;
        let req = http::Request::post(format!(
            "/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token"
        ))
        .header("content-type", "application/json")
        .body(serde_json::to_vec(&json!({
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": hours * 3600},
        }))?)?;
        let resp: serde_json::Value = client
            .request(req)
            .await
            .with_context(|| format!("requesting a token for ServiceAccount {namespace}/{name}"))?;
        resp.pointer("/status/token")
            .and_then(|t| t.as_str())
            .map(str::to_string)
            .context("TokenRequest answered without status.token")
    }

    /// Freeze the API server (SIGSTOP): connections hang as when a cluster
    /// is unreachable.
    pub fn pause(&self) {
        unsafe {
            libc::kill(self.pids[1] as i32, libc::SIGSTOP);
        }
    }

    /// Undo [`ServiceCluster::pause`].
    pub fn resume(&self) {
        unsafe {
            libc::kill(self.pids[1] as i32, libc::SIGCONT);
        }
    }

    pub fn log_tail(&self, n: usize) -> String {
        tail(&self.log_file, n)
    }
}

impl Drop for ServiceCluster {
    fn drop(&mut self) {
        for pid in self.pids.iter().rev() {
            unsafe {
                libc::kill(*pid as i32, libc::SIGCONT);
                libc::kill(*pid as i32, libc::SIGKILL);
            }
        }
        // etcd's data (its WAL alone preallocates 64 MB) would add up to
        // gigabytes over a run; the logs stay for debugging.
        let _ = std::fs::remove_dir_all(self.dir.join("etcd"));
    }
}
