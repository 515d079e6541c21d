//! Label, annotation and finalizer names shared with upstream api-syncagent;
//! they are part of the compatibility contract, so never rename them.

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
