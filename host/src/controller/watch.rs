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
//!   reset only by real progress: an object listed or watched, or a list
//!   completed. kube-runtime's watcher emits `Event::Init` before *every*
//!   list attempt, so treating any event as progress reset the backoff
//!   between two failed lists: a list that kept failing (a CRD not
//!   installed, a 403) was retried every second and logged every time.

use std::time::Duration;

use futures::{Stream, StreamExt};
use kube::runtime::watcher;

use crate::controller::backoff::Backoff;

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
    /// The watch made progress: a later failure starts a new streak.
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
/// the watch last made progress and then once per [`REMIND_EVERY`], so a
/// server that is down for a while costs a line a minute per watch, not one
/// per retry.
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
                if is_progress(&ev) {
                    backoff.reset();
                    reports.worked();
                }
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
                crate::ops::metrics::METRICS
                    .watch_failures
                    .get_or_create(&crate::ops::metrics::WatchLabels { reason })
                    .inc();
                on_error(&e, retry, reports.failed());
                if let Retry::After(d) = retry {
                    tokio::time::sleep(d).await;
                }
            }
        }
    }
}

/// [`drive`] with the agent's one way of reporting a failing watch:
/// the first failure of a streak (then one a minute) as a WARN naming
/// `what` is watched and how to fix the common causes, the rest at debug.
/// `fix` may name a better fix for a failure (or `None` for the default:
/// [`default_fix`]).
pub async fn drive_reported<K, S>(
    stream: S,
    what: &str,
    fix: impl Fn(&watcher::Error) -> Option<String>,
    on_event: impl FnMut(watcher::Event<K>),
) where
    S: Stream<Item = Result<watcher::Event<K>, watcher::Error>>,
{
    drive(stream, on_event, |e, retry, report| {
        if !report {
            tracing::debug!(error = %e, ?retry, "watching {what} failed again");
            return;
        }
        match fix(e).or_else(|| default_fix(e).map(str::to_string)) {
            Some(fix) => {
                tracing::warn!(error = %e, ?retry, %fix, "watching {what} failed; retrying")
            }
            None => tracing::warn!(error = %e, ?retry, "watching {what} failed; retrying"),
        }
    })
    .await
}

/// What to do about the failures an operator can mend.
pub fn default_fix(e: &watcher::Error) -> Option<&'static str> {
    match status_code(e)? {
        404 => Some("the server does not serve this resource: install its CRD"),
        401 | 403 => Some("grant the agent list and watch on it (docs/rbac.md)"),
        _ => None,
    }
}

/// The HTTP status of a failed list or watch start, if the server answered.
pub fn status_code(e: &watcher::Error) -> Option<u16> {
    match e {
        watcher::Error::InitialListFailed(kube::Error::Api(s))
        | watcher::Error::WatchStartFailed(kube::Error::Api(s)) => Some(s.code),
        watcher::Error::WatchError(s) => Some(s.code),
        _ => None,
    }
}

/// Whether `ev` shows the server answering: an object listed or watched,
/// or a list completed. `Init` only says a list is about to be tried.
fn is_progress<K>(ev: &watcher::Event<K>) -> bool {
    !matches!(ev, watcher::Event::Init)
}

/// The watch resumed from a resourceVersion the server no longer has.
pub fn is_gone(e: &watcher::Error) -> bool {
    matches!(e, watcher::Error::WatchError(s) if s.code == 410)
}

/// The agent may not list or watch these objects.
pub fn is_forbidden(e: &watcher::Error) -> bool {
    matches!(
        e,
        watcher::Error::InitialListFailed(_) | watcher::Error::WatchStartFailed(_)
    ) && status_code(e) == Some(403)
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

    /// A 410 relists at once; other errors back off, and progress (here a
    /// completed list) resets the backoff. With a paused clock, the time the loop slept is exact.
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
        // Reported: the first failure of a streak. The `Init` between the
        // 410 and the 500 is no progress (the list had not even run yet),
        // so they are one streak; the completed list starts a new one.
        let reports: Vec<bool> = retries.iter().map(|r| r.1).collect();
        assert_eq!(reports, [true, false, false, true]);
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

    fn list_failed(code: u16) -> watcher::Error {
        let mut s = Status::failure(
            "the server could not find the requested resource",
            "NotFound",
        );
        s.code = code;
        watcher::Error::InitialListFailed(kube::Error::Api(Box::new(s)))
    }

    /// A list that keeps failing (the CRD is not installed): the watcher
    /// emits `Init` before every attempt, which is no progress. The retries
    /// back off to the cap and the failure is reported once, then once per
    /// [`REMIND_EVERY`]; only a list that completes starts over.
    #[tokio::test(start_paused = true)]
    async fn a_list_that_keeps_failing_backs_off_to_the_cap_and_is_reported_rarely() {
        type Item = Result<watcher::Event<()>, watcher::Error>;
        const ATTEMPTS: usize = 30;
        let mut items: Vec<Item> = Vec::new();
        for _ in 0..ATTEMPTS {
            items.push(Ok(watcher::Event::Init));
            items.push(Err(list_failed(404)));
        }
        // The CRD appears: the list completes, then the watch fails once.
        items.push(Ok(watcher::Event::Init));
        items.push(Ok(watcher::Event::InitDone));
        items.push(Err(status(500)));
        let start = tokio::time::Instant::now();
        let mut retries = Vec::new();
        drive(
            futures::stream::iter(items),
            |_| {},
            |_, r, report| retries.push((r, report, start.elapsed())),
        )
        .await;
        assert_eq!(retries.len(), ATTEMPTS + 1);
        let waits: Vec<Duration> = retries
            .iter()
            .map(|(r, _, _)| match r {
                Retry::After(d) => *d,
                Retry::Relist => panic!("a failed list is not a 410: {retries:?}"),
            })
            .collect();
        // Doubling from the first retry: 0.8, 1.6, 3.2, 6.4 s, then the cap.
        for (i, w) in waits[..ATTEMPTS].iter().enumerate() {
            let nominal = (FIRST_RETRY * (1 << i.min(8))).min(MAX_RETRY);
            assert!(
                *w >= nominal / 2 && *w <= nominal,
                "attempt {i} waited {w:?}, expected about {nominal:?} (waits {waits:?})"
            );
        }
        // ~30 failed lists take minutes, not 30 × 0.8 s; the failure is
        // reported at the first one and about once a minute after.
        let failing_for = retries[ATTEMPTS - 1].2;
        assert!(failing_for >= Duration::from_secs(120), "{failing_for:?}");
        let reported = retries[..ATTEMPTS].iter().filter(|r| r.1).count();
        let at_most = 1 + (failing_for.as_secs() / REMIND_EVERY.as_secs()) as usize;
        assert!(
            (1..=at_most).contains(&reported),
            "{reported} reports in {failing_for:?} of failing lists"
        );
        assert!(retries[0].1, "the first failure is reported");
        // Progress (a completed list) starts the backoff and the reports over.
        let (last, report, _) = retries[ATTEMPTS];
        assert!(report, "a new streak is reported");
        assert!(
            matches!(last, Retry::After(d) if d <= FIRST_RETRY),
            "{last:?}"
        );
    }
}
