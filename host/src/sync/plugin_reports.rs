//! What plugins reported beside their output (contract 0.2): results and
//! conditions become Events on the kcp object they were reported for
//! (through the one recorder, which folds repeats), and the objects with
//! warnings are counted in the PublishedResource's `PluginWarnings`
//! condition. A warning never fails a sync; a fatal result is a plugin
//! error and fails as before.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use syncweave_runtime::{Report, Severity};

use super::ports::Reports;
use crate::controller::store::ObjectKey;

/// The condition's type (with a partitioned endpoint slice,
/// `<slice>/PluginWarnings`).
pub const CONDITION: &str = "PluginWarnings";

/// Messages kept per object for the condition: the condition names one.
const MESSAGE_BYTES: usize = 512;

/// One thing to tell the consumer about their object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Said {
    pub warning: bool,
    pub reason: String,
    pub message: String,
}

/// What the reports of one pass say, in order: results as they are;
/// a condition as an Event whose reason is its reason and whose message
/// names it (`SubnetResolved=False: …`), a Warning unless it is True.
pub fn said(reports: &Reports) -> Vec<Said> {
    let mut out = Vec::new();
    for (field, r) in &reports.0 {
        push_report(&mut out, field, r);
    }
    out
}

fn push_report(out: &mut Vec<Said>, field: &str, r: &Report) {
    for x in &r.results {
        out.push(Said {
            warning: x.severity == Severity::Warning,
            reason: x.reason.clone(),
            message: format!("{}: {}", field, x.message),
        });
    }
    for c in &r.conditions {
        out.push(Said {
            warning: c.status != "True",
            reason: c.reason.clone(),
            message: format!("{}: {}={}: {}", field, c.type_, c.status, c.message),
        });
    }
}

/// The objects whose last pass had warnings, for the condition.
pub struct PluginReports {
    inner: Mutex<BTreeMap<ObjectKey, Said>>,
    /// Called when the condition would say something else.
    changed: Box<dyn Fn() + Send + Sync>,
}

impl std::fmt::Debug for PluginReports {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginReports")
            .field("objects_with_warnings", &self.lock().len())
            .finish()
    }
}

impl PluginReports {
    pub fn new(changed: impl Fn() + Send + Sync + 'static) -> Arc<Self> {
        Arc::new(PluginReports {
            inner: Mutex::default(),
            changed: Box::new(changed),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<ObjectKey, Said>> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// `key`'s last pass said `said`: its first warning is kept for the
    /// condition, or the object leaves the count.
    pub fn passed(&self, key: &ObjectKey, said: &[Said]) {
        let first = said.iter().find(|s| s.warning).map(|s| {
            let mut s = s.clone();
            if s.message.len() > MESSAGE_BYTES {
                let mut end = MESSAGE_BYTES;
                while !s.message.is_char_boundary(end) {
                    end -= 1;
                }
                s.message.truncate(end);
                s.message.push('…');
            }
            s
        });
        let before = {
            let mut m = self.lock();
            match first.clone() {
                Some(s) => m.insert(key.clone(), s),
                None => m.remove(key),
            }
        };
        // The count or the example changed.
        if before.is_some() != first.is_some() {
            (self.changed)();
        }
    }

    /// `key` is gone.
    pub fn forget(&self, key: &ObjectKey) {
        self.passed(key, &[]);
    }

    /// Objects whose last pass had warnings.
    pub fn count(&self) -> usize {
        self.lock().len()
    }

    /// The condition: status, reason and message.
    pub fn condition(&self) -> (&'static str, &'static str, String) {
        let m = self.lock();
        match m.iter().next() {
            None => (
                "False",
                "NoWarnings",
                "no plugin reported a warning on the last pass of any object".into(),
            ),
            Some((key, s)) => (
                "True",
                "Warnings",
                format!(
                    "{} object(s) have plugin warnings (Warning Events on each); e.g. {key}: {}: \
                     {}",
                    m.len(),
                    s.reason,
                    s.message
                ),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::store::KeyParts;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use syncweave_runtime::{CallResult, Condition};

    fn key(name: &str) -> ObjectKey {
        ObjectKey::new(KeyParts {
            cluster: "c".into(),
            namespace: Some("ns".into()),
            name: name.into(),
        })
    }

    fn report() -> Reports {
        Reports(vec![(
            "spec.mutation.spec[0].wasm".into(),
            Report {
                results: vec![
                    CallResult {
                        severity: Severity::Normal,
                        reason: "Filled".into(),
                        message: "subnet id set".into(),
                    },
                    CallResult {
                        severity: Severity::Warning,
                        reason: "SubnetMissing".into(),
                        message: "no subnet a".into(),
                    },
                ],
                conditions: vec![Condition {
                    type_: "SubnetResolved".into(),
                    status: "False".into(),
                    reason: "Missing".into(),
                    message: "waiting".into(),
                }],
                set_context: vec![],
            },
        )])
    }

    #[test]
    fn results_and_conditions_become_events_naming_the_step() {
        let s = said(&report());
        assert_eq!(s.len(), 3);
        assert!(!s[0].warning);
        assert!(s[1].warning);
        assert_eq!(s[1].reason, "SubnetMissing");
        assert_eq!(s[1].message, "spec.mutation.spec[0].wasm: no subnet a");
        assert!(s[2].warning, "a False condition is a Warning");
        assert_eq!(
            s[2].message,
            "spec.mutation.spec[0].wasm: SubnetResolved=False: waiting"
        );
    }

    #[test]
    fn the_count_follows_the_last_pass_of_each_object() {
        let calls = Arc::new(AtomicUsize::new(0));
        let c = calls.clone();
        let r = PluginReports::new(move || {
            c.fetch_add(1, Ordering::SeqCst);
        });
        assert_eq!(r.condition().0, "False");
        r.passed(&key("a"), &said(&report()));
        r.passed(&key("b"), &said(&report()));
        assert_eq!(r.count(), 2);
        let (status, reason, message) = r.condition();
        assert_eq!((status, reason), ("True", "Warnings"));
        assert!(message.contains("2 object(s)"), "{message}");
        assert!(message.contains("SubnetMissing"), "{message}");
        // A pass without warnings takes the object out; a gone object too.
        r.passed(&key("a"), &[]);
        r.forget(&key("b"));
        assert_eq!(r.count(), 0);
        assert_eq!(calls.load(Ordering::SeqCst), 4);
    }
}
