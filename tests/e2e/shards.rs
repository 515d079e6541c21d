//! A kcp with two shards: the endpoint slice lists one virtual-workspace URL
//! per shard that has consumers, and each shard's virtual workspace serves
//! only its own workspaces. The agent must watch every URL, and follow the
//! slice as shards join.

use std::time::Duration;

use kube::api::{DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::json;
use syncweave_tests::env::*;
use syncweave_tests::resources::*;
use syncweave_tests::*;

const WAIT: Duration = Duration::from_secs(90);

async fn slice_urls(env: &Env) -> Vec<String> {
    let provider = env.kcp.client(&env.provider.path).await.unwrap();
    let slices = dynamic_api(
        &provider,
        &gvk("apis.kcp.io", "v1alpha1", "APIExportEndpointSlice"),
        "apiexportendpointslices",
        None,
    );
    let slice = slices.get(EXPORT).await.unwrap();
    slice.data["status"]["endpoints"]
        .as_array()
        .map(|eps| {
            eps.iter()
                .filter_map(|e| e["url"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Objects of consumers on two shards both reach the service cluster, and
/// both get status back and are cleaned up, through their own shard. The
/// second shard joins the slice while the agent runs.
#[tokio::test(flavor = "multi_thread")]
async fn objects_from_every_shard_are_synced() {
    let kcp = sharded_kcp();
    let mut env = Env::prepare_on(kcp, Some(ROOT_SHARD_REGION), "shards", crate::binary()).await;
    // The shards know no token users: the agent uses the admin certificate
    // here (least-privilege identities are covered by the other tests).
    env.start_agent_as_kcp_admin(&[]);
    env.publish().await;
    env.wait_for_schema("publish-crontabs").await;
    let served = gvk("example.com", "v1", "CronTab");
    let claims = [("", "events")];

    let (ws_root, client_root) = env
        .consumer_in(
            "on-root",
            Some(ROOT_SHARD_REGION),
            &claims,
            &served,
            "crontabs",
        )
        .await;
    let first = crontabs(&client_root, "default");
    first
        .create(
            &PostParams::default(),
            &serde_json::from_value(crontab("first", "root-shard")).unwrap(),
        )
        .await
        .unwrap();
    let copy_name = default_copy_name("default", "first");
    let local_root = crontabs(&env.service_client, &ws_root.cluster);
    eventually("copy of the root shard's object", WAIT, || async {
        get_opt(&local_root, &copy_name).await
    })
    .await;
    assert_eq!(slice_urls(&env).await.len(), 1, "one shard has consumers");

    // A consumer on shard-1: its shard joins the slice while the agent runs.
    let (ws_1, client_1) = env
        .consumer_in(
            "on-shard-1",
            Some(SHARD_1_REGION),
            &claims,
            &served,
            "crontabs",
        )
        .await;
    let urls = eventually("two URLs in the endpoint slice", WAIT, || async {
        let urls = slice_urls(&env).await;
        Ok((urls.len() == 2).then_some(urls))
    })
    .await;
    assert_ne!(urls[0], urls[1]);
    let second = crontabs(&client_1, "default");
    second
        .create(
            &PostParams::default(),
            &serde_json::from_value(crontab("second", "shard-1")).unwrap(),
        )
        .await
        .unwrap();
    let local_1 = crontabs(&env.service_client, &ws_1.cluster);
    let copy2_name = default_copy_name("default", "second");
    let copy = eventually("copy of shard-1's object", WAIT, || async {
        get_opt(&local_1, &copy2_name).await
    })
    .await;
    assert_eq!(str_at(&copy, "/spec/image"), Some("shard-1"));

    // Status goes up through shard-1's virtual workspace.
    let mut s = copy.clone();
    s.data["status"] = json!({"phase": "Running"});
    local_1
        .replace_status(&copy2_name, &PostParams::default(), &s)
        .await
        .unwrap();
    eventually("status on shard-1's object", WAIT, || async {
        let o = get_opt(&second, "second").await?;
        Ok(o.filter(|o| str_at(o, "/status/phase") == Some("Running")))
    })
    .await;

    // Updates on both shards keep flowing.
    for (api, name, local, copy_name) in [
        (&first, "first", &local_root, &copy_name),
        (&second, "second", &local_1, &copy2_name),
    ] {
        api.patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"image": "updated"}})),
        )
        .await
        .unwrap();
        eventually(
            &format!("update of {name} on the service cluster"),
            WAIT,
            || async {
                let o = get_opt(local, copy_name).await?;
                Ok(o.filter(|o| str_at(o, "/spec/image") == Some("updated")))
            },
        )
        .await;
    }

    // Deletion on shard-1: the copy goes and the finalizer is released
    // through shard-1's virtual workspace, so the object disappears.
    second
        .delete("second", &DeleteParams::default())
        .await
        .unwrap();
    eventually(
        "shard-1's object deleted in kcp and on the service cluster",
        WAIT,
        || async {
            let in_kcp = get_opt(&second, "second").await?;
            let copy = get_opt(&local_1, &copy2_name).await?;
            Ok((in_kcp.is_none() && copy.is_none()).then_some(()))
        },
    )
    .await;
    let root_copy: Option<DynamicObject> = get_opt(&local_root, &copy_name).await.unwrap();
    assert!(root_copy.is_some(), "the root shard's copy is kept");
}

/// Scale-out on kcp's own sharding: two agents under one name serve one
/// APIExport, each through an APIExportEndpointSlice of its own that a
/// `Partition` narrows to one shard. Every object is synced by the agent of
/// its shard only, each agent reports its own condition on the
/// PublishedResource, both hold a leader Lease of their own, and with one
/// agent stopped the other shard keeps syncing.
#[tokio::test(flavor = "multi_thread")]
async fn partitions_split_consumers_between_agents() {
    let kcp = sharded_kcp();
    let env = Env::prepare_on(kcp, Some(ROOT_SHARD_REGION), "partitions", crate::binary()).await;
    let provider = kcp.client(&env.provider.path).await.unwrap();
    let partitions = [
        ("root-shard", ROOT_SHARD_REGION),
        ("shard-1", SHARD_1_REGION),
    ];
    for (partition, region) in partitions {
        apply(
            &provider,
            &json!({
                "apiVersion": "topology.kcp.io/v1alpha1",
                "kind": "Partition",
                "metadata": {"name": partition},
                "spec": {"selector": {"matchLabels": {"region": region}}},
            }),
        )
        .await
        .expect("Partition");
        apply(
            &provider,
            &json!({
                "apiVersion": "apis.kcp.io/v1alpha1",
                "kind": "APIExportEndpointSlice",
                "metadata": {"name": format!("{EXPORT}-{partition}")},
                "spec": {
                    "export": {"path": env.provider.path, "name": EXPORT},
                    "partition": partition,
                },
            }),
        )
        .await
        .expect("APIExportEndpointSlice");
    }
    // One agent per partition, as the chart would run them: same agent
    // name, same namespace, leader election on.
    let kcp_kc = env.dir.join("kcp-admin.kubeconfig");
    kcp.write_kubeconfig(&env.provider.path, &kcp_kc).unwrap();
    let svc_kc = env.dir.join("service.kubeconfig");
    env.service
        .write_kubeconfig(CHART_SERVICE_ACCOUNT, &env.agent_token, &svc_kc)
        .unwrap();
    let start = |partition: &str, log: &str| {
        let mut args = env.agent_args(&kcp_kc, &svc_kc, &["--enable-leader-election"]);
        let i = args
            .iter()
            .position(|a| a == "--apiexportendpointslice-ref")
            .unwrap();
        args[i + 1] = format!("{EXPORT}-{partition}");
        Agent::start(&env.binary, &args, env.dir.join(log)).expect("agent starts")
    };
    let agent_root = start("root-shard", "agent-root-shard.log");
    let mut agent_1 = Some(start("shard-1", "agent-shard-1.log"));

    env.publish().await;
    env.wait_for_schema("publish-crontabs").await;
    let served = gvk("example.com", "v1", "CronTab");
    let claims = [("", "events")];
    let (ws_root, client_root) = env
        .consumer_in(
            "on-root",
            Some(ROOT_SHARD_REGION),
            &claims,
            &served,
            "crontabs",
        )
        .await;
    let (ws_1, client_1) = env
        .consumer_in(
            "on-shard-1",
            Some(SHARD_1_REGION),
            &claims,
            &served,
            "crontabs",
        )
        .await;
    let (kcp_root, kcp_1) = (
        crontabs(&client_root, "default"),
        crontabs(&client_1, "default"),
    );
    let (local_root, local_1) = (
        crontabs(&env.service_client, &ws_root.cluster),
        crontabs(&env.service_client, &ws_1.cluster),
    );
    let create = |api: &kube::Api<DynamicObject>, name: &str, image: &str| {
        let (api, obj) = (api.clone(), crontab(name, image));
        async move {
            api.create(
                &PostParams::default(),
                &serde_json::from_value(obj).unwrap(),
            )
            .await
            .unwrap();
        }
    };
    let copy_of = |local: &kube::Api<DynamicObject>, name: &str| {
        let (local, copy) = (local.clone(), default_copy_name("default", name));
        let what = format!("copy of {name}");
        async move { eventually(&what, WAIT, || async { get_opt(&local, &copy).await }).await }
    };
    create(&kcp_root, "first", "root-shard").await;
    create(&kcp_1, "second", "shard-1").await;
    copy_of(&local_root, "first").await;
    let second = copy_of(&local_1, "second").await;
    assert_eq!(str_at(&second, "/spec/image"), Some("shard-1"));

    // Each agent reports its own condition, and neither erases the other's.
    let prs = env.published_resources();
    eventually("a Ready condition per partition", WAIT, || async {
        let pr = get_opt(&prs, "publish-crontabs").await?;
        let Some(pr) = pr else { return Ok(None) };
        let conditions = pr.data["status"]["conditions"].as_array().cloned();
        let ready = |slice: String| {
            conditions
                .iter()
                .flatten()
                .any(|c| c["type"] == format!("{slice}/Ready") && c["status"] == "True")
        };
        Ok(
            (ready(format!("{EXPORT}-root-shard")) && ready(format!("{EXPORT}-shard-1")))
                .then_some(()),
        )
    })
    .await;
    let leases = dynamic_api(
        &env.service_client,
        &gvk("coordination.k8s.io", "v1", "Lease"),
        "leases",
        Some(AGENT_NAMESPACE),
    );
    for partition in ["root-shard", "shard-1"] {
        let name = format!("syncagent.{AGENT_NAME}.{EXPORT}-{partition}");
        assert!(
            get_opt(&leases, &name).await.unwrap().is_some(),
            "Lease {name}"
        );
    }

    // Exactly once: each agent wrote only for its own shard's workspaces.
    // Every write of the agent is logged at info level; both see every copy
    // on the service cluster (the same agent name labels them), and one of
    // another partition is only looked up and left alone (debug level).
    let writes_for = |agent: &Agent, cluster: &str| -> Vec<String> {
        syncweave_tests::agent::strip_ansi(&agent.log())
            .lines()
            .filter(|l| l.contains(" INFO ") && l.contains(cluster))
            .map(str::to_string)
            .collect()
    };
    let agent_1_ref = agent_1.as_ref().unwrap();
    assert!(
        !writes_for(&agent_root, &ws_root.cluster).is_empty(),
        "{}",
        agent_root.log_tail(30)
    );
    assert!(
        !writes_for(agent_1_ref, &ws_1.cluster).is_empty(),
        "{}",
        agent_1_ref.log_tail(30)
    );
    assert_eq!(
        writes_for(&agent_root, &ws_1.cluster),
        Vec::<String>::new(),
        "root-shard agent wrote for shard-1"
    );
    assert_eq!(
        writes_for(agent_1_ref, &ws_root.cluster),
        Vec::<String>::new(),
        "shard-1 agent wrote for the root shard"
    );

    // shard-1's agent stops: the root shard keeps syncing, shard-1's new
    // object waits for its own agent (the root shard's copy appearing after
    // it was created shows the remaining agent is working).
    agent_1 = None;
    create(&kcp_1, "fourth", "shard-1").await;
    create(&kcp_root, "third", "root-shard").await;
    copy_of(&local_root, "third").await;
    let fourth = default_copy_name("default", "fourth");
    assert!(
        get_opt(&local_1, &fourth).await.unwrap().is_none(),
        "no other agent syncs shard-1's objects"
    );
    drop(agent_1);
    let _agent_1 = start("shard-1", "agent-shard-1-restarted.log");
    copy_of(&local_1, "fourth").await;
}
