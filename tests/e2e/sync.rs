//! Syncing objects from consumer workspaces to the service cluster and back.

use std::time::Duration;

use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use syncweave_tests::*;

use syncweave_tests::env::*;

const WAIT: Duration = Duration::from_secs(60);

fn service_crontabs(env: &Env, namespace: &str) -> Api<DynamicObject> {
    crontabs(&env.service_client, namespace)
}

async fn wait_for_copy(api: &Api<DynamicObject>, name: &str, what: &str) -> DynamicObject {
    eventually(what, WAIT, || async { get_opt(api, name).await }).await
}

/// The PublishedResource becomes an APIResourceSchema in the provider
/// workspace, listed in the APIExport and recorded in the PR's status.
#[tokio::test(flavor = "multi_thread")]
async fn publishes_schema_into_apiexport() {
    let env = Env::start("schema", crate::binary()).await;
    env.publish().await;

    let schema_name = env.wait_for_schema("publish-crontabs").await;
    assert!(schema_name.starts_with('v'), "{schema_name}");
    assert!(
        schema_name.ends_with(".crontabs.example.com"),
        "{schema_name}"
    );
    let hash = schema_name.split('.').next().unwrap();
    assert_eq!(hash.len(), 9, "v + 8 hex: {schema_name}");

    let provider = kcp().client(&env.provider.path).await.unwrap();
    let schemas = dynamic_api(
        &provider,
        &gvk("apis.kcp.io", "v1alpha1", "APIResourceSchema"),
        "apiresourceschemas",
        None,
    );
    let ars = schemas
        .get(&schema_name)
        .await
        .expect("APIResourceSchema exists in the provider workspace");
    assert_eq!(str_at(&ars, "/spec/group"), Some("example.com"));
    assert_eq!(str_at(&ars, "/spec/names/kind"), Some("CronTab"));
    assert_eq!(str_at(&ars, "/spec/versions/0/name"), Some("v1"));
    assert_eq!(
        ars.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("syncagent.kcp.io/agent-name"))
            .map(String::as_str),
        Some(AGENT_NAME)
    );

    let exports = env.apiexports().await;
    eventually("APIExport lists the schema", WAIT, || {
        let (exports, schema_name) = (exports.clone(), schema_name.clone());
        async move {
            let e = exports.get(EXPORT).await.map_err(|e| e.to_string())?;
            let listed = e
                .data
                .pointer("/spec/latestResourceSchemas")
                .and_then(Value::as_array)
                .is_some_and(|a| a.iter().any(|s| s == &json!(schema_name)));
            Ok(listed.then_some(()))
        }
    })
    .await;

    // Upstream's Events on the APIExport, in the provider workspace.
    let events = dynamic_api(
        &provider,
        &gvk("", "v1", "Event"),
        "events",
        Some("default"),
    );
    let on_export = eventually("Events on the APIExport", WAIT, || async {
        let list = events
            .list(&Default::default())
            .await
            .map_err(|e| e.to_string())?;
        let found: Vec<(String, String)> = list
            .items
            .iter()
            .filter(|e| {
                str_at(e, "/involvedObject/kind") == Some("APIExport")
                    && str_at(e, "/involvedObject/name") == Some(EXPORT)
            })
            .map(|e| {
                (
                    str_at(e, "/reason").unwrap_or_default().to_string(),
                    str_at(e, "/message").unwrap_or_default().to_string(),
                )
            })
            .collect();
        let has = |r: &str| found.iter().any(|(reason, _)| reason == r);
        Ok((has("AddingResourceSchemas") && has("AddingPermissionClaims")).then_some(found))
    })
    .await;
    assert!(
        on_export.iter().any(|(r, m)| r == "AddingResourceSchemas"
            && m == &format!("Added new resource schema(s) {schema_name}.")),
        "{on_export:?}"
    );
    assert!(
        on_export
            .iter()
            .any(|(r, m)| r == "AddingPermissionClaims" && m.contains("events")),
        "{on_export:?}"
    );

    // A wrong agent label on the schema is repaired (the spec is never
    // touched: its name is its hash).
    schemas
        .patch(
            &schema_name,
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"labels": {"syncagent.kcp.io/agent-name": "someone-else"}}}),
            ),
        )
        .await
        .unwrap();
    // Any change of the PublishedResource wakes the publisher.
    env.published_resources()
        .patch(
            "publish-crontabs",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"e2e.syncweave.dev/touch": "1"}}})),
        )
        .await
        .unwrap();
    eventually("the schema's agent label repaired", WAIT, || async {
        let ars = get_opt(&schemas, &schema_name).await?;
        Ok(ars.filter(|a| {
            a.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get("syncagent.kcp.io/agent-name"))
                .is_some_and(|v| v == AGENT_NAME)
        }))
    })
    .await;
}

/// The whole lifecycle of one object: accepted (finalizer), placed on the
/// service cluster under upstream's default name with sync metadata, spec
/// changes go down, local-only changes survive, status comes up, and
/// deleting in kcp removes the copy before the kcp object goes.
#[tokio::test(flavor = "multi_thread")]
async fn syncs_object_lifecycle() {
    let env = Env::start("lifecycle", crate::binary()).await;
    env.publish().await;
    let (consumer, client) = env.consumer("consumer").await;
    let kcp_crontabs = crontabs(&client, "default");
    kcp_crontabs
        .create(
            &PostParams::default(),
            &serde_json::from_value(crontab("my-crontab", "image-1")).unwrap(),
        )
        .await
        .unwrap();

    // Down: namespace = consumer's logical cluster, name = sha3short(ns)-sha3short(name).
    let local_name = default_copy_name("default", "my-crontab");
    let local_api = service_crontabs(&env, &consumer.cluster);
    let copy = wait_for_copy(&local_api, &local_name, "copy on the service cluster").await;
    assert_eq!(str_at(&copy, "/spec/image"), Some("image-1"));
    let labels = copy.metadata.labels.clone().unwrap_or_default();
    assert_eq!(
        labels
            .get("syncagent.kcp.io/agent-name")
            .map(String::as_str),
        Some(AGENT_NAME)
    );
    assert_eq!(
        labels.get("syncagent.kcp.io/remote-object-cluster"),
        Some(&consumer.cluster)
    );
    let ann = copy.metadata.annotations.clone().unwrap_or_default();
    assert_eq!(
        ann.get("syncagent.kcp.io/remote-object-name")
            .map(String::as_str),
        Some("my-crontab")
    );
    assert_eq!(
        ann.get("syncagent.kcp.io/remote-object-namespace")
            .map(String::as_str),
        Some("default")
    );
    // The service cluster here is itself a kcp workspace, which stamps its own
    // kcp.io/cluster on everything; the consumer's must not leak through.
    assert_ne!(
        ann.get("kcp.io/cluster"),
        Some(&consumer.cluster),
        "kcp's annotations from the consumer side are stripped"
    );

    let obj = kcp_crontabs.get("my-crontab").await.unwrap();
    assert!(
        obj.metadata
            .finalizers
            .unwrap_or_default()
            .contains(&"syncagent.kcp.io/cleanup".to_string())
    );

    // A field set only on the service cluster survives later syncs.
    local_api
        .patch(
            &local_name,
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": {"replicas": 7}})),
        )
        .await
        .unwrap();

    // Spec change in kcp propagates down.
    kcp_crontabs
        .patch(
            "my-crontab",
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": {"image": "image-2"}})),
        )
        .await
        .unwrap();
    eventually("spec change on the service cluster", WAIT, || async {
        let c = get_opt(&local_api, &local_name).await?;
        Ok(c.filter(|c| str_at(c, "/spec/image") == Some("image-2")))
    })
    .await;
    let copy = local_api.get(&local_name).await.unwrap();
    assert_eq!(
        copy.data.pointer("/spec/replicas"),
        Some(&json!(7)),
        "local-only change kept"
    );

    // Status set on the service cluster shows up in kcp.
    let mut with_status = copy.clone();
    with_status.data["status"] = json!({"phase": "Running", "lastRun": "never"});
    local_api
        .replace_status(&local_name, &PostParams::default(), &with_status)
        .await
        .unwrap();
    eventually("status in kcp", WAIT, || async {
        let o = get_opt(&kcp_crontabs, "my-crontab").await?;
        Ok(o.filter(|o| str_at(o, "/status/phase") == Some("Running")))
    })
    .await;

    // Deleting in kcp deletes the copy, then releases the finalizer.
    kcp_crontabs
        .delete("my-crontab", &DeleteParams::default())
        .await
        .unwrap();
    eventually("copy deleted on the service cluster", WAIT, || async {
        Ok(get_opt(&local_api, &local_name)
            .await?
            .is_none()
            .then_some(()))
    })
    .await;
    eventually("kcp object gone", WAIT, || async {
        Ok(get_opt(&kcp_crontabs, "my-crontab")
            .await?
            .is_none()
            .then_some(()))
    })
    .await;
}

/// Objects with the same namespace/name in two workspaces are two objects:
/// each gets its own copy, and changing or deleting one leaves the other.
#[tokio::test(flavor = "multi_thread")]
async fn same_name_in_two_workspaces() {
    let env = Env::start("twows", crate::binary()).await;
    env.publish().await;
    let (ws_a, client_a) = env.consumer("consumer-a").await;
    let (ws_b, client_b) = env.consumer("consumer-b").await;
    assert_ne!(ws_a.cluster, ws_b.cluster);
    let api_a = crontabs(&client_a, "default");
    let api_b = crontabs(&client_b, "default");
    api_a
        .create(
            &PostParams::default(),
            &serde_json::from_value(crontab("shared", "from-a")).unwrap(),
        )
        .await
        .unwrap();
    api_b
        .create(
            &PostParams::default(),
            &serde_json::from_value(crontab("shared", "from-b")).unwrap(),
        )
        .await
        .unwrap();

    let local_name = default_copy_name("default", "shared");
    let local_a = service_crontabs(&env, &ws_a.cluster);
    let local_b = service_crontabs(&env, &ws_b.cluster);
    let copy_a = wait_for_copy(&local_a, &local_name, "copy of consumer-a's object").await;
    let copy_b = wait_for_copy(&local_b, &local_name, "copy of consumer-b's object").await;
    assert_eq!(str_at(&copy_a, "/spec/image"), Some("from-a"));
    assert_eq!(str_at(&copy_b, "/spec/image"), Some("from-b"));

    // Status goes back to the right workspace only.
    let mut s = copy_a.clone();
    s.data["status"] = json!({"phase": "A-only"});
    local_a
        .replace_status(&local_name, &PostParams::default(), &s)
        .await
        .unwrap();
    eventually("status in consumer-a", WAIT, || async {
        let o = get_opt(&api_a, "shared").await?;
        Ok(o.filter(|o| str_at(o, "/status/phase") == Some("A-only")))
    })
    .await;
    let b = api_b.get("shared").await.unwrap();
    assert_eq!(
        str_at(&b, "/status/phase"),
        None,
        "consumer-b's status untouched"
    );

    api_a
        .delete("shared", &DeleteParams::default())
        .await
        .unwrap();
    eventually("consumer-a's copy deleted", WAIT, || async {
        Ok(get_opt(&local_a, &local_name)
            .await?
            .is_none()
            .then_some(()))
    })
    .await;
    assert!(
        get_opt(&local_b, &local_name).await.unwrap().is_some(),
        "consumer-b's copy kept"
    );
}

/// Operations: metrics (upstream's gauge), health endpoints, and leader
/// election through a Lease in the agent's namespace.
#[tokio::test(flavor = "multi_thread")]
async fn metrics_health_and_leader_election() {
    let mut env = Env::start("ops", crate::binary()).await;
    let port = |_: ()| {
        std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
    };
    let (metrics, health) = (port(()), port(()));
    env.start_agent(&[
        &format!("--metrics-address=127.0.0.1:{metrics}"),
        &format!("--health-address=127.0.0.1:{health}"),
        "--enable-leader-election=true",
    ]);
    env.publish().await;

    let leases = dynamic_api(
        &env.service_client,
        &gvk("coordination.k8s.io", "v1", "Lease"),
        "leases",
        Some(AGENT_NAMESPACE),
    );
    let lease = eventually("the leader Lease", WAIT, || async {
        let l = get_opt(&leases, &format!("syncagent.{AGENT_NAME}")).await?;
        Ok(l.filter(|l| str_at(l, "/spec/holderIdentity").is_some_and(|h| !h.is_empty())))
    })
    .await;
    assert!(str_at(&lease, "/spec/holderIdentity").is_some());

    let (code, _) = eventually("/healthz", WAIT, || async {
        http_get(health, "/healthz").await.map(Some)
    })
    .await;
    assert_eq!(code, 200);
    // Ready once it leads and its first publishing pass went through. A
    // standby is ready too ("sync skipped"): the agent Env::start ran
    // before may hold the Lease until it expires.
    let readyz = eventually("/readyz 200 with sync ok", WAIT, || async {
        let (code, body) = http_get(health, "/readyz").await?;
        Ok((code == 200 && body.contains("[+]sync ok")).then_some(body))
    })
    .await;
    assert!(readyz.contains("[+]kcp ok"), "{readyz}");
    eventually("published resource gauge = 1", WAIT, || async {
        let (_, m) = http_get(metrics, "/metrics").await?;
        Ok(m.lines()
            .any(|l| l == "sync_agent_published_resource 1")
            .then_some(()))
    })
    .await;

    // Per-PublishedResource and per-plugin series once an object syncs (the
    // default naming is the built-in Wasm `naming` plugin).
    let (ws, client) = env.consumer("metrics-consumer").await;
    crontabs(&client, "default")
        .create(
            &PostParams::default(),
            &serde_json::from_value(crontab("measured", "img")).unwrap(),
        )
        .await
        .unwrap();
    wait_for_copy(
        &service_crontabs(&env, &ws.cluster),
        &default_copy_name("default", "measured"),
        "copy of the measured object",
    )
    .await;
    let pr = r#"published_resource="publish-crontabs""#;
    let text = eventually("per-resource and per-plugin metrics", WAIT, || async {
        let (_, m) = http_get(metrics, "/metrics").await?;
        let has = |prefix: &str| m.lines().any(|l| l.starts_with(prefix));
        Ok((has(&format!(
            "syncweave_reconciles_total{{{pr},result=\"success\"}}"
        )) && has(&format!(
            "syncweave_reconcile_duration_seconds_count{{{pr}}}"
        )) && has(&format!("syncweave_queue_depth{{{pr}}}"))
            && has(&format!("syncweave_objects_failing{{{pr}}} 0"))
            && has(r#"syncweave_plugin_calls_total{plugin="naming",result="ok"}"#)
            && has(r#"syncweave_plugin_call_duration_seconds_count{plugin="naming"}"#)
            && has("syncweave_component_loads{"))
        .then_some(m))
    })
    .await;
    assert!(!text.contains("result=\"error\""), "{text}");
}

/// `spec.filter.namespace` keeps tenants apart: only objects whose kcp
/// Namespace matches the selector are synced; an object in an excluded
/// namespace is never copied. The export gains the `namespaces` claim the
/// agent needs to read consumers' Namespaces.
#[tokio::test(flavor = "multi_thread")]
async fn namespace_filter_excludes_other_namespaces() {
    let env = Env::start("nsfilter", crate::binary()).await;
    env.publish_yaml(&format!(
        "{PUBLISHED_RESOURCE}  filter:\n    namespace:\n      matchLabels: {{tenant: allowed}}\n"
    ))
    .await;
    env.wait_for_export_claim("", "namespaces").await;

    let (consumer, client) = env
        .consumer_accepting("consumer", &[("", "events"), ("", "namespaces")])
        .await;
    for (ns, labels) in [
        ("excluded", json!({})),
        ("allowed", json!({"tenant": "allowed"})),
    ] {
        apply(
            &client,
            &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": labels}}),
        )
        .await
        .unwrap();
        create_crontab_in(&client, ns, &format!("in-{ns}")).await;
    }

    let copies = service_crontabs(&env, &consumer.cluster);
    let allowed = wait_for_copy(
        &copies,
        &default_copy_name("allowed", "in-allowed"),
        "the copy of the object in the allowed namespace",
    )
    .await;
    assert_eq!(
        allowed.metadata.annotations.unwrap()["syncagent.kcp.io/remote-object-namespace"],
        "allowed"
    );
    // The agent has looked at the excluded object (and skipped it).
    env.wait_for_passes(&format!("{}|excluded/in-excluded", consumer.cluster), 1)
        .await;
    let all = dynamic_api(
        &env.service_client,
        &gvk("example.com", "v1", "CronTab"),
        "crontabs",
        None,
    )
    .list(&Default::default())
    .await
    .unwrap();
    let names: Vec<_> = all
        .items
        .iter()
        .filter_map(|o| o.metadata.name.clone())
        .collect();
    assert_eq!(
        names.len(),
        1,
        "only the allowed object is copied: {names:?}"
    );
    // And it carries no finalizer of ours: the agent never accepted it.
    let excluded = get_opt(&crontabs(&client, "excluded"), "in-excluded")
        .await
        .unwrap()
        .unwrap();
    assert!(excluded.metadata.finalizers.unwrap_or_default().is_empty());
}

/// `enableWorkspacePaths`: naming templates get the consumer's workspace
/// path as `.ClusterPath`, the copy carries it as an annotation, and the
/// export claims LogicalClusters. Status set on the copy goes up, and a
/// status cleared on the copy is cleared in kcp.
#[tokio::test(flavor = "multi_thread")]
async fn workspace_paths_and_status_round_trip() {
    let env = Env::start("wspaths", crate::binary()).await;
    env.publish_yaml(&format!(
        "{PUBLISHED_RESOURCE}  enableWorkspacePaths: true\n  naming:\n    namespace: '{{{{ .ClusterPath | replace \":\" \"-\" }}}}'\n"
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
    kcp_crontabs
        .create(
            &PostParams::default(),
            &serde_json::from_value(crontab("pathy", "img")).unwrap(),
        )
        .await
        .unwrap();

    let namespace = consumer.path.replace(':', "-");
    let local = service_crontabs(&env, &namespace);
    let name = default_copy_name("default", "pathy");
    let copy = wait_for_copy(
        &local,
        &name,
        "the copy in the namespace named after the path",
    )
    .await;
    assert_eq!(
        copy.metadata.annotations.as_ref().unwrap()["syncagent.kcp.io/remote-object-workspace-path"],
        consumer.path
    );

    // Status up, then cleared on the service side: cleared in kcp.
    let mut with_status = copy.clone();
    with_status.data["status"] = json!({"phase": "Running"});
    local
        .replace_status(&name, &PostParams::default(), &with_status)
        .await
        .unwrap();
    eventually("status in kcp", WAIT, || async {
        let o = get_opt(&kcp_crontabs, "pathy").await?;
        Ok(o.filter(|o| str_at(o, "/status/phase") == Some("Running")))
    })
    .await;
    let mut cleared = local.get(&name).await.unwrap();
    cleared.data.as_object_mut().unwrap().remove("status");
    local
        .replace_status(&name, &PostParams::default(), &cleared)
        .await
        .unwrap();
    eventually("status cleared in kcp", WAIT, || async {
        let o = get_opt(&kcp_crontabs, "pathy").await?;
        Ok(o.filter(|o| {
            o.data
                .get("status")
                .is_none_or(|s| s.is_null() || s == &json!({}))
        }))
    })
    .await;
}

/// What a consumer and a provider see: Events on the kcp object with
/// upstream's reasons; a mutation whose output is malformed (labels that are
/// not a map) is a classified bad-output error, shown to the consumer as a
/// ReconcilingError Event and to the provider as Ready=False on the
/// PublishedResource; fixing the rule recovers both.
#[tokio::test(flavor = "multi_thread")]
async fn events_and_failing_objects_are_reported() {
    let env = Env::start("events", crate::binary()).await;
    let broken = format!(
        "{PUBLISHED_RESOURCE}  mutation:\n    spec:\n      - regex: {{path: metadata.labels, replacement: not-a-map}}\n"
    );
    env.publish_yaml(&broken).await;
    let (_consumer, client) = env.consumer("consumer").await;
    let kcp_crontabs = crontabs(&client, "default");
    kcp_crontabs
        .create(
            &PostParams::default(),
            &serde_json::from_value(crontab("evented", "img")).unwrap(),
        )
        .await
        .unwrap();

    let events = Api::<k8s_openapi::api::core::v1::Event>::namespaced(client.clone(), "default");
    let reasons = || async {
        let list = events
            .list(&Default::default())
            .await
            .map_err(|e| e.to_string())?;
        Ok::<_, String>(
            list.items
                .into_iter()
                .filter(|e| e.involved_object.name.as_deref() == Some("evented"))
                .map(|e| {
                    (
                        e.reason.unwrap_or_default(),
                        e.type_.unwrap_or_default(),
                        e.message.unwrap_or_default(),
                    )
                })
                .collect::<Vec<_>>(),
        )
    };
    let error = eventually(
        "a ReconcilingError event in the consumer workspace",
        WAIT,
        || async {
            let r = reasons().await?;
            Ok(r.into_iter()
                .find(|(reason, _, _)| reason == "ReconcilingError"))
        },
    )
    .await;
    assert_eq!(error.1, "Warning");
    assert!(error.2.contains("bad output"), "{error:?}");
    assert!(
        reasons()
            .await
            .unwrap()
            .iter()
            .any(|(r, t, _)| r == "ObjectAccepted" && t == "Normal")
    );

    let prs = env.published_resources();
    let failing = env
        .wait_for_ready("publish-crontabs", "False", "ObjectsFailing")
        .await;
    let message = failing["message"].as_str().unwrap();
    assert!(
        message.contains("evented") && message.contains("bad output"),
        "{message}"
    );

    // Fix the rule: the object is placed, and the resource is Ready again.
    let mut fixed = prs.get("publish-crontabs").await.unwrap();
    fixed.data["spec"]
        .as_object_mut()
        .unwrap()
        .remove("mutation");
    prs.replace("publish-crontabs", &PostParams::default(), &fixed)
        .await
        .unwrap();
    env.wait_for_ready("publish-crontabs", "True", "Syncing")
        .await;
    eventually("an ObjectPlaced event", WAIT, || async {
        let r = reasons().await?;
        Ok(r.into_iter()
            .find(|(reason, _, _)| reason == "ObjectPlaced"))
    })
    .await;
}

/// A CRD without a status subresource: `status` is an ordinary field, synced
/// down with the rest of the object, and the agent never calls `/status`
/// (which would answer 404 forever): the resource stays Ready.
#[tokio::test(flavor = "multi_thread")]
async fn status_without_subresource_is_an_ordinary_field() {
    let mut env = Env::prepare("nostatus", crate::binary()).await;
    env.start_agent(&["--resync-period=3s"]);
    apply_crds(
        &env.service_client,
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: notes.example.com}\nspec:\n  group: example.com\n  names: {kind: Note, listKind: NoteList, plural: notes, singular: note}\n  scope: Namespaced\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n          spec: {type: object, x-kubernetes-preserve-unknown-fields: true}\n          status: {type: object, x-kubernetes-preserve-unknown-fields: true}\n",
    )
    .await
    .expect("Note CRD");
    env.publish_yaml(
        "apiVersion: syncagent.kcp.io/v1alpha1\nkind: PublishedResource\nmetadata: {name: publish-notes}\nspec:\n  resource: {apiGroup: example.com, kind: Note, versions: [v1]}\n",
    )
    .await;
    env.wait_for_schema("publish-notes").await;
    let (consumer, client) = env
        .consumer_serving(
            "consumer",
            &[("", "events")],
            &gvk("example.com", "v1", "Note"),
            "notes",
        )
        .await;
    dynamic_api(
        &client,
        &gvk("example.com", "v1", "Note"),
        "notes",
        Some("default"),
    )
    .create(
        &PostParams::default(),
        &serde_json::from_value(json!({
            "apiVersion": "example.com/v1", "kind": "Note",
            "metadata": {"name": "memo", "namespace": "default"},
            "spec": {"text": "hello"},
            "status": {"written": "by the consumer"},
        }))
        .unwrap(),
    )
    .await
    .unwrap();
    let local = dynamic_api(
        &env.service_client,
        &gvk("example.com", "v1", "Note"),
        "notes",
        Some(&consumer.cluster),
    );
    let copy = wait_for_copy(
        &local,
        &default_copy_name("default", "memo"),
        "the Note on the service cluster",
    )
    .await;
    assert_eq!(copy.data["spec"]["text"], "hello");
    assert_eq!(
        copy.data["status"]["written"], "by the consumer",
        "status synced down as a field"
    );
    // Two passes after the copy is placed (its watch event, a periodic
    // check) and nothing has failed (no /status calls).
    let key = format!("{}|default/memo", consumer.cluster);
    env.wait_for_passes(&key, env.passes(&key) + 2).await;
    env.wait_for_ready("publish-notes", "True", "Syncing").await;
    let log = env.agent.as_ref().unwrap().log_tail(400);
    assert!(!log.contains("reconciling failed"), "{log}");
}
