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
pub mod pack;
pub mod patch;
pub mod related;
pub mod related_cache;
pub mod state;
pub mod strip;
pub mod syncer;

/// Identifies one kcp object across all bound workspaces. Objects with the
/// same namespace/name in two workspaces are two different keys.
///
/// Shared, not copied: one object's key sits in the kcp cache, the in-sync
/// memo, the work queue and its timer at once, and at 100 000 objects
/// three strings per copy were a good part of the agent's memory. A clone
/// is a reference count; the parts read as fields (`key.cluster`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectKey(std::sync::Arc<KeyParts>);

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KeyParts {
    pub cluster: String,
    pub namespace: Option<String>,
    pub name: String,
}

impl ObjectKey {
    pub fn new(parts: KeyParts) -> Self {
        ObjectKey(std::sync::Arc::new(parts))
    }
}

impl std::ops::Deref for ObjectKey {
    type Target = KeyParts;
    fn deref(&self) -> &KeyParts {
        &self.0
    }
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
        let k = ObjectKey::new(KeyParts {
            cluster: "abc".into(),
            namespace: Some("ns".into()),
            name: "n".into(),
        });
        assert_eq!(k.to_string(), "abc|ns/n");
        let k = ObjectKey::new(KeyParts {
            cluster: "abc".into(),
            namespace: None,
            name: "n".into(),
        });
        assert_eq!(k.to_string(), "abc|n");
    }
}
