//! A consumer workspace going away (`spec.lifecycle.workspaceDeletion`).
//!
//! kcp deletes a workspace's content as soon as its LogicalCluster is
//! marked for deletion, so the agent sees ordinary deletions of the kcp
//! objects it holds. Which of them are "the workspace is going away" rather
//! than "the consumer deleted this object" is told by the LogicalCluster's
//! deletionTimestamp (read through the virtual workspace, which needs the
//! `core.kcp.io/logicalclusters` claim). `Orphan` then leaves the copy on
//! the service cluster; `Delete` deletes the namespaces the agent created
//! for the workspace once its last copy is gone (both in
//! [`super::deletion`]). This module keeps what is known of workspaces.

use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Label on namespaces the agent created while `workspaceDeletion: Delete`
/// was set: the agent's name.
pub const CREATED_BY_LABEL: &str = "syncweave.dev/created-by-agent";
/// With [`CREATED_BY_LABEL`]: the logical cluster the namespace was
/// created for.
pub const CREATED_FOR_LABEL: &str = "syncweave.dev/created-for-cluster";
/// Annotation on a copy left behind by `workspaceDeletion: Orphan`: when.
pub const ORPHANED_ANNOTATION: &str = "syncweave.dev/orphaned";

/// How long a LogicalCluster seen not deleting is believed: a workspace
/// being deleted deletes many objects at once, each asking.
const NOT_LEAVING_FOR: Duration = Duration::from_secs(5);
/// At most this many workspaces are remembered (deleting ones stay
/// deleting; the others expire after [`NOT_LEAVING_FOR`]).
const REMEMBERED: usize = 4096;

/// What the agent knows of workspaces' deletion, per logical cluster.
#[derive(Default)]
pub struct Leaving {
    seen: std::sync::Mutex<HashMap<String, (bool, Instant)>>,
}

impl Leaving {
    /// Whether the workspace `cluster` is being deleted, if known.
    pub fn get(&self, cluster: &str) -> Option<bool> {
        let seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        match seen.get(cluster) {
            Some((true, _)) => Some(true),
            Some((false, at)) if at.elapsed() < NOT_LEAVING_FOR => Some(false),
            _ => None,
        }
    }

    /// Remember what the LogicalCluster of `cluster` said.
    pub fn put(&self, cluster: &str, leaving: bool) {
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        if seen.len() >= REMEMBERED {
            seen.retain(|_, (l, at)| !*l && at.elapsed() < NOT_LEAVING_FOR);
            if seen.len() >= REMEMBERED {
                seen.clear();
            }
        }
        seen.insert(cluster.to_string(), (leaving, Instant::now()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deleting_workspaces_stay_deleting_others_expire() {
        let l = Leaving::default();
        assert_eq!(l.get("a"), None);
        l.put("a", true);
        l.put("b", false);
        assert_eq!(l.get("a"), Some(true));
        assert_eq!(l.get("b"), Some(false));
    }

    #[test]
    fn memory_is_bounded() {
        let l = Leaving::default();
        for i in 0..(REMEMBERED * 2) {
            l.put(&format!("c{i}"), true);
        }
        assert!(l.seen.lock().unwrap().len() <= REMEMBERED);
    }
}
