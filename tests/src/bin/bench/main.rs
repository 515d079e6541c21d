//! Side-by-side benchmark of `syncweave sync` and upstream kcp api-syncagent
//! v0.7.0 (`tests/bench/run.sh` builds both and runs this; docs/performance.md
//! explains the figures).
//!
//! One real kcp serves both runs. Each agent gets, in turn, its own provider
//! workspace and APIExport, a fresh service cluster (kube-apiserver + etcd),
//! the same CronTab CRD and PublishedResource (examples/crontab), the same
//! identities and flags, and the same number of consumer workspaces and
//! objects:
//!
//! - P2 (initial sync): `--objects` CronTabs exist in kcp before the agent
//!   starts; objects/s from the agent's start until every copy exists on the
//!   service cluster.
//! - P3 (memory): the agent's VmHWM right after P2.
//! - P1 (latency): once the agent has gone quiet after P2 (fewer than 20
//!   requests in 10 s), `--latency-objects` more CronTabs created at
//!   `--rate`/s; each one's time from just before its create request to the
//!   moment its copy shows up in a watch on the service cluster; p50/p99.
//! - P4 (steady state): after `--settle` s of rest and once the agent is
//!   quiet again, the requests it makes to kcp and to the service cluster
//!   over `--window` s, per object.
//!
//! Every request an agent makes goes through a counting proxy (proxy.rs): kcp
//! is started with `--shard-virtual-workspace-url` pointing at it, so the
//! virtual-workspace traffic is counted as well as the workspace traffic.

mod process;
mod proxy;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use futures::{StreamExt, TryStreamExt};
use kube::api::{DynamicObject, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use serde::Serialize;
use serde_json::json;
use syncweave_tests::env::*;
use syncweave_tests::*;

use process::AgentProcess;
use proxy::{Proxy, Snapshot, Tls};

const USAGE: &str = "\
usage: bench [options]    (normally run by tests/bench/run.sh)
  --objects N            P2/P3: objects created before the agent starts (default 10000)
  --latency-objects N    P1: objects created while the agent runs (default 1000)
  --workspaces N         consumer workspaces the objects are spread over (default 50)
  --rate R               P1: creates per second (default 20)
  --settle S             P4: seconds of rest before the window (default 20)
  --window S             P4: length of the counting window in seconds (default 60)
  --agents LIST          which agents, in order (default upstream,syncweave)
  --p2-timeout S         give up waiting for the initial sync after S seconds (default 7200)
  --p1-timeout S         give up waiting for P1 copies S seconds after the last create (default 900)
  --quiet-timeout S      before P1 and P4, wait at most S seconds for the agent to go quiet (default 600)
  --startup              S only: start-up time and memory on two PublishedResources with
                         CEL mutations and Go-template naming, empty plugin cache
                         (default --out target/bench/startup.json)
  --out FILE             write the figures as JSON (default target/bench/results.json)
env: SYNCWEAVE_BIN (default target/release/syncweave), UPSTREAM_SYNCAGENT_BIN
     (default $SYNCWEAVE_TOOLS_DIR/api-syncagent), BENCH_AGENT_DEBUG=1 (agents log
     at debug level; slows them down), BENCH_PROXY_LOG=1 (print every request)";

#[derive(Clone, Debug, Serialize)]
struct Opts {
    objects: usize,
    latency_objects: usize,
    workspaces: usize,
    rate: f64,
    settle: u64,
    window: u64,
    agents: Vec<String>,
    p2_timeout: u64,
    p1_timeout: u64,
    quiet_timeout: u64,
    startup: bool,
    out: PathBuf,
}

fn parse_args() -> Result<Opts> {
    let repo = repo();
    let mut o = Opts {
        objects: 10_000,
        latency_objects: 1_000,
        workspaces: 50,
        rate: 20.0,
        settle: 20,
        window: 60,
        agents: vec!["upstream".into(), "syncweave".into()],
        p2_timeout: 7200,
        p1_timeout: 900,
        quiet_timeout: 600,
        startup: false,
        out: repo.join("target/bench/results.json"),
    };
    let mut out_given = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) => (f.to_string(), Some(v.to_string())),
            None => (a.clone(), None),
        };
        if flag == "-h" || flag == "--help" {
            println!("{USAGE}");
            std::process::exit(0);
        }
        if flag == "--startup" {
            o.startup = true;
            continue;
        }
        let v = match inline {
            Some(v) => v,
            None => args
                .next()
                .with_context(|| format!("{flag} needs a value\n{USAGE}"))?,
        };
        let num = |v: &str| -> Result<u64> {
            v.replace('_', "")
                .parse()
                .with_context(|| format!("{flag}: not a number: {v}"))
        };
        match flag.as_str() {
            "--objects" => o.objects = num(&v)? as usize,
            "--latency-objects" => o.latency_objects = num(&v)? as usize,
            "--workspaces" => o.workspaces = num(&v)?.max(1) as usize,
            "--rate" => o.rate = v.parse().context("--rate")?,
            "--settle" => o.settle = num(&v)?,
            "--window" => o.window = num(&v)?,
            "--p2-timeout" => o.p2_timeout = num(&v)?,
            "--p1-timeout" => o.p1_timeout = num(&v)?,
            "--quiet-timeout" => o.quiet_timeout = num(&v)?,
            "--agents" => {
                o.agents = v.split(',').map(str::trim).map(String::from).collect();
                for a in &o.agents {
                    if a != "upstream" && a != "syncweave" {
                        bail!("--agents: unknown agent {a:?} (upstream, syncweave)");
                    }
                }
            }
            "--out" => {
                o.out = PathBuf::from(v);
                out_given = true;
            }
            _ => bail!("unknown flag {flag}\n{USAGE}"),
        }
    }
    anyhow::ensure!(o.rate > 0.0, "--rate must be positive");
    if o.startup && !out_given {
        o.out = repo.join("target/bench/startup.json");
    }
    Ok(o)
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

static T0: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();

fn log(msg: impl AsRef<str>) {
    let t = T0.get_or_init(Instant::now).elapsed().as_secs();
    println!("[{:>2}:{:02}] {}", t / 60, t % 60, msg.as_ref());
}

fn main() {
    T0.get_or_init(Instant::now);
    if let Err(e) = real_main() {
        eprintln!("bench failed: {e:#}");
        std::process::exit(1);
    }
}

fn real_main() -> Result<()> {
    let opts = parse_args()?;
    let binaries: Vec<(String, PathBuf)> = opts
        .agents
        .iter()
        .map(|a| (a.clone(), agent_binary(a)))
        .collect();
    for (a, b) in &binaries {
        anyhow::ensure!(
            b.exists(),
            "{a} binary {} not found (tests/bench/run.sh builds it)",
            b.display()
        );
    }
    let machine = Machine::read();
    log(format!(
        "machine: {} CPUs, {} MB memory, load {}; sizes: {} objects (P2/P3), {} (P1) at {}/s over {} workspaces",
        machine.nproc,
        machine.mem_total_mb,
        machine.load_avg,
        opts.objects,
        opts.latency_objects,
        opts.rate,
        opts.workspaces
    ));

    // kcp, with its virtual-workspace URL on the counting proxy. The
    // harness starts kcp from $SYNCWEAVE_KCP_BIN, so that is a wrapper
    // adding the flag; set before any other thread exists.
    let kcp_listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let kcp_proxy_port = kcp_listener.local_addr()?.port();
    let real_kcp = syncweave_tests::kcp::kcp_binary()?;
    let bench_dir = repo().join("target/bench");
    std::fs::create_dir_all(&bench_dir)?;
    let wrapper = bench_dir.join(format!("kcp-{}.sh", std::process::id()));
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nexec '{}' \"$@\" --shard-virtual-workspace-url=https://127.0.0.1:{kcp_proxy_port}\n",
            real_kcp.display()
        ),
    )?;
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755))?;
    }
    // SAFETY: single-threaded here; nothing reads the environment concurrently.
    unsafe { std::env::set_var("SYNCWEAVE_KCP_BIN", &wrapper) };
    log("starting kcp…");
    let kcp = kcp();
    let _ = std::fs::remove_file(&wrapper);
    log(format!("kcp ready ({})", kcp.root_dir.display()));

    let tls = Tls::generate()?;
    let rt = tokio::runtime::Runtime::new()?;
    let results = rt.block_on(async {
        kcp_listener.set_nonblocking(true)?;
        let mut upstream = kcp.config("root").await?;
        upstream.cluster_url = kcp.base_url.parse()?;
        let kcp_proxy = Proxy::start(
            tokio::net::TcpListener::from_std(kcp_listener)?,
            upstream,
            &tls,
        );
        if opts.startup {
            let mut figures = Vec::new();
            for (agent, binary) in &binaries {
                log(format!("===== S: {agent} ({}) =====", binary.display()));
                figures.push(match run_startup(agent, binary, &kcp_proxy, &tls).await {
                    Ok(f) => f,
                    Err(e) => {
                        log(format!("{agent} failed: {e:#}"));
                        Startup {
                            agent: agent.clone(),
                            binary: binary.display().to_string(),
                            error: Some(format!("{e:#}")),
                            ..Default::default()
                        }
                    }
                });
            }
            return Ok::<_, anyhow::Error>(Err(figures));
        }
        let mut results = Vec::new();
        for (agent, binary) in &binaries {
            log(format!("===== {agent} ({}) =====", binary.display()));
            let r = run_agent(agent, binary, &opts, &kcp_proxy, &tls).await;
            match r {
                Ok(f) => {
                    print_figures(&f);
                    results.push(f);
                }
                Err(e) => {
                    log(format!("{agent} failed: {e:#}"));
                    results.push(Figures::failed(agent, binary, format!("{e:#}")));
                }
            }
        }
        Ok::<_, anyhow::Error>(Ok(results))
    })?;
    let results = match results {
        Ok(r) => r,
        Err(startup) => {
            let machine_end = Machine::read();
            for f in &startup {
                println!(
                    "S {:<10} ready {:>8}  copies {:>8}  peak RSS {:>9}  RSS {:>9}  CPU {:>7}{}",
                    f.agent,
                    f.ready_seconds.map_or("-".into(), |s| format!("{s:.2} s")),
                    f.first_copies_seconds
                        .map_or("-".into(), |s| format!("{s:.2} s")),
                    mb(f.vm_hwm_kb),
                    mb(f.vm_rss_kb),
                    f.cpu_seconds.map_or("-".into(), |s| format!("{s:.2} s")),
                    f.error
                        .as_ref()
                        .map_or(String::new(), |e| format!("  FAILED: {e}")),
                );
            }
            write_json(&opts, &machine, &machine_end, json!(startup))?;
            rt.shutdown_timeout(Duration::from_secs(1));
            return Ok(());
        }
    };

    let machine_end = Machine::read();
    print_summary(&results, &opts);
    write_json(&opts, &machine, &machine_end, json!(results))?;
    // The service clusters and kcp die with this process.
    rt.shutdown_timeout(Duration::from_secs(1));
    Ok(())
}

/// The run's figures as JSON, with the options, the commit and the machine
/// (load before and after).
fn write_json(
    opts: &Opts,
    machine: &Machine,
    machine_end: &Machine,
    agents: serde_json::Value,
) -> Result<()> {
    if let Some(dir) = opts.out.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let commit = std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(repo())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    let dirty = std::process::Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=no"])
        .current_dir(repo())
        .output()
        .ok()
        .map(|o| !o.stdout.is_empty());
    std::fs::write(
        &opts.out,
        serde_json::to_string_pretty(&json!({
            "commit": commit,
            "uncommitted_changes": dirty,
            "options": opts,
            "machine": machine,
            "load_avg_at_end": machine_end.load_avg,
            "total_seconds": T0.get().unwrap().elapsed().as_secs(),
            "agents": agents,
        }))?,
    )?;
    log(format!("figures written to {}", opts.out.display()));
    Ok(())
}

fn agent_binary(agent: &str) -> PathBuf {
    match agent {
        "syncweave" => std::env::var("SYNCWEAVE_BIN")
            .map(PathBuf::from)
            .unwrap_or_else(|_| repo().join("target/release/syncweave")),
        _ => std::env::var("UPSTREAM_SYNCAGENT_BIN")
            .map(PathBuf::from)
            .unwrap_or_else(|_| syncweave_tests::kcp::tools_dir().join("api-syncagent")),
    }
}

#[derive(Clone, Debug, Serialize)]
struct Machine {
    nproc: usize,
    mem_total_mb: u64,
    load_avg: String,
    cpu_model: String,
}

impl Machine {
    fn read() -> Machine {
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let mem_kb: u64 = meminfo
            .lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0);
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        Machine {
            nproc: std::thread::available_parallelism().map_or(0, |n| n.get()),
            mem_total_mb: mem_kb / 1024,
            load_avg: std::fs::read_to_string("/proc/loadavg")
                .unwrap_or_default()
                .split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" "),
            cpu_model: cpuinfo
                .lines()
                .find_map(|l| l.strip_prefix("model name"))
                .map(|v| v.trim_start_matches([' ', '\t', ':']).to_string())
                .unwrap_or_default(),
        }
    }
}

/// Everything measured for one agent.
#[derive(Clone, Debug, Default, Serialize)]
struct Figures {
    agent: String,
    binary: String,
    error: Option<String>,
    /// Seconds to create the consumer workspaces (agent running).
    setup_seconds: f64,
    /// Seconds the bench took to create the P2 objects in kcp.
    create_seconds: f64,
    // P2
    p2_objects: usize,
    p2_synced: usize,
    p2_complete: bool,
    p2_seconds: f64,
    p2_first_copy_seconds: Option<f64>,
    p2_objects_per_second: f64,
    p2_cpu_seconds: Option<f64>,
    p2_requests_kcp: u64,
    p2_requests_service: u64,
    p2_requests_kcp_top: String,
    p2_requests_service_top: String,
    // P3
    p3_vm_hwm_kb: Option<u64>,
    p3_vm_rss_kb: Option<u64>,
    // P1
    p1_objects: usize,
    p1_seen: usize,
    p1_p50_ms: Option<f64>,
    p1_p90_ms: Option<f64>,
    p1_p99_ms: Option<f64>,
    p1_max_ms: Option<f64>,
    // P4
    p4_objects: usize,
    /// Seconds the agent took to go quiet after P2 and after P1 (None: it
    /// did not within --quiet-timeout).
    quiet_after_p2_seconds: Option<f64>,
    quiet_after_p1_seconds: Option<f64>,
    p4_window_seconds: u64,
    p4_requests_kcp: u64,
    p4_requests_service: u64,
    p4_requests_per_object: f64,
    p4_requests_kcp_top: String,
    p4_requests_service_top: String,
    end_vm_hwm_kb: Option<u64>,
    end_cpu_seconds: Option<f64>,
}

impl Figures {
    fn failed(agent: &str, binary: &Path, error: String) -> Figures {
        Figures {
            agent: agent.into(),
            binary: binary.display().to_string(),
            error: Some(error),
            ..Default::default()
        }
    }
}

/// First-seen times of service-cluster copies, keyed by
/// "<kcp cluster>/<kcp object name>" (from the sync label and annotation
/// both agents put on a copy).
#[derive(Default)]
struct Seen {
    first: Mutex<HashMap<String, Instant>>,
    initial_list_done: std::sync::atomic::AtomicBool,
}

impl Seen {
    fn count(&self, keys: &[String]) -> usize {
        let m = self.first.lock().unwrap();
        keys.iter().filter(|k| m.contains_key(*k)).count()
    }
    fn get(&self, key: &str) -> Option<Instant> {
        self.first.lock().unwrap().get(key).copied()
    }
}

fn copy_key(obj: &DynamicObject) -> String {
    let cluster = obj
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get("syncagent.kcp.io/remote-object-cluster"))
        .cloned()
        .unwrap_or_default();
    let name = obj
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get("syncagent.kcp.io/remote-object-name"))
        .cloned()
        .unwrap_or_else(|| obj.metadata.name.clone().unwrap_or_default());
    format!("{cluster}/{name}")
}

/// Watch every CronTab on the service cluster (as its admin, directly, not
/// through the proxy) and record when each copy first appears.
fn watch_copies(client: kube::Client) -> Arc<Seen> {
    let seen = Arc::new(Seen::default());
    let s = seen.clone();
    tokio::spawn(async move {
        let api = dynamic_api(
            &client,
            &gvk("example.com", "v1", "CronTab"),
            "crontabs",
            None,
        );
        let mut stream = watcher(api, watcher::Config::default())
            .default_backoff()
            .boxed();
        while let Some(ev) = stream.next().await {
            let now = Instant::now();
            match ev {
                Ok(watcher::Event::Apply(o)) | Ok(watcher::Event::InitApply(o)) => {
                    let key = copy_key(&o);
                    let mut first = s.first.lock().unwrap();
                    if let std::collections::hash_map::Entry::Vacant(e) = first.entry(key) {
                        trace(&format!("copy seen {}", e.key()));
                        e.insert(now);
                    }
                }
                Ok(watcher::Event::InitDone) => {
                    s.initial_list_done
                        .store(true, std::sync::atomic::Ordering::SeqCst);
                }
                _ => {}
            }
        }
    });
    seen
}

fn kubeconfig_yaml(server: &str, ca_pem: &str, token: &str) -> String {
    use base64::Engine as _;
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    serde_yaml_ng::to_string(&json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": server, "certificate-authority-data": ca}}],
        "users": [{"name": "agent", "user": {"token": token}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "agent"}}],
        "current-context": "c",
    }))
    .unwrap()
}

/// The same broad permissions for both agents on both sides, so neither
/// trips over RBAC the other does not need (the identities are otherwise
/// those of the e2e tests: the chart's ServiceAccount and a kcp token user).
const ALL_RBAC: &str = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: bench-agent-all}
rules:
  - {apiGroups: ["*"], resources: ["*"], verbs: ["*"]}
  - {nonResourceURLs: ["*"], verbs: ["*"]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: bench-agent-all}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: bench-agent-all}
subjects: [SUBJECT]
"#;

const AGENT_NAME_BENCH: &str = "bench-agent";

fn agent_args(agent: &str, kcp_kc: &Path, svc_kc: &Path) -> Vec<String> {
    let mut a: Vec<String> = Vec::new();
    if agent == "syncweave" {
        a.push("sync".into());
    }
    for s in [
        "--kcp-kubeconfig",
        kcp_kc.to_str().unwrap(),
        "--kubeconfig",
        svc_kc.to_str().unwrap(),
        "--namespace",
        AGENT_NAMESPACE,
        "--apiexportendpointslice-ref",
        EXPORT,
        "--agent-name",
        AGENT_NAME_BENCH,
        "--metrics-address",
        "0",
        "--log-format",
        "Console",
    ] {
        a.push(s.into());
    }
    if std::env::var_os("BENCH_AGENT_DEBUG").is_some() {
        a.push("--log-debug".into());
    }
    a
}

/// Wait until kcp and the service cluster authorize the agents' identities
/// (kcp's authorizer follows new RBAC after a moment, and upstream's agent
/// exits on its first 403).
async fn wait_for_access(env: &Env) -> Result<()> {
    let mut kcp_cfg = env.kcp.config(&env.provider.path).await?;
    kcp_cfg.auth_info = kube::config::AuthInfo {
        token: Some(AGENT_KCP_TOKEN.to_string().into()),
        ..Default::default()
    };
    let kcp_agent = kube::Client::try_from(kcp_cfg)?;
    let svc_cfg = kube::Config::from_custom_kubeconfig(
        env.service
            .kubeconfig(CHART_SERVICE_ACCOUNT, &env.agent_token),
        &Default::default(),
    )
    .await?;
    let svc_agent = kube::Client::try_from(svc_cfg)?;
    let slices = dynamic_api(
        &kcp_agent,
        &gvk("apis.kcp.io", "v1alpha1", "APIExportEndpointSlice"),
        "apiexportendpointslices",
        None,
    );
    eventually(
        "the agents' identities to be authorized",
        Duration::from_secs(60),
        || async {
            for (c, path) in [
                (&kcp_agent, "/api"),
                (&kcp_agent, "/apis"),
                (&svc_agent, "/apis"),
            ] {
                let req = http::Request::get(path).body(vec![]).unwrap();
                c.request_text(req)
                    .await
                    .map_err(|e| format!("{path}: {e}"))?;
            }
            slices.get(EXPORT).await.map_err(|e| e.to_string())?;
            let secrets = kube::Api::<k8s_openapi::api::core::v1::Secret>::namespaced(
                svc_agent.clone(),
                AGENT_NAMESPACE,
            );
            secrets
                .list(&Default::default())
                .await
                .map_err(|e| e.to_string())?;
            Ok(Some(()))
        },
    )
    .await;
    Ok(())
}

fn crontab_obj(name: &str) -> DynamicObject {
    serde_json::from_value(crontab(name, "bench-image")).unwrap()
}

/// Create, retrying transient failures (kcp on two busy cores answers 429s
/// and timeouts now and then).
async fn create(api: &kube::Api<DynamicObject>, name: &str) -> Result<()> {
    let obj = crontab_obj(name);
    let mut attempt = 0;
    loop {
        match api.create(&PostParams::default(), &obj).await {
            Ok(_) => return Ok(()),
            Err(kube::Error::Api(s)) if s.code == 409 => return Ok(()),
            Err(e) if attempt < 8 => {
                attempt += 1;
                tokio::time::sleep(Duration::from_millis(250 * attempt)).await;
                if attempt == 8 {
                    return Err(e).with_context(|| format!("creating CronTab {name}"));
                }
            }
            Err(e) => return Err(e).with_context(|| format!("creating CronTab {name}")),
        }
    }
}

/// Requests per 10 s (to kcp and the service cluster together) under which
/// an agent counts as quiet: syncweave's readiness probes and publishing
/// pass make about 6.
const QUIET_REQUESTS_PER_10S: u64 = 20;

/// Wait until the agent makes fewer than [`QUIET_REQUESTS_PER_10S`] requests
/// in 10 s, at most `timeout` s; the seconds it took, or None.
async fn wait_until_quiet(
    agent: &str,
    proc_: &AgentProcess,
    kcp_proxy: &Proxy,
    svc_proxy: &Proxy,
    timeout: u64,
) -> Option<f64> {
    let t0 = Instant::now();
    let mut last_print = Instant::now();
    loop {
        let (k, s) = (kcp_proxy.counter.snapshot(), svc_proxy.counter.snapshot());
        tokio::time::sleep(Duration::from_secs(10)).await;
        let dk = kcp_proxy.counter.snapshot().since(&k);
        let ds = svc_proxy.counter.snapshot().since(&s);
        if dk.total + ds.total < QUIET_REQUESTS_PER_10S || !proc_.is_running() {
            return Some(t0.elapsed().as_secs_f64());
        }
        if t0.elapsed() > Duration::from_secs(timeout) {
            log(format!(
                "  {agent} still busy after {timeout}s (--quiet-timeout); going on"
            ));
            return None;
        }
        if last_print.elapsed() > progress_interval(t0) {
            last_print = Instant::now();
            log(format!(
                "  waiting for {agent} to go quiet: {} requests to kcp [{}], {} to the service cluster in the last 10s",
                dk.total,
                dk.top(3),
                ds.total
            ));
        }
    }
}

/// With BENCH_PROXY_LOG set, a line on stderr stamped like the proxy's
/// (µs since the epoch), to put P1's creates and copies on the agents'
/// request timeline.
fn trace(what: &str) {
    if std::env::var_os("BENCH_PROXY_LOG").is_some() {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        eprintln!("bench: {} {what}", t.as_micros());
    }
}

/// Progress every 10 s for two minutes, then every 30 s.
fn progress_interval(since: Instant) -> Duration {
    if since.elapsed() < Duration::from_secs(120) {
        Duration::from_secs(10)
    } else {
        Duration::from_secs(30)
    }
}

/// A latency, or "-" when unknown (copies missing after the timeout).
fn ms(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:.0} ms"))
}

fn mb(kb: Option<u64>) -> String {
    kb.map_or("-".into(), |k| format!("{:.1} MB", k as f64 / 1024.0))
}

/// What every run of an agent starts from.
struct Setup {
    env: Env,
    /// The counting proxy in front of the service cluster.
    svc_proxy: Proxy,
    /// The agent's command line.
    args: Vec<String>,
}

/// A fresh provider workspace and service cluster for `agent`, both reached
/// through counting proxies, and the same RBAC for either agent.
async fn set_up(agent: &str, binary: &Path, kcp_proxy: &Proxy, tls: &Tls) -> Result<Setup> {
    // Env::prepare never runs the binary it is given; we start agents here.
    let env = Env::prepare(&format!("bench-{agent}"), binary).await;
    log(format!(
        "provider {} and a fresh service cluster ready",
        env.provider.path
    ));
    apply_yaml(
        &env.service_client,
        &ALL_RBAC.replace(
            "SUBJECT",
            &format!(
                "{{kind: ServiceAccount, name: {CHART_SERVICE_ACCOUNT}, namespace: {AGENT_NAMESPACE}}}"
            ),
        ),
    )
    .await
    .context("agent RBAC on the service cluster")?;
    let provider_client = env.kcp.client(&env.provider.path).await?;
    apply_yaml(
        &provider_client,
        &ALL_RBAC.replace(
            "SUBJECT",
            &format!("{{apiGroup: rbac.authorization.k8s.io, kind: User, name: {AGENT_KCP_USER}}}"),
        ),
    )
    .await
    .context("agent RBAC in kcp")?;

    let svc_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let svc_upstream = kube::Config::from_custom_kubeconfig(
        env.service.kubeconfig("admin", "-"),
        &Default::default(),
    )
    .await?;
    let svc_proxy = Proxy::start(svc_listener, svc_upstream, tls);
    let kcp_kc = env.dir.join("bench-kcp.kubeconfig");
    let svc_kc = env.dir.join("bench-service.kubeconfig");
    std::fs::write(
        &kcp_kc,
        kubeconfig_yaml(
            &format!("{}/clusters/{}", kcp_proxy.url, env.provider.path),
            &tls.ca_pem,
            AGENT_KCP_TOKEN,
        ),
    )?;
    std::fs::write(
        &svc_kc,
        kubeconfig_yaml(&svc_proxy.url, &tls.ca_pem, &env.agent_token),
    )?;
    wait_for_access(&env).await?;
    let args = agent_args(agent, &kcp_kc, &svc_kc);
    Ok(Setup {
        env,
        svc_proxy,
        args,
    })
}

async fn run_agent(
    agent: &str,
    binary: &Path,
    opts: &Opts,
    kcp_proxy: &Proxy,
    tls: &Tls,
) -> Result<Figures> {
    let mut f = Figures {
        agent: agent.into(),
        binary: binary.display().to_string(),
        ..Default::default()
    };
    let Setup {
        env,
        svc_proxy,
        args,
    } = set_up(agent, binary, kcp_proxy, tls).await?;
    let log_path = |phase: &str| env.dir.join(format!("agent-{agent}-{phase}.log"));

    // 1. Publish the API and bind the consumers (the agent must run for the
    //    APIExport to get its schema).
    env.publish().await;
    let setup_agent = AgentProcess::start(binary, &args, &log_path("setup"))?;
    let t = Instant::now();
    env.wait_for_schema("publish-crontabs").await;
    log(format!(
        "schema published after {:.1}s; creating {} consumer workspaces…",
        t.elapsed().as_secs_f64(),
        opts.workspaces
    ));
    let env_ref = &env;
    let consumers: Vec<(Workspace, kube::Client)> =
        futures::stream::iter((0..opts.workspaces).map(|i| async move {
            Ok::<_, anyhow::Error>(env_ref.consumer(&format!("c{i:02}")).await)
        }))
        .buffered(4)
        .try_collect()
        .await?;
    f.setup_seconds = t.elapsed().as_secs_f64();
    log(format!("consumers ready after {:.1}s", f.setup_seconds));
    if !setup_agent.is_running() {
        bail!(
            "the agent exited during set-up; see {}",
            log_path("setup").display()
        );
    }
    setup_agent.stop();
    drop(setup_agent);

    // 2. P2: objects that exist before the agent starts.
    let apis: Vec<kube::Api<DynamicObject>> = consumers
        .iter()
        .map(|(_, c)| crontabs(c, "default"))
        .collect();
    let key = |i: usize, name: &str| format!("{}/{name}", consumers[i % consumers.len()].0.cluster);
    let p2_names: Vec<String> = (0..opts.objects).map(|i| format!("p2-{i:05}")).collect();
    let p2_keys: Vec<String> = p2_names
        .iter()
        .enumerate()
        .map(|(i, n)| key(i, n))
        .collect();
    log(format!(
        "creating {} CronTabs in kcp (agent stopped)…",
        opts.objects
    ));
    let t = Instant::now();
    let done = std::sync::atomic::AtomicUsize::new(0);
    let mut last_print = Instant::now();
    let mut stream = futures::stream::iter(p2_names.iter().enumerate().map(|(i, n)| {
        let api = apis[i % apis.len()].clone();
        let done = &done;
        async move {
            create(&api, n).await?;
            done.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Ok::<_, anyhow::Error>(())
        }
    }))
    .buffer_unordered(32);
    while let Some(r) = stream.next().await {
        r?;
        if last_print.elapsed() > Duration::from_secs(10) {
            last_print = Instant::now();
            let n = done.load(std::sync::atomic::Ordering::Relaxed);
            log(format!(
                "  created {n}/{} ({:.0}/s)",
                opts.objects,
                n as f64 / t.elapsed().as_secs_f64()
            ));
        }
    }
    drop(stream);
    f.create_seconds = t.elapsed().as_secs_f64();
    f.p2_objects = opts.objects;
    log(format!(
        "created {} CronTabs in {:.1}s; starting the agent (P2: initial sync)…",
        opts.objects, f.create_seconds
    ));

    let seen = watch_copies(env.service_client.clone());
    while !seen
        .initial_list_done
        .load(std::sync::atomic::Ordering::SeqCst)
    {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let before_kcp = kcp_proxy.counter.snapshot();
    let before_svc = svc_proxy.counter.snapshot();
    let t0 = Instant::now();
    let agent_proc = AgentProcess::start(binary, &args, &log_path("run"))?;
    let deadline = t0 + Duration::from_secs(opts.p2_timeout);
    let mut last_print = Instant::now();
    let mut synced;
    loop {
        synced = seen.count(&p2_keys);
        if synced == opts.objects {
            break;
        }
        if f.p2_first_copy_seconds.is_none() && synced > 0 {
            f.p2_first_copy_seconds = Some(t0.elapsed().as_secs_f64());
        }
        if !agent_proc.is_running() {
            bail!("the agent exited; see {}", log_path("run").display());
        }
        if Instant::now() > deadline {
            log(format!(
                "P2 timed out after {}s with {synced}/{} copies",
                opts.p2_timeout, opts.objects
            ));
            break;
        }
        if last_print.elapsed() > progress_interval(t0) {
            last_print = Instant::now();
            let el = t0.elapsed().as_secs_f64();
            let rk = kcp_proxy.counter.snapshot().since(&before_kcp).total;
            let rs = svc_proxy.counter.snapshot().since(&before_svc).total;
            log(format!(
                "  {synced}/{} copies after {el:.0}s ({:.1}/s); agent: RSS {}, {rk} requests to kcp ({:.1}/s), {rs} to the service cluster ({:.1}/s)",
                opts.objects,
                synced as f64 / el,
                mb(agent_proc.status_kb("VmRSS")),
                rk as f64 / el,
                rs as f64 / el,
            ));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The time the last copy was first seen, not when we polled.
    let last = p2_keys.iter().filter_map(|k| seen.get(k)).max();
    let first = p2_keys.iter().filter_map(|k| seen.get(k)).min();
    f.p2_synced = synced;
    f.p2_complete = synced == opts.objects;
    f.p2_seconds = match (f.p2_complete, last) {
        (true, Some(l)) => l.duration_since(t0).as_secs_f64(),
        _ => t0.elapsed().as_secs_f64(),
    };
    f.p2_first_copy_seconds = first.map(|i| i.duration_since(t0).as_secs_f64());
    f.p2_objects_per_second = synced as f64 / f.p2_seconds;
    f.p2_cpu_seconds = agent_proc.cpu_seconds();
    let d_kcp = kcp_proxy.counter.snapshot().since(&before_kcp);
    let d_svc = svc_proxy.counter.snapshot().since(&before_svc);
    f.p2_requests_kcp = d_kcp.total;
    f.p2_requests_service = d_svc.total;
    f.p2_requests_kcp_top = d_kcp.top(6);
    f.p2_requests_service_top = d_svc.top(6);
    // P3
    f.p3_vm_hwm_kb = agent_proc.status_kb("VmHWM");
    f.p3_vm_rss_kb = agent_proc.status_kb("VmRSS");
    log(format!(
        "P2: {synced}/{} copies in {:.1}s = {:.1} objects/s (first copy after {:.1}s; agent CPU {:.1}s; requests kcp {} / service {}); P3: VmHWM {}",
        opts.objects,
        f.p2_seconds,
        f.p2_objects_per_second,
        f.p2_first_copy_seconds.unwrap_or(f64::NAN),
        f.p2_cpu_seconds.unwrap_or(f64::NAN),
        d_kcp.total,
        d_svc.total,
        mb(f.p3_vm_hwm_kb)
    ));

    // 3. P1: create → copy latency, open loop at a fixed rate, once the
    //    agent has finished what the initial sync left it to do.
    f.quiet_after_p2_seconds = wait_until_quiet(
        agent,
        &agent_proc,
        kcp_proxy,
        &svc_proxy,
        opts.quiet_timeout,
    )
    .await;
    log(format!(
        "P1: creating {} CronTabs at {}/s…",
        opts.latency_objects, opts.rate
    ));
    let p1_names: Vec<String> = (0..opts.latency_objects)
        .map(|i| format!("p1-{i:05}"))
        .collect();
    let p1_keys: Vec<String> = p1_names
        .iter()
        .enumerate()
        .map(|(i, n)| key(i, n))
        .collect();
    let sent: Arc<Mutex<HashMap<usize, Instant>>> = Arc::default();
    let start = tokio::time::Instant::now() + Duration::from_millis(200);
    let mut tasks = tokio::task::JoinSet::new();
    for (i, n) in p1_names.iter().enumerate() {
        let api = apis[i % apis.len()].clone();
        let (n, sent) = (n.clone(), sent.clone());
        let at = start + Duration::from_secs_f64(i as f64 / opts.rate);
        tasks.spawn(async move {
            tokio::time::sleep_until(at).await;
            sent.lock().unwrap().insert(i, Instant::now());
            trace(&format!("create {n}"));
            create(&api, &n).await
        });
    }
    let mut last_print = Instant::now();
    let p1_t0 = Instant::now();
    let p1_deadline_after_sent = Duration::from_secs(opts.p1_timeout);
    let mut all_sent_at: Option<Instant> = None;
    loop {
        while let Some(r) = tasks.try_join_next() {
            r??;
        }
        let s = seen.count(&p1_keys);
        if s == opts.latency_objects {
            break;
        }
        if tasks.is_empty() && all_sent_at.is_none() {
            all_sent_at = Some(Instant::now());
        }
        if all_sent_at.is_some_and(|t| t.elapsed() > p1_deadline_after_sent) {
            log(format!(
                "P1 timed out with {s}/{} copies",
                opts.latency_objects
            ));
            break;
        }
        if !agent_proc.is_running() {
            bail!("the agent exited; see {}", log_path("run").display());
        }
        if last_print.elapsed() > progress_interval(p1_t0) {
            last_print = Instant::now();
            log(format!(
                "  sent {}, copies {s}/{}",
                sent.lock().unwrap().len(),
                opts.latency_objects
            ));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    while let Some(r) = tasks.join_next().await {
        r??;
    }
    let sent = sent.lock().unwrap().clone();
    let mut lat: Vec<f64> = p1_keys
        .iter()
        .enumerate()
        .filter_map(|(i, k)| {
            let s = sent.get(&i)?;
            let c = seen.get(k)?;
            Some(c.saturating_duration_since(*s).as_secs_f64() * 1000.0)
        })
        .collect();
    lat.sort_by(|a, b| a.partial_cmp(b).unwrap());
    // Percentiles over all objects sent; a copy that never showed up counts
    // as slower than every seen one, so a percentile that falls on one is
    // unknown (None: "more than the time waited").
    let total = opts.latency_objects.max(1);
    let pct = |p: f64| -> Option<f64> {
        let i = ((total as f64 * p).ceil() as usize).clamp(1, total) - 1;
        lat.get(i).copied()
    };
    f.p1_objects = opts.latency_objects;
    f.p1_seen = lat.len();
    f.p1_p50_ms = pct(0.50);
    f.p1_p90_ms = pct(0.90);
    f.p1_p99_ms = pct(0.99);
    f.p1_max_ms = lat
        .last()
        .copied()
        .filter(|_| lat.len() == opts.latency_objects);
    log(format!(
        "P1: {}/{} copies, p50 {}, p90 {}, p99 {}, max {}",
        f.p1_seen,
        f.p1_objects,
        ms(f.p1_p50_ms),
        ms(f.p1_p90_ms),
        ms(f.p1_p99_ms),
        ms(f.p1_max_ms)
    ));

    // 4. P4: steady state.
    f.p4_objects = f.p2_synced + f.p1_seen;
    log(format!(
        "P4: {}s of rest, then counting the agent's requests for {}s…",
        opts.settle, opts.window
    ));
    tokio::time::sleep(Duration::from_secs(opts.settle)).await;
    f.quiet_after_p1_seconds = wait_until_quiet(
        agent,
        &agent_proc,
        kcp_proxy,
        &svc_proxy,
        opts.quiet_timeout,
    )
    .await;
    let (k0, s0): (Snapshot, Snapshot) =
        (kcp_proxy.counter.snapshot(), svc_proxy.counter.snapshot());
    tokio::time::sleep(Duration::from_secs(opts.window)).await;
    let dk = kcp_proxy.counter.snapshot().since(&k0);
    let ds = svc_proxy.counter.snapshot().since(&s0);
    f.p4_window_seconds = opts.window;
    f.p4_requests_kcp = dk.total;
    f.p4_requests_service = ds.total;
    f.p4_requests_per_object = (dk.total + ds.total) as f64 / f.p4_objects.max(1) as f64;
    f.p4_requests_kcp_top = dk.top(6);
    f.p4_requests_service_top = ds.top(6);
    f.end_vm_hwm_kb = agent_proc.status_kb("VmHWM");
    f.end_cpu_seconds = agent_proc.cpu_seconds();
    log(format!(
        "P4: {} requests to kcp [{}], {} to the service cluster [{}] in {}s over {} objects",
        dk.total,
        dk.top(4),
        ds.total,
        ds.top(4),
        opts.window,
        f.p4_objects
    ));
    if !agent_proc.is_running() {
        bail!("the agent exited; see {}", log_path("run").display());
    }
    agent_proc.stop();
    log(format!("{agent} done; logs in {}", env.dir.display()));
    drop(svc_proxy);
    drop(env);
    Ok(f)
}

fn print_figures(f: &Figures) {
    log(format!(
        "{}: P1 p50 {} p99 {} | P2 {:.1} objects/s ({}/{} in {:.1}s) | P3 VmHWM {} | P4 {} + {} requests in {}s = {:.4}/object",
        f.agent,
        ms(f.p1_p50_ms),
        ms(f.p1_p99_ms),
        f.p2_objects_per_second,
        f.p2_synced,
        f.p2_objects,
        f.p2_seconds,
        mb(f.p3_vm_hwm_kb),
        f.p4_requests_kcp,
        f.p4_requests_service,
        f.p4_window_seconds,
        f.p4_requests_per_object
    ));
}

fn print_summary(results: &[Figures], opts: &Opts) {
    println!();
    println!(
        "==== results ({} objects for P2/P3, {} for P1 at {}/s, {} workspaces, P4 window {}s) ====",
        opts.objects, opts.latency_objects, opts.rate, opts.workspaces, opts.window
    );
    let cell = |v: Option<f64>, unit: &str| v.map_or("-".to_string(), |v| format!("{v:.1}{unit}"));
    println!(
        "{:<10} {:>12} {:>12} {:>14} {:>12} {:>12} {:>10}",
        "agent", "P1 p50", "P1 p99", "P2 objects/s", "P3 VmHWM", "P4 req/obj", "P2 CPU"
    );
    for f in results {
        if let Some(e) = &f.error {
            println!("{:<10} failed: {e}", f.agent);
            continue;
        }
        println!(
            "{:<10} {:>12} {:>12} {:>14} {:>12} {:>12.5} {:>10}{}",
            f.agent,
            cell(f.p1_p50_ms, " ms"),
            cell(f.p1_p99_ms, " ms"),
            format!("{:.1}", f.p2_objects_per_second),
            mb(f.p3_vm_hwm_kb),
            f.p4_requests_per_object,
            cell(f.p2_cpu_seconds, " s"),
            if f.p2_complete {
                ""
            } else {
                "  (P2 incomplete)"
            }
        );
    }
    let get = |a: &str| results.iter().find(|f| f.agent == a && f.error.is_none());
    let (Some(sw), Some(up)) = (get("syncweave"), get("upstream")) else {
        return;
    };
    println!();
    println!("syncweave vs upstream (targets in brackets):");
    let verdict = |ok: bool| if ok { "met" } else { "MISSED" };
    if let (Some(s), None) = (sw.p1_p50_ms, up.p1_p50_ms) {
        println!(
            "  P1 p50 latency   syncweave {s:.0} ms; upstream's unknown (over half its copies missing after the timeout)  [≤ 0.5×]  met"
        );
    }
    if let (Some(s), Some(u)) = (sw.p1_p50_ms, up.p1_p50_ms) {
        let r = s / u;
        println!(
            "  P1 p50 latency   {r:.2}× upstream  [≤ 0.5×]  {}",
            verdict(r <= 0.5)
        );
    }
    if let (Some(s), Some(u)) = (sw.p1_p99_ms, up.p1_p99_ms) {
        println!("  P1 p99 latency   {:.2}× upstream  (no target)", s / u);
    }
    // An incomplete initial sync took longer than its timeout: its rate is
    // at most objects / timeout, which bounds the ratio.
    let full_rate = |f: &Figures| f.p2_objects as f64 / f.p2_seconds;
    match (sw.p2_complete, up.p2_complete) {
        (true, true) => {
            let r = sw.p2_objects_per_second / up.p2_objects_per_second;
            println!(
                "  P2 initial sync  {r:.2}× upstream  [≥ 2×]  {}",
                verdict(r >= 2.0)
            );
        }
        (true, false) => {
            let r = sw.p2_objects_per_second / full_rate(up);
            println!(
                "  P2 initial sync  ≥ {r:.2}× upstream (upstream did not finish)  [≥ 2×]  {}",
                if r >= 2.0 { "met" } else { "unknown" }
            );
        }
        (false, _) => println!(
            "  P2 initial sync  syncweave did not finish ({}/{} copies)  [≥ 2×]  MISSED",
            sw.p2_synced, sw.p2_objects
        ),
    }
    if let (Some(s), Some(u)) = (sw.p3_vm_hwm_kb, up.p3_vm_hwm_kb) {
        let r = s as f64 / u as f64;
        println!(
            "  P3 peak RSS      {r:.2}× upstream  [≤ 0.5×]  {}",
            verdict(r <= 0.5)
        );
    }
    println!(
        "  P4 steady state  {:.5} requests/object (upstream {:.5})  [= 0]  {}",
        sw.p4_requests_per_object,
        up.p4_requests_per_object,
        verdict(sw.p4_requests_kcp + sw.p4_requests_service == 0)
    );
}

/// S (start-up): two PublishedResources with CEL mutations and Go-template
/// naming, valid for both agents, as a provider would run them.
const STARTUP_RESOURCES: &str = r#"
apiVersion: syncagent.kcp.io/v1alpha1
kind: PublishedResource
metadata: {name: publish-crontabs}
spec:
  resource: {kind: CronTab, apiGroup: example.com, versions: [v1]}
  naming:
    namespace: "{{ .ClusterName }}"
    name: "{{ .Object.metadata.name }}-{{ .Object.metadata.namespace | sha3short }}"
  mutation:
    spec:
      - cel: {path: spec.cronSpec, expression: "value + ' # synced'"}
---
apiVersion: syncagent.kcp.io/v1alpha1
kind: PublishedResource
metadata: {name: publish-notes}
spec:
  resource: {kind: Note, apiGroup: example.com, versions: [v1]}
  naming:
    namespace: "{{ .ClusterName }}"
    name: "{{ .Object.metadata.name }}-{{ .Object.metadata.namespace | sha3short }}"
  mutation:
    spec:
      # value is a double, as in upstream (numbers come from JSON)
      - cel: {path: spec.replicas, expression: "value * 2.0"}
"#;

/// S: one agent's start-up figures.
#[derive(Clone, Debug, Default, Serialize)]
struct Startup {
    agent: String,
    binary: String,
    error: Option<String>,
    /// Seconds from exec until `/readyz` answers 200. syncweave only:
    /// upstream v0.7.0 registers no readiness check.
    ready_seconds: Option<f64>,
    /// Seconds from exec until the copies of two objects (one per
    /// PublishedResource) created while the agent was stopped exist on the
    /// service cluster: start-up until real work is done, for both agents.
    first_copies_seconds: Option<f64>,
    /// VmHWM (peak RSS) and VmRSS 20 s after the copies appeared.
    vm_hwm_kb: Option<u64>,
    vm_rss_kb: Option<u64>,
    /// CPU seconds the agent used until then.
    cpu_seconds: Option<f64>,
}

/// S: start the agent with an empty compiled-plugin cache (a new pod's
/// emptyDir) on [`STARTUP_RESOURCES`], after a first run has published the
/// schemas and bound a consumer.
async fn run_startup(agent: &str, binary: &Path, kcp_proxy: &Proxy, tls: &Tls) -> Result<Startup> {
    let mut f = Startup {
        agent: agent.into(),
        binary: binary.display().to_string(),
        ..Default::default()
    };
    let Setup {
        env,
        svc_proxy: _svc_proxy,
        mut args,
    } = set_up(agent, binary, kcp_proxy, tls).await?;
    let log_path = |phase: &str| env.dir.join(format!("agent-{agent}-{phase}.log"));
    apply_crds(&env.service_client, NOTE_CRD)
        .await
        .context("Note CRD")?;
    env.publish_yaml(STARTUP_RESOURCES).await;
    let setup_agent = AgentProcess::start(binary, &args, &log_path("setup"))?;
    env.wait_for_schema("publish-crontabs").await;
    env.wait_for_schema("publish-notes").await;
    let (_ws, client) = env.consumer("c00").await;
    let crontabs = crontabs(&client, "default");
    let notes = dynamic_api(
        &client,
        &gvk("example.com", "v1", "Note"),
        "notes",
        Some("default"),
    );
    let copies = |name: &str| {
        let svc = env.service_client.clone();
        let name = name.to_string();
        async move {
            let mut n = 0;
            for (kind, plural) in [("CronTab", "crontabs"), ("Note", "notes")] {
                let api = dynamic_api(&svc, &gvk("example.com", "v1", kind), plural, None);
                let list = api.list(&Default::default()).await.ok()?;
                n += list
                    .items
                    .iter()
                    .filter(|o| o.metadata.name.as_deref().unwrap_or("").starts_with(&name))
                    .count();
            }
            Some(n)
        }
    };
    let note = |name: &str| -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "example.com/v1", "kind": "Note",
            "metadata": {"name": name}, "spec": {"replicas": 3}
        }))
        .unwrap()
    };
    // Warm-up: one object each, synced by the set-up run.
    create(&crontabs, "warm-up").await?;
    notes
        .create(&PostParams::default(), &note("warm-up"))
        .await?;
    let t = Instant::now();
    while copies("warm-up").await != Some(2) {
        anyhow::ensure!(
            t.elapsed() < Duration::from_secs(300),
            "the set-up run did not sync the warm-up objects in 300 s; see {}",
            log_path("setup").display()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    setup_agent.stop();
    drop(setup_agent);

    // Pending work for the measured start.
    create(&crontabs, "pending").await?;
    notes
        .create(&PostParams::default(), &note("pending"))
        .await?;
    let health = if agent == "syncweave" {
        let port = free_port();
        args.push(format!("--health-address=127.0.0.1:{port}"));
        Some(port)
    } else {
        None
    };
    let cache = env.dir.join(format!("plugin-cache-{agent}"));
    let _ = std::fs::remove_dir_all(&cache);
    std::fs::create_dir_all(&cache)?;
    log(format!("{agent}: measured start (empty plugin cache)…"));
    let t0 = Instant::now();
    let proc_ = AgentProcess::start_with_env(
        binary,
        &args,
        &[("SYNCWEAVE_CACHE_DIR", cache.as_path())],
        &log_path("startup"),
    )?;
    loop {
        if f.ready_seconds.is_none()
            && let Some(port) = health
            && readyz_ok(port).await
        {
            f.ready_seconds = Some(t0.elapsed().as_secs_f64());
        }
        if f.first_copies_seconds.is_none() && copies("pending").await == Some(2) {
            f.first_copies_seconds = Some(t0.elapsed().as_secs_f64());
        }
        if f.first_copies_seconds.is_some() && (health.is_none() || f.ready_seconds.is_some()) {
            break;
        }
        if !proc_.is_running() {
            bail!("the agent exited; see {}", log_path("startup").display());
        }
        if t0.elapsed() > Duration::from_secs(300) {
            bail!(
                "not ready and synced 300 s after start; see {}",
                log_path("startup").display()
            );
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    tokio::time::sleep(Duration::from_secs(20)).await;
    f.vm_hwm_kb = proc_.status_kb("VmHWM");
    f.vm_rss_kb = proc_.status_kb("VmRSS");
    f.cpu_seconds = proc_.cpu_seconds();
    proc_.stop();
    log(format!(
        "{agent}: ready {}, copies after {}, peak RSS {}, RSS {}, CPU {}",
        f.ready_seconds
            .map_or("- (no readiness check)".into(), |s| format!("{s:.2} s")),
        f.first_copies_seconds
            .map_or("-".into(), |s| format!("{s:.2} s")),
        mb(f.vm_hwm_kb),
        mb(f.vm_rss_kb),
        f.cpu_seconds.map_or("-".into(), |s| format!("{s:.2} s")),
    ));
    Ok(f)
}

/// Whether `GET /readyz` on the health port answers 200 within 500 ms.
async fn readyz_ok(port: u16) -> bool {
    tokio::time::timeout(Duration::from_millis(500), http_get(port, "/readyz"))
        .await
        .is_ok_and(|r| r.is_ok_and(|(code, _)| code == 200))
}
