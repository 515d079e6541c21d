//! `InitTarget` and `InitTemplate` (initialization.kcp.io/v1alpha1, both
//! cluster-scoped): which WorkspaceType the init role serves and what it
//! creates in every new workspace of that type. Field names and meanings
//! follow upstream init-agent; syncweave adds the optional `spec.renderer`
//! and `spec.termination`, and a status (upstream writes none).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector};
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
    status = "InitTargetStatus",
    printcolumn = r#"{"name":"WSType Cluster","type":"string","jsonPath":".spec.workspaceTypeRef.path"}"#,
    printcolumn = r#"{"name":"WSType","type":"string","jsonPath":".spec.workspaceTypeRef.name"}"#,
    printcolumn = r#"{"name":"Ready","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].status"}"#,
    printcolumn = r#"{"name":"Initialized","type":"integer","jsonPath":".status.workspacesInitialized"}"#,
    printcolumn = r#"{"name":"Waiting","type":"integer","jsonPath":".status.waiting.count"}"#,
    printcolumn = r#"{"name":"Failing","type":"integer","jsonPath":".status.failing.count"}"#,
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

    /// What the agent does before a workspace of the type goes away
    /// (syncweave addition): set (even to an empty list) to serve the
    /// WorkspaceType's terminator, which needs `spec.terminator: true` on
    /// the type. The steps run in order, each until its objects are gone;
    /// then the agent removes its terminator and kcp finishes the deletion.
    /// Unset: the agent leaves the terminator to someone else.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub termination: Option<Vec<TerminationStep>>,
}

/// One step of a workspace's termination.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TerminationStep {
    /// Delete objects in the terminating workspace and wait until they are
    /// gone (their finalizers removed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delete: Option<DeleteStep>,
    /// How long the step may take (a Go duration, e.g. "30s", "5m";
    /// default 5m). A step still not done by then is reported (Warning
    /// Event, InitTarget status, a condition on the LogicalCluster) and
    /// keeps being retried: the workspace stays Terminating until it is
    /// done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<String>,
}

/// Which objects a delete step deletes: either by kind (`apiVersion` and
/// `kind`, optionally narrowed by `namespace` and `name` or `selector`), or
/// the objects an InitTemplate renders for the workspace (`template`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeleteStep {
    /// API version of the objects, e.g. `v1` or `example.com/v1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// Kind of the objects, e.g. `ConfigMap`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Only objects in this namespace (namespaced kinds); unset: every
    /// namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Only the object of this name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Only objects whose labels match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    /// The objects this InitTemplate (in the InitTarget's workspace)
    /// renders for the workspace, with the InitTarget's renderer, deleted
    /// in the reverse of the order they are created in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<TemplateSource>,
}

/// What the agent last saw for an InitTarget (syncweave addition; written
/// by the leader, only when something changed).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InitTargetStatus {
    /// The generation of the spec this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// `Ready`: True while the agent serves the target and no workspace
    /// fails; False with a reason saying what is wrong.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
    /// The initializer served: `<logical cluster of the WorkspaceType>:<name>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initializer: Option<String>,
    /// The terminator served (only with `spec.termination`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terminator: Option<String>,
    /// Workspaces initialized with this target's sources (counted by the
    /// agent; kept across restarts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspaces_initialized: Option<i64>,
    /// Workspaces whose termination steps of this target completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspaces_terminated: Option<i64>,
    /// Workspaces waiting for this target's objects (a kind not served yet,
    /// a `wait-for-ready` condition, a termination step in progress).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting: Option<WorkspaceList>,
    /// Workspaces this target's sources or termination steps fail in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failing: Option<WorkspaceList>,
}

/// A bounded list of workspaces: all are counted, the oldest few listed.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceList {
    /// How many workspaces there are.
    pub count: i64,
    /// The longest-standing ones (at most 10).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workspaces: Vec<WorkspaceEntry>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceEntry {
    /// Logical-cluster name of the workspace.
    pub cluster: String,
    /// Workspace path, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// `Initializing` or `Terminating`.
    pub phase: String,
    /// Why, in one CamelCase word (`WaitingForCondition`, `KindNotServed`,
    /// `InitializationFailed`, `TerminationStepTimedOut`, ...).
    pub reason: String,
    /// The object waited for or failing, e.g. `Widget default/first`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object: Option<String>,
    /// The condition type waited for (`wait-for-ready`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
    /// What is wrong and what to do.
    pub message: String,
    /// Since when (RFC 3339).
    pub since: String,
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

/// How long a termination step may take when `timeout` is unset.
pub const DEFAULT_STEP_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(300);

impl TerminationStep {
    /// The step's timeout (default [`DEFAULT_STEP_TIMEOUT`]).
    pub fn timeout(&self) -> Result<std::time::Duration, String> {
        match &self.timeout {
            None => Ok(DEFAULT_STEP_TIMEOUT),
            Some(t) => match crate::apis::wasmplugin::parse_duration(t)? {
                d if d.is_zero() => Err(format!("{t:?} must be longer than 0")),
                d => Ok(d),
            },
        }
    }
}

impl InitTargetSpec {
    /// Everything wrong with the spec, each naming its field and the fix;
    /// empty when the spec is usable.
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.workspace_type_ref.name.is_empty() {
            out.push("spec.workspaceTypeRef.name: must name the WorkspaceType".to_string());
        }
        for (i, source) in self.sources.iter().enumerate() {
            match &source.template {
                None => out.push(format!(
                    "spec.sources[{i}]: no known source configured (set template.name)"
                )),
                Some(t) if t.name.is_empty() => out.push(format!(
                    "spec.sources[{i}].template.name: must name an InitTemplate"
                )),
                Some(_) => {}
            }
        }
        for (i, step) in self.termination.iter().flatten().enumerate() {
            let at = format!("spec.termination[{i}]");
            if let Err(e) = step.timeout() {
                out.push(format!("{at}.timeout: {e}"));
            }
            let Some(d) = &step.delete else {
                out.push(format!("{at}: no step configured (set delete)"));
                continue;
            };
            let by_kind = d.api_version.is_some() || d.kind.is_some();
            match (&d.template, by_kind) {
                (Some(_), true) => out.push(format!(
                    "{at}.delete: set either template or apiVersion and kind, not both"
                )),
                (None, false) => out.push(format!(
                    "{at}.delete: set apiVersion and kind (the objects to delete), or template"
                )),
                (Some(t), false) => {
                    if t.name.is_empty() {
                        out.push(format!(
                            "{at}.delete.template.name: must name an InitTemplate"
                        ));
                    }
                    if d.namespace.is_some() || d.name.is_some() || d.selector.is_some() {
                        out.push(format!(
                            "{at}.delete: namespace, name and selector apply to apiVersion and kind, not to template"
                        ));
                    }
                }
                (None, true) => {
                    if d.api_version.as_deref().is_none_or(str::is_empty) {
                        out.push(format!("{at}.delete.apiVersion: required with kind, e.g. \"v1\" or \"example.com/v1\""));
                    }
                    if d.kind.as_deref().is_none_or(str::is_empty) {
                        out.push(format!(
                            "{at}.delete.kind: required with apiVersion, e.g. \"ConfigMap\""
                        ));
                    }
                    if d.name.is_some() && d.selector.is_some() {
                        out.push(format!("{at}.delete: set name or selector, not both"));
                    }
                    if let Some(sel) = &d.selector
                        && let Err(e) = crate::apis::selector::from_label_selector(sel)
                    {
                        out.push(format!("{at}.delete.selector: {e}"));
                    }
                }
            }
        }
        out
    }
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
