//! Everything about plugins, in pipeline order:
//! - [`fetch`]: getting a plugin's bytes (`oci://`, `https://`,
//!   `configmap://`, built-ins) and verifying them (digests, signatures);
//! - [`wasmplugin`]: the WasmPlugin controller, its self-test gate, the
//!   registry of ready plugins and staged rollouts;
//! - [`resolve`]: a `wasm:` use of a PublishedResource or InitTarget → a
//!   plugin to call;
//! - [`chain`]: the plugins of one PublishedResource as the sync path calls
//!   them (naming, mutations, related objects);
//! - [`capture`]: the inputs of failed calls, kept for `plugin replay`;
//! - [`cli`]: `syncweave plugin …` beside them.
//!
//! The Wasm runtime itself is the `syncweave-runtime` crate; the embedded
//! built-ins are `syncweave-builtins`.
pub mod capture;
pub mod chain;
pub mod cli;
pub mod fetch;
pub mod resolve;
pub mod wasmplugin;
