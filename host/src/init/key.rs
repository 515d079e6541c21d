//! The names the init agent keeps its work under: an InitTarget's key
//! (for workers' membership and status) and the lifecycle hook a
//! workspace waits in.

use kube::api::DynamicObject;

use crate::apis::kcp::CLUSTER_ANNOTATION;

/// One InitTarget: its logical cluster (`kcp.io/cluster`; empty when kcp
/// did not set one) and name. A config workspace given as a URL path may
/// list targets of several workspaces, with the same name in two.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TargetKey {
    pub cluster: String,
    pub name: String,
}

impl std::fmt::Display for TargetKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.cluster.is_empty() {
            write!(f, "{}", self.name)
        } else {
            write!(f, "{}|{}", self.cluster, self.name)
        }
    }
}

pub fn key_of(o: &DynamicObject) -> Option<TargetKey> {
    Some(TargetKey {
        cluster: o
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(CLUSTER_ANNOTATION))
            .cloned()
            .unwrap_or_default(),
        name: o.metadata.name.clone()?,
    })
}

/// Which lifecycle hook a workspace waits in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Phase {
    Initializing,
    Terminating,
}

impl Phase {
    /// What kcp calls the entry a workspace waits on in this phase (its
    /// LogicalCluster lists them in `status.<hook>s`).
    pub fn hook(self) -> &'static str {
        match self {
            Phase::Initializing => "initializer",
            Phase::Terminating => "terminator",
        }
    }
}

impl std::fmt::Display for Phase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Phase::Initializing => "Initializing",
            Phase::Terminating => "Terminating",
        })
    }
}
