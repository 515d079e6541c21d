//! The write fence: a replica that is not sure it still holds the leader
//! Lease sends no write, to kcp or to the service cluster.
//!
//! Leader election ([`crate::kube::leader`]) moves a deadline forward on every
//! successful renewal: the time the renewal was *sent* plus the renew
//! deadline. A write (any request but GET/HEAD; watches are GETs) is refused
//! in the client stack, right before it would leave the process, once the
//! monotonic clock has passed that deadline. The check is a clock read, not
//! a flag that a task has to set: a process frozen (SIGSTOP, a long GC-like
//! stall, a suspended VM) and resumed after the deadline finds the fence
//! closed before any of its tasks runs again.
//!
//! Why the standby cannot have taken over before the deadline: it waits a
//! full lease duration from when it *observed* the last renewal, which was
//! written after this replica sent it, and the renew deadline is shorter than
//! the lease duration.
//!
//! Without leader election the fence is always open.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

pub struct Fence {
    base: Instant,
    /// Whether writes depend on the lease at all.
    enabled: AtomicBool,
    /// Writes are allowed until this many nanoseconds after `base`.
    deadline_ns: AtomicU64,
}

impl Fence {
    pub fn new() -> Fence {
        Fence {
            base: Instant::now(),
            enabled: AtomicBool::new(false),
            deadline_ns: AtomicU64::new(0),
        }
    }

    /// From now on, writes need a renewed lease (none yet: closed).
    pub fn enable(&self) {
        self.deadline_ns.store(0, Ordering::SeqCst);
        self.enabled.store(true, Ordering::SeqCst);
    }

    /// A renewal sent at `sent` succeeded: writes are allowed until
    /// `sent + renew_deadline`.
    pub fn renewed(&self, sent: Instant, renew_deadline: Duration) {
        let until = (sent + renew_deadline).saturating_duration_since(self.base);
        let ns = u64::try_from(until.as_nanos()).unwrap_or(u64::MAX);
        self.deadline_ns.fetch_max(ns, Ordering::SeqCst);
    }

    /// Close at once (the lease was lost or released).
    pub fn close(&self) {
        self.deadline_ns.store(0, Ordering::SeqCst);
    }

    pub fn allows_writes(&self) -> bool {
        if !self.enabled.load(Ordering::SeqCst) {
            return true;
        }
        let now = u64::try_from(self.base.elapsed().as_nanos()).unwrap_or(u64::MAX);
        now < self.deadline_ns.load(Ordering::SeqCst)
    }

    /// How long writes stay allowed (zero when closed; `None` when the
    /// fence is off).
    pub fn remaining(&self) -> Option<Duration> {
        if !self.enabled.load(Ordering::SeqCst) {
            return None;
        }
        let now = self.base.elapsed().as_nanos();
        let deadline = u128::from(self.deadline_ns.load(Ordering::SeqCst));
        Some(Duration::from_nanos(
            u64::try_from(deadline.saturating_sub(now)).unwrap_or(u64::MAX),
        ))
    }
}

impl Default for Fence {
    fn default() -> Self {
        Fence::new()
    }
}

static FENCE: OnceLock<Fence> = OnceLock::new();

/// The process's fence: one per process, as there is one lease per process.
pub fn global() -> &'static Fence {
    FENCE.get_or_init(Fence::new)
}

/// The error a fenced write fails with (it never left the process).
#[derive(Debug, thiserror::Error)]
#[error(
    "refused to send {method} {path}: this replica is not sure it still holds the leader lease \
     (its renew deadline passed); it stops and restarts as a standby"
)]
pub struct Fenced {
    pub method: String,
    pub path: String,
}

/// Whether `method` changes something on the server.
pub fn is_write(method: &http::Method) -> bool {
    !matches!(
        *method,
        http::Method::GET | http::Method::HEAD | http::Method::OPTIONS
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn off_by_default_then_closed_until_renewed() {
        let f = Fence::new();
        assert!(f.allows_writes(), "no leader election: always open");
        assert_eq!(f.remaining(), None);
        f.enable();
        assert!(!f.allows_writes(), "a standby writes nothing");
        f.renewed(Instant::now(), Duration::from_secs(10));
        assert!(f.allows_writes());
        assert!(f.remaining().unwrap() > Duration::from_secs(9));
        f.close();
        assert!(!f.allows_writes());
    }

    #[test]
    fn the_deadline_counts_from_when_the_renewal_was_sent() {
        let f = Fence::new();
        f.enable();
        // Sent 50 ms ago with a 40 ms deadline: already past.
        let sent = Instant::now() - Duration::from_millis(50);
        f.renewed(sent, Duration::from_millis(40));
        assert!(!f.allows_writes());
        // A deadline never moves back.
        f.renewed(Instant::now(), Duration::from_secs(10));
        f.renewed(
            Instant::now() - Duration::from_secs(5),
            Duration::from_secs(1),
        );
        assert!(f.allows_writes());
    }

    #[test]
    fn the_deadline_passes_by_the_clock_alone() {
        let f = Fence::new();
        f.enable();
        f.renewed(Instant::now(), Duration::from_millis(30));
        assert!(f.allows_writes());
        std::thread::sleep(Duration::from_millis(40));
        assert!(!f.allows_writes(), "no task had to close it");
    }

    #[test]
    fn writes_are_everything_but_reads() {
        assert!(!is_write(&http::Method::GET));
        assert!(is_write(&http::Method::POST));
        assert!(is_write(&http::Method::PUT));
        assert!(is_write(&http::Method::PATCH));
        assert!(is_write(&http::Method::DELETE));
    }
}
