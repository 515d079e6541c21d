//! What `/healthz` and `/readyz` report.
//!
//! `/healthz` answers 200 from the moment the server listens: the process is
//! alive, even while kcp is still unreachable (restarting it would not help).
//! `/readyz` is 200 only when every named check passes: kcp and the service
//! cluster answer (probed periodically), and the agent's controllers have
//! synced. A replica waiting for the leader lease is ready once it can reach
//! both sides: it is a healthy standby, and an unready standby would stall
//! rolling updates.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

/// The readiness checks the agents report.
pub const CHECK_KCP: &str = "kcp";
pub const CHECK_SERVICE: &str = "service-cluster";
pub const CHECK_SYNC: &str = "sync";
pub const CHECK_INIT: &str = "init";

/// The checks and their last results.
#[derive(Debug, Default)]
pub struct Health {
    inner: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    checks: BTreeMap<&'static str, Result<(), String>>,
    /// When `/readyz` was last asked: probes run only while someone asks
    /// (or a check fails), so an idle agent sends no probe requests.
    asked: Option<std::time::Instant>,
    /// Checks not required while this replica waits for the lease.
    leader_only: Vec<&'static str>,
    standby: bool,
    /// Checks answered by how a server last answered the agent's requests
    /// ([`crate::kube::client::server_health`]) instead of by probes.
    servers: BTreeMap<&'static str, &'static [&'static str]>,
}

impl Health {
    /// A health state whose `checks` all start as failing with "not checked
    /// yet"; `leader_only` checks are skipped while on standby.
    pub fn new(checks: &[&'static str], leader_only: &[&'static str]) -> Arc<Health> {
        let mut state = State::default();
        for c in checks.iter().chain(leader_only) {
            state.checks.insert(c, Err("not checked yet".into()));
        }
        state.leader_only = leader_only.to_vec();
        Arc::new(Health {
            inner: Mutex::new(state),
        })
    }

    /// Record the result of `check`; transitions are logged once.
    pub fn set(&self, check: &'static str, result: Result<(), String>) {
        let mut s = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let previous = s.checks.insert(check, result.clone());
        let was_ok = matches!(previous, Some(Ok(())));
        match (&result, was_ok) {
            (Ok(()), false) => info!(check, "readiness check passes"),
            (Err(e), true) => warn!(check, error = %e, "readiness check fails"),
            _ => {}
        }
    }

    pub fn ok(&self, check: &'static str) {
        self.set(check, Ok(()));
    }

    pub fn fail(&self, check: &'static str, why: impl Into<String>) {
        self.set(check, Err(why.into()));
    }

    /// Waiting for the leader lease (true) or leading / not electing (false).
    /// Whether probing `check` is worth a request now: while `/readyz` is
    /// being asked (kubelet asks every few seconds), and while the check
    /// fails or has never passed.
    fn probe_wanted(&self, check: &'static str) -> bool {
        let s = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let asked = s
            .asked
            .is_some_and(|t| t.elapsed() < std::time::Duration::from_secs(30));
        asked || !matches!(s.checks.get(check), Some(Ok(())))
    }

    /// Answer `check` from how `server` last answered the agent's own
    /// requests: no probe requests, so an idle agent sends none.
    /// What the agent itself records with [`Health::set`] still counts: a
    /// server that answers but lacks the agent's objects is not ready either.
    pub fn follow_server(&self, check: &'static str, servers: &'static [&'static str]) {
        let mut s = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        s.servers.insert(check, servers);
        s.checks.insert(check, Ok(()));
    }

    pub fn set_standby(&self, standby: bool) {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).standby = standby;
    }

    /// Whether the agent is ready, and a report with one line per check in
    /// the style of the Kubernetes API server (`[+]kcp ok`, `[-]sync failed: …`).
    pub fn readiness(&self) -> (bool, String) {
        let mut s = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        s.asked = Some(std::time::Instant::now());
        let mut checks = s.checks.clone();
        for (check, server) in &s.servers {
            let answered = crate::kube::client::servers_health(server)
                .unwrap_or_else(|| Err("no request answered yet".into()));
            if let (Err(e), Some(r)) = (answered, checks.get_mut(check)) {
                *r = Err(e);
            }
        }
        let mut ready = true;
        let mut report = String::new();
        for (name, result) in &checks {
            let skipped = s.standby && s.leader_only.contains(name);
            match result {
                _ if skipped => report.push_str(&format!("[+]{name} skipped: standby replica\n")),
                Ok(()) => report.push_str(&format!("[+]{name} ok\n")),
                Err(e) => {
                    ready = false;
                    report.push_str(&format!("[-]{name} failed: {e}\n"));
                }
            }
        }
        report.push_str(if ready {
            "readyz check passed\n"
        } else {
            "readyz check failed\n"
        });
        (ready, report)
    }
}

/// Run `probe` every `every` until cancelled and record its result as
/// `check`. The first probe runs at once.
pub fn spawn_probe<F, Fut>(
    health: Arc<Health>,
    check: &'static str,
    every: Duration,
    cancel: CancellationToken,
    probe: F,
) where
    F: Fn() -> Fut + Send + 'static,
    Fut: Future<Output = Result<(), String>> + Send,
{
    // Ends with `cancel`; a probe that fails or hangs is an answer (it
    // sets the check), not a reason for the loop to end.
    tokio::spawn(async move {
        loop {
            if !health.probe_wanted(check) {
                tokio::select! {
                    _ = cancel.cancelled() => return,
                    _ = tokio::time::sleep(every) => continue,
                }
            }
            let result =
                match tokio::time::timeout(every.max(Duration::from_secs(5)), probe()).await {
                    Ok(r) => r,
                    Err(_) => Err("no answer within the probe timeout".into()),
                };
            health.set(check, result);
            tokio::select! {
                _ = cancel.cancelled() => return,
                _ = tokio::time::sleep(every) => {}
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_only_when_every_check_passes() {
        let h = Health::new(&["kcp", "service-cluster"], &["sync"]);
        let (ready, report) = h.readiness();
        assert!(!ready);
        assert!(
            report.contains("[-]kcp failed: not checked yet"),
            "{report}"
        );
        h.ok("kcp");
        h.ok("service-cluster");
        assert!(!h.readiness().0, "sync has not synced yet");
        h.ok("sync");
        let (ready, report) = h.readiness();
        assert!(ready, "{report}");
        h.fail("kcp", "unreachable: connection refused");
        let (ready, report) = h.readiness();
        assert!(!ready);
        assert!(report.contains("[-]kcp failed: unreachable: connection refused"));
    }

    #[test]
    fn standby_skips_leader_only_checks_but_not_connectivity() {
        let h = Health::new(&["kcp", "service-cluster"], &["sync"]);
        h.set_standby(true);
        h.ok("kcp");
        h.ok("service-cluster");
        let (ready, report) = h.readiness();
        assert!(ready, "{report}");
        assert!(report.contains("[+]sync skipped: standby replica"));
        h.fail("service-cluster", "unreachable");
        assert!(!h.readiness().0);
        h.ok("service-cluster");
        h.set_standby(false);
        assert!(!h.readiness().0, "a leader must have synced");
    }
}
