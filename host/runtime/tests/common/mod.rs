//! Builds the guest crates under tests/plugins once per test binary.
#![allow(dead_code)] // each test binary uses a different subset

use std::path::PathBuf;
use std::sync::OnceLock;

use syncweave_runtime::build::{BuildOptions, BuiltComponent, build_crate};

pub const TEST_PLUGINS: [&str; 9] = [
    "test-echo",
    "test-hostile",
    "test-namer",
    "test-projector",
    "test-renderer",
    "test-meta-only",
    "test-reader",
    "test-namer-v2",
    "test-sdk-renderer-v2",
];

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// Build every test plugin (cargo makes this cheap when nothing changed) and
/// return the components, in TEST_PLUGINS order.
pub fn built() -> &'static [BuiltComponent] {
    static BUILT: OnceLock<Vec<BuiltComponent>> = OnceLock::new();
    BUILT.get_or_init(|| {
        let mut opts = BuildOptions::new(repo().join("target/test-plugins"));
        opts.packages = TEST_PLUGINS.iter().map(|s| s.to_string()).collect();
        let mut built = build_crate(&repo().join("plugins"), &opts).expect("test plugins build");
        built.sort_by_key(|c| TEST_PLUGINS.iter().position(|n| *n == c.name));
        built
    })
}

pub fn wasm(name: &str) -> Vec<u8> {
    let c = built()
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("{name} was not built"));
    std::fs::read(&c.path).unwrap()
}

pub fn tempdir(tag: &str) -> PathBuf {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let d = std::env::temp_dir().join(format!("syncweave-{tag}-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}
