//! Service-side names of synced objects. The default scheme is upstream's:
//! namespace = consumer logical-cluster name, name =
//! sha3short(namespace)-sha3short(name). Custom schemes (templates, plugins)
//! run as Wasm; see `crate::plugins`.

use sha3::{Digest, Sha3_256};

/// First `len` hex characters of SHA3-256.
pub fn sha3short(s: &str, len: usize) -> String {
    let mut h = hex::encode(Sha3_256::digest(s.as_bytes()));
    h.truncate(len);
    h
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalName {
    pub namespace: Option<String>,
    pub name: String,
}

/// Upstream's default naming.
pub fn default_name(
    cluster: &str,
    namespace: Option<&str>,
    name: &str,
    local_namespaced: bool,
) -> LocalName {
    LocalName {
        namespace: local_namespaced.then(|| cluster.to_string()),
        name: format!(
            "{}-{}",
            sha3short(namespace.unwrap_or(""), 20),
            sha3short(name, 20)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_vectors() {
        assert_eq!(sha3short("objnamespace", 20), "2928c2aa0e510f017f07");
        assert_eq!(sha3short("objname", 20), "73d08a1ba188f1340dae");
        let n = default_name("cl", Some("objnamespace"), "objname", true);
        assert_eq!(n.name, "2928c2aa0e510f017f07-73d08a1ba188f1340dae");
        assert_eq!(n.namespace.as_deref(), Some("cl"));
        assert_eq!(default_name("cl", Some("a"), "b", false).namespace, None);
    }
}
