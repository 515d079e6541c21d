//! The runtime against real guest components: healthy calls in every world,
//! hostile guests contained and classified, world detection, and the
//! compiled-component cache.
mod common;

use std::sync::Arc;
use std::time::Duration;

use syncweave_runtime::{
    CallContext, Direction, FailureKind, Limits, Plugin, PluginErrorKind, Runtime, RuntimeConfig,
    World,
};

const OBJ: &str = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns"},"data":{"k":"v"}}"#;

fn ctx() -> CallContext {
    CallContext {
        cluster_name: "2x8fkdtr3b1z".into(),
        cluster_path: Some("root:org:team".into()),
        direction: Direction::KcpToService,
        owner: "configmaps".into(),
    }
}

fn runtime() -> Runtime {
    Runtime::new(RuntimeConfig {
        cache_dir: None,
        ..RuntimeConfig::default()
    })
    .unwrap()
}

fn load(rt: &Runtime, name: &str) -> Arc<Plugin> {
    load_with(rt, name, None)
}

fn load_with(rt: &Runtime, name: &str, limits: Option<Limits>) -> Arc<Plugin> {
    rt.load(name, &common::wasm(name), limits)
        .unwrap_or_else(|e| panic!("{e}"))
}

fn mode(m: &str) -> String {
    format!(r#"{{"mode":"{m}"}}"#)
}

fn assert_echo_healthy(echo: &Plugin) {
    let out = echo.mutate(&ctx(), "{}", OBJ, None).unwrap();
    assert_eq!(out, OBJ);
}

#[test]
fn echo_mutates_describes_and_validates() {
    let rt = runtime();
    let echo = load(&rt, "test-echo");
    assert_eq!(echo.world(), World::Mutator);
    assert_eq!(echo.name(), "test-echo");
    assert!(echo.digest().starts_with("sha256:"));
    assert!(
        echo.exports()
            .iter()
            .any(|e| e == "syncweave:plugin/mutation@0.1.0")
    );
    // Rust guests built for wasm32-unknown-unknown import no WASI, so they
    // run on the engine tuned for cheap instantiation.
    assert!(echo.imports().iter().all(|i| !i.starts_with("wasi:")));
    assert_eq!(
        echo.engine_kind(),
        syncweave_runtime::EngineKind::BoundsChecked
    );

    assert_echo_healthy(&echo);
    let out = echo
        .mutate(&ctx(), r#"{"label":"x"}"#, OBJ, Some(OBJ))
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["metadata"]["labels"]["syncweave.test/echo"], "x");

    let info = echo.describe().unwrap();
    assert_eq!(info.name, "test-echo");
    assert_eq!(info.examples.len(), 1);
    assert!(info.config_schema.unwrap().contains("label"));

    echo.validate_config(r#"{"label":"ok"}"#).unwrap();
    let e = echo.validate_config(r#"{"label":3}"#).unwrap_err();
    assert_eq!(
        e.kind,
        FailureKind::PluginError(PluginErrorKind::InvalidConfig)
    );
    assert!(e.message.contains("label: must be a string"), "{e}");
    assert!(
        e.to_string().starts_with("plugin \"test-echo\" (sha256:"),
        "{e}"
    );
}

#[test]
fn hostile_guests_are_contained_and_classified() {
    let rt = runtime();
    let echo = load(&rt, "test-echo");
    // Debug builds of the host and a busy 2-core machine make some of these
    // slow; a generous budget keeps the test about classification. The
    // default 100 ms timeout is exercised by the "loop" case below.
    let generous = Limits {
        timeout: Duration::from_secs(5),
        ..Limits::default()
    };
    let slow_ok = load_with(&rt, "test-hostile", Some(generous));
    let default_limits = load(&rt, "test-hostile");
    let cases = [
        ("loop", FailureKind::Timeout),
        ("alloc", FailureKind::MemoryLimit),
        ("big", FailureKind::MemoryLimit), // 100 MB does not fit in 64 MiB
        ("panic", FailureKind::Crash),
        ("stack", FailureKind::Crash),
        (
            "reject",
            FailureKind::PluginError(PluginErrorKind::Rejected),
        ),
        ("rename", FailureKind::BadOutput),
        ("not-json", FailureKind::BadOutput),
        (
            "nonsense",
            FailureKind::PluginError(PluginErrorKind::InvalidConfig),
        ),
    ];
    for (m, kind) in cases {
        let hostile = if m == "loop" {
            &default_limits
        } else {
            &slow_ok
        };
        let started = std::time::Instant::now();
        let err = hostile.mutate(&ctx(), &mode(m), OBJ, None).expect_err(m);
        eprintln!("{m}: {:?} in {:?}", err.kind, started.elapsed());
        assert_eq!(err.kind, kind, "mode {m}: {err}");
        assert_eq!(err.plugin, "test-hostile");
        assert_eq!(err.digest, hostile.digest());
        // Neither the healthy plugin nor the hostile one is poisoned.
        assert_echo_healthy(&echo);
        assert_eq!(hostile.mutate(&ctx(), "{}", OBJ, None).unwrap(), OBJ);
    }
}

#[test]
fn failure_messages_explain_the_cause() {
    let rt = runtime();
    let hostile = load(&rt, "test-hostile");
    let e = hostile
        .mutate(&ctx(), &mode("loop"), OBJ, None)
        .unwrap_err();
    assert!(
        e.to_string().contains("timeout: call exceeded 100ms"),
        "{e}"
    );
    let generous = Limits {
        timeout: Duration::from_secs(5),
        ..Limits::default()
    };
    let slow_ok = load_with(&rt, "test-hostile", Some(generous));
    let e = slow_ok
        .mutate(&ctx(), &mode("alloc"), OBJ, None)
        .unwrap_err();
    assert!(
        e.message.contains("over the limit of 67108864 bytes"),
        "{e}"
    );
    let e = hostile
        .mutate(&ctx(), &mode("panic"), OBJ, None)
        .unwrap_err();
    assert!(e.message.contains("the guest trapped"), "{e}");
    let e = hostile
        .mutate(&ctx(), &mode("rename"), OBJ, None)
        .unwrap_err();
    assert!(
        e.message
            .contains("changed metadata.name from \"a\" to \"renamed\""),
        "{e}"
    );
    let e = hostile
        .mutate(&ctx(), &mode("reject"), OBJ, None)
        .unwrap_err();
    assert_eq!(e.message, "hostile plugin refuses this object");
}

#[test]
fn output_over_the_cap_is_bad_output() {
    let rt = runtime();
    // Enough memory to build 100 MB, so the output cap is what stops it.
    let limits = Limits {
        memory_bytes: 512 << 20,
        timeout: Duration::from_secs(5),
        ..Limits::default()
    };
    let hostile = load_with(&rt, "test-hostile", Some(limits));
    let e = hostile.mutate(&ctx(), &mode("big"), OBJ, None).unwrap_err();
    assert_eq!(e.kind, FailureKind::BadOutput, "{e}");
    assert!(e.message.contains("over the limit of 8388608 bytes"), "{e}");
}

#[test]
fn custom_timeout_is_reported() {
    let rt = runtime();
    let limits = Limits {
        timeout: Duration::from_millis(20),
        ..Limits::default()
    };
    let hostile = load_with(&rt, "test-hostile", Some(limits));
    let e = hostile
        .mutate(&ctx(), &mode("loop"), OBJ, None)
        .unwrap_err();
    assert_eq!(e.kind, FailureKind::Timeout);
    assert!(e.message.contains("call exceeded 20ms"), "{e}");
}

#[test]
fn log_floods_are_bounded_and_harmless() {
    let rt = runtime();
    let limits = Limits {
        timeout: Duration::from_secs(10),
        ..Limits::default()
    };
    let hostile = load_with(&rt, "test-hostile", Some(limits));
    let out = hostile
        .mutate(&ctx(), &mode("log-flood"), OBJ, None)
        .unwrap();
    assert_eq!(out, OBJ);
}

#[test]
fn namer_projector_renderer_work() {
    let rt = runtime();
    let namer = load(&rt, "test-namer");
    assert_eq!(namer.world(), World::Namer);
    let n = namer.name_object(&ctx(), "{}", OBJ).unwrap();
    assert_eq!(n.name, "2x8fkdtr3b1z-a");
    assert_eq!(n.namespace.as_deref(), Some("ns"));
    let n = namer
        .name_object(&ctx(), r#"{"namespace":"other"}"#, OBJ)
        .unwrap();
    assert_eq!(n.namespace.as_deref(), Some("other"));
    // A name the namer cannot form is the guest's invalid-input error.
    let e = namer.name_object(&ctx(), "{}", "{}").unwrap_err();
    assert_eq!(
        e.kind,
        FailureKind::PluginError(PluginErrorKind::InvalidInput)
    );
    // An invalid name is bad output.
    let e = namer
        .name_object(&ctx(), r#"{"namespace":"Bad_NS"}"#, OBJ)
        .unwrap_err();
    assert_eq!(e.kind, FailureKind::BadOutput, "{e}");

    let projector = load(&rt, "test-projector");
    assert_eq!(projector.world(), World::Projector);
    let crd = r#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"crontabs.example.com"}}"#;
    let out: serde_json::Value =
        serde_json::from_str(&projector.project("{}", crd).unwrap()).unwrap();
    assert_eq!(
        out["metadata"]["annotations"]["syncweave.test/projected"],
        "true"
    );

    let renderer = load(&rt, "test-renderer");
    assert_eq!(renderer.world(), World::Renderer);
    let template = r#"[{"kind":"Namespace","metadata":{"name":"$cluster"}},{"kind":"ConfigMap","metadata":{"name":"$who"}}]"#;
    let docs = renderer
        .render(&ctx(), "{}", template, r#"{"who":"me"}"#)
        .unwrap();
    assert_eq!(docs.len(), 2);
    assert!(docs[0].contains("2x8fkdtr3b1z"));
    assert!(docs[1].contains(r#""name":"me""#));
    let e = renderer.render(&ctx(), "{}", "[1]", "{}").unwrap_err();
    assert!(
        matches!(e.kind, FailureKind::PluginError(_) | FailureKind::BadOutput),
        "{e}"
    );
}

#[test]
fn wrong_world_is_detected() {
    let rt = runtime();
    let namer = load(&rt, "test-namer");
    let e = namer.mutate(&ctx(), "{}", OBJ, None).unwrap_err();
    assert_eq!(e.kind, FailureKind::WrongWorld);
    assert!(
        e.message
            .contains("exports syncweave:plugin/meta@0.1.0, syncweave:plugin/naming@0.1.0, expected world mutator"),
        "{e}"
    );
    namer.expect_world(World::Namer).unwrap();

    let e = rt
        .load("meta-only", &common::wasm("test-meta-only"), None)
        .unwrap_err();
    assert_eq!(e.kind, FailureKind::WrongWorld);
    assert!(
        e.message
            .contains("this component exports syncweave:plugin/meta@0.1.0, expected one of"),
        "{e}"
    );
}

#[test]
fn non_components_are_refused_with_advice() {
    let rt = runtime();
    let e = rt.load("core", b"\0asm\x01\0\0\0", None).unwrap_err();
    assert_eq!(e.kind, FailureKind::Load);
    assert!(e.message.contains("core Wasm module"), "{e}");
    let e = rt.load("junk", b"hello", None).unwrap_err();
    assert!(e.message.contains("not WebAssembly"), "{e}");
    assert!(e.digest.starts_with("sha256:"));
}

#[test]
fn same_bytes_share_one_compiled_component() {
    let rt = runtime();
    let a = rt.load("a", &common::wasm("test-echo"), None).unwrap();
    let b = rt.load("b", &common::wasm("test-echo"), None).unwrap();
    assert_eq!(a.digest(), b.digest());
    assert_eq!((a.name(), b.name()), ("a", "b"));
    let s = rt.stats();
    assert_eq!((s.compiled, s.memory_hits), (1, 1));
}

/// Compiled code lives as long as some plugin of its digest does: a
/// digest nobody uses any more (a WasmPlugin moved on, its PublishedResource
/// went) is freed, and loading it again goes back to the caches. The
/// built-ins stay.
#[test]
fn unused_digests_are_evicted_and_builtins_stay() {
    let rt = runtime();
    let a = rt.load("a", &common::wasm("test-echo"), None).unwrap();
    let b = rt.load("b", &common::wasm("test-echo"), None).unwrap();
    assert_eq!(rt.stats().resident, 1);
    drop(a);
    assert_eq!(rt.stats().resident, 1, "b still uses the digest");
    drop(b);
    assert_eq!(rt.stats().resident, 0, "nobody uses the digest");
    let _again = rt.load("a", &common::wasm("test-echo"), None).unwrap();
    let s = rt.stats();
    assert_eq!((s.compiled, s.memory_hits), (2, 1), "compiled again: {s:?}");

    drop(rt.load_builtin("projection").unwrap());
    assert_eq!(rt.stats().resident, 2, "the built-in is pinned");
    drop(rt.load_builtin("projection").unwrap());
    assert_eq!(rt.stats().memory_hits, 2);
}

#[test]
fn cache_round_trip_and_tamper_rejection() {
    let dir = common::tempdir("cache");
    let cfg = RuntimeConfig {
        cache_dir: Some(dir.clone()),
        ..RuntimeConfig::default()
    };
    let wasm = common::wasm("test-echo");

    let first = Runtime::new(cfg.clone()).unwrap();
    let p = first.load("echo", &wasm, None).unwrap();
    assert_eq!(first.stats().compiled, 1);
    let path = first.cache_path(&p).unwrap();
    assert!(path.is_file(), "{}", path.display());

    // A second runtime (a restarted process) loads without compiling.
    let second = Runtime::new(cfg.clone()).unwrap();
    let p2 = second.load("echo", &wasm, None).unwrap();
    let s = second.stats();
    assert_eq!((s.compiled, s.disk_hits, s.cache_rejected), (0, 1, 0));
    assert_echo_healthy(&p2);

    // Flip one byte: the checksum no longer matches, so the entry is
    // rejected, never deserialized, and replaced by a fresh compile.
    let mut bytes = std::fs::read(&path).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0xff;
    // Replaced by a rename, not rewritten in place: `first` and `second`
    // still map the old file, and truncating a mapped file under them is a
    // SIGBUS (seen at four tests at a time), not the tampering under test.
    let tampered = path.with_extension("tampered");
    std::fs::write(&tampered, &bytes).unwrap();
    std::fs::rename(&tampered, &path).unwrap();
    let third = Runtime::new(cfg.clone()).unwrap();
    let p3 = third.load("echo", &wasm, None).unwrap();
    let s = third.stats();
    assert_eq!((s.compiled, s.disk_hits, s.cache_rejected), (1, 0, 1));
    assert_echo_healthy(&p3);

    // The rewritten entry is good again.
    let fourth = Runtime::new(cfg).unwrap();
    fourth.load("echo", &wasm, None).unwrap();
    assert_eq!(fourth.stats().disk_hits, 1);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_disk_cache_stays_within_its_limit() {
    let dir = common::tempdir("cache-bound");
    let cfg = RuntimeConfig {
        cache_dir: Some(dir.clone()),
        ..RuntimeConfig::default()
    };
    let echo = common::wasm("test-echo");
    let first = Runtime::new(cfg.clone()).unwrap();
    let p = first.load("echo", &echo, None).unwrap();
    let echo_path = first.cache_path(&p).unwrap();
    let one_entry = std::fs::metadata(&echo_path).unwrap().len();
    drop((p, first));

    // Room for the largest of two entries, not both: loading a second
    // plugin evicts the first instead of growing the directory.
    let other = common::wasm("test-hostile");
    let limit = one_entry.max(4096) * 3 / 2 + 4096;
    let rt = Runtime::new(RuntimeConfig {
        cache_max_bytes: limit,
        ..cfg.clone()
    })
    .unwrap();
    let p = rt.load("hostile", &other, None).unwrap();
    let hostile_path = rt.cache_path(&p).unwrap();
    if std::fs::metadata(&hostile_path).unwrap().len() + one_entry < limit {
        panic!("the fixture plugins are too small to test eviction; pick larger ones");
    }
    assert!(hostile_path.is_file());
    assert!(!echo_path.exists(), "the older entry was evicted");
    let total: u64 = walk(&dir).iter().map(|f| f.metadata().unwrap().len()).sum();
    assert!(total <= limit, "{total} bytes cached, limit {limit}");
    std::fs::remove_dir_all(&dir).unwrap();
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn missing_sidecar_is_rejected() {
    let dir = common::tempdir("cache-sidecar");
    let cfg = RuntimeConfig {
        cache_dir: Some(dir.clone()),
        ..RuntimeConfig::default()
    };
    let wasm = common::wasm("test-namer");
    let rt = Runtime::new(cfg.clone()).unwrap();
    let p = rt.load("namer", &wasm, None).unwrap();
    let path = rt.cache_path(&p).unwrap();
    let with_suffix = |suffix: &str| {
        let mut s = path.clone().into_os_string();
        s.push(suffix);
        std::path::PathBuf::from(s)
    };
    std::fs::remove_file(with_suffix(".blake3")).unwrap();
    let rt2 = Runtime::new(cfg.clone()).unwrap();
    rt2.load("namer", &wasm, None).unwrap();
    assert_eq!(rt2.stats().cache_rejected, 1);
    assert_eq!(rt2.stats().compiled, 1);

    // An entry from an earlier version (SHA-256 sidecar only) is recompiled
    // and left with the current sidecar alone.
    std::fs::rename(with_suffix(".blake3"), with_suffix(".sha256")).unwrap();
    let rt3 = Runtime::new(cfg.clone()).unwrap();
    rt3.load("namer", &wasm, None).unwrap();
    assert_eq!(rt3.stats().compiled, 1);
    assert!(with_suffix(".blake3").is_file());
    assert!(!with_suffix(".sha256").exists());
    let rt4 = Runtime::new(cfg).unwrap();
    rt4.load("namer", &wasm, None).unwrap();
    assert_eq!(rt4.stats().disk_hits, 1);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_known_digest_skips_hashing_but_must_be_well_formed() {
    let dir = common::tempdir("cache-digest");
    let cfg = RuntimeConfig {
        cache_dir: Some(dir.clone()),
        ..RuntimeConfig::default()
    };
    let wasm = common::wasm("test-echo");
    let rt = Runtime::new(cfg).unwrap();
    let first = rt.load("echo", &wasm, None).unwrap();
    let digest = first.digest().to_string();
    let again = rt.load_with_digest("echo", &digest, &wasm, None).unwrap();
    assert_eq!(again.digest(), digest);
    assert_eq!(rt.stats().memory_hits, 1);
    for bad in ["sha256:../../etc/passwd", "sha256:ABC", "md5:00", ""] {
        let e = rt.load_with_digest("echo", bad, &wasm, None).unwrap_err();
        assert_eq!(e.kind, FailureKind::Load, "{bad}");
        assert!(e.to_string().contains("sha256:<64"), "{e}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn concurrent_calls_from_many_threads() {
    let rt = runtime();
    let echo = load(&rt, "test-echo");
    let hostile = load(&rt, "test-hostile");
    std::thread::scope(|s| {
        for i in 0..8 {
            let (echo, hostile) = (echo.clone(), hostile.clone());
            s.spawn(move || {
                for _ in 0..50 {
                    assert_echo_healthy(&echo);
                }
                if i % 2 == 0 {
                    let e = hostile
                        .mutate(&ctx(), &mode("panic"), OBJ, None)
                        .unwrap_err();
                    assert_eq!(e.kind, FailureKind::Crash);
                }
            });
        }
    });
}

#[test]
fn calls_work_inside_tokio_runtimes() {
    let rt = runtime();
    let echo = load(&rt, "test-echo");
    let current = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    current.block_on(async { assert_echo_healthy(&echo) });
    let multi = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let e = echo.clone();
    multi.block_on(async move {
        tokio::spawn(async move { assert_echo_healthy(&e) })
            .await
            .unwrap()
    });
}

/// Calls through the runtime's call pool run real guests on the blocking
/// pool, never more at once than `max_concurrent_calls` (counted inside the
/// calls), from either kind of Tokio runtime; a guest's own failure comes
/// back classified as usual.
#[test]
fn call_pool_bounds_real_calls() {
    use std::sync::atomic::{AtomicUsize, Ordering};

    let rt = Runtime::new(RuntimeConfig {
        cache_dir: None,
        max_concurrent_calls: 2,
        ..RuntimeConfig::default()
    })
    .unwrap();
    assert_eq!(rt.call_pool().size(), 2);
    assert_eq!(
        RuntimeConfig::default().max_concurrent_calls,
        syncweave_runtime::available_cores()
    );
    let echo = load(&rt, "test-echo");
    let hostile = load(&rt, "test-hostile");
    let running = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let calls = async |rt: Runtime| {
        let tasks: Vec<_> = (0..16)
            .map(|_| {
                let (rt, echo, running, peak) =
                    (rt.clone(), echo.clone(), running.clone(), peak.clone());
                tokio::spawn(async move {
                    rt.call_pool()
                        .run(&echo, move |p| {
                            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                            peak.fetch_max(now, Ordering::SeqCst);
                            let out = (0..5).try_for_each(|_| assert_ok(p));
                            running.fetch_sub(1, Ordering::SeqCst);
                            out
                        })
                        .await
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap().unwrap();
        }
        let e = rt
            .call_pool()
            .run(&hostile, |p| p.mutate(&ctx(), &mode("panic"), OBJ, None))
            .await
            .unwrap_err();
        assert_eq!(e.kind, FailureKind::Crash);
        assert_eq!(rt.call_pool().in_use(), 0);
    };
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap()
        .block_on(calls(rt.clone()));
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(calls(rt.clone()));
    let peak = peak.load(Ordering::SeqCst);
    assert!((1..=2).contains(&peak), "peak {peak} with 2 permits");
}

fn assert_ok(echo: &Plugin) -> Result<(), syncweave_runtime::PluginFailure> {
    assert_eq!(echo.mutate(&ctx(), "{}", OBJ, None)?, OBJ);
    Ok(())
}

#[test]
fn limits_above_the_pool_ceiling_are_refused() {
    let rt = runtime();
    let limits = Limits {
        memory_bytes: 8 << 30,
        ..Limits::default()
    };
    let e = rt
        .load("echo", &common::wasm("test-echo"), Some(limits))
        .unwrap_err();
    assert_eq!(e.kind, FailureKind::Load);
    assert!(e.message.contains("max_memory_bytes"), "{e}");
}

#[test]
fn builtins_load_from_the_configured_dir() {
    let dir = common::tempdir("builtins");
    std::fs::write(dir.join("naming.wasm"), common::wasm("test-namer")).unwrap();
    let rt = Runtime::new(RuntimeConfig {
        cache_dir: None,
        plugin_dir: Some(dir.clone()),
        ..RuntimeConfig::default()
    })
    .unwrap();
    assert_eq!(rt.builtin_dir().unwrap(), dir.canonicalize().unwrap());
    // The directory overrides the embedded copy of the same name.
    let p = rt.load_builtin("naming").unwrap();
    assert_eq!(p.world(), World::Namer);
    assert_eq!(
        p.digest(),
        format!(
            "sha256:{}",
            hex::encode(<sha2::Sha256 as sha2::Digest>::digest(common::wasm(
                "test-namer"
            )))
        )
    );
    assert_ne!(
        p.digest(),
        syncweave_runtime::builtins::get("naming").unwrap().digest
    );
    // Names not in the directory still come from the binary.
    assert_eq!(
        rt.load_builtin("projection").unwrap().world(),
        World::Projector
    );
    let e = rt.load_builtin("nope").unwrap_err();
    assert_eq!(e.kind, FailureKind::Load);
    assert!(
        e.message.contains("no built-in plugin named \"nope\""),
        "{e}"
    );
    assert!(e.message.contains("naming"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn worked_examples_run_as_a_self_test() {
    use syncweave_runtime::ExampleVerdict;
    let rt = runtime();
    let echo = load(&rt, "test-echo");
    let outcomes = echo.run_examples().unwrap();
    assert_eq!(outcomes.len(), 1);
    assert!(outcomes[0].verdict.passed(), "{:?}", outcomes[0]);

    let namer = load(&rt, "test-namer");
    let outcomes = namer.run_examples().unwrap();
    assert_eq!(outcomes[0].name, "prefixed");
    assert!(outcomes[0].verdict.passed(), "{:?}", outcomes[0]);
    match &outcomes[1].verdict {
        ExampleVerdict::Failed(why) => assert_eq!(
            why.to_string(),
            "output differs at /name: expected \"a\", got \"fixture-cluster-a\""
        ),
        other => panic!("expected a failure, got {other:?}"),
    }
}

/// The built-ins come precompiled in the binary: a fresh runtime loads all
/// four without compiling anything, and they pass their own examples. With
/// a cache directory the code is written there (so it is mapped from a file)
/// and a restarted runtime finds it on disk. An engine the code was not
/// built for (another memory reservation) refuses it, and the runtime
/// compiles instead.
#[test]
fn builtins_are_precompiled_into_the_binary() {
    let all = syncweave_runtime::builtins::all();
    assert_eq!(
        syncweave_runtime::precompiled_builtins(),
        all.len(),
        "host/runtime/build.rs precompiles every built-in (unless cross-compiling or SYNCWEAVE_PRECOMPILE=0)"
    );
    let passes = |p: &Plugin| {
        let outcomes = p.run_examples().unwrap_or_else(|e| panic!("{e}"));
        assert!(!outcomes.is_empty(), "{} declares examples", p.name());
        for o in outcomes {
            assert!(
                o.verdict.passed(),
                "{}: {}: {:?}",
                p.name(),
                o.name,
                o.verdict
            );
        }
    };

    let rt = runtime();
    for b in all {
        passes(&rt.load_builtin(b.name).unwrap());
    }
    let s = rt.stats();
    assert_eq!((s.compiled, s.precompiled), (0, all.len() as u64), "{s:?}");

    let dir = common::tempdir("precompiled");
    let cfg = RuntimeConfig {
        cache_dir: Some(dir.clone()),
        ..RuntimeConfig::default()
    };
    let first = Runtime::new(cfg.clone()).unwrap();
    let naming = first.load_builtin("naming").unwrap();
    assert_eq!((first.stats().compiled, first.stats().precompiled), (0, 1));
    assert!(first.cache_path(&naming).unwrap().is_file());
    passes(&naming);
    let second = Runtime::new(cfg).unwrap();
    passes(&second.load_builtin("naming").unwrap());
    let s = second.stats();
    assert_eq!((s.compiled, s.precompiled, s.disk_hits), (0, 0, 1), "{s:?}");
    std::fs::remove_dir_all(&dir).unwrap();

    let other = Runtime::new(RuntimeConfig {
        cache_dir: None,
        max_memory_bytes: 512 << 20,
        ..RuntimeConfig::default()
    })
    .unwrap();
    passes(&other.load_builtin("naming").unwrap());
    let s = other.stats();
    assert_eq!((s.compiled, s.precompiled), (1, 0), "{s:?}");
}

const MARKED: &str = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"labels":{"syncweave.test/explode":"true"},"name":"a","namespace":"ns"}}"#;

/// A trap comes back with wasmtime's backtrace, symbolized from the
/// component's name section (`syncweave plugin build` keeps it): the guest
/// function that panicked is named. A timeout says where the guest was.
/// The same holds on the engine `plugin replay` uses, which also reads
/// DWARF.
#[test]
fn traps_carry_a_symbolized_backtrace() {
    let rt = runtime();
    let hostile = load(&rt, "test-hostile");
    let config = mode("panic-if-marked");
    assert_eq!(hostile.mutate(&ctx(), &config, OBJ, None).unwrap(), OBJ);
    let e = hostile.mutate(&ctx(), &config, MARKED, None).unwrap_err();
    assert_eq!(e.kind, FailureKind::Crash, "{e}");
    let bt = e.backtrace.as_deref().expect("a trap has a backtrace");
    assert!(bt.contains("explode_on_marked_object"), "{bt}");
    assert!(!bt.contains("<wasm function"), "every frame named: {bt}");
    assert!(e.message.contains("explode_on_marked_object"), "{e}");
    assert_eq!(e.headline(), UNREACHABLE);

    let e = hostile
        .mutate(&ctx(), &mode("loop"), OBJ, None)
        .unwrap_err();
    assert_eq!(e.kind, FailureKind::Timeout);
    let bt = e
        .backtrace
        .as_deref()
        .expect("an interrupted guest has a backtrace");
    assert!(bt.contains("mutate"), "{bt}");
    assert!(!e.message.contains("backtrace"), "Events stay short: {e}");

    let replay = Runtime::new(RuntimeConfig {
        cache_dir: None,
        backtrace_details: true,
        ..RuntimeConfig::default()
    })
    .unwrap();
    let again = load(&replay, "test-hostile")
        .mutate(&ctx(), &config, MARKED, None)
        .unwrap_err();
    assert_eq!(
        (again.kind, again.headline()),
        (FailureKind::Crash, UNREACHABLE)
    );
    assert!(
        again
            .backtrace
            .unwrap()
            .contains("explode_on_marked_object")
    );
}

/// What a Rust guest's panic looks like (panic=abort ends in `unreachable`).
const UNREACHABLE: &str = "the guest trapped: wasm trap: wasm `unreachable` instruction executed";

/// The failure hook hears of every role call that fails while running the
/// guest, with the plugin and the arguments as the guest got them, and of
/// nothing else (successes, config validation, a wrong world).
#[test]
fn failed_calls_reach_the_failure_hook() {
    use std::sync::Mutex;
    let rt = runtime();
    type Seen = (String, String, Option<String>, String, FailureKind, String);
    let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let sink = seen.clone();
    assert!(rt.on_call_failure(Box::new(move |c| {
        let (object, other) = match c.args {
            syncweave_runtime::CallArgs::Mutate { object, other, .. } => {
                (object.to_string(), other.map(str::to_string))
            }
            _ => (String::new(), None),
        };
        sink.lock().unwrap().push((
            c.args.function().to_string(),
            object,
            other,
            c.args.config().to_string(),
            c.failure.kind,
            c.plugin.name().to_string(),
        ));
    })));
    assert!(!rt.on_call_failure(Box::new(|_| {})), "installed once");
    let hostile = load(&rt, "test-hostile");
    let config = mode("panic-if-marked");
    hostile.mutate(&ctx(), &config, OBJ, None).unwrap();
    hostile
        .mutate(&ctx(), &config, MARKED, Some(OBJ))
        .unwrap_err();
    hostile
        .mutate(&ctx(), &mode("reject"), OBJ, None)
        .unwrap_err();
    hostile.validate_config("not json").unwrap_err();
    hostile.name_object(&ctx(), "{}", OBJ).unwrap_err(); // wrong world
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        vec![
            (
                "mutate".to_string(),
                MARKED.to_string(),
                Some(OBJ.to_string()),
                config.clone(),
                FailureKind::Crash,
                "test-hostile".to_string()
            ),
            (
                "mutate".to_string(),
                OBJ.to_string(),
                None,
                mode("reject"),
                FailureKind::PluginError(PluginErrorKind::Rejected),
                "test-hostile".to_string()
            ),
        ]
    );
}

/// A plugin's residency follows the runtime's eviction of its digest; a
/// built-in's never ends, and it knows its source.
#[test]
fn residency_follows_the_digest() {
    let rt = runtime();
    let echo = load(&rt, "test-echo");
    assert_eq!(echo.source(), None);
    echo.set_source("file:///plugins/echo.wasm");
    echo.set_source("ignored: the first wins");
    assert_eq!(echo.source(), Some("file:///plugins/echo.wasm"));
    let r = echo.residency();
    let twin = load(&rt, "test-echo");
    assert!(r.is_resident());
    drop(echo);
    assert!(r.is_resident(), "another plugin still uses the digest");
    drop(twin);
    assert!(!r.is_resident());
    let naming = rt.load_builtin("naming").unwrap();
    assert_eq!(naming.source(), Some("naming"));
    let r = naming.residency();
    drop(naming);
    assert!(r.is_resident(), "built-ins stay");
}
