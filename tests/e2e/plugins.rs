//! WasmPlugins on a real service cluster (kube-apiserver + etcd): the
//! WasmPlugin CRD is installed there, and the controller runs in-process
//! (`syncweave::plugin::wasmplugin::run`) with a client to it, as the agent runs it.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Event, Namespace};
use kube::api::{Api, ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use serde_json::json;
use sha2::{Digest, Sha256};
use syncweave::apis::{WasmPlugin, WasmPluginSpec};
use syncweave::plugin::resolve::PluginResolver;
use syncweave::plugin::wasmplugin::WasmPluginRegistry;
use syncweave_runtime::{Runtime, RuntimeConfig, World};
use syncweave_tests::*;
use tokio_util::sync::CancellationToken;

const WASMPLUGIN_CRD: &str =
    include_str!("../../charts/syncweave/crds/syncweave.dev_wasmplugins.yaml");
const WAIT: Duration = Duration::from_secs(60);

fn plugin_file(name: &str) -> std::path::PathBuf {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../target/plugins")
        .join(format!("{name}.wasm"));
    p.canonicalize().unwrap_or_else(|_| {
        panic!(
            "{} not built: run tests/run.sh (or examples/build.sh)",
            p.display()
        )
    })
}

fn digest_of(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// A service-cluster workspace with the WasmPlugin CRD, and the controller
/// running against it until the returned guard is dropped.
struct Setup {
    client: Client,
    /// The service cluster; stopped when the test ends.
    service: ServiceCluster,
    registry: WasmPluginRegistry,
    runtime: Runtime,
    cancel: CancellationToken,
}

impl Drop for Setup {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

async fn setup(test: &str) -> Setup {
    let dir = std::env::temp_dir().join(unique(test));
    let service = ServiceCluster::start(&dir)
        .await
        .expect("service cluster (kube-apiserver + etcd)");
    let client = service.admin_client().await.unwrap();
    apply_crds(&client, WASMPLUGIN_CRD)
        .await
        .expect("WasmPlugin CRD");
    let runtime = Runtime::new(RuntimeConfig {
        max_instances: 8,
        max_memory_bytes: 256 << 20,
        ..Default::default()
    })
    .expect("runtime");
    let registry = WasmPluginRegistry::new();
    let cancel = CancellationToken::new();
    tokio::spawn(syncweave::plugin::wasmplugin::run(
        client.clone(),
        runtime.clone(),
        registry.clone(),
        syncweave::kube::recorder::for_service(client.clone()),
        cancel.clone(),
    ));
    Setup {
        client,
        service,
        registry,
        runtime,
        cancel,
    }
}

async fn create_plugin(client: &Client, name: &str, spec: WasmPluginSpec) {
    Api::<WasmPlugin>::all(client.clone())
        .create(&PostParams::default(), &WasmPlugin::new(name, spec))
        .await
        .expect("create WasmPlugin");
}

/// The WasmPlugin once its Ready condition has status `want`.
async fn wait_ready(client: &Client, name: &str, want: &str) -> WasmPlugin {
    let api = Api::<WasmPlugin>::all(client.clone());
    eventually(&format!("WasmPlugin {name} Ready={want}"), WAIT, || {
        let api = api.clone();
        async move {
            let wp = api.get(name).await.map_err(|e| e.to_string())?;
            let state = format!("{:?}", wp.status);
            match wp.condition("Ready") {
                Some(c) if c.status == want => Ok(Some(wp)),
                _ => Err(state),
            }
        }
    })
    .await
}

/// Events in `default` about WasmPlugin `name`.
async fn events_for(client: &Client, name: &str) -> Vec<Event> {
    let api = Api::<Event>::namespaced(client.clone(), "default");
    api.list(&ListParams::default())
        .await
        .expect("list events")
        .items
        .into_iter()
        .filter(|e| {
            e.involved_object.kind.as_deref() == Some("WasmPlugin")
                && e.involved_object.name.as_deref() == Some(name)
        })
        .collect()
}

/// A file:// plugin becomes Ready with its digest, world and describe()
/// info in status; the sync path can resolve it by name.
#[tokio::test(flavor = "multi_thread")]
async fn file_source_becomes_ready() {
    let s = setup("wp-file").await;
    let path = plugin_file("rust-mutator");
    let bytes = std::fs::read(&path).unwrap();
    create_plugin(
        &s.client,
        "label-team",
        WasmPluginSpec {
            source: format!("file://{}", path.display()),
            config: Some(serde_json::json!({"label": {"key": "team", "value": "platform"}})),
            ..Default::default()
        },
    )
    .await;

    let wp = wait_ready(&s.client, "label-team", "True").await;
    let status = wp.status.clone().unwrap();
    assert_eq!(status.digest.as_deref(), Some(digest_of(&bytes).as_str()));
    assert_eq!(status.world.as_deref(), Some("mutator"));
    assert_eq!(status.observed_generation, wp.metadata.generation);
    let info = status.info.expect("describe() info in status");
    assert!(
        !info.name.is_empty() && !info.version.is_empty(),
        "{info:?}"
    );
    for t in ["Fetched", "Compiled", "SelfTested", "Ready"] {
        let c = wp.condition(t).unwrap();
        assert_eq!(c.status, "True", "{t}: {c:?}");
        assert_eq!(c.observed_generation, wp.metadata.generation);
    }

    // The registry the sync path reads has it, and a use resolves by name.
    let ready = s.registry.get("label-team").expect("registry entry");
    assert_eq!(ready.digest(), digest_of(&bytes));
    let fetch = syncweave::plugin::fetch::FetchContext::new(
        syncweave::plugin::fetch::FetchOptions::for_runtime(&s.runtime, Some(s.client.clone())),
    )
    .unwrap();
    let resolver = PluginResolver::new(s.runtime.clone(), s.registry.clone(), fetch);
    let use_ = syncweave::apis::WasmUse {
        plugin: Some("label-team".into()),
        ..Default::default()
    };
    let r = resolver
        .resolve_use(&use_, World::Mutator, "spec.mutation.spec[0].wasm")
        .await
        .expect("resolves");
    assert_eq!(r.config, r#"{"label":{"key":"team","value":"platform"}}"#);

    let events = events_for(&s.client, "label-team").await;
    assert!(
        events
            .iter()
            .any(|e| e.reason.as_deref() == Some("Ready") && e.type_.as_deref() == Some("Normal")),
        "{events:?}"
    );

    // Deleting the WasmPlugin takes it out of the registry.
    Api::<WasmPlugin>::all(s.client.clone())
        .delete("label-team", &Default::default())
        .await
        .unwrap();
    eventually("registry forgets the deleted plugin", WAIT, || async {
        Ok(s.registry.get("label-team").is_err().then_some(()))
    })
    .await;
}

/// A source that cannot be fetched: Fetched=False with the reason in the
/// message, Ready=False, and a Warning Event on the WasmPlugin.
#[tokio::test(flavor = "multi_thread")]
async fn bad_source_reports_fetch_failure_with_event() {
    let s = setup("wp-bad").await;
    create_plugin(
        &s.client,
        "missing",
        WasmPluginSpec {
            source: "file:///nonexistent/syncweave-e2e/plugin.wasm".into(),
            ..Default::default()
        },
    )
    .await;
    let wp = wait_ready(&s.client, "missing", "False").await;
    let fetched = wp.condition("Fetched").expect("Fetched condition");
    assert_eq!(fetched.status, "False");
    assert_eq!(fetched.reason, "FetchFailed");
    assert!(
        fetched
            .message
            .contains("/nonexistent/syncweave-e2e/plugin.wasm"),
        "{fetched:?}"
    );
    assert_eq!(wp.condition("Compiled").unwrap().status, "Unknown");
    assert!(wp.status.as_ref().unwrap().digest.is_none());

    let event = eventually("a FetchFailed Event", WAIT, || async {
        let events = events_for(&s.client, "missing").await;
        Ok(events
            .into_iter()
            .find(|e| e.reason.as_deref() == Some("FetchFailed")))
    })
    .await;
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    assert_eq!(event.involved_object.uid, wp.uid());
    assert!(
        event
            .message
            .as_deref()
            .unwrap_or_default()
            .contains("/nonexistent/syncweave-e2e/plugin.wasm"),
        "{event:?}"
    );
    let not_ready = s.registry.get("missing").unwrap_err();
    assert!(not_ready.reason.contains("Fetched=False"), "{not_ready}");

    // A malformed reference is InvalidSource, naming the field.
    create_plugin(
        &s.client,
        "tag-only",
        WasmPluginSpec {
            source: "oci://ghcr.io/example/plugin:v1".into(),
            ..Default::default()
        },
    )
    .await;
    let wp = wait_ready(&s.client, "tag-only", "False").await;
    let fetched = wp.condition("Fetched").unwrap();
    assert_eq!(fetched.reason, "InvalidSource");
    assert!(fetched.message.starts_with("spec.source:"), "{fetched:?}");
    assert!(fetched.message.contains("pin it by digest"), "{fetched:?}");
}

/// configmap:// reads a binaryData key from the service cluster: the
/// air-gapped way to ship a plugin.
#[tokio::test(flavor = "multi_thread")]
async fn configmap_source_becomes_ready() {
    let s = setup("wp-cm").await;
    let bytes = std::fs::read(plugin_file("rust-mutator")).unwrap();
    Api::<Namespace>::all(s.client.clone())
        .create(
            &PostParams::default(),
            &Namespace {
                metadata: ObjectMeta {
                    name: Some("plugins".into()),
                    ..Default::default()
                },
                ..Default::default()
            },
        )
        .await
        .expect("namespace");

    // Referenced before the ConfigMap exists: not ready, and says how to fix it.
    create_plugin(
        &s.client,
        "from-cm",
        WasmPluginSpec {
            source: "configmap://plugins/rust-mutator/plugin.wasm".into(),
            sha256: Some(hex::encode(Sha256::digest(&bytes))),
            ..Default::default()
        },
    )
    .await;
    let wp = wait_ready(&s.client, "from-cm", "False").await;
    let fetched = wp.condition("Fetched").unwrap();
    assert!(
        fetched.message.contains("kubectl create configmap"),
        "{fetched:?}"
    );

    Api::<ConfigMap>::namespaced(s.client.clone(), "plugins")
        .create(
            &PostParams::default(),
            &ConfigMap {
                metadata: ObjectMeta {
                    name: Some("rust-mutator".into()),
                    ..Default::default()
                },
                binary_data: Some(BTreeMap::from([(
                    "plugin.wasm".to_string(),
                    ByteString(bytes.clone()),
                )])),
                ..Default::default()
            },
        )
        .await
        .expect("ConfigMap");

    // The missing-ConfigMap failure is retried with backoff, so no edit is needed.
    let wp = wait_ready(&s.client, "from-cm", "True").await;
    let status = wp.status.unwrap();
    assert_eq!(status.digest.as_deref(), Some(digest_of(&bytes).as_str()));
    assert_eq!(status.world.as_deref(), Some("mutator"));
    assert!(s.registry.get("from-cm").is_ok());

    // The ConfigMap is watched: a change is read at once. Nothing re-reads
    // a Ready ConfigMap plugin on a timer, so without the watch this waits
    // forever. Bytes that do not match the pinned sha256 are refused: the
    // WasmPlugin is not Ready, and the digest that matched the pin keeps
    // serving (docs/rollout.md).
    let configmaps = Api::<ConfigMap>::namespaced(s.client.clone(), "plugins");
    let set_bytes = |b: Vec<u8>| {
        let configmaps = configmaps.clone();
        async move {
            configmaps
                .patch(
                    "rust-mutator",
                    &PatchParams::default(),
                    &Patch::Merge(json!({"binaryData": {"plugin.wasm": ByteString(b)}})),
                )
                .await
                .expect("patch ConfigMap")
        }
    };
    let mut tampered = bytes.clone();
    tampered.extend_from_slice(b"\0tampered");
    set_bytes(tampered).await;
    let wp = wait_ready(&s.client, "from-cm", "False").await;
    let fetched = wp.condition("Fetched").unwrap();
    assert_eq!(fetched.status, "False", "{fetched:?}");
    assert_eq!(
        s.registry.get("from-cm").unwrap().digest(),
        digest_of(&bytes),
        "the pinned digest keeps serving"
    );
    assert_eq!(
        wp.status
            .as_ref()
            .and_then(|s| s.stable.as_ref())
            .map(|s| s.digest.as_str()),
        Some(digest_of(&bytes).as_str())
    );
    set_bytes(bytes.clone()).await;
    wait_ready(&s.client, "from-cm", "True").await;

    // `syncweave plugin test` takes the same reference and fetches it the
    // same way (here from the ConfigMap, through --kubeconfig).
    let dir = std::env::temp_dir().join(unique("cli-configmap"));
    std::fs::create_dir_all(&dir).unwrap();
    let kubeconfig = dir.join("service.kubeconfig");
    s.service.write_admin_kubeconfig(&kubeconfig).unwrap();
    let (input, config) = (dir.join("object.json"), dir.join("config.json"));
    std::fs::write(
        &input,
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"default"}}"#,
    )
    .unwrap();
    std::fs::write(&config, r#"{"label":{"key":"team","value":"cli"}}"#).unwrap();
    let sha = hex::encode(Sha256::digest(&bytes));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_syncweave"))
        .args([
            "plugin",
            "test",
            "configmap://plugins/rust-mutator/plugin.wasm",
        ])
        .args(["--sha256", &sha, "--kubeconfig"])
        .arg(&kubeconfig)
        .arg("--input")
        .arg(&input)
        .arg("--config")
        .arg(&config)
        .env("SYNCWEAVE_CACHE_DIR", dir.join("cache"))
        .output()
        .expect("syncweave runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "plugin test failed: {stderr}");
    let result: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON result");
    assert_eq!(result["metadata"]["labels"]["team"], "cli", "{result}");

    // A wrong pin is refused before anything runs.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_syncweave"))
        .args([
            "plugin",
            "inspect",
            "configmap://plugins/rust-mutator/plugin.wasm",
        ])
        .args(["--sha256", &"0".repeat(64), "--kubeconfig"])
        .arg(&kubeconfig)
        .env("SYNCWEAVE_CACHE_DIR", dir.join("cache"))
        .output()
        .expect("syncweave runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains(&sha),
        "the error names the actual digest: {stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// WasmPlugins that exist before the controller starts are checked at once
/// (the initial list is not lost while the reflector's store fills), not at
/// the next resync: here the resync is ten minutes away.
#[tokio::test(flavor = "multi_thread")]
async fn plugins_present_at_startup_are_checked_at_once() {
    let dir = std::env::temp_dir().join(unique("wp-startup"));
    let service = ServiceCluster::start(&dir).await.expect("service cluster");
    let client = service.admin_client().await.unwrap();
    apply_crds(&client, WASMPLUGIN_CRD)
        .await
        .expect("WasmPlugin CRD");
    let source = format!("file://{}", plugin_file("rust-mutator").display());
    let names: Vec<String> = (0..4).map(|i| format!("early-{i}")).collect();
    for name in &names {
        create_plugin(
            &client,
            name,
            WasmPluginSpec {
                source: source.clone(),
                ..Default::default()
            },
        )
        .await;
    }
    let runtime = Runtime::new(RuntimeConfig::default()).expect("runtime");
    let fetch = syncweave::plugin::fetch::FetchContext::new(
        syncweave::plugin::fetch::FetchOptions::for_runtime(&runtime, Some(client.clone())),
    )
    .unwrap();
    let registry = WasmPluginRegistry::new();
    let cancel = CancellationToken::new();
    let _stop = cancel.clone().drop_guard();
    tokio::spawn(syncweave::plugin::wasmplugin::run_with(
        client.clone(),
        syncweave::plugin::wasmplugin::Checker { runtime, fetch },
        registry.clone(),
        syncweave::kube::recorder::for_service(client.clone()),
        syncweave::plugin::wasmplugin::ControllerConfig {
            resync: Duration::from_secs(600),
            ..Default::default()
        },
        cancel,
    ));
    eventually(
        "every pre-existing WasmPlugin Ready",
        Duration::from_secs(30),
        || async { Ok(names.iter().all(|n| registry.get(n).is_ok()).then_some(())) },
    )
    .await;
}
