//! Reads of other objects (contract 0.2, interface `reads`), answered by the host from
//! its caches.
//!
//! A plugin may read only what it declares in
//! [`PluginInfo::reads`](super::PluginInfo::reads) and what the operator allows on its
//! WasmPlugin or PublishedResource; anything else fails with [`ReadError::NotAllowed`],
//! naming what is declared. The host also bounds a call's reads (64 reads and 4 MiB by
//! default). In native unit tests [`crate::testing::v2`] answers reads from fixtures.
//!
//! ```no_run
//! use syncweave_plugin::v2::reads::{self, Resource, Side};
//! # fn f() -> Result<(), syncweave_plugin::PluginError> {
//! let ns = reads::get(Side::Kcp, &Resource::core("v1", "namespaces"), None, "team-a")?;
//! let dbs = reads::list(Side::Service, &Resource::core("v1", "configmaps"), Some("db"), Some("app=db"))?;
//! # Ok(()) }
//! ```
use std::cell::RefCell;
use std::fmt;
use std::sync::OnceLock;

use crate::Object;

/// Which API server a read goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Side {
    /// The consumer's workspace in kcp (the workspace of the object the call is made
    /// for).
    Kcp,
    /// The provider's service cluster.
    Service,
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Side::Kcp => "kcp",
            Side::Service => "service",
        })
    }
}

/// A resource type: `group` is `""` for the core group, `resource` the plural name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Resource {
    pub group: String,
    pub version: String,
    pub resource: String,
}

impl Resource {
    pub fn new(
        group: impl Into<String>,
        version: impl Into<String>,
        resource: impl Into<String>,
    ) -> Resource {
        Resource {
            group: group.into(),
            version: version.into(),
            resource: resource.into(),
        }
    }

    /// A resource of the core group (`Resource::core("v1", "namespaces")`).
    pub fn core(version: impl Into<String>, resource: impl Into<String>) -> Resource {
        Resource::new("", version, resource)
    }
}

/// `namespaces (v1)`, `deployments (apps/v1)`, as the host writes it.
impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.group.is_empty() {
            write!(f, "{} ({})", self.resource, self.version)
        } else {
            write!(f, "{} ({}/{})", self.resource, self.group, self.version)
        }
    }
}

/// Why a read was not answered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    /// Not declared in `describe()`, not allowed by the operator, or over a per-call
    /// limit; the message says which.
    #[error("read not allowed: {0}")]
    NotAllowed(String),
    /// The API server does not serve that resource.
    #[error("resource not served: {0}")]
    NotServed(String),
    /// The host cannot read it now (its cache is not synced, the server does not
    /// answer); the call may be retried.
    #[error("read unavailable: {0}")]
    Unavailable(String),
    /// The request is malformed (a bad label selector, an empty name).
    #[error("invalid read: {0}")]
    Invalid(String),
}

/// `?` on a read in a role function: a read the operator must allow (or a resource the
/// server must serve) is a configuration problem ([`PluginError::InvalidConfig`]);
/// an unavailable or malformed read is [`PluginError::Internal`].
///
/// [`PluginError::InvalidConfig`]: crate::PluginError::InvalidConfig
/// [`PluginError::Internal`]: crate::PluginError::Internal
impl From<ReadError> for crate::PluginError {
    fn from(e: ReadError) -> Self {
        match e {
            ReadError::NotAllowed(_) | ReadError::NotServed(_) => {
                crate::PluginError::InvalidConfig(e.to_string())
            }
            ReadError::Unavailable(_) | ReadError::Invalid(_) => {
                crate::PluginError::Internal(e.to_string())
            }
        }
    }
}

/// One object by name; `None` when it does not exist. `namespace` is `None` for
/// cluster-scoped resources. The object is parsed as it is read (see [`Object`]).
pub fn get(
    side: Side,
    resource: &Resource,
    namespace: Option<&str>,
    name: &str,
) -> Result<Option<Object<'static>>, ReadError> {
    raw_get(side, resource, namespace, name)?
        .map(|text| parse(&text))
        .transpose()
}

/// The objects of a resource: in `namespace` (`None`: every namespace the operator
/// allows, or the cluster-scoped objects), matching `label_selector` (Kubernetes
/// syntax: `app=db,tier!=cache,env in (a,b),!legacy`).
pub fn list(
    side: Side,
    resource: &Resource,
    namespace: Option<&str>,
    label_selector: Option<&str>,
) -> Result<Vec<Object<'static>>, ReadError> {
    raw_list(side, resource, namespace, label_selector)?
        .iter()
        .map(|text| parse(text))
        .collect()
}

/// [`get`] as the JSON text the host returned.
pub fn raw_get(
    side: Side,
    resource: &Resource,
    namespace: Option<&str>,
    name: &str,
) -> Result<Option<String>, ReadError> {
    if let Some(host) = HOST.get() {
        return (host.get)(side, resource, namespace, name);
    }
    with_harness(|h| h.get(side, resource, namespace, name))
}

/// [`list`] as the JSON texts the host returned.
pub fn raw_list(
    side: Side,
    resource: &Resource,
    namespace: Option<&str>,
    label_selector: Option<&str>,
) -> Result<Vec<String>, ReadError> {
    if let Some(host) = HOST.get() {
        return (host.list)(side, resource, namespace, label_selector);
    }
    with_harness(|h| h.list(side, resource, namespace, label_selector))
}

fn parse(text: &str) -> Result<Object<'static>, ReadError> {
    serde_json::from_str(text)
        .map_err(|e| e.to_string())
        .and_then(|v| Object::from_value(v).map_err(|e| e.to_string()))
        .map_err(|e| ReadError::Unavailable(format!("the host answered with a bad object: {e}")))
}

/// The component's `reads` import, installed by the export glue.
#[doc(hidden)]
#[derive(Clone, Copy)]
pub struct HostReads {
    pub get: fn(Side, &Resource, Option<&str>, &str) -> Result<Option<String>, ReadError>,
    pub list: fn(Side, &Resource, Option<&str>, Option<&str>) -> Result<Vec<String>, ReadError>,
}

static HOST: OnceLock<HostReads> = OnceLock::new();

/// Routes reads to the host. Called by the export glue before any plugin code runs.
#[doc(hidden)]
pub fn install_host(host: HostReads) {
    // The same functions on every call, so losing the race is harmless.
    let _ = HOST.set(host);
}

/// What answers reads in a native test ([`crate::testing::v2`]).
pub(crate) trait Harness {
    fn get(
        &self,
        side: Side,
        resource: &Resource,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<String>, ReadError>;
    fn list(
        &self,
        side: Side,
        resource: &Resource,
        namespace: Option<&str>,
        label_selector: Option<&str>,
    ) -> Result<Vec<String>, ReadError>;
}

thread_local! {
    static HARNESS: RefCell<Option<std::rc::Rc<dyn Harness>>> = const { RefCell::new(None) };
}

fn with_harness<R>(f: impl FnOnce(&dyn Harness) -> Result<R, ReadError>) -> Result<R, ReadError> {
    let harness = HARNESS.with(|h| h.borrow().clone());
    match harness {
        Some(h) => f(h.as_ref()),
        None => Err(ReadError::Unavailable(
            "no host answers reads here: in a native unit test, call the plugin through \
             syncweave_plugin::testing::v2 with read fixtures (Env::objects)"
                .into(),
        )),
    }
}

/// Answer this thread's reads with `harness` until the guard is dropped.
pub(crate) fn set_harness(harness: std::rc::Rc<dyn Harness>) -> HarnessGuard {
    let previous = HARNESS.with(|h| h.borrow_mut().replace(harness));
    HarnessGuard { previous }
}

pub(crate) struct HarnessGuard {
    previous: Option<std::rc::Rc<dyn Harness>>,
}

impl Drop for HarnessGuard {
    fn drop(&mut self) {
        let previous = self.previous.take();
        HARNESS.with(|h| *h.borrow_mut() = previous);
    }
}
