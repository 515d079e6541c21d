//! The binary's command line: bad input exits non-zero with one line that
//! names the flag and the fix.

use std::process::Command;

fn run(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_syncweave"))
        .args(args)
        .output()
        .expect("binary runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn missing_required_flag_names_it() {
    let (code, err) = run(&[
        "sync",
        "--namespace",
        "x",
        "--apiexportendpointslice-ref",
        "y",
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("--kcp-kubeconfig"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");

    let (code, err) = run(&["init"]);
    assert_ne!(code, 0);
    assert!(err.contains("--config-workspace"), "{err}");
}

#[test]
fn kcp_kubeconfig_must_point_at_a_workspace() {
    let dir = std::env::temp_dir().join(format!("sw-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let kc = dir.join("kc.yaml");
    std::fs::write(
        &kc,
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1\ncontexts:\n- name: c\n  context: {cluster: c, user: u}\ncurrent-context: c\nusers:\n- name: u\n  user: {token: t}\n",
    )
    .unwrap();
    let (code, err) = run(&[
        "sync",
        "--kcp-kubeconfig",
        kc.to_str().unwrap(),
        "--kubeconfig",
        kc.to_str().unwrap(),
        "--namespace",
        "x",
        "--apiexportendpointslice-ref",
        "y",
        "--metrics-address=0",
    ]);
    assert_ne!(code, 0);
    assert!(
        err.contains("--kcp-kubeconfig") && err.contains("/clusters/"),
        "{err}"
    );
}

#[test]
fn go_style_booleans_and_bad_values() {
    let (code, err) = run(&["sync", "--enable-leader-election=maybe"]);
    assert_ne!(code, 0);
    assert!(err.contains("--enable-leader-election"), "{err}");
    let (code, err) = run(&[
        "sync",
        "--disabled-controllers=nope",
        "--kcp-kubeconfig=a",
        "--namespace=b",
        "--apiexportendpointslice-ref=c",
    ]);
    assert_ne!(code, 0);
    assert!(
        err.contains("--disabled-controllers") && err.contains("apiresourceschema"),
        "{err}"
    );
}

/// The built-in plugins are embedded: `plugin inspect` finds them from any
/// directory, with no plugin directory anywhere.
#[test]
fn builtin_plugins_are_embedded_in_the_binary() {
    let dir = std::env::temp_dir().join(format!("sw-builtins-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (name, world) in [
        ("projection", "projector"),
        ("naming", "namer"),
        ("mutation", "mutator"),
        ("renderer", "renderer"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_syncweave"))
            .args(["plugin", "inspect", name, "--json"])
            .current_dir(&dir)
            .env_remove("SYNCWEAVE_PLUGIN_DIR")
            .env("SYNCWEAVE_CACHE_DIR", dir.join("cache"))
            .output()
            .expect("binary runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "inspect {name}: {stderr}");
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        assert_eq!(doc["world"], world, "{doc}");
        assert!(doc["digest"].as_str().unwrap().starts_with("sha256:"));
    }
    let (code, err) = {
        let out = Command::new(env!("CARGO_BIN_EXE_syncweave"))
            .args(["plugin", "inspect", "nosuchplugin"])
            .current_dir(&dir)
            .output()
            .expect("binary runs");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    assert_ne!(code, 0);
    assert!(
        err.contains("no built-in plugin named \"nosuchplugin\"")
            && err.contains("mutation, naming, projection, renderer"),
        "{err}"
    );
}

/// `syncweave plugin bench` on a Rust example plugin: figures for it and for
/// the built-in of the same kind, each from real calls (the example's own
/// worked example as input), the cached load served from the cache.
#[test]
fn plugin_bench_measures_a_plugin_beside_the_builtin() {
    let plugin = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../target/plugins/rust-mutator.wasm");
    assert!(
        plugin.exists(),
        "{} not built: run tests/run.sh (or examples/build.sh)",
        plugin.display()
    );
    let out = Command::new(env!("CARGO_BIN_EXE_syncweave"))
        .args(["plugin", "bench"])
        .arg(&plugin)
        .args(["--calls", "20", "--json"])
        .output()
        .expect("binary runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "plugin bench: {stderr}");
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(rows[0]["plugin"], "rust-mutator", "{rows:?}");
    assert_eq!(rows[1]["plugin"], "built-in mutation", "{rows:?}");
    for r in &rows {
        assert_eq!(r["world"], "mutator", "{r}");
        assert_eq!(r["calls"], 20, "{r}");
        assert_eq!(r["cached_from_disk"], true, "{r}");
        assert!(r["calls_per_second"].as_f64().unwrap() > 0.0, "{r}");
        assert!(
            r["p50_us"].as_f64().unwrap() <= r["p99_us"].as_f64().unwrap(),
            "{r}"
        );
        assert!(r["peak_guest_memory_bytes"].as_u64().unwrap() > 0, "{r}");
        assert!(r["input"].as_str().unwrap().starts_with("example "), "{r}");
    }
}

#[test]
fn a_bad_plugin_cache_size_is_refused_naming_the_variable() {
    let dir = std::env::temp_dir().join(format!("sw-cachesize-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let inspect = |size: &str| {
        Command::new(env!("CARGO_BIN_EXE_syncweave"))
            .args(["plugin", "inspect", "mutation", "--json"])
            .env("SYNCWEAVE_CACHE_DIR", dir.join("cache"))
            .env("SYNCWEAVE_CACHE_MAX_SIZE", size)
            .output()
            .expect("binary runs")
    };
    let out = inspect("lots");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("SYNCWEAVE_CACHE_MAX_SIZE") && err.contains("512Mi"),
        "names the variable and a valid form: {err}"
    );
    // As the chart writes it from a sizeLimit.
    let out = inspect("1.5Gi");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `syncweave render` on the committed example (examples/render): the
/// copy's body as the plugins make it, its related copies, the status an
/// observed copy sends up, the Warning the agent would record,
/// and the three exit codes.
#[test]
fn render_shows_the_copy_its_related_objects_its_status_and_the_events_with_distinct_exit_codes() {
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for p in ["python-subnet", "rust-tenant"] {
        assert!(
            repo.join(format!("target/plugins/{p}.wasm")).is_file(),
            "target/plugins/{p}.wasm not built: run tests/run.sh (or examples/build.sh)"
        );
    }
    let render = |pr: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_syncweave"))
            .current_dir(&repo)
            .args(["render", pr, "examples/render/virtualmachines.yaml"])
            .args(["--kcp-fixtures", "examples/render/kcp-fixtures.yaml"])
            .args(["--observed", "examples/render/observed.yaml"])
            .output()
            .expect("binary runs");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, out, err) = render("examples/render/publishedresource.yaml");
    assert_eq!(code, 0, "{err}");
    let docs: Vec<serde_json::Value> = serde_yaml_ng::Deserializer::from_str(&out)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .collect();
    assert_eq!(docs.len(), 2, "{out}");
    assert_eq!(
        docs[0]["copy"]["body"]["spec"]["subnetID"], "subnet-0a1b",
        "{out}"
    );
    assert_eq!(
        docs[0]["copy"]["body"]["metadata"]["annotations"]["example.com/tenant"], "acme",
        "{out}"
    );
    assert_eq!(docs[0]["reads"][0], "kcp configmaps shop/net-a", "{out}");
    // The related ConfigMap's copy, beside the VM's, after its mutation.
    let related = &docs[0]["related"][0];
    assert_eq!(related["identifier"], "subnet", "{out}");
    assert_eq!(related["from"], "shop/net-a", "{out}");
    assert_eq!(related["copy"]["namespace"], "2x8fkdtr3b1z", "{out}");
    assert_eq!(related["copy"]["name"], "net-a", "{out}");
    assert_eq!(related["copy"]["body"]["kind"], "ConfigMap", "{out}");
    assert_eq!(
        related["copy"]["body"]["data"]["subnetID"], "subnet-0a1b",
        "{out}"
    );
    assert_eq!(
        related["copy"]["body"]["data"].get("notes"),
        None,
        "deleted by the entry's mutation: {out}"
    );
    assert_eq!(
        docs[1].get("related"),
        None,
        "net-missing is not there: {out}"
    );
    assert_eq!(
        docs[1]["copy"]["body"]["spec"].get("subnetID"),
        None,
        "{out}"
    );
    // Status up from the observed copy of vm-a, through the status
    // mutation; vm-b has no observed copy, so no status.
    assert_eq!(
        docs[0]["status"],
        serde_json::json!({"phase": "Running", "internalIP": "10.0.0.7"}),
        "hostNode deleted by spec.mutation.status: {out}"
    );
    assert_eq!(docs[1].get("status"), None, "{out}");
    assert_eq!(docs[1]["events"][0]["type"], "Warning", "{out}");
    assert_eq!(docs[1]["events"][0]["reason"], "SubnetMissing", "{out}");

    // A plugin that fails (its read is not allowed): 1, naming spec.reads.
    let dir = std::env::temp_dir().join(format!("sw-render-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pr = std::fs::read_to_string(repo.join("examples/render/publishedresource.yaml"))
        .unwrap()
        .replace(
            "reads: {related: true, consumerNamespace: true}",
            "reads: {}",
        )
        .replace(
            "target/plugins/",
            &format!("{}/target/plugins/", repo.display()),
        );
    let no_reads = dir.join("no-reads.yaml");
    std::fs::write(&no_reads, pr).unwrap();
    let (code, out, _) = render(no_reads.to_str().unwrap());
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("outside the read allow-list") && out.contains("spec.reads"),
        "{out}"
    );

    // Bad input: 2, one line naming the file.
    let (code, _, err) = render("examples/render/missing.yaml");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("examples/render/missing.yaml"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
