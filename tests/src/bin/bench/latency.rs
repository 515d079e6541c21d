//! P1: create → copy latency. Copies are recorded by a watch on the service
//! cluster ([`watch_copies`]); objects are created open loop at a fixed rate
//! ([`measure`]), each one timed from just before its create request to the
//! moment its copy first shows up in that watch.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use futures::StreamExt;
use kube::api::{DynamicObject, ObjectMeta, PartialObjectMeta};
use kube::runtime::{WatchStreamExt, watcher};
use serde::Serialize;
use syncweave_tests::*;

use crate::populate::{KcpRaw, ObjectPlace};
use crate::{log, progress_interval, trace};

/// First-seen times of service-cluster copies, keyed by
/// "<kcp cluster>/<kcp object name>" (from the sync label and annotation
/// both agents, and the ceiling client, put on a copy).
#[derive(Default)]
pub struct Seen {
    first: Mutex<HashMap<String, Instant>>,
    pub initial_list_done: AtomicBool,
}

impl Seen {
    pub fn count(&self, keys: &[String]) -> usize {
        let m = self.first.lock().unwrap();
        keys.iter().filter(|k| m.contains_key(*k)).count()
    }
    pub fn get(&self, key: &str) -> Option<Instant> {
        self.first.lock().unwrap().get(key).copied()
    }
    pub fn total(&self) -> usize {
        self.first.lock().unwrap().len()
    }
}

fn copy_key(meta: &ObjectMeta) -> String {
    let cluster = meta
        .labels
        .as_ref()
        .and_then(|l| l.get("syncagent.kcp.io/remote-object-cluster"))
        .cloned()
        .unwrap_or_default();
    let name = meta
        .annotations
        .as_ref()
        .and_then(|a| a.get("syncagent.kcp.io/remote-object-name"))
        .cloned()
        .unwrap_or_else(|| meta.name.clone().unwrap_or_default());
    format!("{cluster}/{name}")
}

/// Watch every CronTab on the service cluster (as its admin, directly, not
/// through the proxy) and record when each copy first appears. Returns once
/// the watch's initial list is done.
pub async fn watch_copies(client: kube::Client) -> Arc<Seen> {
    let seen = Arc::new(Seen::default());
    let s = seen.clone();
    tokio::spawn(async move {
        // Metadata only: the bench needs labels and annotations, and at
        // 100 000 copies full objects would cost it (not the agent) time.
        let ar = kube::api::ApiResource::from_gvk_with_plural(
            &gvk("example.com", "v1", "CronTab"),
            "crontabs",
        );
        let api = kube::Api::<PartialObjectMeta<DynamicObject>>::all_with(client, &ar);
        let mut stream = watcher(api, watcher::Config::default())
            .default_backoff()
            .boxed();
        while let Some(ev) = stream.next().await {
            let now = Instant::now();
            match ev {
                Ok(watcher::Event::Apply(o)) | Ok(watcher::Event::InitApply(o)) => {
                    let key = copy_key(&o.metadata);
                    let mut first = s.first.lock().unwrap();
                    if let std::collections::hash_map::Entry::Vacant(e) = first.entry(key) {
                        trace(&format!("copy seen {}", e.key()));
                        e.insert(now);
                    }
                }
                Ok(watcher::Event::InitDone) => {
                    s.initial_list_done.store(true, Ordering::SeqCst);
                }
                _ => {}
            }
        }
    });
    while !seen.initial_list_done.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    seen
}

/// One P1 measurement.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Latency {
    /// `sustained` (agent idle before the first create), `under load`
    /// (created while the initial sync of the backlog runs) or `at size`
    /// (agent idle again, holding every object of the run).
    pub label: String,
    pub objects: usize,
    pub rate: f64,
    /// Copies that showed up before the timeout.
    pub seen: usize,
    /// Seconds the bench waited for the agent to go quiet before the first
    /// create; `quiet` false: it did not within --quiet-timeout (so it was
    /// still busy when the measurement started).
    pub quiet_wait_seconds: Option<f64>,
    pub quiet: Option<bool>,
    /// Objects whose create was sent while the initial sync was still in
    /// progress (`under load` only).
    pub sent_during_backlog: Option<usize>,
    /// Percentiles over all objects sent; a copy that never showed up counts
    /// as slower than every seen one, so a percentile that falls on one is
    /// unknown (None: "more than the time waited").
    pub p50_ms: Option<f64>,
    pub p90_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub max_ms: Option<f64>,
    /// p50 of the first and of the last fifth of the objects (in creation
    /// order; a missing copy counts as slowest): an agent that keeps up
    /// with the rate has about the same at both ends, one that falls
    /// behind queues the later ones.
    pub first_fifth_p50_ms: Option<f64>,
    pub last_fifth_p50_ms: Option<f64>,
    /// Whether it kept up: the last fifth's p50 at most twice the first's
    /// (plus one second).
    pub kept_up: Option<bool>,
    /// Every object's latency in creation order (None: no copy in time), for
    /// the CDF.
    pub latencies_ms: Vec<Option<f64>>,
}

impl Latency {
    pub fn summary(&self) -> String {
        format!(
            "P1 {}: {}/{} copies, p50 {}, p90 {}, p99 {}, max {}; p50 of the first fifth {}, of the last {}{}",
            self.label,
            self.seen,
            self.objects,
            ms(self.p50_ms),
            ms(self.p90_ms),
            ms(self.p99_ms),
            ms(self.max_ms),
            ms(self.first_fifth_p50_ms),
            ms(self.last_fifth_p50_ms),
            if self.kept_up == Some(false) {
                " (FELL BEHIND the rate)"
            } else {
                ""
            }
        )
    }
}

pub fn ms(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:.0} ms"))
}

/// What [`measure`] needs besides the count and rate.
pub struct Target<'a> {
    pub raw: &'a KcpRaw,
    pub places: &'a [ObjectPlace],
    pub seen: Arc<Seen>,
    /// Give up waiting this long after the last create.
    pub timeout_after_sent: Duration,
    /// Checked while waiting; an error ends the measurement (the agent died).
    pub alive: &'a (dyn Fn() -> Result<()> + Sync),
    /// While true, creates count as `sent_during_backlog`.
    pub backlog: Option<Arc<AtomicBool>>,
}

/// Create `n` CronTabs named `<prefix>-NNNNN`, spread over the workspaces
/// of `t.places`, at `rate` per second (open loop: a slow agent does not slow
/// the creates down), and time each one to its copy.
pub async fn measure(
    label: &str,
    prefix: &str,
    n: usize,
    rate: f64,
    t: Target<'_>,
) -> Result<Latency> {
    log(format!("P1 {label}: creating {n} CronTabs at {rate}/s…"));
    let names: Vec<String> = (0..n).map(|i| format!("{prefix}-{i:05}")).collect();
    let keys: Vec<String> = names
        .iter()
        .enumerate()
        .map(|(i, name)| t.places[i % t.places.len()].key(name))
        .collect();
    let sent: Arc<Mutex<HashMap<usize, Instant>>> = Arc::default();
    let during_backlog = Arc::new(AtomicUsize::new(0));
    let start = tokio::time::Instant::now() + Duration::from_millis(200);
    let mut tasks = tokio::task::JoinSet::new();
    for (i, name) in names.iter().enumerate() {
        let raw = t.raw.clone();
        let place = t.places[i % t.places.len()].clone();
        let (name, sent) = (name.clone(), sent.clone());
        let (backlog, during) = (t.backlog.clone(), during_backlog.clone());
        let at = start + Duration::from_secs_f64(i as f64 / rate);
        tasks.spawn(async move {
            tokio::time::sleep_until(at).await;
            if backlog.is_some_and(|b| b.load(Ordering::SeqCst)) {
                during.fetch_add(1, Ordering::Relaxed);
            }
            sent.lock().unwrap().insert(i, Instant::now());
            trace(&format!("create {name}"));
            raw.create_crontab(&place, &name).await
        });
    }
    let mut last_print = Instant::now();
    let t0 = Instant::now();
    let mut all_sent_at: Option<Instant> = None;
    loop {
        while let Some(r) = tasks.try_join_next() {
            r??;
        }
        let s = t.seen.count(&keys);
        if s == n {
            break;
        }
        if tasks.is_empty() && all_sent_at.is_none() {
            all_sent_at = Some(Instant::now());
        }
        if all_sent_at.is_some_and(|at| at.elapsed() > t.timeout_after_sent) {
            log(format!(
                "P1 {label}: timed out with {s}/{n} copies {}s after the last create",
                t.timeout_after_sent.as_secs()
            ));
            break;
        }
        if let Err(e) = (t.alive)() {
            tasks.abort_all();
            bail!("{e}");
        }
        if last_print.elapsed() > progress_interval(t0) {
            last_print = Instant::now();
            log(format!(
                "  P1 {label}: sent {}, copies {s}/{n}",
                sent.lock().unwrap().len()
            ));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    while let Some(r) = tasks.join_next().await {
        r??;
    }
    let sent = sent.lock().unwrap().clone();
    let latencies: Vec<Option<f64>> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| {
            let s = sent.get(&i)?;
            let c = t.seen.get(k)?;
            Some(c.saturating_duration_since(*s).as_secs_f64() * 1000.0)
        })
        .collect();
    let mut lat: Vec<f64> = latencies.iter().flatten().copied().collect();
    lat.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let total = n.max(1);
    let pct = |p: f64| -> Option<f64> {
        let i = ((total as f64 * p).ceil() as usize).clamp(1, total) - 1;
        lat.get(i).copied()
    };
    // p50 of a slice of objects, missing copies counting as slowest.
    let p50_of = |part: &[Option<f64>]| -> Option<f64> {
        if part.is_empty() {
            return None;
        }
        let mut v: Vec<f64> = part.iter().map(|x| x.unwrap_or(f64::INFINITY)).collect();
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        Some(v[(v.len() - 1) / 2]).filter(|x| x.is_finite())
    };
    let fifth = (n / 5).max(1).min(n);
    let first_fifth = p50_of(&latencies[..fifth]);
    let last_fifth = p50_of(&latencies[n - fifth..]);
    let kept_up = match (first_fifth, last_fifth) {
        (Some(a), Some(b)) => Some(b <= 2.0 * a + 1000.0),
        (Some(_), None) => Some(false),
        _ => None,
    };
    let l = Latency {
        label: label.into(),
        objects: n,
        rate,
        seen: lat.len(),
        quiet_wait_seconds: None,
        quiet: None,
        sent_during_backlog: t
            .backlog
            .as_ref()
            .map(|_| during_backlog.load(Ordering::Relaxed)),
        p50_ms: pct(0.50),
        p90_ms: pct(0.90),
        p99_ms: pct(0.99),
        max_ms: lat.last().copied().filter(|_| lat.len() == n),
        first_fifth_p50_ms: first_fifth,
        last_fifth_p50_ms: last_fifth,
        kept_up,
        latencies_ms: latencies,
    };
    log(l.summary());
    Ok(l)
}
