//! Talking to API servers: loading kubeconfigs, the request stack every
//! request goes through (rate limits, the write fence, metrics), leader
//! election, server liveness and the readiness built on it, Events on the
//! service cluster, namespaces the agent creates.
//!
//! (The external `kube` crate is `::kube`; inside this crate, `crate::kube`
//! is this module.)
pub mod client;
pub mod fence;
pub mod health;
pub mod kubeconfig;
pub mod leader;
pub mod liveness;
pub mod namespace;
pub mod recorder;
