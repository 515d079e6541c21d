//! A kcp with two shards: the endpoint slice lists one virtual-workspace URL
//! per shard that has consumers, and each shard's virtual workspace serves
//! only its own workspaces. The agent must watch every URL, and follow the
//! slice as shards join.

use std::time::Duration;

use kube::api::{DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::json;
use syncweave_tests::env::*;
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
