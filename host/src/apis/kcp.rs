//! The kcp API types the agent touches, kept as thin typed views over JSON
//! so that fields this agent does not know survive round trips.

use kube::api::{ApiResource, GroupVersionKind};

fn ar(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
}

pub fn apiexport_endpoint_slice() -> ApiResource {
    ar(
        "apis.kcp.io",
        "v1alpha1",
        "APIExportEndpointSlice",
        "apiexportendpointslices",
    )
}

pub fn apiexport() -> ApiResource {
    ar("apis.kcp.io", "v1alpha1", "APIExport", "apiexports")
}

pub fn apiresourceschema() -> ApiResource {
    ar(
        "apis.kcp.io",
        "v1alpha1",
        "APIResourceSchema",
        "apiresourceschemas",
    )
}

pub fn apibinding() -> ApiResource {
    ar("apis.kcp.io", "v1alpha1", "APIBinding", "apibindings")
}

pub fn logical_cluster() -> ApiResource {
    ar(
        "core.kcp.io",
        "v1alpha1",
        "LogicalCluster",
        "logicalclusters",
    )
}

pub fn crd() -> ApiResource {
    ar(
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
    )
}

/// Annotation kcp puts on every object: its logical-cluster name.
pub const CLUSTER_ANNOTATION: &str = "kcp.io/cluster";
/// Annotation on a LogicalCluster with its workspace path.
pub const PATH_ANNOTATION: &str = "kcp.io/path";
