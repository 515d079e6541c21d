//! Leader election with a coordination.k8s.io Lease, in the manner of
//! client-go's (which kube-controller-manager and controller-runtime use),
//! with the same three timings and flags:
//! - `--leader-elect-lease-duration` (15 s): how long a standby waits after
//!   it last *saw* the lease change before it takes it over;
//! - `--leader-elect-renew-deadline` (10 s): how long the leader keeps
//!   writing after its last successful renewal was *sent*; past it, the
//!   [write fence](crate::kube::fence) closes, the workers stop and the process
//!   exits non-zero (Kubernetes restarts it as a standby);
//! - `--leader-elect-retry-period` (2 s): how often both try.
//!
//! Expiry is judged by local monotonic clocks only (when this replica saw
//! the record change), never by comparing the timestamps of two machines.
//! On a graceful stop the leader closes its fence and then releases the
//! Lease (empty holder), so a standby takes over within one retry period
//! instead of a whole lease duration.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::{Lease as LeaseObject, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::Client;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use tokio_util::sync::CancellationToken;
use tracing::{debug, error, info, warn};

/// The three timings, validated (lease duration > renew deadline > retry
/// period), as client-go requires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timings {
    pub lease_duration: Duration,
    pub renew_deadline: Duration,
    pub retry_period: Duration,
}

impl Default for Timings {
    fn default() -> Self {
        Timings {
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }
}

impl Timings {
    pub fn validate(self) -> Result<Timings, String> {
        if self.retry_period.is_zero() {
            return Err("--leader-elect-retry-period must be more than 0".into());
        }
        if self.renew_deadline <= self.retry_period {
            return Err(format!(
                "--leader-elect-renew-deadline ({:?}) must be longer than --leader-elect-retry-period ({:?})",
                self.renew_deadline, self.retry_period
            ));
        }
        if self.lease_duration <= self.renew_deadline {
            return Err(format!(
                "--leader-elect-lease-duration ({:?}) must be longer than --leader-elect-renew-deadline ({:?}): \
                 the leader must stop writing before a standby may take over",
                self.lease_duration, self.renew_deadline
            ));
        }
        if self.lease_duration.subsec_nanos() != 0 {
            return Err(format!(
                "--leader-elect-lease-duration ({:?}) must be whole seconds (a Lease stores seconds)",
                self.lease_duration
            ));
        }
        Ok(self)
    }
}

/// This replica's identity in the Lease (and in its User-Agent): the pod's
/// host name and the process id, so a restarted process is a new holder.
pub fn identity() -> String {
    let host = std::env::var("POD_NAME")
        .ok()
        .filter(|s| !s.is_empty())
        .or_else(|| {
            std::fs::read_to_string("/proc/sys/kernel/hostname")
                .ok()
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_else(|| "syncweave".into());
    format!("{host}_{}", std::process::id())
}

/// The last version of the Lease this replica saw, and when it saw it.
#[derive(Debug, Clone)]
struct Observed {
    resource_version: String,
    at: Instant,
}

/// What to do with a Lease as found.
#[derive(Debug, PartialEq, Eq)]
enum Decision {
    /// Another holder whose lease has not expired (as seen from here).
    Wait { holder: String },
    /// Take it over (free, released or expired).
    Take,
    /// Ours: renew it.
    Renew,
}

fn decide(
    spec: &LeaseSpec,
    me: &str,
    observed_at: Instant,
    now: Instant,
    default_duration: Duration,
) -> Decision {
    let holder = spec.holder_identity.clone().unwrap_or_default();
    if holder == me {
        return Decision::Renew;
    }
    let duration = spec
        .lease_duration_seconds
        .and_then(|s| u64::try_from(s).ok())
        .map(Duration::from_secs)
        .unwrap_or(default_duration);
    if !holder.is_empty() && now.saturating_duration_since(observed_at) < duration {
        return Decision::Wait { holder };
    }
    Decision::Take
}

/// Annotation on the Lease: what the leader was configured to do (see
/// [`Configuration`]).
pub const CONFIGURATION_ANNOTATION: &str = "syncweave.dev/configuration";

/// What a replica was configured to do, in words (`kcp=… slice=…
/// selector=…`). Replicas that share a Lease (the same agent name) but
/// were given different configurations are two agents under one name: the
/// standby would never do its own job. The leader stamps the Lease with
/// it, and a standby whose own differs says so loudly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Configuration(pub String);

/// What a standby makes of the leader's stamp.
fn mismatch(ours: &Configuration, theirs: Option<&str>) -> Option<String> {
    match theirs {
        // An upstream replica, or one from before the stamp: no judgement.
        None => None,
        Some(t) if t == ours.0 => None,
        Some(t) => Some(t.to_string()),
    }
}

struct Elector {
    api: Api<LeaseObject>,
    name: String,
    identity: String,
    timings: Timings,
    configuration: Option<Configuration>,
    /// The leader's configuration, when it differs from ours (last try).
    leader_configuration: Option<String>,
    observed: Option<Observed>,
}

impl Elector {
    fn lease_seconds(&self) -> i32 {
        i32::try_from(self.timings.lease_duration.as_secs()).unwrap_or(i32::MAX)
    }

    /// The annotations this replica writes on the Lease.
    fn annotations(&self) -> Option<std::collections::BTreeMap<String, String>> {
        self.configuration.as_ref().map(|c| {
            [(CONFIGURATION_ANNOTATION.to_string(), c.0.clone())]
                .into_iter()
                .collect()
        })
    }

    /// One attempt to acquire or renew: `Ok(None)` when this replica holds
    /// the lease now, `Ok(Some(holder))` when another does (and the
    /// configuration it stamped, when that differs from ours).
    async fn try_acquire_or_renew(&mut self) -> Result<Option<String>, kube::Error> {
        self.leader_configuration = None;
        let now = MicroTime(k8s_openapi::jiff::Timestamp::now());
        let Some(mut lease) = self.api.get_opt(&self.name).await? else {
            let lease = LeaseObject {
                metadata: ObjectMeta {
                    name: Some(self.name.clone()),
                    annotations: self.annotations(),
                    ..Default::default()
                },
                spec: Some(LeaseSpec {
                    holder_identity: Some(self.identity.clone()),
                    lease_duration_seconds: Some(self.lease_seconds()),
                    acquire_time: Some(now.clone()),
                    renew_time: Some(now),
                    lease_transitions: Some(0),
                    ..Default::default()
                }),
            };
            return match self.api.create(&PostParams::default(), &lease).await {
                Ok(_) => Ok(None),
                Err(kube::Error::Api(s)) if s.code == 409 => Ok(Some(String::new())),
                Err(e) => Err(e),
            };
        };
        let rv = lease.metadata.resource_version.clone().unwrap_or_default();
        if self
            .observed
            .as_ref()
            .is_none_or(|o| o.resource_version != rv)
        {
            self.observed = Some(Observed {
                resource_version: rv,
                at: Instant::now(),
            });
        }
        let observed_at = self
            .observed
            .as_ref()
            .map(|o| o.at)
            .unwrap_or_else(Instant::now);
        let spec = lease.spec.get_or_insert_with(Default::default);
        match decide(
            spec,
            &self.identity,
            observed_at,
            Instant::now(),
            self.timings.lease_duration,
        ) {
            Decision::Wait { holder } => {
                if let Some(ours) = &self.configuration {
                    let theirs = lease
                        .metadata
                        .annotations
                        .as_ref()
                        .and_then(|a| a.get(CONFIGURATION_ANNOTATION))
                        .map(String::as_str);
                    self.leader_configuration = mismatch(ours, theirs);
                }
                return Ok(Some(holder));
            }
            Decision::Take => {
                spec.acquire_time = Some(now.clone());
                spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0) + 1);
            }
            Decision::Renew => {}
        }
        let previous = spec.holder_identity.clone().unwrap_or_default();
        spec.holder_identity = Some(self.identity.clone());
        spec.renew_time = Some(now);
        spec.lease_duration_seconds = Some(self.lease_seconds());
        // Optimistic concurrency: the patch carries the resourceVersion read,
        // so it fails (409) if anyone wrote the Lease since. A merge patch
        // needs only `patch` on leases, as the chart grants.
        match self.patch(&lease).await {
            Ok(_) => Ok(None),
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(Some(previous)),
            Err(e) => Err(e),
        }
    }

    /// Give the lease up if this replica still holds it.
    async fn release(&mut self) -> Result<(), kube::Error> {
        let Some(mut lease) = self.api.get_opt(&self.name).await? else {
            return Ok(());
        };
        let spec = lease.spec.get_or_insert_with(Default::default);
        if spec.holder_identity.as_deref() != Some(self.identity.as_str()) {
            return Ok(());
        }
        spec.holder_identity = Some(String::new());
        spec.lease_duration_seconds = Some(1);
        spec.renew_time = Some(MicroTime(k8s_openapi::jiff::Timestamp::now()));
        self.patch(&lease).await?;
        Ok(())
    }

    /// Write `lease`'s spec if the Lease is still at `lease`'s
    /// resourceVersion (else 409).
    async fn patch(&self, lease: &LeaseObject) -> Result<LeaseObject, kube::Error> {
        let mut metadata = serde_json::json!({"resourceVersion": lease.metadata.resource_version});
        if let Some(a) = self.annotations() {
            metadata["annotations"] = serde_json::json!(a);
        }
        let patch = serde_json::json!({"metadata": metadata, "spec": lease.spec});
        self.api
            .patch(&self.name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
    }
}

/// Holds the lease while leading; [`Lease::release`] gives it up.
pub struct Lease {
    held: Option<Held>,
}

struct Held {
    stop: CancellationToken,
    lost: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl Lease {
    /// Whether leadership was lost (the process should exit non-zero).
    pub fn lost(&self) -> bool {
        self.held
            .as_ref()
            .is_some_and(|h| h.lost.load(Ordering::SeqCst))
    }

    /// Stop renewing, close the write fence and release the Lease.
    pub async fn release(mut self) {
        if let Some(h) = self.held.take() {
            h.stop.cancel();
            let _ = h.task.await;
        }
    }
}

/// When enabled, block until this replica leads, then renew the lease in
/// the background; if a renewal does not succeed within the renew deadline
/// (or another replica holds the lease), close the write fence and cancel
/// `cancel`. `client` must not be fenced ([`crate::kube::client::build_unfenced`]).
pub async fn acquire_if_enabled(
    enabled: bool,
    client: &Client,
    namespace: &str,
    name: &str,
    timings: Timings,
    configuration: Option<Configuration>,
    cancel: CancellationToken,
) -> anyhow::Result<Lease> {
    let metrics = &crate::ops::metrics::METRICS;
    if !enabled {
        metrics.leader.set(1);
        return Ok(Lease { held: None });
    }
    let fence = crate::kube::fence::global();
    fence.enable();
    metrics.leader.set(0);
    // The Lease is asked every retry period, leader or standby: readiness
    // notices a server that stops answering it.
    crate::kube::client::expect_answers("lease", timings.retry_period * 3 + timings.renew_deadline);
    let identity = identity();
    let mut elector = Elector {
        api: Api::namespaced(client.clone(), namespace),
        name: name.to_string(),
        identity: identity.clone(),
        timings,
        observed: None,
        configuration,
        leader_configuration: None,
    };
    info!(lease = name, namespace, identity = %identity, ?timings, "waiting to become leader");
    let mut last_holder = None;
    loop {
        let sent = Instant::now();
        match elector.try_acquire_or_renew().await {
            Ok(None) => {
                fence.renewed(sent, timings.renew_deadline);
                break;
            }
            Ok(Some(holder)) => {
                let theirs = elector.leader_configuration.clone();
                if last_holder.as_ref() != Some(&(holder.clone(), theirs.clone())) {
                    match (&theirs, &elector.configuration) {
                        (Some(t), Some(ours)) => error!(
                            lease = name,
                            %holder,
                            leader_configuration = %t,
                            this_configuration = %ours.0,
                            "another agent with the same name but another configuration leads; \
                             this replica stands by and will not do its own job until that one \
                             stops. Give each agent its own --agent-name (chart: agentName)"
                        ),
                        _ => info!(lease = name, %holder, "another replica leads; standing by"),
                    }
                    crate::ops::metrics::METRICS
                        .leader_configuration_mismatch
                        .set(i64::from(theirs.is_some()));
                    last_holder = Some((holder, theirs));
                }
            }
            Err(kube::Error::Api(s)) if s.code == 403 => anyhow::bail!(
                "--enable-leader-election: the agent may not use Lease {namespace}/{name} ({}); \
                 grant get, create and update on leases there (docs/rbac.md)",
                s.message
            ),
            Err(e) => {
                warn!(lease = name, error = %e, "cannot read or take the leader lease; retrying")
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(jittered(timings.retry_period)) => {}
            _ = cancel.cancelled() => anyhow::bail!("shut down while waiting for leadership"),
        }
    }
    info!(lease = name, identity = %identity, "became leader");
    metrics.leader.set(1);
    let stop = CancellationToken::new();
    let lost = Arc::new(AtomicBool::new(false));
    // Owned by the returned Lease: stopped and joined when it is released.
    let task = tokio::spawn(renew(elector, stop.clone(), lost.clone(), cancel));
    Ok(Lease {
        held: Some(Held { stop, lost, task }),
    })
}

/// Renew every retry period until stopped (then release) or lost.
async fn renew(
    mut elector: Elector,
    stop: CancellationToken,
    lost: Arc<AtomicBool>,
    cancel: CancellationToken,
) {
    let fence = crate::kube::fence::global();
    let timings = elector.timings;
    let (name, identity) = (elector.name.clone(), elector.identity.clone());
    let lose = |why: String| {
        fence.close();
        crate::ops::metrics::METRICS.leader.set(0);
        lost.store(true, Ordering::SeqCst);
        error!(lease = %name, identity = %identity, reason = %why, "lost leadership: no more writes; shutting down");
        cancel.cancel();
    };
    loop {
        tokio::select! {
            _ = tokio::time::sleep(timings.retry_period) => {}
            _ = stop.cancelled() => break,
        }
        let sent = Instant::now();
        // A renewal that hangs must not outlive the deadline it protects.
        let budget = fence
            .remaining()
            .unwrap_or_default()
            .max(Duration::from_millis(100));
        match tokio::time::timeout(budget, elector.try_acquire_or_renew()).await {
            Ok(Ok(None)) => {
                fence.renewed(sent, timings.renew_deadline);
                debug!(lease = %elector.name, "renewed");
                continue;
            }
            Ok(Ok(Some(holder))) => {
                lose(format!("{holder:?} holds the lease now"));
                return;
            }
            Ok(Err(e)) => {
                warn!(lease = %elector.name, error = %e, "renewing the leader lease failed; retrying until the renew deadline")
            }
            Err(_) => warn!(lease = %elector.name, "renewing the leader lease timed out"),
        }
        if !fence.allows_writes() {
            lose(format!(
                "no renewal succeeded within the renew deadline ({:?})",
                timings.renew_deadline
            ));
            return;
        }
    }
    // Graceful stop: no write after this point, then hand the lease over.
    fence.close();
    crate::ops::metrics::METRICS.leader.set(0);
    match tokio::time::timeout(timings.retry_period, elector.release()).await {
        Ok(Ok(())) => info!(lease = %elector.name, "released the leader lease"),
        Ok(Err(e)) => {
            warn!(lease = %elector.name, error = %e, "could not release the leader lease; a standby takes over when it expires")
        }
        Err(_) => warn!(lease = %elector.name, "releasing the leader lease timed out"),
    }
}

/// `d` plus up to 20 % (client-go's jitter factor), so standbys that
/// started together do not knock in lockstep.
fn jittered(d: Duration) -> Duration {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(Instant::now().elapsed().as_nanos());
    let frac = (h.finish() % 1000) as f64 / 1000.0 * 0.2;
    d.mul_f64(1.0 + frac)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(holder: &str, secs: i32) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(holder.into()),
            lease_duration_seconds: Some(secs),
            ..Default::default()
        }
    }

    #[test]
    fn a_leader_with_another_configuration_is_a_mismatch_an_unstamped_one_is_not() {
        let ours = Configuration("kcp=a selector=x".into());
        assert_eq!(mismatch(&ours, None), None);
        assert_eq!(mismatch(&ours, Some("kcp=a selector=x")), None);
        assert_eq!(
            mismatch(&ours, Some("kcp=a selector=y")).as_deref(),
            Some("kcp=a selector=y")
        );
    }

    #[test]
    fn a_standby_waits_a_full_lease_duration_from_when_it_saw_a_change() {
        let seen = Instant::now();
        let d = Duration::from_secs(15);
        assert_eq!(
            decide(&spec("a", 15), "b", seen, seen + Duration::from_secs(14), d),
            Decision::Wait { holder: "a".into() }
        );
        assert_eq!(
            decide(&spec("a", 15), "b", seen, seen + Duration::from_secs(15), d),
            Decision::Take
        );
    }

    #[test]
    fn a_released_or_free_lease_is_taken_at_once_and_ours_is_renewed() {
        let now = Instant::now();
        let d = Duration::from_secs(15);
        assert_eq!(decide(&spec("", 1), "b", now, now, d), Decision::Take);
        assert_eq!(
            decide(&LeaseSpec::default(), "b", now, now, d),
            Decision::Take
        );
        assert_eq!(decide(&spec("b", 15), "b", now, now, d), Decision::Renew);
    }

    #[test]
    fn timings_must_leave_the_leader_time_to_stop() {
        assert!(Timings::default().validate().is_ok());
        let t = Timings {
            renew_deadline: Duration::from_secs(15),
            ..Default::default()
        };
        assert!(
            t.validate()
                .unwrap_err()
                .contains("--leader-elect-lease-duration")
        );
        let t = Timings {
            retry_period: Duration::from_secs(10),
            ..Default::default()
        };
        assert!(
            t.validate()
                .unwrap_err()
                .contains("--leader-elect-retry-period")
        );
        let t = Timings {
            lease_duration: Duration::from_millis(15_500),
            ..Default::default()
        };
        assert!(t.validate().unwrap_err().contains("whole seconds"));
    }

    #[test]
    fn jitter_stays_within_twenty_percent() {
        for _ in 0..100 {
            let j = jittered(Duration::from_secs(2));
            assert!(
                j >= Duration::from_secs(2) && j <= Duration::from_millis(2400),
                "{j:?}"
            );
        }
    }
}
