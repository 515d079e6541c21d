//! The life of objects and workspaces (docs/lifecycle.md): a kcp object
//! held by the agents of two providers (api-syncagent #172/#117), waiting
//! for other finalizers (#115), deleted consumer workspaces (#113), and two
//! agents started under one name.

use std::time::Duration;

use kube::api::{Api, DeleteParams, DynamicObject};
use serde_json::json;
use syncweave::sync::labels::FINALIZER;
use syncweave_tests::env::*;
use syncweave_tests::*;

const WAIT: Duration = Duration::from_secs(90);
/// The name of the example PublishedResource ([`PUBLISHED_RESOURCE`]).
const PR_NAME: &str = "publish-crontabs";

fn finalizers(obj: &DynamicObject) -> Vec<String> {
    obj.metadata.finalizers.clone().unwrap_or_default()
}

/// The command line of a second agent (`name`, selecting the
/// PublishedResources labelled `e2e.syncweave.dev/agent=<selector>`) whose
/// kcp kubeconfig points at `kcp_kc`.
fn second_agent_args(
    env: &Env,
    kcp_kc: &std::path::Path,
    name: &str,
    selector: &str,
) -> Vec<String> {
    env.agent_args_named(
        kcp_kc,
        &env.dir.join("service.kubeconfig"),
        name,
        &[&format!(
            "--published-resource-selector=e2e.syncweave.dev/agent={selector}"
        )],
    )
}

/// Stop `agent` (SIGTERM) and wait until its process is gone.
async fn stop(agent: Agent) {
    agent.signal(libc::SIGTERM);
    eventually("the agent process to exit", WAIT, || async {
        Ok((!agent.is_running()).then_some(()))
    })
    .await;
}

/// api-syncagent #172 (and #117): provider A publishes Networks; provider
/// B publishes VirtualMachines whose related resource (origin kcp) is the
/// consumer's Network, by identity of A's export. Both agents hold the same
/// kcp Network: A as its primary (its copy on the service cluster), B as a
/// related original (B's copy of it, a Note). Upstream gives both holds one
/// finalizer name, `syncagent.kcp.io/cleanup`, so one agent releases the
/// other's: B removes it when a VirtualMachine goes while A still has a
/// copy of the Network, and A re-adds it (upstream's requeue then loops).
///
/// With `lifecycle.relatedFinalizer: PerAgent` on B's PublishedResource,
/// B holds the Network with its own finalizer:
/// 1. deleting the VirtualMachine completes (B's copy of the Network goes),
///    and the Network and A's copy stay;
/// 2. while A is stopped, deleting another VirtualMachine still leaves A's
///    finalizer on the Network (nobody could put it back);
/// 3. deleting the Network while A is stopped does not delete it from kcp:
///    A's finalizer holds it until A, back, deletes its copy; then it goes.
#[tokio::test(flavor = "multi_thread")]
async fn agents_of_two_providers_share_a_kcp_object() {
    let mut env = Env::prepare("lifecycle-shared", crate::binary()).await;
    let kcp = env.kcp;
    for (group, kind, plural) in [
        ("net.example.com", "Network", "networks"),
        ("compute.example.com", "VirtualMachine", "virtualmachines"),
    ] {
        apply_crds(
            &env.service_client,
            &free_form_crd(group, kind, plural, true),
        )
        .await
        .expect("CRD");
        grant_agent_access(&env, group, &[plural]).await;
    }
    apply_crds(&env.service_client, NOTE_CRD)
        .await
        .expect("Note CRD");

    // Provider A (the environment's agent): Networks.
    env.start_agent(&["--published-resource-selector=e2e.syncweave.dev/agent=a"]);
    env.publish_yaml(
        r#"
apiVersion: syncagent.kcp.io/v1alpha1
kind: PublishedResource
metadata: {name: publish-networks, labels: {e2e.syncweave.dev/agent: a}}
spec:
  resource: {apiGroup: net.example.com, kind: Network, versions: [v1]}
"#,
    )
    .await;
    env.wait_for_schema("publish-networks").await;
    let identity_a = export_identity(&env.apiexports().await, EXPORT).await;

    // Provider B: its own workspace, export and agent; VirtualMachines whose
    // Network (in kcp, of A's export) is copied down as a Note.
    let provider_b = kcp
        .create_workspace_in(&env.org.path, "provider-b", None)
        .await
        .expect("provider-b workspace");
    let provider_b_client = kcp.client(&provider_b.path).await.unwrap();
    apply_yaml(&provider_b_client, APIEXPORT)
        .await
        .expect("provider-b's APIExport");
    grant_kcp_agent_rbac(&provider_b_client, AGENT_KCP_USER)
        .await
        .expect("agent-b's kcp RBAC");
    env.publish_yaml(&format!(
        r#"
apiVersion: syncagent.kcp.io/v1alpha1
kind: PublishedResource
metadata: {{name: publish-vms, labels: {{e2e.syncweave.dev/agent: b}}}}
spec:
  resource: {{apiGroup: compute.example.com, kind: VirtualMachine, versions: [v1]}}
  lifecycle: {{relatedFinalizer: PerAgent}}
  related:
    - identifier: network
      origin: kcp
      group: net.example.com
      version: v1
      resource: networks
      identityHash: {identity_a}
      projection: {{group: example.com, resource: notes}}
      object:
        reference: {{path: spec.network}}
"#
    ))
    .await;
    let kcp_kc_b = env.dir.join("kcp-b.kubeconfig");
    kcp.write_kubeconfig_with_token(&provider_b.path, AGENT_KCP_TOKEN, &kcp_kc_b)
        .unwrap();
    let agent_b = Agent::start(
        &env.binary,
        &second_agent_args(&env, &kcp_kc_b, "agent-b", "b"),
        env.dir.join("agent-b.log"),
    )
    .unwrap();
    wait_for_claim(
        &apiexports_of(&provider_b_client),
        EXPORT,
        "net.example.com",
        "networks",
    )
    .await;

    // The consumer binds both providers' exports.
    let ws = kcp
        .create_workspace_in(&env.org.path, "consumer", None)
        .await
        .expect("consumer workspace");
    let client = kcp.client(&ws.path).await.unwrap();
    bind(
        &client,
        "networks",
        &env.provider.path,
        EXPORT,
        &[("", "events", "")],
        ("net.example.com", "v1", "networks"),
    )
    .await;
    bind(
        &client,
        "vms",
        &provider_b.path,
        EXPORT,
        &[
            ("", "events", ""),
            ("", "namespaces", ""),
            ("net.example.com", "networks", &identity_a),
        ],
        ("compute.example.com", "v1", "virtualmachines"),
    )
    .await;
    let networks = dynamic_api(
        &client,
        &gvk("net.example.com", "v1", "Network"),
        "networks",
        Some("default"),
    );
    let vms = dynamic_api(
        &client,
        &gvk("compute.example.com", "v1", "VirtualMachine"),
        "virtualmachines",
        Some("default"),
    );
    let vm = |name: &str| {
        json!({
            "apiVersion": "compute.example.com/v1", "kind": "VirtualMachine",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"network": "net", "cpus": 2},
        })
    };
    create(
        &networks,
        json!({
            "apiVersion": "net.example.com/v1", "kind": "Network",
            "metadata": {"name": "net", "namespace": "default"},
            "spec": {"cidr": "10.0.0.0/24"},
        }),
    )
    .await;
    create(&vms, vm("vm")).await;

    // A's copy of the Network, B's copy of the VM, and B's copy of the
    // Network (a Note named after spec.network, next to the VM's copy).
    let svc = |group: &str, kind: &str, plural: &str| {
        dynamic_api(
            &env.service_client,
            &gvk(group, "v1", kind),
            plural,
            Some(&ws.cluster),
        )
    };
    let a_copies = svc("net.example.com", "Network", "networks");
    let b_copies = svc("compute.example.com", "VirtualMachine", "virtualmachines");
    let b_network_copies = svc("example.com", "Note", "notes");
    let a_copy_name = default_copy_name("default", "net");
    for (api, name, what) in [
        (&a_copies, a_copy_name.clone(), "A's copy of the Network"),
        (
            &b_copies,
            default_copy_name("default", "vm"),
            "B's copy of the VM",
        ),
        (
            &b_network_copies,
            "net".to_string(),
            "B's copy of the Network",
        ),
    ] {
        eventually(what, WAIT, || async { get_opt(api, &name).await }).await;
    }
    // Both agents hold the Network; what its finalizers look like is
    // asserted at the end (the behaviour below is what matters).
    let held = eventually("the Network held by both agents", WAIT, || async {
        let n = get_opt(&networks, "net").await?;
        Ok(n.filter(|n| !finalizers(n).is_empty())
            .map(|n| finalizers(&n)))
    })
    .await;

    // 1. The issue's case: the VM goes; the Network and A's copy stay.
    vms.delete("vm", &DeleteParams::default()).await.unwrap();
    wait_gone(&vms, "vm", "the VirtualMachine deleted from kcp").await;
    wait_gone(&b_network_copies, "net", "B's copy of the Network deleted").await;
    let n = networks.get("net").await.unwrap();
    assert!(n.metadata.deletion_timestamp.is_none());
    assert!(get_opt(&a_copies, &a_copy_name).await.unwrap().is_some());
    eventually("only A's finalizer left on the Network", WAIT, || async {
        let n = get_opt(&networks, "net")
            .await?
            .ok_or("the Network is gone")?;
        Ok((finalizers(&n) == [FINALIZER]).then_some(()))
    })
    .await;

    // 2. With A stopped, B releasing its own hold must leave A's.
    create(&vms, vm("vm2")).await;
    eventually("B's copy of the Network again", WAIT, || async {
        get_opt(&b_network_copies, "net").await
    })
    .await;
    eventually("B holds the Network again", WAIT, || async {
        let n = get_opt(&networks, "net")
            .await?
            .ok_or("the Network is gone")?;
        Ok((finalizers(&n).len() == held.len()).then_some(()))
    })
    .await;
    let agent_a = env.agent.take().expect("agent A runs");
    let log_a = agent_a.log_file.clone();
    stop(agent_a).await;
    vms.delete("vm2", &DeleteParams::default()).await.unwrap();
    wait_gone(&vms, "vm2", "the second VirtualMachine deleted from kcp").await;
    wait_gone(
        &b_network_copies,
        "net",
        "B's copy of the Network deleted again",
    )
    .await;
    let n = networks.get("net").await.unwrap();
    assert!(
        finalizers(&n).iter().any(|f| f == FINALIZER),
        "agent B released agent A's finalizer on the shared Network (A is stopped, so \
         nothing put it back): finalizers now {:?}, before {held:?}",
        finalizers(&n)
    );

    // 3. Deleting the Network while A is stopped: A's finalizer holds it.
    networks
        .delete("net", &DeleteParams::default())
        .await
        .unwrap();
    let n = eventually("the Network marked for deletion", WAIT, || async {
        let n = get_opt(&networks, "net").await?.ok_or(
            "the Network is gone from kcp while A still has its copy: A's copy is orphaned",
        )?;
        Ok(n.metadata.deletion_timestamp.is_some().then_some(n))
    })
    .await;
    assert_eq!(finalizers(&n), [FINALIZER], "only A holds the Network");
    assert!(get_opt(&a_copies, &a_copy_name).await.unwrap().is_some());
    // A comes back: deletes its copy, releases the Network.
    let kcp_kc = env.dir.join("kcp.kubeconfig");
    let svc_kc = env.dir.join("service.kubeconfig");
    let args = env.agent_args(
        &kcp_kc,
        &svc_kc,
        &["--published-resource-selector=e2e.syncweave.dev/agent=a"],
    );
    let _agent_a = Agent::start(&env.binary, &args, env.dir.join("agent-a-again.log")).unwrap();
    wait_gone(&a_copies, &a_copy_name, "A's copy of the Network deleted").await;
    wait_gone(&networks, "net", "the Network deleted from kcp").await;

    // While both held it, each had its own finalizer on the Network: A's
    // (as upstream's, for its primary) and B's own.
    assert_eq!(held.len(), 2, "{held:?}");
    assert!(held.iter().any(|f| f == FINALIZER), "{held:?}");
    let b_finalizer = held.iter().find(|f| *f != FINALIZER).unwrap();
    assert!(
        b_finalizer.starts_with("cleanup.syncagent.kcp.io/agent-b"),
        "{b_finalizer}"
    );
    drop(agent_b);
    let _ = log_a;
}

/// api-syncagent #115: `spec.lifecycle.waitForOtherFinalizers`. A kcp
/// object deleted while another controller's finalizer is on it keeps its
/// copy until that finalizer goes (an Event says so); a finalizer that
/// never goes holds the copy only until the timeout (a Warning says so),
/// and the agent's own finalizer is released after the copy is gone.
#[tokio::test(flavor = "multi_thread")]
async fn copies_wait_for_other_finalizers_with_a_timeout() {
    let env = Env::start("lifecycle-wait", crate::binary()).await;
    env.publish_yaml(&format!(
        "{PUBLISHED_RESOURCE}  lifecycle:\n    waitForOtherFinalizers: {{timeout: 20s}}\n"
    ))
    .await;
    let (consumer, client) = env.consumer("consumer").await;
    let kcp_crontabs = crontabs(&client, "default");
    let copies = crontabs(&env.service_client, &consumer.cluster);
    for name in ["released", "stuck"] {
        let mut obj = crontab(name, "img");
        obj["metadata"]["finalizers"] = json!(["example.com/backup"]);
        create(&kcp_crontabs, obj).await;
        eventually(&format!("the copy of {name}"), WAIT, || async {
            get_opt(&copies, &default_copy_name("default", name)).await
        })
        .await;
    }

    // 1. Another controller's finalizer is removed after a while: the copy
    //    stays until then.
    kcp_crontabs
        .delete("released", &DeleteParams::default())
        .await
        .unwrap();
    let waiting = eventually("a WaitingForFinalizers event", WAIT, || async {
        Ok(events_about(&client, "released")
            .await?
            .into_iter()
            .find(|(r, _, _)| r == "WaitingForFinalizers"))
    })
    .await;
    assert_eq!(waiting.1, "Normal");
    assert!(waiting.2.contains("example.com/backup"), "{waiting:?}");
    // The provider sees it on the PublishedResource too.
    let condition = env
        .wait_for_condition(PR_NAME, "WaitingForFinalizers", "True", "Waiting")
        .await;
    let message = condition["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("1 copy waits (up to 20s")
            && message.contains("released")
            && message.contains("example.com/backup"),
        "{condition}"
    );
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(
        get_opt(&copies, &default_copy_name("default", "released"))
            .await
            .unwrap()
            .is_some(),
        "the copy was deleted while another finalizer was still on the kcp object"
    );
    let held = kcp_crontabs.get("released").await.unwrap();
    let kept: Vec<String> = finalizers(&held)
        .into_iter()
        .filter(|f| f != "example.com/backup")
        .collect();
    kcp_crontabs
        .patch(
            "released",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"metadata": {"finalizers": kept}})),
        )
        .await
        .unwrap();
    wait_gone(
        &copies,
        &default_copy_name("default", "released"),
        "the copy deleted once the other finalizer is gone",
    )
    .await;
    wait_gone(&kcp_crontabs, "released", "the kcp object deleted").await;
    env.wait_for_condition(PR_NAME, "WaitingForFinalizers", "False", "NoneWaiting")
        .await;

    // 2. A finalizer that stays: the copy goes after the timeout, said with
    //    a Warning; the kcp object keeps only the other finalizer.
    kcp_crontabs
        .delete("stuck", &DeleteParams::default())
        .await
        .unwrap();
    wait_gone(
        &copies,
        &default_copy_name("default", "stuck"),
        "the copy deleted after the timeout",
    )
    .await;
    let deleting = kcp_crontabs.get("stuck").await.unwrap();
    let deleting = deleting.metadata.deletion_timestamp.unwrap().0;
    let waited = k8s_openapi::jiff::Timestamp::now().duration_since(deleting);
    assert!(
        waited.as_secs() >= 20,
        "the copy went {waited:?} after the deletion began, before the 20s timeout"
    );
    let timed_out = eventually("a FinalizerWaitTimedOut event", WAIT, || async {
        Ok(events_about(&client, "stuck")
            .await?
            .into_iter()
            .find(|(r, _, _)| r == "FinalizerWaitTimedOut"))
    })
    .await;
    assert_eq!(timed_out.1, "Warning");
    assert!(
        timed_out.2.contains("20s") && timed_out.2.contains("example.com/backup"),
        "{timed_out:?}"
    );
    eventually("the agent's finalizer released", WAIT, || async {
        let o = get_opt(&kcp_crontabs, "stuck").await?.ok_or("gone")?;
        Ok((finalizers(&o) == ["example.com/backup"]).then_some(()))
    })
    .await;
    let condition = env
        .wait_for_condition(PR_NAME, "WaitingForFinalizers", "False", "TimedOut")
        .await;
    let message = condition["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("1 wait(s) timed out after 20s") && message.contains("stuck"),
        "{condition}"
    );
    env.wait_for_ready(PR_NAME, "True", "Syncing").await;
}

/// A provider turns `relatedFinalizer: PerAgent` off again (to hand back to
/// upstream, which knows only the shared name): the agent moves its hold
/// on kcp-origin related objects from its own name to the shared one, so
/// no hold is left that nobody would release; then the primary's deletion
/// releases it as before.
#[tokio::test(flavor = "multi_thread")]
async fn a_related_hold_moves_to_the_shared_name_when_the_policy_changes() {
    let env = Env::start("lifecycle-policy", crate::binary()).await;
    let related = "  related:\n    - identifier: config\n      origin: kcp\n      kind: ConfigMap\n      \
                   object:\n        reference:\n          path: metadata.name\n          \
                   regex: {pattern: \"$\", replacement: \"-config\"}\n";
    env.publish_yaml(&format!(
        "{PUBLISHED_RESOURCE}  lifecycle: {{relatedFinalizer: PerAgent}}\n{related}"
    ))
    .await;
    for resource in ["configmaps", "namespaces", "events"] {
        env.wait_for_export_claim("", resource).await;
    }
    let (_consumer, client) = env
        .consumer_accepting(
            "consumer",
            &[("", "events"), ("", "configmaps"), ("", "namespaces")],
        )
        .await;
    let config_maps: Api<k8s_openapi::api::core::v1::ConfigMap> =
        Api::namespaced(client.clone(), "default");
    config_maps
        .create(
            &kube::api::PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": {"name": "db-config", "namespace": "default"},
                "data": {"size": "small"},
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    let kcp_crontabs = crontabs(&client, "default");
    create(&kcp_crontabs, crontab("db", "img")).await;
    let own = format!("cleanup.syncagent.kcp.io/{AGENT_NAME}");
    let holds = |want: Vec<String>| {
        let config_maps = config_maps.clone();
        async move {
            eventually(&format!("the ConfigMap held by {want:?}"), WAIT, || async {
                let c = config_maps
                    .get_opt("db-config")
                    .await
                    .map_err(|e| e.to_string())?;
                let got = c.and_then(|c| c.metadata.finalizers).unwrap_or_default();
                Ok((got == want).then_some(()))
            })
            .await
        }
    };
    holds(vec![own.clone()]).await;

    env.publish_yaml(&format!("{PUBLISHED_RESOURCE}{related}"))
        .await;
    holds(vec![FINALIZER.to_string()]).await;

    kcp_crontabs
        .delete("db", &DeleteParams::default())
        .await
        .unwrap();
    wait_gone(&kcp_crontabs, "db", "the CronTab deleted").await;
    holds(vec![]).await;
}

/// The state Secret of CronTab `default/name` of workspace `cluster`.
fn state_name(cluster: &str, name: &str) -> String {
    let key =
        syncweave::controller::store::ObjectKey::new(syncweave::controller::store::KeyParts {
            cluster: cluster.to_string(),
            namespace: Some("default".into()),
            name: name.into(),
        });
    syncweave::sync::state::StateStore::secret_name(&key, "example.com/v1", "CronTab")
}

/// A consumer deletes their workspace (api-syncagent #113's scenario), with
/// the default lifecycle, as upstream: kcp deletes the workspace's objects,
/// the agent's finalizer holds each until its copy on the service cluster
/// and its state Secret are deleted, then the workspace disappears. The
/// namespace the agent created on the service cluster stays (upstream
/// never deletes namespaces; docs/lifecycle.md).
#[tokio::test(flavor = "multi_thread")]
async fn deleting_a_consumer_workspace_deletes_its_copies() {
    let env = Env::start("lifecycle-ws", crate::binary()).await;
    env.publish().await;
    let (consumer, client) = env.consumer("consumer").await;
    let kcp_crontabs = crontabs(&client, "default");
    create(&kcp_crontabs, crontab("job", "img")).await;
    let copies = crontabs(&env.service_client, &consumer.cluster);
    let copy_name = default_copy_name("default", "job");
    eventually("the copy", WAIT, || async {
        get_opt(&copies, &copy_name).await
    })
    .await;
    let state_name = state_name(&consumer.cluster, "job");
    let secrets: Api<k8s_openapi::api::core::v1::Secret> =
        Api::namespaced(env.service_client.clone(), AGENT_NAMESPACE);
    eventually("the state Secret", WAIT, || async {
        secrets
            .get_opt(&state_name)
            .await
            .map_err(|e| e.to_string())
    })
    .await;

    let workspaces = dynamic_api(
        &kcp().client(&env.org.path).await.unwrap(),
        &gvk("tenancy.kcp.io", "v1alpha1", "Workspace"),
        "workspaces",
        None,
    );
    workspaces
        .delete("consumer", &DeleteParams::default())
        .await
        .unwrap();
    wait_gone(&copies, &copy_name, "the copy deleted with the workspace").await;
    wait_gone(&secrets, &state_name, "the state Secret deleted").await;
    wait_gone(
        &workspaces,
        "consumer",
        "the consumer workspace gone from kcp",
    )
    .await;
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> =
        Api::all(env.service_client.clone());
    assert!(
        namespaces
            .get_opt(&consumer.cluster)
            .await
            .unwrap()
            .is_some(),
        "the service namespace stays (upstream's behaviour)"
    );
}

/// What the tests of `spec.lifecycle.workspaceDeletion` share: a consumer
/// (accepting the LogicalCluster claim) with CronTabs `keep` and `single`
/// synced, `single` then deleted by the consumer (its copy goes, whatever
/// the policy: only a workspace going away is treated differently).
struct Leaving {
    env: Env,
    consumer: syncweave_tests::kcp::Workspace,
    copies: Api<DynamicObject>,
    secrets: Api<k8s_openapi::api::core::v1::Secret>,
    workspaces: Api<DynamicObject>,
}

async fn leaving_setup(test: &str, policy: &str) -> Leaving {
    let env = Env::start(test, crate::binary()).await;
    env.publish_yaml(&format!(
        "{PUBLISHED_RESOURCE}  lifecycle:\n    workspaceDeletion: {policy}\n"
    ))
    .await;
    env.wait_for_export_claim("core.kcp.io", "logicalclusters")
        .await;
    let (consumer, client) = env
        .consumer_accepting(
            "consumer",
            &[("", "events"), ("core.kcp.io", "logicalclusters")],
        )
        .await;
    let kcp_crontabs = crontabs(&client, "default");
    let copies = crontabs(&env.service_client, &consumer.cluster);
    for name in ["keep", "single"] {
        create(&kcp_crontabs, crontab(name, "img")).await;
        eventually(&format!("the copy of {name}"), WAIT, || async {
            get_opt(&copies, &default_copy_name("default", name)).await
        })
        .await;
    }
    kcp_crontabs
        .delete("single", &DeleteParams::default())
        .await
        .unwrap();
    wait_gone(
        &copies,
        &default_copy_name("default", "single"),
        "the copy of an object the consumer deleted",
    )
    .await;
    wait_gone(&kcp_crontabs, "single", "the deleted object").await;
    let secrets = Api::namespaced(env.service_client.clone(), AGENT_NAMESPACE);
    let workspaces = dynamic_api(
        &kcp().client(&env.org.path).await.unwrap(),
        &gvk("tenancy.kcp.io", "v1alpha1", "Workspace"),
        "workspaces",
        None,
    );
    Leaving {
        env,
        consumer,
        copies,
        secrets,
        workspaces,
    }
}

impl Leaving {
    fn state_name(&self, name: &str) -> String {
        state_name(&self.consumer.cluster, name)
    }

    async fn delete_workspace(&self) {
        self.secrets
            .get(&self.state_name("keep"))
            .await
            .expect("the state of `keep` before the workspace goes");
        self.workspaces
            .delete("consumer", &DeleteParams::default())
            .await
            .unwrap();
        wait_gone(
            &self.workspaces,
            "consumer",
            "the consumer workspace gone from kcp",
        )
        .await;
        let state = self.state_name("keep");
        wait_gone(&self.secrets, &state, "the state Secret deleted").await;
    }

    async fn namespace(&self) -> Option<k8s_openapi::api::core::v1::Namespace> {
        Api::<k8s_openapi::api::core::v1::Namespace>::all(self.env.service_client.clone())
            .get_opt(&self.consumer.cluster)
            .await
            .unwrap()
    }
}

/// `workspaceDeletion: Delete` (api-syncagent #113): when the consumer's
/// workspace is deleted, its copies and state go as by default, and so
/// does the namespace the agent created for it; the workspace disappears.
/// Without `delete` on namespaces (the chart's default), that fails
/// visibly and holds the workspace, until the provider grants it.
#[tokio::test(flavor = "multi_thread")]
async fn deleted_workspace_takes_its_namespace_along() {
    let t = leaving_setup("lifecycle-wsdelete", "Delete").await;
    let ns = t
        .namespace()
        .await
        .expect("the namespace the agent created");
    let labels = ns.metadata.labels.unwrap_or_default();
    assert_eq!(
        labels.get("syncweave.dev/created-for-cluster"),
        Some(&t.consumer.cluster),
        "{labels:?}"
    );
    t.secrets
        .get(&t.state_name("keep"))
        .await
        .expect("the state of `keep` before the workspace goes");
    t.workspaces
        .delete("consumer", &DeleteParams::default())
        .await
        .unwrap();
    wait_gone(
        &t.copies,
        &default_copy_name("default", "keep"),
        "the copy deleted with the workspace",
    )
    .await;
    let failing = t
        .env
        .wait_for_ready("publish-crontabs", "False", "ObjectsFailing")
        .await;
    let msg = failing["message"].as_str().unwrap();
    assert!(
        msg.contains("rbac.deleteNamespaces") && msg.contains(&t.consumer.cluster),
        "{msg}"
    );
    assert!(
        get_opt(&t.workspaces, "consumer").await.unwrap().is_some(),
        "the workspace waits for the agent"
    );

    // The provider grants it (what the chart's rbac.deleteNamespaces adds).
    apply_yaml(
        &t.env.service_client,
        &format!(
            r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {{name: e2e-delete-namespaces}}
rules:
- apiGroups: [""]
  resources: ["namespaces"]
  verbs: ["delete"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {{name: e2e-delete-namespaces}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: e2e-delete-namespaces}}
subjects:
- {{kind: ServiceAccount, name: {CHART_SERVICE_ACCOUNT}, namespace: {AGENT_NAMESPACE}}}
"#
        ),
    )
    .await
    .unwrap();
    wait_gone(
        &t.workspaces,
        "consumer",
        "the consumer workspace gone from kcp",
    )
    .await;
    let state = t.state_name("keep");
    wait_gone(&t.secrets, &state, "the state Secret deleted").await;
    // The harness runs no controller-manager, whose namespace controller
    // would empty the namespace and remove it: deleted means Terminating.
    eventually("the namespace deleted", WAIT, || async {
        Ok(t.namespace()
            .await
            .is_none_or(|n| n.metadata.deletion_timestamp.is_some())
            .then_some(()))
    })
    .await;
}

/// `workspaceDeletion: Orphan`: when the consumer's workspace is deleted,
/// the copies stay on the service cluster (marked `syncweave.dev/orphaned`)
/// with their namespace; their state Secrets go; the workspace disappears.
/// An object the consumer deletes before still takes its copy along.
#[tokio::test(flavor = "multi_thread")]
async fn deleted_workspace_leaves_its_copies_when_orphaned() {
    let t = leaving_setup("lifecycle-wsorphan", "Orphan").await;
    t.delete_workspace().await;
    let copy = get_opt(&t.copies, &default_copy_name("default", "keep"))
        .await
        .unwrap()
        .expect("the copy stays after its workspace is gone");
    let annotations = copy.metadata.annotations.unwrap_or_default();
    assert!(
        annotations.contains_key("syncweave.dev/orphaned"),
        "{annotations:?}"
    );
    assert!(t.namespace().await.is_some());
}

/// Unbinding with `workspaceDeletion: Orphan`: the consumer deletes its
/// APIBinding (kcp then deletes the bound objects) and keeps the
/// workspace; the copies stay on the service cluster like after a deleted
/// workspace, and the binding goes.
#[tokio::test(flavor = "multi_thread")]
async fn unbinding_leaves_the_copies_when_orphaned() {
    let t = leaving_setup("lifecycle-unbind", "Orphan").await;
    let client = kcp().client(&t.consumer.path).await.unwrap();
    let bindings = dynamic_api(
        &client,
        &gvk("apis.kcp.io", "v1alpha1", "APIBinding"),
        "apibindings",
        None,
    );
    bindings
        .delete(EXPORT, &DeleteParams::default())
        .await
        .unwrap();
    wait_gone(&bindings, EXPORT, "the APIBinding gone").await;
    let state = t.state_name("keep");
    wait_gone(&t.secrets, &state, "the state Secret deleted").await;
    let copy = get_opt(&t.copies, &default_copy_name("default", "keep"))
        .await
        .unwrap()
        .expect("the copy stays after the consumer unbound");
    assert!(
        copy.metadata
            .annotations
            .unwrap_or_default()
            .contains_key("syncweave.dev/orphaned")
    );
    assert!(get_opt(&t.workspaces, "consumer").await.unwrap().is_some());
}

/// Two agents given the same `--agent-name` but different jobs (here: other
/// PublishedResource selectors) share one leader Lease, so one would wait
/// forever. The standby says so: an error in its log naming both
/// configurations, and `syncweave_leader_configuration_mismatch 1`. A
/// replica with the same configuration stands by quietly (metric 0).
#[tokio::test(flavor = "multi_thread")]
async fn two_agents_under_one_name_are_reported() {
    let mut env = Env::prepare("lifecycle-samename", crate::binary()).await;
    env.start_agent(&[
        "--enable-leader-election=true",
        "--published-resource-selector=e2e.syncweave.dev/agent=a",
    ]);
    let leases = dynamic_api(
        &env.service_client,
        &gvk("coordination.k8s.io", "v1", "Lease"),
        "leases",
        Some(AGENT_NAMESPACE),
    );
    let lease = eventually(
        "the Lease stamped with the leader's configuration",
        WAIT,
        || async {
            let l = get_opt(&leases, &format!("syncagent.{AGENT_NAME}")).await?;
            Ok(l.filter(|l| {
                str_at(l, "/spec/holderIdentity").is_some_and(|h| !h.is_empty())
                    && l.metadata
                        .annotations
                        .as_ref()
                        .is_some_and(|a| a.contains_key("syncweave.dev/configuration"))
            }))
        },
    )
    .await;
    let stamp = lease.metadata.annotations.unwrap()["syncweave.dev/configuration"].clone();
    assert!(stamp.contains("e2e.syncweave.dev/agent=a"), "{stamp}");

    let kcp_kc = env.dir.join("kcp.kubeconfig");
    let svc_kc = env.dir.join("service.kubeconfig");
    let standby = |selector: &str, log: &str| {
        let metrics = free_port();
        let args = env.agent_args(
            &kcp_kc,
            &svc_kc,
            &[
                "--enable-leader-election=true",
                &format!("--published-resource-selector=e2e.syncweave.dev/agent={selector}"),
                &format!("--metrics-address=127.0.0.1:{metrics}"),
            ],
        );
        let agent = Agent::start(&env.binary, &args, env.dir.join(log)).unwrap();
        (agent, metrics)
    };
    let mismatch = |port: u16| async move {
        let (_, m) = http_get(port, "/metrics").await?;
        Ok::<_, String>(
            m.lines()
                .find(|l| l.starts_with("syncweave_leader_configuration_mismatch "))
                .map(str::to_string),
        )
    };

    // Another job under the same name.
    let (other, other_metrics) = standby("b", "agent-other.log");
    eventually("the mismatch metric on the other agent", WAIT, || async {
        Ok(mismatch(other_metrics).await?.filter(|l| l.ends_with(" 1")))
    })
    .await;
    let log = other.log();
    assert!(
        log.contains("another agent with the same name but another configuration leads")
            && log.contains("e2e.syncweave.dev/agent=a")
            && log.contains("e2e.syncweave.dev/agent=b")
            && log.contains("--agent-name"),
        "{}",
        other.log_tail(20)
    );

    // A true standby: same configuration, no alarm.
    let (same, same_metrics) = standby("a", "agent-same.log");
    eventually("the standby's metrics", WAIT, || async {
        Ok(mismatch(same_metrics).await?.filter(|l| l.ends_with(" 0")))
    })
    .await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(
        mismatch(same_metrics).await.unwrap().as_deref(),
        Some("syncweave_leader_configuration_mismatch 0")
    );
    assert!(
        !same.log().contains("another configuration"),
        "{}",
        same.log_tail(20)
    );
    drop(other);
    drop(same);
}
