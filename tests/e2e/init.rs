//! The init role against a real kcp: a WorkspaceType with an initializer,
//! InitTargets and InitTemplates in a config workspace, and the agent
//! initializing new workspaces of that type through kcp's
//! initializingworkspaces virtual workspace. The helpers here serve
//! `init_lifecycle.rs` too.

use std::time::Duration;

use kube::Client;
use kube::api::{Api, DynamicObject, PostParams};
use serde_json::{Value, json};
use syncweave_tests::*;

pub const WAIT: Duration = Duration::from_secs(90);
const INITTARGET_CRD: &str =
    include_str!("../../charts/syncweave/crds/initialization.kcp.io_inittargets.yaml");
const INITTEMPLATE_CRD: &str =
    include_str!("../../charts/syncweave/crds/initialization.kcp.io_inittemplates.yaml");
pub const WORKSPACE_TYPE: &str = "my-type";

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
pub struct InitEnv {
    pub org: Workspace,
    pub org_client: Client,
    pub config: Workspace,
    pub config_client: Client,
    pub dir: std::path::PathBuf,
    pub agent: Option<Agent>,
}

impl InitEnv {
    /// A WorkspaceType with an initializer (upstream's e2e setup).
    pub async fn start(test: &str) -> InitEnv {
        InitEnv::start_with(test, json!({"initializer": true})).await
    }

    /// A WorkspaceType with `spec` (plus `extend: universal`).
    pub async fn start_with(test: &str, mut spec: Value) -> InitEnv {
        spec["extend"] = json!({"with": [{"name": "universal", "path": "root"}]});
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
                "spec": spec,
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

    /// kcp's name for the WorkspaceType's initializer (and terminator).
    pub fn initializer(&self) -> String {
        format!("{}:{WORKSPACE_TYPE}", self.org.cluster)
    }

    pub fn start_agent(&mut self, extra: &[&str]) {
        self.agent = None;
        self.agent = Some(self.spawn_agent("init-agent", extra));
    }

    /// Another agent process against the same config workspace.
    pub fn spawn_agent(&self, name: &str, extra: &[&str]) -> Agent {
        self.spawn_agent_for(name, &self.config.path, extra)
    }

    /// An agent with `--config-workspace config_workspace`.
    pub fn spawn_agent_for(&self, name: &str, config_workspace: &str, extra: &[&str]) -> Agent {
        let kubeconfig = self.dir.join("kcp.kubeconfig");
        // Pointing at root (not the config workspace) checks that the agent
        // reaches the config workspace by its path.
        kcp().write_kubeconfig("root", &kubeconfig).unwrap();
        let mut args: Vec<String> = [
            "init",
            "--kubeconfig",
            kubeconfig.to_str().unwrap(),
            "--config-workspace",
            config_workspace,
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
        Agent::start(crate::binary(), &args, self.dir.join(format!("{name}.log")))
            .expect("agent starts")
    }

    pub async fn apply_config(&self, yaml: &str) {
        apply_yaml(&self.config_client, yaml)
            .await
            .expect("config objects");
    }

    pub async fn template(&self, name: &str, template: &str) {
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

    pub async fn target(&self, name: &str, templates: &[&str], renderer: Option<Value>) {
        let mut extra = json!({});
        if let Some(r) = renderer {
            extra["renderer"] = r;
        }
        self.target_with(name, &self.org.path, templates, extra)
            .await
    }

    /// An InitTarget naming the type by `path`, with `extra` spec fields.
    pub async fn target_with(&self, name: &str, path: &str, templates: &[&str], extra: Value) {
        let mut spec = json!({
            "workspaceTypeRef": {"path": path, "name": WORKSPACE_TYPE},
            "sources": templates.iter().map(|t| json!({"template": {"name": t}})).collect::<Vec<_>>(),
        });
        for (k, v) in extra.as_object().into_iter().flatten() {
            spec[k] = v.clone();
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

    pub fn inittargets(&self) -> Api<DynamicObject> {
        dynamic_api(
            &self.config_client,
            &gvk("initialization.kcp.io", "v1alpha1", "InitTarget"),
            "inittargets",
            None,
        )
    }

    /// The InitTarget's status (`null` without one).
    pub async fn target_status(&self, name: &str) -> Result<Value, String> {
        let t = self
            .inittargets()
            .get(name)
            .await
            .map_err(|e| e.to_string())?;
        Ok(t.data.get("status").cloned().unwrap_or(Value::Null))
    }

    /// (type, reason, note) of the Events about InitTarget `name`.
    pub async fn events_about(&self, name: &str) -> Result<Vec<(String, String, String)>, String> {
        let list = dynamic_api(
            &self.config_client,
            &gvk("events.k8s.io", "v1", "Event"),
            "events",
            None,
        )
        .list(&Default::default())
        .await
        .map_err(|e| e.to_string())?;
        Ok(list
            .items
            .iter()
            .filter(|e| str_at(e, "/regarding/name") == Some(name))
            .map(|e| {
                (
                    str_at(e, "/type").unwrap_or_default().to_string(),
                    str_at(e, "/reason").unwrap_or_default().to_string(),
                    str_at(e, "/note").unwrap_or_default().to_string(),
                )
            })
            .collect())
    }

    /// Wait for an Event `reason` about InitTarget `name`; its note.
    pub async fn wait_event(&self, name: &str, type_: &str, reason: &str) -> String {
        eventually(
            &format!("a {type_} {reason} Event about InitTarget {name}"),
            WAIT,
            || async {
                Ok(self
                    .events_about(name)
                    .await?
                    .into_iter()
                    .find(|(t, r, _)| t == type_ && r == reason)
                    .map(|(_, _, n)| n))
            },
        )
        .await
    }

    /// The WorkspaceType's virtual-workspace URL containing `marker`
    /// (`/initializingworkspaces/` or `/terminatingworkspaces/`).
    pub async fn vw_url(&self, marker: &str) -> String {
        let wst = dynamic_api(
            &self.org_client,
            &gvk("tenancy.kcp.io", "v1alpha1", "WorkspaceType"),
            "workspacetypes",
            None,
        )
        .get(WORKSPACE_TYPE)
        .await
        .unwrap();
        wst.data
            .pointer("/status/virtualWorkspaces")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|v| v["url"].as_str())
            .find(|u| u.contains(marker))
            .unwrap_or_else(|| panic!("no {marker} URL on the WorkspaceType"))
            .to_string()
    }

    /// An admin client for logical cluster `cluster` through the virtual
    /// workspace at `url` (the only way into a workspace while it
    /// initializes or terminates).
    pub async fn vw_client(&self, url: &str, cluster: &str) -> Client {
        let mut cfg = kcp().config("root").await.unwrap();
        cfg.cluster_url = format!("{url}/clusters/{cluster}").parse().unwrap();
        Client::try_from(cfg).unwrap()
    }

    pub fn workspaces(&self) -> Api<DynamicObject> {
        dynamic_api(
            &self.org_client,
            &gvk("tenancy.kcp.io", "v1alpha1", "Workspace"),
            "workspaces",
            None,
        )
    }

    /// Create a workspace of the initializing type (without waiting).
    pub async fn create_typed_workspace(&self, name: &str) {
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

    /// The workspace's logical cluster, once kcp assigned one.
    pub async fn cluster_of(&self, name: &str) -> String {
        let api = self.workspaces();
        eventually(&format!("workspace {name} scheduled"), WAIT, || async {
            let ws = get_opt(&api, name).await?;
            Ok(ws.and_then(|w| str_at(&w, "/spec/cluster").map(str::to_string)))
        })
        .await
    }

    /// The workspace's phase and its initializers and terminators.
    pub async fn lifecycle(
        &self,
        name: &str,
    ) -> Result<(String, Vec<String>, Vec<String>), String> {
        let ws = self
            .workspaces()
            .get(name)
            .await
            .map_err(|e| e.to_string())?;
        let list = |p: &str| -> Vec<String> {
            ws.data
                .pointer(p)
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default()
        };
        Ok((
            str_at(&ws, "/status/phase").unwrap_or_default().to_string(),
            list("/status/initializers"),
            list("/status/terminators"),
        ))
    }

    /// Wait until our initializer is gone and the workspace is Ready.
    pub async fn wait_initialized(&self, name: &str) -> Workspace {
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

    pub fn agent_log(&self) -> String {
        std::fs::read_to_string(&self.agent.as_ref().unwrap().log_file).unwrap_or_default()
    }
}

pub async fn configmap(client: &Client, namespace: &str, name: &str) -> DynamicObject {
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

    // Status: the initializer served and the workspace counted.
    let status = eventually("the InitTarget's status", WAIT, || async {
        let s = env.target_status("init-my-type").await?;
        Ok((s["workspacesInitialized"] == json!(1)).then_some(s))
    })
    .await;
    assert_eq!(status["initializer"], json!(env.initializer()));
    assert_eq!(status["conditions"][0]["type"], "Ready");
    assert_eq!(status["conditions"][0]["status"], "True", "{status}");

    // Unlike upstream, the worker stops with the type's last InitTarget, and
    // never removes the initializer without one (upstream's worker keeps
    // running with no target and removes it right away).
    env.inittargets()
        .delete("init-my-type", &Default::default())
        .await
        .unwrap();
    eventually("the worker to stop", WAIT, || async {
        Ok(env
            .agent_log()
            .lines()
            .any(|l| l.contains("WorkspaceType worker stopped"))
            .then_some(()))
    })
    .await;
    env.create_typed_workspace("after-delete").await;
    eventually(
        "the workspace to wait for the initializer",
        WAIT,
        || async {
            let (phase, inits, _) = env.lifecycle("after-delete").await?;
            Ok((phase == "Initializing" && inits.contains(&env.initializer())).then_some(()))
        },
    )
    .await;
    // A new InitTarget initializes it: it waited, with nothing applied.
    env.template(
        "later",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: later\n  namespace: default\n",
    )
    .await;
    env.target("init-later", &["later"], None).await;
    let ws = env.wait_initialized("after-delete").await;
    let client = kcp().client(&ws.path).await.unwrap();
    configmap(&client, "default", "later").await;
}

/// `spec.renderer.engine: handlebars` renders with Handlebars.
#[tokio::test(flavor = "multi_thread")]
async fn handlebars_renderer() {
    let mut env = InitEnv::start("init-hbs").await;
    env.template(
        "hbs",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hello\n  namespace: default\ndata:\n  cluster: \"{{ClusterName}}\"\n  path: \"{{ClusterPath}}\"\n",
    )
    .await;
    env.target("init-hbs", &["hbs"], Some(json!({"engine": "handlebars"})))
        .await;
    env.start_agent(&[]);

    env.create_typed_workspace("hbs-ws").await;
    let ws = env.wait_initialized("hbs-ws").await;
    let client = kcp().client(&ws.path).await.unwrap();
    let cm = configmap(&client, "default", "hello").await;
    assert_eq!(str_at(&cm, "/data/cluster"), Some(ws.cluster.as_str()));
    assert_eq!(str_at(&cm, "/data/path"), Some(ws.path.as_str()));
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
    // The InitTarget says so too: not Ready, the workspace listed as failing
    // with the reason, and a Warning Event.
    let status = eventually("the failure in the InitTarget's status", WAIT, || async {
        let s = env.target_status("init-broken").await?;
        Ok((s["failing"]["count"] == json!(1)).then_some(s))
    })
    .await;
    let ready = &status["conditions"][0];
    assert_eq!(ready["status"], "False", "{status}");
    assert_eq!(ready["reason"], "InitializationFailed", "{status}");
    let entry = &status["failing"]["workspaces"][0];
    assert_eq!(entry["phase"], "Initializing");
    assert_eq!(entry["path"], json!(format!("{}:stuck", env.org.path)));
    assert!(
        entry["message"]
            .as_str()
            .unwrap()
            .contains("failed to decode YAML"),
        "{entry}"
    );
    let note = env
        .wait_event("init-broken", "Warning", "InitializationFailed")
        .await;
    assert!(note.contains("broken-template"), "{note}");

    env.template(
        "broken-template",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fixed\n  namespace: default\n",
    )
    .await;
    let ws = env.wait_initialized("stuck").await;
    let client = kcp().client(&ws.path).await.unwrap();
    configmap(&client, "default", "fixed").await;
    let status = eventually("the InitTarget Ready again", WAIT, || async {
        let s = env.target_status("init-broken").await?;
        Ok((s["conditions"][0]["status"] == "True").then_some(s))
    })
    .await;
    assert_eq!(status["failing"], Value::Null, "{status}");
    assert_eq!(status["workspacesInitialized"], json!(1), "{status}");
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
