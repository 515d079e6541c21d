//! What the agent reports on each InitTarget: a `Ready` condition, the
//! initializer (and terminator) served, how many workspaces were
//! initialized and terminated, and the workspaces waiting or failing (all
//! counted, the oldest [`LISTED`] listed), plus Events on the InitTarget
//! when something starts failing or waiting.
//!
//! The InitTarget controller and the type workers record findings in the
//! [`Book`] (in memory, cheap); one writer task ([`run_writer`]) turns them
//! into status patches and Events. A status is written only when it differs
//! from what the InitTarget already shows, and at most once per
//! [`COALESCE`] per target, so a steady state writes nothing and a burst of
//! workspaces costs a few writes, not one per workspace. Only the leader runs
//! the agent, so only the leader writes.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::{Timestamp, Unit};
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use super::key::Phase;
use super::key::TargetKey;
use super::{Shared, inittarget_resource};
use crate::apis::{InitTargetStatus, WorkspaceEntry, WorkspaceList};

/// How many waiting (and failing) workspaces the status lists; the rest
/// are only counted.
pub const LISTED: usize = 10;

/// Findings within this long of each other go out in one write.
pub const COALESCE: Duration = Duration::from_secs(1);

/// A problem with an InitTarget as a whole, making it not Ready.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// CamelCase, e.g. `WorkspaceTypeNotFound`.
    pub reason: &'static str,
    /// What is wrong and what to do.
    pub message: String,
}

/// Who found a [`Problem`]: the InitTarget controller (the spec, resolving
/// the WorkspaceType) or the type's worker (what the WorkspaceType says).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    Target,
    Type,
}

/// What one pass found about one workspace, for one InitTarget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// Failing (an error, a step past its timeout) rather than waiting.
    pub failing: bool,
    /// CamelCase, e.g. `WaitingForCondition`.
    pub reason: &'static str,
    /// The object waited for or failing, e.g. `Widget default/first`.
    pub object: Option<String>,
    /// The condition type waited for.
    pub condition: Option<String>,
    pub message: String,
}

impl Finding {
    pub fn waiting(reason: &'static str, message: impl Into<String>) -> Self {
        Finding {
            failing: false,
            reason,
            object: None,
            condition: None,
            message: message.into(),
        }
    }

    pub fn failing(reason: &'static str, message: impl Into<String>) -> Self {
        Finding {
            failing: true,
            ..Finding::waiting(reason, message)
        }
    }

    pub fn object(mut self, object: impl Into<String>) -> Self {
        self.object = Some(object.into());
        self
    }

    pub fn condition(mut self, condition: impl Into<String>) -> Self {
        self.condition = Some(condition.into());
        self
    }
}

struct Entry {
    finding: Finding,
    path: Option<String>,
    since: Timestamp,
}

#[derive(Default)]
struct Report {
    uid: Option<String>,
    generation: Option<i64>,
    spec_problem: Option<Problem>,
    type_problem: Option<Problem>,
    initializer: Option<String>,
    terminator: Option<String>,
    initialized: i64,
    terminated: i64,
    entries: BTreeMap<(Phase, String), Entry>,
    /// The status the InitTarget shows (as last read or written).
    shown: Option<InitTargetStatus>,
    dirty: bool,
    /// The status subresource answered 404 (an upstream CRD): said once.
    no_subresource: bool,
}

struct PendingEvent {
    key: TargetKey,
    uid: Option<String>,
    type_: EventType,
    reason: &'static str,
    note: String,
}

/// The findings about every InitTarget, shared by the controller, the
/// workers and the writer.
#[derive(Default)]
pub struct Book {
    reports: Mutex<HashMap<TargetKey, Report>>,
    events: Mutex<Vec<PendingEvent>>,
    wake: Notify,
}

impl Book {
    pub fn new() -> Arc<Self> {
        Arc::new(Book::default())
    }

    fn reports(&self) -> std::sync::MutexGuard<'_, HashMap<TargetKey, Report>> {
        self.reports.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn event(&self, ev: PendingEvent) {
        self.events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(ev);
    }

    /// The InitTarget as the controller last saw it: its UID, generation
    /// and the status it shows (counts carry on from there, and a status
    /// equal to it is not written again).
    pub fn seen(
        &self,
        key: &TargetKey,
        uid: Option<String>,
        generation: Option<i64>,
        shown: Option<InitTargetStatus>,
    ) {
        let mut reports = self.reports();
        let r = reports.entry(key.clone()).or_default();
        if r.uid.is_some() && r.uid != uid {
            // Deleted and created again: start afresh.
            *r = Report::default();
        }
        if r.uid.is_none() {
            let shown_ref = shown.as_ref();
            r.initialized = shown_ref
                .and_then(|s| s.workspaces_initialized)
                .unwrap_or(0);
            r.terminated = shown_ref.and_then(|s| s.workspaces_terminated).unwrap_or(0);
        }
        r.uid = uid;
        r.generation = generation;
        r.shown = shown;
        r.dirty = true;
        drop(reports);
        self.wake.notify_one();
    }

    /// The InitTarget is gone: nothing more to write for it.
    pub fn remove(&self, key: &TargetKey) {
        self.reports().remove(key);
    }

    /// Set or clear a problem of the InitTarget as a whole; a new problem
    /// is also a Warning Event.
    pub fn set_problem(&self, key: &TargetKey, slot: Slot, problem: Option<Problem>) {
        let mut reports = self.reports();
        let Some(r) = reports.get_mut(key) else {
            return;
        };
        let current = match slot {
            Slot::Target => &mut r.spec_problem,
            Slot::Type => &mut r.type_problem,
        };
        if *current == problem {
            return;
        }
        if let Some(p) = &problem {
            warn!(init_target = %key, reason = p.reason, "{}", p.message);
            self.event(PendingEvent {
                key: key.clone(),
                uid: r.uid.clone(),
                type_: EventType::Warning,
                reason: p.reason,
                note: p.message.clone(),
            });
        }
        *current = problem;
        r.dirty = true;
        drop(reports);
        self.wake.notify_one();
    }

    /// The initializer and terminator served for the InitTarget.
    pub fn set_served(
        &self,
        key: &TargetKey,
        initializer: Option<String>,
        terminator: Option<String>,
    ) {
        let mut reports = self.reports();
        let Some(r) = reports.get_mut(key) else {
            return;
        };
        if r.initializer != initializer || r.terminator != terminator {
            r.initializer = initializer;
            r.terminator = terminator;
            r.dirty = true;
            drop(reports);
            self.wake.notify_one();
        }
    }

    /// What a pass found about one workspace for one InitTarget; `None`:
    /// nothing left to wait for there. A new finding (or a failure whose
    /// message changed) is also an Event: Warning when failing, Normal when
    /// waiting.
    pub fn workspace(
        &self,
        key: &TargetKey,
        phase: Phase,
        cluster: &str,
        path: Option<&str>,
        finding: Option<Finding>,
    ) {
        let mut reports = self.reports();
        let Some(r) = reports.get_mut(key) else {
            return;
        };
        let k = (phase, cluster.to_string());
        let Some(finding) = finding else {
            if r.entries.remove(&k).is_some() {
                r.dirty = true;
                drop(reports);
                self.wake.notify_one();
            }
            return;
        };
        let (new, changed) = match r.entries.get(&k) {
            None => (true, true),
            Some(e) => {
                let same_kind = e.finding.failing == finding.failing
                    && e.finding.reason == finding.reason
                    && e.finding.object == finding.object
                    && e.finding.condition == finding.condition;
                (!same_kind, e.finding != finding)
            }
        };
        if !changed {
            return;
        }
        let announce = new || finding.failing;
        if announce {
            let at = path.unwrap_or(cluster);
            let note = format!("workspace {at} ({phase}): {}", finding.message);
            if finding.failing {
                warn!(init_target = %key, cluster, reason = finding.reason, "{note}");
            } else {
                info!(init_target = %key, cluster, reason = finding.reason, "{note}");
            }
            self.event(PendingEvent {
                key: key.clone(),
                uid: r.uid.clone(),
                type_: if finding.failing {
                    EventType::Warning
                } else {
                    EventType::Normal
                },
                reason: finding.reason,
                note,
            });
        }
        let since = match (new, r.entries.get(&k)) {
            (false, Some(e)) => e.since,
            _ => now(),
        };
        r.entries.insert(
            k,
            Entry {
                finding,
                path: path.map(str::to_string),
                since,
            },
        );
        r.dirty = true;
        drop(reports);
        self.wake.notify_one();
    }

    /// The workspace is done (initialized, or its terminator removed):
    /// count it for `done`, and forget it everywhere.
    pub fn completed(&self, done: &[TargetKey], phase: Phase, cluster: &str) {
        let mut reports = self.reports();
        for (key, r) in reports.iter_mut() {
            if done.contains(key) {
                match phase {
                    Phase::Initializing => r.initialized += 1,
                    Phase::Terminating => r.terminated += 1,
                }
                r.dirty = true;
            }
            if r.entries.remove(&(phase, cluster.to_string())).is_some() {
                r.dirty = true;
            }
        }
        drop(reports);
        self.wake.notify_one();
    }

    /// The workspace left the virtual workspace (initialized or deleted by
    /// someone else, or another replica's work): forget it everywhere.
    pub fn forget_workspace(&self, phase: Phase, cluster: &str) {
        self.completed(&[], phase, cluster)
    }

    /// The InitTarget left its worker: its workspaces are no longer its.
    pub fn clear_workspaces(&self, key: &TargetKey) {
        let mut reports = self.reports();
        if let Some(r) = reports.get_mut(key)
            && !r.entries.is_empty()
        {
            r.entries.clear();
            r.dirty = true;
            drop(reports);
            self.wake.notify_one();
        }
    }

    /// The statuses to write (each differing from what its InitTarget
    /// shows) and the Events to send.
    fn take(&self) -> (Vec<(TargetKey, InitTargetStatus)>, Vec<PendingEvent>) {
        let now = now();
        let mut writes = Vec::new();
        for (key, r) in self.reports().iter_mut() {
            if !std::mem::take(&mut r.dirty) || r.uid.is_none() {
                continue;
            }
            let want = r.status(now);
            if r.shown.as_ref() != Some(&want) {
                writes.push((key.clone(), want));
            }
        }
        let events = std::mem::take(&mut *self.events.lock().unwrap_or_else(|e| e.into_inner()));
        (writes, events)
    }

    fn written(&self, key: &TargetKey, status: InitTargetStatus) {
        if let Some(r) = self.reports().get_mut(key) {
            r.shown = Some(status);
        }
    }

    /// A write failed: try again on the next round.
    fn retry(&self, key: &TargetKey) {
        if let Some(r) = self.reports().get_mut(key) {
            r.dirty = true;
        }
    }

    /// Whether the 404 of a status write is news (said once per target).
    fn first_404(&self, key: &TargetKey) -> bool {
        self.reports()
            .get_mut(key)
            .is_some_and(|r| !std::mem::replace(&mut r.no_subresource, true))
    }

    #[cfg(test)]
    fn status_of(&self, key: &TargetKey) -> Option<InitTargetStatus> {
        self.reports().get(key).map(|r| r.status(now()))
    }
}

fn now() -> Timestamp {
    Timestamp::now()
        .round(Unit::Second)
        .unwrap_or_else(|_| Timestamp::now())
}

impl Report {
    /// The status this report stands for. The Ready condition keeps its
    /// lastTransitionTime while its status stays the same.
    fn status(&self, now: Timestamp) -> InitTargetStatus {
        let (ready, reason, message) = self.ready();
        let previous = self
            .shown
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|cs| cs.iter().find(|c| c.type_ == "Ready"));
        let since = match previous {
            Some(c) if c.status == ready => c.last_transition_time.clone(),
            _ => Time(now),
        };
        let list = |failing: bool| {
            let mut entries: Vec<(&(Phase, String), &Entry)> = self
                .entries
                .iter()
                .filter(|(_, e)| e.finding.failing == failing)
                .collect();
            if entries.is_empty() {
                return None;
            }
            entries.sort_by(|a, b| (a.1.since, &a.0.1).cmp(&(b.1.since, &b.0.1)));
            Some(WorkspaceList {
                count: entries.len() as i64,
                workspaces: entries
                    .iter()
                    .take(LISTED)
                    .map(|((phase, cluster), e)| WorkspaceEntry {
                        cluster: cluster.clone(),
                        path: e.path.clone(),
                        phase: phase.to_string(),
                        reason: e.finding.reason.to_string(),
                        object: e.finding.object.clone(),
                        condition: e.finding.condition.clone(),
                        message: e.finding.message.clone(),
                        since: e.since.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
                    })
                    .collect(),
            })
        };
        InitTargetStatus {
            observed_generation: self.generation,
            conditions: Some(vec![Condition {
                type_: "Ready".into(),
                status: ready.into(),
                reason: reason.into(),
                message,
                observed_generation: self.generation,
                last_transition_time: since,
            }]),
            initializer: self.initializer.clone(),
            terminator: self.terminator.clone(),
            workspaces_initialized: Some(self.initialized),
            workspaces_terminated: self.terminator.as_ref().map(|_| self.terminated),
            waiting: list(false),
            failing: list(true),
        }
    }

    /// `Ready`: its status, reason and message.
    fn ready(&self) -> (&'static str, &'static str, String) {
        if let Some(p) = self.spec_problem.as_ref().or(self.type_problem.as_ref()) {
            return ("False", p.reason, p.message.clone());
        }
        let mut failing: Vec<(&(Phase, String), &Entry)> = self
            .entries
            .iter()
            .filter(|(_, e)| e.finding.failing)
            .collect();
        failing.sort_by(|a, b| (a.1.since, &a.0.1).cmp(&(b.1.since, &b.0.1)));
        if let Some(((phase, cluster), oldest)) = failing.first() {
            let at = oldest.path.as_deref().unwrap_or(cluster);
            return (
                "False",
                oldest.finding.reason,
                format!(
                    "{} workspace(s) failing (see status.failing); the oldest, {at} ({phase}): {}",
                    failing.len(),
                    oldest.finding.message
                ),
            );
        }
        match (&self.initializer, &self.terminator) {
            (None, _) => (
                "False",
                "Resolving",
                "resolving spec.workspaceTypeRef".to_string(),
            ),
            (Some(i), None) => ("True", "Serving", format!("serving initializer {i}")),
            (Some(i), Some(t)) => (
                "True",
                "Serving",
                format!("serving initializer {i} and terminator {t}"),
            ),
        }
    }
}

/// The status as a merge patch: every field this agent owns is set, the
/// absent ones to null, so a list that emptied is removed.
fn patch_body(status: &InitTargetStatus) -> Value {
    let mut v = serde_json::to_value(status).unwrap_or_else(|_| json!({}));
    if let Value::Object(m) = &mut v {
        for field in [
            "observedGeneration",
            "conditions",
            "initializer",
            "terminator",
            "workspacesInitialized",
            "workspacesTerminated",
            "waiting",
            "failing",
        ] {
            m.entry(field).or_insert(Value::Null);
        }
    }
    json!({ "status": v })
}

/// Write what the [`Book`] holds, until `cancel`: statuses that changed
/// and the Events, each in the InitTarget's own workspace.
pub(crate) async fn run_writer(book: Arc<Book>, shared: Arc<Shared>, cancel: CancellationToken) {
    let mut recorders: HashMap<String, Recorder> = HashMap::new();
    loop {
        tokio::select! {
            _ = book.wake.notified() => {}
            _ = cancel.cancelled() => return,
        }
        // Let a burst of findings settle into one write.
        tokio::select! {
            _ = tokio::time::sleep(COALESCE) => {}
            _ = cancel.cancelled() => return,
        }
        let (writes, events) = book.take();
        let mut failed = false;
        for (key, status) in writes {
            let Some(client) = client_for(&shared, &key) else {
                continue;
            };
            let api: Api<DynamicObject> = Api::all_with(client, &inittarget_resource());
            match api
                .patch_status(
                    &key.name,
                    &PatchParams::default(),
                    &Patch::Merge(&patch_body(&status)),
                )
                .await
            {
                Ok(_) => {
                    debug!(init_target = %key, "status written");
                    book.written(&key, status);
                }
                Err(kube::Error::Api(s)) if s.code == 404 => {
                    // Deleted meanwhile, or an upstream CRD without the
                    // status subresource.
                    if book.first_404(&key) {
                        warn!(init_target = %key, "cannot write the InitTarget's status (404): if it exists, its CRD lacks the status subresource; install syncweave's (charts/syncweave/crds/initialization.kcp.io_inittargets.yaml) to see status there");
                    }
                }
                Err(e) => {
                    warn!(init_target = %key, error = %e, "cannot write the InitTarget's status; retrying (grant patch on inittargets/status, docs/rbac.md)");
                    book.retry(&key);
                    failed = true;
                }
            }
        }
        for ev in events {
            let Some(uid) = ev.uid.clone() else { continue };
            let Some(client) = client_for(&shared, &ev.key) else {
                continue;
            };
            let recorder = recorders.entry(ev.key.cluster.clone()).or_insert_with(|| {
                Recorder::new(
                    client,
                    Reporter {
                        controller: "syncweave-init".into(),
                        instance: Some(crate::kube::recorder::instance()),
                    },
                )
            });
            let reference = ObjectReference {
                api_version: Some("initialization.kcp.io/v1alpha1".into()),
                kind: Some("InitTarget".into()),
                name: Some(ev.key.name.clone()),
                uid: Some(uid),
                ..Default::default()
            };
            let event = Event {
                type_: ev.type_,
                reason: ev.reason.to_string(),
                note: Some(crate::kube::recorder::note(&ev.note)),
                action: "Reconcile".into(),
                secondary: None,
            };
            if let Err(e) = recorder.publish(&event, &reference).await {
                debug!(init_target = %ev.key, error = %e, "cannot record an Event (grant create and patch on events.k8s.io events in the InitTarget's workspace, docs/rbac.md)");
            }
        }
        if failed {
            // Back off a little before the retry.
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs(5)) => book.wake.notify_one(),
                _ = cancel.cancelled() => return,
            }
        }
    }
}

/// The InitTarget's workspace (its `kcp.io/cluster`), or the config
/// workspace when it has none.
fn client_for(shared: &Shared, key: &TargetKey) -> Option<kube::Client> {
    let r = if key.cluster.is_empty() {
        Ok(shared.config_client.clone())
    } else {
        shared.workspace_client(&key.cluster)
    };
    r.map_err(|e| warn!(init_target = %key, error = %e, "no client for the InitTarget's workspace"))
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> TargetKey {
        TargetKey {
            cluster: "c1".into(),
            name: name.into(),
        }
    }

    fn book_with(name: &str) -> Arc<Book> {
        let b = Book::new();
        b.seen(&key(name), Some("uid-1".into()), Some(1), None);
        b.set_served(&key(name), Some("abc:t".into()), None);
        b
    }

    #[test]
    fn serving_target_is_ready() {
        let b = book_with("a");
        let s = b.status_of(&key("a")).unwrap();
        let c = &s.conditions.as_ref().unwrap()[0];
        assert_eq!((c.status.as_str(), c.reason.as_str()), ("True", "Serving"));
        assert_eq!(c.message, "serving initializer abc:t");
        assert_eq!(s.workspaces_initialized, Some(0));
        assert_eq!(s.workspaces_terminated, None);
        assert_eq!(s.waiting, None);
        assert_eq!(s.observed_generation, Some(1));
    }

    /// Never Ready while a workspace fails; waiting alone keeps it Ready.
    #[test]
    fn failing_workspaces_make_it_not_ready() {
        let b = book_with("a");
        b.workspace(
            &key("a"),
            Phase::Initializing,
            "ws1",
            Some("root:ws1"),
            Some(
                Finding::waiting("WaitingForCondition", "waiting")
                    .object("Widget default/x")
                    .condition("Available"),
            ),
        );
        let s = b.status_of(&key("a")).unwrap();
        assert_eq!(s.conditions.as_ref().unwrap()[0].status, "True");
        let w = s.waiting.unwrap();
        assert_eq!(w.count, 1);
        assert_eq!(w.workspaces[0].condition.as_deref(), Some("Available"));
        assert_eq!(w.workspaces[0].path.as_deref(), Some("root:ws1"));

        b.workspace(
            &key("a"),
            Phase::Initializing,
            "ws2",
            None,
            Some(Finding::failing("InitializationFailed", "template broken")),
        );
        let s = b.status_of(&key("a")).unwrap();
        let c = &s.conditions.as_ref().unwrap()[0];
        assert_eq!(
            (c.status.as_str(), c.reason.as_str()),
            ("False", "InitializationFailed")
        );
        assert!(c.message.contains("ws2") && c.message.contains("template broken"));
        assert_eq!(s.failing.unwrap().count, 1);

        b.completed(&[key("a")], Phase::Initializing, "ws2");
        b.completed(&[key("a")], Phase::Initializing, "ws1");
        let s = b.status_of(&key("a")).unwrap();
        assert_eq!(s.conditions.as_ref().unwrap()[0].status, "True");
        assert_eq!(s.workspaces_initialized, Some(2));
        assert_eq!((s.waiting, s.failing), (None, None));
    }

    /// Thousands of waiting workspaces: all counted, the oldest listed.
    #[test]
    fn lists_are_bounded() {
        let b = book_with("a");
        for i in 0..1000 {
            b.workspace(
                &key("a"),
                Phase::Initializing,
                &format!("ws{i:04}"),
                None,
                Some(Finding::waiting("KindNotServed", "w")),
            );
        }
        let s = b.status_of(&key("a")).unwrap();
        let w = s.waiting.unwrap();
        assert_eq!(w.count, 1000);
        assert_eq!(w.workspaces.len(), LISTED);
        // Events: one per workspace that started waiting, taken once.
        let (_, events) = b.take();
        assert_eq!(events.len(), 1000);
        assert!(b.take().1.is_empty());
    }

    /// A status equal to the one shown is not written again; a change is,
    /// once; the Ready condition keeps its transition time.
    #[test]
    fn written_only_on_change() {
        let b = book_with("a");
        let (writes, _) = b.take();
        assert_eq!(writes.len(), 1);
        let (k, s) = writes.into_iter().next().unwrap();
        b.written(&k, s.clone());
        assert!(b.take().0.is_empty(), "nothing changed");
        // The controller sees the target again with that status: no write.
        b.seen(&k, Some("uid-1".into()), Some(1), Some(s.clone()));
        assert!(b.take().0.is_empty());
        // Same finding twice: one change.
        for _ in 0..2 {
            b.workspace(
                &k,
                Phase::Initializing,
                "ws",
                None,
                Some(Finding::waiting("KindNotServed", "w")),
            );
        }
        let (writes, events) = b.take();
        assert_eq!((writes.len(), events.len()), (1, 1));
        let t0 = &s.conditions.as_ref().unwrap()[0].last_transition_time;
        let t1 = &writes[0].1.conditions.as_ref().unwrap()[0].last_transition_time;
        assert_eq!(t0, t1, "still Ready: same transition time");
    }

    /// Counts carry on from what the InitTarget shows (a restarted or new
    /// leader), and a target created again starts afresh.
    #[test]
    fn counts_survive_restarts() {
        let b = Book::new();
        let shown = InitTargetStatus {
            workspaces_initialized: Some(41),
            ..Default::default()
        };
        b.seen(&key("a"), Some("u1".into()), Some(1), Some(shown));
        b.completed(&[key("a")], Phase::Initializing, "ws");
        assert_eq!(
            b.status_of(&key("a")).unwrap().workspaces_initialized,
            Some(42)
        );
        b.seen(&key("a"), Some("u2".into()), Some(1), None);
        assert_eq!(
            b.status_of(&key("a")).unwrap().workspaces_initialized,
            Some(0)
        );
    }

    #[test]
    fn problems_win_and_are_announced_once() {
        let b = book_with("a");
        let p = Problem {
            reason: "WorkspaceTypeNotFound",
            message: "WorkspaceType t not found".into(),
        };
        b.set_problem(&key("a"), Slot::Target, Some(p.clone()));
        b.set_problem(&key("a"), Slot::Target, Some(p));
        let s = b.status_of(&key("a")).unwrap();
        let c = &s.conditions.as_ref().unwrap()[0];
        assert_eq!(
            (c.status.as_str(), c.reason.as_str()),
            ("False", "WorkspaceTypeNotFound")
        );
        assert_eq!(b.take().1.len(), 1);
        b.set_problem(&key("a"), Slot::Target, None);
        let s = b.status_of(&key("a")).unwrap();
        assert_eq!(s.conditions.as_ref().unwrap()[0].status, "True");
    }

    #[test]
    fn patch_clears_what_is_gone() {
        let body = patch_body(&InitTargetStatus::default());
        assert_eq!(body["status"]["waiting"], Value::Null);
        assert!(body["status"].as_object().unwrap().contains_key("failing"));
    }
}
