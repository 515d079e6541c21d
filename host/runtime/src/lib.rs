//! Sandboxed wasmtime runtime for syncweave plugins, and the builder that
//! turns Rust plugin crates into components.
//!
//! A [`Runtime`] compiles each component once (cached on disk by digest and
//! engine), detects its world from its exports and keeps it linked; every
//! call then runs in a fresh store with a timeout, a memory cap and an
//! output cap, and any failure comes back as a classified [`PluginFailure`]
//! naming the plugin and its digest.

pub mod bindings;
pub use syncweave_builtins as builtins;
pub use syncweave_wasm_build as build;
mod disk_cache;
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
mod runtime;
mod stdio;
pub mod world;

pub use build::{BuildError, BuildOptions, BuiltComponent, Toolchain, build_crate};
pub use disk_cache::{DiskCache, SOURCES_DIR, touch};
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
pub use world::World;
