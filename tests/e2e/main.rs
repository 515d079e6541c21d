//! End-to-end tests: a real kcp (started once for this binary), real
//! workspaces, and the real `syncweave` binary. Each test builds its own
//! isolated set of workspaces inside one organisation workspace.

mod cli;
mod env;
mod sync;
