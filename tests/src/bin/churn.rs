//! Churn benchmark: does the agent's memory stay flat under steady create /
//! update / delete traffic? (`tests/bench/churn.sh` builds and runs it.)
//!
//! A real kcp and a real service cluster (kube-apiserver + etcd), the CronTab
//! API published, `--workspaces` consumer workspaces. For `--minutes`, at
//! `--rate` operations a second: create while fewer than `--population`
//! objects exist, else update (a spec change) or delete one and create
//! another. Every `--sample` seconds the agent's VmRSS, thread count and live
//! async tasks (`syncweave_tasks`) are recorded. The figure is the growth from
//! the first 5 minutes (warm-up: caches and pools fill) to the last minute,
//! and the least-squares slope after minute 5. At the end every live kcp
//! object must have exactly one copy.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use serde::Serialize;
use serde_json::json;
use syncweave_tests::env::*;
use syncweave_tests::*;

const USAGE: &str = "\
usage: churn [options]    (normally run by tests/bench/churn.sh)
  --minutes M       length of the churn (default 30)
  --rate R          operations per second (default 5)
  --population N    objects kept alive (default 300)
  --workspaces N    consumer workspaces (default 10)
  --sample S        seconds between samples (default 10)
  --out FILE        JSON results (default target/bench/churn.json)
env: SYNCWEAVE_BIN (default target/release/syncweave)";

#[derive(Debug, Clone, Serialize)]
struct Opts {
    minutes: u64,
    rate: f64,
    population: usize,
    workspaces: usize,
    sample: u64,
    out: PathBuf,
}

#[derive(Debug, Clone, Serialize)]
struct Sample {
    seconds: f64,
    rss_kb: u64,
    threads: u64,
    tasks: Option<i64>,
    live_objects: usize,
    operations: u64,
}

#[derive(Debug, Serialize)]
struct Report {
    commit: String,
    binary: String,
    machine: Machine,
    opts: Opts,
    /// Mean over minute 4–5 (after warm-up) and over the last minute.
    rss_kb_after_warmup: f64,
    rss_kb_last_minute: f64,
    rss_growth_percent: f64,
    /// Least-squares slope of RSS after minute 5, KB per minute.
    rss_slope_kb_per_minute: f64,
    tasks_after_warmup: f64,
    tasks_last_minute: f64,
    threads_after_warmup: f64,
    threads_last_minute: f64,
    operations: u64,
    failed_operations: u64,
    samples: Vec<Sample>,
}

#[derive(Debug, Serialize)]
struct Machine {
    cores: usize,
    model: String,
    load_before: String,
    load_after: String,
}

fn parse_args() -> Result<Opts> {
    let mut o = Opts {
        minutes: 30,
        rate: 5.0,
        population: 300,
        workspaces: 10,
        sample: 10,
        out: repo().join("target/bench/churn.json"),
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "-h" || a == "--help" {
            println!("{USAGE}");
            std::process::exit(0);
        }
        let (flag, v) = match a.split_once('=') {
            Some((f, v)) => (f.to_string(), v.to_string()),
            None => (
                a.clone(),
                args.next()
                    .with_context(|| format!("{a} needs a value\n{USAGE}"))?,
            ),
        };
        let num = |v: &str| v.parse::<u64>().with_context(|| format!("{flag}: {v}"));
        match flag.as_str() {
            "--minutes" => o.minutes = num(&v)?,
            "--rate" => o.rate = v.parse().context("--rate")?,
            "--population" => o.population = num(&v)? as usize,
            "--workspaces" => o.workspaces = num(&v)?.max(1) as usize,
            "--sample" => o.sample = num(&v)?.max(1),
            "--out" => o.out = PathBuf::from(v),
            _ => bail!("unknown flag {flag}\n{USAGE}"),
        }
    }
    anyhow::ensure!(o.rate > 0.0, "--rate must be positive");
    Ok(o)
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn proc_status(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

async fn tasks(metrics: u16) -> Option<i64> {
    let (_, body) = http_get(metrics, "/metrics").await.ok()?;
    body.lines()
        .find_map(|l| l.strip_prefix("syncweave_tasks "))
        .and_then(|v| v.trim().parse().ok())
}

fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

fn mean(xs: impl Iterator<Item = f64>) -> f64 {
    let v: Vec<f64> = xs.collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.iter().sum::<f64>() / v.len() as f64
}

/// A small deterministic generator (the run is reproducible).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

fn main() -> Result<()> {
    let o = parse_args()?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(run(o))
}

async fn run(o: Opts) -> Result<()> {
    let binary = std::env::var("SYNCWEAVE_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|_| repo().join("target/release/syncweave"));
    anyhow::ensure!(
        binary.exists(),
        "{} not found (tests/bench/churn.sh builds it)",
        binary.display()
    );
    let load_before = load();
    let t0 = Instant::now();
    let log = |m: &str| {
        let t = t0.elapsed().as_secs();
        println!("[{:>2}:{:02}] {m}", t / 60, t % 60);
    };
    log("starting kcp and a service cluster");
    let env = Env::prepare("churn", &binary).await;
    let metrics = free_port();
    let kcp_kc = env.dir.join("kcp.kubeconfig");
    env.kcp
        .write_kubeconfig_with_token(&env.provider.path, AGENT_KCP_TOKEN, &kcp_kc)?;
    let svc_kc = env.dir.join("service.kubeconfig");
    env.service
        .write_kubeconfig(CHART_SERVICE_ACCOUNT, &env.agent_token, &svc_kc)?;
    let mut args = env.agent_args(
        &kcp_kc,
        &svc_kc,
        &[&format!("--metrics-address=127.0.0.1:{metrics}")],
    );
    args.retain(|a| a != "--log-debug");
    let agent = Agent::start(&binary, &args, env.dir.join("agent.log"))?;
    env.publish().await;
    let mut apis: Vec<(String, Api<DynamicObject>)> = Vec::new();
    for i in 0..o.workspaces {
        let (ws, client) = env.consumer(&format!("churn-{i}")).await;
        apis.push((ws.cluster.clone(), crontabs(&client, "default")));
        log(&format!(
            "consumer workspace {}/{} bound",
            i + 1,
            o.workspaces
        ));
    }

    let mut rng = Lcg(42);
    let mut live: Vec<(usize, String)> = Vec::new();
    let mut next_name = 0u64;
    let (mut ops, mut failed) = (0u64, 0u64);
    let mut samples = Vec::new();
    let start = Instant::now();
    let end = start + Duration::from_secs(o.minutes * 60);
    let tick = Duration::from_secs_f64(1.0 / o.rate);
    let mut next_sample = start;
    log(&format!(
        "churning for {} min at {}/s around {} objects",
        o.minutes, o.rate, o.population
    ));
    while Instant::now() < end {
        let op_start = Instant::now();
        let result = if live.len() < o.population {
            let ws = (rng.next() as usize) % apis.len();
            let name = format!("c-{next_name}");
            next_name += 1;
            let r = apis[ws]
                .1
                .create(
                    &PostParams::default(),
                    &serde_json::from_value(crontab(&name, "img-0"))?,
                )
                .await;
            if r.is_ok() {
                live.push((ws, name));
            }
            r.map(|_| ())
        } else if rng.next().is_multiple_of(2) {
            let (ws, name) = &live[(rng.next() as usize) % live.len()];
            apis[*ws]
                .1
                .patch(
                    name,
                    &PatchParams::default(),
                    &Patch::Merge(
                        &json!({"spec": {"image": format!("img-{}", rng.next() % 1000)}}),
                    ),
                )
                .await
                .map(|_| ())
        } else {
            let (ws, name) = live.swap_remove((rng.next() as usize) % live.len());
            apis[ws]
                .1
                .delete(&name, &DeleteParams::default())
                .await
                .map(|_| ())
        };
        ops += 1;
        if result.is_err() {
            failed += 1;
        }
        if Instant::now() >= next_sample {
            let sample = Sample {
                seconds: start.elapsed().as_secs_f64(),
                rss_kb: proc_status(agent.pid(), "VmRSS:"),
                threads: proc_status(agent.pid(), "Threads:"),
                tasks: tasks(metrics).await,
                live_objects: live.len(),
                operations: ops,
            };
            if samples.len() % 6 == 0 {
                log(&format!(
                    "{:.0} s: RSS {} KB, {} threads, {:?} tasks, {} objects, {ops} operations",
                    sample.seconds,
                    sample.rss_kb,
                    sample.threads,
                    sample.tasks,
                    sample.live_objects
                ));
            }
            samples.push(sample);
            next_sample += Duration::from_secs(o.sample);
        }
        anyhow::ensure!(
            agent.is_running(),
            "the agent died:\n{}",
            agent.log_tail(40)
        );
        let spent = op_start.elapsed();
        if spent < tick {
            tokio::time::sleep(tick - spent).await;
        }
    }

    log("checking that every live object has exactly one copy");
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let mut missing = 0usize;
        let mut by_ws: BTreeMap<usize, Vec<&String>> = BTreeMap::new();
        for (ws, n) in &live {
            by_ws.entry(*ws).or_default().push(n);
        }
        for (ws, names) in &by_ws {
            let copies = crontabs(&env.service_client, &apis[*ws].0);
            let have: Vec<String> = copies
                .list(&ListParams::default())
                .await?
                .items
                .into_iter()
                .filter_map(|c| c.metadata.name)
                .collect();
            missing += names
                .iter()
                .filter(|n| !have.contains(&default_copy_name("default", n)))
                .count();
            missing += have.len().saturating_sub(names.len());
        }
        if missing == 0 {
            break;
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "{missing} objects without exactly one copy after 5 min"
        );
        tokio::time::sleep(Duration::from_secs(5)).await;
    }

    let window = |from: f64, to: f64, f: &dyn Fn(&Sample) -> f64| {
        mean(
            samples
                .iter()
                .filter(|s| s.seconds >= from && s.seconds < to)
                .map(f),
        )
    };
    let total = o.minutes as f64 * 60.0;
    let (w0, w1) = (
        240.0_f64.min(total / 2.0),
        300.0_f64.min(total / 2.0 + 60.0),
    );
    let rss = |s: &Sample| s.rss_kb as f64;
    let tasks_f = |s: &Sample| s.tasks.unwrap_or_default() as f64;
    let threads = |s: &Sample| s.threads as f64;
    let after_warmup = window(w0, w1, &rss);
    let last = window(total - 60.0, total + 1.0, &rss);
    let tail: Vec<&Sample> = samples.iter().filter(|s| s.seconds >= w1).collect();
    let slope = {
        let n = tail.len() as f64;
        let mx = mean(tail.iter().map(|s| s.seconds / 60.0));
        let my = mean(tail.iter().map(|s| s.rss_kb as f64));
        let num: f64 = tail
            .iter()
            .map(|s| (s.seconds / 60.0 - mx) * (s.rss_kb as f64 - my))
            .sum();
        let den: f64 = tail.iter().map(|s| (s.seconds / 60.0 - mx).powi(2)).sum();
        if n < 2.0 || den == 0.0 {
            f64::NAN
        } else {
            num / den
        }
    };
    let report = Report {
        commit: std::process::Command::new("git")
            .args(["rev-parse", "--short", "HEAD"])
            .output()
            .ok()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default(),
        binary: binary.display().to_string(),
        machine: Machine {
            cores: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(0),
            model: std::fs::read_to_string("/proc/cpuinfo")
                .unwrap_or_default()
                .lines()
                .find_map(|l| l.strip_prefix("model name"))
                .map(|l| l.trim_start_matches([' ', '\t', ':']).to_string())
                .unwrap_or_default(),
            load_before,
            load_after: load(),
        },
        opts: o.clone(),
        rss_kb_after_warmup: after_warmup,
        rss_kb_last_minute: last,
        rss_growth_percent: (last - after_warmup) / after_warmup * 100.0,
        rss_slope_kb_per_minute: slope,
        tasks_after_warmup: window(w0, w1, &tasks_f),
        tasks_last_minute: window(total - 60.0, total + 1.0, &tasks_f),
        threads_after_warmup: window(w0, w1, &threads),
        threads_last_minute: window(total - 60.0, total + 1.0, &threads),
        operations: ops,
        failed_operations: failed,
        samples,
    };
    println!(
        "\nRSS after warm-up {:.0} KB, last minute {:.0} KB: {:+.1} % (slope after minute 5: {:+.1} KB/min)\n\
         tasks {:.0} → {:.0}, threads {:.0} → {:.0}; {} operations ({} failed)",
        report.rss_kb_after_warmup,
        report.rss_kb_last_minute,
        report.rss_growth_percent,
        report.rss_slope_kb_per_minute,
        report.tasks_after_warmup,
        report.tasks_last_minute,
        report.threads_after_warmup,
        report.threads_last_minute,
        report.operations,
        report.failed_operations
    );
    if let Some(dir) = o.out.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(&o.out, serde_json::to_string_pretty(&report)?)?;
    println!("wrote {}", o.out.display());
    drop(agent);
    Ok(())
}
