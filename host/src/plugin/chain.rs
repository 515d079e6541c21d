//! The plugin chain of a PublishedResource: projection, naming and
//! mutation. Every rule runs as a Wasm component in the sandboxed runtime:
//! upstream's declarative rules run in the built-in plugins (`projection`,
//! `naming`, `mutation`), and `wasm` rules run the plugin they name.
//!
//! Every guest call runs on Tokio's blocking pool through the runtime's
//! [`CallPool`], so a slow plugin never holds up an async worker (lease
//! renewal, watches), and all calls together use at most one thread per core.
//!
//! A WasmPlugin in a staged rollout has two digests: each call picks one by
//! the kcp object it is made for ([`Choice`]), and failed calls are counted
//! per digest for the WasmPlugin's status.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use serde_json::{Value, json};
use syncweave_runtime::{
    CallContext, CallEnv, CallPool, Direction, Plugin, PluginFailure, Runtime, World, object_json,
};

use crate::apis::wasmplugin::FailurePolicy;
use crate::apis::{PublishedResource, ResourceMutation, ResourceMutationSpec, WasmUse};
use crate::plugin::resolve::{PluginResolver, Resolved};
use crate::plugin::wasmplugin::{CanaryRule, DigestStats, Subject};
use crate::sync::naming::LocalName;
use crate::sync::ports::{Mutator, Namer, Origin, Reports};
use crate::sync::ports::{Related, Templates};

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
    /// Built-ins' self-test verdicts by digest: each runs its examples once.
    builtins_tested: Arc<Mutex<HashMap<String, Result<(), String>>>>,
}

fn pr_name(pr: &PublishedResource) -> String {
    pr.metadata.name.clone().unwrap_or_default()
}

fn plugin_err(pr: &PublishedResource, field: &str) -> impl Fn(PluginFailure) -> PluginSetupError {
    let pr = pr_name(pr);
    let field = field.to_string();
    move |source| PluginSetupError::Plugin {
        pr: pr.clone(),
        field: field.clone(),
        source: Box::new(source),
    }
}

/// A PublishedResource's spec is JSON from the API server; converting a part
/// of it back can only fail on a bug, but it is reported, not panicked on.
fn spec_json<T: serde::Serialize>(
    pr: &PublishedResource,
    field: &str,
    v: &T,
) -> Result<Value, PluginSetupError> {
    serde_json::to_value(v).map_err(|e| PluginSetupError::Field {
        pr: pr_name(pr),
        field: field.into(),
        message: format!("cannot convert to JSON: {e}"),
    })
}

impl PluginHost {
    pub fn new(runtime: Runtime, resolver: PluginResolver) -> Self {
        PluginHost {
            runtime,
            resolver: Arc::new(resolver),
            builtins_tested: Arc::default(),
        }
    }

    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    /// Where every guest call runs (shared with all users of the runtime).
    fn pool(&self) -> &CallPool {
        self.runtime.call_pool()
    }

    /// `validate_config` of `plugin`, on the call pool.
    async fn validate(
        &self,
        pr: &PublishedResource,
        field: &str,
        plugin: &Arc<Plugin>,
        config: &str,
    ) -> Result<(), PluginSetupError> {
        let config = config.to_string();
        self.pool()
            .run(plugin, move |p| p.validate_config(&config))
            .await
            .map_err(plugin_err(pr, field))
    }

    /// The WasmPlugins known to the agent (what `plugin:` uses resolve to).
    pub fn registry(&self) -> &crate::plugin::wasmplugin::WasmPluginRegistry {
        self.resolver.registry()
    }

    /// A built-in plugin (from the binary, or a replacement in a built-in
    /// directory), through the same self-test gate as any other digest:
    /// its examples run once per digest.
    async fn builtin(
        &self,
        pr: &PublishedResource,
        field: &str,
        name: &str,
    ) -> Result<Arc<Plugin>, PluginSetupError> {
        let plugin = self
            .runtime
            .load_builtin(name)
            .map_err(plugin_err(pr, field))?;
        let known = self
            .builtins_tested
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(plugin.digest())
            .cloned();
        let verdict = match known {
            Some(v) => v,
            None => {
                let (verdict, lasting) =
                    match crate::plugin::wasmplugin::selftest::run(self.pool(), &plugin).await {
                        Ok(t) => (t.failure_summary().map_or(Ok(()), Err), !t.is_transient()),
                        Err(f) => (
                            Err(format!("describe() failed: {f}")),
                            !f.kind.is_transient(),
                        ),
                    };
                // A timeout may pass next time (a busy machine): not kept.
                if lasting {
                    self.builtins_tested
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(plugin.digest().to_string(), verdict.clone());
                }
                verdict
            }
        };
        verdict.map_err(|m| PluginSetupError::Field {
            pr: pr_name(pr),
            field: field.into(),
            message: format!(
                "the built-in plugin {name:?} ({}) failed its self-test: {m}; a replacement \
                 in a built-in plugin directory is broken, or this is a bug (please report it)",
                plugin.digest()
            ),
        })?;
        Ok(plugin)
    }

    /// Resolve the plugin a `wasm` use names (a WasmPlugin, or an inline
    /// source of any kind), check its world and validate its config (for
    /// every digest that serves it).
    async fn resolve(
        &self,
        pr: &PublishedResource,
        field: &str,
        u: &WasmUse,
        world: World,
    ) -> Result<Resolved, PluginSetupError> {
        self.resolver
            .resolve_use(u, world, field)
            .await
            .map_err(|e| PluginSetupError::Field {
                pr: pr_name(pr),
                field: e.field,
                message: e.message,
            })
    }

    /// Select versions and apply `spec.projection` to a service-cluster CRD:
    /// the built-in projector runs upstream's rules, then an optional
    /// `spec.projection.wasm` plugin transforms the result further.
    pub async fn project(
        &self,
        pr: &PublishedResource,
        crd: &Value,
    ) -> Result<Value, PluginSetupError> {
        let builtin = self.builtin(pr, "spec.projection", "projection").await?;
        let mut projection = spec_json(pr, "spec.projection", &pr.spec.projection)?;
        if let Some(p) = projection.as_object_mut() {
            p.remove("wasm");
        }
        let resource = spec_json(pr, "spec.resource", &pr.spec.resource)?;
        let config = json!({"resource": resource, "projection": projection}).to_string();
        let mut projected = self
            .project_with(pr, "spec.projection", &builtin, config, crd.to_string())
            .await?;
        if let Some(u) = pr.spec.projection.as_ref().and_then(|p| p.wasm.as_ref()) {
            // A projector runs once per PublishedResource, not per object:
            // the WasmPlugin controller refuses a canary on one, so this is
            // always its stable digest.
            let r = self
                .resolve(pr, "spec.projection.wasm", u, World::Projector)
                .await?;
            let result = self
                .project_with(
                    pr,
                    "spec.projection.wasm",
                    &r.plugin,
                    r.config,
                    projected.to_string(),
                )
                .await;
            if result.is_err()
                && let Some(s) = &r.stats
            {
                s.failed();
            }
            projected = result?;
        }
        Ok(projected)
    }

    /// One projector call, on the call pool.
    async fn project_with(
        &self,
        pr: &PublishedResource,
        field: &str,
        plugin: &Arc<Plugin>,
        config: String,
        crd: String,
    ) -> Result<Value, PluginSetupError> {
        let out = self
            .pool()
            .run(plugin, move |p| p.project(&config, &crd))
            .await
            .map_err(plugin_err(pr, field))?;
        serde_json::from_str(&out).map_err(|e| PluginSetupError::Field {
            pr: pr_name(pr),
            field: field.into(),
            message: format!("projector returned invalid JSON: {e}"),
        })
    }

    /// The namer for a PublishedResource: `spec.naming.wasm` if set, else
    /// the built-in naming plugin with `spec.naming`'s templates.
    pub async fn namer(
        &self,
        pr: &PublishedResource,
        local_namespaced: bool,
    ) -> Result<Arc<dyn Namer>, PluginSetupError> {
        let naming = pr.spec.naming.clone().unwrap_or_default();
        let field = if naming.wasm.is_some() {
            "spec.naming.wasm"
        } else {
            "spec.naming"
        };
        let choice = match &naming.wasm {
            // Naming always fails closed: a wrong name is worse than no sync.
            Some(u) => {
                let mut c = Choice::from(
                    self.resolve(pr, "spec.naming.wasm", u, World::Namer)
                        .await?,
                );
                c.fail_closed();
                c
            }
            None => {
                let config = json!({
                    "namespace": naming.namespace.unwrap_or_default(),
                    "name": naming.name.unwrap_or_default(),
                    "clusterScoped": !local_namespaced,
                })
                .to_string();
                let plugin = self.builtin(pr, "spec.naming", "naming").await?;
                self.validate(pr, "spec.naming", &plugin, &config).await?;
                Choice::fixed(plugin, config)
            }
        };
        Ok(Arc::new(WasmNamer {
            pool: self.pool().clone(),
            choice,
            owner: pr_name(pr),
            field: field.into(),
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
            pool: self.pool().clone(),
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
        for (i, rule) in rules.iter().enumerate() {
            let rule_field = format!("{field}[{i}]");
            match &rule.wasm {
                Some(u)
                    if rule.delete.is_none()
                        && rule.regex.is_none()
                        && rule.template.is_none()
                        && rule.cel.is_none() =>
                {
                    self.flush(pr, field, &mut group, &mut steps).await?;
                    let r = self
                        .resolve(pr, &format!("{rule_field}.wasm"), u, World::Mutator)
                        .await?;
                    steps.push(Step {
                        choice: Choice::from(r),
                        field: format!("{rule_field}.wasm"),
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
                    let mut v = spec_json(pr, &rule_field, rule)?;
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
        self.flush(pr, field, &mut group, &mut steps).await?;
        Ok(steps)
    }

    /// The declarative rules collected so far become one step of the
    /// built-in mutation plugin.
    async fn flush(
        &self,
        pr: &PublishedResource,
        field: &str,
        group: &mut Vec<Value>,
        steps: &mut Vec<Step>,
    ) -> Result<(), PluginSetupError> {
        if group.is_empty() {
            return Ok(());
        }
        let plugin = self.builtin(pr, field, "mutation").await?;
        let config = Value::Array(std::mem::take(group)).to_string();
        self.validate(pr, field, &plugin, &config).await?;
        steps.push(Step {
            choice: Choice::fixed(plugin, config),
            field: field.to_string(),
        });
        Ok(())
    }
}

/// Go templates (text/template with sprig, as upstream's related-object
/// templates) evaluated in the sandbox: the built-in renderer in text mode.
pub struct TextTemplates {
    pool: CallPool,
    plugin: Arc<Plugin>,
    owner: String,
}

/// The renderer config for upstream's related-object templates: Go
/// text/template (no HTML escaping), the output trimmed.
const TEXT_TEMPLATE_CONFIG: &str = r#"{"engine":"gotemplate","htmlEscape":false,"output":"text"}"#;

impl PluginHost {
    /// The template evaluator for a PublishedResource's related resources.
    pub async fn text_templates(
        &self,
        pr: &PublishedResource,
    ) -> Result<Arc<TextTemplates>, PluginSetupError> {
        let plugin = self.builtin(pr, "spec.related", "renderer").await?;
        Ok(Arc::new(TextTemplates {
            pool: self.pool().clone(),
            plugin,
            owner: pr_name(pr),
        }))
    }
}

impl TextTemplates {
    /// Render `template` with `values` (a JSON object whose keys are the
    /// template's top-level fields, e.g. `.Object`, `.ClusterName`).
    pub async fn render(
        &self,
        cluster: &str,
        template: &str,
        values: &Value,
    ) -> Result<String, String> {
        let ctx = CallContext {
            cluster_name: cluster.into(),
            cluster_path: None,
            direction: Direction::KcpToService,
            owner: self.owner.clone(),
        };
        let (template, values) = (template.to_string(), values.to_string());
        let docs = self
            .pool
            .run(&self.plugin, move |p| {
                p.render(&ctx, TEXT_TEMPLATE_CONFIG, &template, &values)
            })
            .await
            .map_err(|e| e.to_string())?;
        let doc = docs.first().map(String::as_str).unwrap_or("{}");
        let v: Value = serde_json::from_str(doc)
            .map_err(|e| format!("the renderer returned invalid JSON: {e}"))?;
        match v.get("text") {
            Some(Value::String(t)) => Ok(t.clone()),
            None | Some(Value::Null) => Ok(String::new()),
            Some(_) => Err("the renderer returned a \"text\" that is not a string".into()),
        }
    }
}

/// One digest a step or a namer may call, and how.
struct Variant {
    plugin: Arc<Plugin>,
    config: Arc<str>,
    /// WasmPlugin `failurePolicy: Ignore`: a failing call leaves the object
    /// as it was and the chain goes on.
    ignore_failures: bool,
    /// Where its failed calls are counted (WasmPlugins only).
    stats: Option<Arc<DigestStats>>,
}

impl Variant {
    fn failed(&self) {
        if let Some(s) = &self.stats {
            s.failed();
        }
    }
}

/// What a use calls: one digest, or during a WasmPlugin's staged rollout
/// the canary digest for the objects its rule selects and the stable one
/// for the others.
struct Choice {
    stable: Variant,
    canary: Option<(Arc<CanaryRule>, Variant)>,
}

impl From<Resolved> for Choice {
    fn from(r: Resolved) -> Choice {
        Choice {
            stable: Variant {
                plugin: r.plugin,
                config: r.config.into(),
                ignore_failures: r.failure_policy == FailurePolicy::Ignore,
                stats: r.stats,
            },
            canary: r.canary.map(|c| {
                (
                    c.rule,
                    Variant {
                        plugin: c.plugin,
                        config: c.config.into(),
                        ignore_failures: c.failure_policy == FailurePolicy::Ignore,
                        stats: Some(c.stats),
                    },
                )
            }),
        }
    }
}

impl Choice {
    fn fixed(plugin: Arc<Plugin>, config: String) -> Choice {
        Choice {
            stable: Variant {
                plugin,
                config: config.into(),
                ignore_failures: false,
                stats: None,
            },
            canary: None,
        }
    }

    /// Failures always stop the sync (naming).
    fn fail_closed(&mut self) {
        self.stable.ignore_failures = false;
        if let Some((_, c)) = &mut self.canary {
            c.ignore_failures = false;
        }
    }

    /// The digest for the object `subject` describes; `subject` is only
    /// looked at during a rollout.
    fn pick<'s>(&self, subject: impl FnOnce() -> Subject<'s>) -> &Variant {
        match &self.canary {
            Some((rule, canary)) if rule.selects(&subject()) => canary,
            _ => &self.stable,
        }
    }
}

struct WasmNamer {
    pool: CallPool,
    choice: Choice,
    owner: String,
    /// `spec.naming.wasm` or `spec.naming` (where its reports come from).
    field: String,
    local_namespaced: bool,
}

impl Namer for WasmNamer {
    fn name<'a>(
        &'a self,
        origin: &'a Origin<'a>,
        object: &'a Value,
    ) -> BoxFuture<'a, Result<(LocalName, Reports), String>> {
        let ctx = CallContext {
            cluster_name: origin.cluster.into(),
            cluster_path: origin.path.map(str::to_string),
            direction: Direction::KcpToService,
            owner: self.owner.clone(),
        };
        let v = self
            .choice
            .pick(|| Subject::of_json(origin.cluster, object));
        let (config, object) = (v.config.clone(), object_json(object));
        let reads = origin.reads.cloned();
        Box::pin(async move {
            let n = self
                .pool
                .run(&v.plugin, move |p| {
                    let env = CallEnv {
                        reads,
                        ..CallEnv::default()
                    };
                    p.name_object_with(&ctx, &env, &config, &object)
                })
                .await
                .map_err(|e| {
                    v.failed();
                    e.to_string()
                })?;
            let name = LocalName {
                name: n.name.name,
                namespace: n.name.namespace.filter(|_| self.local_namespaced),
            };
            Ok((name, Reports(vec![(self.field.clone(), n.report)])))
        })
    }
}

struct Step {
    choice: Choice,
    field: String,
}

struct WasmMutator {
    pool: CallPool,
    spec: Vec<Step>,
    status: Vec<Step>,
    owner: String,
}

/// Why a mutation chain failed.
#[derive(Debug, thiserror::Error)]
enum MutationError {
    /// A step's plugin failed (classified; e.g. BadOutput for a result
    /// that is not a valid object).
    #[error("{field}: {source}")]
    Plugin {
        field: String,
        #[source]
        source: PluginFailure,
    },
    #[error("mutation result is not JSON: {0}")]
    NotJson(#[source] serde_json::Error),
}

impl WasmMutator {
    /// Run `steps` over `object`: each step sees the object the step before
    /// returned and the context values the steps before set (contract 0.2;
    /// a 0.1 step sees none and sets none), and each step's report is kept.
    async fn run(
        &self,
        steps: &[Step],
        direction: Direction,
        origin: &Origin<'_>,
        object: &mut Value,
        other: Option<&Value>,
    ) -> Result<Reports, MutationError> {
        let mut reports = Reports::default();
        if steps.is_empty() {
            return Ok(reports);
        }
        let ctx = Arc::new(CallContext {
            cluster_name: origin.cluster.into(),
            cluster_path: origin.path.map(str::to_string),
            direction,
            owner: self.owner.clone(),
        });
        let other: Option<Arc<str>> = other.map(|o| object_json(o).into());
        let mut current = object_json(object);
        // Context values set so far, in the order they were set.
        let mut values: Arc<Vec<(String, String)>> = Arc::default();
        for step in steps {
            let v = step.choice.pick(|| origin.subject);
            let (ctx, config, other) = (ctx.clone(), v.config.clone(), other.clone());
            let (reads, step_values) = (origin.reads.cloned(), values.clone());
            let input = current.clone();
            let result = self
                .pool
                .run(&v.plugin, move |p| {
                    let env = CallEnv {
                        reads,
                        values: step_values.as_slice(),
                        ..CallEnv::default()
                    };
                    p.mutate_with(&ctx, &env, &config, &input, other.as_deref())
                })
                .await;
            if result.is_err() {
                v.failed();
            }
            match result {
                Ok(out) => {
                    current = out.object;
                    if !out.report.set_context.is_empty() {
                        Arc::make_mut(&mut values).extend(out.report.set_context.iter().cloned());
                    }
                    reports.0.push((step.field.clone(), out.report));
                }
                Err(e) if v.ignore_failures => {
                    tracing::warn!(field = %step.field, error = %e, "plugin failed; skipped (failurePolicy: Ignore)");
                }
                Err(source) => {
                    return Err(MutationError::Plugin {
                        field: step.field.clone(),
                        source,
                    });
                }
            }
        }
        *object = serde_json::from_str(&current).map_err(MutationError::NotJson)?;
        Ok(reports)
    }
}

impl Mutator for WasmMutator {
    fn mutate_spec<'a>(
        &'a self,
        origin: &'a Origin<'a>,
        object: &'a mut Value,
        other: Option<&'a Value>,
    ) -> BoxFuture<'a, Result<Reports, String>> {
        Box::pin(async move {
            self.run(&self.spec, Direction::KcpToService, origin, object, other)
                .await
                .map_err(|e| e.to_string())
        })
    }

    fn mutate_status<'a>(
        &'a self,
        origin: &'a Origin<'a>,
        object: &'a mut Value,
        other: Option<&'a Value>,
    ) -> BoxFuture<'a, Result<Reports, String>> {
        Box::pin(async move {
            self.run(&self.status, Direction::ServiceToKcp, origin, object, other)
                .await
                .map_err(|e| e.to_string())
        })
    }
}

impl Templates for TextTemplates {
    fn render<'a>(
        &'a self,
        cluster: &'a str,
        template: &'a str,
        values: &'a Value,
    ) -> BoxFuture<'a, Result<String, String>> {
        Box::pin(TextTemplates::render(self, cluster, template, values))
    }
}

impl PluginHost {
    /// The related resources of `pr` (`spec.related`), with their mutators.
    pub async fn related(&self, pr: &PublishedResource) -> Result<Vec<Related>, PluginSetupError> {
        let mut out = Vec::new();
        for (index, spec) in pr.spec.related.iter().flatten().enumerate() {
            let mutator = match &spec.mutation {
                Some(m) => {
                    self.mutator_for(pr, &format!("spec.related[{index}].mutation"), m)
                        .await?
                }
                None => None,
            };
            out.push(Related {
                index,
                spec: spec.clone(),
                mutator,
            });
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugin::wasmplugin::WasmPluginRegistry;
    use crate::testing::{fetch_context, own_runtime, runtime};
    use syncweave_runtime::FailureKind;

    fn host() -> PluginHost {
        host_on(runtime())
    }

    fn host_on(rt: Runtime) -> PluginHost {
        let resolver =
            PluginResolver::new(rt.clone(), WasmPluginRegistry::new(), fetch_context(&rt));
        PluginHost::new(rt, resolver)
    }

    fn pr_with_spec_mutations(rules: Value) -> PublishedResource {
        serde_json::from_value(json!({
            "apiVersion": "syncagent.kcp.io/v1alpha1",
            "kind": "PublishedResource",
            "metadata": {"name": "crontabs"},
            "spec": {
                "resource": {"apiGroup": "example.com", "version": "v1", "kind": "CronTab"},
                "mutation": {"spec": rules},
            },
        }))
        .expect("a PublishedResource")
    }

    const ORIGIN: Origin<'static> = Origin {
        cluster: "abc",
        path: None,
        subject: Subject {
            cluster: "abc",
            namespace: Some("default"),
            name: "a",
            labels: crate::plugin::wasmplugin::Labels::None,
        },
        reads: None,
    };

    fn crontab() -> Value {
        json!({
            "apiVersion": "example.com/v1",
            "kind": "CronTab",
            "metadata": {"name": "a", "namespace": "default", "labels": {"app": "x"}},
            "spec": {"cronSpec": "* * * * *"},
        })
    }

    /// Related-object templates run in the sandboxed built-in renderer:
    /// Go text/template (no HTML escaping), sprig and upstream's hash
    /// functions, output trimmed.
    #[tokio::test]
    async fn text_templates_render_in_the_sandbox() {
        let runtime = Runtime::new(Default::default()).expect("runtime");
        let t = TextTemplates {
            pool: runtime.call_pool().clone(),
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
            .await
            .unwrap(),
            "a&b-ABC"
        );
        assert_eq!(
            t.render("abc", "{{ sha3short .ClusterName 8 }}", &values)
                .await
                .unwrap(),
            "3a985da7"
        );
        let e = t.render("abc", "{{ .Nope }}", &values).await.unwrap_err();
        assert!(e.contains("failed to execute template"), "{e}");
    }

    /// Declarative rules that leave `metadata.labels` something other than
    /// a map of strings make the real built-in mutation plugin's output a
    /// classified BadOutput failure of that step, never a panic, and the
    /// object is left as it was.
    #[tokio::test]
    async fn bad_mutation_output_is_a_classified_failure() {
        let host = host();
        for (rules, what) in [
            (
                json!([{"template": {"path": "metadata.labels", "template": "oops"}}]),
                "labels a string",
            ),
            (
                json!([{"cel": {"path": "metadata.labels.n", "expression": "1"}}]),
                "a label value a number",
            ),
        ] {
            let pr = pr_with_spec_mutations(rules);
            let steps = host
                .chain(
                    &pr,
                    "spec.mutation.spec",
                    pr.spec.mutation.as_ref().unwrap().spec.as_deref().unwrap(),
                )
                .await
                .expect("the rules are valid");
            let m = WasmMutator {
                pool: host.pool().clone(),
                spec: steps,
                status: Vec::new(),
                owner: pr_name(&pr),
            };
            let mut obj = crontab();
            let e = m
                .run(&m.spec, Direction::KcpToService, &ORIGIN, &mut obj, None)
                .await
                .expect_err(what);
            match &e {
                MutationError::Plugin { field, source } => {
                    assert_eq!(field, "spec.mutation.spec", "{what}: {e}");
                    assert_eq!(source.kind, FailureKind::BadOutput, "{what}: {e}");
                    assert_eq!(source.plugin, "mutation", "{what}: {e}");
                    assert!(source.message.contains("maps of strings"), "{what}: {e}");
                }
                other => panic!("{what}: not a plugin failure: {other}"),
            }
            assert_eq!(obj, crontab(), "{what}: the object is untouched");

            // The same through the Mutator the syncer uses.
            let m = host.mutator(&pr).await.unwrap().expect("a mutator");
            let mut obj = crontab();
            let e = m
                .mutate_spec(&ORIGIN, &mut obj, Some(&crontab()))
                .await
                .expect_err(what);
            assert!(e.starts_with("spec.mutation.spec: "), "{what}: {e}");
            assert!(e.contains("bad output"), "{what}: {e}");
        }
    }

    /// Good rules still mutate, with every call on the call pool; many
    /// chains at once all finish.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn mutations_and_names_run_on_the_call_pool() {
        // Its own runtime: the pool is checked idle at the end.
        let host = host_on(own_runtime());
        let pr = pr_with_spec_mutations(json!([
            {"regex": {"path": "metadata.labels.app", "pattern": "^(.*)$", "replacement": "kcp-$1"}},
        ]));
        let m = host.mutator(&pr).await.unwrap().expect("a mutator");
        let namer = host.namer(&pr, true).await.unwrap();
        let runs: Vec<_> = (0..16)
            .map(|_| {
                let (m, namer) = (m.clone(), namer.clone());
                tokio::spawn(async move {
                    let mut obj = crontab();
                    m.mutate_spec(&ORIGIN, &mut obj, None).await.unwrap();
                    let (name, _) = namer.name(&ORIGIN, &obj).await.unwrap();
                    (obj, name)
                })
            })
            .collect();
        for r in runs {
            let (obj, name) = r.await.unwrap();
            assert_eq!(obj["metadata"]["labels"], json!({"app": "kcp-x"}));
            assert!(!name.name.is_empty());
        }
        assert_eq!(host.pool().in_use(), 0);
    }

    /// During a WasmPlugin's staged rollout every step picks its digest by
    /// the kcp object the call is for (here by label), each with the config
    /// it was checked with, and failed calls count on the digest that made
    /// them.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_canary_step_picks_its_digest_per_object() {
        use crate::plugin::wasmplugin::{Canary, CanaryRule, Labels, ReadyPlugin, Serving};
        use std::collections::BTreeMap;
        let rt = runtime();
        let registry = WasmPluginRegistry::new();
        let echo = rt
            .load(
                "test-echo",
                &std::fs::read(crate::testing::test_plugin("test-echo")).unwrap(),
                None,
            )
            .unwrap();
        let ready = |label: &str, generation| ReadyPlugin {
            name: "stamp".into(),
            uid: "uid".into(),
            generation: Some(generation),
            plugin: echo.clone(),
            limits: Default::default(),
            failure_policy: FailurePolicy::Fail,
            default_config: Some(json!({"label": label})),
            source: "file:///echo.wasm".into(),
            stats: Default::default(),
        };
        let selector = CanaryRule::from_spec(
            &crate::apis::WasmPluginCanary {
                fraction: None,
                selector: Some(
                    k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector {
                        match_labels: Some([("team".to_string(), "a".to_string())].into()),
                        ..Default::default()
                    },
                ),
            },
            "spec.rollout.canary",
        )
        .unwrap()
        .unwrap();
        let serving = registry.set_serving(Serving {
            stable: ready("stable", 1),
            canary: Some(Canary {
                plugin: ready("canary", 2),
                rule: Arc::new(selector),
            }),
            held_back: None,
        });
        let host = PluginHost::new(
            rt.clone(),
            PluginResolver::new(rt.clone(), registry, fetch_context(&rt)),
        );
        let pr = pr_with_spec_mutations(json!([{"wasm": {"plugin": "stamp"}}]));
        let m = host.mutator(&pr).await.unwrap().expect("a mutator");

        let team_a: BTreeMap<String, String> = [("team".to_string(), "a".to_string())].into();
        let origin = |labels| Origin {
            cluster: "abc",
            path: None,
            subject: Subject {
                cluster: "abc",
                namespace: Some("default"),
                name: "a",
                labels,
            },
            reads: None,
        };
        let stamped = |o: &Value| o["metadata"]["labels"]["syncweave.test/echo"].clone();
        let mut obj = crontab();
        m.mutate_spec(&origin(Labels::Map(&team_a)), &mut obj, None)
            .await
            .unwrap();
        assert_eq!(stamped(&obj), "canary");
        let mut obj = crontab();
        m.mutate_spec(&origin(Labels::None), &mut obj, None)
            .await
            .unwrap();
        assert_eq!(stamped(&obj), "stable");

        // A call that fails (an object without metadata) counts on its digest.
        let mut broken = json!({"apiVersion": "example.com/v1", "kind": "CronTab"});
        m.mutate_spec(&origin(Labels::Map(&team_a)), &mut broken, None)
            .await
            .unwrap_err();
        let canary = serving.canary.as_ref().unwrap();
        assert_eq!(
            (serving.stable.stats.errors(), canary.plugin.stats.errors()),
            (0, 1)
        );

        // The namer picks the same way, from the object itself.
        let pr: PublishedResource = serde_json::from_value(json!({
            "apiVersion": "syncagent.kcp.io/v1alpha1",
            "kind": "PublishedResource",
            "metadata": {"name": "crontabs"},
            "spec": {
                "resource": {"apiGroup": "example.com", "version": "v1", "kind": "CronTab"},
                "naming": {"wasm": {"plugin": "stamp"}},
            },
        }))
        .unwrap();
        let e = match host.namer(&pr, true).await {
            Err(e) => e.to_string(),
            Ok(_) => panic!("a mutator is not a namer"),
        };
        assert!(e.contains("is a mutator plugin"), "{e}");
    }
}
