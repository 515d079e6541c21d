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
pub mod selector;
pub mod validation;
pub mod wasmplugin;

pub use init::{
    DeleteStep, InitSource, InitTarget, InitTargetSpec, InitTargetStatus, InitTemplate,
    InitTemplateSpec, RendererPlugin, RendererSpec, TemplateEngine, TemplateSource,
    TerminationStep, WorkspaceEntry, WorkspaceList, WorkspaceTypeReference,
};
pub use published_resource::*;
pub use wasmplugin::{
    FailurePolicy, KeySource, ObjectKeyReference, SecretReference, SignatureVerification,
    WasmPlugin, WasmPluginCanary, WasmPluginCanaryStatus, WasmPluginInfo, WasmPluginLimits,
    WasmPluginRollout, WasmPluginSpec, WasmPluginStable, WasmPluginStatus,
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

/// Test helper: the CRD manifest shipped as `charts/syncweave/crds/<file>`
/// must equal `want` (generated from the Rust types). With
/// SYNCWEAVE_UPDATE_CRDS set, the file is rewritten instead.
#[cfg(test)]
pub(crate) fn assert_shipped_crd(file: &str, want: &str) {
    let path = format!(
        "{}/../charts/syncweave/crds/{file}",
        env!("CARGO_MANIFEST_DIR")
    );
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    if have != want {
        if std::env::var_os("SYNCWEAVE_UPDATE_CRDS").is_some() {
            std::fs::write(&path, want).unwrap();
        } else {
            panic!(
                "{path} is stale: run `SYNCWEAVE_UPDATE_CRDS=1 cargo test -p syncweave shipped_crd` and commit it"
            );
        }
    }
}
