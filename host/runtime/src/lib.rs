//! Sandboxed wasmtime runtime for syncweave plugins.
