//! Builds a real guest crate through `build_crate` and checks the component.
use std::path::PathBuf;

use syncweave_runtime::build::{BuildOptions, build_crate};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn builds_echo_into_a_component() {
    let out = tempdir("build-echo");
    let built = build_crate(&repo().join("tests/plugins/echo"), &BuildOptions::new(&out))
        .expect("echo builds");
    assert_eq!(built.len(), 1);
    let c = &built[0];
    assert_eq!(c.name, "test-echo");
    assert_eq!(c.path, out.join("test-echo.wasm"));
    let bytes = std::fs::read(&c.path).unwrap();
    assert_eq!(bytes.len() as u64, c.size);
    assert!(wasmparser::Parser::is_component(&bytes));
    assert_eq!(c.sha256.len(), 64);
    std::fs::remove_dir_all(&out).unwrap();
}

fn tempdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("syncweave-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}
