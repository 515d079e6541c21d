//! A provider / service cluster / consumers setup, shared by the e2e tests and the demo.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::service::ServiceCluster;
use crate::*;
use kube::Client;
use serde_json::json;

pub const CRD: &str = include_str!("../../examples/crontab/crd.yaml");
pub const PUBLISHED_RESOURCE: &str = include_str!("../../examples/crontab/publishedresource.yaml");
pub const APIEXPORT: &str = include_str!("../../examples/crontab/apiexport.yaml");
pub const WASMPLUGIN_CRD: &str =
    include_str!("../../charts/syncweave/crds/syncweave.dev_wasmplugins.yaml");
pub const PR_CRD: &str =
    include_str!("../../charts/syncweave/crds/syncagent.kcp.io_publishedresources.yaml");
/// A second namespaced kind beside CronTab (`notes.example.com`, any
/// content), for tests with more than one PublishedResource.
pub const NOTE_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: notes.example.com}
spec:
  group: example.com
  names: {kind: Note, listKind: NoteList, plural: notes, singular: note}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
"#;

pub struct Env {
    /// The kcp this environment lives in ([`kcp`] or [`crate::sharded_kcp`]).
    pub kcp: &'static Kcp,
    pub org: Workspace,
    pub provider: Workspace,
    /// The provider's service cluster: a real kube-apiserver of this test's own.
    pub service: ServiceCluster,
    /// Cluster-admin client of the service cluster, for set-up and checks.
    pub service_client: Client,
    pub dir: PathBuf,
    pub agent: Option<Agent>,
    /// The `syncweave` binary to run.
    pub binary: PathBuf,
    /// Token of the chart's ServiceAccount on the service cluster.
    pub agent_token: String,
    /// Extra environment of the agent process (e.g. SYNCWEAVE_PLUGIN_CA_FILE).
    pub agent_env: Vec<(String, String)>,
}

pub const EXPORT: &str = "example.com";
pub const AGENT_NAMESPACE: &str = "syncweave";
pub const AGENT_NAME: &str = "e2e-agent";

impl Env {
    /// A provider workspace with the APIExport, a service cluster with the
    /// CRDs and the Helm chart's RBAC, and the agent running with
    /// least-privilege identities on both sides.
    pub async fn start(test: &str, binary: &Path) -> Env {
        let mut env = Env::prepare(test, binary).await;
        env.start_agent(&[]);
        env
    }

    /// Like [`Env::start`], without starting the agent.
    pub async fn prepare(test: &str, binary: &Path) -> Env {
        Env::prepare_on(kcp(), None, test, binary).await
    }

    /// Like [`Env::prepare`], in `kcp`, with the org and provider
    /// workspaces on the shard labelled `region` (when given).
    pub async fn prepare_on(
        kcp: &'static Kcp,
        region: Option<&str>,
        test: &str,
        binary: &Path,
    ) -> Env {
        let org = kcp
            .create_workspace_in("root", &unique(test), region)
            .await
            .expect("org workspace");
        let provider = kcp
            .create_workspace_in(&org.path, "provider", region)
            .await
            .expect("provider workspace");
        let dir = kcp.root_dir.join(org.path.replace(':', "_"));
        std::fs::create_dir_all(&dir).unwrap();
        let service = ServiceCluster::start(&dir.join("service"))
            .await
            .expect("service cluster (kube-apiserver + etcd)");
        let service_client = service.admin_client().await.unwrap();
        apply_crds(&service_client, PR_CRD)
            .await
            .expect("PublishedResource CRD");
        apply_crds(&service_client, CRD).await.expect("CronTab CRD");
        apply_crds(&service_client, WASMPLUGIN_CRD)
            .await
            .expect("WasmPlugin CRD");
        install_chart_rbac(&service_client, AGENT_NAMESPACE)
            .await
            .expect("the Helm chart's RBAC on the service cluster");
        let provider_client = kcp.client(&provider.path).await.unwrap();
        apply_yaml(&provider_client, APIEXPORT)
            .await
            .expect("APIExport");
        grant_kcp_agent_rbac(&provider_client, AGENT_KCP_USER)
            .await
            .expect("the agent's kcp RBAC");
        service
            .write_admin_kubeconfig(&dir.join("service-admin.kubeconfig"))
            .unwrap();
        let agent_token = service
            .service_account_token(AGENT_NAMESPACE, CHART_SERVICE_ACCOUNT, 24)
            .await
            .expect("a token for the chart's ServiceAccount");
        Env {
            kcp,
            agent_token,
            org,
            provider,
            service,
            service_client,
            dir,
            agent: None,
            binary: binary.to_path_buf(),
            agent_env: Vec::new(),
        }
    }

    /// Run the agent as the chart's ServiceAccount on the service cluster and
    /// as [`AGENT_KCP_USER`] in kcp.
    pub fn start_agent(&mut self, extra: &[&str]) {
        self.start_agent_as(AGENT_KCP_TOKEN, extra)
    }

    /// Run the agent with the kcp identity of `kcp_token` (see [`crate::kcp`]).
    pub fn start_agent_as(&mut self, kcp_token: &str, extra: &[&str]) {
        let kcp_kc = self.kcp_kubeconfig(kcp_token);
        self.run_agent(&kcp_kc, extra);
    }

    /// Run the agent with the kcp admin's identity (for a kcp that knows no
    /// token users, like [`crate::sharded_kcp`]).
    pub fn start_agent_as_kcp_admin(&mut self, extra: &[&str]) {
        let kcp_kc = self.dir.join("kcp.kubeconfig");
        self.kcp
            .write_kubeconfig(&self.provider.path, &kcp_kc)
            .unwrap();
        self.run_agent(&kcp_kc, extra);
    }

    /// The kcp kubeconfig of the agent with the identity of `kcp_token`.
    fn kcp_kubeconfig(&self, kcp_token: &str) -> std::path::PathBuf {
        let kcp_kc = self.dir.join("kcp.kubeconfig");
        self.kcp
            .write_kubeconfig_with_token(&self.provider.path, kcp_token, &kcp_kc)
            .unwrap();
        kcp_kc
    }

    /// The service-cluster kubeconfig of the agent: the chart's ServiceAccount.
    fn service_kubeconfig(&self) -> std::path::PathBuf {
        let svc_kc = self.dir.join("service.kubeconfig");
        self.service
            .write_kubeconfig(CHART_SERVICE_ACCOUNT, &self.agent_token, &svc_kc)
            .unwrap();
        svc_kc
    }

    fn run_agent(&mut self, kcp_kc: &Path, extra: &[&str]) {
        let args = self.agent_args(kcp_kc, &self.service_kubeconfig(), extra);
        self.agent = None;
        let agent = Agent::start_with_env(
            &self.binary,
            &args,
            &self.agent_env,
            self.dir.join("agent.log"),
        )
        .expect("agent starts");
        self.agent = Some(agent);
    }

    /// Run upstream api-syncagent's `binary` in the agent's place, with the
    /// same identities and flags (a provider swapping binaries): the
    /// `sync` subcommand dropped, probes off (`--health-address 0`).
    pub fn start_upstream_agent(&mut self, binary: &Path) {
        let (kcp_kc, svc_kc) = (
            self.kcp_kubeconfig(AGENT_KCP_TOKEN),
            self.service_kubeconfig(),
        );
        let mut args = self.agent_args(&kcp_kc, &svc_kc, &["--health-address", "0"]);
        args.retain(|a| a != "sync");
        self.agent = None;
        let agent = Agent::start(binary, &args, self.dir.join("upstream-agent.log"))
            .expect("upstream api-syncagent starts");
        self.agent = Some(agent);
    }

    /// The sync agent's command line with these kubeconfigs (the service
    /// one as the chart's ServiceAccount), as [`Env::start_agent`] runs it.
    pub fn agent_args(&self, kcp_kc: &Path, svc_kc: &Path, extra: &[&str]) -> Vec<String> {
        self.agent_args_named(kcp_kc, svc_kc, AGENT_NAME, extra)
    }

    /// [`Env::agent_args`] for an agent named `name` (`--agent-name`).
    pub fn agent_args_named(
        &self,
        kcp_kc: &Path,
        svc_kc: &Path,
        name: &str,
        extra: &[&str],
    ) -> Vec<String> {
        let mut args: Vec<String> = [
            "sync",
            "--kcp-kubeconfig",
            kcp_kc.to_str().unwrap(),
            "--kubeconfig",
            svc_kc.to_str().unwrap(),
            "--namespace",
            AGENT_NAMESPACE,
            "--apiexportendpointslice-ref",
            EXPORT,
            "--agent-name",
            name,
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
        args
    }

    /// The PublishedResources on the service cluster.
    pub fn published_resources(&self) -> kube::Api<kube::api::DynamicObject> {
        dynamic_api(
            &self.service_client,
            &gvk("syncagent.kcp.io", "v1alpha1", "PublishedResource"),
            "publishedresources",
            None,
        )
    }

    /// Wait until PublishedResource `name` records its APIResourceSchema.
    pub async fn wait_for_schema(&self, name: &str) -> String {
        let prs = self.published_resources();
        eventually(
            &format!("status.resourceSchemaName of PublishedResource {name}"),
            Duration::from_secs(90),
            || async {
                let pr = get_opt(&prs, name).await?;
                Ok(pr.and_then(|p| str_at(&p, "/status/resourceSchemaName").map(str::to_string)))
            },
        )
        .await
    }

    /// Wait until PublishedResource `name` has condition Ready with `status`
    /// and `reason`, and return that condition.
    pub async fn wait_for_ready(
        &self,
        name: &str,
        status: &str,
        reason: &str,
    ) -> serde_json::Value {
        self.wait_for_condition(name, "Ready", status, reason).await
    }

    /// Wait until PublishedResource `name` has condition `type_` with
    /// `status` and `reason`, and return that condition.
    pub async fn wait_for_condition(
        &self,
        name: &str,
        type_: &str,
        status: &str,
        reason: &str,
    ) -> serde_json::Value {
        let prs = self.published_resources();
        eventually(
            &format!("PublishedResource {name} {type_}={status} ({reason})"),
            Duration::from_secs(90),
            || async {
                let pr = get_opt(&prs, name).await?;
                Ok(pr.and_then(|p| {
                    p.data["status"]["conditions"]
                        .as_array()
                        .and_then(|cs| cs.iter().find(|c| c["type"] == type_))
                        .filter(|c| c["status"] == status && c["reason"] == reason)
                        .cloned()
                }))
            },
        )
        .await
    }

    /// Reconcile passes of the kcp object `key` (`cluster|ns/name`) the
    /// agent has finished (see [`Agent::passes`]).
    pub fn passes(&self, key: &str) -> usize {
        self.agent.as_ref().expect("the agent runs").passes(key)
    }

    /// Wait until the agent has finished at least `n` reconcile passes of
    /// `key` in all: the positive signal that it looked at the object, before
    /// a test checks that something did not happen.
    pub async fn wait_for_passes(&self, key: &str, n: usize) {
        let agent = self.agent.as_ref().expect("the agent runs");
        eventually(
            &format!("{n} reconcile passes of {key}"),
            Duration::from_secs(90),
            || async { Ok((agent.passes(key) >= n).then_some(())) },
        )
        .await;
    }

    /// The APIExports of the provider workspace (the agent's is [`EXPORT`]).
    pub async fn apiexports(&self) -> kube::Api<kube::api::DynamicObject> {
        apiexports_of(&self.kcp.client(&self.provider.path).await.unwrap())
    }

    /// Wait until the APIExport claims `group`/`resource`.
    pub async fn wait_for_export_claim(&self, group: &str, resource: &str) {
        wait_for_claim(&self.apiexports().await, EXPORT, group, resource).await;
    }

    /// Publish a custom PublishedResource manifest.
    pub async fn publish_yaml(&self, yaml: &str) {
        apply_yaml(&self.service_client, yaml)
            .await
            .expect("PublishedResource");
    }

    pub async fn publish(&self) {
        apply_yaml(&self.service_client, PUBLISHED_RESOURCE)
            .await
            .expect("PublishedResource");
    }

    /// A consumer workspace bound to the export, with CronTabs served.
    pub async fn consumer(&self, name: &str) -> (Workspace, Client) {
        self.consumer_accepting(name, &[("", "events")]).await
    }

    /// Like [`Env::consumer`], accepting the export's permission claims on
    /// these (group, resource)s.
    pub async fn consumer_accepting(
        &self,
        name: &str,
        claims: &[(&str, &str)],
    ) -> (Workspace, Client) {
        self.consumer_serving(
            name,
            claims,
            &gvk("example.com", "v1", "CronTab"),
            "crontabs",
        )
        .await
    }

    /// A consumer workspace bound to the export (accepting `claims`), once
    /// the published resource `gvk`/`plural` is served there.
    pub async fn consumer_serving(
        &self,
        name: &str,
        claims: &[(&str, &str)],
        served: &kube::api::GroupVersionKind,
        plural: &str,
    ) -> (Workspace, Client) {
        self.consumer_in(name, None, claims, served, plural).await
    }

    /// Like [`Env::consumer_serving`], with the workspace on the shard
    /// labelled `region` (when given).
    pub async fn consumer_in(
        &self,
        name: &str,
        region: Option<&str>,
        claims: &[(&str, &str)],
        served: &kube::api::GroupVersionKind,
        plural: &str,
    ) -> (Workspace, Client) {
        bind_consumer(
            self.kcp,
            &self.org.path,
            &self.provider.path,
            Consumer {
                name,
                region,
                claims,
                served,
                plural,
            },
        )
        .await
    }
}

/// A consumer workspace to create by [`bind_consumer`].
pub struct Consumer<'a> {
    pub name: &'a str,
    /// The shard label `region` to schedule it on, if any.
    pub region: Option<&'a str>,
    /// The export's permission claims it accepts, as (group, resource).
    pub claims: &'a [(&'a str, &'a str)],
    /// What the export serves there, waited for.
    pub served: &'a kube::api::GroupVersionKind,
    pub plural: &'a str,
}

/// A consumer workspace in `kcp` under `org`, bound to the APIExport
/// [`EXPORT`] of workspace `provider`, once the published resource is
/// served there.
pub async fn bind_consumer(
    kcp: &Kcp,
    org: &str,
    provider: &str,
    c: Consumer<'_>,
) -> (Workspace, Client) {
    let Consumer {
        name,
        region,
        claims,
        served,
        plural,
    } = c;
    let ws = kcp
        .create_workspace_in(org, name, region)
        .await
        .expect("consumer workspace");
    let client = kcp.client(&ws.path).await.unwrap();
    apply(
        &client,
        &json!({
            "apiVersion": "apis.kcp.io/v1alpha1",
            "kind": "APIBinding",
            "metadata": {"name": EXPORT},
            "spec": {
                "reference": {"export": {"path": provider, "name": EXPORT}},
                "permissionClaims": claims
                    .iter()
                    .map(|(g, r)| json!({"group": g, "resource": r, "all": true, "state": "Accepted"}))
                    .collect::<Vec<_>>(),
            },
        }),
    )
    .await
    .expect("APIBinding");
    let objects = dynamic_api(&client, served, plural, Some("default"));
    eventually(
        &format!("{plural} served in consumer {name}"),
        Duration::from_secs(90),
        || async {
            objects
                .list(&Default::default())
                .await
                .map(|_| Some(()))
                .map_err(|e| e.to_string())
        },
    )
    .await;
    (ws, client)
}

/// The ServiceAccount the Helm chart creates for a release named `syncweave`.
pub const CHART_SERVICE_ACCOUNT: &str = "syncweave";

/// Apply the ServiceAccount and RBAC that `helm template` renders from
/// `charts/syncweave` (values: `tests/chart/upstream-values.yaml`, as an
/// upstream user writes them, plus `e2e-values.yaml` naming the CronTab API),
/// so the agent runs with exactly the chart's permissions.
pub async fn install_chart_rbac(client: &Client, namespace: &str) -> anyhow::Result<()> {
    use anyhow::Context as _;
    apply(
        client,
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}),
    )
    .await?;
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let helm = crate::kcp::tools_dir().join("helm");
    let out = std::process::Command::new(&helm)
        .args(["template", "syncweave"])
        .arg(repo.join("charts/syncweave"))
        .args(["--namespace", namespace, "--values"])
        .arg(repo.join("tests/chart/upstream-values.yaml"))
        .arg("--values")
        .arg(repo.join("tests/chart/e2e-values.yaml"))
        .output()
        .with_context(|| format!("running {} (tests/setup.sh builds it)", helm.display()))?;
    anyhow::ensure!(
        out.status.success(),
        "helm template failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rendered = String::from_utf8(out.stdout)?;
    let mut wanted = String::new();
    for doc in rendered.split("\n---") {
        let kind = doc
            .lines()
            .find_map(|l| l.strip_prefix("kind:"))
            .map(str::trim)
            .unwrap_or_default();
        if matches!(
            kind,
            "ServiceAccount" | "ClusterRole" | "ClusterRoleBinding" | "Role" | "RoleBinding"
        ) {
            wanted.push_str("---\n");
            wanted.push_str(doc.trim_start_matches('\n'));
            wanted.push('\n');
        }
    }
    anyhow::ensure!(
        wanted.contains("kind: ServiceAccount"),
        "the chart rendered no ServiceAccount"
    );
    apply_yaml(client, &wanted).await?;
    Ok(())
}

/// What the sync agent needs in the workspace of its APIExport, exactly as
/// docs/rbac.md lists it.
pub const KCP_AGENT_RBAC: &str = include_str!("../../docs/rbac/kcp-sync.yaml");

/// [`KCP_AGENT_RBAC`] for `user` and the e2e export.
pub fn kcp_agent_rbac_for(user: &str) -> String {
    KCP_AGENT_RBAC
        .replace(
            "kind: User\n    name: syncweave-sync\n",
            &format!("kind: User\n    name: {user}\n"),
        )
        .replace("\"my-api\"", &format!("\"{EXPORT}\""))
}

/// Grant `user` the agent's kcp permissions in the provider workspace.
pub async fn grant_kcp_agent_rbac(client: &Client, user: &str) -> anyhow::Result<()> {
    let yaml = kcp_agent_rbac_for(user);
    anyhow::ensure!(
        yaml.contains(user),
        "docs/rbac/kcp-sync.yaml no longer names User syncweave-sync"
    );
    apply_yaml(client, &yaml).await?;
    Ok(())
}

/// Give the agent's ServiceAccount on the service cluster access to
/// `group`/`resources`, as a provider does for related types the chart's
/// `rbac.publishedResources` does not list (or its own published types).
pub async fn grant_agent_access(env: &Env, group: &str, resources: &[&str]) {
    let name = format!("e2e-agent-access-{}", group.replace('.', "-"));
    apply_yaml(
        &env.service_client,
        &format!(
            r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {{name: {name}}}
rules:
  - apiGroups: ["{group}"]
    resources: {resources:?}
    verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {{name: {name}}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: {name}}}
subjects:
  - {{kind: ServiceAccount, name: {CHART_SERVICE_ACCOUNT}, namespace: {AGENT_NAMESPACE}}}
"#
        ),
    )
    .await
    .expect("RBAC for the related type");
}

/// Bind the export `export` of workspace `export_path` under the binding
/// name `binding`, accepting `claims` ((group, resource, identity hash)),
/// and wait until `served` ((group, version, plural)) is served.
pub async fn bind(
    client: &Client,
    binding: &str,
    export_path: &str,
    export: &str,
    claims: &[(&str, &str, &str)],
    served: (&str, &str, &str),
) {
    apply(
        client,
        &json!({
            "apiVersion": "apis.kcp.io/v1alpha1",
            "kind": "APIBinding",
            "metadata": {"name": binding},
            "spec": {
                "reference": {"export": {"path": export_path, "name": export}},
                "permissionClaims": claims.iter().map(|(g, r, h)| {
                    let mut c = json!({"group": g, "resource": r, "all": true, "state": "Accepted"});
                    if !h.is_empty() {
                        c["identityHash"] = json!(h);
                    }
                    c
                }).collect::<Vec<_>>(),
            },
        }),
    )
    .await
    .unwrap_or_else(|e| panic!("APIBinding {binding}: {e:#}"));
    let (group, version, plural) = served;
    let api = dynamic_api(client, &gvk(group, version, ""), plural, Some("default"));
    eventually(
        &format!("{plural}.{group} served"),
        Duration::from_secs(90),
        || async {
            api.list(&Default::default())
                .await
                .map(|_| Some(()))
                .map_err(|e| e.to_string())
        },
    )
    .await;
}

/// The APIExports of a workspace, through `client`.
pub fn apiexports_of(client: &Client) -> kube::Api<kube::api::DynamicObject> {
    dynamic_api(
        client,
        &gvk("apis.kcp.io", "v1alpha1", "APIExport"),
        "apiexports",
        None,
    )
}

/// Wait until APIExport `export` (of `exports`) claims `group`/`resource`.
pub async fn wait_for_claim(
    exports: &kube::Api<kube::api::DynamicObject>,
    export: &str,
    group: &str,
    resource: &str,
) {
    eventually(
        &format!("the {resource}.{group} permission claim on APIExport {export}"),
        Duration::from_secs(90),
        || async {
            let e = get_opt(exports, export).await?;
            Ok(e.filter(|e| {
                e.data["spec"]["permissionClaims"]
                    .as_array()
                    .is_some_and(|cs| {
                        cs.iter().any(|c| {
                            c["group"].as_str().unwrap_or("") == group && c["resource"] == resource
                        })
                    })
            }))
        },
    )
    .await;
}

/// The `status.identityHash` of APIExport `export` (of `exports`), once
/// kcp has set it.
pub async fn export_identity(
    exports: &kube::Api<kube::api::DynamicObject>,
    export: &str,
) -> String {
    eventually(
        &format!("the identity hash of APIExport {export}"),
        Duration::from_secs(90),
        || async {
            let e = get_opt(exports, export).await?;
            Ok(e.and_then(|e| {
                str_at(&e, "/status/identityHash")
                    .filter(|h| !h.is_empty())
                    .map(str::to_string)
            }))
        },
    )
    .await
}
