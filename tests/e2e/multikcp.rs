//! Several kcps, one service cluster (kcp-dev/api-syncagent#13): agents
//! with distinct names, each serving an APIExport of its own kcp, sync into
//! the same service cluster without touching each other's copies, state
//! or PublishedResources.

use std::time::Duration;

use kube::api::{DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::json;
use syncweave_tests::env::*;
use syncweave_tests::resources::*;
use syncweave_tests::*;

const WAIT: Duration = Duration::from_secs(90);
const AGENT_B: &str = "e2e-agent-b";

fn published_resource(kcp: &str) -> String {
    format!(
        "apiVersion: syncagent.kcp.io/v1alpha1\nkind: PublishedResource\nmetadata:\n  \
         name: crontabs-{kcp}\n  labels: {{kcp: {kcp}}}\nspec:\n  resource:\n    \
         kind: CronTab\n    apiGroup: example.com\n    versions: [v1]\n"
    )
}

/// Two kcp instances (the harness's single-shard kcp and its two-shard
/// one), one service cluster, one agent per kcp with its own name and a
/// PublishedResource of its own (`--published-resource-selector`). The
/// same object name in a consumer of each kcp becomes two copies, one per
/// agent; status goes back to the right kcp; deleting one leaves the other.
#[tokio::test(flavor = "multi_thread")]
async fn two_kcps_sync_into_one_service_cluster() {
    let mut env = Env::prepare("two-kcps", crate::binary()).await;
    for k in ["a", "b"] {
        apply_yaml(&env.service_client, &published_resource(k))
            .await
            .expect("PublishedResource");
    }
    env.start_agent(&["--published-resource-selector", "kcp=a"]);

    // The second kcp: its own provider workspace and APIExport.
    let kcp_b = sharded_kcp();
    let org_b = kcp_b
        .create_workspace_in("root", &unique("two-kcps-b"), Some(ROOT_SHARD_REGION))
        .await
        .expect("org workspace in the second kcp");
    let provider_b = kcp_b
        .create_workspace_in(&org_b.path, "provider", Some(ROOT_SHARD_REGION))
        .await
        .expect("provider workspace in the second kcp");
    apply_yaml(&kcp_b.client(&provider_b.path).await.unwrap(), APIEXPORT)
        .await
        .expect("APIExport in the second kcp");
    let kc_b = env.dir.join("kcp-b.kubeconfig");
    kcp_b.write_kubeconfig(&provider_b.path, &kc_b).unwrap();
    let mut args = env.agent_args(
        &kc_b,
        &env.dir.join("service.kubeconfig"),
        &["--published-resource-selector", "kcp=b"],
    );
    let i = args.iter().position(|a| a == "--agent-name").unwrap();
    args[i + 1] = AGENT_B.into();
    let agent_b = Agent::start(&env.binary, &args, env.dir.join("agent-b.log")).expect("agent B");

    env.wait_for_schema("crontabs-a").await;
    env.wait_for_schema("crontabs-b").await;
    let served = gvk("example.com", "v1", "CronTab");
    let (ws_a, client_a) = env.consumer("consumer-a").await;
    let (ws_b, client_b) = bind_consumer(
        kcp_b,
        &org_b.path,
        &provider_b.path,
        Consumer {
            name: "consumer-b",
            region: Some(ROOT_SHARD_REGION),
            claims: &[("", "events")],
            served: &served,
            plural: "crontabs",
        },
    )
    .await;
    assert_ne!(ws_a.cluster, ws_b.cluster);

    // The same namespace and name in both kcps.
    let (kcp_a_api, kcp_b_api) = (
        crontabs(&client_a, "default"),
        crontabs(&client_b, "default"),
    );
    for (api, image) in [(&kcp_a_api, "from-a"), (&kcp_b_api, "from-b")] {
        api.create(
            &PostParams::default(),
            &serde_json::from_value(crontab("shared", image)).unwrap(),
        )
        .await
        .unwrap();
    }
    let copy_name = default_copy_name("default", "shared");
    let (local_a, local_b) = (
        crontabs(&env.service_client, &ws_a.cluster),
        crontabs(&env.service_client, &ws_b.cluster),
    );
    let wait_copy = |local: kube::Api<DynamicObject>| {
        let name = copy_name.clone();
        async move {
            eventually("a copy on the service cluster", WAIT, || async {
                get_opt(&local, &name).await
            })
            .await
        }
    };
    let copy_a = wait_copy(local_a.clone()).await;
    let copy_b = wait_copy(local_b.clone()).await;
    for (copy, image, agent) in [
        (&copy_a, "from-a", AGENT_NAME),
        (&copy_b, "from-b", AGENT_B),
    ] {
        assert_eq!(str_at(copy, "/spec/image"), Some(image));
        assert_eq!(
            copy.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get("syncagent.kcp.io/agent-name"))
                .map(String::as_str),
            Some(agent),
            "the copy names the agent of its kcp"
        );
    }

    // One state Secret per object, named after its logical cluster: two
    // kcps cannot share one.
    let secrets: kube::Api<k8s_openapi::api::core::v1::Secret> =
        kube::Api::namespaced(env.service_client.clone(), AGENT_NAMESPACE);
    eventually("one state Secret per kcp's object", WAIT, || async {
        let names: Vec<String> = secrets
            .list(&Default::default())
            .await
            .map_err(|e| e.to_string())?
            .items
            .into_iter()
            .filter_map(|s| s.metadata.name)
            .collect();
        let count = |ws: &Workspace| {
            let prefix = format!("obj-state-{}-", ws.cluster);
            names.iter().filter(|n| n.starts_with(&prefix)).count()
        };
        match (count(&ws_a), count(&ws_b)) {
            (1, 1) => Ok(Some(())),
            (a, b) if a > 1 || b > 1 => Err(format!("more than one state Secret: {names:?}")),
            _ => Ok(None),
        }
    })
    .await;

    // Status goes back to the kcp the copy came from, and only there.
    let mut s = copy_b.clone();
    s.data["status"] = json!({"phase": "Running"});
    local_b
        .replace_status(&copy_name, &PostParams::default(), &s)
        .await
        .unwrap();
    eventually("status in the second kcp", WAIT, || async {
        let o = get_opt(&kcp_b_api, "shared").await?;
        Ok(o.filter(|o| str_at(o, "/status/phase") == Some("Running")))
    })
    .await;
    // An update in kcp A goes down to A's copy: proof that agent A has
    // looked at its object since, while kcp A's status stayed empty.
    kcp_a_api
        .patch(
            "shared",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"image": "from-a-2"}})),
        )
        .await
        .unwrap();
    eventually("the update of kcp A's object on its copy", WAIT, || async {
        let o = get_opt(&local_a, &copy_name).await?;
        Ok(o.filter(|o| str_at(o, "/spec/image") == Some("from-a-2")))
    })
    .await;
    let in_a = kcp_a_api.get("shared").await.unwrap();
    assert_eq!(str_at(&in_a, "/status/phase"), None, "kcp A got B's status");

    // Each agent reports on its own PublishedResource.
    env.wait_for_ready("crontabs-a", "True", "Syncing").await;
    env.wait_for_ready("crontabs-b", "True", "Syncing").await;

    // Deleting the object in kcp A removes A's copy only.
    kcp_a_api
        .delete("shared", &DeleteParams::default())
        .await
        .unwrap();
    eventually("kcp A's object and copy gone", WAIT, || async {
        let in_kcp = get_opt(&kcp_a_api, "shared").await?;
        let copy = get_opt(&local_a, &copy_name).await?;
        Ok((in_kcp.is_none() && copy.is_none()).then_some(()))
    })
    .await;
    assert!(
        get_opt(&local_b, &copy_name).await.unwrap().is_some(),
        "B's copy is kept"
    );
    assert!(get_opt(&kcp_b_api, "shared").await.unwrap().is_some());
    drop(agent_b);
}
