//! Related resources (`spec.related`): objects that belong to a primary are
//! copied up from the service cluster and down from kcp, recorded on the
//! primary, and cleaned up with it.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use syncweave_tests::env::*;
use syncweave_tests::*;

const WAIT: Duration = Duration::from_secs(90);

/// The CronTab PublishedResource with three related resources:
/// - `creds`: a Secret the provider's operator writes next to the copy
///   (`<copy name>-creds`), copied up as `<kcp name>-creds`, cleaned up with
///   the primary, and watched (any Secret change re-checks the primaries);
/// - `extra`: a ConfigMap from the service side, copied up and kept when the
///   primary goes (no cleanup);
/// - `config`: a ConfigMap the consumer writes in kcp (`<kcp name>-config`),
///   copied down as `<copy name>-config`.
const RELATED_PR: &str = r#"
apiVersion: syncagent.kcp.io/v1alpha1
kind: PublishedResource
metadata:
  name: publish-crontabs
spec:
  resource:
    kind: CronTab
    apiGroup: example.com
    versions: [v1]
  related:
    - identifier: creds
      origin: service
      group: ""
      version: v1
      resource: secrets
      cleanup: true
      watch:
        bySelector: {}
      object:
        reference:
          path: metadata.name
          regex: {pattern: "^(.*)$", replacement: "$1-creds"}
    - identifier: extra
      origin: service
      kind: ConfigMap
      object:
        template:
          template: "{{ .Object.metadata.name }}-extra"
    - identifier: config
      origin: kcp
      kind: ConfigMap
      object:
        reference:
          path: metadata.name
          regex: {pattern: "$", replacement: "-config"}
"#;

fn secret_value(s: &Secret, key: &str) -> Option<String> {
    s.data
        .as_ref()?
        .get(key)
        .map(|b| String::from_utf8_lossy(&b.0).into_owned())
}

async fn wait_export_claims(env: &Env) {
    wait_export_claims_for(env, &["secrets", "configmaps", "namespaces", "events"]).await
}

/// Once the export claims Secrets, ConfigMaps, Namespaces and Events, a consumer
/// workspace that binds it accepting every claim.
async fn related_consumer(env: &Env) -> (Workspace, kube::Client) {
    wait_export_claims(env).await;
    env.consumer_accepting(
        "consumer",
        &[
            ("", "events"),
            ("", "secrets"),
            ("", "configmaps"),
            ("", "namespaces"),
        ],
    )
    .await
}

async fn wait_export_claims_for(env: &Env, wanted: &[&str]) {
    let exports = env.apiexports().await;
    eventually(&format!("APIExport claims {wanted:?}"), WAIT, || {
        let exports = exports.clone();
        async move {
            let e = exports.get(EXPORT).await.map_err(|e| e.to_string())?;
            let claims: Vec<String> = e
                .data
                .pointer("/spec/permissionClaims")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|c| c["resource"].as_str().map(str::to_string))
                .collect();
            let all = wanted.iter().all(|r| claims.iter().any(|c| c == r));
            Ok(all.then_some(()))
        }
    })
    .await;
}

/// (a) a service-side Secret appears in the consumer's workspace, follows
/// updates, and is recorded on the primary; (b) a ConfigMap created in kcp
/// appears on the service cluster; (c) deleting the primary deletes the
/// copies of `cleanup: true` and kcp-origin resources and keeps the others.
#[tokio::test(flavor = "multi_thread")]
async fn syncs_related_objects_both_ways_and_cleans_up() {
    let env = Env::start("related", crate::binary()).await;
    env.publish_yaml(RELATED_PR).await;
    let (consumer, client) = related_consumer(&env).await;
    let kcp_crontabs = crontabs(&client, "default");
    kcp_crontabs
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "apiVersion": "example.com/v1",
                "kind": "CronTab",
                "metadata": {"name": "db", "namespace": "default"},
                "spec": {"cronSpec": "* * * * */5", "image": "img", "replicas": 1},
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    let local_ns = consumer.cluster.clone();
    let local_name = default_copy_name("default", "db");
    let local_crontabs = crontabs(&env.service_client, &local_ns);
    eventually("the copy on the service cluster", WAIT, || async {
        get_opt(&local_crontabs, &local_name).await
    })
    .await;

    // (a) The provider's operator writes credentials next to the copy.
    let svc_secrets: Api<Secret> = Api::namespaced(env.service_client.clone(), &local_ns);
    let creds = Secret {
        metadata: kube::api::ObjectMeta {
            name: Some(format!("{local_name}-creds")),
            labels: Some(BTreeMap::from([("app".into(), "db".into())])),
            ..Default::default()
        },
        data: Some(BTreeMap::from([(
            "password".to_string(),
            ByteString(b"s3cret".to_vec()),
        )])),
        ..Default::default()
    };
    svc_secrets
        .create(&PostParams::default(), &creds)
        .await
        .unwrap();
    let svc_cms: Api<ConfigMap> = Api::namespaced(env.service_client.clone(), &local_ns);
    let extra = ConfigMap {
        metadata: kube::api::ObjectMeta {
            name: Some(format!("{local_name}-extra")),
            ..Default::default()
        },
        data: Some(BTreeMap::from([("k".to_string(), "v".to_string())])),
        ..Default::default()
    };
    svc_cms
        .create(&PostParams::default(), &extra)
        .await
        .unwrap();

    let kcp_secrets: Api<Secret> = Api::namespaced(client.clone(), "default");
    let copy = eventually("the Secret in the consumer workspace", WAIT, || async {
        kcp_secrets
            .get_opt("db-creds")
            .await
            .map_err(|e| e.to_string())
    })
    .await;
    assert_eq!(secret_value(&copy, "password").as_deref(), Some("s3cret"));
    assert_eq!(
        copy.metadata
            .labels
            .unwrap_or_default()
            .get("app")
            .map(String::as_str),
        Some("db"),
        "the copy keeps the original's labels"
    );
    let kcp_cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let extra_name = format!("{local_name}-extra");
    eventually(
        "the service ConfigMap in the consumer workspace",
        WAIT,
        || async {
            // The template names it after the primary on each side.
            kcp_cms.get_opt("db-extra").await.map_err(|e| e.to_string())
        },
    )
    .await;
    assert!(svc_cms.get_opt(&extra_name).await.unwrap().is_some());

    // The primary records the copy (name in kcp, the original's type).
    let primary = eventually("the related-resources annotation", WAIT, || async {
        let p = get_opt(&kcp_crontabs, "db").await?;
        Ok(p.filter(|p| {
            p.metadata
                .annotations
                .as_ref()
                .is_some_and(|a| a.contains_key("related-resources.syncagent.kcp.io/creds.0"))
        }))
    })
    .await;
    // Byte for byte as upstream writes it.
    assert_eq!(
        primary.metadata.annotations.unwrap()["related-resources.syncagent.kcp.io/creds.0"],
        r#"{"namespace":"default","name":"db-creds","apiVersion":"v1","kind":"Secret"}"#
    );

    // Updates follow.
    svc_secrets
        .patch(
            &format!("{local_name}-creds"),
            &PatchParams::default(),
            &Patch::Merge(&json!({"data": {"password": "bmV3"}})),
        )
        .await
        .unwrap();
    eventually(
        "the Secret update in the consumer workspace",
        WAIT,
        || async {
            let s = kcp_secrets
                .get_opt("db-creds")
                .await
                .map_err(|e| e.to_string())?;
            Ok::<_, String>(s.filter(|s| secret_value(s, "password").as_deref() == Some("new")))
        },
    )
    .await;

    // (b) The consumer writes configuration in kcp; it goes down.
    kcp_cms
        .create(
            &PostParams::default(),
            &ConfigMap {
                metadata: kube::api::ObjectMeta {
                    name: Some("db-config".into()),
                    ..Default::default()
                },
                data: Some(BTreeMap::from([("mode".to_string(), "fast".to_string())])),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let config_name = format!("{local_name}-config");
    let down = eventually("the kcp ConfigMap on the service cluster", WAIT, || async {
        svc_cms
            .get_opt(&config_name)
            .await
            .map_err(|e| e.to_string())
    })
    .await;
    assert_eq!(
        down.data
            .unwrap_or_default()
            .get("mode")
            .map(String::as_str),
        Some("fast")
    );
    // Copies carry no sync labels.
    assert!(
        down.metadata
            .labels
            .unwrap_or_default()
            .keys()
            .all(|k| !k.starts_with("syncagent.kcp.io/")),
    );

    // (c) Deleting the primary: the cleanup Secret copy and the kcp-origin
    // copy go; the ConfigMap without cleanup stays; originals stay.
    kcp_crontabs
        .delete("db", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the primary is gone from kcp", WAIT, || async {
        let p: Option<DynamicObject> = get_opt(&kcp_crontabs, "db").await?;
        Ok(p.is_none().then_some(()))
    })
    .await;
    assert!(
        kcp_secrets.get_opt("db-creds").await.unwrap().is_none(),
        "cleanup: true deletes the copy in kcp"
    );
    assert!(
        kcp_cms.get_opt("db-extra").await.unwrap().is_some(),
        "without cleanup the copy in kcp stays"
    );
    assert!(
        svc_cms.get_opt(&config_name).await.unwrap().is_none(),
        "copies of kcp-origin objects are always deleted"
    );
    assert!(
        svc_secrets
            .get_opt(&format!("{local_name}-creds"))
            .await
            .unwrap()
            .is_some(),
        "the service original stays"
    );
    let original = kcp_cms.get_opt("db-config").await.unwrap().unwrap();
    assert!(
        !original
            .metadata
            .finalizers
            .unwrap_or_default()
            .iter()
            .any(|f| f == "syncagent.kcp.io/cleanup"),
        "the kcp original's finalizer is released"
    );
}

/// (d) The API server refuses related resources that break upstream's
/// rules, naming the field.
#[tokio::test(flavor = "multi_thread")]
async fn crd_refuses_invalid_related_resources() {
    let env = Env::start("related-cel", crate::binary()).await;
    let cases = [
        (
            "kind: Secret\n      version: v1",
            "must specify either kind (deprecated) or group, version, resource",
        ),
        (
            "resource: secrets",
            "resource and version must be configured together or not at all",
        ),
        (
            "kind: Secret\n      identityHash: abc",
            "identity hashes can only be used with GVRs",
        ),
        (
            "kind: Secret\n      syncStatus: true",
            "watch must be configured when origin is service and syncStatus is true",
        ),
        (
            "kind: Secret\n      watch: {byOwner: {}, bySelector: {}}",
            "exactly one of byOwner or bySelector must be set",
        ),
    ];
    for (fields, message) in cases {
        let yaml = format!(
            r#"
apiVersion: syncagent.kcp.io/v1alpha1
kind: PublishedResource
metadata:
  name: invalid-related
spec:
  resource: {{kind: CronTab, apiGroup: example.com, versions: [v1]}}
  related:
    - identifier: x
      origin: service
      {fields}
      object:
        reference: {{path: spec.image}}
"#
        );
        let err = apply_yaml(&env.service_client, &yaml)
            .await
            .expect_err(&format!("the API server refuses {fields:?}"));
        let err = format!("{err:#}");
        assert!(err.contains("spec.related[0]"), "{err}");
        assert!(err.contains(message), "{err}");
    }
}

/// kcp-origin objects found by a templated label selector, renamed by a
/// rewrite template, mutated on the way (the mutation plugin chain), and
/// watched by owner: a change reaches the service cluster well before the
/// periodic resync (30 s).
#[tokio::test(flavor = "multi_thread")]
async fn selector_finds_kcp_objects_and_owner_watch_requeues() {
    let env = Env::start("related-selector", crate::binary()).await;
    env.publish_yaml(
        r#"
apiVersion: syncagent.kcp.io/v1alpha1
kind: PublishedResource
metadata:
  name: publish-crontabs
spec:
  resource: {kind: CronTab, apiGroup: example.com, versions: [v1]}
  related:
    - identifier: settings
      origin: kcp
      group: ""
      version: v1
      resource: configmaps
      watch:
        byOwner: {}
      mutation:
        spec:
          - regex: {path: data.v, pattern: "^(.*)$", replacement: "v=$1"}
      object:
        selector:
          matchLabels:
            settings-for: "{{ .RemoteObject.metadata.name }}"
          rewrite:
            template:
              template: "{{ .Value }}-{{ .RelatedObject.metadata.labels.tier }}"
"#,
    )
    .await;
    wait_export_claims_for(&env, &["configmaps", "namespaces", "events"]).await;
    let (consumer, client) = env
        .consumer_accepting(
            "consumer",
            &[("", "events"), ("", "configmaps"), ("", "namespaces")],
        )
        .await;
    let kcp_crontabs = crontabs(&client, "default");
    let primary = kcp_crontabs
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "apiVersion": "example.com/v1",
                "kind": "CronTab",
                "metadata": {"name": "app", "namespace": "default"},
                "spec": {"cronSpec": "* * * * */5", "image": "img", "replicas": 1},
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    let kcp_cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let cm = |name: &str, value: &str| -> ConfigMap {
        serde_json::from_value(json!({
            "metadata": {
                "name": name,
                "labels": {"settings-for": "app", "tier": "gold"},
                "ownerReferences": [{
                    "apiVersion": "example.com/v1", "kind": "CronTab", "name": "app",
                    "uid": primary.metadata.uid.clone().unwrap(),
                }],
            },
            "data": {"v": value},
        }))
        .unwrap()
    };
    kcp_cms
        .create(&PostParams::default(), &cm("tuning", "1"))
        .await
        .unwrap();
    // Not selected: another primary's.
    let mut other = cm("unrelated", "x");
    other
        .metadata
        .labels
        .as_mut()
        .unwrap()
        .insert("settings-for".into(), "someone-else".into());
    kcp_cms
        .create(&PostParams::default(), &other)
        .await
        .unwrap();

    let svc_cms: Api<ConfigMap> = Api::namespaced(env.service_client.clone(), &consumer.cluster);
    let copy = eventually(
        "the selected ConfigMap on the service cluster",
        WAIT,
        || async {
            svc_cms
                .get_opt("tuning-gold")
                .await
                .map_err(|e| e.to_string())
        },
    )
    .await;
    assert_eq!(
        copy.data.unwrap_or_default().get("v").map(String::as_str),
        Some("v=1")
    );
    assert!(
        svc_cms.get_opt("unrelated-gold").await.unwrap().is_none(),
        "only selected objects are copied"
    );

    kcp_cms
        .patch(
            "tuning",
            &PatchParams::default(),
            &Patch::Merge(&json!({"data": {"v": "2"}})),
        )
        .await
        .unwrap();
    eventually(
        "the change, through the owner watch",
        Duration::from_secs(20),
        || async {
            let c = svc_cms
                .get_opt("tuning-gold")
                .await
                .map_err(|e| e.to_string())?;
            Ok::<_, String>(c.filter(|c| {
                c.data.as_ref().and_then(|d| d.get("v")).map(String::as_str) == Some("v=2")
            }))
        },
    )
    .await;
}

/// A string at a JSON pointer, or "" (for assertions on optional fields).
fn at<'a>(v: &'a DynamicObject, pointer: &str) -> &'a str {
    str_at(v, pointer).unwrap_or_default()
}

/// `syncStatus` (upstream's TestSyncRelatedObjectStatusFromService,
/// …FromKcp and …NotSyncedByDefault, plus the missing-subresource case):
/// the status of a related original is forwarded to its copy through
/// `/status`, in the direction of the copy and never back; without
/// `syncStatus` the copy gets no status; and a copy type without a status
/// subresource gets a Warning Event `StatusSubresourceMissing` on the kcp
/// side instead of its status.
#[tokio::test(flavor = "multi_thread")]
async fn related_status_is_forwarded_one_way() {
    let env = Env::start("related-status", crate::binary()).await;
    // Subnets have a status subresource, Notes do not. Both are published
    // without sync, so that their schemas are in the export (upstream's
    // recipe for types used only as related resources).
    apply_crds(
        &env.service_client,
        &free_form_crd("aws.example.com", "Subnet", "subnets", true),
    )
    .await
    .expect("Subnet CRD");
    apply_crds(
        &env.service_client,
        &free_form_crd("example.com", "Note", "notes", false),
    )
    .await
    .expect("Note CRD");
    grant_agent_access(&env, "aws.example.com", &["subnets", "subnets/status"]).await;
    env.publish_yaml(
        r#"
apiVersion: syncagent.kcp.io/v1alpha1
kind: PublishedResource
metadata: {name: publish-subnets}
spec:
  resource: {apiGroup: aws.example.com, kind: Subnet, versions: [v1]}
  synchronization: {enabled: false}
---
apiVersion: syncagent.kcp.io/v1alpha1
kind: PublishedResource
metadata: {name: publish-notes}
spec:
  resource: {apiGroup: example.com, kind: Note, versions: [v1]}
  synchronization: {enabled: false}
---
apiVersion: syncagent.kcp.io/v1alpha1
kind: PublishedResource
metadata: {name: publish-crontabs}
spec:
  resource: {kind: CronTab, apiGroup: example.com, versions: [v1]}
  related:
    # The provider's operator reports on the subnet it made for the CronTab.
    - identifier: subnet-up
      origin: service
      group: aws.example.com
      version: v1
      resource: subnets
      syncStatus: true
      watch: {bySelector: {}}
      object:
        template: {template: "{{ .Object.metadata.name }}-net"}
    # The consumer brings a subnet, and a controller in kcp reports on it.
    - identifier: subnet-down
      origin: kcp
      group: aws.example.com
      version: v1
      resource: subnets
      syncStatus: true
      object:
        template: {template: "{{ .Object.metadata.name }}-uplink"}
    # The same without syncStatus: the copy gets no status.
    - identifier: subnet-plain
      origin: kcp
      group: aws.example.com
      version: v1
      resource: subnets
      object:
        template: {template: "{{ .Object.metadata.name }}-plain"}
    # Notes have no status subresource anywhere.
    - identifier: note-up
      origin: service
      group: example.com
      version: v1
      resource: notes
      syncStatus: true
      watch: {bySelector: {}}
      object:
        template: {template: "{{ .Object.metadata.name }}-note"}
"#,
    )
    .await;
    for pr in ["publish-subnets", "publish-notes", "publish-crontabs"] {
        env.wait_for_schema(pr).await;
    }
    // Types the export owns need no claims of their own.
    wait_export_claims_for(&env, &["namespaces", "events"]).await;
    let (consumer, client) = env
        .consumer_accepting("consumer", &[("", "events"), ("", "namespaces")])
        .await;
    let kcp_subnets = dynamic_api(
        &client,
        &gvk("aws.example.com", "v1", "Subnet"),
        "subnets",
        Some("default"),
    );
    let kcp_notes = dynamic_api(
        &client,
        &gvk("example.com", "v1", "Note"),
        "notes",
        Some("default"),
    );
    eventually("Subnets served in the consumer workspace", WAIT, || async {
        kcp_subnets
            .list(&Default::default())
            .await
            .map(|_| Some(()))
            .map_err(|e| e.to_string())
    })
    .await;

    // The consumer's subnets, with status set by a controller in kcp.
    let subnet = |name: &str| -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "aws.example.com/v1", "kind": "Subnet",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"cidr": "10.0.0.0/24"},
        }))
        .unwrap()
    };
    for (name, id) in [("db-uplink", "subnet-kcp-1"), ("db-plain", "subnet-kcp-2")] {
        kcp_subnets
            .create(&PostParams::default(), &subnet(name))
            .await
            .unwrap();
        kcp_subnets
            .patch_status(
                name,
                &PatchParams::default(),
                &Patch::Merge(&json!({"status": {"id": id}})),
            )
            .await
            .unwrap();
    }
    kcp_crontabs_create(&client, "db").await;
    let local_ns = consumer.cluster.clone();
    let local_name = default_copy_name("default", "db");
    let local_crontabs = crontabs(&env.service_client, &local_ns);
    eventually("the copy on the service cluster", WAIT, || async {
        get_opt(&local_crontabs, &local_name).await
    })
    .await;
    let svc_subnets = dynamic_api(
        &env.service_client,
        &gvk("aws.example.com", "v1", "Subnet"),
        "subnets",
        Some(&local_ns),
    );
    let svc_notes = dynamic_api(
        &env.service_client,
        &gvk("example.com", "v1", "Note"),
        "notes",
        Some(&local_ns),
    );

    // origin kcp + syncStatus: spec and status go down.
    let uplink = format!("{local_name}-uplink");
    let down = eventually("the kcp subnet's status on its copy", WAIT, || async {
        let s = get_opt(&svc_subnets, &uplink).await?;
        Ok(s.filter(|s| at(s, "/status/id") == "subnet-kcp-1"))
    })
    .await;
    assert_eq!(at(&down, "/spec/cidr"), "10.0.0.0/24");
    // Never back up: a status written on the service copy stays there.
    svc_subnets
        .patch_status(
            &uplink,
            &PatchParams::default(),
            &Patch::Merge(&json!({"status": {"id": "local-override"}})),
        )
        .await
        .unwrap();

    // origin service + syncStatus: the operator's subnet and its status go
    // up, and status changes follow through the watch.
    svc_subnets
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "apiVersion": "aws.example.com/v1", "kind": "Subnet",
                "metadata": {"name": format!("{local_name}-net")},
                "spec": {"cidr": "10.1.0.0/24"},
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    svc_subnets
        .patch_status(
            &format!("{local_name}-net"),
            &PatchParams::default(),
            &Patch::Merge(&json!({"status": {"id": "subnet-svc-1", "state": "pending"}})),
        )
        .await
        .unwrap();
    let up = eventually("the service subnet's status in kcp", WAIT, || async {
        let s = get_opt(&kcp_subnets, "db-net").await?;
        Ok(s.filter(|s| at(s, "/status/id") == "subnet-svc-1"))
    })
    .await;
    assert_eq!(at(&up, "/spec/cidr"), "10.1.0.0/24");
    svc_subnets
        .patch_status(
            &format!("{local_name}-net"),
            &PatchParams::default(),
            &Patch::Merge(&json!({"status": {"state": "available"}})),
        )
        .await
        .unwrap();
    eventually("the status update in kcp", WAIT, || async {
        let s = get_opt(&kcp_subnets, "db-net").await?;
        Ok(s.filter(|s| at(s, "/status/state") == "available"))
    })
    .await;

    // A Note carries status as ordinary content (no subresource); the copy
    // leaves it out, and the consumer is told why.
    svc_notes
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "apiVersion": "example.com/v1", "kind": "Note",
                "metadata": {"name": format!("{local_name}-note")},
                "spec": {"text": "hello"},
                "status": {"read": true},
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    let events: Api<k8s_openapi::api::core::v1::Event> = Api::namespaced(client.clone(), "default");
    let warning = eventually(
        "a StatusSubresourceMissing Event on the kcp Note",
        WAIT,
        || async {
            let list = events
                .list(&Default::default())
                .await
                .map_err(|e| e.to_string())?;
            Ok(list.items.into_iter().find(|e| {
                e.reason.as_deref() == Some("StatusSubresourceMissing")
                    && e.involved_object.name.as_deref() == Some("db-note")
            }))
        },
    )
    .await;
    assert_eq!(warning.type_.as_deref(), Some("Warning"));
    assert_eq!(
        warning.involved_object.kind.as_deref(),
        Some("Note"),
        "{warning:?}"
    );
    let note = get_opt(&kcp_notes, "db-note").await.unwrap().unwrap();
    assert_eq!(at(&note, "/spec/text"), "hello");
    assert!(
        note.data.get("status").is_none(),
        "no status without a subresource: {:?}",
        note.data
    );

    // Without syncStatus the copy has no status.
    let plain = eventually("the plain subnet's copy", WAIT, || async {
        get_opt(&svc_subnets, &format!("{local_name}-plain")).await
    })
    .await;
    assert!(
        plain.data.get("status").is_none(),
        "status is not synced by default: {:?}",
        plain.data
    );
    // …and the kcp original kept its own status throughout.
    let original = get_opt(&kcp_subnets, "db-uplink").await.unwrap().unwrap();
    assert_eq!(at(&original, "/status/id"), "subnet-kcp-1");
    // `synchronization.enabled: false`: the consumer's Subnets are served,
    // but not synced as objects of their own (no copy carries sync labels).
    let synced: Vec<String> = dynamic_api(
        &env.service_client,
        &gvk("aws.example.com", "v1", "Subnet"),
        "subnets",
        None,
    )
    .list(&Default::default())
    .await
    .unwrap()
    .items
    .into_iter()
    .filter(|s| {
        s.metadata
            .labels
            .as_ref()
            .is_some_and(|l| l.contains_key("syncagent.kcp.io/agent-name"))
    })
    .filter_map(|s| s.metadata.name)
    .collect();
    assert!(synced.is_empty(), "Subnets are not synced: {synced:?}");
}

/// Create CronTab `name` in namespace `default` of a consumer workspace.
async fn kcp_crontabs_create(client: &kube::Client, name: &str) -> DynamicObject {
    crontabs(client, "default")
        .create(
            &PostParams::default(),
            &serde_json::from_value(crontab(name, "img")).unwrap(),
        )
        .await
        .unwrap()
}

/// `object.namespace` (upstream's "up from a foreign namespace" and "into
/// a new namespace" cases, and the reference and selector forms): related
/// objects come from, and go to, namespaces other than the primary's, and
/// the agent creates missing destination namespaces. Copies of kcp
/// originals in other namespaces are deleted with the primary.
#[tokio::test(flavor = "multi_thread")]
async fn related_objects_in_other_namespaces() {
    let env = Env::start("related-namespaces", crate::binary()).await;
    env.publish_yaml(
        r#"
apiVersion: syncagent.kcp.io/v1alpha1
kind: PublishedResource
metadata:
  name: publish-crontabs
spec:
  resource: {kind: CronTab, apiGroup: example.com, versions: [v1]}
  related:
    # From a fixed namespace of the provider into the primary's namespace.
    - identifier: shared
      origin: service
      kind: Secret
      object:
        template: {template: shared-creds}
        namespace:
          template:
            template: '{{ if eq .Side "kcp" }}{{ .Object.metadata.namespace }}{{ else }}provider-shared{{ end }}'
    # From the primary's namespace into a new namespace in kcp.
    - identifier: info
      origin: service
      kind: ConfigMap
      object:
        template: {template: "{{ .Object.metadata.name }}-info"}
        namespace:
          template:
            template: '{{ if eq .Side "kcp" }}{{ .Object.metadata.name }}-extras{{ else }}{{ .Object.metadata.namespace }}{{ end }}'
    # Namespaces named after each primary (reference), down.
    - identifier: token
      origin: kcp
      kind: Secret
      object:
        template: {template: token}
        namespace:
          reference:
            path: metadata.name
            regex: {pattern: "^(.*)$", replacement: "$1-secrets"}
    # Namespaces found by label (selector), down, renamed by a rewrite.
    - identifier: settings
      origin: kcp
      kind: ConfigMap
      object:
        selector:
          matchLabels: {ship: "yes"}
          rewrite: {template: {template: "{{ .Value }}"}}
        namespace:
          selector:
            matchLabels: {settings-for: "{{ .RemoteObject.metadata.name }}"}
            rewrite: {template: {template: "{{ .ClusterName }}-{{ .Value }}"}}
"#,
    )
    .await;
    let (consumer, client) = related_consumer(&env).await;
    let local_name = default_copy_name("default", "db");
    let cluster = consumer.cluster.clone();

    // The provider's shared Secret lives outside the copy's namespace.
    apply_yaml(
        &env.service_client,
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: provider-shared}\n---\n\
         apiVersion: v1\nkind: Secret\nmetadata: {name: shared-creds, namespace: provider-shared}\n\
         stringData: {password: hunter2}\n",
    )
    .await
    .unwrap();
    // The consumer's namespaces and objects in kcp.
    apply_yaml(
        &client,
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: db-secrets}\n---\n\
         apiVersion: v1\nkind: Secret\nmetadata: {name: token, namespace: db-secrets}\n\
         stringData: {token: t0k3n}\n---\n\
         apiVersion: v1\nkind: Namespace\nmetadata: {name: team-settings, labels: {settings-for: db}}\n---\n\
         apiVersion: v1\nkind: ConfigMap\nmetadata: {name: tuning, namespace: team-settings, labels: {ship: 'yes'}}\n\
         data: {mode: fast}\n---\n\
         apiVersion: v1\nkind: ConfigMap\nmetadata: {name: stray, namespace: default, labels: {ship: 'yes'}}\n\
         data: {mode: slow}\n",
    )
    .await
    .unwrap();
    kcp_crontabs_create(&client, "db").await;
    let local_crontabs = crontabs(&env.service_client, &cluster);
    eventually("the copy on the service cluster", WAIT, || async {
        get_opt(&local_crontabs, &local_name).await
    })
    .await;
    // The operator's ConfigMap next to the copy.
    let svc_cms: Api<ConfigMap> = Api::namespaced(env.service_client.clone(), &cluster);
    svc_cms
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": {"name": format!("{local_name}-info")},
                "data": {"endpoint": "db.example.com"},
            }))
            .unwrap(),
        )
        .await
        .unwrap();

    // Up, from the foreign namespace into the primary's.
    let kcp_secrets: Api<Secret> = Api::namespaced(client.clone(), "default");
    let shared = eventually("the shared Secret in kcp", WAIT, || async {
        kcp_secrets
            .get_opt("shared-creds")
            .await
            .map_err(|e| e.to_string())
    })
    .await;
    assert_eq!(
        secret_value(&shared, "password").as_deref(),
        Some("hunter2")
    );

    // Up, into a namespace the agent creates in kcp.
    let kcp_info: Api<ConfigMap> = Api::namespaced(client.clone(), "db-extras");
    let info = eventually(
        "the info ConfigMap in the new kcp namespace",
        WAIT,
        || async { kcp_info.get_opt("db-info").await.map_err(|e| e.to_string()) },
    )
    .await;
    assert_eq!(
        info.data
            .unwrap_or_default()
            .get("endpoint")
            .map(String::as_str),
        Some("db.example.com")
    );
    // The copy is created first and the primary annotated right after, in
    // the same pass: the annotation may trail the copy by a request.
    let want = r#"{"namespace":"db-extras","name":"db-info","apiVersion":"v1","kind":"ConfigMap"}"#;
    eventually(
        "the annotation naming the copy's namespace in kcp",
        WAIT,
        || async {
            let primary = get_opt(&crontabs(&client, "default"), "db").await?;
            let annotations = primary
                .and_then(|p| p.metadata.annotations)
                .unwrap_or_default();
            match annotations.get("related-resources.syncagent.kcp.io/info.0") {
                Some(v) if v == want => Ok(Some(())),
                Some(v) => Err(format!("annotation is {v}, want {want}")),
                None => Err(format!("no info.0 annotation yet: {annotations:?}")),
            }
        },
    )
    .await;

    // Down, into namespaces named by reference on each side.
    let svc_token: Api<Secret> =
        Api::namespaced(env.service_client.clone(), &format!("{local_name}-secrets"));
    let token = eventually("the token in the referenced namespace", WAIT, || async {
        svc_token.get_opt("token").await.map_err(|e| e.to_string())
    })
    .await;
    assert_eq!(secret_value(&token, "token").as_deref(), Some("t0k3n"));

    // Down, from the selected namespace only.
    let settings_ns = format!("{cluster}-team-settings");
    let svc_settings: Api<ConfigMap> = Api::namespaced(env.service_client.clone(), &settings_ns);
    let tuning = eventually(
        "the selected ConfigMap on the service cluster",
        WAIT,
        || async {
            svc_settings
                .get_opt("tuning")
                .await
                .map_err(|e| e.to_string())
        },
    )
    .await;
    assert_eq!(
        tuning
            .data
            .unwrap_or_default()
            .get("mode")
            .map(String::as_str),
        Some("fast")
    );
    let all_cms: Api<ConfigMap> = Api::all(env.service_client.clone());
    let strays: Vec<String> = all_cms
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|c| c.metadata.name.as_deref() == Some("stray"))
        .map(|c| c.metadata.namespace.unwrap_or_default())
        .collect();
    assert!(
        strays.is_empty(),
        "a ConfigMap outside the selected namespaces is not copied: {strays:?}"
    );

    // Deleting the primary deletes the copies of kcp originals, wherever
    // they are, and releases the originals.
    crontabs(&client, "default")
        .delete("db", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the primary is gone from kcp", WAIT, || async {
        let p = get_opt(&crontabs(&client, "default"), "db").await?;
        Ok(p.is_none().then_some(()))
    })
    .await;
    assert!(svc_token.get_opt("token").await.unwrap().is_none());
    assert!(svc_settings.get_opt("tuning").await.unwrap().is_none());
    let kcp_tuning: Api<ConfigMap> = Api::namespaced(client.clone(), "team-settings");
    let original = kcp_tuning.get_opt("tuning").await.unwrap().unwrap();
    assert!(
        !original
            .metadata
            .finalizers
            .unwrap_or_default()
            .iter()
            .any(|f| f == "syncagent.kcp.io/cleanup"),
        "the kcp original's finalizer is released"
    );
}

/// `identityHash` (upstream's TestSyncNonStandardRelatedResourcesMultipleAPIExports):
/// a related type that another provider's APIExport serves. The agent
/// claims it with that export's identity hash, and copies objects both
/// ways through the virtual workspace (which serves the claimed type under
/// its plain resource name), watching the kcp originals there too.
#[tokio::test(flavor = "multi_thread")]
async fn related_type_of_a_foreign_export_is_claimed_by_identity() {
    let env = Env::start("related-identity", crate::binary()).await;
    // Another provider exports Widgets.
    let foreign = env
        .kcp
        .create_workspace_in(&env.org.path, "foreign", None)
        .await
        .expect("the foreign provider's workspace");
    let foreign_client = env.kcp.client(&foreign.path).await.unwrap();
    apply_yaml(
        &foreign_client,
        r#"
apiVersion: apis.kcp.io/v1alpha1
kind: APIResourceSchema
metadata: {name: v1.widgets.foreign.example.com}
spec:
  group: foreign.example.com
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      type: object
      properties:
        spec: {type: object, x-kubernetes-preserve-unknown-fields: true}
---
apiVersion: apis.kcp.io/v1alpha1
kind: APIExport
metadata: {name: foreign.example.com}
spec:
  latestResourceSchemas: [v1.widgets.foreign.example.com]
"#,
    )
    .await
    .expect("the foreign APIExport");
    let identity = export_identity(&apiexports_of(&foreign_client), "foreign.example.com").await;

    // On the service cluster, the provider's own Notes stand for Widgets.
    apply_crds(
        &env.service_client,
        &free_form_crd("example.com", "Note", "notes", false),
    )
    .await
    .expect("Note CRD");
    env.publish_yaml(&format!(
        r#"
apiVersion: syncagent.kcp.io/v1alpha1
kind: PublishedResource
metadata: {{name: publish-crontabs}}
spec:
  resource: {{kind: CronTab, apiGroup: example.com, versions: [v1]}}
  related:
    - identifier: widget-up
      origin: service
      group: example.com
      version: v1
      resource: notes
      identityHash: {identity}
      projection: {{group: foreign.example.com, resource: widgets}}
      object:
        template: {{template: "{{{{ .Object.metadata.name }}}}-widget"}}
    - identifier: widget-down
      origin: kcp
      group: foreign.example.com
      version: v1
      resource: widgets
      identityHash: {identity}
      projection: {{group: example.com, resource: notes}}
      watch: {{bySelector: {{}}}}
      object:
        template: {{template: "{{{{ .Object.metadata.name }}}}-settings"}}
"#
    ))
    .await;

    // The agent claims Widgets, with the foreign identity.
    let exports = env.apiexports().await;
    let claim = eventually("the Widget claim on the agent's export", WAIT, || async {
        let e = get_opt(&exports, EXPORT).await?;
        Ok(e.and_then(|e| {
            e.data["spec"]["permissionClaims"]
                .as_array()?
                .iter()
                .find(|c| c["resource"] == "widgets")
                .cloned()
        }))
    })
    .await;
    assert_eq!(
        claim,
        json!({"group": "foreign.example.com", "resource": "widgets", "identityHash": identity, "all": true}),
    );
    wait_export_claims_for(&env, &["namespaces", "events"]).await;

    // The consumer binds the foreign export, then the agent's, accepting
    // the Widget claim by identity.
    let ws = env
        .kcp
        .create_workspace_in(&env.org.path, "consumer", None)
        .await
        .expect("consumer workspace");
    let client = env.kcp.client(&ws.path).await.unwrap();
    bind(
        &client,
        "foreign.example.com",
        &foreign.path,
        "foreign.example.com",
        &[],
        ("foreign.example.com", "v1", "widgets"),
    )
    .await;
    bind(
        &client,
        EXPORT,
        &env.provider.path,
        EXPORT,
        &[
            ("", "events", ""),
            ("", "namespaces", ""),
            ("foreign.example.com", "widgets", &identity),
        ],
        ("example.com", "v1", "crontabs"),
    )
    .await;
    let kcp_widgets = dynamic_api(
        &client,
        &gvk("foreign.example.com", "v1", "Widget"),
        "widgets",
        Some("default"),
    );
    kcp_widgets
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "apiVersion": "foreign.example.com/v1", "kind": "Widget",
                "metadata": {"name": "db-settings", "namespace": "default"},
                "spec": {"size": "large"},
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    kcp_crontabs_create(&client, "db").await;
    let local_name = default_copy_name("default", "db");
    let local_crontabs = crontabs(&env.service_client, &ws.cluster);
    eventually("the copy on the service cluster", WAIT, || async {
        get_opt(&local_crontabs, &local_name).await
    })
    .await;
    let svc_notes = dynamic_api(
        &env.service_client,
        &gvk("example.com", "v1", "Note"),
        "notes",
        Some(&ws.cluster),
    );

    // Down: the consumer's Widget becomes a Note.
    let down = eventually(
        "the kcp Widget as a Note on the service cluster",
        WAIT,
        || async { get_opt(&svc_notes, &format!("{local_name}-settings")).await },
    )
    .await;
    assert_eq!(at(&down, "/spec/size"), "large");
    // The watch on Widgets (through the virtual workspace) picks up a
    // change well before the periodic resync (30 s).
    kcp_widgets
        .patch(
            "db-settings",
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": {"size": "small"}})),
        )
        .await
        .unwrap();
    eventually(
        "the Widget change, through the watch",
        Duration::from_secs(20),
        || async {
            let n = get_opt(&svc_notes, &format!("{local_name}-settings")).await?;
            Ok(n.filter(|n| at(n, "/spec/size") == "small"))
        },
    )
    .await;

    // Up: the operator's Note becomes a Widget in the consumer workspace.
    svc_notes
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "apiVersion": "example.com/v1", "kind": "Note",
                "metadata": {"name": format!("{local_name}-widget")},
                "spec": {"color": "blue"},
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    let up = eventually("the service Note as a Widget in kcp", WAIT, || async {
        get_opt(&kcp_widgets, "db-widget").await
    })
    .await;
    assert_eq!(at(&up, "/spec/color"), "blue");
    let primary = eventually("the related-resources annotation", WAIT, || async {
        let p = get_opt(&crontabs(&client, "default"), "db").await?;
        Ok(p.and_then(|p| {
            p.metadata
                .annotations?
                .get("related-resources.syncagent.kcp.io/widget-up.0")
                .cloned()
        }))
    })
    .await;
    assert_eq!(
        primary,
        r#"{"namespace":"default","name":"db-widget","apiVersion":"example.com/v1","kind":"Note"}"#
    );
}

fn reconciles(body: &str) -> u64 {
    body.lines()
        .filter(|l| l.starts_with("syncweave_reconciles_total{"))
        .filter_map(|l| l.rsplit_once(' ')?.1.parse::<u64>().ok())
        .sum()
}

/// Item 1 of the controller core: once a primary and its related objects
/// (service → kcp and kcp → service) are in sync, the agent keeps checking
/// them from its caches (a periodic check every 30 s) without sending a
/// single request other than its open watches; the agent's own request
/// counter shows it.
#[tokio::test(flavor = "multi_thread")]
async fn related_objects_in_sync_are_checked_from_caches() {
    let mut env = Env::prepare("related-cached", crate::binary()).await;
    let metrics = free_port();
    env.start_agent(&[&format!("--metrics-address=127.0.0.1:{metrics}")]);
    env.publish_yaml(RELATED_PR).await;
    let (consumer, client) = related_consumer(&env).await;
    let local_ns = consumer.cluster.clone();
    let local_name = default_copy_name("default", "db");
    let kcp_cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let data = |k: &str, v: &str| Some(BTreeMap::from([(k.to_string(), v.to_string())]));
    let cm = |name: &str| ConfigMap {
        metadata: kube::api::ObjectMeta {
            name: Some(name.to_string()),
            ..Default::default()
        },
        data: data("k", "v"),
        ..Default::default()
    };
    kcp_cms
        .create(&PostParams::default(), &cm("db-config"))
        .await
        .unwrap();
    kcp_crontabs_create(&client, "db").await;
    let local_crontabs = crontabs(&env.service_client, &local_ns);
    eventually("the copy on the service cluster", WAIT, || async {
        get_opt(&local_crontabs, &local_name).await
    })
    .await;
    let svc_secrets: Api<Secret> = Api::namespaced(env.service_client.clone(), &local_ns);
    svc_secrets
        .create(
            &PostParams::default(),
            &Secret {
                metadata: kube::api::ObjectMeta {
                    name: Some(format!("{local_name}-creds")),
                    ..Default::default()
                },
                data: Some(BTreeMap::from([(
                    "password".to_string(),
                    ByteString(b"s3cret".to_vec()),
                )])),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let svc_cms: Api<ConfigMap> = Api::namespaced(env.service_client.clone(), &local_ns);
    svc_cms
        .create(&PostParams::default(), &cm(&format!("{local_name}-extra")))
        .await
        .unwrap();
    let kcp_secrets: Api<Secret> = Api::namespaced(client.clone(), "default");
    eventually("every related copy", WAIT, || async {
        let up = kcp_secrets
            .get_opt("db-creds")
            .await
            .map_err(|e| e.to_string())?;
        let extra = kcp_cms
            .get_opt("db-extra")
            .await
            .map_err(|e| e.to_string())?;
        let down = svc_cms
            .get_opt(&format!("{local_name}-config"))
            .await
            .map_err(|e| e.to_string())?;
        Ok::<_, String>((up.is_some() && extra.is_some() && down.is_some()).then_some(()))
    })
    .await;

    // Settled: no request for 10 s in a row (the last writes, Events).
    let mut last = requests_sent(metrics).await;
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        tokio::time::sleep(Duration::from_secs(10)).await;
        let now = requests_sent(metrics).await;
        if now == last {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the agent kept sending requests: {now:?}"
        );
        last = now;
    }
    let (_, body) = http_get(metrics, "/metrics").await.unwrap();
    let checks_before = reconciles(&body);

    // Longer than the 30 s periodic check: every object is checked again.
    tokio::time::sleep(Duration::from_secs(40)).await;
    let (_, body) = http_get(metrics, "/metrics").await.unwrap();
    assert!(
        reconciles(&body) > checks_before,
        "the periodic check ran during the window"
    );
    let after = requests_sent(metrics).await;
    let sent: Vec<String> = after
        .iter()
        .filter_map(|(k, n)| {
            let d = n - last.get(k).copied().unwrap_or(0);
            (d > 0).then(|| format!("{k}: {d}"))
        })
        .collect();
    assert!(
        sent.is_empty(),
        "in steady state the agent sent requests: {sent:?}\n{}",
        env.agent
            .as_ref()
            .map(|a| a.log_tail(60))
            .unwrap_or_default()
    );
}
