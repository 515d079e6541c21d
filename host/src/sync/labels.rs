//! Label, annotation and finalizer names shared with upstream api-syncagent
//! (part of the compatibility contract, so never rename them), then
//! syncweave's own.

pub const FINALIZER: &str = "syncagent.kcp.io/cleanup";

pub const AGENT_NAME_LABEL: &str = "syncagent.kcp.io/agent-name";
pub const REMOTE_CLUSTER_LABEL: &str = "syncagent.kcp.io/remote-object-cluster";
pub const REMOTE_NAME_HASH_LABEL: &str = "syncagent.kcp.io/remote-object-name-hash";
pub const REMOTE_NAMESPACE_HASH_LABEL: &str = "syncagent.kcp.io/remote-object-namespace-hash";
pub const REMOTE_NAME_ANNOTATION: &str = "syncagent.kcp.io/remote-object-name";
pub const REMOTE_NAMESPACE_ANNOTATION: &str = "syncagent.kcp.io/remote-object-namespace";
pub const REMOTE_WORKSPACE_PATH_ANNOTATION: &str = "syncagent.kcp.io/remote-object-workspace-path";
pub const OBJECT_STATE_LABEL: &str = "syncagent.kcp.io/object-state";
pub const SOURCE_GENERATION_ANNOTATION: &str = "syncagent.kcp.io/source-generation";

// syncweave's own names, for what upstream does not do
// (`spec.lifecycle`).

/// The finalizer agent `agent` puts on kcp-origin related objects:
/// upstream's shared name, or (`relatedFinalizer: PerAgent`) its own.
pub fn related_finalizer(policy: crate::apis::RelatedFinalizer, agent: &str) -> String {
    match policy {
        crate::apis::RelatedFinalizer::PerAgent => format!("cleanup.syncagent.kcp.io/{agent}"),
        crate::apis::RelatedFinalizer::Shared => FINALIZER.to_string(),
    }
}

/// The name of agent `agent`'s finalizer that its current policy does not
/// use, when that name is its own alone: under `Shared`, its per-agent
/// name, left on objects held while the policy was `PerAgent`. (Under
/// `PerAgent`, the shared name may be another agent's: never claimed.)
pub fn former_related_finalizer(
    policy: crate::apis::RelatedFinalizer,
    agent: &str,
) -> Option<String> {
    match policy {
        crate::apis::RelatedFinalizer::Shared => Some(related_finalizer(
            crate::apis::RelatedFinalizer::PerAgent,
            agent,
        )),
        crate::apis::RelatedFinalizer::PerAgent => None,
    }
}

/// Label on namespaces the agent created while `workspaceDeletion: Delete`
/// was set: the agent's name.
pub const CREATED_BY_LABEL: &str = "syncweave.dev/created-by-agent";
/// With [`CREATED_BY_LABEL`]: the logical cluster the namespace was
/// created for.
pub const CREATED_FOR_LABEL: &str = "syncweave.dev/created-for-cluster";
/// Annotation on a copy left behind by `workspaceDeletion: Orphan`: when.
pub const ORPHANED_ANNOTATION: &str = "syncweave.dev/orphaned";

/// Hex SHA-1 of a string: label values cannot hold arbitrary names.
pub fn sha1_hex(s: &str) -> String {
    use sha1::{Digest, Sha1};
    hex::encode(Sha1::digest(s.as_bytes()))
}

/// Upstream's `crypto.Hash` of a non-string value: the SHA-1 of what Go's
/// `json.Encoder` writes for it, i.e. its JSON (see [`super::gojson`])
/// followed by a newline.
pub fn sha1_hex_json_line(json: &str) -> String {
    use sha1::{Digest, Sha1};
    let mut h = Sha1::new();
    h.update(json.as_bytes());
    h.update(b"\n");
    hex::encode(h.finalize())
}

/// Map a service-cluster copy back to the kcp object it came from.
pub fn local_key(obj: &kube::api::DynamicObject) -> Option<crate::controller::store::ObjectKey> {
    use crate::controller::store::{KeyParts, ObjectKey};
    let labels = obj.metadata.labels.as_ref()?;
    let ann = obj.metadata.annotations.as_ref()?;
    Some(ObjectKey::new(KeyParts {
        cluster: labels.get(REMOTE_CLUSTER_LABEL)?.clone(),
        namespace: ann.get(REMOTE_NAMESPACE_ANNOTATION).cloned(),
        name: ann.get(REMOTE_NAME_ANNOTATION)?.clone(),
    }))
}

/// Whether `copy` is this agent's: labelled with its name, or with none
/// (made before agents had names: adopted).
pub fn ours(copy: &kube::api::DynamicObject, agent: &str) -> bool {
    copy.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(AGENT_NAME_LABEL))
        .is_none_or(|a| a == agent)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apis::RelatedFinalizer;

    #[test]
    fn related_finalizer_is_shared_unless_per_agent() {
        assert_eq!(
            related_finalizer(RelatedFinalizer::default(), "agent-b"),
            "syncagent.kcp.io/cleanup"
        );
        assert_eq!(
            related_finalizer(RelatedFinalizer::PerAgent, "agent-b"),
            "cleanup.syncagent.kcp.io/agent-b"
        );
    }
}
