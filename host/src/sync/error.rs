//! What can go wrong in a pass, naming the object, the field and the fix.

use kube::api::DynamicObject;
use serde_json::Value;

use crate::controller::store::ObjectKey;

#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error("{action} {what}: {source}")]
    Kube {
        action: &'static str,
        what: String,
        #[source]
        source: kube::Error,
    },
    #[error(
        "applying spec.managedNamespaceMetadata to namespace {namespace} on the service cluster \
         (for {key}): {source}; the service cluster refused the labels or annotations: change \
         spec.managedNamespaceMetadata (or the consumer Namespace's keys that \
         fromConsumerNamespace copies), or the policy that refuses them"
    )]
    NamespaceMetadata {
        namespace: String,
        key: ObjectKey,
        #[source]
        source: kube::Error,
    },
    #[error("naming {key}: {0}", key = .1)]
    Naming(String, ObjectKey),
    #[error("mutating {key}: {0}", key = .1)]
    Mutation(String, ObjectKey),
    #[error(
        "found {count} copies of {key} on the service cluster (labels {selector}); delete the extra ones"
    )]
    Ambiguous {
        count: usize,
        key: ObjectKey,
        selector: String,
    },
    #[error(
        "LogicalCluster of workspace {0} has no kcp.io/path annotation, so enableWorkspacePaths cannot name it"
    )]
    NoWorkspacePath(String),
    #[error(
        "{key} is too large to sync: its last-synced state takes {bytes} bytes, and the \
         Secret that keeps it may hold at most 1 MiB. Nothing was written to the service \
         cluster; make the object smaller (keep bulk data out of it, e.g. in related \
         ConfigMaps or Secrets)"
    )]
    StateTooLarge { key: ObjectKey, bytes: usize },
    #[error(
        "workspace {0} is not served by any URL of the APIExportEndpointSlice (yet); \
         retrying until its shard's virtual workspace lists it"
    )]
    NoShard(String),
    #[error(
        "internal error (a bug, please report it): the reconcile panicked: {0}; \
         the object is retried"
    )]
    Panicked(String),
    #[error(transparent)]
    Kcp(#[from] crate::kcp::KcpError),
    #[error("{key}: {0}", key = .1)]
    NotConverging(super::converge::NotConverging, ObjectKey),
    #[error("related resource {0}")]
    Related(Box<RelatedError>),
    /// An object (from an API server, or built from one and a mutation's
    /// result) that does not convert between its JSON and typed forms.
    #[error("{what} of {key} is not a valid object: {message}")]
    BadObject {
        what: &'static str,
        key: ObjectKey,
        message: String,
    },
}

/// `obj` as JSON (`what` names it in the error).
pub(super) fn to_json(
    key: &ObjectKey,
    what: &'static str,
    obj: &DynamicObject,
) -> Result<Value, SyncError> {
    serde_json::to_value(obj).map_err(|e| SyncError::BadObject {
        what,
        key: key.clone(),
        message: e.to_string(),
    })
}

/// `v` as an object to send to an API server.
pub(super) fn from_json(
    key: &ObjectKey,
    what: &'static str,
    v: Value,
) -> Result<DynamicObject, SyncError> {
    serde_json::from_value(v).map_err(|e| SyncError::BadObject {
        what,
        key: key.clone(),
        message: e.to_string(),
    })
}

impl From<RelatedError> for SyncError {
    fn from(e: RelatedError) -> Self {
        SyncError::Related(Box::new(e))
    }
}

pub(super) fn kerr(
    action: &'static str,
    what: impl std::fmt::Display,
) -> impl FnOnce(kube::Error) -> SyncError {
    let what = what.to_string();
    move |source| SyncError::Kube {
        action,
        what,
        source,
    }
}

pub(super) const REQUEUE_SOON: std::time::Duration = std::time::Duration::from_secs(1);

#[derive(Debug, thiserror::Error)]
pub enum RelatedError {
    #[error("{field}: {message}")]
    Config { field: String, message: String },
    #[error("{field}: {action} {what}: {source}{}", access_hint(source))]
    Kube {
        field: String,
        action: &'static str,
        what: String,
        #[source]
        source: kube::Error,
    },
}

/// What to check when the API server refuses access to related objects.
fn access_hint(e: &kube::Error) -> &'static str {
    match e {
        kube::Error::Api(s) if s.code == 403 => {
            " (in kcp, consumers must accept the APIExport's permission claims on namespaces and \
             the related types; on the service cluster, the agent needs access to the related types, \
             e.g. the chart's rbac.publishedResources)"
        }
        _ => "",
    }
}

pub(super) fn config_err(field: &str, message: impl Into<String>) -> RelatedError {
    RelatedError::Config {
        field: field.to_string(),
        message: message.into(),
    }
}
