//! The init role's lifecycle features against a real kcp: init-agent
//! v0.2's `initialization.kcp.io/wait-for-ready`, several InitTargets of one
//! WorkspaceType in one pass, the `init-agent.kcp.io` Lease and a URL-path
//! `--config-workspace`; and syncweave's terminators (`spec.termination`),
//! with the InitTarget status and Events that say what a workspace waits
//! for or fails on.

use kube::api::{Patch, PatchParams};
use serde_json::{Value, json};
use syncweave_tests::*;

use syncweave_tests::agent::strip_ansi;

use crate::init::{InitEnv, WAIT, WORKSPACE_TYPE, configmap};

const CRD_ANNOTATED: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
  annotations:
    initialization.kcp.io/wait-for-ready: Established
spec:
  group: example.com
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
"#;

/// An entry of the InitTarget's `status.<list>` for workspace `cluster`.
fn entry<'a>(status: &'a Value, list: &str, cluster: &str) -> Option<&'a Value> {
    status[list]["workspaces"]
        .as_array()?
        .iter()
        .find(|e| e["cluster"] == cluster)
}

/// (i) Upstream's wait_for_ready e2e: a CRD annotated `wait-for-ready:
/// Established` and an object of it in one template. The workspace is
/// initialized, the CRD is Established and keeps its annotation.
#[tokio::test(flavor = "multi_thread")]
async fn init_crd_waits_for_established() {
    let mut env = InitEnv::start("init-wfr-crd").await;
    env.template(
        "widgets",
        &format!(
            "{CRD_ANNOTATED}---\napiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: first\n  namespace: default\nspec:\n  owner: \"{{{{ .ClusterPath }}}}\"\n"
        ),
    )
    .await;
    env.target("init-wfr", &["widgets"], None).await;
    env.start_agent(&[]);
    env.create_typed_workspace("wfr").await;
    let ws = env.wait_initialized("wfr").await;

    let client = kcp().client(&ws.path).await.unwrap();
    let crd = dynamic_api(
        &client,
        &gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
        "customresourcedefinitions",
        None,
    )
    .get("widgets.example.com")
    .await
    .unwrap();
    let established = crd
        .data
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Established" && c["status"] == "True");
    assert!(established, "{:?}", crd.data.get("status"));
    assert_eq!(
        crd.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("initialization.kcp.io/wait-for-ready"))
            .map(String::as_str),
        Some("Established"),
        "the annotation stays on the object, as upstream"
    );
    let widget = dynamic_api(
        &client,
        &gvk("example.com", "v1", "Widget"),
        "widgets",
        Some("default"),
    )
    .get("first")
    .await
    .unwrap();
    assert_eq!(str_at(&widget, "/spec/owner"), Some(ws.path.as_str()));
}

/// (ii) A Deployment-like object annotated `wait-for-ready: Available`:
/// the initializer stays while the object is not available (the
/// InitTarget's status and an Event say what the workspace waits for), and
/// goes once something in the workspace sets the condition.
#[tokio::test(flavor = "multi_thread")]
async fn init_initializer_stays_until_available() {
    let mut env = InitEnv::start("init-wfr-avail").await;
    env.template(
        "app",
        &format!(
            "{CRD_ANNOTATED}---\napiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: web\n  namespace: default\n  annotations:\n    initialization.kcp.io/wait-for-ready: Available\nspec:\n  replicas: 1\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: after\n  namespace: default\n"
        ),
    )
    .await;
    env.target("init-avail", &["app"], None).await;
    env.start_agent(&[]);
    env.create_typed_workspace("avail").await;
    let cluster = env.cluster_of("avail").await;

    let status = eventually("the wait in the InitTarget's status", WAIT, || async {
        let s = env.target_status("init-avail").await?;
        Ok(entry(&s, "waiting", &cluster)
            .filter(|e| e["condition"] == "Available")
            .cloned())
    })
    .await;
    assert_eq!(status["reason"], "WaitingForCondition", "{status}");
    assert_eq!(status["object"], "Widget default/web", "{status}");
    assert_eq!(status["phase"], "Initializing", "{status}");
    let note = env
        .wait_event("init-avail", "Normal", "WaitingForCondition")
        .await;
    assert!(note.contains("Available"), "{note}");
    // Not ready: the initializer is still there (the agent has seen the
    // object and found it not ready: that is what the status says).
    let (phase, inits, _) = env.lifecycle("avail").await.unwrap();
    assert_eq!(phase, "Initializing");
    assert!(inits.contains(&env.initializer()), "{inits:?}");
    let target = env.target_status("init-avail").await.unwrap();
    assert_eq!(
        target["conditions"][0]["status"], "True",
        "waiting is not failing: {target}"
    );

    // The wait holds back only the initializer: the object after it in the
    // template exists already.
    let vw = env.vw_url("/initializingworkspaces/").await;
    let client = env.vw_client(&vw, &cluster).await;
    configmap(&client, "default", "after").await;

    // What a controller in the workspace would do: set Available (through
    // the initializing virtual workspace, the only way in for now).
    dynamic_api(
        &client,
        &gvk("example.com", "v1", "Widget"),
        "widgets",
        Some("default"),
    )
    .patch_status(
        "web",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"conditions": [{
            "type": "Available", "status": "True", "reason": "MinimumReplicasAvailable",
            "message": "up", "lastTransitionTime": "2026-01-01T00:00:00Z",
        }]}})),
    )
    .await
    .expect("set Available");
    env.wait_initialized("avail").await;
    let status = eventually("the InitTarget to count it", WAIT, || async {
        let s = env.target_status("init-avail").await?;
        Ok((s["workspacesInitialized"] == json!(1)).then_some(s))
    })
    .await;
    assert_eq!(status["waiting"], Value::Null, "{status}");
}

/// (v) A `wait-for-ready` condition that never appears: the workspace stays
/// Initializing, and the InitTarget's status and Events say what it waits
/// for (not silence); fixing the template lets it go.
#[tokio::test(flavor = "multi_thread")]
async fn init_condition_that_never_appears_is_reported() {
    let mut env = InitEnv::start("init-wfr-never").await;
    let waits = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: default\n  annotations:\n    initialization.kcp.io/wait-for-ready: NeverHappens\n";
    env.template("never", waits).await;
    env.target("init-never", &["never"], None).await;
    env.start_agent(&[]);
    env.create_typed_workspace("never").await;
    let cluster = env.cluster_of("never").await;

    let e = eventually("the wait in the InitTarget's status", WAIT, || async {
        let s = env.target_status("init-never").await?;
        Ok(entry(&s, "waiting", &cluster).cloned())
    })
    .await;
    assert_eq!(e["condition"], "NeverHappens", "{e}");
    assert_eq!(e["object"], "ConfigMap default/settings", "{e}");
    assert!(
        e["message"].as_str().unwrap().contains("no such condition"),
        "{e}"
    );
    let note = env
        .wait_event("init-never", "Normal", "WaitingForCondition")
        .await;
    assert!(note.contains("NeverHappens"), "{note}");
    // It keeps checking (every pass re-reads the object), and the workspace
    // keeps waiting.
    eventually("the agent to check again", WAIT, || async {
        let checks = env
            .agent_log()
            .lines()
            .filter(|l| l.contains("Waiting for condition"))
            .count();
        Ok((checks >= 3).then_some(()))
    })
    .await;
    let (phase, inits, _) = env.lifecycle("never").await.unwrap();
    assert_eq!(phase, "Initializing");
    assert!(inits.contains(&env.initializer()), "{inits:?}");

    // Without the annotation nothing is awaited: the next pass (started at
    // once by the template change) finishes.
    env.template(
        "never",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: default\n",
    )
    .await;
    env.wait_initialized("never").await;
}

/// (iii) Two InitTargets of one WorkspaceType, one naming it by path and
/// one by logical-cluster name: one worker, both sources applied in one
/// pass, the initializer removed once. The agent reads its config
/// workspace through a `/`-prefixed URL path (`--config-workspace
/// /clusters/<path>`).
#[tokio::test(flavor = "multi_thread")]
async fn init_two_targets_of_one_type_in_one_pass() {
    let mut env = InitEnv::start("init-agg").await;
    env.template(
        "a",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-a\n  namespace: default\n",
    )
    .await;
    env.template(
        "b",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-b\n  namespace: default\n",
    )
    .await;
    let by_path = env.org.path.clone();
    let by_cluster = env.org.cluster.clone();
    env.target_with("init-a", &by_path, &["a"], json!({})).await;
    env.target_with("init-b", &by_cluster, &["b"], json!({}))
        .await;
    let url_path = format!("/clusters/{}", env.config.path);
    env.agent = Some(env.spawn_agent_for("init-agent", &url_path, &[]));

    for t in ["init-a", "init-b"] {
        let s = eventually(&format!("{t} served"), WAIT, || async {
            let s = env.target_status(t).await?;
            Ok((s["conditions"][0]["status"] == "True").then_some(s))
        })
        .await;
        assert_eq!(s["initializer"], json!(env.initializer()), "{s}");
    }
    env.create_typed_workspace("agg").await;
    let ws = env.wait_initialized("agg").await;
    let client = kcp().client(&ws.path).await.unwrap();
    configmap(&client, "default", "from-a").await;
    configmap(&client, "default", "from-b").await;

    let log = strip_ansi(&env.agent_log());
    let workers = log
        .lines()
        .filter(|l| l.contains("starting the WorkspaceType's worker"))
        .count();
    assert_eq!(
        workers, 1,
        "two spellings of one type share one worker:\n{log}"
    );
    let done: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("Cluster successfully initialized") && l.contains(&ws.cluster))
        .collect();
    assert_eq!(done.len(), 1, "{done:?}");
    assert!(
        done[0].contains("init-a") && done[0].contains("init-b"),
        "{}",
        done[0]
    );
    for t in ["init-a", "init-b"] {
        eventually(&format!("{t} counts the workspace"), WAIT, || async {
            let s = env.target_status(t).await?;
            Ok((s["workspacesInitialized"] == json!(1)).then_some(()))
        })
        .await;
    }
}

/// (vi) Leader election as upstream init-agent v0.2: the Lease
/// `init-agent.kcp.io` in `--leader-election-namespace` of the config
/// workspace; one replica holds it and works, the other stands by and takes
/// over when the leader stops. Without the namespace the agent refuses to
/// start and says why.
#[tokio::test(flavor = "multi_thread")]
async fn init_leader_lease_is_init_agent_kcp_io() {
    let out = std::process::Command::new(crate::binary())
        .args([
            "init",
            "--config-workspace",
            "root:x",
            "--enable-leader-election",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--leader-election-namespace")
            && stderr.contains("is required when --enable-leader-election is true"),
        "{stderr}"
    );

    let env = InitEnv::start("init-lease").await;
    env.template(
        "cm",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hello\n  namespace: default\n",
    )
    .await;
    env.target("init-lease", &["cm"], None).await;
    let flags = [
        "--enable-leader-election",
        "--leader-election-namespace",
        "default",
    ];
    let first = env.spawn_agent("replica-1", &flags);
    let second = env.spawn_agent("replica-2", &flags);
    let leases = dynamic_api(
        &env.config_client,
        &gvk("coordination.k8s.io", "v1", "Lease"),
        "leases",
        Some("default"),
    );
    let holder = eventually("a holder of Lease init-agent.kcp.io", WAIT, || async {
        let l = get_opt(&leases, "init-agent.kcp.io").await?;
        Ok(l.and_then(|l| str_at(&l, "/spec/holderIdentity").map(str::to_string)))
    })
    .await;
    let (leader, standby) = if holder.ends_with(&format!("_{}", first.pid())) {
        (first, second)
    } else {
        assert!(holder.ends_with(&format!("_{}", second.pid())), "{holder}");
        (second, first)
    };
    eventually("the other replica to stand by", WAIT, || async {
        Ok(strip_ansi(&standby.log())
            .contains("another replica leads; standing by")
            .then_some(()))
    })
    .await;
    env.create_typed_workspace("led").await;
    env.wait_initialized("led").await;
    assert!(leader.log().contains("Cluster successfully initialized"));
    assert!(!standby.log().contains("Cluster successfully initialized"));

    // The leader stops (releasing the Lease); the standby takes over.
    drop(leader);
    eventually("the standby to take the Lease", WAIT, || async {
        let l = get_opt(&leases, "init-agent.kcp.io").await?;
        Ok(l.filter(|l| {
            str_at(l, "/spec/holderIdentity")
                .is_some_and(|h| h.ends_with(&format!("_{}", standby.pid())))
        })
        .map(|_| ()))
    })
    .await;
    env.create_typed_workspace("led-2").await;
    env.wait_initialized("led-2").await;
    assert!(standby.log().contains("Cluster successfully initialized"));
}

/// A template for the termination tests: a ClusterRole (kcp keeps those
/// until the very end of a workspace's deletion, so only a terminator step
/// removes it earlier) and a ConfigMap held by a finalizer.
const TENANT: &str = r#"apiVersion: v1
kind: Namespace
metadata:
  name: tenant
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: held
  namespace: tenant
  labels: {app: tenant}
  finalizers: [example.com/hold]
data:
  cluster: "{{ .ClusterName }}"
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: tenant-reader
  labels: {app: tenant}
rules:
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get]
"#;

/// Remove the finalizer that holds ConfigMap tenant/held.
async fn release_held(env: &InitEnv, cluster: &str) {
    let vw = env.vw_url("/terminatingworkspaces/").await;
    let client = env.vw_client(&vw, cluster).await;
    dynamic_api(
        &client,
        &gvk("", "v1", "ConfigMap"),
        "configmaps",
        Some("tenant"),
    )
    .patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .expect("remove the finalizer");
}

/// Delete workspace `name` (logical cluster `cluster`) of the tenant
/// template and wait until its termination has deleted the ClusterRole
/// `tenant-reader` and waits, in InitTarget `target`'s status, for the
/// held ConfigMap, with the workspace still Terminating under our
/// terminator. The terminating virtual workspace's client for it, and the
/// waiting entry.
async fn terminate_until_held(
    env: &InitEnv,
    name: &str,
    cluster: &str,
    target: &str,
) -> (kube::Client, Value) {
    env.workspaces()
        .delete(name, &Default::default())
        .await
        .unwrap();
    let vw = env.vw_url("/terminatingworkspaces/").await;
    let inside = env.vw_client(&vw, cluster).await;
    let roles = dynamic_api(
        &inside,
        &gvk("rbac.authorization.k8s.io", "v1", "ClusterRole"),
        "clusterroles",
        None,
    );
    eventually("the ClusterRole deleted by a step", WAIT, || async {
        Ok(get_opt(&roles, "tenant-reader")
            .await?
            .is_none()
            .then_some(()))
    })
    .await;
    let e = eventually(
        "a step waiting in the InitTarget's status",
        WAIT,
        || async {
            let s = env.target_status(target).await?;
            Ok(entry(&s, "waiting", cluster)
                .filter(|e| e["phase"] == "Terminating")
                .cloned())
        },
    )
    .await;
    let (phase, _, terminators) = env.lifecycle(name).await.unwrap();
    assert_eq!(phase, "Terminating");
    assert!(terminators.contains(&env.initializer()), "{terminators:?}");
    (inside, e)
}

/// Wait until Workspace `name` is gone.
async fn wait_workspace_gone(env: &InitEnv, name: &str) {
    let api = env.workspaces();
    eventually(&format!("workspace {name} gone"), WAIT, || async {
        Ok(get_opt(&api, name).await?.is_none().then_some(()))
    })
    .await;
}

/// (iv) A WorkspaceType with a terminator: deleting a workspace runs the
/// InitTarget's termination steps in order (the ClusterRole goes first,
/// long before kcp would delete it; then the step waits for the ConfigMap
/// its finalizer holds), the terminator stays until they are done, then
/// the agent removes it and the workspace disappears.
#[tokio::test(flavor = "multi_thread")]
async fn init_terminator_runs_steps_then_lets_go() {
    let mut env = InitEnv::start_with(
        "init-term",
        json!({"initializer": true, "terminator": true}),
    )
    .await;
    env.template("tenant", TENANT).await;
    let path = env.org.path.clone();
    env.target_with(
        "init-term",
        &path,
        &["tenant"],
        json!({"termination": [
            {"delete": {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                        "selector": {"matchLabels": {"app": "tenant"}}}},
            {"delete": {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "tenant",
                        "selector": {"matchLabels": {"app": "tenant"}}}},
        ]}),
    )
    .await;
    env.start_agent(&[]);
    let served = eventually("the terminator served", WAIT, || async {
        let s = env.target_status("init-term").await?;
        Ok((s["terminator"] == json!(env.initializer())).then_some(s))
    })
    .await;
    assert_eq!(served["conditions"][0]["status"], "True", "{served}");

    env.create_typed_workspace("doomed").await;
    let ws = env.wait_initialized("doomed").await;
    let (_, _, terminators) = env.lifecycle("doomed").await.unwrap();
    assert!(terminators.contains(&env.initializer()), "{terminators:?}");
    let client = kcp().client(&ws.path).await.unwrap();
    let roles = dynamic_api(
        &client,
        &gvk("rbac.authorization.k8s.io", "v1", "ClusterRole"),
        "clusterroles",
        None,
    );
    roles
        .get("tenant-reader")
        .await
        .expect("the template's ClusterRole");

    // Step 0 deletes the ClusterRole; step 1 waits for the held ConfigMap,
    // and the terminator holds the workspace meanwhile.
    let (inside, e) = terminate_until_held(&env, "doomed", &ws.cluster, "init-term").await;
    assert_eq!(e["reason"], "TerminationInProgress", "{e}");
    let msg = e["message"].as_str().unwrap();
    assert!(
        msg.contains("ConfigMap tenant/held") && msg.contains("example.com/hold"),
        "{msg}"
    );
    configmap(&inside, "tenant", "held").await;

    release_held(&env, &ws.cluster).await;
    wait_workspace_gone(&env, "doomed").await;
    let status = eventually("the InitTarget to count the termination", WAIT, || async {
        let s = env.target_status("init-term").await?;
        Ok((s["workspacesTerminated"] == json!(1)).then_some(s))
    })
    .await;
    assert_eq!(status["waiting"], Value::Null, "{status}");
    assert!(
        env.agent_log()
            .contains("workspace terminated; terminator removed"),
        "{}",
        env.agent.as_ref().unwrap().log_tail(40)
    );
}

/// A termination step computed per workspace: `delete.template` renders
/// the InitTemplate `tenant` with the InitTarget's renderer (the built-in
/// Go-template plugin) for the workspace, and deletes what it renders in
/// reverse order: the ClusterRole first, then the held ConfigMap (waited
/// for), then the Namespace; then the terminator goes.
#[tokio::test(flavor = "multi_thread")]
async fn init_termination_step_rendered_from_a_template() {
    let mut env = InitEnv::start_with(
        "init-term-tpl",
        json!({"initializer": true, "terminator": true}),
    )
    .await;
    env.template("tenant", TENANT).await;
    let path = env.org.path.clone();
    env.target_with(
        "init-tpl",
        &path,
        &["tenant"],
        json!({"termination": [{"delete": {"template": {"name": "tenant"}}}]}),
    )
    .await;
    env.start_agent(&[]);
    env.create_typed_workspace("rendered").await;
    let ws = env.wait_initialized("rendered").await;
    let (_, e) = terminate_until_held(&env, "rendered", &ws.cluster, "init-tpl").await;
    let msg = e["message"].as_str().unwrap();
    assert!(
        msg.contains("spec.termination[0]") && msg.contains("ConfigMap tenant/held"),
        "{msg}"
    );
    release_held(&env, &ws.cluster).await;
    wait_workspace_gone(&env, "rendered").await;
}

/// The LogicalCluster's `Terminator/<terminator>` condition, as the
/// terminating virtual workspace shows it.
async fn terminator_condition(env: &InitEnv, cluster: &str) -> Result<Option<Value>, String> {
    let vw = env.vw_url("/terminatingworkspaces/").await;
    let client = env.vw_client(&vw, cluster).await;
    let lc = dynamic_api(
        &client,
        &gvk("core.kcp.io", "v1alpha1", "LogicalCluster"),
        "logicalclusters",
        None,
    )
    .get("cluster")
    .await
    .map_err(|e| e.to_string())?;
    let want = format!("Terminator/{}", env.initializer());
    Ok(lc
        .data
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|c| c["type"] == want.as_str())
        .cloned())
}

/// (v) A termination step that fails (kcp refuses it: the type's
/// `terminatorPermissions` do not cover ClusterRoles) and then, once that
/// is fixed, a step that hangs past its timeout (a finalizer nobody
/// removes): the workspace stays Terminating, and the InitTarget's status,
/// a Warning Event and a condition on the LogicalCluster say why each time.
#[tokio::test(flavor = "multi_thread")]
async fn init_failing_and_hanging_steps_are_reported() {
    let discovery =
        json!({"nonResourceURLs": ["/api", "/api/*", "/apis", "/apis/*"], "verbs": ["get"]});
    let configmaps = json!({"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "delete", "patch"]});
    let mut env = InitEnv::start_with(
        "init-term-bad",
        json!({"initializer": true, "terminator": true,
               "terminatorPermissions": [discovery, configmaps]}),
    )
    .await;
    env.template("tenant", TENANT).await;
    let path = env.org.path.clone();
    env.target_with(
        "init-bad",
        &path,
        &["tenant"],
        json!({"termination": [
            {"delete": {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                        "name": "tenant-reader"}},
            {"delete": {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "tenant", "name": "held"},
             "timeout": "3s"},
        ]}),
    )
    .await;
    env.start_agent(&[]);
    env.create_typed_workspace("stuck").await;
    let ws = env.wait_initialized("stuck").await;
    env.workspaces()
        .delete("stuck", &Default::default())
        .await
        .unwrap();

    // The failing step.
    let e = eventually(
        "the failing step in the InitTarget's status",
        WAIT,
        || async {
            let s = env.target_status("init-bad").await?;
            Ok(entry(&s, "failing", &ws.cluster).cloned())
        },
    )
    .await;
    assert_eq!(e["phase"], "Terminating", "{e}");
    assert_eq!(e["reason"], "TerminationFailed", "{e}");
    let msg = e["message"].as_str().unwrap();
    assert!(
        msg.contains("spec.termination[0]") && msg.contains("terminatorPermissions"),
        "{msg}"
    );
    let s = env.target_status("init-bad").await.unwrap();
    assert_eq!(s["conditions"][0]["status"], "False", "{s}");
    assert_eq!(s["conditions"][0]["reason"], "TerminationFailed", "{s}");
    let note = env
        .wait_event("init-bad", "Warning", "TerminationFailed")
        .await;
    assert!(note.contains("spec.termination[0]"), "{note}");
    let c = eventually("the condition on the LogicalCluster", WAIT, || async {
        terminator_condition(&env, &ws.cluster).await
    })
    .await;
    assert_eq!(c["status"], "False", "{c}");
    assert_eq!(c["reason"], "TerminationFailed", "{c}");
    let (phase, _, terminators) = env.lifecycle("stuck").await.unwrap();
    assert_eq!(phase, "Terminating");
    assert!(terminators.contains(&env.initializer()));

    // Fix the permissions: step 0 runs, step 1 hangs on the finalizer past
    // its 3 s timeout.
    let rbac = json!({"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"],
                      "verbs": ["get", "list", "delete"]});
    dynamic_api(
        &env.org_client,
        &gvk("tenancy.kcp.io", "v1alpha1", "WorkspaceType"),
        "workspacetypes",
        None,
    )
    .patch(
        WORKSPACE_TYPE,
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"terminatorPermissions": [discovery, configmaps, rbac]}})),
    )
    .await
    .unwrap();
    let e = eventually(
        "the hanging step in the InitTarget's status",
        WAIT,
        || async {
            let s = env.target_status("init-bad").await?;
            Ok(entry(&s, "failing", &ws.cluster)
                .filter(|e| e["reason"] == "TerminationStepTimedOut")
                .cloned())
        },
    )
    .await;
    let msg = e["message"].as_str().unwrap();
    assert!(
        msg.contains("spec.termination[1]")
            && msg.contains("3s")
            && msg.contains("ConfigMap tenant/held")
            && msg.contains("example.com/hold"),
        "{msg}"
    );
    let note = env
        .wait_event("init-bad", "Warning", "TerminationStepTimedOut")
        .await;
    assert!(note.contains("spec.termination[1]"), "{note}");
    let c = eventually("the timeout on the LogicalCluster", WAIT, || async {
        Ok(terminator_condition(&env, &ws.cluster)
            .await?
            .filter(|c| c["reason"] == "TerminationStepTimedOut"))
    })
    .await;
    assert!(c["message"].as_str().unwrap().contains("held"), "{c}");
    let (phase, _, terminators) = env.lifecycle("stuck").await.unwrap();
    assert_eq!(phase, "Terminating");
    assert!(terminators.contains(&env.initializer()));

    release_held(&env, &ws.cluster).await;
    wait_workspace_gone(&env, "stuck").await;
    let s = eventually("the InitTarget Ready again", WAIT, || async {
        let s = env.target_status("init-bad").await?;
        Ok((s["conditions"][0]["status"] == "True").then_some(s))
    })
    .await;
    assert_eq!(s["failing"], Value::Null, "{s}");
}
