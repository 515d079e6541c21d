//! Test support shared by the unit tests of every module: scratch
//! directories, one plugin runtime per test binary, test plugins built from
//! `tests/plugins`, and JSON generators for property tests.

use std::path::PathBuf;
use std::sync::OnceLock;

use proptest::prelude::*;
use serde_json::{Number, Value, json};
use syncweave_runtime::build::{BuildOptions, BuiltComponent, build_crate};
use syncweave_runtime::{Runtime, RuntimeConfig};

use crate::controller::store::{KeyParts, ObjectKey};
use crate::plugin::fetch::{FetchContext, FetchOptions};

/// A fresh, empty directory of its own for one test (`tag` names it).
/// Test processes exit without a hook to remove theirs, so the first call
/// removes those of earlier runs whose process is gone (a plain `cargo
/// test` otherwise left ~40 directories in the temp dir per run).
pub fn tempdir(tag: &str) -> PathBuf {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    static SWEPT: std::sync::Once = std::sync::Once::new();
    SWEPT.call_once(sweep_dead_tempdirs);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let d = std::env::temp_dir().join(format!(
        "syncweave-sources-{tag}-{}-{n}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Remove `syncweave-sources-<tag>-<pid>-<n>` directories of processes
/// that no longer run (Linux: `/proc/<pid>`; elsewhere nothing is removed).
fn sweep_dead_tempdirs() {
    if !std::path::Path::new("/proc/self").exists() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix("syncweave-sources-") else {
            continue;
        };
        // <tag>-<pid>-<n>; tags may contain '-'.
        let mut parts = rest.rsplit('-');
        let (Some(_n), Some(pid)) = (parts.next(), parts.next()) else {
            continue;
        };
        let Ok(pid) = pid.parse::<u32>() else {
            continue;
        };
        if pid != std::process::id() && !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// One runtime for all tests: each reserves a pool of instance slots.
pub fn runtime() -> Runtime {
    static RT: OnceLock<Runtime> = OnceLock::new();
    RT.get_or_init(own_runtime).clone()
}

/// A runtime of its own, for a test that asserts on runtime-wide state
/// (its call pool, what is resident): under the shared [`runtime`] the
/// tests running beside it change that state.
pub fn own_runtime() -> Runtime {
    Runtime::new(RuntimeConfig {
        cache_dir: Some(tempdir("wasmplugin-rt")),
        max_instances: 8,
        max_memory_bytes: 256 << 20,
        ..Default::default()
    })
    .expect("runtime")
}

pub fn fetch_context(rt: &Runtime) -> FetchContext {
    let mut opts = FetchOptions::for_runtime(rt, None);
    opts.cache_dir = Some(tempdir("wasmplugin-fetch"));
    FetchContext::new(opts).unwrap()
}

/// A component from tests/plugins, built once per test binary (cargo
/// makes this cheap when nothing changed).
pub fn test_plugin(name: &str) -> PathBuf {
    static BUILT: OnceLock<Vec<BuiltComponent>> = OnceLock::new();
    let built = BUILT.get_or_init(|| {
        let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut opts = BuildOptions::new(repo.join("target/test-plugins"));
        opts.packages = vec!["test-echo".into(), "test-namer".into()];
        build_crate(&repo.join("plugins"), &opts)
            .expect("building test plugins (needs the wasm toolchain: tests/setup.sh)")
    });
    built
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("{name} was not built"))
        .path
        .clone()
}

/// Any JSON value without nulls (a merge patch cannot set a field to
/// null: null deletes it), nested a few levels, keys from a small set
/// so that two documents share fields.
pub fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| Value::Number(Number::from_f64(f).expect("finite"))),
        // Integral floats: `6.0` next to `6`.
        (-1000i64..1000).prop_map(|i| json!(i as f64)),
        "[a-z\\\"\u{e9}\u{1F600}<>&]{0,5}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 32, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            json_object(inner),
        ]
    })
}

/// A JSON object whose values come from `values`.
pub fn json_object(values: impl Strategy<Value = Value>) -> impl Strategy<Value = Value> {
    prop::collection::btree_map("[a-d]{1,2}", values, 0..5)
        .prop_map(|m| Value::Object(m.into_iter().collect()))
}

/// The key of kcp object `namespace/name` in logical cluster `cluster`.
pub fn object_key(cluster: &str, namespace: Option<&str>, name: &str) -> ObjectKey {
    ObjectKey::new(KeyParts {
        cluster: cluster.into(),
        namespace: namespace.map(Into::into),
        name: name.into(),
    })
}
