//! A registered physical cluster as kcp sees it: the `SyncTarget` object in
//! the registering workspace, and the agent side that keeps its status
//! current (per requested resource Pending / Accepted / Incompatible, and a
//! Ready condition with a heartbeat while the agent is connected).

use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams,
};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use crate::apis::PublishedResource;

pub const CRD: &str = include_str!("synctarget-crd.yaml");
/// Label on the PublishedResources a registration generates: the cluster.
pub const CLUSTER_LABEL: &str = "syncweave.dev/sync-target";
/// Annotation on each of them: the requested `resource.group` it serves.
pub const RESOURCE_ANNOTATION: &str = "syncweave.dev/resource";
/// How often the agent confirms it is connected.
pub const HEARTBEAT: Duration = Duration::from_secs(15);

pub fn resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("syncweave.dev", "v1alpha1", "SyncTarget"),
        "synctargets",
    )
}

/// One resource type a cluster syncs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requested {
    /// Plural resource name, e.g. `deployments`.
    pub resource: String,
    /// API group; empty for the core group.
    pub group: String,
    /// Kind; for types named on the command line it is derived from the
    /// plural (the cluster's discovery decides whether it exists).
    pub kind: String,
    /// Pods: copied up from the cluster (read-only in kcp), not down.
    pub upward: bool,
}

impl Requested {
    /// `resource.group`, or `resource` for the core group (as kubectl).
    pub fn id(&self) -> String {
        if self.group.is_empty() {
            self.resource.clone()
        } else {
            format!("{}.{}", self.resource, self.group)
        }
    }

    fn new(resource: &str, group: &str, kind: &str, upward: bool) -> Self {
        Requested {
            resource: resource.into(),
            group: group.into(),
            kind: kind.into(),
            upward,
        }
    }
}

/// What the old syncer synced by default: Deployments, Services and
/// Ingresses down, Pods up.
pub fn defaults() -> Vec<Requested> {
    vec![
        Requested::new("deployments", "apps", "Deployment", false),
        Requested::new("services", "", "Service", false),
        Requested::new("ingresses", "networking.k8s.io", "Ingress", false),
        Requested::new("pods", "", "Pod", true),
    ]
}

/// Parse `--resources` entries: `resource.group` (e.g.
/// `certificates.cert-manager.io`) or a bare core `resource`, optionally
/// followed by `:Kind` when the kind is not the capitalised singular
/// (`networkpolicies.networking.k8s.io:NetworkPolicy`).
pub fn parse_resource(s: &str) -> Result<Requested, String> {
    let s = s.trim();
    let (s, kind) = match s.split_once(':') {
        Some((r, k)) if !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric()) => {
            (r, Some(k))
        }
        Some(_) => {
            return Err(format!(
                "{s:?}: the part after ':' must be a Kind, e.g. NetworkPolicy"
            ));
        }
        None => (s, None),
    };
    let (resource, group) = s.split_once('.').unwrap_or((s, ""));
    let valid = |x: &str| {
        !x.is_empty()
            && x.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
    };
    if !valid(resource) || (!group.is_empty() && !valid(group)) {
        return Err(format!(
            "{s:?} is not resource.group (lower-case plural and API group, e.g. \
             certificates.cert-manager.io, or a core resource like configmaps)"
        ));
    }
    let kind = kind.map_or_else(|| kind_of(resource), str::to_string);
    Ok(Requested::new(resource, group, &kind, false))
}

/// The kind a plural most likely names: its capitalised singular
/// (`certificates` → `Certificate`). Kinds with inner capitals need `:Kind`.
fn kind_of(plural: &str) -> String {
    let singular = if let Some(s) = plural.strip_suffix("ies") {
        format!("{s}y")
    } else if ["sses", "xes", "ches", "shes", "zes"]
        .iter()
        .any(|e| plural.ends_with(e))
    {
        plural[..plural.len() - 2].to_string()
    } else {
        plural.strip_suffix('s').unwrap_or(plural).to_string()
    };
    let mut c = singular.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => singular,
    }
}

/// The requested resources of a registration: the defaults plus extra ones,
/// without duplicates.
pub fn requested(extra: &[Requested]) -> Vec<Requested> {
    let mut all = defaults();
    for r in extra {
        if !all.iter().any(|a| a.id() == r.id()) {
            all.push(r.clone());
        }
    }
    all
}

/// One entry of `status.syncedResources`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceState {
    pub resource: String,
    pub state: &'static str,
    pub reason: Option<String>,
}

/// The state of the resource a PublishedResource serves, from its status:
/// `Accepted` once its schema is in kcp, `Incompatible` when the cluster
/// cannot serve it (the agent's `InvalidResource`), else `Pending`.
pub fn state_of(pr: &PublishedResource) -> ResourceState {
    let resource = pr
        .annotations()
        .get(RESOURCE_ANNOTATION)
        .cloned()
        .unwrap_or_else(|| pr.name_any());
    let status = pr.status.as_ref();
    let ready = status
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == "Ready"));
    let (state, reason) = match ready {
        Some(c) if c.status == "False" && c.reason == "InvalidResource" => {
            ("Incompatible", Some(c.message.clone()))
        }
        _ if status
            .and_then(|s| s.resource_schema_name.as_ref())
            .is_some() =>
        {
            ("Accepted", None)
        }
        Some(c) if c.status == "False" => ("Pending", Some(c.message.clone())),
        _ => ("Pending", None),
    };
    ResourceState {
        resource,
        state,
        reason,
    }
}

fn summary(states: &[ResourceState]) -> String {
    let count = |s: &str| states.iter().filter(|r| r.state == s).count();
    let mut parts = vec![format!("{} accepted", count("Accepted"))];
    for (s, label) in [("Pending", "pending"), ("Incompatible", "incompatible")] {
        if count(s) > 0 {
            parts.push(format!("{} {label}", count(s)));
        }
    }
    parts.join(", ")
}

/// The status patch for `states`, Ready (with a heartbeat) or not.
pub fn status_patch(states: &[ResourceState], ready: bool, message: &str) -> Value {
    let now = Timestamp::now().to_string();
    json!({
        "status": {
            "summary": summary(states),
            "lastHeartbeatTime": now,
            "syncedResources": states.iter().map(|s| {
                let mut v = json!({"resource": s.resource, "state": s.state});
                if let Some(r) = &s.reason {
                    v["reason"] = json!(r);
                }
                v
            }).collect::<Vec<_>>(),
            "conditions": [{
                "type": "Ready",
                "status": if ready { "True" } else { "False" },
                "reason": if ready { "AgentConnected" } else { "AgentStopped" },
                "message": message,
                "lastTransitionTime": now,
            }],
        }
    })
}

/// Keep the SyncTarget `name` (in the APIExport's workspace, `kcp`) current
/// until `cancel` fires; then mark it not Ready.
pub async fn report(
    kcp: Client,
    service: Client,
    name: String,
    selector: String,
    cancel: CancellationToken,
) {
    let targets: Api<DynamicObject> = Api::all_with(kcp, &resource());
    let prs: Api<PublishedResource> = Api::all(service);
    let lp = ListParams::default().labels(&selector);
    let mut last_states: Vec<ResourceState> = Vec::new();
    info!(sync_target = %name, "reporting the cluster's state to kcp");
    loop {
        match prs.list(&lp).await {
            Ok(list) => {
                let mut states: Vec<ResourceState> = list.items.iter().map(state_of).collect();
                states.sort_by(|a, b| a.resource.cmp(&b.resource));
                last_states = states;
            }
            Err(e) => {
                warn!(sync_target = %name, error = %e, "cannot list PublishedResources for the SyncTarget status")
            }
        }
        let patch = status_patch(
            &last_states,
            true,
            "the syncweave agent on the cluster is connected",
        );
        match targets
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => debug!(sync_target = %name, "heartbeat"),
            Err(e) => {
                warn!(sync_target = %name, error = %e, "cannot update the SyncTarget status in kcp (is it registered? see `syncweave cluster register`)")
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(HEARTBEAT) => {}
            _ = cancel.cancelled() => break,
        }
    }
    let patch = status_patch(&last_states, false, "the syncweave agent stopped");
    let _ = targets
        .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resources_parse_and_name_like_kubectl() {
        let r = parse_resource("certificates.cert-manager.io").unwrap();
        assert_eq!(
            (r.resource.as_str(), r.group.as_str(), r.kind.as_str()),
            ("certificates", "cert-manager.io", "Certificate")
        );
        assert_eq!(r.id(), "certificates.cert-manager.io");
        assert_eq!(parse_resource("configmaps").unwrap().id(), "configmaps");
        assert_eq!(
            parse_resource("networkpolicies.networking.k8s.io:NetworkPolicy")
                .unwrap()
                .kind,
            "NetworkPolicy"
        );
        assert!(parse_resource("x.y:").is_err());
        assert_eq!(
            parse_resource("ingresses.networking.k8s.io").unwrap().kind,
            "Ingress"
        );
        let e = parse_resource("Widgets").unwrap_err();
        assert!(e.contains("resource.group"), "{e}");
        assert!(parse_resource("").is_err());
    }

    #[test]
    fn defaults_are_the_old_syncers() {
        let ids: Vec<String> = requested(&[parse_resource("pods").unwrap()])
            .iter()
            .map(Requested::id)
            .collect();
        assert_eq!(
            ids,
            [
                "deployments.apps",
                "services",
                "ingresses.networking.k8s.io",
                "pods"
            ]
        );
    }

    #[test]
    fn state_follows_the_published_resource() {
        let pr = |status: Value| -> PublishedResource {
            serde_json::from_value(json!({
                "apiVersion": "syncagent.kcp.io/v1alpha1", "kind": "PublishedResource",
                "metadata": {"name": "x", "annotations": {RESOURCE_ANNOTATION: "widgets.example.com"}},
                "spec": {"resource": {"apiGroup": "example.com", "kind": "Widget"}},
                "status": status,
            }))
            .unwrap()
        };
        let cond = |status: &str, reason: &str| {
            json!({"conditions": [{"type": "Ready", "status": status, "reason": reason,
                "message": "no kind Widget", "lastTransitionTime": "2026-01-01T00:00:00Z"}]})
        };
        assert_eq!(state_of(&pr(json!({}))).state, "Pending");
        let s = state_of(&pr(cond("False", "InvalidResource")));
        assert_eq!(
            (s.state, s.reason.as_deref()),
            ("Incompatible", Some("no kind Widget"))
        );
        let mut ok = cond("True", "Syncing");
        ok["resourceSchemaName"] = json!("vabc.widgets.example.com");
        let s = state_of(&pr(ok));
        assert_eq!(
            (s.resource.as_str(), s.state),
            ("widgets.example.com", "Accepted")
        );
        let p = status_patch(&[s], true, "ok");
        assert_eq!(p["status"]["summary"], "1 accepted");
        assert_eq!(p["status"]["conditions"][0]["status"], "True");
    }
}
