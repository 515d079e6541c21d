//! WasmPlugins: the controller that turns WasmPlugin objects on the
//! service cluster into checked, loaded plugins ([`controller`]), the
//! self-test gate every digest passes first ([`selftest`]), the registry
//! the sync path reads them from ([`registry`]), staged rollouts that give
//! a new digest to some objects first ([`rollout`]). The resolver that
//! turns a PublishedResource's `wasm:` use into a plugin to call is
//! [`crate::plugin::resolve`].
//!
//! Wiring, in the agent:
//! ```ignore
//! let registry = WasmPluginRegistry::new();
//! tokio::spawn(wasmplugin::run(service.clone(), runtime.clone(), registry.clone(), recorder.clone(), cancel.clone()));
//! let fetch = FetchContext::new(FetchOptions::for_runtime(&runtime, Some(service.clone())))?;
//! let resolver = PluginResolver::new(runtime, registry, fetch);
//! let resolved = resolver.resolve_use(&use_, World::Mutator, "spec.mutation.spec[0].wasm").await?;
//! ```

pub mod configmaps;
pub mod controller;
pub mod registry;
pub mod rollout;
pub mod selftest;

pub use controller::{Checker, ControllerConfig, run, run_with};
pub use registry::{Canary, DigestStats, NotReady, ReadyPlugin, Serving, WasmPluginRegistry};
pub use rollout::{CanaryRule, Labels, Subject};
