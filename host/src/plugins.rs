//! The plugin chain of a PublishedResource: projection, naming and
//! mutation. Every rule runs as a Wasm component in the sandboxed runtime:
//! upstream's declarative rules run in the built-in plugins (`projection`,
//! `naming`, `mutation`), and `wasm` rules run the plugin they name.

use std::sync::Arc;

use serde_json::{Value, json};
use syncweave_runtime::{CallContext, Direction, Plugin, Runtime, World, object_json};

use crate::apis::wasmplugin::FailurePolicy;
use crate::apis::{PublishedResource, ResourceMutation, ResourceMutationSpec, WasmUse};
use crate::sync::naming::LocalName;
use crate::sync::syncer::{Mutator, Namer, Origin};
use crate::wasmplugin::PluginResolver;

#[derive(Debug, thiserror::Error)]
pub enum PluginSetupError {
    #[error("PublishedResource {pr}: {field}: {message}")]
    Field {
        pr: String,
        field: String,
        message: String,
    },
    #[error("PublishedResource {pr}: {field}: {source}")]
    Plugin {
        pr: String,
        field: String,
        #[source]
        source: Box<syncweave_runtime::PluginFailure>,
    },
}

#[derive(Clone)]
pub struct PluginHost {
    runtime: Runtime,
    resolver: Arc<PluginResolver>,
}

fn pr_name(pr: &PublishedResource) -> String {
    pr.metadata.name.clone().unwrap_or_default()
}

impl PluginHost {
    pub fn new(runtime: Runtime, resolver: PluginResolver) -> Self {
        PluginHost {
            runtime,
            resolver: Arc::new(resolver),
        }
    }

    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    /// The WasmPlugins known to the agent (what `plugin:` uses resolve to).
    pub fn registry(&self) -> &crate::wasmplugin::WasmPluginRegistry {
        self.resolver.registry()
    }

    fn builtin(
        &self,
        pr: &PublishedResource,
        field: &str,
        name: &str,
    ) -> Result<Arc<Plugin>, PluginSetupError> {
        self.runtime
            .load_builtin(name)
            .map_err(|source| PluginSetupError::Plugin {
                pr: pr_name(pr),
                field: field.into(),
                source: Box::new(source),
            })
    }

    /// Resolve the plugin a `wasm` use names (a WasmPlugin, or an inline
    /// source of any kind), check its world and validate its config.
    async fn resolve(
        &self,
        pr: &PublishedResource,
        field: &str,
        u: &WasmUse,
        world: World,
    ) -> Result<(Arc<Plugin>, String, FailurePolicy), PluginSetupError> {
        let r = self
            .resolver
            .resolve_use(u, world, field)
            .await
            .map_err(|e| PluginSetupError::Field {
                pr: pr_name(pr),
                field: e.field,
                message: e.message,
            })?;
        Ok((r.plugin, r.config, r.failure_policy))
    }

    /// Select versions and apply `spec.projection` to a service-cluster CRD:
    /// the built-in projector runs upstream's rules, then an optional
    /// `spec.projection.wasm` plugin transforms the result further.
    pub async fn project(
        &self,
        pr: &PublishedResource,
        crd: &Value,
    ) -> Result<Value, PluginSetupError> {
        let builtin = self.builtin(pr, "spec.projection", "projection")?;
        let mut projection = serde_json::to_value(&pr.spec.projection).expect("serializes");
        if let Some(p) = projection.as_object_mut() {
            p.remove("wasm");
        }
        let config = json!({"resource": pr.spec.resource, "projection": projection}).to_string();
        let call = |plugin: &Plugin,
                    field: &str,
                    config: &str,
                    crd: &str|
         -> Result<Value, PluginSetupError> {
            let out = plugin
                .project(config, crd)
                .map_err(|source| PluginSetupError::Plugin {
                    pr: pr_name(pr),
                    field: field.into(),
                    source: Box::new(source),
                })?;
            serde_json::from_str(&out).map_err(|e| PluginSetupError::Field {
                pr: pr_name(pr),
                field: field.into(),
                message: format!("projector returned invalid JSON: {e}"),
            })
        };
        let mut projected = call(&builtin, "spec.projection", &config, &crd.to_string())?;
        if let Some(u) = pr.spec.projection.as_ref().and_then(|p| p.wasm.as_ref()) {
            let (plugin, config, _) = self
                .resolve(pr, "spec.projection.wasm", u, World::Projector)
                .await?;
            projected = call(
                &plugin,
                "spec.projection.wasm",
                &config,
                &projected.to_string(),
            )?;
        }
        Ok(projected)
    }

    /// The namer for a PublishedResource: `spec.naming.wasm` if set, else
    /// the built-in naming plugin with `spec.naming`'s templates.
    pub async fn namer(
        &self,
        pr: &PublishedResource,
        local_namespaced: bool,
    ) -> Result<Arc<dyn Namer>, PluginSetupError> {
        let naming = pr.spec.naming.clone().unwrap_or_default();
        let (plugin, config) = match &naming.wasm {
            // Naming always fails closed: a wrong name is worse than no sync.
            Some(u) => {
                let (plugin, config, _) = self
                    .resolve(pr, "spec.naming.wasm", u, World::Namer)
                    .await?;
                (plugin, config)
            }
            None => {
                let config = json!({
                    "namespace": naming.namespace.unwrap_or_default(),
                    "name": naming.name.unwrap_or_default(),
                    "clusterScoped": !local_namespaced,
                })
                .to_string();
                let plugin = self.builtin(pr, "spec.naming", "naming")?;
                plugin
                    .validate_config(&config)
                    .map_err(|source| PluginSetupError::Plugin {
                        pr: pr_name(pr),
                        field: "spec.naming".into(),
                        source: Box::new(source),
                    })?;
                (plugin, config)
            }
        };
        Ok(Arc::new(WasmNamer {
            plugin,
            config,
            owner: pr_name(pr),
            local_namespaced,
        }))
    }

    /// The mutation chain, or `None` when the PublishedResource has no rules.
    pub async fn mutator(
        &self,
        pr: &PublishedResource,
    ) -> Result<Option<Arc<dyn Mutator>>, PluginSetupError> {
        match &pr.spec.mutation {
            Some(m) => self.mutator_for(pr, "spec.mutation", m).await,
            None => Ok(None),
        }
    }

    /// The mutation chain of `rules` (found at `field` of the
    /// PublishedResource, e.g. `spec.related[0].mutation`), or `None` when
    /// there are no rules.
    pub async fn mutator_for(
        &self,
        pr: &PublishedResource,
        field: &str,
        m: &ResourceMutationSpec,
    ) -> Result<Option<Arc<dyn Mutator>>, PluginSetupError> {
        let spec = self
            .chain(
                pr,
                &format!("{field}.spec"),
                m.spec.as_deref().unwrap_or_default(),
            )
            .await?;
        let status = self
            .chain(
                pr,
                &format!("{field}.status"),
                m.status.as_deref().unwrap_or_default(),
            )
            .await?;
        if spec.is_empty() && status.is_empty() {
            return Ok(None);
        }
        Ok(Some(Arc::new(WasmMutator {
            spec,
            status,
            owner: pr_name(pr),
        })))
    }

    /// Consecutive declarative rules run in one call of the built-in plugin;
    /// each `wasm` rule is its own step. Order is preserved.
    async fn chain(
        &self,
        pr: &PublishedResource,
        field: &str,
        rules: &[ResourceMutation],
    ) -> Result<Vec<Step>, PluginSetupError> {
        let mut steps = Vec::new();
        let mut group: Vec<Value> = Vec::new();
        let flush =
            |group: &mut Vec<Value>, steps: &mut Vec<Step>| -> Result<(), PluginSetupError> {
                if group.is_empty() {
                    return Ok(());
                }
                let plugin = self.builtin(pr, field, "mutation")?;
                let config = Value::Array(std::mem::take(group)).to_string();
                plugin
                    .validate_config(&config)
                    .map_err(|source| PluginSetupError::Plugin {
                        pr: pr_name(pr),
                        field: field.into(),
                        source: Box::new(source),
                    })?;
                steps.push(Step {
                    plugin,
                    config,
                    field: field.to_string(),
                    ignore_failures: false,
                });
                Ok(())
            };
        for (i, rule) in rules.iter().enumerate() {
            let rule_field = format!("{field}[{i}]");
            match &rule.wasm {
                Some(u)
                    if rule.delete.is_none()
                        && rule.regex.is_none()
                        && rule.template.is_none()
                        && rule.cel.is_none() =>
                {
                    flush(&mut group, &mut steps)?;
                    let (plugin, config, policy) = self
                        .resolve(pr, &format!("{rule_field}.wasm"), u, World::Mutator)
                        .await?;
                    steps.push(Step {
                        plugin,
                        config,
                        field: format!("{rule_field}.wasm"),
                        ignore_failures: policy == FailurePolicy::Ignore,
                    });
                }
                Some(_) => {
                    return Err(PluginSetupError::Field {
                        pr: pr_name(pr),
                        field: rule_field,
                        message: "a rule sets exactly one of delete, regex, template, cel or wasm"
                            .into(),
                    });
                }
                None => {
                    let mut v = serde_json::to_value(rule).expect("serializes");
                    if v.as_object().is_none_or(|o| o.is_empty()) {
                        return Err(PluginSetupError::Field {
                            pr: pr_name(pr),
                            field: rule_field,
                            message: "empty rule: set one of delete, regex, template, cel or wasm"
                                .into(),
                        });
                    }
                    if let Some(o) = v.as_object_mut() {
                        o.remove("wasm");
                    }
                    group.push(v);
                }
            }
        }
        flush(&mut group, &mut steps)?;
        Ok(steps)
    }
}

/// Go templates (text/template with sprig, as upstream's related-object
/// templates) evaluated in the sandbox: the built-in renderer in text mode.
pub struct TextTemplates {
    plugin: Arc<Plugin>,
    owner: String,
}

/// The renderer config for upstream's related-object templates: Go
/// text/template (no HTML escaping), the output trimmed.
const TEXT_TEMPLATE_CONFIG: &str = r#"{"engine":"gotemplate","htmlEscape":false,"output":"text"}"#;

impl PluginHost {
    /// The template evaluator for a PublishedResource's related resources.
    pub fn text_templates(
        &self,
        pr: &PublishedResource,
    ) -> Result<Arc<TextTemplates>, PluginSetupError> {
        let plugin = self.builtin(pr, "spec.related", "renderer")?;
        Ok(Arc::new(TextTemplates {
            plugin,
            owner: pr_name(pr),
        }))
    }
}

impl TextTemplates {
    /// Render `template` with `values` (a JSON object whose keys are the
    /// template's top-level fields, e.g. `.Object`, `.ClusterName`).
    pub fn render(&self, cluster: &str, template: &str, values: &Value) -> Result<String, String> {
        let ctx = CallContext {
            cluster_name: cluster.into(),
            cluster_path: None,
            direction: Direction::KcpToService,
            owner: self.owner.clone(),
        };
        let docs = self
            .plugin
            .render(&ctx, TEXT_TEMPLATE_CONFIG, template, &values.to_string())
            .map_err(|e| e.to_string())?;
        let doc = docs.first().map(String::as_str).unwrap_or("{}");
        let v: Value = serde_json::from_str(doc)
            .map_err(|e| format!("the renderer returned invalid JSON: {e}"))?;
        Ok(v["text"].as_str().unwrap_or_default().to_string())
    }
}

struct WasmNamer {
    plugin: Arc<Plugin>,
    config: String,
    owner: String,
    local_namespaced: bool,
}

impl Namer for WasmNamer {
    fn name(
        &self,
        cluster: &str,
        cluster_path: Option<&str>,
        object: &Value,
    ) -> Result<LocalName, String> {
        let ctx = CallContext {
            cluster_name: cluster.into(),
            cluster_path: cluster_path.map(str::to_string),
            direction: Direction::KcpToService,
            owner: self.owner.clone(),
        };
        let n = self
            .plugin
            .name_object(&ctx, &self.config, &object_json(object))
            .map_err(|e| e.to_string())?;
        Ok(LocalName {
            name: n.name,
            namespace: n.namespace.filter(|_| self.local_namespaced),
        })
    }
}

struct Step {
    plugin: Arc<Plugin>,
    config: String,
    field: String,
    /// WasmPlugin `failurePolicy: Ignore`: a failing call leaves the object
    /// as it was and the chain goes on.
    ignore_failures: bool,
}

struct WasmMutator {
    spec: Vec<Step>,
    status: Vec<Step>,
    owner: String,
}

impl WasmMutator {
    fn run(
        &self,
        steps: &[Step],
        direction: Direction,
        origin: &Origin<'_>,
        object: &mut Value,
        other: Option<&Value>,
    ) -> Result<(), String> {
        if steps.is_empty() {
            return Ok(());
        }
        let ctx = CallContext {
            cluster_name: origin.cluster.into(),
            cluster_path: origin.path.map(str::to_string),
            direction,
            owner: self.owner.clone(),
        };
        let other = other.map(object_json);
        let mut current = object_json(object);
        for step in steps {
            match step
                .plugin
                .mutate(&ctx, &step.config, &current, other.as_deref())
            {
                Ok(out) => current = out,
                Err(e) if step.ignore_failures => {
                    tracing::warn!(field = %step.field, error = %e, "plugin failed; skipped (failurePolicy: Ignore)");
                }
                Err(e) => return Err(format!("{}: {e}", step.field)),
            }
        }
        *object = serde_json::from_str(&current)
            .map_err(|e| format!("mutation result is not JSON: {e}"))?;
        Ok(())
    }
}

impl Mutator for WasmMutator {
    fn mutate_spec(
        &self,
        origin: &Origin<'_>,
        object: &mut Value,
        other: Option<&Value>,
    ) -> Result<(), String> {
        self.run(&self.spec, Direction::KcpToService, origin, object, other)
    }

    fn mutate_status(
        &self,
        origin: &Origin<'_>,
        object: &mut Value,
        other: Option<&Value>,
    ) -> Result<(), String> {
        self.run(&self.status, Direction::ServiceToKcp, origin, object, other)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Related-object templates run in the sandboxed built-in renderer:
    /// Go text/template (no HTML escaping), sprig and upstream's hash
    /// functions, output trimmed.
    #[test]
    fn text_templates_render_in_the_sandbox() {
        let runtime = Runtime::new(Default::default()).expect("runtime");
        let t = TextTemplates {
            plugin: runtime.load_builtin("renderer").expect("built-in renderer"),
            owner: "pr".into(),
        };
        let values = json!({"Object": {"metadata": {"name": "a&b"}}, "ClusterName": "abc"});
        assert_eq!(
            t.render(
                "abc",
                " {{ .Object.metadata.name }}-{{ .ClusterName | upper }} \n",
                &values
            )
            .unwrap(),
            "a&b-ABC"
        );
        assert_eq!(
            t.render("abc", "{{ sha3short .ClusterName 8 }}", &values)
                .unwrap(),
            "3a985da7"
        );
        let e = t.render("abc", "{{ .Nope }}", &values).unwrap_err();
        assert!(e.contains("failed to execute template"), "{e}");
    }
}
