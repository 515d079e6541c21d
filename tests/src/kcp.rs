//! Starting and talking to a real kcp.

use std::io::Write;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use serde_json::json;

use crate::resources::{dynamic_api, gvk};

/// A running kcp. Lives for the whole test process.
pub struct Kcp {
    pub root_dir: PathBuf,
    pub log_file: PathBuf,
    /// kcp's audit log (JSON lines, writes only), when enabled.
    pub audit_log: Option<PathBuf>,
    /// `https://127.0.0.1:<port>` (no path).
    pub base_url: String,
    /// Re-read when kcp restarts.
    admin_kubeconfig: std::sync::RwLock<Kubeconfig>,
    /// How to stop and start this kcp again (a test's own kcp only).
    process: Option<KcpProcess>,
}

/// The process of a kcp that a test may stop, freeze and start again.
struct KcpProcess {
    cmd: Vec<std::ffi::OsString>,
    pid: std::sync::atomic::AtomicU32,
    kubeconfig: PathBuf,
}

/// A workspace created for a test.
#[derive(Debug, Clone)]
pub struct Workspace {
    /// e.g. `root:e2e-123:provider`.
    pub path: String,
    /// The logical-cluster name (Workspace `spec.cluster`).
    pub cluster: String,
}

/// The kcp user the sync agent runs as in e2e tests: it holds only what
/// docs/rbac.md lists (granted per workspace by the harness).
pub const AGENT_KCP_USER: &str = "syncweave-agent";
pub const AGENT_KCP_TOKEN: &str = "syncweave-agent-token";
/// A second kcp user, for tests that grant less than the agent needs.
pub const LIMITED_KCP_USER: &str = "syncweave-limited";
pub const LIMITED_KCP_TOKEN: &str = "syncweave-limited-token";

static KCP: OnceLock<Result<Kcp, String>> = OnceLock::new();
static SHARDED: OnceLock<Result<Kcp, String>> = OnceLock::new();

/// Labels (`region`) kcp's sharded-test-server gives its shards; a workspace
/// whose `spec.location.selector` matches one is scheduled there.
pub const ROOT_SHARD_REGION: &str = "us-east-2";
pub const SHARD_1_REGION: &str = "us-east-1";

/// The shared kcp of this test process, started on first use. Panics with
/// the reason (and the tail of kcp's log) if it cannot start: a test that
/// needs kcp fails, it never silently skips.
pub fn kcp() -> &'static Kcp {
    // Started on a plain thread: tests call this from inside their runtime,
    // and start-up drives its own small runtime for the readiness checks.
    let init = || {
        std::thread::spawn(|| start().map_err(|e| format!("{e:#}")))
            .join()
            .unwrap_or_else(|_| Err("kcp start-up thread panicked".into()))
    };
    match KCP.get_or_init(init) {
        Ok(k) => k,
        Err(e) => panic!("cannot start kcp for e2e tests: {e}"),
    }
}

/// A second, sharded kcp of this test process (root shard + `shard-1`, a
/// cache server and the front proxy, as kcp's own sharded-test-server wires
/// them), started on first use. Its admin identity is a client certificate
/// (the shards know no token users). Its ports are fixed by
/// sharded-test-server (6443-6445, 2379-2382, 8010-8012): one per machine.
pub fn sharded_kcp() -> &'static Kcp {
    let init = || {
        std::thread::spawn(|| start_sharded().map_err(|e| format!("{e:#}")))
            .join()
            .unwrap_or_else(|_| Err("sharded kcp start-up thread panicked".into()))
    };
    match SHARDED.get_or_init(init) {
        Ok(k) => k,
        Err(e) => panic!("cannot start the sharded kcp for e2e tests: {e}"),
    }
}

fn start_sharded() -> Result<Kcp> {
    let tools = tools_dir();
    let bin = |name: &str| -> Result<PathBuf> {
        let p = tools.join(name);
        if !p.exists() {
            bail!("{} not found (run tests/setup.sh)", p.display());
        }
        Ok(p)
    };
    let server = bin("sharded-test-server")?;
    let runs = repo_root().join("target/e2e-sharded");
    remove_stale_runs(&runs);
    // Shards of a run whose test process was killed outlive their parent
    // and would hold the fixed ports.
    kill_processes_mentioning(&runs);
    let root_dir = runs.join(std::process::id().to_string());
    let _ = std::fs::remove_dir_all(&root_dir);
    std::fs::create_dir_all(root_dir.join("logs"))?;
    let log_file = root_dir.join("sharded-test-server.log");
    let log = std::fs::File::create(&log_file)?;
    let mut cmd = Command::new(&server);
    cmd.arg("--number-of-shards=2")
        .arg(format!("--work-dir-path={}", root_dir.display()))
        .arg(format!(
            "--log-dir-path={}",
            root_dir.join("logs").display()
        ))
        .arg("--quiet")
        .env("NO_GORUN", "1")
        .env("KCP_ASSET_KCP", kcp_binary()?)
        .env("KCP_ASSET_KCP_FRONT_PROXY", bin("kcp-front-proxy")?)
        .env("KCP_ASSET_CACHE_SERVER", bin("cache-server")?)
        .current_dir(&root_dir)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    // SIGTERM, not SIGKILL, when the test process dies: sharded-test-server
    // then stops the shards it started.
    spawn_owned_with(cmd, libc::SIGTERM)
        .with_context(|| format!("starting {}", server.display()))?;
    let deadline = Instant::now() + Duration::from_secs(240);
    while !root_dir.join(".kcp/ready-to-test").exists() {
        if Instant::now() > deadline {
            bail!(
                "the sharded kcp did not become ready within 240s; last lines of {}:\n{}",
                log_file.display(),
                tail(&log_file, 30)
            );
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    wait_ready(
        root_dir.clone(),
        log_file,
        &root_dir.join(".kcp/admin.kubeconfig"),
        "https://127.0.0.1:6443".into(),
    )
}

/// Kill every process whose command line mentions `dir` or that runs in it
/// (sharded-test-server starts its cache-server with relative paths, from
/// the run's directory: only its working directory names the run).
fn kill_processes_mentioning(dir: &Path) {
    let needle = dir.to_string_lossy().into_owned();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return;
    };
    for p in procs.flatten() {
        let Some(pid) = p.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        if pid == std::process::id() as i32 {
            continue;
        }
        let cmdline = std::fs::read(p.path().join("cmdline")).unwrap_or_default();
        let runs_here =
            std::fs::read_link(p.path().join("cwd")).is_ok_and(|cwd| cwd.starts_with(dir));
        if runs_here || String::from_utf8_lossy(&cmdline).contains(&needle) {
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
    }
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Where `tests/setup.sh` puts the binaries it builds ($SYNCWEAVE_TOOLS_DIR,
/// default `~/.cache/syncweave`).
pub fn tools_dir() -> PathBuf {
    std::env::var("SYNCWEAVE_TOOLS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(std::env::var("HOME").unwrap_or("/root".into())).join(".cache/syncweave")
        })
}

/// Where `tests/setup.sh` put kcp, or $SYNCWEAVE_KCP_BIN.
pub fn kcp_binary() -> Result<PathBuf> {
    if let Ok(p) = std::env::var("SYNCWEAVE_KCP_BIN") {
        return Ok(PathBuf::from(p));
    }
    let bin = tools_dir().join("kcp");
    if !bin.exists() {
        bail!(
            "kcp binary not found at {} (run tests/setup.sh, or set SYNCWEAVE_KCP_BIN)",
            bin.display()
        );
    }
    Ok(bin)
}

/// A port to listen on that nothing listens on now.
///
/// Taken below the kernel's ephemeral range (`ip_local_port_range`, from
/// 32768 by default), not by binding port 0: a port-0 pick is an ephemeral
/// port, which any outgoing connection of the many the tests make (agents,
/// kcp, API servers) can take between the pick and the server's own bind,
/// and a service cluster whose etcd lost its port that way never became
/// ready. Ports are handed out in turn from an offset that depends on the
/// process, so two picks of one test process never collide either.
pub(crate) fn free_port() -> Result<u16> {
    use std::sync::atomic::{AtomicU32, Ordering};
    const LOW: u32 = 10_000;
    const SPAN: u32 = 22_000; // up to 31 999, below the ephemeral range
    static NEXT: AtomicU32 = AtomicU32::new(u32::MAX);
    let _ = NEXT.compare_exchange(
        u32::MAX,
        std::process::id().wrapping_mul(7919) % SPAN,
        Ordering::SeqCst,
        Ordering::SeqCst,
    );
    for _ in 0..SPAN {
        let port = (LOW + NEXT.fetch_add(1, Ordering::SeqCst) % SPAN) as u16;
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return Ok(port);
        }
    }
    bail!("no free port between {LOW} and {}", LOW + SPAN - 1)
}

fn start() -> Result<Kcp> {
    let runs = repo_root().join("target/e2e-kcp");
    remove_stale_runs(&runs);
    start_at(runs.join(std::process::id().to_string()))
}

/// A kcp of the calling test's own, under `target/e2e-kcp-own/<pid>/<name>`,
/// that the test may kill, freeze and start again on the same data
/// ([`Kcp::kill`], [`Kcp::restart`], [`Kcp::pause`]). It lives as long as the
/// test process. Call it from a test's runtime: start-up runs on a thread.
pub async fn own_kcp(name: &str) -> &'static Kcp {
    let name = name.to_string();
    let kcp = tokio::task::spawn_blocking(move || {
        let runs = repo_root().join("target/e2e-kcp-own");
        static CLEANED: std::sync::Once = std::sync::Once::new();
        CLEANED.call_once(|| remove_stale_runs(&runs));
        start_at(runs.join(std::process::id().to_string()).join(name))
    })
    .await
    .expect("kcp start-up thread")
    .unwrap_or_else(|e| panic!("cannot start a kcp for this test: {e:#}"));
    Box::leak(Box::new(kcp))
}

fn start_at(root_dir: PathBuf) -> Result<Kcp> {
    let bin = kcp_binary()?;
    let _ = std::fs::remove_dir_all(&root_dir);
    std::fs::create_dir_all(&root_dir)?;
    let (port, etcd_client, etcd_peer) = (free_port()?, free_port()?, free_port()?);
    let log_file = root_dir.join("kcp.log");
    std::fs::File::create(&log_file)?;
    let tokens = root_dir.join("tokens.csv");
    std::fs::write(
        &tokens,
        format!(
            "{AGENT_KCP_TOKEN},{AGENT_KCP_USER},{AGENT_KCP_USER}-uid,\"\"\n\
             {LIMITED_KCP_TOKEN},{LIMITED_KCP_USER},{LIMITED_KCP_USER}-uid,\"\"\n"
        ),
    )?;

    let audit_log = root_dir.join("audit.log");
    let audit_policy = root_dir.join("audit-policy.yaml");
    std::fs::write(&audit_policy, crate::service::AUDIT_POLICY)?;
    let arg = |s: String| std::ffi::OsString::from(s);
    let cmd = vec![
        bin.into_os_string(),
        arg("start".into()),
        arg("--bind-address=127.0.0.1".into()),
        arg(format!(
            "--root-directory={}",
            root_dir.join("data").display()
        )),
        arg(format!("--secure-port={port}")),
        arg(format!("--embedded-etcd-client-port={etcd_client}")),
        arg(format!("--embedded-etcd-peer-port={etcd_peer}")),
        arg(format!("--token-auth-file={}", tokens.display())),
        arg(format!("--audit-log-path={}", audit_log.display())),
        arg(format!("--audit-policy-file={}", audit_policy.display())),
    ];
    let pid = spawn_kcp(&cmd, &log_file)?;

    let kubeconfig_path = root_dir.join("data/admin.kubeconfig");
    let mut kcp = wait_ready(
        root_dir,
        log_file,
        &kubeconfig_path,
        format!("https://127.0.0.1:{port}"),
    )?;
    kcp.audit_log = Some(audit_log);
    kcp.process = Some(KcpProcess {
        cmd,
        pid: pid.into(),
        kubeconfig: kubeconfig_path,
    });
    Ok(kcp)
}

fn spawn_kcp(cmd: &[std::ffi::OsString], log_file: &Path) -> Result<u32> {
    // Appends, so a restart keeps the log of the first run.
    let log = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(log_file)?;
    let mut c = Command::new(&cmd[0]);
    c.args(&cmd[1..])
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    spawn_owned(c).with_context(|| format!("starting {}", cmd[0].to_string_lossy()))
}

/// Wait until the kcp whose admin kubeconfig is at `kubeconfig_path` serves
/// workspaces and root's WorkspaceTypes are Ready.
fn wait_ready(
    root_dir: PathBuf,
    log_file: PathBuf,
    kubeconfig_path: &Path,
    base_url: String,
) -> Result<Kcp> {
    let deadline = Instant::now() + Duration::from_secs(180);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    loop {
        if Instant::now() > deadline {
            bail!(
                "kcp did not become ready within 180s; last log lines:\n{}",
                tail(&log_file, 30)
            );
        }
        std::thread::sleep(Duration::from_millis(500));
        if !kubeconfig_path.exists() {
            continue;
        }
        let Ok(kc) = Kubeconfig::read_from(kubeconfig_path) else {
            continue;
        };
        let k = Kcp {
            root_dir: root_dir.clone(),
            log_file: log_file.clone(),
            audit_log: None,
            base_url: base_url.clone(),
            admin_kubeconfig: std::sync::RwLock::new(kc),
            process: None,
        };
        let ready = rt.block_on(async {
            let client = k.client("root").await?;
            let req = http::Request::get("/readyz").body(vec![])?;
            let text = client.request_text(req).await?;
            if text.trim() != "ok" {
                return Err(anyhow!("readyz: {text}"));
            }
            // Workspaces must be listable too, not just the health endpoint.
            let api = dynamic_api(
                &client,
                &gvk("tenancy.kcp.io", "v1alpha1", "Workspace"),
                "workspaces",
                None,
            );
            api.list(&Default::default()).await?;
            // kcp answers /readyz before it has bootstrapped root's
            // WorkspaceTypes; a workspace created in that window can stay
            // Unavailable ("workspacetypes root:organization not found").
            let wsts = dynamic_api(
                &client,
                &gvk("tenancy.kcp.io", "v1alpha1", "WorkspaceType"),
                "workspacetypes",
                None,
            );
            for name in ["organization", "universal"] {
                let w = wsts.get(name).await?;
                let ready = w
                    .data
                    .pointer("/status/conditions")
                    .and_then(serde_json::Value::as_array)
                    .is_some_and(|cs| {
                        cs.iter()
                            .any(|c| c["type"] == "Ready" && c["status"] == "True")
                    });
                if !ready {
                    return Err(anyhow!("WorkspaceType root:{name} not Ready yet"));
                }
            }
            Ok::<_, anyhow::Error>(())
        });
        if ready.is_ok() {
            return Ok(k);
        }
    }
}

/// Remove the data of earlier test processes that are gone: every run leaves
/// kcp's and the service clusters' data behind (kept while it runs, for
/// debugging), which would otherwise fill the disk over repeated runs.
fn remove_stale_runs(runs: &Path) {
    let Ok(entries) = std::fs::read_dir(runs) else {
        return;
    };
    for e in entries.flatten() {
        let alive = e
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
            .is_some_and(|pid| Path::new(&format!("/proc/{pid}")).exists());
        if !alive {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// Spawn a process that dies with the test process. The child is spawned
/// from a thread that never exits, because PR_SET_PDEATHSIG fires when the
/// *thread* that forked it ends, and test threads end all the time.
pub(crate) fn spawn_owned(cmd: Command) -> Result<u32> {
    spawn_owned_with(cmd, libc::SIGKILL)
}

/// Like [`spawn_owned`], with the signal the child gets when the test
/// process dies.
pub(crate) fn spawn_owned_with(mut cmd: Command, signal: libc::c_int) -> Result<u32> {
    use std::os::unix::process::CommandExt;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        unsafe {
            cmd.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, signal) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        match cmd.spawn() {
            Ok(mut child) => {
                let _ = tx.send(Ok(child.id()));
                let _ = child.wait();
                // Keep the thread alive: its exit would kill later children
                // if it were reused, and it costs nothing parked.
                loop {
                    std::thread::park();
                }
            }
            Err(e) => {
                let _ = tx.send(Err(e));
            }
        }
    });
    Ok(rx.recv()??)
}

/// SIGKILL `pid` (resuming it first, should it be frozen) and wait up to
/// 10 s until it is gone (the thread that spawned it reaps it).
pub(crate) fn kill_and_reap(pid: u32) {
    let pid = pid as i32;
    unsafe {
        libc::kill(pid, libc::SIGCONT);
        libc::kill(pid, libc::SIGKILL);
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while Path::new(&format!("/proc/{pid}")).exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
}

pub(crate) fn tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

impl Kcp {
    fn admin_kubeconfig(&self) -> Kubeconfig {
        self.admin_kubeconfig
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn process(&self) -> &KcpProcess {
        self.process
            .as_ref()
            .expect("only a test's own kcp (own_kcp) can be stopped and started")
    }

    fn signal(&self, signal: libc::c_int) -> i32 {
        let pid = self.process().pid.load(std::sync::atomic::Ordering::SeqCst) as i32;
        unsafe {
            libc::kill(pid, signal);
        }
        pid
    }

    /// Kill kcp (SIGKILL) as a crash would; its data stays for [`Kcp::restart`].
    pub fn kill(&self) {
        kill_and_reap(self.process().pid.load(std::sync::atomic::Ordering::SeqCst));
    }

    /// Freeze kcp (SIGSTOP): connections hang as when it is unreachable.
    pub fn pause(&self) {
        self.signal(libc::SIGSTOP);
    }

    /// Undo [`Kcp::pause`].
    pub fn resume(&self) {
        self.signal(libc::SIGCONT);
    }

    /// Start kcp again after [`Kcp::kill`] on the same data, ports and
    /// certificates, and wait until it serves workspaces.
    pub async fn restart(&'static self) -> Result<()> {
        let p = self.process();
        let pid = spawn_kcp(&p.cmd, &self.log_file)?;
        p.pid.store(pid, std::sync::atomic::Ordering::SeqCst);
        let fresh = tokio::task::spawn_blocking(move || {
            wait_ready(
                self.root_dir.clone(),
                self.log_file.clone(),
                &self.process().kubeconfig,
                self.base_url.clone(),
            )
        })
        .await??;
        *self
            .admin_kubeconfig
            .write()
            .unwrap_or_else(|e| e.into_inner()) = fresh.admin_kubeconfig();
        Ok(())
    }

    /// kube Config for a workspace path (or logical-cluster name), e.g. `root:org:ws`.
    pub async fn config(&self, workspace: &str) -> Result<Config> {
        let mut cfg = Config::from_custom_kubeconfig(
            self.admin_kubeconfig(),
            &KubeConfigOptions {
                context: Some("root".into()),
                ..Default::default()
            },
        )
        .await?;
        cfg.cluster_url = format!("{}/clusters/{workspace}", self.base_url).parse()?;
        Ok(cfg)
    }

    pub async fn client(&self, workspace: &str) -> Result<Client> {
        Ok(Client::try_from(self.config(workspace).await?)?)
    }

    /// Write a kubeconfig whose server points at `workspace`, for the agent.
    pub fn write_kubeconfig(&self, workspace: &str, path: &Path) -> Result<()> {
        let mut kc = self.admin_kubeconfig();
        let server = format!("{}/clusters/{workspace}", self.base_url);
        for c in &mut kc.clusters {
            if let Some(cluster) = c.cluster.as_mut() {
                cluster.server = Some(server.clone());
            }
        }
        kc.current_context = Some("root".into());
        let yaml = serde_yaml_ng::to_string(&kc)?;
        std::fs::File::create(path)?.write_all(yaml.as_bytes())?;
        Ok(())
    }

    /// Write a kubeconfig whose server points at `workspace` and whose user
    /// authenticates with `token` (one of the users in kcp's token file).
    pub fn write_kubeconfig_with_token(
        &self,
        workspace: &str,
        token: &str,
        path: &Path,
    ) -> Result<()> {
        let mut kc = self.admin_kubeconfig();
        let server = format!("{}/clusters/{workspace}", self.base_url);
        for c in &mut kc.clusters {
            if let Some(cluster) = c.cluster.as_mut() {
                cluster.server = Some(server.clone());
            }
        }
        let user = kc
            .contexts
            .iter()
            .find(|c| c.name == "root")
            .and_then(|c| c.context.as_ref())
            .and_then(|c| c.user.clone())
            .context("admin kubeconfig has no context root")?;
        for u in &mut kc.auth_infos {
            if u.name == user {
                u.auth_info = Some(kube::config::AuthInfo {
                    token: Some(token.to_string().into()),
                    ..Default::default()
                });
            }
        }
        kc.current_context = Some("root".into());
        let yaml = serde_yaml_ng::to_string(&kc)?;
        std::fs::File::create(path)?.write_all(yaml.as_bytes())?;
        Ok(())
    }

    /// Create a workspace under `parent` and wait until it is Ready.
    pub async fn create_workspace(&self, parent: &str, name: &str) -> Result<Workspace> {
        self.create_workspace_in(parent, name, None).await
    }

    /// Create a workspace on the shard labelled `region` (see
    /// [`sharded_kcp`]), or anywhere with `None`, and wait until it is Ready.
    pub async fn create_workspace_in(
        &self,
        parent: &str,
        name: &str,
        region: Option<&str>,
    ) -> Result<Workspace> {
        let client = self.client(parent).await?;
        let api = dynamic_api(
            &client,
            &gvk("tenancy.kcp.io", "v1alpha1", "Workspace"),
            "workspaces",
            None,
        );
        let obj = serde_json::from_value(json!({
            "apiVersion": "tenancy.kcp.io/v1alpha1",
            "kind": "Workspace",
            "metadata": {"name": name},
            "spec": match region {
                Some(r) => json!({"location": {"selector": {"matchLabels": {"region": r}}}}),
                None => json!({}),
            },
        }))?;
        // A parent that just turned Ready can answer 404 for a moment while
        // kcp's path index catches up; retry briefly.
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match api.create(&Default::default(), &obj).await {
                Ok(_) => break,
                Err(kube::Error::Api(s)) if s.code == 409 => break,
                Err(kube::Error::Api(s)) if s.code == 404 && Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(300)).await;
                }
                Err(e) => {
                    return Err(e).with_context(|| format!("creating workspace {parent}:{name}"));
                }
            }
        }
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let ws = api.get(name).await?;
            let phase = ws.data.pointer("/status/phase").and_then(|v| v.as_str());
            let cluster = ws.data.pointer("/spec/cluster").and_then(|v| v.as_str());
            if let (Some("Ready"), Some(cluster)) = (phase, cluster) {
                return Ok(Workspace {
                    path: format!("{parent}:{name}"),
                    cluster: cluster.to_string(),
                });
            }
            if Instant::now() > deadline {
                bail!("workspace {parent}:{name} not Ready after 60s (phase {phase:?})");
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}
