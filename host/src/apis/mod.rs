//! API types served by or consumed by syncweave.
//!
//! - [`published_resource`]: `syncagent.kcp.io/v1alpha1` PublishedResource,
//!   a superset of upstream's schema so existing manifests apply unchanged.
//! - [`kcp`]: the few kcp types the agent reads and writes.

pub mod kcp;
pub mod published_resource;

pub use published_resource::*;

/// CRD manifests this agent installs on the service cluster, as YAML.
pub fn crd_yaml() -> String {
    use kube::CustomResourceExt;
    let mut out = String::new();
    for crd in [PublishedResource::crd()] {
        out.push_str("---\n");
        out.push_str(&serde_yaml_ng::to_string(&crd).expect("CRDs serialize"));
    }
    out
}
