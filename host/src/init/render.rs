//! Choosing and loading the renderer of an InitTarget: the built-in
//! `renderer` plugin with the target's engine settings, or the custom
//! plugin `spec.renderer.wasm` names.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value, json};
use syncweave_runtime::{CallContext, CallPool, Direction, Plugin, PluginFailure, Runtime, World};

use crate::apis::{InitTarget, RendererSpec, TemplateEngine};
use crate::plugin::fetch::{FetchContext, FetchError, PluginRef, RefError};

/// Name of the built-in renderer plugin (embedded; see syncweave-builtins).
pub const BUILTIN_RENDERER: &str = "renderer";

#[derive(Debug, Clone, thiserror::Error)]
pub enum RendererError {
    #[error(
        "spec.renderer: set either engine/htmlEscape (built-in renderer) or wasm (a custom renderer plugin), not both"
    )]
    Conflicting,
    #[error("{0}")]
    Reference(String),
    #[error("spec.renderer.wasm: {0}")]
    Fetch(String),
    #[error("{field}: {source}")]
    Plugin {
        field: &'static str,
        #[source]
        source: PluginFailure,
    },
    /// The plugin's worked examples fail (the self-test gate,
    /// docs/rollout.md): its digest is not used.
    #[error("{field}: {message}")]
    SelfTest {
        field: &'static str,
        message: String,
    },
}

impl From<RefError> for RendererError {
    fn from(e: RefError) -> Self {
        RendererError::Reference(e.to_string())
    }
}

impl From<FetchError> for RendererError {
    fn from(e: FetchError) -> Self {
        RendererError::Fetch(e.to_string())
    }
}

impl RendererError {
    /// Whether waiting may help (a plugin not downloadable right now), as
    /// opposed to a spec the user must fix. Both are retried; this only
    /// picks the log level.
    pub fn is_config_error(&self) -> bool {
        !matches!(self, RendererError::Fetch(_))
    }
}

/// A renderer ready to call.
#[derive(Clone)]
pub struct Renderer {
    pub plugin: Arc<Plugin>,
    /// The plugin config, JSON.
    pub config: String,
    /// Where the calls run (the runtime's, shared with the sync agent).
    pub pool: CallPool,
}

impl Renderer {
    /// Render `template` for one workspace; one JSON object per document.
    /// The guest runs on the blocking pool, within the runtime's call limit.
    pub async fn render(
        &self,
        target: &str,
        cluster_name: &str,
        cluster_path: Option<&str>,
        template: &str,
    ) -> Result<Vec<Value>, PluginFailure> {
        let ctx = CallContext {
            cluster_name: cluster_name.into(),
            cluster_path: cluster_path.map(str::to_string),
            direction: Direction::KcpToService,
            owner: target.into(),
        };
        let (config, template) = (self.config.clone(), template.to_string());
        let values = values(cluster_name, cluster_path);
        let docs = self
            .pool
            .run(&self.plugin, move |p| {
                p.render(&ctx, &config, &template, &values)
            })
            .await?;
        docs.iter()
            .map(|d| {
                serde_json::from_str(d).map_err(|e| {
                    PluginFailure::new(
                        self.plugin.name(),
                        self.plugin.digest(),
                        syncweave_runtime::FailureKind::BadOutput,
                        format!("rendered document is not JSON: {e}"),
                    )
                })
            })
            .collect()
    }
}

/// The values a template sees, as upstream: `ClusterName` and `ClusterPath`.
/// A workspace without a known path gets no `ClusterPath`, so a Go template
/// using it fails with an execution error instead of rendering garbage.
pub fn values(cluster_name: &str, cluster_path: Option<&str>) -> String {
    let mut m = Map::new();
    m.insert("ClusterName".into(), json!(cluster_name));
    if let Some(p) = cluster_path {
        m.insert("ClusterPath".into(), json!(p));
    }
    Value::Object(m).to_string()
}

/// Config of the built-in renderer for a `spec.renderer` without `wasm`.
/// Unset fields are left out so the plugin applies upstream's defaults
/// (gotemplate, html escaping for gotemplate only).
pub fn builtin_config(spec: Option<&RendererSpec>) -> String {
    let mut m = Map::new();
    let engine = spec.and_then(|s| s.engine).unwrap_or_default();
    m.insert(
        "engine".into(),
        json!(match engine {
            TemplateEngine::Gotemplate => "gotemplate",
            TemplateEngine::Handlebars => "handlebars",
        }),
    );
    if let Some(h) = spec.and_then(|s| s.html_escape) {
        m.insert("htmlEscape".into(), json!(h));
    }
    Value::Object(m).to_string()
}

/// Loads renderers, remembering those whose bytes cannot change.
pub struct Renderers {
    runtime: Runtime,
    fetch: FetchContext,
    /// Keyed by the `spec.renderer` JSON.
    cache: Mutex<HashMap<String, Renderer>>,
}

impl Renderers {
    pub fn new(runtime: Runtime, fetch: FetchContext) -> Self {
        Renderers {
            runtime,
            fetch,
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// The renderer `target` asks for, its config validated.
    pub async fn for_target(&self, target: &InitTarget) -> Result<Renderer, RendererError> {
        let spec = target.spec.renderer.as_ref();
        // Serializing a typed spec cannot fail; if it ever did, the
        // renderer is just not cached.
        let key = serde_json::to_string(&spec).ok();
        if let Some(key) = &key
            && let Some(r) = self.cache().get(key)
        {
            return Ok(r.clone());
        }
        let pool = self.runtime.call_pool().clone();
        let (renderer, cacheable) = match spec.and_then(|s| s.wasm.as_ref()) {
            None => {
                let runtime = self.runtime.clone();
                let plugin = blocking(BUILTIN_RENDERER, move || {
                    runtime.load_builtin(BUILTIN_RENDERER)
                })
                .await
                .map_err(|source| RendererError::Plugin {
                    field: "spec.renderer",
                    source,
                })?;
                let config = builtin_config(spec);
                (
                    Renderer {
                        plugin,
                        config,
                        pool,
                    },
                    true,
                )
            }
            Some(w) => {
                if spec.is_some_and(|s| s.engine.is_some() || s.html_escape.is_some()) {
                    return Err(RendererError::Conflicting);
                }
                let r = PluginRef::parse(&w.source, w.sha256.as_deref(), "spec.renderer.wasm")?;
                let fetched = self.fetch.fetch(&r).await?;
                let runtime = self.runtime.clone();
                let name = r.display_name();
                let plugin = blocking(&name.clone(), move || {
                    runtime.load_with_digest(&name, &fetched.digest, &fetched.bytes, None)
                })
                .await
                .map_err(|source| RendererError::Plugin {
                    field: "spec.renderer.wasm",
                    source,
                })?;
                (
                    Renderer {
                        plugin,
                        config: w.config.clone().unwrap_or(Value::Null).to_string(),
                        pool,
                    },
                    r.is_immutable(),
                )
            }
        };
        let field = if spec.is_some_and(|s| s.wasm.is_some()) {
            "spec.renderer.wasm"
        } else {
            "spec.renderer"
        };
        renderer
            .plugin
            .expect_world(World::Renderer)
            .map_err(|source| RendererError::Plugin { field, source })?;
        let config = renderer.config.clone();
        renderer
            .pool
            .run(&renderer.plugin, move |p| p.validate_config(&config))
            .await
            .map_err(|source| RendererError::Plugin { field, source })?;
        let test = crate::plugin::wasmplugin::selftest::run(&renderer.pool, &renderer.plugin)
            .await
            .map_err(|source| RendererError::Plugin { field, source })?;
        if let Some(summary) = test.failure_summary() {
            return Err(RendererError::SelfTest {
                field,
                message: format!(
                    "{} failed its self-test: {summary}; the renderer is not used",
                    renderer.plugin.digest()
                ),
            });
        }
        if cacheable && let Some(key) = key {
            self.cache().insert(key, renderer.clone());
        }
        Ok(renderer)
    }

    /// The cache; a panic elsewhere while holding it leaves it usable (it
    /// only ever holds complete entries).
    fn cache(&self) -> std::sync::MutexGuard<'_, HashMap<String, Renderer>> {
        self.cache.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Compiling a component can take seconds: keep it off the async workers.
/// A panic while loading is a load failure of plugin `name`.
async fn blocking<T: Send + 'static>(
    name: &str,
    f: impl FnOnce() -> Result<T, PluginFailure> + Send + 'static,
) -> Result<T, PluginFailure> {
    tokio::task::spawn_blocking(f).await.unwrap_or_else(|e| {
        Err(PluginFailure::new(
            name,
            "",
            syncweave_runtime::FailureKind::Load,
            format!("loading task failed: {e}"),
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apis::RendererPlugin;

    #[test]
    fn builtin_config_defaults_to_upstream() {
        assert_eq!(builtin_config(None), r#"{"engine":"gotemplate"}"#);
        let spec = RendererSpec {
            engine: Some(TemplateEngine::Handlebars),
            html_escape: Some(true),
            wasm: None,
        };
        assert_eq!(
            builtin_config(Some(&spec)),
            r#"{"engine":"handlebars","htmlEscape":true}"#
        );
    }

    #[test]
    fn values_omit_unknown_path() {
        assert_eq!(
            values("abc", Some("root:x")),
            r#"{"ClusterName":"abc","ClusterPath":"root:x"}"#
        );
        assert_eq!(values("abc", None), r#"{"ClusterName":"abc"}"#);
    }

    fn renderers() -> Renderers {
        let runtime = Runtime::new(Default::default()).unwrap();
        let fetch = FetchContext::new(crate::plugin::fetch::FetchOptions::for_runtime(
            &runtime, None,
        ))
        .unwrap();
        Renderers::new(runtime, fetch)
    }

    fn target(renderer: Option<RendererSpec>) -> InitTarget {
        let mut t = InitTarget::new("t", Default::default());
        t.spec.renderer = renderer;
        t
    }

    #[tokio::test]
    async fn engine_and_wasm_together_are_refused() {
        let spec = RendererSpec {
            engine: Some(TemplateEngine::Handlebars),
            html_escape: None,
            wasm: Some(RendererPlugin {
                source: "renderer".into(),
                ..Default::default()
            }),
        };
        let e = renderers()
            .for_target(&target(Some(spec)))
            .await
            .err()
            .unwrap();
        assert!(matches!(e, RendererError::Conflicting), "{e}");
        assert!(e.to_string().contains("not both"));
    }

    #[tokio::test]
    async fn bad_wasm_reference_names_the_field() {
        let spec = RendererSpec {
            wasm: Some(RendererPlugin {
                source: "http://example.com/x.wasm".into(),
                ..Default::default()
            }),
            ..Default::default()
        };
        let e = renderers()
            .for_target(&target(Some(spec)))
            .await
            .err()
            .unwrap();
        assert!(e.to_string().contains("spec.renderer.wasm.source"), "{e}");
        assert!(e.is_config_error());
    }

    /// `wasm` loads the plugin it names (here the built-in by name), checks
    /// its world and passes its config through.
    #[tokio::test]
    async fn wasm_source_is_loaded_checked_and_configured() {
        let r = renderers();
        let spec = |source: &str, config: Value| RendererSpec {
            wasm: Some(RendererPlugin {
                source: source.into(),
                config: Some(config),
                ..Default::default()
            }),
            ..Default::default()
        };
        let hb = r
            .for_target(&target(Some(spec(
                "renderer",
                json!({"engine": "handlebars"}),
            ))))
            .await
            .unwrap();
        let objs = hb
            .render(
                "t",
                "abc",
                Some("root:x"),
                "kind: Namespace\napiVersion: v1\nmetadata:\n  name: w-{{ClusterName}}\n",
            )
            .await
            .unwrap();
        assert_eq!(objs[0]["metadata"]["name"], "w-abc");

        let bad_config = r
            .for_target(&target(Some(spec("renderer", json!({"engine": "jinja"})))))
            .await
            .err()
            .unwrap();
        assert!(
            bad_config.to_string().contains("spec.renderer.wasm"),
            "{bad_config}"
        );

        let wrong_world = r
            .for_target(&target(Some(spec("naming", Value::Null))))
            .await
            .err()
            .unwrap();
        assert!(
            matches!(&wrong_world, RendererError::Plugin { source, .. } if source.kind == syncweave_runtime::FailureKind::WrongWorld),
            "{wrong_world}"
        );
    }

    /// Renders with the real built-in plugin, embedded in the binary.
    #[tokio::test]
    async fn builtin_renders_upstream_template() {
        let r = renderers();
        let renderer = r.for_target(&target(None)).await.unwrap();
        let objs = renderer
            .render(
                "t",
                "abc",
                Some("root:org:ws"),
                "kind: ConfigMap\napiVersion: v1\nmetadata:\n  name: x\ndata:\n  c: \"{{ .ClusterName }}\"\n  p: \"{{ .ClusterPath }}\"\n",
            )
            .await
            .unwrap();
        assert_eq!(objs[0]["data"], json!({"c": "abc", "p": "root:org:ws"}));
        // Cached: the second lookup hands out the same plugin.
        let again = r.for_target(&target(None)).await.unwrap();
        assert!(Arc::ptr_eq(&renderer.plugin, &again.plugin));

        let hb = r
            .for_target(&target(Some(RendererSpec {
                engine: Some(TemplateEngine::Handlebars),
                ..Default::default()
            })))
            .await
            .unwrap();
        let objs = hb
            .render(
                "t",
                "abc",
                None,
                "kind: Namespace\napiVersion: v1\nmetadata:\n  name: ns-{{ClusterName}}\n",
            )
            .await
            .unwrap();
        assert_eq!(objs[0]["metadata"]["name"], "ns-abc");
    }
}
