//! One agent's run, and the ceiling's. Every agent gets a fresh provider
//! workspace, service cluster and set of consumer workspaces in the one kcp,
//! and goes through the same phases:
//!
//! 1. **idle**: the agent starts with the consumers bound and no object;
//!    once quiet, its RSS is the baseline for bytes per object, and
//!    **P1 sustained** runs: `--latency-objects` CronTabs at `--rate`/s, the
//!    agent idle before the first create.
//! 2. the agent stops; `--objects` CronTabs are created (the backlog).
//! 3. the agent starts again: **P2** (initial sync: objects/s from its start
//!    until every backlog copy exists), time to Ready with the backlog, CPU,
//!    and meanwhile **P1 under load** (`--load-latency-objects` created at
//!    `--rate`/s from its start, while the backlog is being synced).
//! 4. **P3** peak RSS after P2, and, once the agent is quiet again, RSS and
//!    bytes per cached object over the idle baseline; **cost** per new object
//!    (API writes and requests from the proxies; plugin calls and the
//!    agent's own request counters from its metrics).
//! 5. **P1 at size** (`--idle-latency-objects`, if any): latency with every
//!    object held and idle.
//! 6. **P4**: after `--settle` s and once quiet, requests over `--window` s
//!    per object, while the health endpoint is polled every
//!    `--probe-interval` s from the agent's start, as a kubelet does.
//!
//! The agent's RSS, CPU and requests are sampled every `--sample-interval` s
//! from phase 3's start to the end (for the charts).
//!
//! The ceiling runs P1 sustained (the plain client following a watch: P1's
//! floor on this kcp and machine) and P2, nothing else.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Result, anyhow, bail};
use serde::Serialize;

use crate::ceiling::{self, CeilingInfo};
use crate::env::{Ports, Setup, is_upstream, set_up, wait_until_quiet};
use crate::latency::{self, Latency, Seen, Target};
use crate::observe::{self, Prober, Sample, Sampler};
use crate::populate::{self, KcpRaw, ObjectPlace};
use crate::process::AgentProcess;
use crate::proxy::{Proxy, Snapshot, Tls};
use crate::{Opts, log, mb, progress_interval};

/// Everything measured for one agent (or the ceiling). Phases that did not
/// run, or that the agent failed before, are null.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Figures {
    pub agent: String,
    pub binary: String,
    pub error: Option<String>,
    pub workspaces: usize,
    /// Seconds to create the consumer workspaces (agent running).
    pub workspaces_seconds: f64,
    /// Seconds the bench took to create the backlog in kcp.
    pub create_seconds: f64,
    pub idle: Option<Idle>,
    pub p1_sustained: Option<Latency>,
    pub p1_under_load: Option<Latency>,
    pub p1_at_size: Option<Latency>,
    pub p2: Option<InitialSync>,
    pub p3: Option<Memory>,
    pub cost: Option<Cost>,
    pub p4: Option<Steady>,
    /// The ceiling client's own figures (agent `ceiling` only).
    pub ceiling: Option<CeilingInfo>,
    /// The agent from phase 3 on, every --sample-interval s.
    pub samples: Vec<Sample>,
    /// `perf record` data of the initial sync (--profile).
    pub profile: Option<String>,
}

/// The agent with the consumers bound and no object.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Idle {
    /// Seconds from exec to the first 200 from `/readyz` (null: never, e.g.
    /// upstream v0.7.0 registers no readiness check).
    pub ready_seconds: Option<f64>,
    pub quiet_wait_seconds: Option<f64>,
    pub quiet: bool,
    pub rss_kb: Option<u64>,
    pub hwm_kb: Option<u64>,
    pub cpu_seconds: Option<f64>,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct InitialSync {
    pub objects: usize,
    pub synced: usize,
    pub complete: bool,
    /// From the agent's exec to the last backlog copy showing up.
    pub seconds: f64,
    pub first_copy_seconds: Option<f64>,
    pub objects_per_second: f64,
    /// Seconds from exec to the first 200 from `/readyz` with the backlog.
    pub ready_seconds: Option<f64>,
    pub cpu_seconds: Option<f64>,
    pub cpu_seconds_per_1000_objects: Option<f64>,
    pub requests_kcp: u64,
    pub requests_service: u64,
    pub writes_kcp: u64,
    pub writes_service: u64,
    pub requests_kcp_top: String,
    pub requests_service_top: String,
    /// Copies created on the service cluster while P2 ran: the backlog's and
    /// those of objects created meanwhile (P1 under load), which an agent
    /// with a priority queue syncs before the backlog ends.
    pub copies_created: u64,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Memory {
    /// VmHWM and VmRSS right after P2.
    pub hwm_kb: Option<u64>,
    pub rss_kb_after_sync: Option<u64>,
    /// VmRSS once the agent went quiet after P2 (or after --quiet-timeout).
    pub rss_kb_settled: Option<u64>,
    pub settled_quiet: bool,
    /// Objects the agent holds then (sustained + backlog + under load).
    pub objects_held: usize,
    /// (settled RSS − idle RSS) / objects held: the marginal memory of one
    /// cached object.
    pub bytes_per_object: Option<f64>,
}

/// What one new object cost, over the initial sync and the under-load P1:
/// from the agent's start until it went quiet again afterwards (or
/// --quiet-timeout), so that writes trailing the copies count.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Cost {
    pub new_objects: usize,
    pub window_seconds: f64,
    /// Creates, updates, patches and deletes the proxies saw, per object.
    pub writes_per_object: f64,
    pub writes_kcp_per_object: f64,
    pub writes_service_per_object: f64,
    /// Every request but watches, per object.
    pub requests_per_object: f64,
    /// From the agent's metrics (syncweave): plugin calls, reconciles and
    /// the agent's own count of its writes, per object.
    pub plugin_calls_per_object: Option<f64>,
    pub reconciles_per_object: Option<f64>,
    pub metric_writes_per_object: Option<f64>,
    /// The metrics' counters over the window (syncweave).
    pub metrics: BTreeMap<String, f64>,
    pub requests_kcp_by_kind: BTreeMap<String, u64>,
    pub requests_service_by_kind: BTreeMap<String, u64>,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Steady {
    pub objects: usize,
    pub quiet_wait_seconds: Option<f64>,
    pub quiet: bool,
    pub window_seconds: u64,
    pub requests_kcp: u64,
    pub requests_service: u64,
    pub requests_per_object: f64,
    pub requests_kcp_top: String,
    pub requests_service_top: String,
    /// Probe answers during the window, by path and status code.
    pub probes: BTreeMap<String, BTreeMap<String, u64>>,
    pub probe_interval_seconds: u64,
}

/// What a run needs besides its agent.
pub struct Ctx<'a> {
    pub opts: &'a Opts,
    pub kcp_proxy: &'a Proxy,
    pub tls: &'a Tls,
    pub raw: &'a KcpRaw,
}

/// Where a P1 phase creates its objects and waits for their copies: the
/// same for every agent and the ceiling, so that their P1s compare.
fn p1_target<'a>(
    ctx: &Ctx<'a>,
    places: &'a [ObjectPlace],
    seen: &Arc<Seen>,
    alive: &'a (dyn Fn() -> Result<()> + Sync),
    backlog: Option<Arc<AtomicBool>>,
) -> Target<'a> {
    Target {
        raw: ctx.raw,
        places,
        seen: seen.clone(),
        timeout_after_sent: Duration::from_secs(ctx.opts.p1_timeout),
        alive,
        backlog,
    }
}

fn alive(agent: &AgentProcess, log_path: &Path) -> impl Fn() -> Result<()> + Sync + use<> {
    let pid = agent.pid;
    let exited = agent.exited_flag();
    let log_path = log_path.to_path_buf();
    move || {
        if !exited.load(Ordering::SeqCst) {
            Ok(())
        } else {
            Err(anyhow!(
                "the agent (pid {pid}) exited; see {}",
                log_path.display()
            ))
        }
    }
}

/// The PublishedResource of `--plugin wasm|wasm-reads`: the example's
/// CronTabs with one Wasm mutation step, the same component either way, so
/// that the two runs differ only in the read (and what the agent does for
/// it: the Namespace cache, the read dependencies, no in-sync memo).
fn published_resource(opts: &crate::Opts) -> Option<String> {
    let (mode, reads) = match opts.plugin.as_str() {
        "wasm" => ("no-reads", ""),
        "wasm-reads" => ("namespace", "\n  reads: {consumerNamespace: true}"),
        _ => return None,
    };
    Some(format!(
        r#"apiVersion: syncagent.kcp.io/v1alpha1
kind: PublishedResource
metadata:
  name: publish-crontabs
spec:
  resource: {{kind: CronTab, apiGroup: example.com, versions: [v1]}}{reads}
  mutation:
    spec:
      - wasm:
          source: file://{}
          config: {{mode: {mode}}}
"#,
        opts.plugin_file.display()
    ))
}

/// Set up the environment: a provider, a service cluster and `--workspaces`
/// consumers bound to the export, with `agent` (syncweave for the ceiling)
/// running to publish the schema. Returns it and the still running agent.
async fn prepare(
    f: &mut Figures,
    agent: &str,
    binary: &Path,
    ctx: &Ctx<'_>,
    ports: &Ports,
) -> Result<(Setup, Vec<ObjectPlace>, AgentProcess, Prober)> {
    let setup = set_up(agent, binary, ctx.kcp_proxy, ctx.tls).await?;
    let env = &setup.env;
    match published_resource(ctx.opts) {
        None => env.publish().await,
        Some(yaml) => env.publish_yaml(&yaml).await,
    }
    let mut args = setup.args.clone();
    args.extend(ports.args());
    let log_path = env.dir.join(format!("agent-{agent}-idle.log"));
    let proc_ = AgentProcess::start(binary, &args, &log_path)?;
    let prober = Prober::start(
        ports.health,
        Ports::probe_paths(agent),
        Duration::from_secs(ctx.opts.probe_interval),
    );
    let t = Instant::now();
    env.wait_for_schema("publish-crontabs").await;
    if ctx.opts.plugin == "wasm-reads" {
        env.wait_for_export_claim("", "namespaces").await;
    }
    log(format!(
        "schema published after {:.1}s; creating {} consumer workspaces ({} at a time)…",
        t.elapsed().as_secs_f64(),
        ctx.opts.workspaces,
        ctx.opts.setup_parallelism
    ));
    let t = Instant::now();
    let places = populate::workspaces(
        env,
        ctx.raw,
        ctx.opts.workspaces,
        ctx.opts.setup_parallelism,
        ctx.opts.plugin == "wasm-reads",
    )
    .await?;
    f.workspaces = places.len();
    f.workspaces_seconds = t.elapsed().as_secs_f64();
    log(format!(
        "{} consumers ready after {:.1}s",
        places.len(),
        f.workspaces_seconds
    ));
    alive(&proc_, &log_path)()?;
    Ok((setup, places, proc_, prober))
}

pub async fn run_agent(f: &mut Figures, agent: &str, binary: &Path, ctx: &Ctx<'_>) -> Result<()> {
    let opts = ctx.opts;
    let ports = Ports::new(agent);
    let (setup, places, idle_proc, idle_prober) = prepare(f, agent, binary, ctx, &ports).await?;
    let Setup {
        env,
        svc_proxy,
        args,
        ..
    } = &setup;
    let log_path = |phase: &str| env.dir.join(format!("agent-{agent}-{phase}.log"));
    let seen = latency::watch_copies(env.service_client.clone()).await;

    // 1. Idle, and P1 sustained.
    let (quiet_wait, quiet) = settle_quiet(agent, &idle_proc, ctx.kcp_proxy, svc_proxy, opts).await;
    let idle = Idle {
        ready_seconds: idle_prober.state().ready_seconds,
        quiet_wait_seconds: Some(quiet_wait),
        quiet,
        rss_kb: idle_proc.status_kb("VmRSS"),
        hwm_kb: idle_proc.status_kb("VmHWM"),
        cpu_seconds: idle_proc.cpu_seconds(),
    };
    log(format!(
        "idle: {} workspaces, no object: RSS {}, ready after {}",
        places.len(),
        mb(idle.rss_kb),
        idle.ready_seconds
            .map_or("- (no 200 from /readyz)".into(), |s| format!("{s:.2}s"))
    ));
    if opts.latency_objects > 0 {
        let alive_idle = alive(&idle_proc, &log_path("idle"));
        let mut l = latency::measure(
            "sustained",
            "p1",
            opts.latency_objects,
            opts.rate,
            p1_target(ctx, &places, &seen, &alive_idle, None),
        )
        .await?;
        l.quiet_wait_seconds = Some(quiet_wait);
        l.quiet = Some(quiet);
        f.p1_sustained = Some(l);
    }
    f.idle = Some(idle.clone());
    idle_proc.stop();
    drop(idle_prober);
    drop(idle_proc);

    // 2. The backlog, created while no agent runs.
    let (names, secs) = populate::objects(
        ctx.raw,
        &places,
        "p2",
        opts.objects,
        opts.create_parallelism,
    )
    .await?;
    f.create_seconds = secs;
    let keys: Vec<String> = names
        .iter()
        .enumerate()
        .map(|(i, n)| places[i % places.len()].key(n))
        .collect();

    // 3. P2, and P1 under load.
    let before_kcp = ctx.kcp_proxy.counter.snapshot();
    let before_svc = svc_proxy.counter.snapshot();
    let mut run_args = args.clone();
    run_args.extend(ports.args());
    log(format!(
        "starting {agent} with {} objects waiting (P2: initial sync)…",
        opts.objects
    ));
    let t0 = Instant::now();
    let proc_ = AgentProcess::start(binary, &run_args, &log_path("run"))?;
    let prober = Prober::start(
        ports.health,
        Ports::probe_paths(agent),
        Duration::from_secs(opts.probe_interval),
    );
    let sampler = Sampler::start(
        proc_.pid,
        ctx.kcp_proxy.counter.clone(),
        svc_proxy.counter.clone(),
        seen.clone(),
        Duration::from_secs(opts.sample_interval),
    );
    let metrics_before = observe::scrape(ports.metrics).await;
    let profile = opts
        .profile
        .map(|s| start_profile(proc_.pid, s, &opts.out, agent));
    let backlog = Arc::new(AtomicBool::new(true));
    let alive_run = alive(&proc_, &log_path("run"));
    let p2_fut = wait_initial_sync(
        &keys,
        &seen,
        t0,
        opts.p2_timeout,
        &alive_run,
        ctx.kcp_proxy,
        svc_proxy,
        Some(&proc_),
        backlog.clone(),
    );
    let load_fut = async {
        if opts.load_latency_objects == 0 {
            return Ok(None);
        }
        latency::measure(
            "under load",
            "pl",
            opts.load_latency_objects,
            opts.rate,
            p1_target(ctx, &places, &seen, &alive_run, Some(backlog.clone())),
        )
        .await
        .map(Some)
    };
    let (p2, under_load) = tokio::join!(p2_fut, load_fut);
    let mut p2 = p2?;
    f.p1_under_load = under_load?;
    p2.ready_seconds = prober.state().ready_seconds;
    p2.cpu_seconds_per_1000_objects = p2.cpu_seconds.map(|c| c * 1000.0 / p2.synced.max(1) as f64);
    let hwm = proc_.status_kb("VmHWM");
    let rss_after = proc_.status_kb("VmRSS");
    log(format!(
        "P2: {}/{} copies in {:.1}s = {:.1} objects/s (first after {:.1}s, ready after {}; CPU {:.1}s = {:.2}s per 1000 objects); P3: VmHWM {}",
        p2.synced,
        p2.objects,
        p2.seconds,
        p2.objects_per_second,
        p2.first_copy_seconds.unwrap_or(f64::NAN),
        p2.ready_seconds.map_or("-".into(), |s| format!("{s:.2}s")),
        p2.cpu_seconds.unwrap_or(f64::NAN),
        p2.cpu_seconds_per_1000_objects.unwrap_or(f64::NAN),
        mb(hwm)
    ));
    if let Some(p) = profile {
        f.profile = p.await.ok().flatten();
    }

    let new_objects = p2.synced + f.p1_under_load.as_ref().map_or(0, |l| l.seen);
    f.p2 = Some(p2);

    // 4. Memory once the agent settled.
    let (qw, q) = settle_quiet(agent, &proc_, ctx.kcp_proxy, svc_proxy, opts).await;
    // Cost of a new object: from the agent's start until it went quiet
    // (or --quiet-timeout) after the backlog and the under-load objects:
    // writes that trail the copies (Events) count too.
    let window = t0.elapsed().as_secs_f64();
    let dk = ctx.kcp_proxy.counter.snapshot().since(&before_kcp);
    let ds = svc_proxy.counter.snapshot().since(&before_svc);
    let metrics = observe::delta(&observe::scrape(ports.metrics).await, &metrics_before);
    f.cost = Some(cost(&dk, &ds, metrics, new_objects, window));
    let objects_held = f.p1_sustained.as_ref().map_or(0, |l| l.seen) + new_objects;
    let rss_settled = proc_.status_kb("VmRSS");
    let bytes_per_object = match (rss_settled, idle.rss_kb) {
        (Some(r), Some(i)) if objects_held > 0 => {
            Some((r as f64 - i as f64) * 1024.0 / objects_held as f64)
        }
        _ => None,
    };
    log(format!(
        "P3: VmHWM {}, RSS {} after the sync, {} settled ({}): {} per object over the idle {}",
        mb(hwm),
        mb(rss_after),
        mb(rss_settled),
        if q { "quiet" } else { "NOT quiet" },
        bytes_per_object.map_or("-".into(), |b| format!("{:.0} B", b)),
        mb(idle.rss_kb)
    ));
    f.p3 = Some(Memory {
        hwm_kb: hwm,
        rss_kb_after_sync: rss_after,
        rss_kb_settled: rss_settled,
        settled_quiet: q,
        objects_held,
        bytes_per_object,
    });

    // 5. P1 with every object held.
    if opts.idle_latency_objects > 0 {
        let mut l = latency::measure(
            &format!("at size ({objects_held} objects held)"),
            "pi",
            opts.idle_latency_objects,
            opts.rate,
            p1_target(ctx, &places, &seen, &alive_run, None),
        )
        .await?;
        l.quiet_wait_seconds = Some(qw);
        l.quiet = Some(q);
        f.p1_at_size = Some(l);
    }

    // 6. P4.
    let p4_objects = objects_held + f.p1_at_size.as_ref().map_or(0, |l| l.seen);
    log(format!(
        "P4: {}s of rest, then counting {agent}'s requests for {}s (probed every {}s)…",
        opts.settle, opts.window, opts.probe_interval
    ));
    tokio::time::sleep(Duration::from_secs(opts.settle)).await;
    let (qw, q) = settle_quiet(agent, &proc_, ctx.kcp_proxy, svc_proxy, opts).await;
    let (k0, s0, pr0) = (
        ctx.kcp_proxy.counter.snapshot(),
        svc_proxy.counter.snapshot(),
        prober.state(),
    );
    let end = Instant::now() + Duration::from_secs(opts.window);
    while Instant::now() < end {
        alive_run()?;
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let dk = ctx.kcp_proxy.counter.snapshot().since(&k0);
    let ds = svc_proxy.counter.snapshot().since(&s0);
    let probes = observe::answers_since(&prober.state(), &pr0);
    let steady = Steady {
        objects: p4_objects,
        quiet_wait_seconds: Some(qw),
        quiet: q,
        window_seconds: opts.window,
        requests_kcp: dk.total,
        requests_service: ds.total,
        requests_per_object: (dk.total + ds.total) as f64 / p4_objects.max(1) as f64,
        requests_kcp_top: dk.top(6),
        requests_service_top: ds.top(6),
        probes,
        probe_interval_seconds: opts.probe_interval,
    };
    log(format!(
        "P4: {} requests to kcp [{}], {} to the service cluster [{}] in {}s over {} objects; probes {:?}",
        dk.total,
        dk.top(4),
        ds.total,
        ds.top(4),
        opts.window,
        p4_objects,
        steady.probes
    ));
    f.p4 = Some(steady);
    f.samples = sampler.samples();
    proc_.stop();
    log(format!("{agent} done; logs in {}", env.dir.display()));
    Ok(())
}

/// Wait (bounded by --quiet-timeout) until the agent is quiet: the seconds
/// waited and whether it got there.
async fn settle_quiet(
    agent: &str,
    proc_: &AgentProcess,
    kcp_proxy: &Proxy,
    svc_proxy: &Proxy,
    opts: &Opts,
) -> (f64, bool) {
    let t = Instant::now();
    match wait_until_quiet(agent, proc_, kcp_proxy, svc_proxy, opts.quiet_timeout).await {
        Some(s) => (s, true),
        None => (t.elapsed().as_secs_f64(), false),
    }
}

fn cost(
    dk: &Snapshot,
    ds: &Snapshot,
    metrics: BTreeMap<String, f64>,
    objects: usize,
    window: f64,
) -> Cost {
    let n = objects.max(1) as f64;
    let non_watch = |s: &Snapshot| -> u64 {
        s.by_kind
            .iter()
            .filter(|(k, _)| !k.starts_with("watch "))
            .map(|(_, v)| v)
            .sum()
    };
    let per = |name: &str| metrics.get(name).map(|v| v / n);
    let metric_writes = observe::metric_writes(&metrics);
    Cost {
        new_objects: objects,
        window_seconds: window,
        writes_per_object: (dk.writes() + ds.writes()) as f64 / n,
        writes_kcp_per_object: dk.writes() as f64 / n,
        writes_service_per_object: ds.writes() as f64 / n,
        requests_per_object: (non_watch(dk) + non_watch(ds)) as f64 / n,
        plugin_calls_per_object: per("syncweave_plugin_calls_total"),
        reconciles_per_object: per("syncweave_reconciles_total"),
        metric_writes_per_object: (!metrics.is_empty()).then(|| metric_writes / n),
        metrics,
        requests_kcp_by_kind: dk.by_kind.clone(),
        requests_service_by_kind: ds.by_kind.clone(),
    }
}

/// Wait until every key's copy exists (or the timeout), printing progress;
/// P2's figures from `t0` (the agent's exec). Clears `backlog` when done.
#[allow(clippy::too_many_arguments)]
async fn wait_initial_sync(
    keys: &[String],
    seen: &Seen,
    t0: Instant,
    timeout: u64,
    alive: &(dyn Fn() -> Result<()> + Sync),
    kcp_proxy: &Proxy,
    svc_proxy: &Proxy,
    proc_: Option<&AgentProcess>,
    backlog: Arc<AtomicBool>,
) -> Result<InitialSync> {
    let n = keys.len();
    let before_kcp = kcp_proxy.counter.snapshot();
    let before_svc = svc_proxy.counter.snapshot();
    let deadline = t0 + Duration::from_secs(timeout);
    let mut last_print = Instant::now();
    let mut synced;
    loop {
        synced = seen.count(keys);
        if synced == n {
            break;
        }
        if let Err(e) = alive() {
            backlog.store(false, Ordering::SeqCst);
            bail!("{e}");
        }
        if Instant::now() > deadline {
            log(format!(
                "P2 timed out after {timeout}s with {synced}/{n} copies (--p2-timeout)"
            ));
            break;
        }
        if last_print.elapsed() > progress_interval(t0) {
            last_print = Instant::now();
            let el = t0.elapsed().as_secs_f64();
            let rk = kcp_proxy.counter.snapshot().since(&before_kcp).total;
            let rs = svc_proxy.counter.snapshot().since(&before_svc).total;
            log(format!(
                "  {synced}/{n} copies after {el:.0}s ({:.1}/s); RSS {}, CPU {}; {rk} requests to kcp ({:.1}/s), {rs} to the service cluster ({:.1}/s)",
                synced as f64 / el,
                mb(proc_.and_then(|p| p.status_kb("VmRSS"))),
                proc_
                    .and_then(|p| p.cpu_seconds())
                    .map_or("-".into(), |c| format!("{c:.1}s")),
                rk as f64 / el,
                rs as f64 / el,
            ));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    backlog.store(false, Ordering::SeqCst);
    // The time the last copy was first seen, not when we polled.
    let last = keys.iter().filter_map(|k| seen.get(k)).max();
    let first = keys.iter().filter_map(|k| seen.get(k)).min();
    let complete = synced == n;
    let seconds = match (complete, last) {
        (true, Some(l)) => l.saturating_duration_since(t0).as_secs_f64(),
        _ => t0.elapsed().as_secs_f64(),
    };
    let dk = kcp_proxy.counter.snapshot().since(&before_kcp);
    let ds = svc_proxy.counter.snapshot().since(&before_svc);
    Ok(InitialSync {
        objects: n,
        synced,
        complete,
        seconds,
        first_copy_seconds: first.map(|i| i.saturating_duration_since(t0).as_secs_f64()),
        objects_per_second: synced as f64 / seconds.max(0.001),
        ready_seconds: None,
        cpu_seconds: proc_.and_then(|p| p.cpu_seconds()),
        cpu_seconds_per_1000_objects: None,
        requests_kcp: dk.total,
        requests_service: ds.total,
        writes_kcp: dk.writes(),
        writes_service: ds.writes(),
        requests_kcp_top: dk.top(6),
        requests_service_top: ds.top(6),
        copies_created: ds
            .by_kind
            .get("create crontabs.example.com")
            .copied()
            .unwrap_or(0),
    })
}

/// The ceiling: the same set-up (syncweave publishes the schema and is
/// stopped), the same backlog, then the plain client instead of an agent.
pub async fn run_ceiling(f: &mut Figures, setup_binary: &Path, ctx: &Ctx<'_>) -> Result<()> {
    let opts = ctx.opts;
    let ports = Ports::new("syncweave");
    let (setup, places, setup_proc, _prober) =
        prepare(f, "ceiling", setup_binary, ctx, &ports).await?;
    setup_proc.stop();
    drop(setup_proc);
    let seen = latency::watch_copies(setup.env.service_client.clone()).await;
    // P1's floor: the same objects at the same rate, synced by the plain
    // client following a watch.
    if opts.latency_objects > 0 {
        let follower = tokio::spawn({
            let (kcp, svc, writes) = (
                setup.kcp_kubeconfig.clone(),
                setup.service_kubeconfig.clone(),
                opts.ceiling_writes.clone(),
            );
            async move { ceiling::follow(&kcp, &svc, &writes).await }
        });
        let follower_alive = || -> Result<()> {
            if follower.is_finished() {
                anyhow::bail!("the ceiling client stopped following (see the log above)");
            }
            Ok(())
        };
        let l = latency::measure(
            "sustained",
            "p1",
            opts.latency_objects,
            opts.rate,
            p1_target(ctx, &places, &seen, &follower_alive, None),
        )
        .await;
        follower.abort();
        f.p1_sustained = Some(l?);
    }
    let (names, secs) = populate::objects(
        ctx.raw,
        &places,
        "p2",
        opts.objects,
        opts.create_parallelism,
    )
    .await?;
    f.create_seconds = secs;
    let keys: Vec<String> = names
        .iter()
        .enumerate()
        .map(|(i, n)| places[i % places.len()].key(n))
        .collect();
    let before_kcp = ctx.kcp_proxy.counter.snapshot();
    let before_svc = setup.svc_proxy.counter.snapshot();
    let t0 = Instant::now();
    let done = Arc::new(AtomicBool::new(false));
    let client_done = done.clone();
    let ok = || -> Result<()> { Ok(()) };
    let client = async {
        let r = ceiling::run(
            &setup.kcp_kubeconfig,
            &setup.service_kubeconfig,
            &opts.ceiling_writes,
            opts.ceiling_concurrency,
        )
        .await;
        client_done.store(true, Ordering::SeqCst);
        r
    };
    let (info, p2) = tokio::join!(
        client,
        wait_initial_sync(
            &keys,
            &seen,
            t0,
            opts.p2_timeout,
            &ok,
            ctx.kcp_proxy,
            &setup.svc_proxy,
            None,
            Arc::new(AtomicBool::new(true)),
        )
    );
    let info = info?;
    let p2 = p2?;
    log(format!(
        "ceiling P2: {}/{} copies in {:.1}s = {:.1} objects/s (client done after {:.1}s, {} retries)",
        p2.synced, p2.objects, p2.seconds, p2.objects_per_second, info.client_seconds, info.retries
    ));
    let dk = ctx.kcp_proxy.counter.snapshot().since(&before_kcp);
    let ds = setup.svc_proxy.counter.snapshot().since(&before_svc);
    f.cost = Some(cost(
        &dk,
        &ds,
        BTreeMap::new(),
        p2.synced,
        t0.elapsed().as_secs_f64(),
    ));
    f.p2 = Some(p2);
    f.ceiling = Some(info);
    log(format!("ceiling done; logs in {}", setup.env.dir.display()));
    Ok(())
}

/// `perf record` of `pid` for `seconds` (cpu-clock sampling with DWARF
/// call graphs: hardware counters are usually not available in VMs),
/// into the --out directory. The path of the data, or None if perf failed.
fn start_profile(
    pid: u32,
    seconds: u64,
    out: &Path,
    agent: &str,
) -> tokio::task::JoinHandle<Option<String>> {
    let dir = out.parent().unwrap_or(Path::new(".")).to_path_buf();
    let data = dir.join(format!("perf-{agent}-{}.data", std::process::id()));
    let agent = agent.to_string();
    tokio::task::spawn_blocking(move || {
        let _ = std::fs::create_dir_all(&dir);
        log(format!(
            "profiling {agent} (pid {pid}) for {seconds}s into {}",
            data.display()
        ));
        let out = std::process::Command::new("perf")
            .args([
                "record",
                "-e",
                "cpu-clock",
                "-F",
                "199",
                "--call-graph",
                "dwarf,16384",
            ])
            .arg("-p")
            .arg(pid.to_string())
            .arg("-o")
            .arg(&data)
            .args(["--", "sleep"])
            .arg(seconds.to_string())
            .stdin(std::process::Stdio::null())
            .output();
        match out {
            Ok(o) if o.status.success() => {
                log(format!(
                    "profile written: {} (tests/bench/report.py flamegraph {} renders it)",
                    data.display(),
                    data.display()
                ));
                Some(data.display().to_string())
            }
            Ok(o) => {
                log(format!(
                    "perf record failed: {}",
                    String::from_utf8_lossy(&o.stderr).trim()
                ));
                None
            }
            Err(e) => {
                log(format!("perf not available ({e}); no profile"));
                None
            }
        }
    })
}

/// Upstream builds: for messages.
pub fn describe(agent: &str) -> &'static str {
    match agent {
        "syncweave" => "syncweave at its defaults",
        "syncweave-fifo" => "syncweave, one queue in arrival order (--sync-priority=false)",
        "upstream" => "upstream api-syncagent v0.7.0 as shipped",
        "upstream-unthrottled" => "upstream v0.7.0, client-side throttling off",
        "ceiling" => "plain client (the physical limit)",
        _ if is_upstream(agent) => "upstream",
        _ => "?",
    }
}
