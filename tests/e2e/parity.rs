//! Upstream api-syncagent behaviours that syncweave implements, checked as a
//! consumer and a provider see them: `filter.resource`, adoption of an
//! unlabelled object on AlreadyExists, the update without a valid state,
//! state Secrets outliving their objects, the per-object Events, copies that
//! are being deleted, `--published-resource-selector`, and a deleted
//! PublishedResource (row numbers refer to the sync parity table of issue 8).

use std::time::Duration;

use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::Client;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use syncweave::controller::store::{KeyParts, ObjectKey};
use syncweave::sync::labels::*;
use syncweave::sync::state::StateStore;
use syncweave_tests::env::*;
use syncweave_tests::*;

const WAIT: Duration = Duration::from_secs(90);

/// Wait for a Normal Event `reason` about `name`, and return its message.
async fn wait_for_event(client: &Client, name: &str, reason: &str) -> String {
    eventually(&format!("a {reason} Event about {name}"), WAIT, || async {
        Ok(events_about(client, name)
            .await?
            .into_iter()
            .find(|(r, t, _)| r == reason && t == "Normal")
            .map(|(_, _, m)| m))
    })
    .await
}

fn has_finalizer(obj: &DynamicObject) -> bool {
    obj.metadata
        .finalizers
        .as_ref()
        .is_some_and(|f| f.iter().any(|x| x == FINALIZER))
}

fn label<'a>(obj: &'a DynamicObject, key: &str) -> Option<&'a str> {
    obj.metadata.labels.as_ref()?.get(key).map(String::as_str)
}

fn annotation<'a>(obj: &'a DynamicObject, key: &str) -> Option<&'a str> {
    obj.metadata
        .annotations
        .as_ref()?
        .get(key)
        .map(String::as_str)
}

/// The key of CronTab `name` in namespace `default` of `cluster`.
fn crontab_key(cluster: &str, name: &str) -> ObjectKey {
    ObjectKey::new(KeyParts {
        cluster: cluster.to_string(),
        namespace: Some("default".into()),
        name: name.to_string(),
    })
}

/// The state the agent stored for `key`, if its state Secret exists.
async fn stored_state(secrets: &Api<Secret>, key: &ObjectKey) -> Result<Option<Value>, String> {
    let name = StateStore::secret_name(key, "example.com/v1", "CronTab");
    let Some(secret) = secrets.get_opt(&name).await.map_err(|e| e.to_string())? else {
        return Ok(None);
    };
    let Some(value) = secret
        .data
        .as_ref()
        .and_then(|d| d.get(&StateStore::data_key(key)))
    else {
        return Ok(None);
    };
    serde_json::from_slice(&value.0)
        .map(Some)
        .map_err(|e| e.to_string())
}

async fn merge(api: &Api<DynamicObject>, name: &str, patch: Value) -> DynamicObject {
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap()
}

/// Rows 20/21 (`filter.resource`), 49 (last-applied stripped), 50 (the
/// namespace outlives its objects), 53/57/63 (Events `ObjectSynced`,
/// `ObjectStatusSynced`, `ObjectCleanup`, `ObjectDeleted`), 55 (update
/// without a valid state) and 62 (upstream never deletes state Secrets;
/// syncweave deletes an object's once the object is gone).
///
/// With `filter.resource` selecting `sync: "yes"`: an object without the
/// label is never accepted (no finalizer) nor copied; an object with it is.
/// An object that stops matching keeps its copy and is no longer synced.
/// Once its state Secret is deleted, a kcp change replaces the copy's
/// content (a field set only on the service cluster is gone, its own labels
/// stay) and the state is written again. Deleting the kcp object deletes the
/// copy with the Events upstream records and its state Secret, and leaves
/// the namespace.
#[tokio::test(flavor = "multi_thread")]
async fn resource_filter_state_and_events() {
    let env = Env::start("parity-filter", crate::binary()).await;
    env.publish_yaml(&format!(
        "{PUBLISHED_RESOURCE}  filter:\n    resource:\n      matchLabels: {{sync: \"yes\"}}\n"
    ))
    .await;
    env.wait_for_schema("publish-crontabs").await;
    let (consumer, client) = env.consumer("consumer").await;
    let kcp_crontabs = crontabs(&client, "default");
    let copies = crontabs(&env.service_client, &consumer.cluster);
    let secrets = Api::<Secret>::namespaced(env.service_client.clone(), AGENT_NAMESPACE);

    // `ignored` goes first: once the later ones are through, it had its chance.
    create(&kcp_crontabs, crontab("ignored", "img")).await;
    // `chosen` has no spec.replicas in kcp: the copy can get a local-only one.
    create(
        &kcp_crontabs,
        json!({
            "apiVersion": "example.com/v1", "kind": "CronTab",
            "metadata": {
                "name": "chosen", "namespace": "default",
                "labels": {"sync": "yes"},
                "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"},
            },
            "spec": {"cronSpec": "* * * * */5", "image": "image-1"},
        }),
    )
    .await;
    let mut dropped = crontab("dropped", "image-1");
    dropped["metadata"]["labels"] = json!({"sync": "yes"});
    create(&kcp_crontabs, dropped).await;

    let chosen_name = default_copy_name("default", "chosen");
    let dropped_name = default_copy_name("default", "dropped");
    let chosen_copy = eventually("the copy of `chosen`", WAIT, || async {
        get_opt(&copies, &chosen_name).await
    })
    .await;
    eventually("the copy of `dropped`", WAIT, || async {
        get_opt(&copies, &dropped_name).await
    })
    .await;
    assert_eq!(str_at(&chosen_copy, "/spec/image"), Some("image-1"));
    assert_eq!(label(&chosen_copy, "sync"), Some("yes"));
    assert_eq!(
        annotation(
            &chosen_copy,
            "kubectl.kubernetes.io/last-applied-configuration"
        ),
        None,
        "row 49: last-applied is not copied"
    );
    wait_for_event(&client, "chosen", "ObjectPlaced").await;

    // `dropped` stops matching, and changes in the same write.
    merge(
        &kcp_crontabs,
        "dropped",
        json!({"metadata": {"labels": {"sync": null}}, "spec": {"image": "after-drop"}}),
    )
    .await;

    // ObjectSynced on a spec change.
    merge(
        &kcp_crontabs,
        "chosen",
        json!({"spec": {"image": "image-2"}}),
    )
    .await;
    eventually("image-2 on the copy of `chosen`", WAIT, || async {
        let c = get_opt(&copies, &chosen_name).await?;
        Ok(c.filter(|c| str_at(c, "/spec/image") == Some("image-2")))
    })
    .await;
    let synced = wait_for_event(&client, "chosen", "ObjectSynced").await;
    assert!(synced.contains(&chosen_name), "{synced}");

    // ObjectStatusSynced on a status coming up.
    let mut with_status = copies.get(&chosen_name).await.unwrap();
    with_status.data["status"] = json!({"phase": "Running"});
    copies
        .replace_status(&chosen_name, &PostParams::default(), &with_status)
        .await
        .unwrap();
    eventually("the status of `chosen` in kcp", WAIT, || async {
        let o = get_opt(&kcp_crontabs, "chosen").await?;
        Ok(o.filter(|o| str_at(o, "/status/phase") == Some("Running")))
    })
    .await;
    wait_for_event(&client, "chosen", "ObjectStatusSynced").await;

    // Row 20: `ignored` was never accepted nor copied; row 21: `dropped`
    // keeps its copy, unchanged.
    let ignored = kcp_crontabs.get("ignored").await.unwrap();
    assert!(
        !has_finalizer(&ignored),
        "{:?}",
        ignored.metadata.finalizers
    );
    let names: Vec<String> = copies
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|o| o.metadata.name)
        .collect();
    assert_eq!(
        names.len(),
        2,
        "only the matching objects are copied: {names:?}"
    );
    assert!(names.contains(&chosen_name) && names.contains(&dropped_name));
    let dropped_copy = copies.get(&dropped_name).await.unwrap();
    assert_eq!(
        str_at(&dropped_copy, "/spec/image"),
        Some("image-1"),
        "an object that no longer matches is not synced"
    );
    assert_eq!(label(&dropped_copy, "sync"), Some("yes"));
    assert!(has_finalizer(&kcp_crontabs.get("dropped").await.unwrap()));

    // Row 55: a field set only on the service cluster, and a label.
    merge(
        &copies,
        &chosen_name,
        json!({"metadata": {"labels": {"provider.example.com/tier": "gold"}}, "spec": {"replicas": 7}}),
    )
    .await;
    let chosen_key = crontab_key(&consumer.cluster, "chosen");
    let state_name = StateStore::secret_name(&chosen_key, "example.com/v1", "CronTab");
    let state = stored_state(&secrets, &chosen_key).await.unwrap().unwrap();
    assert_eq!(state["spec"]["image"], "image-2", "{state}");
    secrets
        .delete(&state_name, &DeleteParams::default())
        .await
        .unwrap();
    wait_gone(&secrets, &state_name, "the state Secret deleted").await;
    // Let the agent's watch of the state Secrets see it.
    tokio::time::sleep(Duration::from_secs(5)).await;
    merge(
        &kcp_crontabs,
        "chosen",
        json!({"spec": {"image": "image-3"}}),
    )
    .await;
    let updated = eventually("image-3 on the copy of `chosen`", WAIT, || async {
        let c = get_opt(&copies, &chosen_name).await?;
        Ok(c.filter(|c| str_at(c, "/spec/image") == Some("image-3")))
    })
    .await;
    assert_eq!(
        updated.data["spec"].get("replicas"),
        None,
        "without a state the spec is replaced, not patched: {}",
        updated.data
    );
    assert_eq!(label(&updated, "provider.example.com/tier"), Some("gold"));
    assert_eq!(label(&updated, AGENT_NAME_LABEL), Some(AGENT_NAME));
    assert_eq!(
        label(&updated, REMOTE_CLUSTER_LABEL),
        Some(consumer.cluster.as_str())
    );
    assert_eq!(annotation(&updated, REMOTE_NAME_ANNOTATION), Some("chosen"));
    let state = eventually("the state Secret written again", WAIT, || async {
        let s = stored_state(&secrets, &chosen_key).await?;
        Ok(s.filter(|s| s["spec"]["image"] == "image-3"))
    })
    .await;
    assert_eq!(state["kind"], "CronTab", "{state}");
    let secret = secrets.get(&state_name).await.unwrap();
    assert_eq!(
        secret.metadata.labels.as_ref().unwrap()[OBJECT_STATE_LABEL],
        "true"
    );

    // Rows 63 and 62: deleting `chosen` in kcp.
    kcp_crontabs
        .delete("chosen", &DeleteParams::default())
        .await
        .unwrap();
    wait_gone(&copies, &chosen_name, "the copy of `chosen` deleted").await;
    wait_gone(&kcp_crontabs, "chosen", "`chosen` gone from kcp").await;
    let cleanup = wait_for_event(&client, "chosen", "ObjectCleanup").await;
    assert!(cleanup.contains(&chosen_name), "{cleanup}");
    wait_for_event(&client, "chosen", "ObjectDeleted").await;
    // Unlike upstream (which leaks one Secret per object ever synced), the
    // state goes with its object.
    wait_gone(
        &secrets,
        &state_name,
        "the state Secret deleted with its object",
    )
    .await;

    // `dropped` no longer matches, but was accepted: deleting it still
    // removes its copy and releases it (upstream would skip it and leave the
    // kcp object stuck on its finalizer).
    kcp_crontabs
        .delete("dropped", &DeleteParams::default())
        .await
        .unwrap();
    wait_gone(&copies, &dropped_name, "the copy of `dropped` deleted").await;
    wait_gone(&kcp_crontabs, "dropped", "`dropped` gone from kcp").await;

    // Row 50: the namespace stays when its last copy is gone; row 62: both
    // state Secrets went with their objects.
    let ns = Api::<Namespace>::all(env.service_client.clone())
        .get(&consumer.cluster)
        .await
        .unwrap();
    assert!(ns.metadata.deletion_timestamp.is_none());
    let kept = secrets
        .list(&ListParams::default().labels(&format!(
            "{OBJECT_STATE_LABEL}=true,{REMOTE_CLUSTER_LABEL}={}",
            consumer.cluster
        )))
        .await
        .unwrap();
    assert_eq!(kept.items.len(), 0, "{:?}", kept.items);
    // And `ignored` is still untouched.
    assert!(!has_finalizer(&kcp_crontabs.get("ignored").await.unwrap()));
}

/// Rows 51/75 (adoption on AlreadyExists), 52 (missing sync metadata is
/// restored) and 56 (a copy being deleted is left alone).
///
/// An unlabelled object already sits on the service cluster under the copy's
/// name: the agent adopts it (same uid, sync labels and annotations added, its
/// own labels kept, no second object). As upstream, the adopted state is the
/// kcp object, so fields that differ stay as they are until kcp changes them.
/// A sync label removed from the copy is put back. A copy that is being
/// deleted (held by someone else's finalizer) is not touched while kcp
/// changes; once it is gone, the agent places a new one with kcp's content.
#[tokio::test(flavor = "multi_thread")]
async fn adoption_and_copies_being_deleted() {
    let mut env = Env::prepare("parity-adopt", crate::binary()).await;
    env.start_agent(&["--resync-period=3s"]);
    env.publish().await;
    env.wait_for_schema("publish-crontabs").await;
    let (consumer, client) = env.consumer("consumer").await;
    let kcp_crontabs = crontabs(&client, "default");
    let copies = crontabs(&env.service_client, &consumer.cluster);
    let copy_name = default_copy_name("default", "adoptee");

    // The provider put an object there by hand.
    apply(
        &env.service_client,
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": consumer.cluster}}),
    )
    .await
    .unwrap();
    let manual = copies
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "apiVersion": "example.com/v1", "kind": "CronTab",
                "metadata": {
                    "name": copy_name, "namespace": consumer.cluster,
                    "labels": {"provider.example.com/origin": "manual"},
                },
                "spec": {"cronSpec": "0 0 * * *", "image": "provider-image", "replicas": 5},
            }))
            .unwrap(),
        )
        .await
        .unwrap();

    create(&kcp_crontabs, crontab("adoptee", "kcp-image")).await;
    let adopted = eventually("the manual object adopted", WAIT, || async {
        let c = get_opt(&copies, &copy_name).await?;
        Ok(c.filter(|c| label(c, AGENT_NAME_LABEL) == Some(AGENT_NAME)))
    })
    .await;
    assert_eq!(
        adopted.metadata.uid, manual.metadata.uid,
        "adopted, not replaced"
    );
    assert_eq!(
        label(&adopted, REMOTE_CLUSTER_LABEL),
        Some(consumer.cluster.as_str())
    );
    assert_eq!(
        label(&adopted, REMOTE_NAME_HASH_LABEL).map(str::to_string),
        Some(sha1_hex("adoptee"))
    );
    assert_eq!(
        label(&adopted, REMOTE_NAMESPACE_HASH_LABEL).map(str::to_string),
        Some(sha1_hex("default"))
    );
    assert_eq!(
        annotation(&adopted, REMOTE_NAME_ANNOTATION),
        Some("adoptee")
    );
    assert_eq!(
        annotation(&adopted, REMOTE_NAMESPACE_ANNOTATION),
        Some("default")
    );
    assert_eq!(
        label(&adopted, "provider.example.com/origin"),
        Some("manual")
    );
    assert!(has_finalizer(&kcp_crontabs.get("adoptee").await.unwrap()));
    // Two more passes (periodic checks): still one object, its differing
    // fields kept (the stored state is the kcp object, as upstream's
    // adoption stores it).
    let key = crontab_key(&consumer.cluster, "adoptee").to_string();
    env.wait_for_passes(&key, env.passes(&key) + 2).await;
    let all = copies.list(&Default::default()).await.unwrap();
    assert_eq!(all.items.len(), 1, "no duplicate: {:?}", all.items);
    let copy = copies.get(&copy_name).await.unwrap();
    assert_eq!(str_at(&copy, "/spec/image"), Some("provider-image"));
    assert_eq!(copy.data["spec"]["replicas"], 5);
    let state = stored_state(
        &Api::namespaced(env.service_client.clone(), AGENT_NAMESPACE),
        &crontab_key(&consumer.cluster, "adoptee"),
    )
    .await
    .unwrap()
    .expect("the state of the adopted object");
    assert_eq!(state["spec"]["image"], "kcp-image", "{state}");

    // A kcp change is patched in; what kcp did not change stays.
    merge(
        &kcp_crontabs,
        "adoptee",
        json!({"spec": {"image": "kcp-image-2"}}),
    )
    .await;
    let copy = eventually("kcp-image-2 on the adopted object", WAIT, || async {
        let c = get_opt(&copies, &copy_name).await?;
        Ok(c.filter(|c| str_at(c, "/spec/image") == Some("kcp-image-2")))
    })
    .await;
    assert_eq!(copy.data["spec"]["replicas"], 5);
    assert_eq!(str_at(&copy, "/spec/cronSpec"), Some("0 0 * * *"));

    // Row 52: a sync label removed on the service cluster is put back.
    merge(
        &copies,
        &copy_name,
        json!({"metadata": {"labels": {AGENT_NAME_LABEL: null}}}),
    )
    .await;
    eventually("the agent-name label restored", WAIT, || async {
        let c = get_opt(&copies, &copy_name).await?;
        Ok(c.filter(|c| label(c, AGENT_NAME_LABEL) == Some(AGENT_NAME)))
    })
    .await;

    // Row 56: the copy is being deleted, held by the provider's finalizer.
    merge(
        &copies,
        &copy_name,
        json!({"metadata": {"finalizers": ["provider.example.com/hold"]}}),
    )
    .await;
    copies
        .delete(&copy_name, &DeleteParams::default())
        .await
        .unwrap();
    let deleting = eventually("the copy being deleted", WAIT, || async {
        let c = get_opt(&copies, &copy_name).await?;
        Ok(c.filter(|c| c.metadata.deletion_timestamp.is_some()))
    })
    .await;
    merge(
        &kcp_crontabs,
        "adoptee",
        json!({"spec": {"image": "while-deleting"}}),
    )
    .await;
    // The agent sees the change at once and checks again every second while
    // the copy is being deleted: three passes after the change.
    env.wait_for_passes(&key, env.passes(&key) + 3).await;
    let still = copies.get(&copy_name).await.unwrap();
    assert_eq!(
        still.metadata.resource_version, deleting.metadata.resource_version,
        "a copy being deleted is not touched: {:?}",
        still.data
    );
    assert_eq!(str_at(&still, "/spec/image"), Some("kcp-image-2"));
    let kcp_obj = kcp_crontabs.get("adoptee").await.unwrap();
    assert!(kcp_obj.metadata.deletion_timestamp.is_none() && has_finalizer(&kcp_obj));

    // Released: the agent places a new copy with kcp's content.
    merge(
        &copies,
        &copy_name,
        json!({"metadata": {"finalizers": null}}),
    )
    .await;
    let placed = eventually("a new copy placed", WAIT, || async {
        let c = get_opt(&copies, &copy_name).await?;
        Ok(c.filter(|c| c.metadata.uid != deleting.metadata.uid))
    })
    .await;
    assert_eq!(str_at(&placed, "/spec/image"), Some("while-deleting"));
    assert_eq!(
        placed.data["spec"]["replicas"], 1,
        "kcp's spec: {}",
        placed.data
    );
    assert_eq!(label(&placed, AGENT_NAME_LABEL), Some(AGENT_NAME));
    assert_eq!(label(&placed, "provider.example.com/origin"), None);

    // Row 43: a second object claiming the same kcp object (same identity
    // labels) is an error the consumer sees, until the extra one is gone.
    let mut twin: Value = serde_json::to_value(&placed).unwrap();
    twin["metadata"] = json!({
        "name": "twin", "namespace": consumer.cluster,
        "labels": placed.metadata.labels, "annotations": placed.metadata.annotations,
    });
    create(&copies, twin).await;
    merge(
        &kcp_crontabs,
        "adoptee",
        json!({"spec": {"image": "while-ambiguous"}}),
    )
    .await;
    let message = eventually("a ReconcilingError Event about adoptee", WAIT, || async {
        Ok(events_about(&client, "adoptee")
            .await?
            .into_iter()
            .find(|(r, t, m)| r == "ReconcilingError" && t == "Warning" && m.contains("copies"))
            .map(|(_, _, m)| m))
    })
    .await;
    assert!(
        message.contains("found 2 copies") && message.contains("delete the extra ones"),
        "{message}"
    );
    assert_eq!(
        str_at(&copies.get(&copy_name).await.unwrap(), "/spec/image"),
        Some("while-deleting"),
        "nothing synced while ambiguous"
    );
    copies
        .delete("twin", &DeleteParams::default())
        .await
        .unwrap();
    eventually(
        "the change synced once the extra copy is gone",
        WAIT,
        || async {
            let c = get_opt(&copies, &copy_name).await?;
            Ok(c.filter(|c| str_at(c, "/spec/image") == Some("while-ambiguous")))
        },
    )
    .await;
}

/// Rows 76 (`--published-resource-selector`), 87 (a deleted PublishedResource
/// keeps its APIResourceSchema), 89 (the agent-name annotation on the
/// APIExport) and 93 (deleting a PublishedResource stops its sync).
///
/// The agent only publishes the PublishedResource that matches its selector:
/// the other gets no schema and no status, and the gauge counts one. Once the
/// published one is deleted, its schema stays in kcp (and in the export, as a
/// schema no PublishedResource manages), existing copies stay, and a new kcp
/// object is neither accepted nor copied.
#[tokio::test(flavor = "multi_thread")]
async fn selector_and_deleted_published_resource() {
    let mut env = Env::prepare("parity-selector", crate::binary()).await;
    let metrics = free_port();
    env.start_agent(&[
        "--published-resource-selector=e2e.syncweave.dev/agent=mine",
        &format!("--metrics-address=127.0.0.1:{metrics}"),
    ]);
    apply_crds(&env.service_client, NOTE_CRD)
        .await
        .expect("Note CRD");
    env.publish_yaml(
        "apiVersion: syncagent.kcp.io/v1alpha1\nkind: PublishedResource\nmetadata: {name: publish-notes}\nspec:\n  resource: {apiGroup: example.com, kind: Note, versions: [v1]}\n",
    )
    .await;
    env.publish_yaml(&PUBLISHED_RESOURCE.replace(
        "  name: publish-crontabs\n",
        "  name: publish-crontabs\n  labels: {e2e.syncweave.dev/agent: mine}\n",
    ))
    .await;
    let schema_name = env.wait_for_schema("publish-crontabs").await;
    let (consumer, client) = env.consumer("consumer").await;
    let kcp_crontabs = crontabs(&client, "default");
    let copies = crontabs(&env.service_client, &consumer.cluster);
    create(&kcp_crontabs, crontab("before", "img")).await;
    eventually("the copy of `before`", WAIT, || async {
        get_opt(&copies, &default_copy_name("default", "before")).await
    })
    .await;

    // The unselected PublishedResource is not the agent's.
    let notes_pr = env
        .published_resources()
        .get("publish-notes")
        .await
        .unwrap();
    assert_eq!(notes_pr.data.get("status"), None, "{:?}", notes_pr.data);
    let provider = kcp().client(&env.provider.path).await.unwrap();
    let schemas = dynamic_api(
        &provider,
        &gvk("apis.kcp.io", "v1alpha1", "APIResourceSchema"),
        "apiresourceschemas",
        None,
    );
    let names: Vec<String> = schemas
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|s| s.metadata.name)
        .collect();
    assert_eq!(names, vec![schema_name.clone()]);
    let exports = env.apiexports().await;
    let export = exports.get(EXPORT).await.unwrap();
    assert_eq!(
        export.data["spec"]["latestResourceSchemas"],
        json!([schema_name])
    );
    assert_eq!(annotation(&export, AGENT_NAME_LABEL), Some(AGENT_NAME));
    let (_, m) = http_get(metrics, "/metrics").await.unwrap();
    assert!(
        m.lines().any(|l| l == "sync_agent_published_resource 1"),
        "{m}"
    );

    // Deleting the PublishedResource.
    env.published_resources()
        .delete("publish-crontabs", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the agent sees no PublishedResource", WAIT, || async {
        let (_, m) = http_get(metrics, "/metrics").await?;
        Ok(m.lines()
            .any(|l| l == "sync_agent_published_resource 0")
            .then_some(()))
    })
    .await;
    // The sync controller is stopped in the same pass: it says so, and its
    // metric series are gone.
    eventually("the sync controller stopped", WAIT, || async {
        let (_, m) = http_get(metrics, "/metrics").await?;
        let stopped = env
            .agent
            .as_ref()
            .unwrap()
            .log()
            .lines()
            .any(|l| l.contains("stopped sync controller"));
        Ok((stopped && !m.contains(r#"published_resource="publish-crontabs""#)).then_some(()))
    })
    .await;
    create(&kcp_crontabs, crontab("after", "img")).await;
    // A running controller accepts a new object within a second or two.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let after = kcp_crontabs.get("after").await.unwrap();
    assert!(!has_finalizer(&after), "{:?}", after.metadata.finalizers);
    let names: Vec<String> = copies
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|o| o.metadata.name)
        .collect();
    assert_eq!(
        names,
        vec![default_copy_name("default", "before")],
        "no new copy, the old one kept"
    );
    assert!(
        get_opt(&schemas, &schema_name).await.unwrap().is_some(),
        "the schema outlives its PublishedResource"
    );
    assert_eq!(
        exports.get(EXPORT).await.unwrap().data["spec"]["latestResourceSchemas"],
        json!([schema_name])
    );
}

/// Row 46: two agents (different `--agent-name`, each with its own
/// PublishedResource by `--published-resource-selector`, its own APIExport
/// in its own provider workspace) share one service cluster, its CronTab CRD
/// and the state namespace. Each copy carries its agent's name; status goes
/// up only to the copy's own consumer; a copy deleted by hand is put back by
/// its agent; a change or a deletion in one consumer touches only that
/// consumer's copy.
#[tokio::test(flavor = "multi_thread")]
async fn two_agents_share_a_service_cluster() {
    let mut env = Env::prepare("parity-agents", crate::binary()).await;
    env.start_agent(&["--published-resource-selector=e2e.syncweave.dev/agent=a"]);

    // The second provider: its own workspace and APIExport, its own agent.
    let kcp = env.kcp;
    let provider_b = kcp
        .create_workspace_in(&env.org.path, "provider-b", None)
        .await
        .expect("provider-b workspace");
    apply_yaml(&kcp.client(&provider_b.path).await.unwrap(), APIEXPORT)
        .await
        .expect("provider-b's APIExport");
    let kcp_kc_b = env.dir.join("kcp-b.kubeconfig");
    kcp.write_kubeconfig(&provider_b.path, &kcp_kc_b).unwrap();
    let args: Vec<String> = [
        "sync",
        "--kcp-kubeconfig",
        kcp_kc_b.to_str().unwrap(),
        "--kubeconfig",
        // Written for the first agent: the chart's ServiceAccount.
        env.dir.join("service.kubeconfig").to_str().unwrap(),
        "--namespace",
        AGENT_NAMESPACE,
        "--apiexportendpointslice-ref",
        EXPORT,
        "--agent-name",
        "agent-b",
        "--published-resource-selector=e2e.syncweave.dev/agent=b",
        "--metrics-address",
        "0",
        "--log-format",
        "Console",
        "--log-debug",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let _agent_b = Agent::start(&env.binary, &args, env.dir.join("agent-b.log")).unwrap();

    for agent in ["a", "b"] {
        env.publish_yaml(&PUBLISHED_RESOURCE.replace(
            "  name: publish-crontabs\n",
            &format!(
                "  name: publish-crontabs-{agent}\n  labels: {{e2e.syncweave.dev/agent: {agent}}}\n"
            ),
        ))
        .await;
    }
    env.wait_for_schema("publish-crontabs-a").await;
    env.wait_for_schema("publish-crontabs-b").await;

    let (ws_a, client_a) = env.consumer("consumer-a").await;
    let ws_b = kcp
        .create_workspace_in(&env.org.path, "consumer-b", None)
        .await
        .expect("consumer-b workspace");
    let client_b = kcp.client(&ws_b.path).await.unwrap();
    apply(
        &client_b,
        &json!({
            "apiVersion": "apis.kcp.io/v1alpha1",
            "kind": "APIBinding",
            "metadata": {"name": EXPORT},
            "spec": {
                "reference": {"export": {"path": provider_b.path, "name": EXPORT}},
                "permissionClaims": [{"group": "", "resource": "events", "all": true, "state": "Accepted"}],
            },
        }),
    )
    .await
    .expect("consumer-b's APIBinding");
    let kcp_b = crontabs(&client_b, "default");
    eventually("CronTabs served in consumer-b", WAIT, || async {
        kcp_b
            .list(&Default::default())
            .await
            .map(|_| Some(()))
            .map_err(|e| e.to_string())
    })
    .await;
    let kcp_a = crontabs(&client_a, "default");
    create(&kcp_a, crontab("job", "image-a")).await;
    create(&kcp_b, crontab("job", "image-b")).await;

    let name = default_copy_name("default", "job");
    let copies_a = crontabs(&env.service_client, &ws_a.cluster);
    let copies_b = crontabs(&env.service_client, &ws_b.cluster);
    let copy_a = eventually("consumer-a's copy", WAIT, || async {
        get_opt(&copies_a, &name).await
    })
    .await;
    let copy_b = eventually("consumer-b's copy", WAIT, || async {
        get_opt(&copies_b, &name).await
    })
    .await;
    assert_eq!(label(&copy_a, AGENT_NAME_LABEL), Some(AGENT_NAME));
    assert_eq!(label(&copy_b, AGENT_NAME_LABEL), Some("agent-b"));
    assert_eq!(str_at(&copy_a, "/spec/image"), Some("image-a"));
    assert_eq!(str_at(&copy_b, "/spec/image"), Some("image-b"));

    // Status up, each to its own consumer.
    for (copies, phase) in [(&copies_a, "from-a"), (&copies_b, "from-b")] {
        let mut s = copies.get(&name).await.unwrap();
        s.data["status"] = json!({"phase": phase});
        copies
            .replace_status(&name, &PostParams::default(), &s)
            .await
            .unwrap();
    }
    for (api, phase) in [(&kcp_a, "from-a"), (&kcp_b, "from-b")] {
        eventually(&format!("status {phase} in kcp"), WAIT, || async {
            let o = get_opt(api, "job").await?;
            Ok(o.filter(|o| str_at(o, "/status/phase") == Some(phase)))
        })
        .await;
    }

    // A copy deleted by hand is put back by its own agent.
    copies_a
        .delete(&name, &DeleteParams::default())
        .await
        .unwrap();
    let recreated = eventually("consumer-a's copy put back", WAIT, || async {
        let c = get_opt(&copies_a, &name).await?;
        Ok(c.filter(|c| c.metadata.uid != copy_a.metadata.uid))
    })
    .await;
    assert_eq!(label(&recreated, AGENT_NAME_LABEL), Some(AGENT_NAME));

    // A change in consumer-a reaches only its copy.
    let before_b = copies_b.get(&name).await.unwrap();
    let key_a = format!("{}|default/job", ws_a.cluster);
    let passes_a = env.passes(&key_a);
    merge(&kcp_a, "job", json!({"spec": {"image": "image-a2"}})).await;
    eventually("image-a2 on consumer-a's copy", WAIT, || async {
        let c = get_opt(&copies_a, &name).await?;
        Ok(c.filter(|c| str_at(c, "/spec/image") == Some("image-a2")))
    })
    .await;
    // Agent a has finished the pass that wrote it.
    env.wait_for_passes(&key_a, passes_a + 1).await;
    assert_eq!(
        copies_b.get(&name).await.unwrap().metadata.resource_version,
        before_b.metadata.resource_version,
        "consumer-b's copy untouched"
    );
    // Deleting in consumer-b deletes only consumer-b's copy.
    kcp_b.delete("job", &DeleteParams::default()).await.unwrap();
    wait_gone(&copies_b, &name, "consumer-b's copy deleted").await;
    wait_gone(&kcp_b, "job", "consumer-b's object gone").await;
    let a = copies_a.get(&name).await.unwrap();
    assert_eq!(str_at(&a, "/spec/image"), Some("image-a2"));
    assert!(a.metadata.deletion_timestamp.is_none());
    assert!(has_finalizer(&kcp_a.get("job").await.unwrap()));

    // Each PublishedResource is reported on by its own agent only.
    for pr in ["publish-crontabs-a", "publish-crontabs-b"] {
        env.wait_for_ready(pr, "True", "Syncing").await;
    }
    // Neither agent ever picked up the other's copies: a copy mapped back
    // would be reconciled, and every reconcile logs its key (--log-debug).
    for (log, other) in [("agent.log", &ws_b.cluster), ("agent-b.log", &ws_a.cluster)] {
        let text = std::fs::read_to_string(env.dir.join(log)).unwrap();
        assert!(text.contains("default/job"), "{log} shows reconciles");
        assert!(
            !text.contains(&format!("{other}|")),
            "{log} handled the other agent's object"
        );
    }
}
