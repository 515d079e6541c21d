//! Keeping the APIExport's schema list and permission claims in line with
//! the PublishedResources. Schemas of group/resources no PublishedResource
//! manages are kept (another agent or a human may own them); permission
//! claims are only ever added.

use std::collections::BTreeMap;

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
/// claims `claims`. Returns whether anything changed.
pub async fn reconcile(
    client: &Client,
    export_name: &str,
    agent_name: &str,
    schemas: &BTreeMap<String, String>,
    claims: &[Claim],
) -> Result<bool, ExportError> {
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
        return Ok(false);
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
    Ok(true)
}
