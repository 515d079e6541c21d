//! Publishing and trusting plugins: `syncweave plugin push` to a real OCI
//! registry (distribution's, TLS and auth, started by the harness), pulls
//! with registry credentials (Basic, and Bearer tokens from a real token
//! server), and cosign-style signatures verified before a plugin is loaded
//! (with cosign itself for interop).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use base64::Engine as _;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ObjectMeta, PostParams};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use syncweave::apis::{
    KeySource, ObjectKeyReference, SecretReference, SignatureVerification, WasmPlugin,
    WasmPluginSpec,
};
use syncweave_tests::author::{self, Cli, digest_of, failed, key_fingerprint as fingerprint};
use syncweave_tests::env::*;
use syncweave_tests::*;

const WAIT: Duration = Duration::from_secs(90);

fn plugin_file(name: &str) -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../target/plugins")
        .join(format!("{name}.wasm"));
    p.canonicalize().unwrap_or_else(|_| {
        panic!(
            "{} not built: run tests/run.sh (or examples/build.sh)",
            p.display()
        )
    })
}

fn tempdir(test: &str) -> PathBuf {
    let d = std::env::temp_dir().join(unique(test));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Run `syncweave <args>` with its own source and compiled caches.
fn syncweave(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    Cli::new(crate::binary(), dir).run(args, env)
}

fn ok(o: Output, what: &str) -> String {
    author::succeeded(o, what)
}

/// `syncweave plugin push FILE REF --docker-config … --ca-file … <extra>`;
/// the pinned reference it printed.
fn push(
    dir: &Path,
    reg: &Registry,
    docker: &Path,
    file: &Path,
    target: &str,
    extra: &[&str],
) -> String {
    // The password of the cosign key in cosign_interop; unused otherwise.
    Cli::new(crate::binary(), dir)
        .env("COSIGN_PASSWORD", "interop-pw")
        .push(reg, docker, file, target, extra)
}

/// A raw GET against the registry (what another tool would see).
async fn registry_get(
    reg: &Registry,
    user: &str,
    password: &str,
    path: &str,
    accept: &str,
) -> Vec<u8> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .tls_certs_merge(reqwest::Certificate::from_pem_bundle(reg.ca_pem.as_bytes()).unwrap())
        .build()
        .unwrap();
    let resp = client
        .get(format!("https://{}{path}", reg.host))
        .basic_auth(user, Some(password))
        .header("Accept", accept)
        .send()
        .await
        .unwrap();
    assert!(resp.status().is_success(), "GET {path}: {}", resp.status());
    resp.bytes().await.unwrap().to_vec()
}

pub(crate) async fn create_plugin(client: &Client, name: &str, spec: WasmPluginSpec) {
    Api::<WasmPlugin>::all(client.clone())
        .create(&PostParams::default(), &WasmPlugin::new(name, spec))
        .await
        .expect("create WasmPlugin");
}

/// The WasmPlugin once Ready has status `want` (and, for False, the given
/// reason on Fetched).
pub(crate) async fn wait_plugin(
    client: &Client,
    name: &str,
    want: &str,
    reason: Option<&str>,
) -> WasmPlugin {
    let api = Api::<WasmPlugin>::all(client.clone());
    eventually(
        &format!("WasmPlugin {name} Ready={want} ({reason:?})"),
        WAIT,
        || {
            let api = api.clone();
            async move {
                let wp = api.get(name).await.map_err(|e| e.to_string())?;
                let ready = wp.condition("Ready").map(|c| c.status.as_str());
                let fetched = wp.condition("Fetched").map(|c| c.reason.as_str());
                if ready == Some(want) && (reason.is_none() || fetched == reason) {
                    Ok(Some(wp))
                } else {
                    Err(format!("{:?}", wp.status))
                }
            }
        },
    )
    .await
}

pub(crate) fn fetched_message(wp: &WasmPlugin) -> String {
    wp.condition("Fetched").unwrap().message.clone()
}

pub(crate) fn oci_spec(
    source: &str,
    secret: Option<(&str, &str)>,
    key_pem: Option<&str>,
) -> WasmPluginSpec {
    WasmPluginSpec {
        source: source.into(),
        image_pull_secret: secret.map(|(namespace, name)| SecretReference {
            namespace: namespace.into(),
            name: name.into(),
        }),
        signature: key_pem.map(|k| SignatureVerification {
            public_key: Some(k.into()),
            public_key_from: None,
        }),
        ..Default::default()
    }
}

/// The provider's journey with a password-protected registry: keygen →
/// push --sign (Kubewarden's media types, the digest-pinned reference
/// printed) → a WasmPlugin with that reference, a pull Secret and the
/// public key becomes Ready, and a PublishedResource syncs an object
/// through it. A wrong key, an unsigned digest, wrong or missing
/// credentials each leave their WasmPlugin not Ready, saying why.
#[tokio::test(flavor = "multi_thread")]
async fn pushed_signed_plugin_serves_and_untrusted_ones_do_not() {
    let dir = tempdir("publish");
    let reg = Registry::start(
        &dir.join("registry"),
        RegistryAuth::Htpasswd,
        &[("alice", "alice-pw")],
    )
    .await
    .expect("registry");
    let docker = reg
        .write_docker_config(
            &dir.join("docker"),
            Registry::auth_entry("alice", "alice-pw"),
        )
        .unwrap();
    let wasm = plugin_file("rust-mutator");
    let target = format!("oci://{}/alice/team-label:v1", reg.host);

    let team_pub = Cli::new(crate::binary(), &dir).keygen(&dir.join("team"));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(dir.join("team.key"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o077, 0, "the private key is private: {mode:o}");
    }
    let other_pub = Cli::new(crate::binary(), &dir).keygen(&dir.join("other"));

    let signed = push(
        &dir,
        &reg,
        &docker,
        &wasm,
        &target,
        &["--sign", dir.join("team.key").to_str().unwrap()],
    );
    // The same bytes under other annotations: another digest, not signed.
    let unsigned = push(
        &dir,
        &reg,
        &docker,
        &wasm,
        &format!("oci://{}/alice/team-label:unsigned", reg.host),
        &["--annotation", "dev.syncweave.test=unsigned"],
    );
    assert_ne!(signed, unsigned);

    // What other tools see: an OCI manifest with Kubewarden's media types.
    let manifest: Value = serde_json::from_slice(
        &registry_get(
            &reg,
            "alice",
            "alice-pw",
            &format!("/v2/alice/team-label/manifests/{}", digest_of(&signed)),
            "application/vnd.oci.image.manifest.v1+json",
        )
        .await,
    )
    .unwrap();
    assert_eq!(
        manifest["mediaType"],
        "application/vnd.oci.image.manifest.v1+json"
    );
    assert_eq!(
        manifest["config"]["mediaType"],
        "application/vnd.wasm.config.v1+json"
    );
    assert_eq!(
        manifest["layers"][0]["mediaType"],
        "application/vnd.wasm.content.layer.v1+wasm"
    );
    let bytes = std::fs::read(&wasm).unwrap();
    assert_eq!(
        manifest["layers"][0]["digest"],
        format!("sha256:{}", hex::encode(Sha256::digest(&bytes)))
    );
    // And the signature where cosign keeps it.
    let sig: Value = serde_json::from_slice(
        &registry_get(
            &reg,
            "alice",
            "alice-pw",
            &format!(
                "/v2/alice/team-label/manifests/{}.sig",
                digest_of(&signed).replace(':', "-")
            ),
            "application/vnd.oci.image.manifest.v1+json",
        )
        .await,
    )
    .unwrap();
    assert_eq!(
        sig["layers"][0]["mediaType"],
        "application/vnd.dev.cosign.simplesigning.v1+json"
    );
    assert!(sig["layers"][0]["annotations"]["dev.cosignproject.cosign/signature"].is_string());

    // The CLI refuses clearly: no credentials, wrong password, not a component.
    let empty = dir.join("empty-docker");
    std::fs::create_dir_all(&empty).unwrap();
    std::fs::write(empty.join("config.json"), "{}").unwrap();
    // `plugin push FILE target --docker-config CONFIG [--ca-file CA]`,
    // which must fail: its stderr.
    let refused = |file: &Path, config: &Path, with_ca: bool, what: &str| {
        let mut args = vec![
            "plugin",
            "push",
            file.to_str().unwrap(),
            &target,
            "--docker-config",
            config.to_str().unwrap(),
        ];
        if with_ca {
            args.extend(["--ca-file", reg.ca_file.to_str().unwrap()]);
        }
        failed(syncweave(&dir, &args, &[]), what)
    };
    let e = refused(
        &wasm,
        &empty.join("config.json"),
        true,
        "push without credentials",
    );
    assert!(
        e.contains("requires credentials") && e.contains("docker login"),
        "{e}"
    );
    let wrong = reg
        .write_docker_config(
            &dir.join("wrong-docker"),
            Registry::auth_entry("alice", "nope"),
        )
        .unwrap();
    let e = refused(&wasm, &wrong, true, "push with a wrong password");
    assert!(e.contains("refused the password of user \"alice\""), "{e}");
    let junk = dir.join("junk.wasm");
    std::fs::write(&junk, b"\0asm\x01\0\0\0").unwrap();
    let e = refused(&junk, &docker, true, "push of a core module");
    assert!(e.contains("is not a syncweave plugin component"), "{e}");
    let e = refused(&wasm, &docker, false, "push without the registry's CA");
    assert!(
        e.contains("certificate is not trusted") && e.contains("--ca-file"),
        "{e}"
    );

    // The cluster: the agent trusts the registry's CA, reads a pull Secret.
    let mut env = Env::prepare("publish", crate::binary()).await;
    env.agent_env = vec![(
        "SYNCWEAVE_PLUGIN_CA_FILE".into(),
        reg.ca_file.display().to_string(),
    )];
    env.start_agent(&[]);
    let client = env.service_client.clone();
    create_namespace(&client, "plugins").await;
    pull_secret(
        &client,
        "plugins",
        "regcred",
        &reg.docker_config(Registry::auth_entry("alice", "alice-pw")),
    )
    .await;
    pull_secret(
        &client,
        "plugins",
        "badcred",
        &reg.docker_config(Registry::auth_entry("alice", "wrong")),
    )
    .await;
    Api::<ConfigMap>::namespaced(client.clone(), "plugins")
        .create(
            &PostParams::default(),
            &ConfigMap {
                metadata: ObjectMeta {
                    name: Some("plugin-keys".into()),
                    ..Default::default()
                },
                data: Some([("team.pub".to_string(), team_pub.clone())].into()),
                ..Default::default()
            },
        )
        .await
        .expect("ConfigMap");

    // Signed, with the key from a ConfigMap: Ready, and says what verified it.
    let mut spec = oci_spec(&signed, Some(("plugins", "regcred")), None);
    spec.signature = Some(SignatureVerification {
        public_key: None,
        public_key_from: Some(KeySource {
            config_map_key_ref: Some(ObjectKeyReference {
                namespace: "plugins".into(),
                name: "plugin-keys".into(),
                key: "team.pub".into(),
            }),
            secret_key_ref: None,
        }),
    });
    create_plugin(&client, "team-label", spec).await;
    for (name, spec) in [
        (
            "wrong-key",
            oci_spec(&signed, Some(("plugins", "regcred")), Some(&other_pub)),
        ),
        (
            "unsigned",
            oci_spec(&unsigned, Some(("plugins", "regcred")), Some(&team_pub)),
        ),
        (
            "bad-creds",
            oci_spec(&signed, Some(("plugins", "badcred")), Some(&team_pub)),
        ),
        (
            "no-secret",
            oci_spec(&signed, Some(("plugins", "missing")), Some(&team_pub)),
        ),
        ("anonymous", oci_spec(&signed, None, None)),
    ] {
        create_plugin(&client, name, spec).await;
    }

    let wp = wait_plugin(&client, "team-label", "True", None).await;
    let m = fetched_message(&wp);
    assert!(
        m.contains(&format!("signature by key {} ", fingerprint(&team_pub)))
            && m.contains("ConfigMap plugins/plugin-keys key team.pub"),
        "{m}"
    );
    assert_eq!(
        wp.status.as_ref().unwrap().digest.as_deref(),
        Some(format!("sha256:{}", hex::encode(Sha256::digest(&bytes))).as_str())
    );

    let pr = r#"
apiVersion: syncagent.kcp.io/v1alpha1
kind: PublishedResource
metadata:
  name: publish-crontabs
spec:
  resource: {kind: CronTab, apiGroup: example.com, versions: [v1]}
  naming:
    namespace: "team-{{ .ClusterName }}"
    name: "{{ .Object.metadata.name }}"
  mutation:
    spec:
      - wasm:
          plugin: team-label
          config: {label: {key: team, value: signed}}
"#;
    env.publish_yaml(pr).await;
    let (consumer, kcp_client) = env.consumer("consumer").await;
    crontabs(&kcp_client, "default")
        .create(
            &PostParams::default(),
            &serde_json::from_value(crontab("job", "image-1")).unwrap(),
        )
        .await
        .unwrap();
    let local = crontabs(&client, &format!("team-{}", consumer.cluster));
    let copy = eventually("the copy, labelled by the pulled plugin", WAIT, || async {
        Ok(get_opt(&local, "job")
            .await?
            .filter(|c| c.labels().get("team").map(String::as_str) == Some("signed")))
    })
    .await;
    assert_eq!(str_at(&copy, "/spec/image"), Some("image-1"));

    // Each untrusted or unreachable one: not Ready, and the condition says why.
    let digest = digest_of(&signed);
    let wp = wait_plugin(&client, "wrong-key", "False", Some("SignatureInvalid")).await;
    let m = fetched_message(&wp);
    assert!(
        m.contains(&fingerprint(&other_pub)) && m.contains(digest),
        "{m}"
    );
    assert!(m.contains("was not made by this key"), "{m}");
    assert!(!m.contains(&fingerprint(&team_pub)), "{m}");

    let wp = wait_plugin(&client, "unsigned", "False", Some("SignatureMissing")).await;
    let m = fetched_message(&wp);
    assert!(
        m.contains(digest_of(&unsigned)) && m.contains("has no signature"),
        "{m}"
    );
    assert!(m.contains("plugin push --sign"), "{m}");

    let wp = wait_plugin(&client, "bad-creds", "False", Some("FetchFailed")).await;
    let m = fetched_message(&wp);
    assert!(
        m.contains("refused the password of user \"alice\"")
            && m.contains("Secret plugins/badcred"),
        "{m}"
    );
    assert!(!m.contains("wrong"), "never the password: {m}");

    let wp = wait_plugin(&client, "no-secret", "False", Some("PullSecretInvalid")).await;
    let m = fetched_message(&wp);
    assert!(
        m.contains("spec.imagePullSecret: Secret plugins/missing does not exist")
            && m.contains("kubectl create secret docker-registry missing -n plugins"),
        "{m}"
    );

    let wp = wait_plugin(&client, "anonymous", "False", Some("FetchFailed")).await;
    let m = fetched_message(&wp);
    assert!(
        m.contains("requires credentials") && m.contains("spec.imagePullSecret"),
        "{m}"
    );

    // The agent never logged a credential.
    let log = env.agent.as_ref().unwrap().log();
    for secret in [
        "alice-pw",
        &base64::engine::general_purpose::STANDARD.encode("alice:alice-pw"),
    ] {
        assert!(!log.contains(secret), "the agent log shows a credential");
    }
}

/// Bearer-token registries: the registry sends clients to a real token
/// server. Every docker-config credential kind works, on the CLI and from
/// a pull Secret in the cluster: auth (traded for a token with Basic auth),
/// identitytoken (a refresh token, traded with an OAuth2 POST) and
/// registrytoken (a bearer token sent as it is).
#[tokio::test(flavor = "multi_thread")]
async fn bearer_token_registries_with_every_credential_kind() {
    let dir = tempdir("publish-token");
    let reg = Registry::start(
        &dir.join("registry"),
        RegistryAuth::Token,
        &[("alice", "alice-pw")],
    )
    .await
    .expect("registry with token auth");
    let basic = reg
        .write_docker_config(
            &dir.join("basic"),
            Registry::auth_entry("alice", "alice-pw"),
        )
        .unwrap();
    let pinned = push(
        &dir,
        &reg,
        &basic,
        &plugin_file("rust-mutator"),
        &format!("oci://{}/alice/tokens:v1", reg.host),
        &[],
    );

    // A refresh token and an access token from the token server, as
    // `docker login` and registries' token APIs hand them out.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::builder()
        .tls_certs_merge(reqwest::Certificate::from_pem_bundle(reg.ca_pem.as_bytes()).unwrap())
        .build()
        .unwrap();
    let realm = reg.token_realm.clone().unwrap();
    let tokens: Value = http
        .get(&realm)
        .query(&[
            ("service", syncweave_tests::registry::TOKEN_SERVICE),
            ("scope", "repository:alice/tokens:pull"),
            ("offline_token", "true"),
        ])
        .basic_auth("alice", Some("alice-pw"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let refresh = tokens["refresh_token"]
        .as_str()
        .expect("refresh token")
        .to_string();
    let access = tokens["access_token"]
        .as_str()
        .expect("access token")
        .to_string();

    let entries = [
        ("identitytoken", json!({"identitytoken": refresh})),
        ("registrytoken", json!({"registrytoken": access})),
    ];
    for (kind, entry) in &entries {
        let cfg = reg
            .write_docker_config(&dir.join(kind), entry.clone())
            .unwrap();
        let out = ok(
            syncweave(
                &dir,
                &[
                    "plugin",
                    "inspect",
                    &pinned,
                    "--json",
                    "--docker-config",
                    cfg.to_str().unwrap(),
                    "--ca-file",
                    reg.ca_file.to_str().unwrap(),
                ],
                &[(
                    "SYNCWEAVE_CACHE_DIR",
                    dir.join(format!("cache-{kind}")).to_str().unwrap(),
                )],
            ),
            &format!("plugin inspect with an {kind}"),
        );
        let doc: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(doc["world"], "mutator", "{kind}");
    }
    // A made-up refresh token is refused by the token server, and said so.
    let bogus = reg
        .write_docker_config(
            &dir.join("bogus"),
            json!({"identitytoken": "not-a-refresh-token"}),
        )
        .unwrap();
    let e = failed(
        syncweave(
            &dir,
            &[
                "plugin",
                "inspect",
                &pinned,
                "--docker-config",
                bogus.to_str().unwrap(),
                "--ca-file",
                reg.ca_file.to_str().unwrap(),
            ],
            &[(
                "SYNCWEAVE_CACHE_DIR",
                dir.join("cache-bogus").to_str().unwrap(),
            )],
        ),
        "inspect with a bogus identity token",
    );
    assert!(
        e.contains("the token server refused the identity token"),
        "{e}"
    );

    // In the cluster, from pull Secrets of each kind (the WasmPlugin
    // controller, as the agent runs it, with a client to a real service
    // cluster).
    let service = ServiceCluster::start(&dir.join("service"))
        .await
        .expect("service cluster");
    let client = service.admin_client().await.unwrap();
    apply_crds(&client, WASMPLUGIN_CRD).await.unwrap();
    create_namespace(&client, "plugins").await;
    let runtime =
        syncweave_runtime::Runtime::new(syncweave_runtime::RuntimeConfig::default()).unwrap();
    let mut opts =
        syncweave::plugin::fetch::FetchOptions::for_runtime(&runtime, Some(client.clone()));
    opts.cache_dir = Some(dir.join("agent-cache"));
    opts.ca_file = Some(reg.ca_file.clone());
    let fetch = syncweave::plugin::fetch::FetchContext::new(opts).unwrap();
    let registry = syncweave::plugin::wasmplugin::WasmPluginRegistry::new();
    let cancel = tokio_util::sync::CancellationToken::new();
    let _stop = cancel.clone().drop_guard();
    tokio::spawn(syncweave::plugin::wasmplugin::run_with(
        client.clone(),
        syncweave::plugin::wasmplugin::Checker { runtime, fetch },
        registry.clone(),
        syncweave::kube::recorder::for_service(client.clone()),
        Default::default(),
        cancel,
    ));
    let kinds = [
        ("basic", Registry::auth_entry("alice", "alice-pw")),
        ("identitytoken", entries[0].1.clone()),
        ("registrytoken", entries[1].1.clone()),
    ];
    for (kind, entry) in &kinds {
        pull_secret(&client, "plugins", kind, &reg.docker_config(entry.clone())).await;
        create_plugin(
            &client,
            &format!("via-{kind}"),
            oci_spec(&pinned, Some(("plugins", kind)), None),
        )
        .await;
    }
    for (kind, _) in &kinds {
        wait_plugin(&client, &format!("via-{kind}"), "True", None).await;
        assert!(registry.get(&format!("via-{kind}")).is_ok());
    }
}

/// cosign and syncweave read each other's signatures: cosign signs an
/// artifact syncweave pushed (with a key from `cosign generate-key-pair`)
/// and syncweave verifies it; syncweave signs with that same encrypted
/// cosign key, and with its own key, and `cosign verify` accepts both.
#[tokio::test(flavor = "multi_thread")]
async fn cosign_interop() {
    let cosign = syncweave_tests::kcp::tools_dir().join("cosign");
    assert!(
        cosign.exists(),
        "{} not found: tests/setup.sh builds cosign from Go modules (tests/cosign); if its \
         build failed, its log says why",
        cosign.display()
    );
    let dir = tempdir("publish-cosign");
    let reg = Registry::start(
        &dir.join("registry"),
        RegistryAuth::Htpasswd,
        &[("alice", "alice-pw")],
    )
    .await
    .expect("registry");
    let docker_dir = dir.join("docker");
    let docker = reg
        .write_docker_config(&docker_dir, Registry::auth_entry("alice", "alice-pw"))
        .unwrap();
    let cosign_env = |cmd: &mut Command| {
        cmd.current_dir(&dir)
            .env("COSIGN_PASSWORD", "interop-pw")
            .env("DOCKER_CONFIG", &docker_dir)
            .env("SSL_CERT_FILE", &reg.ca_file)
            .env("HOME", &dir);
    };
    let run_cosign = |args: &[&str]| {
        let mut cmd = Command::new(&cosign);
        cmd.args(args);
        cosign_env(&mut cmd);
        cmd.output().expect("cosign runs")
    };
    ok(
        run_cosign(&["generate-key-pair"]),
        "cosign generate-key-pair",
    );
    let wasm = plugin_file("rust-mutator");
    let repo = format!("{}/alice/interop", reg.host);

    // cosign signs what syncweave pushed; syncweave verifies it.
    let pinned = push(&dir, &reg, &docker, &wasm, &format!("oci://{repo}:v1"), &[]);
    let image = format!("{repo}@{}", digest_of(&pinned));
    ok(
        run_cosign(&[
            "sign",
            "--key",
            "cosign.key",
            "--tlog-upload=false",
            "-y",
            &image,
        ]),
        "cosign sign",
    );
    let verify = |reference: &str, key: &Path| {
        syncweave(
            &dir,
            &[
                "plugin",
                "verify",
                reference,
                "--key",
                key.to_str().unwrap(),
                "--docker-config",
                docker.to_str().unwrap(),
                "--ca-file",
                reg.ca_file.to_str().unwrap(),
            ],
            &[],
        )
    };
    let out = ok(
        verify(&pinned, &dir.join("cosign.pub")),
        "syncweave plugin verify",
    );
    assert!(out.contains("verified"), "{out}");
    Cli::new(crate::binary(), &dir).keygen(&dir.join("own"));
    let e = failed(
        verify(&pinned, &dir.join("own.pub")),
        "verify with another key",
    );
    assert!(e.contains("was not made by this key"), "{e}");

    // syncweave signs with cosign's encrypted key, and with its own; cosign
    // verifies both.
    for (tag, key) in [("v2", "cosign.key"), ("v3", "own.key")] {
        let pinned = push(
            &dir,
            &reg,
            &docker,
            &wasm,
            &format!("oci://{repo}:{tag}"),
            &[
                "--annotation",
                &format!("dev.syncweave.test={tag}"),
                "--sign",
                dir.join(key).to_str().unwrap(),
            ],
        );
        let public = key.replace(".key", ".pub");
        let image = format!("{repo}@{}", digest_of(&pinned));
        let out = run_cosign(&[
            "verify",
            "--key",
            &public,
            "--insecure-ignore-tlog=true",
            &image,
        ]);
        let stdout = ok(
            out,
            &format!("cosign verify of syncweave's signature with {key}"),
        );
        assert!(stdout.contains(digest_of(&pinned)), "{stdout}");
    }
}
