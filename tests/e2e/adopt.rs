//! Taking over from a running upstream api-syncagent: objects it synced, with
//! its state Secret (name, keys and value in upstream's format, which the
//! unit tests in host/src/sync/state.rs pin to vectors printed by upstream's
//! own code), are adopted without touching the copy or writing new state.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use serde_json::json;
use syncweave::controller::store::{KeyParts, ObjectKey};
use syncweave::sync::labels::*;
use syncweave::sync::state::StateStore;
use syncweave::sync::strip::{drop_subresources, strip_metadata};
use syncweave_tests::env::*;
use syncweave_tests::*;

const WAIT: Duration = Duration::from_secs(90);

#[tokio::test(flavor = "multi_thread")]
async fn adopts_objects_synced_by_upstream_without_touching_them() {
    let mut env = Env::prepare("adopt", crate::binary()).await;
    // Publish the schema only, as the upstream agent had done.
    env.start_agent(&["--disabled-controllers=sync"]);
    env.publish().await;
    let (consumer, client) = env.consumer("consumer").await;
    let kcp_crontabs = crontabs(&client, "default");
    let created = kcp_crontabs
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "apiVersion": "example.com/v1",
                "kind": "CronTab",
                "metadata": {"name": "legacy", "namespace": "default"},
                "spec": {"cronSpec": "* * * * */5", "image": "legacy-image", "replicas": 1},
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    env.agent = None; // the "upstream agent" goes away

    // What upstream left behind: its finalizer on the kcp object, the copy
    // (with a provider-local field and status), and its state Secret.
    kcp_crontabs
        .patch(
            "legacy",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": [FINALIZER]}})),
        )
        .await
        .unwrap();
    let remote = kcp_crontabs.get("legacy").await.unwrap();
    let key = ObjectKey::new(KeyParts {
        cluster: consumer.cluster.clone(),
        namespace: Some("default".into()),
        name: "legacy".into(),
    });
    let local_name = default_copy_name("default", "legacy");
    apply(
        &env.service_client,
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": consumer.cluster}}),
    )
    .await
    .unwrap();
    let local = crontabs(&env.service_client, &consumer.cluster);
    let copy = local
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "apiVersion": "example.com/v1",
                "kind": "CronTab",
                "metadata": {
                    "name": local_name,
                    "namespace": consumer.cluster,
                    "labels": {
                        REMOTE_CLUSTER_LABEL: consumer.cluster,
                        REMOTE_NAME_HASH_LABEL: sha1_hex("legacy"),
                        REMOTE_NAMESPACE_HASH_LABEL: sha1_hex("default"),
                        AGENT_NAME_LABEL: AGENT_NAME,
                        "provider.example.com/placed-by": "upstream",
                    },
                    "annotations": {
                        REMOTE_NAME_ANNOTATION: "legacy",
                        REMOTE_NAMESPACE_ANNOTATION: "default",
                    },
                },
                // The provider's controller scaled it up locally: a local-only change.
                "spec": {"cronSpec": "* * * * */5", "image": "legacy-image", "replicas": 3},
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    let mut with_status = copy.clone();
    with_status.data["status"] = json!({"phase": "Running"});
    let copy = local
        .replace_status(&local_name, &PostParams::default(), &with_status)
        .await
        .unwrap();

    let mut state = serde_json::to_value(&remote).unwrap();
    strip_metadata(&mut state);
    drop_subresources(&mut state, true, true);
    let secret_name = StateStore::secret_name(&key, "example.com/v1", "CronTab");
    let secrets = Api::<Secret>::namespaced(env.service_client.clone(), AGENT_NAMESPACE);
    let secret = secrets
        .create(
            &PostParams::default(),
            &Secret {
                metadata: ObjectMeta {
                    name: Some(secret_name.clone()),
                    labels: Some(StateStore::secret_labels(&key)),
                    ..Default::default()
                },
                data: Some(BTreeMap::from([(
                    StateStore::data_key(&key),
                    ByteString(StateStore::encode_state(&state)),
                )])),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert!(created.metadata.uid.is_some());

    // syncweave takes over, checking every object every 3 s.
    env.start_agent(&["--resync-period=3s"]);
    // It has processed the object once the copy's status is up in kcp.
    eventually("status synced up by syncweave", WAIT, || async {
        let o = get_opt(&kcp_crontabs, "legacy").await?;
        Ok(o.filter(|o| str_at(o, "/status/phase") == Some("Running")))
    })
    .await;
    // Two more passes (periodic checks) after that, to (wrongly) write anything.
    let key = key.to_string();
    env.wait_for_passes(&key, env.passes(&key) + 2).await;

    let after = local.get(&local_name).await.unwrap();
    assert_eq!(
        after.metadata.resource_version, copy.metadata.resource_version,
        "the copy was rewritten: {:?}",
        after.data
    );
    assert_eq!(after.data["spec"]["replicas"], 3, "local-only change kept");
    let state_secrets = secrets
        .list(&ListParams::default().labels(&format!("{OBJECT_STATE_LABEL}=true")))
        .await
        .unwrap();
    let names: Vec<_> = state_secrets
        .items
        .iter()
        .filter_map(|s| s.metadata.name.clone())
        .collect();
    assert_eq!(
        names,
        vec![secret_name.clone()],
        "no second, orphaned state Secret"
    );
    assert_eq!(
        secrets
            .get(&secret_name)
            .await
            .unwrap()
            .metadata
            .resource_version,
        secret.metadata.resource_version,
        "the state Secret is adopted as it is"
    );

    // And the adopted state drives the next change: a kcp edit is patched in,
    // the local-only field still survives.
    kcp_crontabs
        .patch(
            "legacy",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"image": "new-image"}})),
        )
        .await
        .unwrap();
    let updated = eventually("the kcp change on the copy", WAIT, || async {
        let o = get_opt(&local, &local_name).await?;
        Ok(o.filter(|o| str_at(o, "/spec/image") == Some("new-image")))
    })
    .await;
    assert_eq!(updated.data["spec"]["replicas"], 3);
}
