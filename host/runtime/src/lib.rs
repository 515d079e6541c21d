//! Sandboxed wasmtime runtime for syncweave plugins, and the builder that
//! turns Rust plugin crates into components.
//!
//! A [`Runtime`] compiles each component once (cached on disk by digest and
//! engine), detects its contract version and world from its exports and
//! keeps it linked; every call then runs in a fresh store with a timeout, a
//! memory cap and an output cap, and any failure comes back as a classified
//! [`PluginFailure`] naming the plugin and its digest.
//!
//! Two contract versions are served side by side ([`ContractVersion`]):
//! 0.1 (`wit/plugin.wit`) and 0.2 (`wit/v0.2/plugin.wit`), which adds reads
//! of other objects, a report beside the output and context values along a
//! chain. The `*_with` call methods take a [`CallEnv`] for those and return
//! the [`Report`]; see the [`env`] module.

pub mod allow;
pub mod bindings;
pub use syncweave_builtins as builtins;
pub use syncweave_wasm_build as build;
mod disk_cache;
pub mod env;
mod examples;
mod failed_call;
mod failure;
pub mod fsutil;
mod host;
mod json;
mod output;
mod plugin;
mod pool;
mod precompiled;
pub mod rules;
mod runtime;
mod stdio;
pub mod world;

pub use allow::{AllowList, AllowListed, Allowed, Scope};
pub use build::{BuildError, BuildOptions, BuiltComponent, Toolchain, build_crate};
pub use disk_cache::{DiskCache, SOURCES_DIR, touch};
pub use env::{
    CallEnv, CallRecord, CallResult, Condition, EnvLimits, FixtureReads, Mutated, Named,
    ReadAnswer, ReadDeclaration, ReadError, ReadFixture, ReadHost, ReadRequest, RecordedRead,
    RecordedReads, Rendered, Report, Resource, Severity, Side,
};
pub use examples::{
    Difference, ExampleFailure, ExampleOutcome, ExampleVerdict, example_context, json_difference,
};
pub use failed_call::{CallArgs, FailedCall, FailureHook, Residency};
pub use failure::{FailureKind, PluginErrorKind, PluginFailure};
pub use json::object_json;
pub use plugin::{CallContext, Direction, Fixture, ObjectName, Plugin, PluginInfo, WarmInstance};
pub use pool::{CallObserver, CallPool, available_cores};
pub use precompiled::count as precompiled_builtins;
pub use runtime::{
    EngineKind, Limits, Runtime, RuntimeConfig, RuntimeError, RuntimeStats, default_cache_dir,
};
pub use world::{ContractVersion, World};
