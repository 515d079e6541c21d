//! Plugin contract 0.2 on the sync path, as a provider uses it: plugins
//! that read other objects (answered from the agent's caches, only what
//! `spec.reads` allows), report warnings beside their output (Events on the
//! consumer's object, the `PluginWarnings` condition), and hand values to
//! later steps of a mutation chain (`.Context` in templates, `context` in
//! CEL). The plugins are the examples, built from source by
//! examples/build.sh.

use std::time::Duration;

use kube::api::{Patch, PatchParams, PostParams};
use serde_json::json;
use syncweave_tests::env::*;
use syncweave_tests::*;

/// Long enough for a cold compile of a Python or JavaScript component (an
/// 18 MB component took 72 s in a debug build with four tests running on
/// two cores); a wait ends as soon as what it waits for is there. Still
/// shorter than the agent's periodic re-check (5 min), so test (a) fails
/// if a read object's change does not wake its readers.
const WAIT: Duration = Duration::from_secs(180);

/// VirtualMachines (`compute.example.com/v1`, any content) on the service
/// cluster, which the agent may manage.
async fn vm_kind(env: &Env) {
    apply_crds(
        &env.service_client,
        &free_form_crd(
            "compute.example.com",
            "VirtualMachine",
            "virtualmachines",
            true,
        ),
    )
    .await
    .expect("VirtualMachine CRD");
    grant_agent_access(env, "compute.example.com", &["virtualmachines"]).await;
}

fn vm_gvk() -> kube::api::GroupVersionKind {
    gvk("compute.example.com", "v1", "VirtualMachine")
}

fn vms(client: &kube::Client, ns: &str) -> kube::Api<kube::api::DynamicObject> {
    dynamic_api(client, &vm_gvk(), "virtualmachines", Some(ns))
}

fn vm(name: &str, spec: serde_json::Value) -> kube::api::DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "compute.example.com/v1", "kind": "VirtualMachine",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }))
    .unwrap()
}

/// A PublishedResource of VirtualMachines whose kcp-side ConfigMaps named
/// at `spec.subnetRef` are related objects, with the Python example filling
/// `spec.subnetID` from them; `reads` is the `spec.reads` block.
fn subnet_pr(reads: &str) -> String {
    format!(
        r#"
apiVersion: syncagent.kcp.io/v1alpha1
kind: PublishedResource
metadata:
  name: publish-vms
spec:
  resource: {{kind: VirtualMachine, apiGroup: compute.example.com, versions: [v1]}}
  naming: {{namespace: "{{{{ .ClusterName }}}}", name: "{{{{ .Object.metadata.name }}}}"}}
  related:
    - identifier: subnet
      origin: kcp
      kind: ConfigMap
      object:
        reference: {{path: spec.subnetRef}}
  mutation:
    spec:
      - wasm:
          source: file://{}
{reads}"#,
        author::example_plugin("python-subnet")
    )
}

/// Build the plugin project `<repo>/<dir>` with `syncweave plugin build`
/// into target/plugins, as a provider would; the path of component `name`.
fn build_plugin(dir: &str, name: &str) -> String {
    let out = author::repo().join("target/plugins");
    let result = std::process::Command::new(crate::binary())
        .args(["plugin", "build"])
        .arg(author::repo().join(dir))
        .arg("--out")
        .arg(&out)
        .output()
        .expect("syncweave plugin build runs");
    assert!(
        result.status.success(),
        "plugin build {name} failed ({}): {}",
        result.status,
        String::from_utf8_lossy(&result.stderr)
    );
    out.join(format!("{name}.wasm"))
        .to_string_lossy()
        .into_owned()
}

/// A consumer serving VirtualMachines whose binding accepts the claim
/// (`group`, `resource`) that a `spec.reads` entry adds to the export
/// (waited for first): `namespaces` for `consumerNamespace`,
/// `core.kcp.io logicalclusters` for `logicalCluster`.
async fn consumer_accepting(env: &Env, group: &str, resource: &str) -> (Workspace, kube::Client) {
    env.wait_for_export_claim(group, resource).await;
    env.consumer_serving(
        "consumer",
        &[("", "events"), (group, resource)],
        &vm_gvk(),
        "virtualmachines",
    )
    .await
}

/// A PublishedResource of VirtualMachines (copies in the namespace named
/// after the workspace) whose spec mutation is one `wasm` step of the
/// component at `source` with `config`; `reads` is `spec.reads`.
fn one_step_pr(reads: &str, source: &str, config: &str) -> String {
    format!(
        r#"
apiVersion: syncagent.kcp.io/v1alpha1
kind: PublishedResource
metadata:
  name: publish-vms
spec:
  resource: {{kind: VirtualMachine, apiGroup: compute.example.com, versions: [v1]}}
  naming: {{namespace: "{{{{ .ClusterName }}}}", name: "{{{{ .Object.metadata.name }}}}"}}
  reads: {reads}
  mutation:
    spec:
      - wasm:
          source: file://{source}
          config: {config}
"#
    )
}

/// Merge `labels` into the consumer's Namespace `default`.
async fn label_default_namespace(client: &kube::Client, labels: serde_json::Value) {
    kube::Api::<k8s_openapi::api::core::v1::Namespace>::all(client.clone())
        .patch(
            "default",
            &PatchParams::default(),
            &Patch::Merge(&json!({"metadata": {"labels": labels}})),
        )
        .await
        .unwrap();
}

/// Example (a): a Go plugin, built from source here, copies the labels of
/// the consumer's Namespace (under a prefix) onto the copy, and the copy
/// follows when those labels change: the agent watches what the plugin
/// read (`spec.reads.consumerNamespace`) and re-syncs the objects that read
/// it. Nothing else would: this PublishedResource has no related objects,
/// so its periodic re-check is the agent's `--resync` (5 minutes).
#[tokio::test(flavor = "multi_thread")]
async fn a_go_plugin_copies_the_consumer_namespace_labels_and_follows_their_changes() {
    if std::process::Command::new("go")
        .arg("version")
        .output()
        .is_err()
    {
        panic!("`go` is not on PATH: install Go 1.24 or newer (tests/run.sh expects it)");
    }
    let labeler = build_plugin("examples/go-labeler", "go-labeler");
    let env = Env::start("contract-a", crate::binary()).await;
    vm_kind(&env).await;
    env.publish_yaml(&one_step_pr(
        "{consumerNamespace: true}",
        &labeler,
        "{prefix: consumer.example.com/, keys: [team, cost-center]}",
    ))
    .await;
    let (consumer, client) = consumer_accepting(&env, "", "namespaces").await;
    label_default_namespace(
        &client,
        json!({"team": "web", "cost-center": "cc-7", "other": "x"}),
    )
    .await;
    vms(&client, "default")
        .create(&PostParams::default(), &vm("vm", json!({"cpus": 2})))
        .await
        .unwrap();
    let local = vms(&env.service_client, &consumer.cluster);
    let label = |c: &kube::api::DynamicObject, k: &str| {
        c.metadata.labels.as_ref().and_then(|l| l.get(k).cloned())
    };
    let copy = eventually("the copy with the Namespace's labels", WAIT, || async {
        Ok(get_opt(&local, "vm")
            .await?
            .filter(|c| label(c, "consumer.example.com/team").is_some()))
    })
    .await;
    assert_eq!(
        label(&copy, "consumer.example.com/team").as_deref(),
        Some("web")
    );
    assert_eq!(
        label(&copy, "consumer.example.com/cost-center").as_deref(),
        Some("cc-7")
    );
    assert_eq!(
        label(&copy, "consumer.example.com/other"),
        None,
        "only the keys listed"
    );

    // The consumer relabels the Namespace; the copy follows.
    label_default_namespace(&client, json!({"team": "payments"})).await;
    eventually("the copy with the new team", WAIT, || async {
        Ok(get_opt(&local, "vm")
            .await?
            .filter(|c| label(c, "consumer.example.com/team").as_deref() == Some("payments")))
    })
    .await;
    env.wait_for_ready("publish-vms", "True", "Syncing").await;
}

/// A 0.2 namer reads as a mutator does: tests/plugins/team-namer (built
/// from source here) places each copy in the service namespace of its
/// consumer's team, a label on the consumer's Namespace. Until the label is
/// there the namer fails, naming it, and the PublishedResource says so; the
/// label's arrival wakes the object (the agent watches what the namer read).
#[tokio::test(flavor = "multi_thread")]
async fn a_namer_places_the_copy_by_a_label_of_the_consumer_namespace() {
    let namer = build_plugin("tests/plugins/team-namer", "test-team-namer");
    let env = Env::start("contract-d", crate::binary()).await;
    vm_kind(&env).await;
    env.publish_yaml(&format!(
        r#"
apiVersion: syncagent.kcp.io/v1alpha1
kind: PublishedResource
metadata:
  name: publish-vms
spec:
  resource: {{kind: VirtualMachine, apiGroup: compute.example.com, versions: [v1]}}
  naming: {{wasm: {{source: file://{namer}}}}}
  reads: {{consumerNamespace: true}}
"#
    ))
    .await;
    let (_consumer, client) = consumer_accepting(&env, "", "namespaces").await;
    vms(&client, "default")
        .create(&PostParams::default(), &vm("vm", json!({"cpus": 2})))
        .await
        .unwrap();
    // No `team` label yet: the namer refuses, and the PublishedResource
    // says which object fails and why.
    let prs = env.published_resources();
    eventually("Ready=False naming the missing label", WAIT, || async {
        let pr = prs.get("publish-vms").await.map_err(|e| e.to_string())?;
        let ready = pr.data["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["type"] == "Ready")
            .cloned();
        Ok(ready.filter(|c| {
            c["status"] == "False"
                && c["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("has no label `team`"))
        }))
    })
    .await;

    label_default_namespace(&client, json!({"team": "blue"})).await;
    let local = vms(&env.service_client, "team-blue");
    let copy = eventually("the copy in the team's namespace", WAIT, || async {
        get_opt(&local, "default-vm").await
    })
    .await;
    assert_eq!(copy.data["spec"]["cpus"], 2);
    env.wait_for_ready("publish-vms", "True", "Syncing").await;
}

/// A plugin reads the LogicalCluster of the consumer's workspace
/// (`spec.reads.logicalCluster`, tests/plugins/reader built from source
/// here): the copy carries the workspace's path, and follows an annotation
/// of the LogicalCluster when an administrator changes it (the agent caches
/// LogicalClusters through the virtual workspace and wakes the objects
/// that read the changed one).
#[tokio::test(flavor = "multi_thread")]
async fn a_plugin_reads_the_consumer_logical_cluster_and_follows_its_annotations() {
    let reader = build_plugin("tests/plugins/reader", "test-reader");
    let env = Env::start("contract-e", crate::binary()).await;
    vm_kind(&env).await;
    env.publish_yaml(&one_step_pr(
        "{logicalCluster: true}",
        &reader,
        "{mode: logical-cluster}",
    ))
    .await;
    let (consumer, client) = consumer_accepting(&env, "core.kcp.io", "logicalclusters").await;
    vms(&client, "default")
        .create(&PostParams::default(), &vm("vm", json!({"cpus": 2})))
        .await
        .unwrap();
    let local = vms(&env.service_client, &consumer.cluster);
    let annotation = |c: &kube::api::DynamicObject, k: &str| {
        c.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(k).cloned())
    };
    let copy = eventually("the copy with the workspace path", WAIT, || async {
        Ok(get_opt(&local, "vm")
            .await?
            .filter(|c| annotation(c, "syncweave.test/workspace-path").is_some()))
    })
    .await;
    assert_eq!(
        annotation(&copy, "syncweave.test/workspace-path").as_deref(),
        Some(consumer.path.as_str())
    );
    assert_eq!(annotation(&copy, "syncweave.test/tier"), None);

    // An administrator annotates the workspace's LogicalCluster; the copy
    // follows well before the periodic re-check (5 min).
    dynamic_api(
        &client,
        &gvk("core.kcp.io", "v1alpha1", "LogicalCluster"),
        "logicalclusters",
        None,
    )
    .patch(
        "cluster",
        &PatchParams::default(),
        &Patch::Merge(&json!({"metadata": {"annotations": {"example.com/tier": "gold"}}})),
    )
    .await
    .unwrap();
    eventually("the copy with the new tier", WAIT, || async {
        Ok(get_opt(&local, "vm")
            .await?
            .filter(|c| annotation(c, "syncweave.test/tier").as_deref() == Some("gold")))
    })
    .await;
    env.wait_for_ready("publish-vms", "True", "Syncing").await;
}

/// Example (b): a Python plugin fills a field from a related object and
/// warns while that object is missing; the object syncs all along, and
/// the field follows the related object when it appears and changes. A
/// read outside `spec.reads` fails the call with a message naming the
/// allow-list.
#[tokio::test(flavor = "multi_thread")]
async fn a_python_plugin_fills_a_field_from_a_related_object_and_warns_while_it_is_missing() {
    let env = Env::start("contract-b", crate::binary()).await;
    vm_kind(&env).await;
    // 1. Without `spec.reads`, the read is refused, naming the allow-list.
    env.publish_yaml(&subnet_pr("")).await;
    env.wait_for_export_claim("", "configmaps").await;
    let (consumer, client) = env
        .consumer_serving(
            "consumer",
            &[("", "events"), ("", "configmaps"), ("", "namespaces")],
            &vm_gvk(),
            "virtualmachines",
        )
        .await;
    vms(&client, "default")
        .create(
            &PostParams::default(),
            &vm("vm", json!({"cpus": 2, "subnetRef": "net-a"})),
        )
        .await
        .unwrap();
    let refused = env
        .wait_for_ready("publish-vms", "False", "ObjectsFailing")
        .await;
    let message = refused["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("outside the read allow-list")
            && message.contains("spec.reads")
            && message.contains("configmaps"),
        "{refused}"
    );

    // 2. Allowed: the copy syncs without the field, with a Warning.
    env.publish_yaml(&subnet_pr("  reads: {related: true}\n"))
        .await;
    let local = vms(&env.service_client, &consumer.cluster);
    let copy = eventually("the copy", WAIT, || async { get_opt(&local, "vm").await }).await;
    assert_eq!(copy.data.pointer("/spec/subnetID"), None, "{:?}", copy.data);
    let warning = eventually("the SubnetMissing Warning", WAIT, || async {
        Ok(events_about(&client, "vm")
            .await?
            .into_iter()
            .find(|(reason, _, _)| reason == "SubnetMissing"))
    })
    .await;
    assert_eq!(warning.1, "Warning", "{warning:?}");
    assert!(
        warning.2.contains("ConfigMap default/net-a does not exist")
            && warning.2.contains("spec.mutation.spec[0].wasm"),
        "{warning:?}"
    );
    let condition = env
        .wait_for_condition("publish-vms", "PluginWarnings", "True", "Warnings")
        .await;
    assert!(
        condition["message"]
            .as_str()
            .unwrap_or_default()
            .starts_with("1 object(s) have plugin warnings"),
        "{condition}"
    );
    // A warning does not fail the sync.
    env.wait_for_ready("publish-vms", "True", "Syncing").await;

    // 3. The related object appears: the field is filled, the warning goes.
    let configmaps = dynamic_api(
        &client,
        &gvk("", "v1", "ConfigMap"),
        "configmaps",
        Some("default"),
    );
    configmaps
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "net-a", "namespace": "default"},
                "data": {"subnetID": "subnet-0a1b"},
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    eventually("spec.subnetID from the ConfigMap", WAIT, || async {
        Ok(get_opt(&local, "vm")
            .await?
            .filter(|c| str_at(c, "/spec/subnetID") == Some("subnet-0a1b")))
    })
    .await;
    env.wait_for_condition("publish-vms", "PluginWarnings", "False", "NoWarnings")
        .await;

    // 4. And follows it when it changes.
    configmaps
        .patch(
            "net-a",
            &PatchParams::default(),
            &Patch::Merge(&json!({"data": {"subnetID": "subnet-9z"}})),
        )
        .await
        .unwrap();
    eventually("the changed subnet on the copy", WAIT, || async {
        Ok(get_opt(&local, "vm")
            .await?
            .filter(|c| str_at(c, "/spec/subnetID") == Some("subnet-9z")))
    })
    .await;
}

/// Example (c): a `wasm` step sets a context value that a template step and
/// a CEL step after it use.
#[tokio::test(flavor = "multi_thread")]
async fn a_wasm_step_sets_a_context_value_that_template_and_cel_steps_use() {
    let env = Env::start("contract-c", crate::binary()).await;
    vm_kind(&env).await;
    env.publish_yaml(&format!(
        r#"
apiVersion: syncagent.kcp.io/v1alpha1
kind: PublishedResource
metadata:
  name: publish-vms
spec:
  resource: {{kind: VirtualMachine, apiGroup: compute.example.com, versions: [v1]}}
  naming: {{namespace: "{{{{ .ClusterName }}}}", name: "{{{{ .Object.metadata.name }}}}"}}
  mutation:
    spec:
      - wasm:
          source: file://{}
      - template:
          path: metadata.annotations.example\.com/tenant
          template: "{{{{ .Context.tenant }}}}"
      - cel:
          path: spec.owner
          expression: "context.tenant + '-ops'"
"#,
        author::example_plugin("rust-tenant")
    ))
    .await;
    let (consumer, client) = env
        .consumer_serving("consumer", &[("", "events")], &vm_gvk(), "virtualmachines")
        .await;
    let kcp_api = vms(&client, "default");
    let mut labelled = vm("labelled", json!({"cpus": 1}));
    labelled.metadata.labels =
        Some([("example.com/tenant".to_string(), "acme".to_string())].into());
    for obj in [labelled, vm("plain", json!({"cpus": 1}))] {
        kcp_api.create(&PostParams::default(), &obj).await.unwrap();
    }
    let local = vms(&env.service_client, &consumer.cluster);
    let tenant_of = |c: &kube::api::DynamicObject| {
        c.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("example.com/tenant").cloned())
    };
    let copy = eventually("the labelled copy", WAIT, || async {
        get_opt(&local, "labelled").await
    })
    .await;
    assert_eq!(tenant_of(&copy).as_deref(), Some("acme"), "template step");
    assert_eq!(str_at(&copy, "/spec/owner"), Some("acme-ops"), "CEL step");
    // Without the label, the workspace names the tenant.
    let copy = eventually("the plain copy", WAIT, || async {
        get_opt(&local, "plain").await
    })
    .await;
    let short: String = consumer.cluster.chars().take(8).collect();
    assert_eq!(
        tenant_of(&copy),
        Some(format!("t-{short}")),
        "{:?}",
        copy.metadata
    );
    assert_eq!(
        str_at(&copy, "/spec/owner").map(str::to_string),
        Some(format!("t-{short}-ops"))
    );
}
