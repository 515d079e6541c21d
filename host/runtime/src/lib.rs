//! Sandboxed wasmtime runtime for syncweave plugins, and the builder that
//! turns Rust plugin crates into components.

pub mod build;

pub use build::{BuildError, BuildOptions, BuiltComponent, Toolchain, build_crate};
