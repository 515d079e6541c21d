//! Removing metadata that belongs to one side only before copying an object
//! to the other side (server-managed fields, sync bookkeeping, kcp's own).

use serde_json::{Map, Value};

use super::labels::*;

const DROPPED_METADATA: &[&str] = &[
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "finalizers",
    "generation",
    "ownerReferences",
    "resourceVersion",
    "managedFields",
    "uid",
    "selfLink",
    "generateName",
];

const DROPPED_LABELS: &[&str] = &[
    REMOTE_CLUSTER_LABEL,
    REMOTE_NAME_HASH_LABEL,
    REMOTE_NAMESPACE_HASH_LABEL,
];
const DROPPED_LABEL_PREFIXES: &[&str] = &["claimed.internal.apis.kcp.io/"];
const DROPPED_ANNOTATIONS: &[&str] = &[
    "kcp.io/cluster",
    "kubectl.kubernetes.io/last-applied-configuration",
    REMOTE_NAME_ANNOTATION,
    REMOTE_NAMESPACE_ANNOTATION,
    REMOTE_WORKSPACE_PATH_ANNOTATION,
];
const DROPPED_ANNOTATION_PREFIXES: &[&str] = &["related-resources.syncagent.kcp.io/"];

/// Strip an object in place.
pub fn strip_metadata(obj: &mut Value) {
    let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    for k in DROPPED_METADATA {
        meta.remove(*k);
    }
    filter_map(meta, "labels", DROPPED_LABELS, DROPPED_LABEL_PREFIXES);
    filter_map(
        meta,
        "annotations",
        DROPPED_ANNOTATIONS,
        DROPPED_ANNOTATION_PREFIXES,
    );
}

fn filter_map(meta: &mut Map<String, Value>, field: &str, exact: &[&str], prefixes: &[&str]) {
    let empty = if let Some(m) = meta.get_mut(field).and_then(Value::as_object_mut) {
        m.retain(|k, _| !exact.contains(&k.as_str()) && !prefixes.iter().any(|p| k.starts_with(p)));
        m.is_empty()
    } else {
        false
    };
    if empty {
        meta.remove(field);
    }
}

/// Remove subresources that never flow with spec.
pub fn drop_subresources(obj: &mut Value, status: bool, scale: bool) {
    if let Some(m) = obj.as_object_mut() {
        if status {
            m.remove("status");
        }
        if scale {
            m.remove("scale");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strips_server_and_sync_fields() {
        let mut o = json!({
            "metadata": {
                "name": "a", "namespace": "b", "uid": "u", "resourceVersion": "1",
                "finalizers": ["x"], "generation": 3, "managedFields": [],
                "labels": {"app": "x", REMOTE_CLUSTER_LABEL: "c", "claimed.internal.apis.kcp.io/abc": "y"},
                "annotations": {"kcp.io/cluster": "c", "keep": "me", "related-resources.syncagent.kcp.io/x.0": "{}"}
            },
            "spec": {"a": 1}
        });
        strip_metadata(&mut o);
        assert_eq!(
            o,
            json!({
                "metadata": {"name": "a", "namespace": "b", "labels": {"app": "x"}, "annotations": {"keep": "me"}},
                "spec": {"a": 1}
            })
        );
    }

    #[test]
    fn empty_maps_are_removed() {
        let mut o = json!({"metadata": {"name": "a", "annotations": {"kcp.io/cluster": "c"}}});
        strip_metadata(&mut o);
        assert_eq!(o, json!({"metadata": {"name": "a"}}));
    }
}
