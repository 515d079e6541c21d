//! The controller machinery every role uses, apart from any domain code (in
//! kube-runtime's terms: watcher, reflector store, scheduler, runner):
//! - [`watch`] drives a watch stream, backing off while it fails;
//! - [`feed`] turns one watch's events into the keys to reconcile;
//! - [`queue`] schedules keys (one pending entry and one timer per key,
//!   backoff per key) and [`runner`] reconciles them with a pool of
//!   supervised workers ([`supervise`]);
//! - [`builder`] wires them into one [`Controller`]: a controller declares
//!   what it watches and how it reconciles, nothing else;
//! - [`store`] keeps watched objects for reconciles to read (kcp objects
//!   keyed by logical cluster), packed ([`pack`]);
//! - [`backoff`] is the one retry policy.
pub mod backoff;
pub mod builder;
pub mod feed;
pub mod pack;
pub mod queue;
pub mod runner;
pub mod store;
pub mod supervise;
pub mod watch;

pub use builder::Controller;
pub use runner::{Outcome, Reconcile};
