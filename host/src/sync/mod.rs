//! Object synchronisation, top to bottom:
//! - [`controller`]: one per PublishedResource, built from what it watches
//!   ([`watches`]: kcp through every shard's virtual workspace, the copies
//!   and related objects on the service cluster) into caches
//!   ([`crate::controller::store`], [`caches`]) and a work queue;
//! - [`reconcile`]: one pass over one kcp object ([`context::Pass`]), its
//!   phases in order: [`deletion`], [`locate`], [`spec`] down (plugins
//!   through [`ports`], then the copy and its [`state`]), [`status`] up,
//!   [`related`] objects.
//!
//! Below them: names of copies ([`naming`]), metadata that stays on one
//! side ([`strip`]), three-way merge patches ([`patch`]), writes that do not
//! settle ([`converge`]), what consumers see ([`events`]), errors
//! ([`error`]), the labels shared with upstream ([`labels`]).
pub mod caches;
pub mod context;
pub mod controller;
pub mod converge;
pub mod deletion;
pub mod error;
pub mod events;
pub mod finalizer_wait;
pub mod gojson;
pub mod labels;
pub mod leaving;
pub mod locate;
pub mod namespace_meta;
pub mod naming;
pub mod patch;
pub mod plugin_reports;
pub mod ports;
pub mod reads;
pub mod reconcile;
pub mod related;
pub mod spec;
pub mod state;
pub mod status;
pub mod strip;
pub mod watches;

/// What to grant when the agent may not list or watch objects on `side`
/// ("kcp" or "service"). Until it is fixed, readers fall back to the API.
pub(crate) fn forbidden_fix(side: &str) -> &'static str {
    if side == "kcp" {
        "check the APIExport's permission claims and the agent's kcp RBAC (docs/rbac.md)"
    } else {
        "grant list and watch as docs/rbac.md lists"
    }
}
