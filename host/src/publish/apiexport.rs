//! Keeping the APIExport's schema list and permission claims in line with
//! the PublishedResources. Schemas of group/resources no PublishedResource
//! manages are kept (another agent or a human may own them); permission
//! claims are only ever added.

use std::collections::BTreeMap;

use crate::apis::PublishedResource;

use kube::Client;
use kube::api::{Api, DynamicObject, PostParams};
use serde_json::{Value, json};
use tracing::info;

use super::schema::group_resource_of;
use crate::apis::kcp as kcpapi;
use crate::sync::labels::AGENT_NAME_LABEL;

#[derive(Debug, thiserror::Error)]
#[error(
    "{action} APIExport {name}: {source}{}",
    crate::kcp::forbidden_hint(source)
)]
pub struct ExportError {
    action: &'static str,
    name: String,
    #[source]
    source: kube::Error,
}

/// One permission claim: a group/resource in consumers' workspaces, with
/// the identity hash of the export owning it (empty for built-in types).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    pub group: String,
    pub resource: String,
    pub identity_hash: String,
}

impl Claim {
    pub fn new(group: &str, resource: &str) -> Claim {
        Claim {
            group: group.to_string(),
            resource: resource.to_string(),
            identity_hash: String::new(),
        }
    }
}

/// Update the export so it lists `schemas` (name per group/resource) and
/// claims `claims`. Returns the schemas it lists now.
pub async fn reconcile(
    client: &Client,
    export_name: &str,
    agent_name: &str,
    schemas: &BTreeMap<String, String>,
    claims: &[Claim],
) -> Result<Vec<String>, ExportError> {
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &kcpapi::apiexport());
    let err = |action| {
        move |source| ExportError {
            action,
            name: export_name.to_string(),
            source,
        }
    };
    let export = api.get(export_name).await.map_err(err("reading"))?;
    let mut obj = serde_json::to_value(&export).expect("serializes");

    let existing: Vec<String> = obj["spec"]["latestResourceSchemas"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let managed: Vec<&str> = schemas.keys().map(String::as_str).collect();
    let mut wanted: Vec<String> = existing
        .iter()
        .filter(|s| group_resource_of(s).is_none_or(|gr| !managed.contains(&gr)))
        .cloned()
        .chain(schemas.values().cloned())
        .collect();
    wanted.sort();
    wanted.dedup();

    let mut current_claims: Vec<Value> = obj["spec"]["permissionClaims"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut added_claims = Vec::new();
    for claim in claims {
        let present = current_claims.iter().any(|c| {
            c["group"].as_str().unwrap_or("") == claim.group
                && c["resource"] == claim.resource.as_str()
                && c["identityHash"].as_str().unwrap_or("") == claim.identity_hash
        });
        if !present {
            let mut c = json!({"group": claim.group, "resource": claim.resource, "all": true});
            if !claim.identity_hash.is_empty() {
                c["identityHash"] = json!(claim.identity_hash);
            }
            current_claims.push(c);
            // As upstream words it: `group/resource`, or `resource` for core.
            added_claims.push(match claim.group.as_str() {
                "" => claim.resource.clone(),
                g => format!("{g}/{}", claim.resource),
            });
        }
    }
    current_claims.sort_by_key(|c| {
        (
            c["group"].as_str().unwrap_or("").to_string(),
            c["resource"].as_str().unwrap_or("").to_string(),
        )
    });

    let annotated = obj["metadata"]["annotations"][AGENT_NAME_LABEL] == agent_name;
    if wanted == existing && added_claims.is_empty() && annotated {
        return Ok(wanted);
    }
    let added: Vec<&String> = wanted.iter().filter(|s| !existing.contains(s)).collect();
    let removed: Vec<&String> = existing.iter().filter(|s| !wanted.contains(s)).collect();
    obj["spec"]["latestResourceSchemas"] = json!(wanted);
    if !current_claims.is_empty() {
        obj["spec"]["permissionClaims"] = Value::Array(current_claims);
    }
    if !obj["metadata"]["annotations"].is_object() {
        obj["metadata"]["annotations"] = json!({});
    }
    obj["metadata"]["annotations"][AGENT_NAME_LABEL] = json!(agent_name);
    let updated: DynamicObject = serde_json::from_value(obj).expect("valid object");
    let written = api
        .replace(export_name, &PostParams::default(), &updated)
        .await
        .map_err(err("updating"))?;
    info!(export = export_name, ?added, ?removed, added_claims = ?added_claims, "updated APIExport");
    // Events on the APIExport, as upstream's (best effort, like all Events).
    let list = |v: &[&String]| v.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ");
    let mut events = Vec::new();
    if !added.is_empty() {
        events.push((
            false,
            "AddingResourceSchemas",
            format!("Added new resource schema(s) {}.", list(&added)),
        ));
    }
    if !removed.is_empty() {
        events.push((
            true,
            "RemovingResourceSchemas",
            format!("Removed resource schema(s) {}.", list(&removed)),
        ));
    }
    if !added_claims.is_empty() {
        events.push((
            false,
            "AddingPermissionClaims",
            format!(
                "Added new permission claim(s) for all {}.",
                added_claims.join(", ")
            ),
        ));
    }
    for (warning, reason, message) in events {
        let event = crate::sync::events::event_for(&written, agent_name, warning, reason, &message);
        crate::sync::events::post(client.clone(), event).await;
    }
    Ok(wanted)
}

/// The APIExport's permission claims, as upstream: events always;
/// namespaces as soon as one resource filters on them, copies keys from
/// them (`managedNamespaceMetadata.fromConsumerNamespace`), lets plugins
/// read them (`reads.consumerNamespace`) or has related resources;
/// LogicalClusters with workspace paths, workspace-deletion handling or
/// plugin reads of them (`reads.logicalCluster`); and every related
/// resource's kcp-side type that the export does not own (`schemas`, by
/// group/resource), with its identity hash.
pub fn permission_claims(
    prs: &[&PublishedResource],
    schemas: &BTreeMap<String, String>,
) -> Vec<Claim> {
    let mut claims = vec![Claim::new("", "events")];
    let namespaces = Claim::new("", "namespaces");
    let related: Vec<_> = prs
        .iter()
        .flat_map(|pr| pr.spec.related.iter().flatten())
        .collect();
    let namespace_filter = prs.iter().any(|pr| {
        pr.spec
            .filter
            .as_ref()
            .is_some_and(|f| f.namespace.is_some())
            || pr
                .spec
                .managed_namespace_metadata
                .as_ref()
                .is_some_and(|m| m.from_consumer_namespace.is_some())
            || pr
                .spec
                .reads
                .as_ref()
                .is_some_and(|r| r.consumer_namespace == Some(true))
    });
    if namespace_filter || !related.is_empty() {
        claims.push(namespaces);
    }
    if prs.iter().any(|pr| {
        pr.spec.enable_workspace_paths == Some(true)
            || pr
                .spec
                .lifecycle
                .as_ref()
                .is_some_and(|l| l.workspace_deletion.is_some())
            || pr
                .spec
                .reads
                .as_ref()
                .is_some_and(|r| r.logical_cluster == Some(true))
    }) {
        claims.push(Claim::new("core.kcp.io", "logicalclusters"));
    }
    for r in related {
        let (group, _, resource) = r.kcp_gvr();
        // Schema names spell the core group `core`.
        let key_group = if group.is_empty() {
            "core"
        } else {
            group.as_str()
        };
        let owned = schemas.contains_key(&format!("{resource}.{key_group}"));
        let claim = Claim {
            group,
            resource,
            identity_hash: r.identity_hash.clone().unwrap_or_default(),
        };
        if !owned && !claims.contains(&claim) {
            claims.push(claim);
        }
    }
    claims
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pr(yaml: &str) -> PublishedResource {
        serde_yaml_ng::from_str(yaml).unwrap()
    }

    fn names(claims: &[Claim]) -> Vec<String> {
        let mut v: Vec<String> = claims
            .iter()
            .map(|c| format!("{}/{}/{}", c.group, c.resource, c.identity_hash))
            .collect();
        v.sort();
        v
    }

    #[test]
    fn claims_follow_related_resources() {
        let plain =
            pr("{metadata: {name: a}, spec: {resource: {apiGroup: example.com, kind: CronTab}}}");
        let schemas = BTreeMap::from([(
            "crontabs.example.com".to_string(),
            "v1.crontabs.example.com".to_string(),
        )]);
        assert_eq!(names(&permission_claims(&[&plain], &schemas)), ["/events/"]);
        let related = pr(r#"
metadata: {name: b}
spec:
  resource: {apiGroup: example.com, kind: CronTab}
  related:
    - {identifier: s, origin: service, kind: Secret, object: {reference: {path: a}}}
    - {identifier: c, origin: kcp, kind: ConfigMap, object: {reference: {path: a}}}
    - {identifier: o, origin: service, group: example.com, version: v1, resource: crontabs, object: {reference: {path: a}}}
    - {identifier: f, origin: kcp, group: other.io, version: v1, resource: things, identityHash: abc, object: {reference: {path: a}}}
    - {identifier: p, origin: service, kind: Secret, projection: {resource: configmaps}, object: {reference: {path: a}}}
"#);
        assert_eq!(
            names(&permission_claims(&[&plain, &related], &schemas)),
            [
                "/configmaps/",
                "/events/",
                "/namespaces/",
                "/secrets/",
                "other.io/things/abc"
            ]
        );
        // A core type the export itself serves (pods published by another
        // PublishedResource) is owned, not claimed.
        let pods = pr(r#"
metadata: {name: c}
spec:
  resource: {apiGroup: apps, kind: Deployment}
  related:
    - {identifier: pods, origin: service, version: v1, resource: pods, object: {reference: {path: a}}}
"#);
        let owned = BTreeMap::from([("pods.core".to_string(), "v1.pods.core".to_string())]);
        assert_eq!(
            names(&permission_claims(&[&pods], &owned)),
            ["/events/", "/namespaces/"]
        );
    }

    #[test]
    fn plugin_reads_claim_what_they_read() {
        let claims = |reads: &str| {
            let p = pr(&format!(
                "{{metadata: {{name: a}}, spec: {{resource: {{apiGroup: example.com, kind: \
                 CronTab}}, reads: {reads}}}}}"
            ));
            names(&permission_claims(&[&p], &BTreeMap::new()))
        };
        assert_eq!(
            claims("{consumerNamespace: true}"),
            ["/events/", "/namespaces/"]
        );
        assert_eq!(
            claims("{logicalCluster: true}"),
            ["/events/", "core.kcp.io/logicalclusters/"]
        );
        assert_eq!(claims("{logicalCluster: false}"), ["/events/"]);
    }
}
