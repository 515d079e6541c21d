//! The init role against a real kcp: a WorkspaceType with an initializer,
//! InitTargets and InitTemplates in a config workspace, and the agent
//! initializing new workspaces of that type through kcp's
//! initializingworkspaces virtual workspace.

use std::time::Duration;

use kube::Client;
use kube::api::{Api, DynamicObject, PostParams};
use serde_json::{Value, json};
use syncweave_tests::*;

const WAIT: Duration = Duration::from_secs(90);
const INITTARGET_CRD: &str =
    include_str!("../../charts/syncweave/crds/initialization.kcp.io_inittargets.yaml");
const INITTEMPLATE_CRD: &str =
    include_str!("../../charts/syncweave/crds/initialization.kcp.io_inittemplates.yaml");
const WORKSPACE_TYPE: &str = "my-type";

/// Upstream's e2e template: the ConfigMap comes before its Namespace, so
/// it only works if objects are sorted.
const UPSTREAM_TEMPLATE: &str = r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: info
  namespace: foobar
data:
  cluster: "{{ .ClusterName }}"
  workspace: "{{ .ClusterPath }}"
---
apiVersion: v1
kind: Namespace
metadata:
  name: foobar
"#;

/// An organisation workspace holding the WorkspaceType, a config workspace
/// holding the CRDs, InitTargets and InitTemplates, and the agent.
struct InitEnv {
    org: Workspace,
    org_client: Client,
    config: Workspace,
    config_client: Client,
    dir: std::path::PathBuf,
    agent: Option<Agent>,
}

impl InitEnv {
    async fn start(test: &str) -> InitEnv {
        let kcp = kcp();
        let org = kcp
            .create_workspace("root", &unique(test))
            .await
            .expect("org workspace");
        let org_client = kcp.client(&org.path).await.unwrap();
        apply(
            &org_client,
            &json!({
                "apiVersion": "tenancy.kcp.io/v1alpha1",
                "kind": "WorkspaceType",
                "metadata": {"name": WORKSPACE_TYPE},
                "spec": {
                    "initializer": true,
                    "extend": {"with": [{"name": "universal", "path": "root"}]},
                },
            }),
        )
        .await
        .expect("WorkspaceType");
        let wsts = dynamic_api(
            &org_client,
            &gvk("tenancy.kcp.io", "v1alpha1", "WorkspaceType"),
            "workspacetypes",
            None,
        );
        eventually(
            "the WorkspaceType's virtual workspace URLs",
            WAIT,
            || async {
                let w = get_opt(&wsts, WORKSPACE_TYPE).await?;
                Ok(w.filter(|w| {
                    w.data
                        .pointer("/status/virtualWorkspaces")
                        .and_then(Value::as_array)
                        .is_some_and(|a| !a.is_empty())
                })
                .map(|_| ()))
            },
        )
        .await;

        let config = kcp
            .create_workspace(&org.path, "config")
            .await
            .expect("config workspace");
        let config_client = kcp.client(&config.path).await.unwrap();
        apply_crds(&config_client, INITTARGET_CRD)
            .await
            .expect("InitTarget CRD");
        apply_crds(&config_client, INITTEMPLATE_CRD)
            .await
            .expect("InitTemplate CRD");
        let dir = kcp.root_dir.join(org.path.replace(':', "_"));
        std::fs::create_dir_all(&dir).unwrap();
        InitEnv {
            org,
            org_client,
            config,
            config_client,
            dir,
            agent: None,
        }
    }

    /// kcp's name for the WorkspaceType's initializer.
    fn initializer(&self) -> String {
        format!("{}:{WORKSPACE_TYPE}", self.org.cluster)
    }

    fn start_agent(&mut self, extra: &[&str]) {
        let kubeconfig = self.dir.join("kcp.kubeconfig");
        // Pointing at root (not the config workspace) checks that the agent
        // reaches the config workspace by its path.
        kcp().write_kubeconfig("root", &kubeconfig).unwrap();
        let mut args: Vec<String> = [
            "init",
            "--kubeconfig",
            kubeconfig.to_str().unwrap(),
            "--config-workspace",
            &self.config.path,
            "--metrics-address",
            "0",
            "--log-format",
            "Console",
            "--log-debug",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        args.extend(extra.iter().map(|s| s.to_string()));
        self.agent = None;
        self.agent = Some(
            Agent::start(crate::binary(), &args, self.dir.join("init-agent.log"))
                .expect("agent starts"),
        );
    }

    async fn apply_config(&self, yaml: &str) {
        apply_yaml(&self.config_client, yaml)
            .await
            .expect("config objects");
    }

    async fn template(&self, name: &str, template: &str) {
        apply(
            &self.config_client,
            &json!({
                "apiVersion": "initialization.kcp.io/v1alpha1",
                "kind": "InitTemplate",
                "metadata": {"name": name},
                "spec": {"template": template},
            }),
        )
        .await
        .expect("InitTemplate");
    }

    async fn target(&self, name: &str, templates: &[&str], renderer: Option<Value>) {
        let mut spec = json!({
            "workspaceTypeRef": {"path": self.org.path, "name": WORKSPACE_TYPE},
            "sources": templates.iter().map(|t| json!({"template": {"name": t}})).collect::<Vec<_>>(),
        });
        if let Some(r) = renderer {
            spec["renderer"] = r;
        }
        apply(
            &self.config_client,
            &json!({
                "apiVersion": "initialization.kcp.io/v1alpha1",
                "kind": "InitTarget",
                "metadata": {"name": name},
                "spec": spec,
            }),
        )
        .await
        .expect("InitTarget");
    }

    fn workspaces(&self) -> Api<DynamicObject> {
        dynamic_api(
            &self.org_client,
            &gvk("tenancy.kcp.io", "v1alpha1", "Workspace"),
            "workspaces",
            None,
        )
    }

    /// Create a workspace of the initializing type (without waiting).
    async fn create_typed_workspace(&self, name: &str) {
        let ws = serde_json::from_value(json!({
            "apiVersion": "tenancy.kcp.io/v1alpha1",
            "kind": "Workspace",
            "metadata": {"name": name},
            "spec": {"type": {"path": self.org.path, "name": WORKSPACE_TYPE}},
        }))
        .unwrap();
        self.workspaces()
            .create(&PostParams::default(), &ws)
            .await
            .expect("typed workspace");
    }

    /// Wait until our initializer is gone and the workspace is Ready.
    async fn wait_initialized(&self, name: &str) -> Workspace {
        let ours = self.initializer();
        let api = self.workspaces();
        eventually(
            &format!("workspace {name} initialized and Ready"),
            WAIT,
            || async {
                let Some(ws) = get_opt(&api, name).await? else {
                    return Ok(None);
                };
                let initializers: Vec<&str> = ws
                    .data
                    .pointer("/status/initializers")
                    .and_then(Value::as_array)
                    .map(|a| a.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                if initializers.contains(&ours.as_str()) {
                    return Err(format!("initializers still {initializers:?}"));
                }
                let phase = str_at(&ws, "/status/phase");
                if phase != Some("Ready") {
                    return Err(format!("phase {phase:?}"));
                }
                Ok(str_at(&ws, "/spec/cluster").map(|c| Workspace {
                    path: format!("{}:{name}", self.org.path),
                    cluster: c.to_string(),
                }))
            },
        )
        .await
    }

    fn agent_log(&self) -> String {
        std::fs::read_to_string(&self.agent.as_ref().unwrap().log_file).unwrap_or_default()
    }
}

async fn configmap(client: &Client, namespace: &str, name: &str) -> DynamicObject {
    dynamic_api(
        client,
        &gvk("", "v1", "ConfigMap"),
        "configmaps",
        Some(namespace),
    )
    .get(name)
    .await
    .unwrap_or_else(|e| panic!("ConfigMap {namespace}/{name}: {e}"))
}

/// Upstream's TestInitializeNewCluster: a template rendering a ConfigMap
/// before its Namespace initializes a new workspace of the type, with the
/// workspace's logical-cluster name and path filled in.
#[tokio::test(flavor = "multi_thread")]
async fn initializes_new_workspace_like_upstream() {
    let mut env = InitEnv::start("init-basic").await;
    env.template("my-template", UPSTREAM_TEMPLATE).await;
    env.target("init-my-type", &["my-template"], None).await;
    env.start_agent(&[]);

    env.create_typed_workspace("my-new-workspace").await;
    let ws = env.wait_initialized("my-new-workspace").await;

    let client = kcp().client(&ws.path).await.unwrap();
    let cm = configmap(&client, "foobar", "info").await;
    assert_eq!(str_at(&cm, "/data/cluster"), Some(ws.cluster.as_str()));
    assert_eq!(str_at(&cm, "/data/workspace"), Some(ws.path.as_str()));
    assert!(
        env.agent_log().contains("Cluster successfully initialized"),
        "{}",
        env.agent.as_ref().unwrap().log_tail(40)
    );

    // Unlike upstream, deleting the InitTarget stops its worker: later
    // workspaces of the type are left alone.
    dynamic_api(
        &env.config_client,
        &gvk("initialization.kcp.io", "v1alpha1", "InitTarget"),
        "inittargets",
        None,
    )
    .delete("init-my-type", &Default::default())
    .await
    .unwrap();
    eventually("the worker to stop", WAIT, || async {
        Ok(env
            .agent_log()
            .lines()
            .any(|l| l.contains("stopped InitTarget worker") && l.contains("init-my-type"))
            .then_some(()))
    })
    .await;
    env.create_typed_workspace("after-delete").await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    let ws = env.workspaces().get("after-delete").await.unwrap();
    assert_eq!(str_at(&ws, "/status/phase"), Some("Initializing"));
}

/// `spec.renderer.engine: handlebars` renders with Handlebars; the agent
/// runs with leader election, holding a Lease in the config workspace.
#[tokio::test(flavor = "multi_thread")]
async fn handlebars_renderer_and_leader_election() {
    let mut env = InitEnv::start("init-hbs").await;
    env.template(
        "hbs",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hello\n  namespace: default\ndata:\n  cluster: \"{{ClusterName}}\"\n  path: \"{{ClusterPath}}\"\n",
    )
    .await;
    env.target("init-hbs", &["hbs"], Some(json!({"engine": "handlebars"})))
        .await;
    env.start_agent(&["--enable-leader-election"]);

    env.create_typed_workspace("hbs-ws").await;
    let ws = env.wait_initialized("hbs-ws").await;
    let client = kcp().client(&ws.path).await.unwrap();
    let cm = configmap(&client, "default", "hello").await;
    assert_eq!(str_at(&cm, "/data/cluster"), Some(ws.cluster.as_str()));
    assert_eq!(str_at(&cm, "/data/path"), Some(ws.path.as_str()));

    let leases = dynamic_api(
        &env.config_client,
        &gvk("coordination.k8s.io", "v1", "Lease"),
        "leases",
        Some("default"),
    );
    let list = leases.list(&Default::default()).await.unwrap();
    let lease = list
        .items
        .iter()
        .find(|l| {
            l.metadata
                .name
                .as_deref()
                .is_some_and(|n| n.starts_with("init-agent-"))
        })
        .expect("a leader Lease in the config workspace's default namespace");
    assert!(str_at(lease, "/spec/holderIdentity").is_some_and(|h| !h.is_empty()));
}

/// A template that does not render keeps the workspace Initializing, and
/// the agent's log names the template; fixing the template finishes the
/// initialization without waiting for the retry backoff.
#[tokio::test(flavor = "multi_thread")]
async fn broken_template_keeps_workspace_initializing() {
    let mut env = InitEnv::start("init-broken").await;
    env.template(
        "broken-template",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n   namespace: default\n",
    )
    .await;
    env.target("init-broken", &["broken-template"], None).await;
    env.start_agent(&[]);
    env.create_typed_workspace("stuck").await;

    let log = eventually("the agent to report the broken template", WAIT, || async {
        let log = env.agent_log();
        Ok(log
            .lines()
            .find(|l| l.contains("initializing workspace failed"))
            .map(str::to_string))
    })
    .await;
    assert!(log.contains("broken-template"), "{log}");
    assert!(log.contains("init-broken"), "{log}");
    assert!(log.contains("failed to decode YAML"), "{log}");
    // It tries again (and fails again) before the workspace is checked.
    eventually("the agent to retry the broken template", WAIT, || async {
        let failures = env
            .agent_log()
            .lines()
            .filter(|l| l.contains("initializing workspace failed"))
            .count();
        Ok((failures >= 2).then_some(()))
    })
    .await;
    // The Workspace's status follows its logical cluster's a moment later
    // (Scheduling → Initializing), and the agent may already have failed
    // twice by then: wait for Initializing, which the initializer holds.
    let ws = eventually("the workspace to be Initializing", WAIT, || async {
        let ws = env
            .workspaces()
            .get("stuck")
            .await
            .map_err(|e| e.to_string())?;
        Ok((str_at(&ws, "/status/phase") == Some("Initializing")).then_some(ws))
    })
    .await;
    let initializers = ws.data.pointer("/status/initializers").cloned();
    assert!(
        initializers
            .as_ref()
            .and_then(Value::as_array)
            .is_some_and(|a| a.contains(&json!(env.initializer()))),
        "{initializers:?}"
    );

    env.template(
        "broken-template",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fixed\n  namespace: default\n",
    )
    .await;
    let ws = env.wait_initialized("stuck").await;
    let client = kcp().client(&ws.path).await.unwrap();
    configmap(&client, "default", "fixed").await;
}

/// A CRD and an object of its kind in one template: the object waits until
/// kcp serves the kind (retry after 5 s), then the workspace completes.
/// Both sources are applied before the initializer goes.
#[tokio::test(flavor = "multi_thread")]
async fn crd_and_its_objects_across_sources() {
    let mut env = InitEnv::start("init-crd").await;
    env.apply_config(
        r#"
apiVersion: initialization.kcp.io/v1alpha1
kind: InitTemplate
metadata:
  name: widgets
spec:
  template: |
    apiVersion: example.com/v1
    kind: Widget
    metadata:
      name: first
      namespace: widgets
    spec:
      owner: "{{ .ClusterPath }}"
    ---
    apiVersion: v1
    kind: Namespace
    metadata:
      name: widgets
    ---
    apiVersion: apiextensions.k8s.io/v1
    kind: CustomResourceDefinition
    metadata:
      name: widgets.example.com
    spec:
      group: example.com
      names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
      scope: Namespaced
      versions:
      - name: v1
        served: true
        storage: true
        schema:
          openAPIV3Schema:
            type: object
            x-kubernetes-preserve-unknown-fields: true
---
apiVersion: initialization.kcp.io/v1alpha1
kind: InitTemplate
metadata:
  name: second
spec:
  template: |
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: second
      namespace: default
    data:
      cluster: "{{ .ClusterName }}"
"#,
    )
    .await;
    env.target("init-crd", &["widgets", "second"], None).await;
    env.start_agent(&[]);
    env.create_typed_workspace("with-crd").await;
    let ws = env.wait_initialized("with-crd").await;

    let client = kcp().client(&ws.path).await.unwrap();
    let widget = dynamic_api(
        &client,
        &gvk("example.com", "v1", "Widget"),
        "widgets",
        Some("widgets"),
    )
    .get("first")
    .await
    .expect("the Widget exists");
    assert_eq!(str_at(&widget, "/spec/owner"), Some(ws.path.as_str()));
    let cm = configmap(&client, "default", "second").await;
    assert_eq!(str_at(&cm, "/data/cluster"), Some(ws.cluster.as_str()));
    assert!(
        env.agent_log().contains("kind not served yet"),
        "the Widget had to wait for its CRD:\n{}",
        env.agent.as_ref().unwrap().log_tail(40)
    );
}
