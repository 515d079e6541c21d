//! The stack every request to kcp or the service cluster goes through, in
//! one place: counted (`syncweave_api_requests_total`), rate limited per
//! server, then fenced ([`crate::kube::fence`]: no write leaves a replica that is
//! not sure it leads), with a User-Agent naming this replica's lease
//! identity so an API server's audit log tells replicas apart.
//!
//! The rate limit, when one is set (none by default: [`DEFAULT_QPS`]), is a
//! token bucket shared by every client of one server (all kcp workspaces and
//! shards share `kcp`'s; all service-cluster clients share `service`'s), as
//! client-go's QPS/burst. Events posted into consumer
//! workspaces have a bucket of their own ([`EVENTS`], as large as `kcp`'s),
//! as a controller-runtime manager's event recorder has a client of its
//! own: they are best effort, and with two per new object they would
//! otherwise take two thirds of the budget the objects sync with. It waits in `poll_ready`, so
//! queued requests keep their order behind kube's Buffer. A `429` with
//! `Retry-After` pauses the whole bucket for that long (the request itself
//! fails and is retried by its caller's backoff).
//!
//! The stack also remembers how each server last answered
//! ([`server_health`]): `/readyz` reports that instead of sending probes, so
//! a kubelet-probed agent in steady state sends nothing but its watches. A
//! server that goes away fails the next request anyway (the watches re-list
//! with backoff when their connection breaks); one that goes silent is
//! noticed by [`crate::kube::liveness`]'s HTTP/2 pings.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use futures::future::BoxFuture;
use http::{Request, Response, StatusCode};
use kube::client::Body;
use tokio::time::{Instant, Sleep};
use tower::{Layer, Service};

/// No client-side cap by default, as controller-runtime: the API servers'
/// Priority and Fairness is the brake, and a `429` with `Retry-After`
/// pauses the agent's requests to that server. A client-side cap held the
/// agent at a third of what the servers could take (docs/performance.md);
/// `--kcp-qps`/`--service-qps` set one for those who want it. (client-go's
/// own 5 QPS / 10 burst would make a sync agent at scale crawl.)
pub const DEFAULT_QPS: f32 = 0.0;
/// The burst above a `--*-qps` cap, when one is set.
pub const DEFAULT_BURST: u32 = 200;
/// The limiter (and metrics label) of Events posted into kcp.
pub const EVENTS: &str = "kcp-events";
/// The longest `Retry-After` honoured (a bogus header must not stall the agent).
const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

/// A token bucket. `qps <= 0` is unlimited.
#[derive(Debug)]
pub struct Limiter {
    server: &'static str,
    qps: f64,
    burst: f64,
    state: Mutex<Bucket>,
}

#[derive(Debug)]
struct Bucket {
    tokens: f64,
    at: Instant,
    /// No request before this (a `Retry-After`).
    paused_until: Option<Instant>,
}

impl Limiter {
    pub fn new(server: &'static str, qps: f32, burst: u32) -> Arc<Limiter> {
        let burst = f64::from(burst.max(1));
        Arc::new(Limiter {
            server,
            qps: f64::from(qps),
            burst,
            state: Mutex::new(Bucket {
                tokens: burst,
                at: Instant::now(),
                paused_until: None,
            }),
        })
    }

    pub fn unlimited(&self) -> bool {
        self.qps <= 0.0
    }

    /// Take a token; how long to wait before using it. Reservations queue:
    /// the bucket goes negative, so each caller waits its turn.
    pub fn reserve(&self) -> Duration {
        let mut b = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        let pause = b
            .paused_until
            .filter(|t| *t > now)
            .map(|t| t - now)
            .unwrap_or_default();
        if self.unlimited() {
            return pause;
        }
        let elapsed = now.saturating_duration_since(b.at).as_secs_f64();
        b.tokens = (b.tokens + elapsed * self.qps).min(self.burst);
        b.at = now;
        b.tokens -= 1.0;
        let wait = if b.tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-b.tokens / self.qps)
        };
        wait.max(pause)
    }

    /// The server asked to come back later.
    pub fn pause_for(&self, d: Duration) {
        let until = Instant::now() + d.min(MAX_RETRY_AFTER);
        let mut b = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if b.paused_until.is_none_or(|t| t < until) {
            b.paused_until = Some(until);
        }
        tracing::warn!(server = self.server, retry_after = ?d, "the API server is throttling the agent (429); pausing its requests");
    }
}

/// How a server last answered.
#[derive(Debug, Clone)]
struct LastAnswer {
    result: Result<(), String>,
    /// When it last answered, and last answered properly.
    at: tokio::time::Instant,
    last_ok: Option<tokio::time::Instant>,
}

/// Servers the agent checks regularly: asked something, or pinged
/// ([`crate::kube::liveness`]), at least every bound / 3, so no sign of life for
/// longer than the bound means the server hangs (a frozen or black-holed
/// server answers nothing, and open watches just stay silent).
static HEARTBEATS: OnceLock<Mutex<HashMap<&'static str, Duration>>> = OnceLock::new();

/// `server` is asked or pinged at least every `within` / 3 (liveness
/// pings, the leader Lease's renewals): longer without a sign of life
/// means it hangs.
pub fn expect_answers(server: &'static str, within: Duration) {
    HEARTBEATS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(server, within);
}

/// When each server last answered a liveness ping ([`crate::kube::liveness`]).
static ALIVE: OnceLock<Mutex<HashMap<&'static str, tokio::time::Instant>>> = OnceLock::new();

/// `server` answered a liveness ping: it is not hanging (how it answers
/// requests is still what [`server_health`] reports).
pub fn record_alive(server: &'static str) {
    ALIVE
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(server, tokio::time::Instant::now());
}

static ANSWERS: OnceLock<Mutex<HashMap<&'static str, LastAnswer>>> = OnceLock::new();

/// Per server, a count of its recoveries (a proper answer after trouble).
static RECOVERIES: OnceLock<Mutex<HashMap<&'static str, tokio::sync::watch::Sender<u64>>>> =
    OnceLock::new();

fn recoveries_of(server: &'static str) -> tokio::sync::watch::Sender<u64> {
    RECOVERIES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry(server)
        .or_insert_with(|| tokio::sync::watch::channel(0).0)
        .clone()
}

/// Changes each time `server` answers properly again after trouble: keys
/// that back off because of it can be retried at once instead of at the
/// end of a backoff that grew during the outage.
pub fn recoveries(server: &'static str) -> tokio::sync::watch::Receiver<u64> {
    recoveries_of(server).subscribe()
}

/// Record how `server` answered a request: a transport error, a 5xx, 401 or
/// 429 is trouble; any other status is a server that works (a 404 or 409 is
/// the request's problem, not the server's).
fn record_answer(server: &'static str, result: Result<(), String>) {
    let mut answers = ANSWERS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let previous = answers.get(server);
    let was_ok = previous.map(|a| a.result.is_ok());
    let last_ok = match &result {
        Ok(()) => Some(tokio::time::Instant::now()),
        Err(_) => previous.and_then(|a| a.last_ok),
    };
    match (&result, was_ok) {
        (Ok(()), Some(false)) => {
            tracing::info!(server, "the API server answers again");
            recoveries_of(server).send_modify(|n| *n += 1);
        }
        (Err(e), Some(true) | None) => {
            tracing::warn!(server, error = %e, "the API server does not answer properly")
        }
        _ => {}
    }
    answers.insert(
        server,
        LastAnswer {
            result,
            at: tokio::time::Instant::now(),
            last_ok,
        },
    );
}

/// How `server` answered the agent's last request (`None` before any), or
/// that it hangs: no proper answer within its heartbeat bound.
pub fn server_health(server: &'static str) -> Option<Result<(), String>> {
    servers_health(&[server])
}

/// Like [`server_health`] for clients that reach one cluster under several
/// names (`service` and its `lease` client): the freshest answer counts.
pub fn servers_health(servers: &[&'static str]) -> Option<Result<(), String>> {
    let (server, last) = {
        let answers = ANSWERS
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        servers
            .iter()
            .filter_map(|s| answers.get(s).map(|a| (*s, a.clone())))
            .max_by_key(|(_, a)| a.at)?
    };
    let bound = HEARTBEATS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(server)
        .copied();
    // The latest sign of life: a proper answer or a liveness ping's.
    let pinged = {
        let alive = ALIVE
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        servers.iter().filter_map(|s| alive.get(s).copied()).max()
    };
    let sign = last.last_ok.max(pinged);
    if let (Ok(()), Some(bound), Some(at)) = (&last.result, bound, sign)
        && at.elapsed() > bound
    {
        return Some(Err(format!(
            "no answer for {}s (it is checked at least every {}s): it hangs or is unreachable",
            at.elapsed().as_secs(),
            bound.as_secs() / 3
        )));
    }
    Some(last.result)
}

fn answer_of(status: StatusCode) -> Result<(), String> {
    match status {
        s if s.is_server_error() => Err(format!("answered {s}")),
        StatusCode::UNAUTHORIZED => Err(
            "answered 401 Unauthorized: the agent's credentials are not accepted (expired token?)"
                .into(),
        ),
        StatusCode::TOO_MANY_REQUESTS => Err("answered 429 Too Many Requests".into()),
        _ => Ok(()),
    }
}

static LIMITERS: OnceLock<Mutex<HashMap<&'static str, Arc<Limiter>>>> = OnceLock::new();

/// Set the rate limit of `server` ("kcp" or "service") for clients built
/// from now on; set once at start-up from the flags.
pub fn set_limit(server: &'static str, qps: f32, burst: u32) {
    LIMITERS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(server, Limiter::new(server, qps, burst));
}

/// The limiter of `server`, the default one if none was set.
pub fn limiter(server: &'static str) -> Arc<Limiter> {
    LIMITERS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry(server)
        .or_insert_with(|| Limiter::new(server, DEFAULT_QPS, DEFAULT_BURST))
        .clone()
}

static USER_AGENT: OnceLock<http::HeaderValue> = OnceLock::new();

/// Name this replica in the User-Agent of every request (set once, at
/// start-up, before clients are built).
pub fn set_identity(identity: &str) {
    let ua = format!("syncweave/{} ({identity})", env!("CARGO_PKG_VERSION"));
    if let Ok(v) = http::HeaderValue::from_str(&ua) {
        let _ = USER_AGENT.set(v);
    }
}

fn user_agent() -> http::HeaderValue {
    USER_AGENT.get().cloned().unwrap_or_else(|| {
        http::HeaderValue::from_static(concat!("syncweave/", env!("CARGO_PKG_VERSION")))
    })
}

/// A client for `cfg` talking to `server`, with the agent's request stack.
pub fn build(cfg: kube::Config, server: &'static str) -> Result<kube::Client, kube::Error> {
    build_with(cfg, server, Some(crate::kube::fence::global()))
}

/// The client leader election itself uses: no fence (it must renew and
/// release the lease that opens the fence).
pub fn build_unfenced(
    cfg: kube::Config,
    server: &'static str,
) -> Result<kube::Client, kube::Error> {
    build_with(cfg, server, None)
}

fn build_with(
    cfg: kube::Config,
    server: &'static str,
    fence: Option<&'static crate::kube::fence::Fence>,
) -> Result<kube::Client, kube::Error> {
    let count = tower::util::MapRequestLayer::new(move |mut req: Request<Body>| {
        crate::ops::metrics::METRICS.api_request(server, &req);
        req.headers_mut()
            .insert(http::header::USER_AGENT, user_agent());
        req
    });
    // Innermost first: the fence is checked last, right before the request
    // leaves (after any wait for the rate limiter).
    Ok(kube::client::ClientBuilder::try_from(cfg)?
        .with_layer(&FenceLayer(fence))
        .with_layer(&RateLimitLayer(limiter(server)))
        .with_layer(&count)
        .build())
}

/// A client that sends every request through `base` (its connection pool,
/// rate limit, fence and counting) with `prefix` put before the path: a
/// cheap per-workspace view on one shard's client.
pub fn with_path_prefix(base: &kube::Client, prefix: String) -> kube::Client {
    let base = base.clone();
    let svc = tower::service_fn(move |mut req: Request<Body>| {
        let base = base.clone();
        let path = req
            .uri()
            .path_and_query()
            .map(|p| p.as_str())
            .unwrap_or("/");
        let uri = format!("{prefix}{path}").parse::<http::Uri>();
        async move {
            *req.uri_mut() = uri.map_err(|e| -> tower::BoxError { Box::new(e) })?;
            base.send(req)
                .await
                .map_err(|e| -> tower::BoxError { Box::new(e) })
        }
    });
    kube::Client::new(svc, "default")
}

/// Refuses writes while `fence` is closed ([`crate::kube::fence`]).
#[derive(Clone, Copy)]
pub struct FenceLayer(pub Option<&'static crate::kube::fence::Fence>);

impl<S> Layer<S> for FenceLayer {
    type Service = FencedService<S>;
    fn layer(&self, inner: S) -> FencedService<S> {
        FencedService {
            inner,
            fence: self.0,
        }
    }
}

pub struct FencedService<S> {
    inner: S,
    fence: Option<&'static crate::kube::fence::Fence>,
}

impl<S, B> Service<Request<Body>> for FencedService<S>
where
    S: Service<Request<Body>, Response = Response<B>>,
    S::Future: Send + 'static,
    S::Error: Into<tower::BoxError>,
    B: Send + 'static,
{
    type Response = Response<B>;
    type Error = tower::BoxError;
    type Future = BoxFuture<'static, Result<Response<B>, tower::BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), tower::BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        if let Some(fence) = self.fence
            && crate::kube::fence::is_write(req.method())
            && !fence.allows_writes()
        {
            crate::ops::metrics::METRICS.fenced_write();
            let err = crate::kube::fence::Fenced {
                method: req.method().to_string(),
                path: req.uri().path().to_string(),
            };
            return Box::pin(async move { Err(err.into()) });
        }
        let fut = self.inner.call(req);
        Box::pin(async move { fut.await.map_err(Into::into) })
    }
}

#[derive(Clone)]
pub struct RateLimitLayer(pub Arc<Limiter>);

impl<S> Layer<S> for RateLimitLayer {
    type Service = RateLimited<S>;
    fn layer(&self, inner: S) -> RateLimited<S> {
        RateLimited {
            inner,
            limiter: self.0.clone(),
            sleep: None,
            permitted: false,
        }
    }
}

pub struct RateLimited<S> {
    inner: S,
    limiter: Arc<Limiter>,
    sleep: Option<(Pin<Box<Sleep>>, Instant)>,
    permitted: bool,
}

impl<S, B> Service<Request<Body>> for RateLimited<S>
where
    S: Service<Request<Body>, Response = Response<B>>,
    S::Future: Send + 'static,
    S::Error: std::fmt::Display + Send + 'static,
    B: Send + 'static,
{
    type Response = Response<B>;
    type Error = S::Error;
    type Future = BoxFuture<'static, Result<Response<B>, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        if !self.permitted {
            if self.sleep.is_none() {
                let wait = self.limiter.reserve();
                if wait.is_zero() {
                    self.permitted = true;
                } else {
                    self.sleep = Some((Box::pin(tokio::time::sleep(wait)), Instant::now()));
                }
            }
            if let Some((sleep, since)) = &mut self.sleep {
                ready!(sleep.as_mut().poll(cx));
                crate::ops::metrics::METRICS.rate_limited(self.limiter.server, since.elapsed());
                self.sleep = None;
                self.permitted = true;
            }
        }
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        self.permitted = false;
        let limiter = self.limiter.clone();
        let fut = self.inner.call(req);
        let server = limiter.server;
        Box::pin(async move {
            let resp = match fut.await {
                Ok(r) => r,
                Err(e) => {
                    record_answer(server, Err(format!("unreachable: {e}")));
                    return Err(e);
                }
            };
            record_answer(server, answer_of(resp.status()));
            if resp.status() == StatusCode::TOO_MANY_REQUESTS {
                let after = resp
                    .headers()
                    .get(http::header::RETRY_AFTER)
                    .and_then(|v| v.to_str().ok())
                    .and_then(|s| s.trim().parse::<u64>().ok())
                    .map(Duration::from_secs)
                    .unwrap_or(Duration::from_secs(1));
                limiter.pause_for(after);
            }
            Ok(resp)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_burst_then_qps() {
        let l = Limiter::new("test", 10.0, 5);
        for _ in 0..5 {
            assert_eq!(l.reserve(), Duration::ZERO, "the burst is free");
        }
        // The sixth waits one token's time, the seventh two.
        assert_eq!(l.reserve(), Duration::from_millis(100));
        assert_eq!(l.reserve(), Duration::from_millis(200));
        tokio::time::advance(Duration::from_secs(10)).await;
        assert_eq!(l.reserve(), Duration::ZERO, "refilled, capped at the burst");
    }

    #[tokio::test(start_paused = true)]
    async fn zero_qps_is_unlimited_but_honours_retry_after() {
        let l = Limiter::new("test", 0.0, 0);
        for _ in 0..10_000 {
            assert_eq!(l.reserve(), Duration::ZERO);
        }
        l.pause_for(Duration::from_secs(3));
        assert_eq!(l.reserve(), Duration::from_secs(3));
        l.pause_for(Duration::from_secs(3600));
        assert_eq!(l.reserve(), MAX_RETRY_AFTER, "capped");
    }

    /// Through the tower stack: 25 requests at 10 QPS / burst 5 take 2 s
    /// (20 after the burst), in order, and the wait is measured.
    #[tokio::test(start_paused = true)]
    async fn the_layer_paces_requests() {
        use tower::ServiceExt;
        let svc = tower::service_fn(|_req: Request<Body>| async {
            Ok::<_, std::convert::Infallible>(Response::new(()))
        });
        let mut svc = RateLimitLayer(Limiter::new("test", 10.0, 5)).layer(svc);
        let start = Instant::now();
        for _ in 0..25 {
            svc.ready().await.unwrap();
            svc.call(Request::new(Body::empty())).await.unwrap();
        }
        assert_eq!(start.elapsed().as_millis(), 2000);
    }

    /// A server that stops answering (frozen, black-holed: nothing fails,
    /// nothing comes back) turns unready once its heartbeat bound passes;
    /// the freshest of several names for one cluster counts.
    #[tokio::test(start_paused = true)]
    async fn a_server_that_goes_silent_is_reported() {
        expect_answers("hb-test", Duration::from_secs(30));
        record_answer("hb-test", Ok(()));
        assert!(server_health("hb-test").unwrap().is_ok());
        tokio::time::advance(Duration::from_secs(31)).await;
        let e = server_health("hb-test").unwrap().unwrap_err();
        assert!(e.contains("no answer for 31s"), "{e}");
        // A liveness ping answered: alive again, though no request was.
        record_alive("hb-test");
        assert!(server_health("hb-test").unwrap().is_ok());
        tokio::time::advance(Duration::from_secs(31)).await;
        assert!(server_health("hb-test").unwrap().is_err());
        // Another client of the same cluster answered recently: fine.
        record_answer("hb-test-lease", Ok(()));
        assert!(
            servers_health(&["hb-test", "hb-test-lease"])
                .unwrap()
                .is_ok()
        );
        record_answer("hb-test", Ok(()));
        assert!(server_health("hb-test").unwrap().is_ok(), "answers again");
    }

    #[test]
    fn what_counts_as_a_working_server() {
        assert!(answer_of(StatusCode::OK).is_ok());
        assert!(answer_of(StatusCode::NOT_FOUND).is_ok());
        assert!(answer_of(StatusCode::CONFLICT).is_ok());
        assert!(answer_of(StatusCode::FORBIDDEN).is_ok());
        assert!(answer_of(StatusCode::SERVICE_UNAVAILABLE).is_err());
        assert!(answer_of(StatusCode::UNAUTHORIZED).is_err());
        record_answer("health-test", Err("unreachable: refused".into()));
        assert!(server_health("health-test").unwrap().is_err());
        record_answer("health-test", Ok(()));
        assert!(server_health("health-test").unwrap().is_ok());
        assert!(server_health("never-asked").is_none());
    }

    /// A closed fence refuses writes before they reach the server; reads
    /// (and watches) still go out.
    #[tokio::test]
    async fn a_closed_fence_lets_no_write_out() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        use tower::ServiceExt;
        static SENT: AtomicUsize = AtomicUsize::new(0);
        static FENCE: OnceLock<crate::kube::fence::Fence> = OnceLock::new();
        let fence = FENCE.get_or_init(crate::kube::fence::Fence::new);
        fence.enable();
        let svc = tower::service_fn(|_req: Request<Body>| async {
            SENT.fetch_add(1, Ordering::SeqCst);
            Ok::<_, std::convert::Infallible>(Response::new(()))
        });
        let mut svc = FenceLayer(Some(fence)).layer(svc);
        let req = |m: http::Method| {
            let mut r = Request::new(Body::empty());
            *r.method_mut() = m;
            r
        };
        for m in [
            http::Method::POST,
            http::Method::PUT,
            http::Method::PATCH,
            http::Method::DELETE,
        ] {
            let e = svc.ready().await.unwrap().call(req(m)).await.unwrap_err();
            assert!(e.to_string().contains("leader lease"), "{e}");
        }
        assert_eq!(SENT.load(Ordering::SeqCst), 0, "no write was sent");
        svc.ready()
            .await
            .unwrap()
            .call(req(http::Method::GET))
            .await
            .unwrap();
        assert_eq!(SENT.load(Ordering::SeqCst), 1, "reads go out");
        fence.renewed(std::time::Instant::now(), Duration::from_secs(10));
        svc.ready()
            .await
            .unwrap()
            .call(req(http::Method::PATCH))
            .await
            .unwrap();
        assert_eq!(
            SENT.load(Ordering::SeqCst),
            2,
            "writes go out while the lease is held"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_429_pauses_the_bucket() {
        use tower::ServiceExt;
        let svc = tower::service_fn(|_req: Request<Body>| async {
            let mut r = Response::new(());
            *r.status_mut() = StatusCode::TOO_MANY_REQUESTS;
            r.headers_mut()
                .insert(http::header::RETRY_AFTER, "2".parse().unwrap());
            Ok::<_, std::convert::Infallible>(r)
        });
        let limiter = Limiter::new("test", 0.0, 0);
        let mut svc = RateLimitLayer(limiter.clone()).layer(svc);
        svc.ready().await.unwrap();
        svc.call(Request::new(Body::empty())).await.unwrap();
        let start = Instant::now();
        svc.ready().await.unwrap();
        assert_eq!(start.elapsed(), Duration::from_secs(2));
    }
}
