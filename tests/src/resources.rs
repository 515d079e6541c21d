//! Small helpers for working with arbitrary Kubernetes objects in tests.

use std::time::Duration;

use anyhow::{Context, Result, anyhow};
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
use kube::discovery::pinned_kind;
use serde_json::Value;

pub fn gvk(group: &str, version: &str, kind: &str) -> GroupVersionKind {
    GroupVersionKind::gvk(group, version, kind)
}

/// An Api for a resource whose plural is known (no discovery round trip).
pub fn dynamic_api(
    client: &Client,
    gvk: &GroupVersionKind,
    plural: &str,
    namespace: Option<&str>,
) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(gvk, plural);
    match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &ar),
        None => Api::all_with(client.clone(), &ar),
    }
}

/// Resolve an object's resource through discovery and return an Api for it.
pub async fn api_for(client: &Client, obj: &Value) -> Result<Api<DynamicObject>> {
    let api_version = obj["apiVersion"]
        .as_str()
        .ok_or_else(|| anyhow!("object without apiVersion"))?;
    let kind = obj["kind"]
        .as_str()
        .ok_or_else(|| anyhow!("object without kind"))?;
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    // A workspace that just turned Ready can serve discovery without all of
    // its API groups for a moment (and a CRD just established likewise), so
    // a missing kind is retried briefly before it counts as an error.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let (ar, caps) = loop {
        match pinned_kind(client, &gvk(group, version, kind)).await {
            Ok(found) => break found,
            Err(_) if std::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
            Err(e) => return Err(e).with_context(|| format!("discovering {api_version} {kind}")),
        }
    };
    let ns = obj.pointer("/metadata/namespace").and_then(Value::as_str);
    Ok(match (caps.scope, ns) {
        (kube::discovery::Scope::Namespaced, Some(ns)) => {
            Api::namespaced_with(client.clone(), ns, &ar)
        }
        _ => Api::all_with(client.clone(), &ar),
    })
}

/// Server-side apply every document of a YAML/JSON manifest.
pub async fn apply_yaml(client: &Client, yaml: &str) -> Result<Vec<DynamicObject>> {
    let mut out = Vec::new();
    for doc in serde_yaml_ng::Deserializer::from_str(yaml) {
        let v: Value = serde::Deserialize::deserialize(doc)?;
        if v.is_null() {
            continue;
        }
        out.push(apply(client, &v).await?);
    }
    Ok(out)
}

pub async fn apply(client: &Client, obj: &Value) -> Result<DynamicObject> {
    let api = api_for(client, obj).await?;
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .ok_or_else(|| anyhow!("object without name"))?;
    api.patch(
        name,
        &PatchParams::apply("syncweave-e2e").force(),
        &Patch::Apply(obj),
    )
    .await
    .with_context(|| format!("applying {} {name}", obj["kind"]))
}

/// Apply CRDs and wait until each is Established.
pub async fn apply_crds(client: &Client, yaml: &str) -> Result<()> {
    let crds = apply_yaml(client, yaml).await?;
    let api = dynamic_api(
        client,
        &gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
        "customresourcedefinitions",
        None,
    );
    for crd in crds {
        let name = crd.metadata.name.clone().unwrap_or_default();
        let mut established = false;
        for _ in 0..120 {
            let c = api.get(&name).await?;
            established = c
                .data
                .pointer("/status/conditions")
                .and_then(Value::as_array)
                .is_some_and(|cs| {
                    cs.iter()
                        .any(|c| c["type"] == "Established" && c["status"] == "True")
                });
            if established {
                break;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        anyhow::ensure!(established, "CRD {name} not Established after 30s");
    }
    Ok(())
}

/// Create `obj` (JSON) through `api`; panics with the server's answer if
/// it is refused, since every caller is a test that cannot go on without it.
pub async fn create(api: &Api<DynamicObject>, obj: Value) -> DynamicObject {
    let name = obj.pointer("/metadata/name").cloned().unwrap_or_default();
    let obj: DynamicObject = serde_json::from_value(obj).expect("a valid object");
    api.create(&kube::api::PostParams::default(), &obj)
        .await
        .unwrap_or_else(|e| panic!("creating {name}: {e}"))
}

/// Get an object, mapping 404 to None.
pub async fn get_opt(
    api: &Api<DynamicObject>,
    name: &str,
) -> Result<Option<DynamicObject>, String> {
    api.get_opt(name).await.map_err(|e| e.to_string())
}

/// Read a string at a JSON pointer of an object.
pub fn str_at<'a>(obj: &'a DynamicObject, pointer: &str) -> Option<&'a str> {
    obj.data.pointer(pointer).and_then(Value::as_str)
}

/// The CronTab API of the examples (`example.com/v1`) in `namespace`.
pub fn crontabs(client: &Client, namespace: &str) -> Api<DynamicObject> {
    dynamic_api(
        client,
        &gvk("example.com", "v1", "CronTab"),
        "crontabs",
        Some(namespace),
    )
}

/// A CronTab `name` in namespace `default`.
pub fn crontab(name: &str, image: &str) -> Value {
    serde_json::json!({
        "apiVersion": "example.com/v1",
        "kind": "CronTab",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"cronSpec": "* * * * */5", "image": image, "replicas": 1},
    })
}

/// Upstream's `sha3short`: the first 20 hex digits of SHA3-256.
pub fn sha3short(s: &str) -> String {
    use sha3::Digest;
    hex::encode(sha3::Sha3_256::digest(s.as_bytes()))[..20].to_string()
}

/// The default name of the service copy of `namespace/name`.
pub fn default_copy_name(namespace: &str, name: &str) -> String {
    format!("{}-{}", sha3short(namespace), sha3short(name))
}

/// Create Namespace `name`.
pub async fn create_namespace(client: &Client, name: &str) {
    use k8s_openapi::api::core::v1::Namespace;
    Api::<Namespace>::all(client.clone())
        .create(
            &kube::api::PostParams::default(),
            &Namespace {
                metadata: kube::api::ObjectMeta {
                    name: Some(name.into()),
                    ..Default::default()
                },
                ..Default::default()
            },
        )
        .await
        .unwrap_or_else(|e| panic!("creating namespace {name}: {e}"));
}

/// Create a `kubernetes.io/dockerconfigjson` Secret holding docker config
/// `config` (`{"auths": {…}}`), as `kubectl create secret docker-registry`
/// does.
pub async fn pull_secret(client: &Client, namespace: &str, name: &str, config: &Value) {
    use k8s_openapi::ByteString;
    use k8s_openapi::api::core::v1::Secret;
    Api::<Secret>::namespaced(client.clone(), namespace)
        .create(
            &kube::api::PostParams::default(),
            &Secret {
                metadata: kube::api::ObjectMeta {
                    name: Some(name.into()),
                    ..Default::default()
                },
                type_: Some("kubernetes.io/dockerconfigjson".into()),
                data: Some(
                    [(
                        ".dockerconfigjson".to_string(),
                        ByteString(serde_json::to_vec(config).expect("JSON")),
                    )]
                    .into(),
                ),
                ..Default::default()
            },
        )
        .await
        .unwrap_or_else(|e| panic!("creating pull Secret {namespace}/{name}: {e}"));
}

/// A namespaced CRD `<plural>.<group>` (`v1`) with free-form spec and
/// status, and the status subresource when `status_subresource`.
pub fn free_form_crd(group: &str, kind: &str, plural: &str, status_subresource: bool) -> String {
    let singular = kind.to_lowercase();
    let subresources = if status_subresource {
        "\n    subresources: {status: {}}"
    } else {
        ""
    };
    format!(
        r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {{name: {plural}.{group}}}
spec:
  group: {group}
  names: {{kind: {kind}, listKind: {kind}List, plural: {plural}, singular: {singular}}}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true{subresources}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {{type: object, x-kubernetes-preserve-unknown-fields: true}}
          status: {{type: object, x-kubernetes-preserve-unknown-fields: true}}
"#
    )
}

/// (reason, type, message) of the Events about `name` in the consumer's
/// namespace `default`.
pub async fn events_about(
    client: &Client,
    name: &str,
) -> Result<Vec<(String, String, String)>, String> {
    let list = Api::<k8s_openapi::api::core::v1::Event>::namespaced(client.clone(), "default")
        .list(&Default::default())
        .await
        .map_err(|e| e.to_string())?;
    Ok(list
        .items
        .into_iter()
        .filter(|e| e.involved_object.name.as_deref() == Some(name))
        .map(|e| {
            (
                e.reason.unwrap_or_default(),
                e.type_.unwrap_or_default(),
                e.message.unwrap_or_default(),
            )
        })
        .collect())
}

/// Wait (90 s at most) until `api` has no object `name`; `what` names it
/// in the timeout's message.
pub async fn wait_gone<K>(api: &Api<K>, name: &str, what: &str)
where
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    crate::eventually(what, Duration::from_secs(90), || async {
        let found = api.get_opt(name).await.map_err(|e| e.to_string())?;
        Ok(found.is_none().then_some(()))
    })
    .await
}

/// Create CronTab `ns/name` in a consumer workspace, retrying for up to
/// 90 s while the workspace does not serve CronTabs (or `ns`) yet.
pub async fn create_crontab_in(client: &Client, ns: &str, name: &str) {
    let mut obj = crontab(name, "img");
    obj["metadata"]["namespace"] = Value::from(ns);
    let api = crontabs(client, ns);
    crate::eventually(
        &format!("creating CronTab {ns}/{name}"),
        Duration::from_secs(90),
        || async {
            api.create(
                &kube::api::PostParams::default(),
                &serde_json::from_value(obj.clone()).unwrap(),
            )
            .await
            .map(Some)
            .map_err(|e| e.to_string())
        },
    )
    .await;
}
