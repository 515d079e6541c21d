//! syncweave: one Rust host for kcp's api-syncagent and init-agent roles,
//! with projection, mutation, naming and rendering run as Wasm components.
//!
//! The data path, top to bottom:
//! kcp watch ([`sync::controller`], driven by [`watch`]) → plugin chain ([`plugins`]) →
//! service-cluster apply ([`sync::syncer`]) → status back ([`sync::syncer`]).
//! Every long-running loop runs under [`supervise`].

pub mod agent;
pub mod apis;
pub mod backoff;
pub mod cli;
pub mod client;
pub mod cluster;
pub mod fence;
pub mod health;
pub mod init;
pub mod kcp;
pub mod kubeconfig;
pub mod leader;
pub mod logging;
pub mod metrics;
pub mod namespace;
pub mod plugin_cmd;
pub mod plugins;
pub mod publish;
pub mod selector;
pub mod serve;
pub mod sources;
pub mod supervise;
pub mod sync;
pub mod validation;
pub mod version;
pub mod wasmplugin;
pub mod watch;
