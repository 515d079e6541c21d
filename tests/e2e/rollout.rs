//! Rolling out new plugin code safely (docs/rollout.md), as a provider
//! does it: a WasmPlugin moved to a digest whose worked examples fail keeps
//! serving the old digest, and a canary gives a new digest to labelled
//! objects first, until it is promoted. The plugins are the `test-stamp`
//! guests in tests/plugins, built from source by the project's build: each
//! labels objects `stamp: <its version>`, and the broken one's example
//! expects another answer than it gives.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

use k8s_openapi::api::core::v1::Event;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams};
use serde_json::{Value, json};
use syncweave::apis::WasmPlugin;
use syncweave_tests::env::*;
use syncweave_tests::*;

const WAIT: Duration = Duration::from_secs(90);

/// test-stamp-v1, -v2 and -bad, built once per test binary (cargo makes
/// it cheap when nothing changed): name → (path, digest).
fn stamp(version: &str) -> (String, String) {
    static BUILT: OnceLock<HashMap<String, (String, String)>> = OnceLock::new();
    let built = BUILT.get_or_init(|| {
        let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut opts = syncweave_runtime::BuildOptions::new(repo.join("target/test-plugins"));
        opts.packages = ["v1", "v2", "bad"]
            .iter()
            .map(|v| format!("test-stamp-{v}"))
            .collect();
        syncweave_runtime::build_crate(&repo.join("plugins"), &opts)
            .expect("building the test-stamp plugins (needs the wasm toolchain: tests/setup.sh)")
            .into_iter()
            .map(|c| {
                let digest = c.digest();
                (
                    c.name.clone(),
                    (format!("file://{}", c.path.display()), digest),
                )
            })
            .collect()
    });
    built
        .get(&format!("test-stamp-{version}"))
        .unwrap_or_else(|| panic!("test-stamp-{version} was not built"))
        .clone()
}

async fn built(version: &'static str) -> (String, String) {
    tokio::task::spawn_blocking(move || stamp(version))
        .await
        .unwrap()
}

fn wasm_plugin(source: &str, rollout: Option<Value>) -> Value {
    let mut wp = json!({
        "apiVersion": "syncweave.dev/v1alpha1",
        "kind": "WasmPlugin",
        "metadata": {"name": "stamp"},
        "spec": {"source": source},
    });
    if let Some(r) = rollout {
        wp["spec"]["rollout"] = r;
    }
    wp
}

/// The WasmPlugin once `ok` holds for it.
async fn wait_plugin(
    client: &kube::Client,
    what: &str,
    ok: impl Fn(&WasmPlugin) -> bool,
) -> WasmPlugin {
    let api = Api::<WasmPlugin>::all(client.clone());
    eventually(what, WAIT, || {
        let api = api.clone();
        let ok = &ok;
        async move {
            let wp = api.get("stamp").await.map_err(|e| e.to_string())?;
            if ok(&wp) {
                Ok(Some(wp))
            } else {
                Err(format!("{:#?}", wp.status))
            }
        }
    })
    .await
}

fn condition<'a>(wp: &'a WasmPlugin, type_: &str) -> (&'a str, &'a str, &'a str) {
    wp.condition(type_)
        .map(|c| (c.status.as_str(), c.reason.as_str(), c.message.as_str()))
        .unwrap_or_default()
}

/// A CronTab in the consumer workspace, with `labels`.
async fn crontab(api: &Api<DynamicObject>, name: &str, labels: Value) {
    create(
        api,
        json!({
            "apiVersion": "example.com/v1", "kind": "CronTab",
            "metadata": {"name": name, "namespace": "default", "labels": labels},
            "spec": {"cronSpec": "0 * * * *", "image": "i"},
        }),
    )
    .await;
}

/// Wait until the service copy of kcp object `name` is labelled
/// `stamp: want`.
async fn copy_stamped(local: &Api<DynamicObject>, name: &str, want: &str) {
    eventually(
        &format!("the copy of {name} stamped {want}"),
        WAIT,
        || async {
            let copy = get_opt(local, name).await?;
            Ok(copy.filter(|c| c.labels().get("stamp").map(String::as_str) == Some(want)))
        },
    )
    .await;
}

/// CronTabs, copied under their own names into a namespace named after
/// the workspace, through the `stamp` WasmPlugin.
const PUBLISH_WITH_STAMP: &str = r#"
apiVersion: syncagent.kcp.io/v1alpha1
kind: PublishedResource
metadata:
  name: publish-crontabs
spec:
  resource: {kind: CronTab, apiGroup: example.com, versions: [v1]}
  naming:
    namespace: "{{ .ClusterName }}"
    name: "{{ .Object.metadata.name }}"
  mutation:
    spec:
      - wasm: {plugin: stamp}
"#;

/// (a) The self-test gate: moving a WasmPlugin to a digest whose example
/// fails leaves the previous digest serving. An object created after the
/// change still gets the old mutation; the WasmPlugin's conditions, a
/// Warning Event and the PublishedResource using it name the failing
/// example and say how it failed.
#[tokio::test(flavor = "multi_thread")]
async fn a_digest_failing_its_self_test_leaves_the_old_one_serving() {
    let ((v1, v1_digest), (bad, bad_digest)) = (built("v1").await, built("bad").await);
    let env = Env::start("gate", crate::binary()).await;
    apply(&env.service_client, &wasm_plugin(&v1, None))
        .await
        .unwrap();
    env.publish_yaml(PUBLISH_WITH_STAMP).await;
    let (consumer, client) = env.consumer("consumer").await;
    let kcp_api = crontabs(&client, "default");
    let local = crontabs(&env.service_client, &consumer.cluster);
    crontab(&kcp_api, "before", json!({})).await;
    copy_stamped(&local, "before", "v1").await;

    // New code whose example expects "v2" where it gives "v3".
    apply(&env.service_client, &wasm_plugin(&bad, None))
        .await
        .unwrap();
    let example = "example \"stamps the version\" failed: output differs at \
                   /metadata/labels/stamp: expected \"v2\", got \"v3\"";
    let wp = wait_plugin(&env.service_client, "the self-test refused", |wp| {
        condition(wp, "SelfTested").0 == "False"
    })
    .await;
    let (_, reason, message) = condition(&wp, "SelfTested");
    assert_eq!(reason, "SelfTestFailed");
    assert!(
        message.starts_with(&format!("{bad_digest} failed its self-test: {example}")),
        "{message}"
    );
    let (status, reason, message) = condition(&wp, "Ready");
    assert_eq!((status, reason), ("False", "SelfTestFailed"));
    assert!(message.contains(example), "{message}");
    assert!(
        message.ends_with(&format!(
            "{v1_digest} keeps serving (the last digest that passed its checks)"
        )),
        "{message}"
    );
    let status = wp.status.clone().unwrap();
    assert_eq!(status.digest.as_deref(), Some(bad_digest.as_str()));
    let stable = status.stable.expect("status.stable");
    assert_eq!(
        (stable.digest.as_str(), stable.source.as_str()),
        (v1_digest.as_str(), v1.as_str())
    );
    assert!(status.canary.is_none());

    // The PublishedResource says so, and keeps syncing.
    let ready = env
        .wait_for_ready("publish-crontabs", "False", "WasmPluginNotUpdated")
        .await;
    let pr_message = ready["message"].as_str().unwrap_or_default();
    assert!(pr_message.contains("WasmPlugin \"stamp\""), "{pr_message}");
    assert!(pr_message.contains(example), "{pr_message}");
    assert!(pr_message.contains(&v1_digest), "{pr_message}");

    // An object synced after the change gets the old mutation.
    crontab(&kcp_api, "after", json!({})).await;
    copy_stamped(&local, "after", "v1").await;
    let before = local.get("before").await.unwrap();
    assert_eq!(before.labels().get("stamp").map(String::as_str), Some("v1"));

    // A Warning Event on the WasmPlugin names the failing example.
    let events = Api::<Event>::namespaced(env.service_client.clone(), "default");
    let event = eventually("a SelfTestFailed Event", WAIT, || async {
        let list = events
            .list(&ListParams::default())
            .await
            .map_err(|e| e.to_string())?;
        Ok(list.items.into_iter().find(|e| {
            e.involved_object.kind.as_deref() == Some("WasmPlugin")
                && e.involved_object.name.as_deref() == Some("stamp")
                && e.reason.as_deref() == Some("SelfTestFailed")
        }))
    })
    .await;
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    let note = event.message.unwrap_or_default();
    assert!(note.contains("\"stamps the version\""), "{note}");

    // Fixing the spec (back to v1) makes everything Ready again.
    apply(&env.service_client, &wasm_plugin(&v1, None))
        .await
        .unwrap();
    wait_plugin(&env.service_client, "Ready again", |wp| {
        condition(wp, "Ready").0 == "True"
    })
    .await;
    env.wait_for_ready("publish-crontabs", "True", "Syncing")
        .await;
}

/// (b) A canary by label selector: labelled objects get the new digest,
/// the others keep the stable one; status shows both digests and their
/// error counts (a call of the canary digest that fails counts on it).
/// Promoting (removing spec.rollout) gives every object the new digest.
#[tokio::test(flavor = "multi_thread")]
async fn a_label_canary_gets_the_new_digest_first_until_promoted() {
    let ((v1, v1_digest), (v2, v2_digest)) = (built("v1").await, built("v2").await);
    let env = Env::start("canary", crate::binary()).await;
    apply(&env.service_client, &wasm_plugin(&v1, None))
        .await
        .unwrap();
    env.publish_yaml(PUBLISH_WITH_STAMP).await;
    let (consumer, client) = env.consumer("consumer").await;
    let kcp_api = crontabs(&client, "default");
    let local = crontabs(&env.service_client, &consumer.cluster);
    crontab(&kcp_api, "plain", json!({})).await;
    crontab(&kcp_api, "chosen", json!({"canary": "yes"})).await;
    copy_stamped(&local, "plain", "v1").await;
    copy_stamped(&local, "chosen", "v1").await;

    let canary = json!({"canary": {"selector": {"matchLabels": {"canary": "yes"}}}});
    apply(&env.service_client, &wasm_plugin(&v2, Some(canary)))
        .await
        .unwrap();
    let wp = wait_plugin(&env.service_client, "the canary in status", |wp| {
        wp.status.as_ref().and_then(|s| s.canary.as_ref()).is_some()
    })
    .await;
    let status = wp.status.clone().unwrap();
    let (stable, canary) = (status.stable.unwrap(), status.canary.unwrap());
    assert_eq!(stable.digest, v1_digest);
    assert_eq!(canary.digest, v2_digest);
    assert_eq!(canary.selector.as_deref(), Some("canary=yes"));
    assert_eq!(canary.fraction, None);
    assert_eq!((stable.errors, canary.errors), (0, 0));
    let (ready, reason, message) = condition(&wp, "Ready");
    assert_eq!((ready, reason), ("True", "Canary"));
    assert!(message.contains("objects matching canary=yes"), "{message}");

    // Labelled objects get the new code; the others keep the old, also
    // those created now.
    copy_stamped(&local, "chosen", "v2").await;
    crontab(&kcp_api, "late", json!({})).await;
    crontab(&kcp_api, "late-chosen", json!({"canary": "yes"})).await;
    copy_stamped(&local, "late", "v1").await;
    copy_stamped(&local, "late-chosen", "v2").await;
    assert_eq!(
        local
            .get("plain")
            .await
            .unwrap()
            .labels()
            .get("stamp")
            .map(String::as_str),
        Some("v1")
    );

    // A canary object the new code refuses: its failed calls count on the
    // canary digest, not on the stable one.
    crontab(
        &kcp_api,
        "refused",
        json!({"canary": "yes", "stamp-fail": "yes"}),
    )
    .await;
    let wp = wait_plugin(&env.service_client, "canary errors counted", |wp| {
        wp.status
            .as_ref()
            .and_then(|s| s.canary.as_ref())
            .is_some_and(|c| c.errors > 0)
    })
    .await;
    assert_eq!(wp.status.unwrap().stable.unwrap().errors, 0);
    kcp_api
        .delete("refused", &DeleteParams::default())
        .await
        .unwrap();

    // Promotion: without spec.rollout, the canary digest serves everyone.
    apply(&env.service_client, &wasm_plugin(&v2, None))
        .await
        .unwrap();
    let wp = wait_plugin(&env.service_client, "promoted", |wp| {
        wp.status.as_ref().is_some_and(|s| {
            s.canary.is_none() && s.stable.as_ref().is_some_and(|s| s.digest == v2_digest)
        })
    })
    .await;
    let (ready, reason, _) = condition(&wp, "Ready");
    assert_eq!((ready, reason), ("True", "Promoted"));
    // The canary's count goes with it: it is the same digest.
    assert!(wp.status.unwrap().stable.unwrap().errors > 0);
    for name in ["plain", "late", "chosen", "late-chosen"] {
        copy_stamped(&local, name, "v2").await;
    }
    crontab(&kcp_api, "newest", json!({})).await;
    copy_stamped(&local, "newest", "v2").await;
}
