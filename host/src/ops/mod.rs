//! The process and what an operator observes of it: metrics, logs, the
//! allocator's tuning and the build version. Nothing here knows kcp.
pub mod logging;
pub mod malloc;
pub mod metrics;
pub mod version;
