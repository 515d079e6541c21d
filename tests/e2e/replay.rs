//! Debugging a plugin failure from the cluster: the agent keeps the failing
//! inputs (`--debug-address`), serves them on its loopback debug endpoint,
//! and `syncweave plugin replay` reruns one locally with the same result
//! and a symbolized Wasm backtrace. Secret data never reaches a capture.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use syncweave::plugin::capture::{Capture, CaptureList, REDACTED_BASE64};
use syncweave_tests::env::*;
use syncweave_tests::*;

/// Long enough for a cold compile of a Python or JavaScript component (an
/// 18 MB component took 72 s in a debug build with four tests running on
/// two cores); a wait ends as soon as what it waits for is there.
const WAIT: Duration = Duration::from_secs(180);

/// The hostile test guest (tests/plugins/hostile), built from source.
fn hostile_plugin() -> PathBuf {
    use syncweave_runtime::build::{BuildOptions, build_crate};
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .unwrap();
    let mut opts = BuildOptions::new(repo.join("target/test-plugins"));
    opts.packages = vec!["test-hostile".into()];
    opts.progress = false;
    let built = build_crate(&repo.join("plugins"), &opts)
        .expect("building tests/plugins/hostile (needs the wasm toolchain: tests/setup.sh)");
    built[0].path.clone()
}

/// What marks an object for the hostile plugin's `panic-if-marked` mode.
const MARK: &str = "syncweave.test/explode";
/// The Secret's password, plain and as stored.
const PASSWORD: &str = "correct-horse-battery";

/// The captures listed on the debug endpoint at 127.0.0.1:`port`, and each
/// one as served (its path, decoded, and its body), as `plugin replay`
/// reads them.
pub(crate) async fn served_captures(
    port: u16,
) -> Result<(CaptureList, Vec<(String, Capture, String)>), String> {
    let (code, body) = http_get(port, "/debug/captures").await?;
    if code != 200 {
        return Err(format!("{code}: {body}"));
    }
    let list: CaptureList = serde_json::from_str(&body).map_err(|e| e.to_string())?;
    let mut served = Vec::new();
    for s in &list.captures {
        let (code, body) = http_get(port, &s.path).await?;
        if code != 200 {
            return Err(format!("{}: {code}: {body}", s.path));
        }
        let c: Capture = serde_json::from_str(&body).map_err(|e| e.to_string())?;
        served.push((s.path.clone(), c, body));
    }
    Ok((list, served))
}

fn syncweave(args: &[&str], cache: &std::path::Path) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_syncweave"))
        .args(args)
        .env("SYNCWEAVE_CACHE_DIR", cache)
        .env("NO_COLOR", "1")
        .output()
        .expect("syncweave runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A PublishedResource whose mutation plugin (a WasmPlugin running the
/// hostile guest, configured to panic on marked objects) fails on one
/// CronTab and on a related Secret: both calls are captured, listed and
/// served over HTTP, the Secret's data redacted; `plugin replay <url>`
/// reproduces the crash, naming the guest function in its backtrace.
#[tokio::test(flavor = "multi_thread")]
async fn a_failed_call_is_captured_served_and_replayed() {
    let plugin = hostile_plugin();
    let bytes = std::fs::read(&plugin).unwrap();
    let digest = format!("sha256:{}", hex::encode(Sha256::digest(&bytes)));
    let mut env = Env::prepare("replay", crate::binary()).await;
    let debug_port = free_port();
    let debug_address = format!("127.0.0.1:{debug_port}");
    env.start_agent(&["--debug-address", &debug_address]);
    let source = format!("file://{}", plugin.display());
    apply_yaml(
        &env.service_client,
        &format!(
            "apiVersion: syncweave.dev/v1alpha1\nkind: WasmPlugin\nmetadata: {{name: explode}}\n\
             spec: {{source: '{source}', config: {{mode: panic-if-marked}}}}\n"
        ),
    )
    .await
    .expect("WasmPlugin");
    env.publish_yaml(
        r#"
apiVersion: syncagent.kcp.io/v1alpha1
kind: PublishedResource
metadata:
  name: publish-crontabs
spec:
  resource: {kind: CronTab, apiGroup: example.com, versions: [v1]}
  mutation:
    spec:
      - wasm: {plugin: explode}
  related:
    - identifier: creds
      origin: kcp
      kind: Secret
      object:
        reference:
          path: metadata.name
          regex: {pattern: "$", replacement: "-creds"}
      mutation:
        spec:
          - wasm: {plugin: explode}
"#,
    )
    .await;
    env.wait_for_export_claim("", "secrets").await;
    let (consumer, client) = env
        .consumer_accepting("consumer", &[("", "events"), ("", "secrets")])
        .await;
    let kcp_crontabs = crontabs(&client, "default");
    let marked = |name: &str| {
        let mut c = crontab(name, "img");
        c["metadata"]["labels"] = json!({MARK: "true"});
        c
    };
    // The consumer's credentials for "fine", marked too: copying them down
    // runs the related mutation, which fails on them.
    let secrets = dynamic_api(
        &client,
        &gvk("", "v1", "Secret"),
        "secrets",
        Some("default"),
    );
    create(
        &secrets,
        json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "fine-creds", "namespace": "default", "labels": {MARK: "true"}},
            "stringData": {"password": PASSWORD},
        }),
    )
    .await;
    create(&kcp_crontabs, crontab("fine", "img")).await;
    create(&kcp_crontabs, marked("boom")).await;

    // The unmarked object syncs through the plugin; the marked one does not.
    let local = crontabs(&env.service_client, &consumer.cluster);
    eventually(
        "the unmarked CronTab on the service cluster",
        WAIT,
        || async { get_opt(&local, &default_copy_name("default", "fine")).await },
    )
    .await;

    // Both failures are listed on the debug endpoint, and each capture is
    // served over HTTP as `plugin replay` reads it. (The CronTab may be
    // captured more than once: the agent's own edits, a finalizer, make
    // it another input.)
    let (list, primary, secret) = eventually(
        "captures of the CronTab and of the Secret on /debug/captures",
        WAIT,
        || async {
            let (list, served) = served_captures(debug_port).await?;
            let (mut primary, mut secret) = (None, None);
            for (path, c, body) in served {
                let kind = c
                    .call
                    .as_ref()
                    .and_then(|c| c.object.as_ref())
                    .map(|o| o["kind"].clone());
                match kind.as_ref().and_then(Value::as_str) {
                    Some("CronTab") => primary = Some((path, c)),
                    Some("Secret") => secret = Some((c, body)),
                    other => return Err(format!("unexpected capture of {other:?}: {body}")),
                }
            }
            Ok(primary.zip(secret).map(|(p, s)| (list, p, s)))
        },
    )
    .await;
    for s in &list.captures {
        assert_eq!(s.plugin, "explode", "{s:?}");
        assert_eq!(s.digest, digest);
        assert_eq!(s.world, "mutator");
        assert_eq!(s.source.as_deref(), Some(source.as_str()));
        assert_eq!(s.function, "mutate");
        assert_eq!(s.owner.as_deref(), Some("publish-crontabs"));
        assert_eq!(s.failure, "crash");
        assert!(s.replayable && s.size > 0, "{s:?}");
        assert!(!s.captured_at.is_empty());
    }
    let (path, crontab_capture) = primary;
    let object = crontab_capture
        .call
        .as_ref()
        .unwrap()
        .object
        .clone()
        .unwrap();
    assert_eq!(
        object["metadata"]["name"], "boom",
        "only the marked CronTab fails"
    );
    assert_eq!(
        crontab_capture.limits.timeout_ms, 100,
        "the WasmPlugin's (default) limits"
    );
    assert!(
        crontab_capture
            .failure
            .message
            .contains("explode_on_marked_object"),
        "the cluster's backtrace names the guest function: {}",
        crontab_capture.failure.message
    );

    // The Secret's data is redacted before it is stored: not in plain text,
    // not base64-encoded, and not in the guest's error message either.
    let (secret, body) = secret;
    let encoded = serde_json::to_value(k8s_openapi::ByteString(PASSWORD.as_bytes().to_vec()))
        .unwrap()
        .as_str()
        .unwrap()
        .to_string();
    for needle in [PASSWORD.to_string(), encoded] {
        assert!(!body.contains(&needle), "{needle} leaked: {body}");
    }
    let object = secret.call.unwrap().object.unwrap();
    assert_eq!(object["data"]["password"], REDACTED_BASE64, "{object}");
    assert!(
        secret
            .redacted
            .iter()
            .any(|p| p == "call.object.data.password"),
        "{:?}",
        secret.redacted
    );

    // Replayed on "a laptop": fetched by the captured reference and digest,
    // run under the captured limits, the same classified failure, with a
    // symbolized backtrace naming the guest function.
    let cache = env.dir.join("replay-cache");
    let url = format!("http://localhost:{debug_port}{path}");
    let (code, stdout, stderr) = syncweave(&["plugin", "replay", &url], &cache);
    eprintln!("syncweave plugin replay {url}:\n{stderr}");
    assert_eq!(code, 1, "fails like the cluster's call: {stderr}");
    assert!(stdout.is_empty(), "no output for a failed call: {stdout}");
    for needle in [
        "crash: the guest trapped: wasm trap: wasm `unreachable` instruction executed",
        "wasm backtrace:",
        "explode_on_marked_object",
        "reproduced: the call failed in the cluster the same way",
        // The guest's own panic message, through host-log.
        "explodes on marked object \"boom\"",
    ] {
        assert!(stderr.contains(needle), "{needle:?} not in: {stderr}");
    }

    // A saved capture replays too; a fixed build (here: the same component
    // with the echo mode, through --config) succeeds and prints its output.
    let saved = env.dir.join("capture.json");
    let (_, body) = http_get(debug_port, &path).await.unwrap();
    std::fs::write(&saved, body).unwrap();
    let config = env.dir.join("echo.json");
    std::fs::write(&config, r#"{"mode":"echo"}"#).unwrap();
    let (code, stdout, stderr) = syncweave(
        &[
            "plugin",
            "replay",
            saved.to_str().unwrap(),
            "--plugin",
            plugin.to_str().unwrap(),
            "--config",
            config.to_str().unwrap(),
        ],
        &cache,
    );
    assert_eq!(code, 0, "{stderr}");
    let out: Value = serde_json::from_str(&stdout).expect("the output object");
    assert_eq!(out["metadata"]["name"], "boom");
    assert!(stderr.contains("the call succeeded here"), "{stderr}");

    // The list itself is not a capture: replay says which ones to pick.
    let (code, _, stderr) = syncweave(
        &[
            "plugin",
            "replay",
            &format!("http://127.0.0.1:{debug_port}/debug/captures"),
        ],
        &cache,
    );
    assert_ne!(code, 0);
    assert!(stderr.contains(&path), "{stderr}");
}

/// The debug endpoint is never exposed beyond loopback: the agent refuses
/// any other address, saying how to reach it instead.
#[test]
fn a_non_loopback_debug_address_is_refused() {
    for bad in ["0.0.0.0:8086", ":8086", "192.168.1.10:8086"] {
        let out = Command::new(env!("CARGO_BIN_EXE_syncweave"))
            .args(["sync", "--debug-address", bad])
            .output()
            .expect("syncweave runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bad}: {stderr}");
        assert!(
            stderr.contains("--debug-address") && stderr.contains("not a loopback address"),
            "{bad}: {stderr}"
        );
        assert!(stderr.contains("kubectl port-forward"), "{bad}: {stderr}");
    }
}
