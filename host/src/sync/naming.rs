//! Service-side names of synced objects. Names are computed by a namer
//! plugin (see `crate::plugin::chain`): the built-in one implements upstream's
//! default scheme and templates.

/// Where a kcp object's copy lives on the service cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalName {
    pub namespace: Option<String>,
    pub name: String,
}
