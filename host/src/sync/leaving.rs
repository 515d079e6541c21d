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
//! [`super::deletion`]). Nothing is cached: an answer kept even for
//! seconds would treat a workspace deleted right after one of its objects
//! as a single deletion (and a consumer who binds again as leaving), and
//! the reads happen only on deletions.

/// Label on namespaces the agent created while `workspaceDeletion: Delete`
/// was set: the agent's name.
pub const CREATED_BY_LABEL: &str = "syncweave.dev/created-by-agent";
/// With [`CREATED_BY_LABEL`]: the logical cluster the namespace was
/// created for.
pub const CREATED_FOR_LABEL: &str = "syncweave.dev/created-for-cluster";
/// Annotation on a copy left behind by `workspaceDeletion: Orphan`: when.
pub const ORPHANED_ANNOTATION: &str = "syncweave.dev/orphaned";
