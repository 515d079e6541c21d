//! The manifest `syncweave cluster register` writes for the physical
//! cluster: everything the agent needs there, in one file for
//! `kubectl apply -f`.

use serde_json::{Value, json};

use super::target::{CLUSTER_LABEL, RESOURCE_ANNOTATION, Requested};

pub const PUBLISHED_RESOURCE_CRD: &str =
    include_str!("../../../charts/syncweave/crds/syncagent.kcp.io_publishedresources.yaml");
pub const WASMPLUGIN_CRD: &str =
    include_str!("../../../charts/syncweave/crds/syncweave.dev_wasmplugins.yaml");

/// Where the kcp kubeconfig Secret is mounted in the agent's container.
pub const KCP_KUBECONFIG_DIR: &str = "/etc/syncweave/kcp";

pub struct Params<'a> {
    /// The registered cluster's name (also the APIExport's and the agent's).
    pub name: &'a str,
    /// Namespace on the physical cluster for the agent.
    pub namespace: &'a str,
    pub image: &'a str,
    /// A kubeconfig for the registering kcp workspace, with the dedicated
    /// identity's token.
    pub kcp_kubeconfig: &'a str,
    pub resources: &'a [Requested],
}

/// The ServiceAccount (and RBAC subject) of the agent on the cluster.
pub fn service_account(name: &str) -> String {
    format!("syncweave-{name}")
}

/// The name of the PublishedResource serving `r`.
pub fn published_resource_name(cluster: &str, r: &Requested, all: &[Requested]) -> String {
    let clash = all.iter().filter(|o| o.resource == r.resource).count() > 1;
    if clash && !r.group.is_empty() {
        format!("{cluster}-{}-{}", r.resource, r.group.replace('.', "-"))
    } else {
        format!("{cluster}-{}", r.resource)
    }
}

/// Related `pods` of a Deployment: the Pods its selector matches (up to
/// four matchLabels; more only widen the match), copied up into the
/// consumer's workspace next to the Deployment.
fn pods_of_deployment() -> Value {
    let labels = ".LocalObject.spec.selector.matchLabels";
    let mut match_labels = serde_json::Map::new();
    for i in 0..4 {
        let key = format!(
            "{{{{ $k := {labels} | keys | sortAlpha }}}}{{{{ if gt (len $k) {i} }}}}{{{{ index $k {i} }}}}{{{{ end }}}}"
        );
        let value = format!(
            "{{{{ $m := {labels} }}}}{{{{ $k := $m | keys | sortAlpha }}}}{{{{ if gt (len $k) {i} }}}}{{{{ index $m (index $k {i}) }}}}{{{{ end }}}}"
        );
        match_labels.insert(key, json!(value));
    }
    json!([{
        "identifier": "pods",
        "origin": "service",
        "version": "v1",
        "resource": "pods",
        // Copies keep the Pod's name.
        "object": {"selector": {
            "matchLabels": match_labels,
            "rewrite": {"template": {"template": "{{ .Value }}"}},
        }},
        // A new or changed Pod re-checks the Deployments at once.
        "watch": {"bySelector": {}},
        "syncStatus": true,
        "cleanup": true,
    }])
}

fn published_resource(p: &Params, r: &Requested) -> Value {
    let mut spec = json!({"resource": {"apiGroup": r.group, "kind": r.kind}});
    if r.upward {
        // Pods are served in kcp (for the related copies) but never synced
        // down: they come from the cluster.
        spec["synchronization"] = json!({"enabled": false});
    }
    if r.resource == "deployments" && r.group == "apps" {
        spec["related"] = pods_of_deployment();
    }
    json!({
        "apiVersion": "syncagent.kcp.io/v1alpha1",
        "kind": "PublishedResource",
        "metadata": {
            "name": published_resource_name(p.name, r, p.resources),
            "labels": {CLUSTER_LABEL: p.name},
            "annotations": {RESOURCE_ANNOTATION: r.id()},
        },
        "spec": spec,
    })
}

fn rbac(p: &Params) -> Vec<Value> {
    let sa = service_account(p.name);
    let mut rules = vec![
        json!({"apiGroups": ["syncagent.kcp.io"], "resources": ["publishedresources"], "verbs": ["get", "list", "watch"]}),
        json!({"apiGroups": ["syncagent.kcp.io"], "resources": ["publishedresources/status"], "verbs": ["get", "update", "patch"]}),
        json!({"apiGroups": ["syncweave.dev"], "resources": ["wasmplugins"], "verbs": ["get", "list", "watch"]}),
        json!({"apiGroups": ["syncweave.dev"], "resources": ["wasmplugins/status"], "verbs": ["patch"]}),
        json!({"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"], "verbs": ["get", "list", "watch"]}),
        json!({"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get", "list", "watch", "create", "patch"]}),
        json!({"apiGroups": ["", "events.k8s.io"], "resources": ["events"], "verbs": ["create", "patch"]}),
    ];
    for r in p.resources {
        let verbs = if r.upward {
            json!(["get", "list", "watch"])
        } else {
            json!([
                "get", "list", "watch", "create", "update", "patch", "delete"
            ])
        };
        rules.push(json!({"apiGroups": [r.group], "resources": [r.resource], "verbs": verbs}));
    }
    let labels = json!({CLUSTER_LABEL: p.name});
    vec![
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": sa, "labels": labels},
            "rules": rules,
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": sa, "labels": labels},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": sa},
            "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": p.namespace}],
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": sa, "namespace": p.namespace, "labels": labels},
            "rules": [
                // State Secrets (cached: list/watch), the kcp kubeconfig.
                {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list", "watch", "create", "update"]},
                {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "create", "patch"]},
            ],
        }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": sa, "namespace": p.namespace, "labels": labels},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": sa},
            "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": p.namespace}],
        }),
    ]
}

/// The agent's command line inside the container (also what the e2e test
/// runs as a process).
pub fn agent_args(p: &Params) -> Vec<String> {
    [
        "sync".to_string(),
        format!("--kcp-kubeconfig={KCP_KUBECONFIG_DIR}/kubeconfig"),
        format!("--namespace={}", p.namespace),
        format!("--apiexportendpointslice-ref={}", p.name),
        format!("--agent-name={}", p.name),
        format!("--published-resource-selector={CLUSTER_LABEL}={}", p.name),
        format!("--sync-target={}", p.name),
        "--enable-leader-election=true".to_string(),
        "--health-address=0.0.0.0:8081".to_string(),
        "--metrics-address=0.0.0.0:8085".to_string(),
    ]
    .into()
}

fn deployment(p: &Params) -> Value {
    let sa = service_account(p.name);
    let labels = json!({"app.kubernetes.io/name": "syncweave", CLUSTER_LABEL: p.name});
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": sa, "namespace": p.namespace, "labels": labels},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "serviceAccountName": sa,
                    "securityContext": {"runAsNonRoot": true},
                    "containers": [{
                        "name": "syncweave",
                        "image": p.image,
                        "args": agent_args(p),
                        "ports": [
                            {"name": "metrics", "containerPort": 8085},
                            {"name": "health", "containerPort": 8081},
                        ],
                        "livenessProbe": {"httpGet": {"path": "/healthz", "port": "health"}},
                        "readinessProbe": {"httpGet": {"path": "/readyz", "port": "health"}},
                        "volumeMounts": [{"name": "kcp-kubeconfig", "mountPath": KCP_KUBECONFIG_DIR, "readOnly": true}],
                        "securityContext": {"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true},
                    }],
                    "volumes": [{"name": "kcp-kubeconfig", "secret": {"secretName": format!("{sa}-kcp-kubeconfig")}}],
                },
            },
        },
    })
}

/// Every document of the manifest, in apply order (CRDs first).
pub fn documents(p: &Params) -> Result<Vec<Value>, serde_yaml_ng::Error> {
    let mut docs: Vec<Value> = Vec::new();
    for crd in [PUBLISHED_RESOURCE_CRD, WASMPLUGIN_CRD] {
        docs.push(serde_yaml_ng::from_str(crd)?);
    }
    let sa = service_account(p.name);
    docs.push(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": p.namespace}}));
    docs.push(json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": sa, "namespace": p.namespace}}));
    docs.extend(rbac(p));
    docs.push(json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": format!("{sa}-kcp-kubeconfig"), "namespace": p.namespace},
        "type": "Opaque",
        "stringData": {"kubeconfig": p.kcp_kubeconfig},
    }));
    for r in p.resources {
        docs.push(published_resource(p, r));
    }
    docs.push(deployment(p));
    Ok(docs)
}

/// The manifest as YAML documents.
pub fn render(p: &Params) -> Result<String, serde_yaml_ng::Error> {
    let mut out = format!(
        "# Generated by `syncweave cluster register {name}`: apply it to the physical cluster\n\
         # (kubectl apply -f). It holds a kcp token: keep it like a Secret.\n",
        name = p.name
    );
    for d in documents(p)? {
        out.push_str("---\n");
        out.push_str(&serde_yaml_ng::to_string(&d)?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::target::{parse_resource, requested};
    use super::*;

    #[test]
    fn manifest_has_everything_the_agent_needs() {
        let resources = requested(&[parse_resource("widgets.example.com").unwrap()]);
        let p = Params {
            name: "gpu-1",
            namespace: "syncweave-gpu-1",
            image: "ghcr.io/syncweave/syncweave:test",
            kcp_kubeconfig: "apiVersion: v1\nkind: Config\n",
            resources: &resources,
        };
        let docs = documents(&p).unwrap();
        let kinds: Vec<&str> = docs.iter().filter_map(|d| d["kind"].as_str()).collect();
        assert_eq!(
            kinds,
            [
                "CustomResourceDefinition",
                "CustomResourceDefinition",
                "Namespace",
                "ServiceAccount",
                "ClusterRole",
                "ClusterRoleBinding",
                "Role",
                "RoleBinding",
                "Secret",
                "PublishedResource",
                "PublishedResource",
                "PublishedResource",
                "PublishedResource",
                "PublishedResource",
                "Deployment"
            ]
        );
        let prs: Vec<&Value> = docs
            .iter()
            .filter(|d| d["kind"] == "PublishedResource")
            .collect();
        let names: Vec<&str> = prs
            .iter()
            .filter_map(|d| d["metadata"]["name"].as_str())
            .collect();
        assert_eq!(
            names,
            [
                "gpu-1-deployments",
                "gpu-1-services",
                "gpu-1-ingresses",
                "gpu-1-pods",
                "gpu-1-widgets"
            ]
        );
        assert_eq!(prs[3]["spec"]["synchronization"]["enabled"], false);
        assert_eq!(prs[0]["spec"]["related"][0]["resource"], "pods");
        let dep = docs.last().unwrap();
        let args = dep["spec"]["template"]["spec"]["containers"][0]["args"]
            .as_array()
            .unwrap();
        assert!(args.contains(&json!("--sync-target=gpu-1")));
        assert!(args.contains(&json!(
            "--published-resource-selector=syncweave.dev/sync-target=gpu-1"
        )));
        // Valid YAML all the way through.
        let text = render(&p).unwrap();
        assert_eq!(text.matches("\n---\n").count(), docs.len());
    }
}
