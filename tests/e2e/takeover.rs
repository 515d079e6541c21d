//! A provider swaps binaries: syncweave hands its objects to upstream
//! api-syncagent v0.7.0 (the real binary, built from Go modules by
//! `tests/takeover.sh`) and takes them back, under one agent name, with
//! the default lifecycle. Each agent must carry on with the copies, state
//! and finalizers the other left: spec down, status up, deletions, new
//! objects, and never a second copy.
//!
//! Ignored in the test command (building upstream takes minutes); run by
//! `tests/takeover.sh`.

use std::path::PathBuf;
use std::time::Duration;

use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;
use syncweave::sync::labels::{FINALIZER, REMOTE_CLUSTER_LABEL};
use syncweave_tests::env::*;
use syncweave_tests::*;

const WAIT: Duration = Duration::from_secs(90);

/// The upstream binary, from `SYNCWEAVE_UPSTREAM_BIN` (set by
/// tests/takeover.sh).
fn upstream() -> PathBuf {
    PathBuf::from(std::env::var_os("SYNCWEAVE_UPSTREAM_BIN").expect(
        "SYNCWEAVE_UPSTREAM_BIN: the path of upstream api-syncagent (tests/takeover.sh builds it)",
    ))
}

/// Whoever runs now syncs a spec change of `name` into its existing copy
/// (same uid: patched, not recreated).
async fn spec_change_reaches_the_copy(
    kcp: &Api<DynamicObject>,
    copies: &Api<DynamicObject>,
    name: &str,
    image: &str,
) {
    let copy_name = default_copy_name("default", name);
    let before = copies.get(&copy_name).await.unwrap();
    kcp.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"image": image}})),
    )
    .await
    .unwrap();
    let after = eventually(
        &format!("{name}'s copy with image {image}"),
        WAIT,
        || async {
            let o = get_opt(copies, &copy_name).await?;
            Ok(o.filter(|o| str_at(o, "/spec/image") == Some(image)))
        },
    )
    .await;
    assert_eq!(
        after.metadata.uid, before.metadata.uid,
        "{name}'s copy was recreated, not patched"
    );
}

/// Whoever runs now syncs the copy's status up to kcp.
async fn status_reaches_kcp(
    kcp: &Api<DynamicObject>,
    copies: &Api<DynamicObject>,
    name: &str,
    phase: &str,
) {
    let copy_name = default_copy_name("default", name);
    let mut copy = copies.get(&copy_name).await.unwrap();
    copy.data["status"] = json!({"phase": phase});
    copies
        .replace_status(&copy_name, &PostParams::default(), &copy)
        .await
        .unwrap();
    eventually(&format!("{name}'s status {phase} in kcp"), WAIT, || async {
        let o = get_opt(kcp, name).await?;
        Ok(o.filter(|o| str_at(o, "/status/phase") == Some(phase)))
    })
    .await;
}

/// Whoever runs now creates the copy of a new object.
async fn new_object_is_copied(kcp: &Api<DynamicObject>, copies: &Api<DynamicObject>, name: &str) {
    create(kcp, crontab(name, "img")).await;
    eventually(&format!("the copy of new object {name}"), WAIT, || async {
        get_opt(copies, &default_copy_name("default", name)).await
    })
    .await;
}

/// Whoever runs now deletes the copy of a deleted object and releases the
/// finalizer, so the kcp object goes.
async fn deletion_is_carried_out(
    kcp: &Api<DynamicObject>,
    copies: &Api<DynamicObject>,
    name: &str,
) {
    let o = kcp.get(name).await.unwrap();
    assert!(
        o.metadata
            .finalizers
            .iter()
            .flatten()
            .any(|f| f == FINALIZER),
        "{name} has no {FINALIZER} to hold it"
    );
    kcp.delete(name, &DeleteParams::default()).await.unwrap();
    wait_gone(
        copies,
        &default_copy_name("default", name),
        &format!("{name}'s copy deleted"),
    )
    .await;
    wait_gone(kcp, name, &format!("{name} deleted in kcp")).await;
}

/// One copy per kcp object of the consumer, never two.
async fn one_copy_each(copies: &Api<DynamicObject>, cluster: &str, names: &[&str]) {
    let listed = copies
        .list(&ListParams::default().labels(&format!("{REMOTE_CLUSTER_LABEL}={cluster}")))
        .await
        .unwrap();
    let mut got: Vec<String> = listed
        .items
        .iter()
        .filter_map(|o| o.metadata.name.clone())
        .collect();
    got.sort();
    let mut want: Vec<String> = names
        .iter()
        .map(|n| default_copy_name("default", n))
        .collect();
    want.sort();
    assert_eq!(got, want, "copies on the service cluster");
}

/// What upstream v0.7.0 needs in the provider workspace beyond
/// docs/rbac/kcp-sync.yaml (its docs/content/getting-started.md, "kcp RBAC").
fn upstream_kcp_rbac() -> String {
    format!(
        r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {{name: e2e-upstream-extra}}
rules:
  - apiGroups: [core.kcp.io]
    resources: [logicalclusters]
    resourceNames: [cluster]
    verbs: [get]
  - apiGroups: [apis.kcp.io]
    resources: [apiexports]
    resourceNames: ["{EXPORT}"]
    verbs: [get, list, watch, patch, update]
  - apiGroups: [apis.kcp.io]
    resources: [apiresourceschemas]
    verbs: [get, list, watch, create]
  # Its endpoint-slice informer lists every slice (not one by name).
  - apiGroups: [apis.kcp.io]
    resources: [apiexportendpointslices]
    verbs: [get, list, watch]
  - apiGroups: [""]
    resources: [events]
    verbs: [get, create, patch, update]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {{name: e2e-upstream-extra}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: e2e-upstream-extra}}
subjects:
  - {{apiGroup: rbac.authorization.k8s.io, kind: User, name: {AGENT_KCP_USER}}}
"#
    )
}

/// What upstream's chart grants on the service cluster beyond syncweave's
/// (its getting-started, "Service Cluster RBAC": CRDs, Namespaces and
/// Secrets, and Events): a provider handing back reinstalls upstream's
/// chart, which brings it.
const UPSTREAM_SERVICE_RBAC: &str = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: e2e-upstream-chart}
rules:
  - apiGroups: [apiextensions.k8s.io]
    resources: [customresourcedefinitions]
    verbs: [get, list, watch]
  - apiGroups: [""]
    resources: [namespaces]
    verbs: [get, list, watch, create]
  - apiGroups: [""]
    resources: [secrets]
    verbs: [get, list, watch, create, update, patch, delete]
  - apiGroups: [""]
    resources: [events]
    verbs: [get, create, patch, update]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: e2e-upstream-chart}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: e2e-upstream-chart}
subjects:
  - {kind: ServiceAccount, name: syncweave, namespace: syncweave}
"#;

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs upstream api-syncagent: run tests/takeover.sh"]
async fn hands_over_to_upstream_and_takes_back() {
    let upstream = upstream();
    let mut env = Env::start("takeover", crate::binary()).await;
    env.publish().await;
    let (consumer, client) = env.consumer("consumer").await;
    let kcp = crontabs(&client, "default");
    let copies = crontabs(&env.service_client, &consumer.cluster);

    // syncweave syncs two objects.
    for name in ["alpha", "beta"] {
        new_object_is_copied(&kcp, &copies, name).await;
    }
    status_reaches_kcp(&kcp, &copies, "alpha", "BySyncweave").await;

    // 1. The provider swaps in upstream's binary under the same name, with
    //    the kcp permissions upstream's getting-started asks for beyond
    //    syncweave's (the provider workspace's LogicalCluster, list/watch
    //    of the export and schemas).
    let provider = env.kcp.client(&env.provider.path).await.unwrap();
    apply_yaml(&provider, &upstream_kcp_rbac()).await.unwrap();
    apply_yaml(&env.service_client, UPSTREAM_SERVICE_RBAC)
        .await
        .unwrap();
    env.start_upstream_agent(&upstream);
    spec_change_reaches_the_copy(&kcp, &copies, "alpha", "by-upstream").await;
    status_reaches_kcp(&kcp, &copies, "alpha", "ByUpstream").await;
    new_object_is_copied(&kcp, &copies, "gamma").await;
    deletion_is_carried_out(&kcp, &copies, "beta").await;
    one_copy_each(&copies, &consumer.cluster, &["alpha", "gamma"]).await;

    // 2. And back to syncweave.
    env.start_agent(&[]);
    spec_change_reaches_the_copy(&kcp, &copies, "gamma", "by-syncweave").await;
    spec_change_reaches_the_copy(&kcp, &copies, "alpha", "by-syncweave-again").await;
    status_reaches_kcp(&kcp, &copies, "gamma", "BySyncweaveAgain").await;
    new_object_is_copied(&kcp, &copies, "delta").await;
    deletion_is_carried_out(&kcp, &copies, "alpha").await;
    one_copy_each(&copies, &consumer.cluster, &["delta", "gamma"]).await;
}
