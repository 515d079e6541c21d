//! Turning a `wasm:` use (`{plugin: <WasmPlugin>}` or `{source: <ref>}`,
//! plus config) into a plugin ready to call, with errors that name the
//! field they come from.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use syncweave_runtime::{FailureKind, Plugin, PluginErrorKind, PluginFailure, Runtime, World};

use crate::apis::{FailurePolicy, WasmUse};
use crate::plugin::fetch::{FetchContext, FetchErrorKind, PluginRef};
use crate::plugin::wasmplugin::registry::{DigestStats, ReadyPlugin, WasmPluginRegistry};
use crate::plugin::wasmplugin::rollout::CanaryRule;

/// A use, resolved.
#[derive(Clone, Debug)]
pub struct Resolved {
    /// For a WasmPlugin: its stable digest.
    pub plugin: Arc<Plugin>,
    /// The config to pass on every call, as JSON text (`null` when neither
    /// the use nor the WasmPlugin sets one).
    pub config: String,
    pub failure_policy: FailurePolicy,
    pub origin: Origin,
    /// Failed calls of `plugin` are counted here (WasmPlugins only; shown
    /// in the WasmPlugin's status).
    pub stats: Option<Arc<DigestStats>>,
    /// During a WasmPlugin's staged rollout: the digest that serves the
    /// objects its canary selects.
    pub canary: Option<ResolvedCanary>,
}

/// The canary side of a [`Resolved`] WasmPlugin use.
#[derive(Clone, Debug)]
pub struct ResolvedCanary {
    pub plugin: Arc<Plugin>,
    /// The config for this digest (the use's own, else this digest's
    /// WasmPlugin default), checked by it.
    pub config: String,
    pub failure_policy: FailurePolicy,
    pub stats: Arc<DigestStats>,
    pub rule: Arc<CanaryRule>,
}

/// Where a resolved plugin came from, for messages and change detection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    WasmPlugin {
        name: String,
        generation: Option<i64>,
    },
    Inline {
        source: String,
    },
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::WasmPlugin { name, .. } => write!(f, "WasmPlugin {name:?}"),
            Origin::Inline { source } => write!(f, "source {source:?}"),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResolveErrorKind {
    /// The use itself is malformed (both or neither of plugin/source, …).
    InvalidUse,
    /// The named WasmPlugin is missing or not Ready (yet).
    NotReady,
    /// The inline source could not be fetched.
    Fetch(FetchErrorKind),
    /// The inline source is not a loadable component.
    Load,
    /// The plugin implements another world than the field needs.
    WrongWorld,
    /// The plugin rejected the config.
    InvalidConfig,
    /// An inline source's worked examples fail (the self-test gate).
    SelfTest,
}

/// A use that cannot be resolved: the field, and a message saying what is
/// wrong and what to do.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{field}: {message}")]
pub struct ResolveError {
    /// e.g. `spec.mutation.spec[2].wasm.plugin`.
    pub field: String,
    pub kind: ResolveErrorKind,
    pub message: String,
}

impl ResolveError {
    /// Whether resolving again later may succeed with no one editing the
    /// object: a WasmPlugin becoming Ready, a network failure passing.
    /// Callers should retry these when [`WasmPluginRegistry::subscribe`]
    /// fires, or with backoff.
    pub fn is_transient(&self) -> bool {
        match self.kind {
            ResolveErrorKind::NotReady => true,
            ResolveErrorKind::Fetch(k) => k.is_transient(),
            _ => false,
        }
    }
}

/// Resolves `wasm:` uses for the sync path; cheap to clone.
#[derive(Clone)]
pub struct PluginResolver {
    runtime: Runtime,
    registry: WasmPluginRegistry,
    fetch: FetchContext,
    /// Inline plugins by digest, so every use of the same bytes shares one
    /// Plugin (the runtime shares the compiled code anyway).
    inline: Arc<Mutex<HashMap<String, Arc<Plugin>>>>,
}

impl std::fmt::Debug for PluginResolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginResolver")
            .field("registry", &self.registry)
            .field("fetch", &self.fetch)
            .finish()
    }
}

impl PluginResolver {
    pub fn new(runtime: Runtime, registry: WasmPluginRegistry, fetch: FetchContext) -> Self {
        PluginResolver {
            runtime,
            registry,
            fetch,
            inline: Arc::default(),
        }
    }

    pub fn registry(&self) -> &WasmPluginRegistry {
        &self.registry
    }

    /// Resolve `u` for a field that needs a plugin of world `expected`;
    /// `field` is the path of the `wasm` object, e.g.
    /// `spec.mutation.spec[2].wasm`. Checks the world and runs the plugin's
    /// validate-config on the config that will be used.
    pub async fn resolve_use(
        &self,
        u: &WasmUse,
        expected: World,
        field: &str,
    ) -> Result<Resolved, ResolveError> {
        let err = |leaf: &str, kind, message: String| ResolveError {
            field: if leaf.is_empty() {
                field.to_string()
            } else {
                format!("{field}.{leaf}")
            },
            kind,
            message,
        };
        match (&u.plugin, &u.source) {
            (Some(_), Some(_)) => Err(err(
                "",
                ResolveErrorKind::InvalidUse,
                "sets both plugin and source; keep plugin (the name of a WasmPlugin) or \
                 source (a plugin reference), not both"
                    .into(),
            )),
            (None, None) => Err(err(
                "",
                ResolveErrorKind::InvalidUse,
                "names no plugin; set plugin (the name of a WasmPlugin) or source (a \
                 built-in name, file://, https://, configmap:// or oci:// reference)"
                    .into(),
            )),
            (Some(name), None) => {
                if u.sha256.is_some() {
                    return Err(err(
                        "sha256",
                        ResolveErrorKind::InvalidUse,
                        format!(
                            "applies only to source; pin the plugin in WasmPlugin {name:?}'s \
                             spec.sha256 instead, and remove it here"
                        ),
                    ));
                }
                let serving = self.registry.serving(name).map_err(|e| {
                    err(
                        "plugin",
                        ResolveErrorKind::NotReady,
                        format!("{e}; objects using it wait until it is Ready"),
                    )
                })?;
                let origin = |p: &ReadyPlugin| Origin::WasmPlugin {
                    name: name.clone(),
                    generation: p.generation,
                };
                let stable = &serving.stable;
                let config = self
                    .checked_config(
                        u,
                        &stable.plugin,
                        stable.default_config.as_ref(),
                        &origin(stable),
                        expected,
                        field,
                        "plugin",
                    )
                    .await?;
                // A canary digest must take the same use: a config it
                // rejects is found before promotion, not after.
                let canary = match &serving.canary {
                    None => None,
                    Some(c) => {
                        let p = &c.plugin;
                        let config = self
                            .checked_config(
                                u,
                                &p.plugin,
                                p.default_config.as_ref(),
                                &origin(p),
                                expected,
                                field,
                                "plugin",
                            )
                            .await
                            .map_err(|mut e| {
                                e.message = format!(
                                    "the canary digest {} (spec.rollout.canary of WasmPlugin \
                                     {name:?}): {}",
                                    p.digest(),
                                    e.message
                                );
                                e
                            })?;
                        Some(ResolvedCanary {
                            plugin: p.plugin.clone(),
                            config,
                            failure_policy: p.failure_policy,
                            stats: p.stats.clone(),
                            rule: c.rule.clone(),
                        })
                    }
                };
                Ok(Resolved {
                    plugin: stable.plugin.clone(),
                    config,
                    failure_policy: stable.failure_policy,
                    origin: origin(stable),
                    stats: Some(stable.stats.clone()),
                    canary,
                })
            }
            (None, Some(source)) => {
                let r = PluginRef::parse(source, u.sha256.as_deref(), field).map_err(|e| {
                    ResolveError {
                        field: e.field,
                        kind: ResolveErrorKind::InvalidUse,
                        message: e.message,
                    }
                })?;
                let plugin = self
                    .load_inline(&r)
                    .await
                    .map_err(|(kind, m)| err("source", kind, m))?;
                let origin = Origin::Inline {
                    source: r.source.clone(),
                };
                let config = self
                    .checked_config(u, &plugin, None, &origin, expected, field, "source")
                    .await?;
                Ok(Resolved {
                    plugin,
                    config,
                    failure_policy: FailurePolicy::Fail,
                    origin,
                    stats: None,
                    canary: None,
                })
            }
        }
    }

    /// Check that `plugin` implements `expected`, and the config it will be
    /// called with: the use's own (validated here), else `default_config`
    /// (a WasmPlugin's, validated when it became Ready).
    #[allow(clippy::too_many_arguments)]
    async fn checked_config(
        &self,
        u: &WasmUse,
        plugin: &Arc<Plugin>,
        default_config: Option<&serde_json::Value>,
        origin: &Origin,
        expected: World,
        field: &str,
        leaf: &str,
    ) -> Result<String, ResolveError> {
        if plugin.world() != expected {
            return Err(ResolveError {
                field: format!("{field}.{leaf}"),
                kind: ResolveErrorKind::WrongWorld,
                message: format!(
                    "{origin} is a {} plugin (world {}), but this field needs a {}; reference a \
                     plugin built for world {}",
                    plugin.world(),
                    plugin.world(),
                    expected,
                    expected
                ),
            });
        }
        let (config, check) = match (&u.config, default_config) {
            (Some(c), _) => (c.to_string(), true),
            (None, Some(d)) => (d.to_string(), false),
            (None, None) => ("null".to_string(), false),
        };
        if check {
            let c = config.clone();
            let res = self
                .runtime
                .call_pool()
                .run(plugin, move |p| p.validate_config(&c))
                .await;
            if let Err(f) = res {
                return Err(config_error(field, origin, &f));
            }
        }
        Ok(config)
    }

    async fn load_inline(&self, r: &PluginRef) -> Result<Arc<Plugin>, (ResolveErrorKind, String)> {
        let fetched = self
            .fetch
            .fetch(r)
            .await
            .map_err(|e| (ResolveErrorKind::Fetch(e.kind), e.to_string()))?;
        if let Some(p) = self
            .inline
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&fetched.digest)
        {
            return Ok(p.clone());
        }
        let plugin = fetched
            .load(&self.runtime, &r.display_name(), None)
            .await
            .map_err(|f| {
                (
                    ResolveErrorKind::Load,
                    format!(
                        "{f}; the source must be a syncweave plugin component (build it with \
                         `syncweave plugin build`)"
                    ),
                )
            })?;
        // The self-test gate, as for a WasmPlugin: a digest whose worked
        // examples fail is not used (there is no older one to fall back on).
        let test = crate::plugin::wasmplugin::selftest::run(self.runtime.call_pool(), &plugin)
            .await
            .map_err(|f| (ResolveErrorKind::Load, format!("describe() failed: {f}")))?;
        if let Some(summary) = test.failure_summary() {
            return Err((
                ResolveErrorKind::SelfTest,
                format!(
                    "{} failed its self-test: {summary}; fix the plugin (`syncweave plugin test \
                     --examples {}` reproduces it)",
                    fetched.digest, r.source
                ),
            ));
        }
        let mut cache = self.inline.lock().unwrap_or_else(|e| e.into_inner());
        Ok(cache.entry(fetched.digest).or_insert(plugin).clone())
    }
}

fn config_error(field: &str, origin: &Origin, f: &PluginFailure) -> ResolveError {
    let (kind, message) = match f.kind {
        FailureKind::PluginError(PluginErrorKind::InvalidConfig) => (
            ResolveErrorKind::InvalidConfig,
            format!(
                "{origin} rejected this config: {}; fix the config (`syncweave plugin inspect` \
                 shows the plugin's config schema)",
                f.message
            ),
        ),
        _ => (
            ResolveErrorKind::Load,
            format!("{origin} failed while checking this config: {f}"),
        ),
    };
    ResolveError {
        field: format!("{field}.config"),
        kind,
        message,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::testing::{fetch_context, runtime, test_plugin};

    fn inline(path: &std::path::Path, config: Option<serde_json::Value>) -> WasmUse {
        WasmUse {
            source: Some(format!("file://{}", path.display())),
            config,
            ..Default::default()
        }
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn inline_sources_resolve_and_are_checked() {
        let rt = runtime();
        let resolver =
            PluginResolver::new(rt.clone(), WasmPluginRegistry::new(), fetch_context(&rt));
        let echo = test_plugin("test-echo");
        let field = "spec.mutation.spec[2].wasm";

        let ok = resolver
            .resolve_use(
                &inline(&echo, Some(json!({"label": "x"}))),
                World::Mutator,
                field,
            )
            .await
            .unwrap();
        assert_eq!(ok.plugin.world(), World::Mutator);
        assert_eq!(ok.config, r#"{"label":"x"}"#);
        assert_eq!(ok.failure_policy, FailurePolicy::Fail);
        assert!(matches!(ok.origin, Origin::Inline { .. }));

        // Same bytes again: the same Plugin.
        let again = resolver
            .resolve_use(&inline(&echo, None), World::Mutator, field)
            .await
            .unwrap();
        assert!(Arc::ptr_eq(&ok.plugin, &again.plugin));
        assert_eq!(again.config, "null");

        let e = resolver
            .resolve_use(
                &inline(&echo, Some(json!({"label": 5}))),
                World::Mutator,
                field,
            )
            .await
            .unwrap_err();
        assert_eq!(e.field, "spec.mutation.spec[2].wasm.config");
        assert_eq!(e.kind, ResolveErrorKind::InvalidConfig);
        assert!(e.message.contains("label: must be a string"), "{e}");
        assert!(!e.is_transient());

        let e = resolver
            .resolve_use(&inline(&echo, None), World::Namer, "spec.naming.wasm")
            .await
            .unwrap_err();
        assert_eq!(e.field, "spec.naming.wasm.source");
        assert_eq!(e.kind, ResolveErrorKind::WrongWorld);
        assert!(e.message.contains("is a mutator plugin"), "{e}");
        assert!(e.message.contains("needs a namer"), "{e}");

        let e = resolver
            .resolve_use(
                &WasmUse {
                    source: Some("/no/such/plugin.wasm".into()),
                    ..Default::default()
                },
                World::Mutator,
                field,
            )
            .await
            .unwrap_err();
        assert_eq!(e.field, "spec.mutation.spec[2].wasm.source");
        assert_eq!(e.kind, ResolveErrorKind::Fetch(FetchErrorKind::NotFound));

        // Not a component at all.
        let junk = crate::testing::tempdir("junk").join("junk.wasm");
        std::fs::write(&junk, b"not wasm").unwrap();
        let e = resolver
            .resolve_use(&inline(&junk, None), World::Mutator, field)
            .await
            .unwrap_err();
        assert_eq!(e.kind, ResolveErrorKind::Load);
        assert!(e.message.contains("not WebAssembly"), "{e}");
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn malformed_uses_name_the_field() {
        let rt = runtime();
        let resolver =
            PluginResolver::new(rt.clone(), WasmPluginRegistry::new(), fetch_context(&rt));
        let f = "spec.naming.wasm";
        let e = resolver
            .resolve_use(
                &WasmUse {
                    plugin: Some("a".into()),
                    source: Some("naming".into()),
                    ..Default::default()
                },
                World::Namer,
                f,
            )
            .await
            .unwrap_err();
        assert_eq!(
            (e.field.as_str(), e.kind),
            (f, ResolveErrorKind::InvalidUse)
        );
        assert!(e.message.contains("not both"), "{e}");

        let e = resolver
            .resolve_use(&WasmUse::default(), World::Namer, f)
            .await
            .unwrap_err();
        assert!(e.message.contains("names no plugin"), "{e}");

        let e = resolver
            .resolve_use(
                &WasmUse {
                    plugin: Some("a".into()),
                    sha256: Some("0".repeat(64)),
                    ..Default::default()
                },
                World::Namer,
                f,
            )
            .await
            .unwrap_err();
        assert_eq!(e.field, "spec.naming.wasm.sha256");

        let e = resolver
            .resolve_use(
                &WasmUse {
                    source: Some("https://example.com/x.wasm".into()),
                    ..Default::default()
                },
                World::Namer,
                f,
            )
            .await
            .unwrap_err();
        assert_eq!(e.field, "spec.naming.wasm.sha256");
        assert!(e.message.contains("is required"), "{e}");

        let e = resolver
            .resolve_use(
                &WasmUse {
                    plugin: Some("missing".into()),
                    ..Default::default()
                },
                World::Namer,
                f,
            )
            .await
            .unwrap_err();
        assert_eq!(e.field, "spec.naming.wasm.plugin");
        assert_eq!(e.kind, ResolveErrorKind::NotReady);
        assert!(e.is_transient());
        assert!(
            e.message.contains("WasmPlugin \"missing\" is not ready"),
            "{e}"
        );
    }

    /// A WasmPlugin in a staged rollout resolves to both digests, each with
    /// its own default config; a use's config must suit both.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_canary_resolves_to_both_digests() {
        use crate::plugin::wasmplugin::registry::{Canary, ReadyPlugin, Serving};
        let rt = runtime();
        let registry = WasmPluginRegistry::new();
        let echo = rt
            .load(
                "test-echo",
                &std::fs::read(test_plugin("test-echo")).unwrap(),
                None,
            )
            .unwrap();
        let ready = |plugin: Arc<Plugin>, config: serde_json::Value| ReadyPlugin {
            name: "p".into(),
            uid: "uid".into(),
            generation: Some(1),
            plugin,
            limits: Default::default(),
            failure_policy: FailurePolicy::Fail,
            default_config: Some(config),
            source: "test".into(),
            stats: Default::default(),
        };
        let rule = Arc::new(CanaryRule::Fraction {
            fraction: 0.5,
            threshold: u64::MAX / 2,
        });
        registry.set_serving(Serving {
            stable: ready(echo.clone(), json!({"label": "s"})),
            canary: Some(Canary {
                plugin: ready(echo.clone(), json!({"label": "c"})),
                rule: rule.clone(),
            }),
            held_back: None,
        });
        let resolver = PluginResolver::new(rt.clone(), registry.clone(), fetch_context(&rt));
        let by_name = WasmUse {
            plugin: Some("p".into()),
            ..Default::default()
        };
        let field = "spec.mutation.spec[0].wasm";
        let r = resolver
            .resolve_use(&by_name, World::Mutator, field)
            .await
            .unwrap();
        assert_eq!(r.config, r#"{"label":"s"}"#);
        assert!(r.stats.is_some());
        let c = r.canary.unwrap();
        assert_eq!(c.config, r#"{"label":"c"}"#);
        assert_eq!(c.rule, rule);

        // A canary digest that rejects the use's config: the error says it
        // is the canary's.
        let mutation = rt.load_builtin("mutation").unwrap();
        registry.set_serving(Serving {
            stable: ready(echo.clone(), json!({"label": "s"})),
            canary: Some(Canary {
                plugin: ready(mutation, json!([])),
                rule,
            }),
            held_back: None,
        });
        let with_config = WasmUse {
            plugin: Some("p".into()),
            config: Some(json!({"label": "x"})),
            ..Default::default()
        };
        let e = resolver
            .resolve_use(&with_config, World::Mutator, field)
            .await
            .unwrap_err();
        assert_eq!(e.field, "spec.mutation.spec[0].wasm.config");
        assert!(
            e.message.starts_with("the canary digest sha256:"),
            "{}",
            e.message
        );
    }

    /// An inline source goes through the self-test gate too.
    #[tokio::test(flavor = "multi_thread")]
    async fn an_inline_source_whose_example_fails_is_refused() {
        let rt = runtime();
        let resolver =
            PluginResolver::new(rt.clone(), WasmPluginRegistry::new(), fetch_context(&rt));
        let e = resolver
            .resolve_use(
                &inline(&test_plugin("test-namer"), None),
                World::Namer,
                "spec.naming.wasm",
            )
            .await
            .unwrap_err();
        assert_eq!(e.kind, ResolveErrorKind::SelfTest);
        assert_eq!(e.field, "spec.naming.wasm.source");
        assert!(
            e.message
                .contains("failed its self-test: example \"deliberately-wrong\" failed"),
            "{}",
            e.message
        );
        assert!(!e.is_transient());
    }
}
