//! Prometheus metrics a provider can alert on: per PublishedResource
//! (reconciles by result, reconcile latency, queue depth, objects failing)
//! and per plugin (calls by result class, call latency), plus the compiled
//! component cache. Served on `--metrics-address` by [`crate::roles::serve`].

use std::sync::LazyLock;
use std::sync::atomic::AtomicI64;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use syncweave_runtime::{FailureKind, RuntimeStats};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReconcileLabels {
    pub published_resource: String,
    /// `success`, `requeue` or `error`.
    pub result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct InitLabels {
    pub init_target: String,
    /// `success`, `requeue` or `error`.
    pub result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PrLabels {
    pub published_resource: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PluginCallLabels {
    pub plugin: String,
    /// `ok`, or the failure class (`timeout`, `memory limit`, `crash`,
    /// `bad output`, `invalid input`, …).
    pub result: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PluginLabels {
    pub plugin: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ApiRequestLabels {
    /// `kcp` or `service`.
    pub server: &'static str,
    /// `get` (objects and lists), `watch`, `create`, `update`, `patch`,
    /// `delete` or another HTTP method.
    pub verb: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ServerLabels {
    /// `kcp` or `service`.
    pub server: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct WatchLabels {
    /// `gone` (410: the watch relists at once) or `error` (retried with
    /// backoff).
    pub reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TaskLabels {
    /// The supervised loop (`sync-workers`, `kcp-watch`, `init-target`, …).
    pub task: &'static str,
    /// `panic` or `ended` (a loop that should run until cancelled returned).
    pub reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReadLabels {
    pub side: &'static str,
    pub resource: String,
    pub result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResultLabels {
    pub published_resource: String,
    pub severity: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CacheLabels {
    /// `compiled` (a miss), `disk` or `memory`.
    pub source: &'static str,
}

pub struct Metrics {
    registry: Registry,
    /// Upstream's gauge, same name.
    pub published_resources: Gauge<i64, AtomicI64>,
    pub reconciles: Family<ReconcileLabels, Counter>,
    pub init_reconciles: Family<InitLabels, Counter>,
    pub reconcile_seconds: Family<PrLabels, Histogram>,
    pub queue_depth: Family<PrLabels, Gauge<i64, AtomicI64>>,
    pub objects_failing: Family<PrLabels, Gauge<i64, AtomicI64>>,
    pub plugin_calls: Family<PluginCallLabels, Counter>,
    pub plugin_call_seconds: Family<PluginLabels, Histogram>,
    pub component_loads: Family<CacheLabels, Gauge<i64, AtomicI64>>,
    /// Compiled components in memory (built-ins plus digests in use).
    pub components_resident: Gauge<i64, AtomicI64>,
    pub api_requests: Family<ApiRequestLabels, Counter>,
    /// Seconds requests waited for the client-side rate limiter.
    pub rate_limiter_wait: Family<ServerLabels, Counter<f64, std::sync::atomic::AtomicU64>>,
    /// Writes refused because this replica's lease was not renewed in time.
    pub fenced_writes: Counter,
    /// Events not posted because the recorder's backlog was full.
    pub events_dropped: Counter,
    /// 1 while this replica holds the leader lease (or runs without election).
    pub leader: Gauge<i64, AtomicI64>,
    /// 1 while a replica with the same agent name but another configuration
    /// holds the lease this standby waits for.
    pub leader_configuration_mismatch: Gauge<i64, AtomicI64>,
    /// Tokio tasks alive (read at each scrape): flat in steady state.
    pub tasks: Gauge<i64, AtomicI64>,
    /// Supervised loops restarted after a panic or an unexpected end.
    pub task_restarts: Family<TaskLabels, Counter>,
    pub watch_failures: Family<WatchLabels, Counter>,
    pub plugin_reads: Family<ReadLabels, Counter>,
    pub plugin_results: Family<ResultLabels, Counter>,
}

fn latency_histogram() -> Histogram {
    // 1 ms … ~33 s.
    Histogram::new(exponential_buckets(0.001, 2.0, 16))
}

pub static METRICS: LazyLock<Metrics> = LazyLock::new(new_metrics);

fn new_metrics() -> Metrics {
    let mut registry = Registry::default();
    let published_resources = Gauge::<i64, AtomicI64>::default();
    registry.register(
        "sync_agent_published_resource",
        "Number of PublishedResources handled by this agent",
        published_resources.clone(),
    );
    let reconciles = Family::<ReconcileLabels, Counter>::default();
    registry.register(
        "syncweave_reconciles",
        "Object reconciliations by PublishedResource and result",
        reconciles.clone(),
    );
    let init_reconciles = Family::<InitLabels, Counter>::default();
    registry.register(
        "syncweave_init_reconciles",
        "Workspace initializations by InitTarget and result",
        init_reconciles.clone(),
    );
    let reconcile_seconds =
        Family::<PrLabels, Histogram>::new_with_constructor(latency_histogram as fn() -> _);
    registry.register(
        "syncweave_reconcile_duration_seconds",
        "Time to reconcile one object (sync down, status up, related objects)",
        reconcile_seconds.clone(),
    );
    let queue_depth = Family::<PrLabels, Gauge<i64, AtomicI64>>::default();
    registry.register(
        "syncweave_queue_depth",
        "Objects waiting to be reconciled, by PublishedResource",
        queue_depth.clone(),
    );
    let objects_failing = Family::<PrLabels, Gauge<i64, AtomicI64>>::default();
    registry.register(
        "syncweave_objects_failing",
        "Objects whose last reconcile failed, by PublishedResource",
        objects_failing.clone(),
    );
    let plugin_calls = Family::<PluginCallLabels, Counter>::default();
    registry.register(
        "syncweave_plugin_calls",
        "Wasm plugin calls by plugin and result (ok or the failure class)",
        plugin_calls.clone(),
    );
    let plugin_call_seconds =
        Family::<PluginLabels, Histogram>::new_with_constructor(latency_histogram as fn() -> _);
    registry.register(
        "syncweave_plugin_call_duration_seconds",
        "Time one Wasm plugin call runs (instantiation included)",
        plugin_call_seconds.clone(),
    );
    let component_loads = Family::<CacheLabels, Gauge<i64, AtomicI64>>::default();
    registry.register(
        "syncweave_component_loads",
        "Plugin components loaded, by where the compiled code came from (compiled = cache miss)",
        component_loads.clone(),
    );
    let api_requests = Family::<ApiRequestLabels, Counter>::default();
    registry.register(
        "syncweave_api_requests",
        "Requests sent to kcp and the service cluster, by verb (an agent in steady state sends none but watches)",
        api_requests.clone(),
    );
    let rate_limiter_wait =
        Family::<ServerLabels, Counter<f64, std::sync::atomic::AtomicU64>>::default();
    registry.register(
        "syncweave_client_rate_limiter_wait_seconds",
        "Time requests waited for the client-side rate limit (--kcp-qps/--service-qps), by server",
        rate_limiter_wait.clone(),
    );
    let fenced_writes = Counter::default();
    registry.register(
        "syncweave_fenced_writes",
        "Writes refused before they left the process because the leader lease was not renewed in time",
        fenced_writes.clone(),
    );
    let events_dropped = Counter::default();
    registry.register(
        "syncweave_events_dropped",
        "Events about consumers' objects not posted because the recorder's backlog (1024) was full; Events are best effort",
        events_dropped.clone(),
    );
    let leader = Gauge::<i64, AtomicI64>::default();
    registry.register(
        "syncweave_leader",
        "1 while this replica holds the leader lease (or runs without leader election), else 0",
        leader.clone(),
    );
    let leader_configuration_mismatch = Gauge::<i64, AtomicI64>::default();
    registry.register(
        "syncweave_leader_configuration_mismatch",
        "1 while this standby waits for a leader with the same agent name but another configuration (two agents under one name), else 0",
        leader_configuration_mismatch.clone(),
    );
    let tasks = Gauge::<i64, AtomicI64>::default();
    registry.register(
        "syncweave_tasks",
        "Async tasks alive in the agent (read at each scrape); should stay flat in steady state",
        tasks.clone(),
    );
    let components_resident = Gauge::<i64, AtomicI64>::default();
    registry.register(
        "syncweave_components_resident",
        "Compiled Wasm components held in memory: the built-ins plus every digest a PublishedResource, InitTarget or WasmPlugin uses",
        components_resident.clone(),
    );
    let task_restarts = Family::<TaskLabels, Counter>::default();
    registry.register(
        "syncweave_task_restarts",
        "Supervised loops restarted, by loop and reason (panic or ended); any increase is a bug to report",
        task_restarts.clone(),
    );
    let watch_failures = Family::<WatchLabels, Counter>::default();
    registry.register(
        "syncweave_watch_failures",
        "Lists and watches that failed and were started again: gone (410, relisted at once) or error (retried with backoff)",
        watch_failures.clone(),
    );
    let plugin_reads = Family::<ReadLabels, Counter>::default();
    registry.register(
        "syncweave_plugin_reads",
        "Plugin reads (contract 0.2) by side, resource and result (ok, not_allowed, not_served, unavailable, invalid); answered from the agent's caches",
        plugin_reads.clone(),
    );
    let plugin_results = Family::<ResultLabels, Counter>::default();
    registry.register(
        "syncweave_plugin_results",
        "Results and conditions plugins reported beside their output, by PublishedResource and severity (normal or warning)",
        plugin_results.clone(),
    );
    Metrics {
        registry,
        tasks,
        task_restarts,
        watch_failures,
        plugin_reads,
        plugin_results,
        components_resident,
        rate_limiter_wait,
        fenced_writes,
        events_dropped,
        leader,
        leader_configuration_mismatch,
        published_resources,
        reconciles,
        init_reconciles,
        reconcile_seconds,
        queue_depth,
        objects_failing,
        plugin_calls,
        plugin_call_seconds,
        component_loads,
        api_requests,
    }
}

/// The verb of a request to a Kubernetes-style API server.
fn verb(req: &http::Request<kube::client::Body>) -> &'static str {
    let watch = req
        .uri()
        .query()
        .is_some_and(|q| q.split('&').any(|p| p == "watch=true" || p == "watch=1"));
    match *req.method() {
        http::Method::GET if watch => "watch",
        http::Method::GET => "get",
        http::Method::POST => "create",
        http::Method::PUT => "update",
        http::Method::PATCH => "patch",
        http::Method::DELETE => "delete",
        _ => "other",
    }
}

impl Metrics {
    /// Count one request to `server`.
    pub fn api_request(&self, server: &'static str, req: &http::Request<kube::client::Body>) {
        self.api_requests
            .get_or_create(&ApiRequestLabels {
                server,
                verb: verb(req),
            })
            .inc();
    }

    pub fn task_restarted(&self, task: &'static str, reason: &'static str) {
        self.task_restarts
            .get_or_create(&TaskLabels { task, reason })
            .inc();
    }

    pub fn fenced_write(&self) {
        self.fenced_writes.inc();
    }

    /// A request to `server` waited `waited` for the rate limiter.
    pub fn rate_limited(&self, server: &'static str, waited: Duration) {
        self.rate_limiter_wait
            .get_or_create(&ServerLabels { server })
            .inc_by(waited.as_secs_f64());
    }

    pub fn reconciled(&self, pr: &str, result: &'static str, took: Duration) {
        self.reconciles
            .get_or_create(&ReconcileLabels {
                published_resource: pr.to_string(),
                result,
            })
            .inc();
        self.reconcile_seconds
            .get_or_create(&PrLabels {
                published_resource: pr.to_string(),
            })
            .observe(took.as_secs_f64());
    }

    pub fn init_reconciled(&self, target: &str, result: &'static str) {
        self.init_reconciles
            .get_or_create(&InitLabels {
                init_target: target.to_string(),
                result,
            })
            .inc();
    }

    pub fn set_queue_depth(&self, pr: &str, depth: usize) {
        self.queue_depth
            .get_or_create(&PrLabels {
                published_resource: pr.to_string(),
            })
            .set(depth as i64);
    }

    /// A PublishedResource's sync stopped (deleted, or no longer selected):
    /// its series go, so families do not grow with every PR ever seen.
    pub fn forget_published_resource(&self, pr: &str) {
        let l = PrLabels {
            published_resource: pr.to_string(),
        };
        self.queue_depth.remove(&l);
        self.objects_failing.remove(&l);
        self.reconcile_seconds.remove(&l);
        for result in ["success", "requeue", "error"] {
            self.reconciles.remove(&ReconcileLabels {
                published_resource: pr.to_string(),
                result,
            });
        }
    }

    pub fn set_objects_failing(&self, pr: &str, count: usize) {
        self.objects_failing
            .get_or_create(&PrLabels {
                published_resource: pr.to_string(),
            })
            .set(count as i64);
    }

    /// One plugin call ended (the runtime's call observer).
    pub fn plugin_call(&self, plugin: &str, took: Duration, failure: Option<FailureKind>) {
        let result = failure.map_or_else(|| "ok".to_string(), |k| k.as_str().to_string());
        self.plugin_calls
            .get_or_create(&PluginCallLabels {
                plugin: plugin.to_string(),
                result,
            })
            .inc();
        self.plugin_call_seconds
            .get_or_create(&PluginLabels {
                plugin: plugin.to_string(),
            })
            .observe(took.as_secs_f64());
    }

    /// The text exposition, with the component cache's counts read now.
    pub fn render(&self, runtime: Option<RuntimeStats>) -> String {
        if let Ok(h) = tokio::runtime::Handle::try_current() {
            self.tasks.set(h.metrics().num_alive_tasks() as i64);
        }
        if let Some(s) = runtime {
            for (source, n) in [
                ("compiled", s.compiled),
                ("disk", s.disk_hits),
                ("precompiled", s.precompiled),
                ("memory", s.memory_hits),
            ] {
                self.component_loads
                    .get_or_create(&CacheLabels { source })
                    .set(n as i64);
            }
            self.components_resident.set(s.resident as i64);
        }
        let mut out = String::new();
        if prometheus_client::encoding::text::encode(&mut out, &self.registry).is_err() {
            out.clear();
        }
        out
    }
}

/// The runtime whose cache counts `/metrics` reports (set once at start-up).
pub static RUNTIME_STATS: std::sync::OnceLock<Box<dyn Fn() -> RuntimeStats + Send + Sync>> =
    std::sync::OnceLock::new();

/// Report `runtime`'s plugin calls and component cache on `/metrics`.
pub fn instrument(runtime: &syncweave_runtime::Runtime) {
    runtime
        .call_pool()
        .observe(Box::new(|plugin, took, failure| {
            METRICS.plugin_call(plugin, took, failure)
        }));
    let rt = runtime.clone();
    let _ = RUNTIME_STATS.set(Box::new(move || rt.stats()));
}

#[cfg(test)]
mod metric_pruning_tests {
    use super::*;

    #[test]
    fn a_stopped_published_resource_leaves_no_series() {
        let m = &METRICS;
        m.reconciled("pruned-pr", "success", Duration::from_millis(3));
        m.set_queue_depth("pruned-pr", 2);
        m.set_objects_failing("pruned-pr", 1);
        assert!(m.render(None).contains("published_resource=\"pruned-pr\""));
        m.forget_published_resource("pruned-pr");
        assert!(!m.render(None).contains("pruned-pr"), "{}", m.render(None));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exposition_has_per_resource_and_per_plugin_series() {
        let m = &*METRICS;
        m.reconciled("crontabs", "success", Duration::from_millis(3));
        m.set_queue_depth("crontabs", 7);
        m.plugin_call("naming", Duration::from_millis(1), None);
        m.plugin_call(
            "naming",
            Duration::from_millis(1),
            Some(FailureKind::Timeout),
        );
        let text = m.render(Some(RuntimeStats {
            compiled: 1,
            disk_hits: 2,
            precompiled: 5,
            memory_hits: 3,
            cache_rejected: 0,
            resident: 4,
        }));
        for want in [
            r#"syncweave_reconciles_total{published_resource="crontabs",result="success"} 1"#,
            r#"syncweave_queue_depth{published_resource="crontabs"} 7"#,
            r#"syncweave_plugin_calls_total{plugin="naming",result="ok"} 1"#,
            r#"syncweave_plugin_calls_total{plugin="naming",result="timeout"} 1"#,
            r#"syncweave_plugin_call_duration_seconds_count{plugin="naming"} 2"#,
            r#"syncweave_reconcile_duration_seconds_bucket{le="0.004",published_resource="crontabs"} 1"#,
            r#"syncweave_component_loads{source="disk"} 2"#,
            "syncweave_components_resident 4",
            "sync_agent_published_resource ",
        ] {
            assert!(text.contains(want), "missing {want:?} in\n{text}");
        }
    }

    /// Every metric the chart's alerts and dashboard query is one the agent
    /// exports (by its exposition name: counters end in `_total`,
    /// histograms are read through `_bucket`, `_sum` and `_count`).
    #[test]
    fn the_chart_names_only_exported_metrics() {
        // A registry of its own, with a series in every family (an empty
        // family is not exposed at all).
        let m = new_metrics();
        let pr = PrLabels {
            published_resource: "p".into(),
        };
        m.reconciles
            .get_or_create(&ReconcileLabels {
                published_resource: "p".into(),
                result: "success",
            })
            .inc();
        m.init_reconciles
            .get_or_create(&InitLabels {
                init_target: "i".into(),
                result: "success",
            })
            .inc();
        m.reconcile_seconds.get_or_create(&pr).observe(0.1);
        m.queue_depth.get_or_create(&pr).set(1);
        m.objects_failing.get_or_create(&pr).set(1);
        m.plugin_calls
            .get_or_create(&PluginCallLabels {
                plugin: "x".into(),
                result: "ok".into(),
            })
            .inc();
        m.plugin_call_seconds
            .get_or_create(&PluginLabels { plugin: "x".into() })
            .observe(0.1);
        m.api_requests
            .get_or_create(&ApiRequestLabels {
                server: "kcp",
                verb: "get",
            })
            .inc();
        m.rate_limiter_wait
            .get_or_create(&ServerLabels { server: "kcp" })
            .inc_by(0.1);
        m.task_restarts
            .get_or_create(&TaskLabels {
                task: "t",
                reason: "panic",
            })
            .inc();
        m.watch_failures
            .get_or_create(&WatchLabels { reason: "gone" })
            .inc();
        let text = m.render(Some(RuntimeStats::default()));
        let mut exported = std::collections::BTreeSet::new();
        for line in text.lines() {
            let Some(rest) = line.strip_prefix("# TYPE ") else {
                continue;
            };
            let mut parts = rest.split_whitespace();
            let (Some(name), Some(kind)) = (parts.next(), parts.next()) else {
                continue;
            };
            match kind {
                "counter" => {
                    exported.insert(format!("{}_total", name.trim_end_matches("_total")));
                }
                "histogram" => {
                    for suffix in ["_bucket", "_sum", "_count"] {
                        exported.insert(format!("{name}{suffix}"));
                    }
                }
                _ => {
                    exported.insert(name.to_string());
                }
            }
        }
        assert!(
            exported.contains("syncweave_watch_failures_total"),
            "{exported:?}"
        );
        let chart =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../charts/syncweave/files");
        let mut checked = 0;
        for file in ["alerts.yaml", "dashboard.json"] {
            let body = std::fs::read_to_string(chart.join(file)).expect("chart file");
            let mut names = std::collections::BTreeSet::new();
            for (i, _) in body
                .match_indices("syncweave_")
                .chain(body.match_indices("sync_agent_"))
            {
                if body[..i].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-')
                {
                    continue;
                }
                let name: String = body[i..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                names.insert(name);
            }
            assert!(!names.is_empty(), "{file} names no metric");
            for n in &names {
                assert!(
                    exported.contains(n),
                    "{file} queries {n}, which the agent does not export; it exports {exported:?}"
                );
                checked += 1;
            }
        }
        assert!(
            checked >= 10,
            "only {checked} metric names found in the chart"
        );
    }

    #[test]
    fn requests_are_classified_by_verb() {
        let req = |m: http::Method, uri: &str| {
            http::Request::builder()
                .method(m)
                .uri(uri)
                .body(kube::client::Body::empty())
                .unwrap()
        };
        use http::Method;
        for (m, uri, want) in [
            (Method::GET, "/api/v1/namespaces/a/secrets/s", "get"),
            (Method::GET, "/api/v1/secrets?labelSelector=x%3Dy", "get"),
            (
                Method::GET,
                "/api/v1/secrets?watch=true&resourceVersion=5",
                "watch",
            ),
            (
                Method::GET,
                "/apis/x/v1/w?allowWatchBookmarks=true&watch=1",
                "watch",
            ),
            (Method::POST, "/api/v1/namespaces/a/secrets", "create"),
            (Method::PUT, "/api/v1/namespaces/a/secrets/s", "update"),
            (Method::PATCH, "/api/v1/namespaces/a/secrets/s", "patch"),
            (Method::DELETE, "/api/v1/namespaces/a/secrets/s", "delete"),
        ] {
            assert_eq!(verb(&req(m, uri)), want, "{uri}");
        }
    }
}
