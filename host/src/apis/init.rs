//! `InitTarget` and `InitTemplate` (initialization.kcp.io/v1alpha1, both
//! cluster-scoped): which WorkspaceType the init role serves and what it
//! creates in every new workspace of that type. Field names and meanings
//! follow upstream init-agent; syncweave adds the optional `spec.renderer`.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub const INIT_GROUP: &str = "initialization.kcp.io";

#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "initialization.kcp.io",
    version = "v1alpha1",
    kind = "InitTarget",
    plural = "inittargets",
    printcolumn = r#"{"name":"WSType Cluster","type":"string","jsonPath":".spec.workspaceTypeRef.path"}"#,
    printcolumn = r#"{"name":"WSType","type":"string","jsonPath":".spec.workspaceTypeRef.name"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct InitTargetSpec {
    /// The WorkspaceType whose new workspaces are initialized. Its
    /// `spec.initializer` must be true.
    pub workspace_type_ref: WorkspaceTypeReference,

    /// What to create in each new workspace, applied in order.
    pub sources: Vec<InitSource>,

    /// How InitTemplates are rendered (syncweave addition). Default: the
    /// built-in renderer with Go templates and html/template escaping, as
    /// upstream init-agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub renderer: Option<RendererSpec>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, Hash, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceTypeReference {
    /// Workspace path (`root:org`) or logical-cluster name holding the
    /// WorkspaceType; empty means the InitTarget's own workspace.
    #[serde(default)]
    pub path: String,
    /// Name of the WorkspaceType.
    pub name: String,
}

/// One source of objects; exactly one kind of source must be set.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InitSource {
    /// An InitTemplate in the InitTarget's workspace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<TemplateSource>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct TemplateSource {
    /// Name of the InitTemplate.
    pub name: String,
}

/// Template engine of the built-in renderer.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, Hash, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TemplateEngine {
    /// Go templates with sprig functions (upstream's language).
    #[default]
    Gotemplate,
    Handlebars,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RendererSpec {
    /// Template language of the built-in renderer: gotemplate (default) or
    /// handlebars.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<TemplateEngine>,
    /// Escape template output like Go's html/template, as upstream does.
    /// Default: true for gotemplate, false for handlebars.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub html_escape: Option<bool>,
    /// A custom renderer plugin (world `renderer`) instead of the built-in
    /// one; engine and htmlEscape must then be unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wasm: Option<RendererPlugin>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RendererPlugin {
    /// A built-in name, file:///path.wasm, https://… (with sha256),
    /// configmap://<namespace>/<name>/<key> (a binaryData key in the
    /// agent's config workspace) or oci://<registry>/<repo>@sha256:<digest>.
    pub source: String,
    /// SHA-256 of the component, 64 lower-case hex digits; required for
    /// https:// sources, verified for all others when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^[a-f0-9]{64}$"))]
    pub sha256: Option<String>,
    /// Plugin config, passed to the plugin as JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "preserve_unknown")]
    pub config: Option<serde_json::Value>,
}

#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "initialization.kcp.io",
    version = "v1alpha1",
    kind = "InitTemplate",
    plural = "inittemplates",
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct InitTemplateSpec {
    /// Template rendering to a YAML (or JSON) stream of objects. It sees
    /// `.ClusterName` (logical-cluster name) and `.ClusterPath` (workspace
    /// path) of the workspace being initialized.
    pub template: String,
}

fn preserve_unknown(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"x-kubernetes-preserve-unknown-fields": true})
}

/// The InitTarget CRD, as shipped in
/// charts/syncweave/crds/initialization.kcp.io_inittargets.yaml.
pub fn inittarget_crd_yaml() -> String {
    use kube::CustomResourceExt;
    crd_to_yaml(&InitTarget::crd())
}

/// The InitTemplate CRD, as shipped in
/// charts/syncweave/crds/initialization.kcp.io_inittemplates.yaml.
pub fn inittemplate_crd_yaml() -> String {
    use kube::CustomResourceExt;
    crd_to_yaml(&InitTemplate::crd())
}

fn crd_to_yaml(
    crd: &k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
) -> String {
    format!(
        "---\n{}",
        serde_yaml_ng::to_string(crd).expect("CRDs serialize")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::CustomResourceExt;

    proptest::proptest! {
        /// InitTargets and InitTemplates with any JSON in their spec fields
        /// (as a CRD without validation lets through) parse or fail with
        /// an error, and a parsed target's renderer settings are read
        /// without a panic.
        #[test]
        fn any_init_spec_parses_or_fails_cleanly(
            fields in proptest::collection::btree_map(
                proptest::sample::select(vec![
                    "workspaceTypeRef", "sources", "renderer", "template",
                ]),
                crate::testing::json_value(),
                0..4,
            ),
        ) {
            let spec: serde_json::Map<String, serde_json::Value> =
                fields.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
            let obj = serde_json::json!({"metadata": {"name": "x"}, "spec": spec});
            if let Ok(t) = serde_json::from_value::<InitTarget>(obj.clone()) {
                let _ = crate::init::render::builtin_config(t.spec.renderer.as_ref());
            }
            let _ = serde_json::from_value::<InitTemplate>(obj);
        }
    }

    /// Upstream's e2e InitTarget applies unchanged.
    #[test]
    fn upstream_manifest_parses() {
        let t: InitTarget = serde_yaml_ng::from_str(
            "apiVersion: initialization.kcp.io/v1alpha1\nkind: InitTarget\nmetadata:\n  name: init-my-workspace-type\nspec:\n  workspaceTypeRef:\n    path: root:workspace-types-here\n    name: my-workspace-type\n  sources:\n  - template:\n      name: my-template\n",
        )
        .unwrap();
        assert_eq!(t.spec.workspace_type_ref.path, "root:workspace-types-here");
        assert_eq!(t.spec.workspace_type_ref.name, "my-workspace-type");
        assert_eq!(
            t.spec.sources[0].template.as_ref().unwrap().name,
            "my-template"
        );
        assert_eq!(t.spec.renderer, None);
    }

    #[test]
    fn renderer_fields_parse() {
        let s: InitTargetSpec = serde_json::from_value(serde_json::json!({
            "workspaceTypeRef": {"name": "t"},
            "sources": [],
            "renderer": {"engine": "handlebars", "htmlEscape": false,
                         "wasm": {"source": "renderer", "config": {"a": 1}}},
        }))
        .unwrap();
        assert_eq!(s.workspace_type_ref.path, "", "path may be omitted");
        let r = s.renderer.unwrap();
        assert_eq!(r.engine, Some(TemplateEngine::Handlebars));
        assert_eq!(r.html_escape, Some(false));
        assert_eq!(r.wasm.unwrap().config, Some(serde_json::json!({"a": 1})));
        assert!(
            serde_json::from_value::<RendererSpec>(serde_json::json!({"engine": "jinja"})).is_err()
        );
    }

    #[test]
    fn crds_are_cluster_scoped_with_upstream_names() {
        let t = InitTarget::crd();
        assert_eq!(
            t.metadata.name.as_deref(),
            Some("inittargets.initialization.kcp.io")
        );
        assert_eq!(t.spec.scope, "Cluster");
        let schema = serde_json::to_value(&t.spec.versions[0].schema).unwrap();
        let spec = &schema["openAPIV3Schema"]["properties"]["spec"];
        let required: Vec<&str> = spec["required"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|v| v.as_str())
            .collect();
        assert!(required.contains(&"workspaceTypeRef") && required.contains(&"sources"));
        let tpl = InitTemplate::crd();
        assert_eq!(tpl.spec.scope, "Cluster");
        assert_eq!(tpl.spec.names.plural, "inittemplates");
    }

    /// The CRD manifests shipped in charts/ must match the Rust types.
    #[test]
    fn shipped_crd_is_up_to_date() {
        crate::apis::assert_shipped_crd(
            "initialization.kcp.io_inittargets.yaml",
            &inittarget_crd_yaml(),
        );
        crate::apis::assert_shipped_crd(
            "initialization.kcp.io_inittemplates.yaml",
            &inittemplate_crd_yaml(),
        );
    }
}
