//! Detecting writes that do not settle.
//!
//! A healthy sync writes once per change of its inputs: the spec of the copy
//! once per change of the kcp object, the status in kcp once per change of
//! the copy. A mutation that depends on what it wrote (a counter that adds
//! one to the copy's value), a plugin that is not deterministic, or a
//! server that rewrites what it is sent, makes every pass see a difference
//! again, and a sync that writes whenever it sees one loops as fast as the
//! servers answer. The guard counts a key's writes per version of their
//! inputs; past [`MAX_WRITES`], or when the very patch just written is due
//! again, the write is refused and the key reported (the caller turns that
//! into an error, which backs off and shows up as a Warning Event and on the
//! PublishedResource's condition).
//!
//! Bounded: an entry lives from a key's first write until the key settles,
//! its object is gone, or [`FORGIVE`] passes (then one more write is allowed,
//! so a fight that ended heals by itself).

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Mutex;
use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;

use crate::controller::store::ObjectKey;

/// Writes allowed per version of a key's inputs. A new object needs one;
/// three leaves room for a write that raced another change.
pub const MAX_WRITES: u32 = 3;
/// How long a stuck entry is kept before the key may write again.
pub const FORGIVE: Duration = Duration::from_secs(600);
/// Entries kept before old ones are swept on insert.
const SWEEP_ABOVE: usize = 1024;

/// Which write a count is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    /// Spec down: the patch of the service copy; inputs = the kcp object.
    Spec,
    /// Status up: the kcp object's status; inputs = the copy (and the kcp
    /// object's generation, which a status mutation may read).
    Status,
}

impl Phase {
    fn name(self) -> &'static str {
        match self {
            Phase::Spec => "spec",
            Phase::Status => "status",
        }
    }
}

#[derive(Debug)]
struct Entry {
    inputs: String,
    writes: u32,
    last_patch: u64,
    since: Instant,
}

/// A write the guard refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the {phase} sync does not settle: {paths} changed again after {writes} write(s) although \
     nothing it is computed from changed; a mutation (spec.mutation or a wasm plugin) or the \
     API server keeps rewriting it. Writes of this object are held back and retried with \
     backoff; make the mutation give the same result for the same input"
)]
pub struct NotConverging {
    pub phase: &'static str,
    pub paths: String,
    pub writes: u32,
}

#[derive(Debug, Default)]
pub struct Convergence {
    entries: Mutex<HashMap<(ObjectKey, Phase), Entry>>,
}

impl Convergence {
    /// May `key` write `patch` now, its inputs being at version `inputs`?
    pub fn check(
        &self,
        key: &ObjectKey,
        phase: Phase,
        inputs: &str,
        patch: &Value,
    ) -> Result<(), NotConverging> {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let Some(e) = entries.get(&(key.clone(), phase)) else {
            return Ok(());
        };
        if e.inputs != inputs || e.since.elapsed() > FORGIVE {
            entries.remove(&(key.clone(), phase));
            return Ok(());
        }
        if e.writes >= MAX_WRITES || e.last_patch == digest(patch) {
            return Err(NotConverging {
                phase: phase.name(),
                paths: leaf_paths(patch, 5),
                writes: e.writes,
            });
        }
        Ok(())
    }

    /// `key` wrote `patch` (and its state) successfully.
    pub fn wrote(&self, key: &ObjectKey, phase: Phase, inputs: &str, patch: &Value) {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if entries.len() >= SWEEP_ABOVE {
            entries.retain(|_, e| e.since.elapsed() <= FORGIVE);
        }
        let e = entries
            .entry((key.clone(), phase))
            .or_insert_with(|| Entry {
                inputs: inputs.to_string(),
                writes: 0,
                last_patch: 0,
                since: Instant::now(),
            });
        if e.inputs != inputs {
            e.inputs = inputs.to_string();
            e.writes = 0;
            e.since = Instant::now();
        }
        e.writes += 1;
        e.last_patch = digest(patch);
    }

    /// Nothing was left to write: `key` is in sync for `phase`.
    pub fn settled(&self, key: &ObjectKey, phase: Phase) {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if !entries.is_empty() {
            entries.remove(&(key.clone(), phase));
        }
    }

    /// `key`'s object is gone.
    pub fn forget(&self, key: &ObjectKey) {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if !entries.is_empty() {
            entries.remove(&(key.clone(), Phase::Spec));
            entries.remove(&(key.clone(), Phase::Status));
        }
    }

    /// New plugin code may compute something else: every key may write again.
    pub fn reset(&self) {
        self.entries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }

    pub fn len(&self) -> usize {
        self.entries.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn digest(v: &Value) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    // Canonical enough: serde_json's maps keep their order, and both
    // patches are built the same way from the same code.
    v.to_string().hash(&mut h);
    h.finish()
}

/// The dotted paths of the leaves of a merge patch (`spec.replicas`), at
/// most `max` of them.
pub fn leaf_paths(patch: &Value, max: usize) -> String {
    fn walk(v: &Value, prefix: &mut Vec<String>, out: &mut Vec<String>) {
        match v {
            Value::Object(m) if !m.is_empty() => {
                for (k, v) in m {
                    prefix.push(k.clone());
                    walk(v, prefix, out);
                    prefix.pop();
                }
            }
            _ => out.push(if prefix.is_empty() {
                "(the whole object)".into()
            } else {
                prefix.join(".")
            }),
        }
    }
    let mut out = Vec::new();
    walk(patch, &mut Vec::new(), &mut out);
    let more = out.len().saturating_sub(max);
    out.truncate(max);
    let mut s = out.join(", ");
    if more > 0 {
        s.push_str(&format!(" and {more} more"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key(name: &str) -> ObjectKey {
        crate::testing::object_key("c", Some("ns"), name)
    }

    #[test]
    fn a_healthy_sync_writes_once_per_input() {
        let g = Convergence::default();
        let k = key("a");
        for rv in ["1", "2", "3", "4"] {
            let p = json!({"spec": {"v": rv}});
            assert_eq!(g.check(&k, Phase::Spec, rv, &p), Ok(()));
            g.wrote(&k, Phase::Spec, rv, &p);
            g.settled(&k, Phase::Spec);
        }
        assert!(g.is_empty(), "settled keys leave nothing behind");
    }

    #[test]
    fn the_same_patch_again_is_refused_and_named() {
        let g = Convergence::default();
        let k = key("a");
        let p = json!({"spec": {"replicas": 6.0}});
        g.check(&k, Phase::Spec, "7", &p).unwrap();
        g.wrote(&k, Phase::Spec, "7", &p);
        let err = g.check(&k, Phase::Spec, "7", &p).unwrap_err();
        assert_eq!(err.paths, "spec.replicas");
        assert!(err.to_string().contains("spec.replicas"), "{err}");
        // The status of the same key is another matter.
        g.check(&k, Phase::Status, "7", &p).unwrap();
        // A change in kcp is new input: one more write is allowed.
        g.check(&k, Phase::Spec, "8", &p).unwrap();
    }

    #[test]
    fn a_patch_that_keeps_changing_is_refused_after_max_writes() {
        let g = Convergence::default();
        let k = key("counter");
        for i in 0..MAX_WRITES {
            let p = json!({"spec": {"counter": i}});
            g.check(&k, Phase::Spec, "5", &p).unwrap();
            g.wrote(&k, Phase::Spec, "5", &p);
        }
        let p = json!({"spec": {"counter": MAX_WRITES}});
        let err = g.check(&k, Phase::Spec, "5", &p).unwrap_err();
        assert_eq!(err.writes, MAX_WRITES);
        g.forget(&k);
        assert!(g.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn a_stuck_key_may_write_again_after_forgive() {
        let g = Convergence::default();
        let k = key("a");
        let p = json!({"spec": {"x": 1}});
        g.wrote(&k, Phase::Spec, "1", &p);
        assert!(g.check(&k, Phase::Spec, "1", &p).is_err());
        tokio::time::advance(FORGIVE + Duration::from_secs(1)).await;
        assert!(g.check(&k, Phase::Spec, "1", &p).is_ok());
    }

    #[test]
    fn leaf_paths_are_dotted_and_capped() {
        let p = json!({"spec": {"a": 1, "b": {"c": null}}, "metadata": {"labels": {"x": "y"}}});
        assert_eq!(leaf_paths(&p, 5), "metadata.labels.x, spec.a, spec.b.c");
        assert_eq!(leaf_paths(&p, 1), "metadata.labels.x and 2 more");
    }
}
