//! Watching a running agent from outside: its health endpoint polled as a
//! kubelet's probe would ([`Prober`]), its memory, CPU and requests sampled
//! over time ([`Sampler`]), and its Prometheus counters ([`scrape`]).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;
use syncweave_tests::http_get;

use crate::latency::Seen;
use crate::process::AgentProcess;

/// Polls the agent's health endpoint: every 100 ms until `/readyz` first
/// answers 200 (for at most two minutes, and not after a 404), to time
/// readiness, then every
/// `interval` as the chart's readiness probe does, for as long as it lives.
pub struct Prober {
    state: Arc<Mutex<ProbeState>>,
    task: tokio::task::JoinHandle<()>,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct ProbeState {
    /// Seconds from the prober's start (just after the agent's exec) to the
    /// first 200 from `/readyz`.
    pub ready_seconds: Option<f64>,
    /// Answers by path and status code ("unreachable" when the connection
    /// failed): e.g. `{"/readyz": {"200": 31}}`.
    pub answers: BTreeMap<String, BTreeMap<String, u64>>,
}

impl Prober {
    pub fn start(port: u16, paths: &'static [&'static str], interval: Duration) -> Prober {
        let state = Arc::new(Mutex::new(ProbeState::default()));
        let s = state.clone();
        let task = tokio::spawn(async move {
            let t0 = Instant::now();
            let fast_for = Duration::from_secs(120);
            loop {
                for path in paths {
                    let code = match tokio::time::timeout(Duration::from_secs(1), probe(port, path))
                        .await
                    {
                        Ok(Ok(code)) => code.to_string(),
                        _ => "unreachable".to_string(),
                    };
                    let mut st = s.lock().unwrap();
                    if *path == "/readyz" && code == "200" && st.ready_seconds.is_none() {
                        st.ready_seconds = Some(t0.elapsed().as_secs_f64());
                    }
                    *st.answers
                        .entry(path.to_string())
                        .or_default()
                        .entry(code)
                        .or_default() += 1;
                }
                // Fast until ready; a 404 means there is no readiness
                // check to wait for (upstream v0.7.0).
                let fast = {
                    let st = s.lock().unwrap();
                    st.ready_seconds.is_none()
                        && t0.elapsed() < fast_for
                        && !st.answers.values().any(|codes| codes.contains_key("404"))
                };
                tokio::time::sleep(if fast {
                    Duration::from_millis(100)
                } else {
                    interval
                })
                .await;
            }
        });
        Prober { state, task }
    }

    pub fn state(&self) -> ProbeState {
        self.state.lock().unwrap().clone()
    }
}

impl Drop for Prober {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// `GET path` on 127.0.0.1:`port` as a kubelet probes: the status code.
/// `Connection: close`, and only the status line is read, so a server that
/// keeps connections open (Go's net/http, upstream's) answers at once.
pub async fn probe(port: u16, path: &str) -> std::io::Result<u16> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
    let req = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 256];
    while !buf.windows(2).any(|w| w == b"\r\n") {
        let n = s.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    String::from_utf8_lossy(&buf)
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| std::io::Error::other("not an HTTP answer"))
}

/// Answers between two [`ProbeState`]s.
pub fn answers_since(
    now: &ProbeState,
    before: &ProbeState,
) -> BTreeMap<String, BTreeMap<String, u64>> {
    let mut out = BTreeMap::new();
    for (path, codes) in &now.answers {
        for (code, n) in codes {
            let b = before
                .answers
                .get(path)
                .and_then(|c| c.get(code))
                .copied()
                .unwrap_or(0);
            if n > &b {
                out.entry(path.clone())
                    .or_insert_with(BTreeMap::new)
                    .insert(code.clone(), n - b);
            }
        }
    }
    out
}

/// One sample of the agent over time.
#[derive(Clone, Debug, Serialize)]
pub struct Sample {
    /// Seconds since the agent's start.
    pub t: f64,
    pub rss_kb: Option<u64>,
    pub cpu_seconds: Option<f64>,
    /// Requests sent so far (since the agent's start) to kcp and to the
    /// service cluster, as the proxies counted them.
    pub kcp_requests: u64,
    pub service_requests: u64,
    /// Copies on the service cluster so far (all of the run's objects).
    pub copies: usize,
}

/// Samples the agent every `interval` from its start until dropped.
pub struct Sampler {
    samples: Arc<Mutex<Vec<Sample>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Sampler {
    pub fn start(
        pid: u32,
        kcp: Arc<crate::proxy::Counter>,
        svc: Arc<crate::proxy::Counter>,
        seen: Arc<Seen>,
        interval: Duration,
    ) -> Sampler {
        let samples = Arc::new(Mutex::new(Vec::new()));
        let s = samples.clone();
        let (k0, s0) = (kcp.snapshot().total, svc.snapshot().total);
        let task = tokio::spawn(async move {
            let t0 = Instant::now();
            let p = AgentProcess::observe(pid);
            loop {
                s.lock().unwrap().push(Sample {
                    t: t0.elapsed().as_secs_f64(),
                    rss_kb: p.status_kb("VmRSS"),
                    cpu_seconds: p.cpu_seconds(),
                    kcp_requests: kcp.snapshot().total - k0,
                    service_requests: svc.snapshot().total - s0,
                    copies: seen.total(),
                });
                tokio::time::sleep(interval).await;
            }
        });
        Sampler { samples, task }
    }

    pub fn samples(&self) -> Vec<Sample> {
        self.samples.lock().unwrap().clone()
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The counters of the agent's `/metrics` (syncweave only), summed over
/// label sets by metric name plus the label sets that matter for cost:
/// `syncweave_api_requests_total{server,verb}` and
/// `syncweave_plugin_calls_total{plugin}`. Empty when unreachable.
pub async fn scrape(port: Option<u16>) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    let Some(port) = port else {
        return out;
    };
    let Ok(Ok((200, body))) =
        tokio::time::timeout(Duration::from_secs(5), http_get(port, "/metrics")).await
    else {
        return out;
    };
    for line in body.lines() {
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        let Some((series, value)) = line.rsplit_once(' ') else {
            continue;
        };
        let Ok(v) = value.trim().parse::<f64>() else {
            continue;
        };
        let name = series.split('{').next().unwrap_or(series);
        if !name.ends_with("_total") {
            continue;
        }
        *out.entry(name.to_string()).or_default() += v;
        if name == "syncweave_api_requests_total" || name == "syncweave_plugin_calls_total" {
            // Keep the series with its labels as well.
            *out.entry(series.to_string()).or_default() += v;
        }
    }
    out
}

/// `after - before` for every counter.
pub fn delta(
    after: &BTreeMap<String, f64>,
    before: &BTreeMap<String, f64>,
) -> BTreeMap<String, f64> {
    after
        .iter()
        .map(|(k, v)| (k.clone(), v - before.get(k).copied().unwrap_or(0.0)))
        .filter(|(_, v)| *v != 0.0)
        .collect()
}

/// Writes (every verb but get, list and watch) in a delta of
/// `syncweave_api_requests_total` series.
pub fn metric_writes(d: &BTreeMap<String, f64>) -> f64 {
    d.iter()
        .filter(|(k, _)| k.starts_with("syncweave_api_requests_total{"))
        .filter(|(k, _)| !k.contains("verb=\"get\"") && !k.contains("verb=\"watch\""))
        .map(|(_, v)| v)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::probe;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A server that keeps the connection open after answering, as Go's
    /// net/http does: the probe still gets its code at once.
    #[tokio::test]
    async fn probe_reads_the_status_of_a_keep_alive_server() {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = l.local_addr().unwrap().port();
        tokio::spawn(async move {
            let (mut s, _) = l.accept().await.unwrap();
            let mut buf = [0u8; 512];
            let _ = s.read(&mut buf).await;
            s.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
                .await
                .unwrap();
            tokio::time::sleep(std::time::Duration::from_secs(30)).await;
        });
        let code = tokio::time::timeout(std::time::Duration::from_secs(2), probe(port, "/readyz"))
            .await
            .expect("answered without waiting for the connection to close")
            .unwrap();
        assert_eq!(code, 404);
    }
}
