//! Object synchronisation, top to bottom: [`controller`] watches kcp
//! (through the APIExport virtual workspace of every shard, into the
//! [`cache`]) and the service cluster, and feeds keys into a work queue
//! ([`crate::runner`]); each key is handled by the [`syncer`], which names the
//! copy ([`naming`]), strips kcp-only metadata ([`strip`]), applies it to the
//! service cluster with a three-way merge against the last state ([`state`],
//! [`patch`]), and copies status back up. Related objects (`spec.related`)
//! follow the primary ([`related`]), read from their own caches
//! ([`related_cache`]).
pub mod cache;
pub mod controller;
pub mod converge;
pub mod events;
pub mod gojson;
pub mod labels;
pub mod naming;
pub mod patch;
pub mod related;
pub mod related_cache;
pub mod state;
pub mod strip;
pub mod syncer;

/// Identifies one kcp object across all bound workspaces. Objects with the
/// same namespace/name in two workspaces are two different keys.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectKey {
    pub cluster: String,
    pub namespace: Option<String>,
    pub name: String,
}

impl std::fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{}|{ns}/{}", self.cluster, self.name),
            None => write!(f, "{}|{}", self.cluster, self.name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn object_key_display_matches_upstream() {
        let k = ObjectKey {
            cluster: "abc".into(),
            namespace: Some("ns".into()),
            name: "n".into(),
        };
        assert_eq!(k.to_string(), "abc|ns/n");
        let k = ObjectKey {
            cluster: "abc".into(),
            namespace: None,
            name: "n".into(),
        };
        assert_eq!(k.to_string(), "abc|n");
    }
}
