//! Exponential backoff for retrying the same failure: each retry waits twice
//! as long as the one before, up to a cap, and a success starts over.

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

    /// The delay the next retry will wait, without advancing.
    pub fn peek(&self) -> Duration {
        self.next
    }

    /// The delay for this retry; the following one doubles (capped).
    pub fn next_delay(&mut self) -> Duration {
        let d = self.next;
        self.next = (self.next * 2).min(self.max);
        d
    }

    /// After a success: the next failure is retried quickly again.
    pub fn reset(&mut self) {
        self.next = self.base;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_up_to_the_cap_and_resets() {
        let mut b = Backoff::new(Duration::from_millis(500), Duration::from_secs(4));
        let delays: Vec<u64> = (0..6).map(|_| b.next_delay().as_millis() as u64).collect();
        assert_eq!(delays, [500, 1000, 2000, 4000, 4000, 4000]);
        b.reset();
        assert_eq!(b.next_delay(), Duration::from_millis(500));
    }
}
