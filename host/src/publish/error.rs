//! What can go wrong resolving a PublishedResource into a schema.

#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    #[error(
        "PublishedResource {pr}: spec.resource: the service cluster serves no kind {kind:?} in group {group:?} (neither a CustomResourceDefinition nor a built-in resource); install the CRD or fix apiGroup/kind"
    )]
    CrdNotFound {
        pr: String,
        group: String,
        kind: String,
    },
    #[error("PublishedResource {pr}: {message}")]
    Invalid { pr: String, message: String },
    #[error("{action}: {source}{}", crate::kcp::forbidden_hint(source))]
    Kube {
        action: String,
        #[source]
        source: kube::Error,
    },
    /// A request to the service cluster failed.
    #[error("{action}: {source}{}", service_forbidden_hint(source))]
    Service {
        action: String,
        #[source]
        source: kube::Error,
    },
}

fn service_forbidden_hint(err: &kube::Error) -> &'static str {
    match err {
        kube::Error::Api(s) if s.code == 403 => {
            "; the service cluster refused the agent's identity (--kubeconfig or its \
             ServiceAccount): grant what docs/rbac.md lists for the sync role"
        }
        _ => "",
    }
}
