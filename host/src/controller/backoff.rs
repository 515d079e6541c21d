//! The agent's one retry policy: exponential backoff with jitter. Each retry
//! of the same failure waits about twice as long as the one before, up to a
//! cap, and a success starts over. Every delay is drawn from the upper half
//! of its nominal value ("equal jitter"), so watches of several shards that
//! failed together, or many keys that failed on the same outage, do not
//! retry in lockstep.

use std::hash::{BuildHasher, RandomState};
use std::time::Duration;

#[derive(Debug, Clone)]
pub struct Backoff {
    base: Duration,
    max: Duration,
    next: Duration,
}

impl Backoff {
    pub fn new(base: Duration, max: Duration) -> Backoff {
        Backoff {
            base,
            max,
            next: base,
        }
    }

    /// The nominal delay of the next retry (before jitter), without advancing.
    pub fn peek(&self) -> Duration {
        self.next
    }

    /// The delay for this retry; the following one doubles (capped).
    pub fn next_delay(&mut self) -> Duration {
        let d = self.next;
        self.next = (self.next * 2).min(self.max);
        jitter(d)
    }

    /// After a success: the next failure is retried quickly again.
    pub fn reset(&mut self) {
        self.next = self.base;
    }
}

/// The delay for the `n`th consecutive failure of one key (1-based):
/// `base · 2^(n-1)`, capped at `max`, jittered. For queues that keep a
/// failure count per key instead of a [`Backoff`] per key.
pub fn nth_delay(base: Duration, max: Duration, n: u32) -> Duration {
    jitter(
        base.saturating_mul(1u32 << n.saturating_sub(1).min(16))
            .min(max),
    )
}

/// A delay drawn uniformly from `[d/2, d]`.
pub fn jitter(d: Duration) -> Duration {
    d / 2 + d.mul_f64(unit() / 2.0)
}

/// A number in `[0, 1)`. `RandomState` is seeded randomly once per thread
/// and moves on with every value made, which is all jitter needs (no
/// dependency on a random-number crate for it).
fn unit() -> f64 {
    let bits = RandomState::new().hash_one(0u8);
    (bits >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_up_to_the_cap_and_resets() {
        let mut b = Backoff::new(Duration::from_millis(500), Duration::from_secs(4));
        let nominal: [u128; 6] = [500, 1000, 2000, 4000, 4000, 4000];
        for n in nominal {
            assert_eq!(b.peek().as_millis(), n);
            let d = b.next_delay().as_millis();
            assert!((n / 2..=n).contains(&d), "{d} ms outside [{}, {n}]", n / 2);
        }
        b.reset();
        assert_eq!(b.peek(), Duration::from_millis(500));
    }

    /// Without jitter every watch of every shard that failed on the same
    /// outage reconnects at the same instant.
    #[test]
    fn retries_do_not_move_in_lockstep() {
        let delays: std::collections::BTreeSet<Duration> = (0..32)
            .map(|_| Backoff::new(Duration::from_secs(1), Duration::from_secs(30)).next_delay())
            .collect();
        assert!(
            delays.len() > 16,
            "32 first retries drew only {} distinct delays",
            delays.len()
        );
        assert!(
            delays
                .iter()
                .all(|d| (Duration::from_millis(500)..=Duration::from_secs(1)).contains(d))
        );
    }

    #[test]
    fn nth_delay_grows_and_caps() {
        let base = Duration::from_millis(100);
        let max = Duration::from_secs(1);
        for (n, nominal) in [
            (1, 100),
            (2, 200),
            (3, 400),
            (4, 800),
            (5, 1000),
            (40, 1000),
        ] {
            let d = nth_delay(base, max, n).as_millis() as u64;
            assert!((nominal / 2..=nominal).contains(&d), "n={n}: {d} ms");
        }
    }
}
