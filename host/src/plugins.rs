//! Choosing the plugin chain for a PublishedResource: projection, naming
//! and mutation. Every rule runs as a Wasm component in the sandboxed
//! runtime; this module turns PublishedResource fields into plugin calls.

use std::sync::Arc;

use serde_json::Value;

use crate::apis::PublishedResource;
use crate::sync::naming::{LocalName, default_name};
use crate::sync::syncer::{Mutator, Namer};

#[derive(Clone, Default)]
pub struct PluginHost {}

impl PluginHost {
    pub fn new() -> Self {
        PluginHost {}
    }

    /// Apply `spec.projection` to a (version-selected) CRD.
    pub fn project(&self, pr: &PublishedResource, crd: &Value) -> anyhow::Result<Value> {
        if pr.spec.projection.is_some() {
            anyhow::bail!(
                "PublishedResource {}: spec.projection is not supported by this build yet",
                pr.metadata.name.as_deref().unwrap_or("")
            );
        }
        Ok(crd.clone())
    }

    pub fn namer(
        &self,
        pr: &PublishedResource,
        local_namespaced: bool,
    ) -> anyhow::Result<Arc<dyn Namer>> {
        if pr
            .spec
            .naming
            .as_ref()
            .is_some_and(|n| n.name.is_some() || n.namespace.is_some() || n.wasm.is_some())
        {
            anyhow::bail!(
                "PublishedResource {}: custom spec.naming is not supported by this build yet",
                pr.metadata.name.as_deref().unwrap_or("")
            );
        }
        Ok(Arc::new(DefaultNamer { local_namespaced }))
    }

    pub fn mutator(&self, pr: &PublishedResource) -> anyhow::Result<Option<Arc<dyn Mutator>>> {
        if pr.spec.mutation.is_some() {
            anyhow::bail!(
                "PublishedResource {}: spec.mutation is not supported by this build yet",
                pr.metadata.name.as_deref().unwrap_or("")
            );
        }
        Ok(None)
    }
}

struct DefaultNamer {
    local_namespaced: bool,
}

impl Namer for DefaultNamer {
    fn name(
        &self,
        cluster: &str,
        _path: Option<&str>,
        object: &Value,
    ) -> Result<LocalName, String> {
        let ns = object
            .pointer("/metadata/namespace")
            .and_then(Value::as_str);
        let name = object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .ok_or("object has no metadata.name")?;
        Ok(default_name(cluster, ns, name, self.local_namespaced))
    }
}
