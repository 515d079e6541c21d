//! The one loop that drives a kube-runtime watcher stream, for every cache
//! and trigger of the agent (PublishedResources, CRDs, state Secrets, the
//! endpoint slice, synced objects and their copies, related objects).
//!
//! kube-runtime's watcher re-lists by itself after an error; what it leaves
//! to its caller is how long to wait before polling it again. Here:
//! - a `410 Gone` (the resourceVersion it resumed from has been compacted,
//!   as after a kcp restart) is not a failure of the server: the next poll
//!   lists afresh at once, without waiting;
//! - any other error waits a jittered exponential backoff (capped at
//!   [`MAX_RETRY`], so a server that is back is used again within seconds),
//!   reset by the next event.

use std::time::Duration;

use futures::{Stream, StreamExt};
use kube::runtime::watcher;

use crate::backoff::Backoff;

/// The first retry after a failed list or watch.
pub const FIRST_RETRY: Duration = Duration::from_millis(800);
/// The longest wait between two attempts while a server does not answer.
pub const MAX_RETRY: Duration = Duration::from_secs(10);

/// What a failed poll of a watch stream leads to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retry {
    /// Poll again at once: the watcher lists afresh.
    Relist,
    /// Wait this long first.
    After(Duration),
}

/// While a watch keeps failing, how often it is reported again.
pub const REMIND_EVERY: Duration = Duration::from_secs(60);

/// Which failures of one watch are worth a log line: the first since it
/// last worked, then one per [`REMIND_EVERY`] while it keeps failing.
#[derive(Debug, Default)]
pub struct FailureReports {
    /// When this streak of failures was last reported.
    reported: Option<tokio::time::Instant>,
}

impl FailureReports {
    /// The watch delivered an event: a later failure starts a new streak.
    pub fn worked(&mut self) {
        self.reported = None;
    }

    /// The watch failed; `true` when that is to be reported.
    pub fn failed(&mut self) -> bool {
        let report = self.reported.is_none_or(|at| at.elapsed() >= REMIND_EVERY);
        if report {
            self.reported = Some(tokio::time::Instant::now());
        }
        report
    }
}

/// Drive `stream` until it ends, handing every event to `on_event`. On an
/// error, `on_error` is told what happens next (to log it with its own
/// context) and whether to report it: `true` for the first failure since
/// the last event and then once per [`REMIND_EVERY`], so a server that is
/// down for a while costs a line a minute per watch, not one per retry.
/// Then the loop waits as [`Retry`] says.
pub async fn drive<K, S>(
    stream: S,
    mut on_event: impl FnMut(watcher::Event<K>),
    mut on_error: impl FnMut(&watcher::Error, Retry, bool),
) where
    S: Stream<Item = Result<watcher::Event<K>, watcher::Error>>,
{
    let mut stream = std::pin::pin!(stream);
    let mut backoff = Backoff::new(FIRST_RETRY, MAX_RETRY);
    let mut reports = FailureReports::default();
    while let Some(ev) = stream.next().await {
        match ev {
            Ok(ev) => {
                backoff.reset();
                reports.worked();
                on_event(ev);
            }
            Err(e) => {
                let retry = if is_gone(&e) {
                    Retry::Relist
                } else {
                    Retry::After(backoff.next_delay())
                };
                let reason = match retry {
                    Retry::Relist => "gone",
                    Retry::After(_) => "error",
                };
                crate::metrics::METRICS
                    .watch_failures
                    .get_or_create(&crate::metrics::WatchLabels { reason })
                    .inc();
                on_error(&e, retry, reports.failed());
                if let Retry::After(d) = retry {
                    tokio::time::sleep(d).await;
                }
            }
        }
    }
}

/// The watch resumed from a resourceVersion the server no longer has.
pub fn is_gone(e: &watcher::Error) -> bool {
    matches!(e, watcher::Error::WatchError(s) if s.code == 410)
}

/// The agent may not list or watch these objects.
pub fn is_forbidden(e: &watcher::Error) -> bool {
    matches!(
        e,
        watcher::Error::InitialListFailed(kube::Error::Api(s))
            | watcher::Error::WatchStartFailed(kube::Error::Api(s))
            if s.code == 403
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::Status;

    fn status(code: u16) -> watcher::Error {
        let mut s = Status::failure("expired", "Expired");
        s.code = code;
        watcher::Error::WatchError(Box::new(s))
    }

    /// A 410 relists at once; other errors back off, and an event resets
    /// the backoff. With a paused clock, the time the loop slept is exact.
    #[tokio::test(start_paused = true)]
    async fn gone_relists_at_once_and_errors_back_off() {
        type Item = Result<watcher::Event<()>, watcher::Error>;
        let items: Vec<Item> = vec![
            Err(status(410)),
            Ok(watcher::Event::Init),
            Err(status(500)),
            Err(status(500)),
            Ok(watcher::Event::InitDone),
            Err(status(500)),
        ];
        let start = tokio::time::Instant::now();
        let mut events = 0;
        let mut retries = Vec::new();
        drive(
            futures::stream::iter(items),
            |_| events += 1,
            |_, r, report| retries.push((r, report)),
        )
        .await;
        assert_eq!(events, 2);
        assert_eq!(retries[0].0, Retry::Relist);
        // Reported: the first failure after an event; not the second in a row.
        let reports: Vec<bool> = retries.iter().map(|r| r.1).collect();
        assert_eq!(reports, [true, true, false, true]);
        let waits: Vec<Duration> = retries[1..]
            .iter()
            .map(|(r, _)| match r {
                Retry::After(d) => *d,
                Retry::Relist => panic!("only a 410 relists at once: {retries:?}"),
            })
            .collect();
        // Second failure in a row waits about twice the first; after an
        // event the next failure starts from the first retry again.
        assert!(waits[0] <= FIRST_RETRY && waits[0] >= FIRST_RETRY / 2);
        assert!(waits[1] <= FIRST_RETRY * 2 && waits[1] >= FIRST_RETRY);
        assert!(waits[2] <= FIRST_RETRY && waits[2] >= FIRST_RETRY / 2);
        // Exactly the backoffs (timers round up to the millisecond), and
        // nothing for the 410.
        let slept = start.elapsed();
        let backoffs: Duration = waits.iter().sum();
        assert!(
            slept >= backoffs && slept <= backoffs + Duration::from_millis(waits.len() as u64),
            "slept {slept:?} for backoffs {backoffs:?}"
        );
    }
}
