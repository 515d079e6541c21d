//! The operator's allow-list of reads (a WasmPlugin's or PublishedResource's
//! `reads`), applied in front of the agent's [`ReadHost`].
//!
//! The runtime checks every read against the plugin's own `describe()`
//! declarations; [`AllowListed`] adds what the operator grants: which kinds,
//! on which side, in which namespaces. A read outside it fails with
//! `not-allowed` and a message that names the allow-list, so the plugin
//! author (or the operator reading the Event) sees what would have to be
//! added.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::env::{ReadError, ReadHost, Resource, Side};

/// Where the objects of one allowed kind may be read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Scope {
    /// Cluster-scoped objects only (a kcp LogicalCluster, a Namespace).
    Cluster,
    /// Objects in these namespaces only.
    Namespaces(Vec<String>),
}

/// One kind the operator allows plugins to read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Allowed {
    pub side: Side,
    pub resource: Resource,
    pub scope: Scope,
}

impl fmt::Display for Allowed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.side, self.resource)?;
        match &self.scope {
            Scope::Cluster => f.write_str(" cluster-scoped"),
            Scope::Namespaces(ns) => write!(f, " in namespaces {}", ns.join(", ")),
        }
    }
}

/// What an operator allows the plugins of one WasmPlugin or
/// PublishedResource (`owner`, e.g. `PublishedResource/configmaps`) to read.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AllowList {
    pub owner: String,
    pub allowed: Vec<Allowed>,
}

impl AllowList {
    pub fn new(owner: impl Into<String>, allowed: Vec<Allowed>) -> AllowList {
        AllowList {
            owner: owner.into(),
            allowed,
        }
    }

    fn entry(&self, side: Side, resource: &Resource) -> Option<&Allowed> {
        self.allowed
            .iter()
            .find(|a| a.side == side && &a.resource == resource)
    }

    /// The refusal of `what`, naming the allow-list.
    pub fn refusal(&self, what: &str) -> ReadError {
        let list = if self.allowed.is_empty() {
            "nothing".to_string()
        } else {
            self.allowed
                .iter()
                .map(|a| a.to_string())
                .collect::<Vec<_>>()
                .join("; ")
        };
        ReadError::NotAllowed(format!(
            "{what} is outside the read allow-list of {}, which allows {list}",
            self.owner
        ))
    }

    /// Whether one read of `resource` in `namespace` is allowed.
    pub fn check(
        &self,
        side: Side,
        resource: &Resource,
        namespace: Option<&str>,
        what: &str,
    ) -> Result<(), ReadError> {
        let allowed = match (self.entry(side, resource), namespace) {
            (Some(a), None) => a.scope == Scope::Cluster,
            (
                Some(Allowed {
                    scope: Scope::Namespaces(ns),
                    ..
                }),
                Some(n),
            ) => ns.iter().any(|x| x == n),
            _ => false,
        };
        if allowed {
            Ok(())
        } else {
            Err(self.refusal(what))
        }
    }
}

/// A [`ReadHost`] that answers only what an [`AllowList`] grants, from
/// `inner`.
pub struct AllowListed<H> {
    pub allow: AllowList,
    pub inner: H,
}

impl<H> AllowListed<H> {
    pub fn new(allow: AllowList, inner: H) -> AllowListed<H> {
        AllowListed { allow, inner }
    }
}

fn describe(
    verb: &str,
    side: Side,
    resource: &Resource,
    namespace: Option<&str>,
    name: &str,
) -> String {
    match namespace {
        Some(ns) => format!("{verb} {side} {resource} {ns}/{name}"),
        None => format!("{verb} {side} {resource} {name}"),
    }
}

impl<H: ReadHost> ReadHost for AllowListed<H> {
    fn get(
        &self,
        side: Side,
        resource: &Resource,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<String>, ReadError> {
        self.allow.check(
            side,
            resource,
            namespace,
            &describe("get", side, resource, namespace, name),
        )?;
        self.inner.get(side, resource, namespace, name)
    }

    fn list(
        &self,
        side: Side,
        resource: &Resource,
        namespace: Option<&str>,
        label_selector: Option<&str>,
    ) -> Result<Vec<String>, ReadError> {
        match (self.allow.entry(side, resource), namespace) {
            // No namespace: every namespace the allow-list grants.
            (
                Some(Allowed {
                    scope: Scope::Namespaces(ns),
                    ..
                }),
                None,
            ) => {
                let mut all = Vec::new();
                for n in ns {
                    all.extend(self.inner.list(side, resource, Some(n), label_selector)?);
                }
                Ok(all)
            }
            _ => {
                let what = match namespace {
                    Some(ns) => format!("list {side} {resource} in namespace {ns}"),
                    None => format!("list {side} {resource}"),
                };
                self.allow.check(side, resource, namespace, &what)?;
                self.inner.list(side, resource, namespace, label_selector)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::{FixtureReads, ReadFixture};

    fn cms() -> Resource {
        Resource::core("v1", "configmaps")
    }

    fn host() -> AllowListed<FixtureReads> {
        let cm = |ns: &str, name: &str| {
            format!(r#"{{"metadata":{{"namespace":"{ns}","name":"{name}"}}}}"#)
        };
        let inner = FixtureReads::new(&[
            ReadFixture {
                side: Side::Service,
                resource: cms(),
                objects: vec![cm("db", "a"), cm("cache", "b"), cm("secret", "c")],
            },
            ReadFixture {
                side: Side::Kcp,
                resource: Resource::core("v1", "namespaces"),
                objects: vec![r#"{"metadata":{"name":"ns"}}"#.to_string()],
            },
        ])
        .unwrap();
        AllowListed::new(
            AllowList::new(
                "PublishedResource/things",
                vec![
                    Allowed {
                        side: Side::Service,
                        resource: cms(),
                        scope: Scope::Namespaces(vec!["db".into(), "cache".into()]),
                    },
                    Allowed {
                        side: Side::Kcp,
                        resource: Resource::core("v1", "namespaces"),
                        scope: Scope::Cluster,
                    },
                ],
            ),
            inner,
        )
    }

    #[test]
    fn allowed_reads_pass_through() {
        let h = host();
        assert!(
            h.get(Side::Service, &cms(), Some("db"), "a")
                .unwrap()
                .is_some()
        );
        assert!(
            h.get(Side::Kcp, &Resource::core("v1", "namespaces"), None, "ns")
                .unwrap()
                .is_some()
        );
        assert_eq!(
            h.list(Side::Service, &cms(), Some("cache"), None)
                .unwrap()
                .len(),
            1
        );
        // No namespace: the granted namespaces, not `secret`.
        let all = h.list(Side::Service, &cms(), None, None).unwrap();
        assert_eq!(all.len(), 2);
        assert!(all.iter().all(|o| !o.contains("secret")));
    }

    #[test]
    fn a_read_outside_the_allow_list_names_it() {
        let h = host();
        let e = h
            .get(Side::Service, &cms(), Some("secret"), "c")
            .unwrap_err();
        assert_eq!(
            e,
            ReadError::NotAllowed(
                "get service configmaps (v1) secret/c is outside the read allow-list of \
                 PublishedResource/things, which allows service configmaps (v1) in namespaces \
                 db, cache; kcp namespaces (v1) cluster-scoped"
                    .into()
            )
        );
        let e = h
            .list(
                Side::Kcp,
                &Resource::new("apps", "v1", "deployments"),
                Some("x"),
                None,
            )
            .unwrap_err();
        assert!(
            e.to_string().starts_with(
                "not allowed: list kcp deployments (apps/v1) in namespace x is outside the read \
                 allow-list of PublishedResource/things"
            ),
            "{e}"
        );
        let empty = AllowListed::new(
            AllowList::new("WasmPlugin/p", vec![]),
            FixtureReads::new(&[]).unwrap(),
        );
        let e = empty.get(Side::Kcp, &cms(), Some("a"), "b").unwrap_err();
        assert!(
            e.to_string()
                .ends_with("WasmPlugin/p, which allows nothing"),
            "{e}"
        );
    }
}
