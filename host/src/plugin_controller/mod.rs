//! WasmPlugins: the controller that turns WasmPlugin objects on the
//! service cluster into checked, loaded plugins ([`controller`]), the
//! self-test gate every digest passes first ([`selftest`]), the registry
//! the sync path reads them from ([`registry`]), staged rollouts that give
//! a new digest to some objects first ([`rollout`]), and the resolver that
//! turns a PublishedResource's `wasm:` use into a plugin to call
//! ([`resolver`]).
//!
//! Wiring, in the agent:
//! ```ignore
//! let registry = WasmPluginRegistry::new();
//! tokio::spawn(plugin_controller::run(service.clone(), runtime.clone(), registry.clone(), recorder.clone(), cancel.clone()));
//! let fetch = FetchContext::new(FetchOptions::for_runtime(&runtime, Some(service.clone())))?;
//! let resolver = PluginResolver::new(runtime, registry, fetch);
//! let resolved = resolver.resolve_use(&use_, World::Mutator, "spec.mutation.spec[0].wasm").await?;
//! ```

pub mod configmaps;
pub mod controller;
pub mod registry;
pub mod resolver;
pub mod rollout;
pub mod selftest;

pub use controller::{Checker, ControllerConfig, run, run_with};
pub use registry::{Canary, DigestStats, NotReady, ReadyPlugin, Serving, WasmPluginRegistry};
pub use resolver::{Origin, PluginResolver, ResolveError, ResolveErrorKind, Resolved};
pub use rollout::{CanaryRule, Labels, Subject};

#[cfg(test)]
pub(crate) mod tests {
    use std::path::PathBuf;
    use std::sync::OnceLock;

    use syncweave_runtime::build::{BuildOptions, BuiltComponent, build_crate};
    use syncweave_runtime::{Runtime, RuntimeConfig};

    use crate::plugin_fetch::{FetchContext, FetchOptions};

    /// One runtime for all tests: each reserves a pool of instance slots.
    pub fn runtime() -> Runtime {
        static RT: OnceLock<Runtime> = OnceLock::new();
        RT.get_or_init(|| {
            Runtime::new(RuntimeConfig {
                cache_dir: Some(crate::plugin_fetch::tests::tempdir("wasmplugin-rt")),
                max_instances: 8,
                max_memory_bytes: 256 << 20,
                ..Default::default()
            })
            .expect("runtime")
        })
        .clone()
    }

    pub fn fetch_context(rt: &Runtime) -> FetchContext {
        let mut opts = FetchOptions::for_runtime(rt, None);
        opts.cache_dir = Some(crate::plugin_fetch::tests::tempdir("wasmplugin-fetch"));
        FetchContext::new(opts).unwrap()
    }

    /// A component from tests/plugins, built once per test binary (cargo
    /// makes this cheap when nothing changed).
    pub fn test_plugin(name: &str) -> PathBuf {
        static BUILT: OnceLock<Vec<BuiltComponent>> = OnceLock::new();
        let built = BUILT.get_or_init(|| {
            let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
            let mut opts = BuildOptions::new(repo.join("target/test-plugins"));
            opts.packages = vec!["test-echo".into(), "test-namer".into()];
            build_crate(&repo.join("plugins"), &opts)
                .expect("building test plugins (needs the wasm toolchain: tests/setup.sh)")
        });
        built
            .iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("{name} was not built"))
            .path
            .clone()
    }
}
