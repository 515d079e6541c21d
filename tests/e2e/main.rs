//! End-to-end tests: a real kcp (started once for this binary), real
//! workspaces, and the real `syncweave` binary. Each test builds its own
//! isolated set of workspaces inside one organisation workspace.

mod adopt;
mod badinput;
mod builtin;
mod chart;
mod cli;
mod contract;
mod converge;
mod cost;
mod faults;
mod init;
mod init_lifecycle;
mod journey;
mod legacy;
mod lifecycle;
mod multikcp;
mod mutation;
mod namespaces;
mod ops;
mod outages;
mod parity;
mod plugins;
mod publish;
mod related;
mod replay;
mod rollout;
mod scaffold;
mod shards;
mod steady;
mod sync;
mod takeover;

/// The binary under test, built by cargo before this test binary.
pub fn binary() -> &'static std::path::Path {
    env!("CARGO_BIN_EXE_syncweave").as_ref()
}
