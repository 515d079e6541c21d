//! API types served by or consumed by syncweave.
//!
//! - [`published_resource`]: `syncagent.kcp.io/v1alpha1` PublishedResource,
//!   a superset of upstream's schema so existing manifests apply unchanged.
//! - [`kcp`]: the few kcp types the agent reads and writes.
//! - [`init`]: `initialization.kcp.io/v1alpha1` InitTarget and InitTemplate,
//!   the init role's configuration (a superset of upstream init-agent's).
//! - [`wasmplugin`]: `syncweave.dev/v1alpha1` WasmPlugin, a plugin artifact
//!   that PublishedResources refer to by name.

pub mod init;
pub mod kcp;
pub mod published_resource;
pub mod wasmplugin;

pub use init::{
    InitSource, InitTarget, InitTargetSpec, InitTemplate, InitTemplateSpec, RendererPlugin,
    RendererSpec, TemplateEngine, TemplateSource, WorkspaceTypeReference,
};
pub use published_resource::*;
pub use wasmplugin::{
    FailurePolicy, WasmPlugin, WasmPluginInfo, WasmPluginLimits, WasmPluginSpec, WasmPluginStatus,
};

/// CRD manifests this agent installs on the service cluster, as YAML.
pub fn crd_yaml() -> String {
    use kube::CustomResourceExt;
    to_yaml(&[PublishedResource::crd()])
}

/// The WasmPlugin CRD, as shipped in
/// charts/syncweave/crds/syncweave.dev_wasmplugins.yaml.
pub fn wasmplugin_crd_yaml() -> String {
    use kube::CustomResourceExt;
    to_yaml(&[WasmPlugin::crd()])
}

fn to_yaml(
    crds: &[k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition],
) -> String {
    let mut out = String::new();
    for crd in crds {
        out.push_str("---\n");
        out.push_str(&serde_yaml_ng::to_string(crd).expect("CRDs serialize"));
    }
    out
}
