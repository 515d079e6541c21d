//! The plugin chain on the sync path: naming templates and mutation rules
//! run as Wasm (built-in plugins and a user plugin built from source).

use std::time::Duration;

use kube::api::{Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use syncweave_tests::env::*;
use syncweave_tests::*;

/// Long enough for a cold compile of a Python or JavaScript component (an
/// 18 MB component took 72 s in a debug build with four tests running on
/// two cores); a wait ends as soon as what it waits for is there.
const WAIT: Duration = Duration::from_secs(180);

/// Template naming, declarative rules (built-in mutation plugin) and a
/// `wasm` rule (the Rust example plugin) shape the service copy; a status
/// rule rewrites status on the way up.
#[tokio::test(flavor = "multi_thread")]
async fn naming_and_mutation_plugins_shape_the_copy() {
    let env = Env::start("mutation", crate::binary()).await;
    // The Rust example, registered once as a WasmPlugin and used by name.
    apply_yaml(
        &env.service_client,
        &format!(
            "apiVersion: syncweave.dev/v1alpha1\nkind: WasmPlugin\nmetadata: {{name: team-label}}\nspec: {{source: 'file://{}'}}\n",
            author::example_plugin("rust-mutator")
        ),
    )
    .await
    .expect("WasmPlugin");
    // The Python example, referenced inline: the same contract, another language.
    let pr = format!(
        r#"
apiVersion: syncagent.kcp.io/v1alpha1
kind: PublishedResource
metadata:
  name: publish-crontabs
spec:
  resource: {{kind: CronTab, apiGroup: example.com, versions: [v1]}}
  naming:
    namespace: "team-{{{{ .ClusterName }}}}"
    name: "{{{{ .Object.metadata.name }}}}-copy"
  mutation:
    spec:
      - regex: {{path: spec.image, pattern: "^(.*)$", replacement: "registry.local/$1"}}
      - wasm:
          plugin: team-label
          config: {{label: {{key: team, value: platform}}}}
      - wasm:
          source: file://{}
          config: {{label: {{key: lang, value: python}}}}
      - delete: {{path: spec.replicas}}
    status:
      - regex: {{path: status.phase, pattern: "Running", replacement: "Up"}}
"#,
        author::example_plugin("python-mutator")
    );
    env.publish_yaml(&pr).await;
    let (consumer, client) = env.consumer("consumer").await;
    let kcp_api = crontabs(&client, "default");
    let obj = json!({
        "apiVersion": "example.com/v1", "kind": "CronTab",
        "metadata": {"name": "job", "namespace": "default"},
        "spec": {"cronSpec": "0 * * * *", "image": "image-1", "replicas": 2},
    });
    kcp_api
        .create(
            &PostParams::default(),
            &serde_json::from_value(obj).unwrap(),
        )
        .await
        .unwrap();

    let ns = format!("team-{}", consumer.cluster);
    let local = crontabs(&env.service_client, &ns);
    let copy = eventually("the templated copy", WAIT, || async {
        get_opt(&local, "job-copy").await
    })
    .await;
    assert_eq!(
        str_at(&copy, "/spec/image"),
        Some("registry.local/image-1"),
        "regex rule"
    );
    let labels = copy.metadata.labels.clone().unwrap_or_default();
    assert_eq!(
        labels.get("team").map(String::as_str),
        Some("platform"),
        "WasmPlugin rule (Rust)"
    );
    assert_eq!(
        labels.get("lang").map(String::as_str),
        Some("python"),
        "inline rule (Python)"
    );
    assert_eq!(copy.data.pointer("/spec/replicas"), None, "delete rule");
    assert_eq!(
        str_at(&copy, "/spec/cronSpec"),
        Some("0 * * * *"),
        "untouched fields copied"
    );

    // Spec changes run through the same chain.
    kcp_api
        .patch(
            "job",
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": {"image": "image-2"}})),
        )
        .await
        .unwrap();
    eventually("mutated spec change", WAIT, || async {
        Ok(get_opt(&local, "job-copy")
            .await?
            .filter(|c| str_at(c, "/spec/image") == Some("registry.local/image-2")))
    })
    .await;

    // Status rules apply on the way up.
    let mut s = local.get("job-copy").await.unwrap();
    s.data["status"] = json!({"phase": "Running"});
    local
        .replace_status("job-copy", &PostParams::default(), &s)
        .await
        .unwrap();
    eventually("mutated status in kcp", WAIT, || async {
        Ok(get_opt(&kcp_api, "job")
            .await?
            .filter(|o| str_at(o, "/status/phase") == Some("Up")))
    })
    .await;
}

/// A broken plugin reference is reported on the PublishedResource, naming
/// the field, and nothing is synced.
#[tokio::test(flavor = "multi_thread")]
async fn bad_plugin_reference_is_reported_on_the_published_resource() {
    let env = Env::start("badplugin", crate::binary()).await;
    env.publish_yaml(
        r#"
apiVersion: syncagent.kcp.io/v1alpha1
kind: PublishedResource
metadata:
  name: publish-crontabs
spec:
  resource: {kind: CronTab, apiGroup: example.com, versions: [v1]}
  naming:
    wasm: {source: "file:///nonexistent/namer.wasm"}
"#,
    )
    .await;
    let _consumer = env.consumer("consumer").await;
    let prs = dynamic_api(
        &env.service_client,
        &gvk("syncagent.kcp.io", "v1alpha1", "PublishedResource"),
        "publishedresources",
        None,
    );
    let message = eventually("a Ready=False condition", WAIT, || async {
        let pr = get_opt(&prs, "publish-crontabs").await?;
        let cond = pr.and_then(|p| {
            p.data
                .pointer("/status/conditions")
                .and_then(Value::as_array)
                .and_then(|cs| {
                    cs.iter()
                        .find(|c| c["type"] == "Ready" && c["status"] == "False")
                        .cloned()
                })
        });
        Ok(cond.and_then(|c| c["message"].as_str().map(str::to_string)))
    })
    .await;
    assert!(message.contains("spec.naming.wasm"), "{message}");
    assert!(message.contains("/nonexistent/namer.wasm"), "{message}");

    // The same error is recorded as a Warning Event on the PublishedResource.
    let events = dynamic_api(
        &env.service_client,
        &gvk("events.k8s.io", "v1", "Event"),
        "events",
        None,
    );
    let note = eventually("a Warning Event on the PublishedResource", WAIT, || async {
        let list = events
            .list(&Default::default())
            .await
            .map_err(|e| e.to_string())?;
        Ok(list.items.into_iter().find_map(|e| {
            (str_at(&e, "/regarding/name") == Some("publish-crontabs")
                && str_at(&e, "/type") == Some("Warning"))
            .then(|| str_at(&e, "/note").unwrap_or_default().to_string())
        }))
    })
    .await;
    assert!(note.contains("spec.naming.wasm"), "{note}");
}

/// A WasmPlugin moved to new code (a new digest) is swapped into the running
/// sync without an agent restart: the same objects get the new plugin's
/// output, and the PublishedResource names the digest in use.
#[tokio::test(flavor = "multi_thread")]
async fn wasmplugin_digest_rollover_reaches_running_syncs() {
    use sha2::{Digest, Sha256};
    let env = Env::start("rollover", crate::binary()).await;
    let wasm_plugin = |file: &str, value: &str| {
        json!({
            "apiVersion": "syncweave.dev/v1alpha1",
            "kind": "WasmPlugin",
            "metadata": {"name": "stamp"},
            "spec": {
                "source": format!("file://{}", author::example_plugin(file)),
                "config": {"label": {"key": "stamp", "value": value}},
            },
        })
    };
    apply(&env.service_client, &wasm_plugin("rust-mutator", "v1"))
        .await
        .unwrap();
    env.publish_yaml(&format!(
        "{PUBLISHED_RESOURCE}  mutation:\n    spec:\n      - wasm: {{plugin: stamp}}\n"
    ))
    .await;
    let (consumer, client) = env.consumer("consumer").await;
    crontabs(&client, "default")
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "apiVersion": "example.com/v1", "kind": "CronTab",
                "metadata": {"name": "stamped", "namespace": "default"},
                "spec": {"cronSpec": "0 * * * *", "image": "i"},
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    let local = crontabs(&env.service_client, &consumer.cluster);
    let stamp = |want: &'static str| {
        let local = local.clone();
        async move {
            eventually(&format!("the copy stamped {want}"), WAIT, || async {
                let list = local
                    .list(&Default::default())
                    .await
                    .map_err(|e| e.to_string())?;
                Ok(list.items.into_iter().find(|o| {
                    o.metadata
                        .labels
                        .as_ref()
                        .and_then(|l| l.get("stamp"))
                        .map(String::as_str)
                        == Some(want)
                }))
            })
            .await
        }
    };
    stamp("v1").await;

    // New code (the Python build of the same contract) and a new default
    // config: a new digest for the running sync.
    let python = std::fs::read(author::example_plugin("python-mutator")).unwrap();
    let digest = format!("sha256:{}", hex::encode(Sha256::digest(&python)));
    apply(&env.service_client, &wasm_plugin("python-mutator", "v2"))
        .await
        .unwrap();
    stamp("v2").await;
    eventually(
        "the PublishedResource names the new digest",
        WAIT,
        || async {
            let ready = env
                .wait_for_ready("publish-crontabs", "True", "Syncing")
                .await;
            let message = ready["message"].as_str().unwrap_or_default();
            Ok(message.contains(&format!("stamp={digest}")).then_some(()))
        },
    )
    .await;
}

/// As upstream, spec mutations see the kcp object before kcp-only metadata
/// is stripped (its uid, here) and, before a copy exists, the projected copy
/// as `other` (its name on the service cluster).
#[tokio::test(flavor = "multi_thread")]
async fn mutations_see_the_unstripped_source_and_the_projected_other() {
    let env = Env::start("mutother", crate::binary()).await;
    env.publish_yaml(&format!(
        "{PUBLISHED_RESOURCE}  mutation:\n    spec:\n      - cel: {{path: spec.image, expression: \"self.metadata.uid + '|' + other.metadata.name\"}}\n"
    ))
    .await;
    let (consumer, client) = env.consumer("consumer").await;
    let created = crontabs(&client, "default")
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "apiVersion": "example.com/v1", "kind": "CronTab",
                "metadata": {"name": "seen", "namespace": "default"},
                "spec": {"cronSpec": "0 * * * *", "image": "i"},
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    let uid = created.metadata.uid.clone().unwrap();
    let local = crontabs(&env.service_client, &consumer.cluster);
    let copy = eventually("the mutated copy", WAIT, || async {
        let list = local
            .list(&Default::default())
            .await
            .map_err(|e| e.to_string())?;
        Ok(list.items.into_iter().next())
    })
    .await;
    let local_name = copy.metadata.name.clone().unwrap();
    assert_eq!(
        str_at(&copy, "/spec/image"),
        Some(format!("{uid}|{local_name}").as_str()),
        "self is the unstripped kcp object, other the projected copy"
    );
}
