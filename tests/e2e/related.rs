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

async fn wait_export_claims_for(env: &Env, wanted: &[&str]) {
    let provider = kcp().client(&env.provider.path).await.unwrap();
    let exports = dynamic_api(
        &provider,
        &gvk("apis.kcp.io", "v1alpha1", "APIExport"),
        "apiexports",
        None,
    );
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
    wait_export_claims(&env).await;
    let (consumer, client) = env
        .consumer_accepting(
            "consumer",
            &[
                ("", "events"),
                ("", "secrets"),
                ("", "configmaps"),
                ("", "namespaces"),
            ],
        )
        .await;
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
