//! `build_crate` on real guest crates.
mod common;

use syncweave_runtime::build::{BuildError, BuildOptions, build_crate};

#[test]
fn builds_each_test_plugin_into_a_component() {
    let built = common::built();
    assert_eq!(
        built.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(),
        common::TEST_PLUGINS
    );
    for c in built {
        let bytes = std::fs::read(&c.path).unwrap();
        assert_eq!(bytes.len() as u64, c.size, "{}", c.name);
        assert!(wasmparser::Parser::is_component(&bytes), "{}", c.name);
        assert_eq!(
            c.path.file_name().unwrap(),
            format!("{}.wasm", c.name).as_str()
        );
        assert_eq!(c.digest().len(), "sha256:".len() + 64);
    }
}

#[test]
fn builds_a_single_member_by_path() {
    let out = common::tempdir("build-echo");
    let mut opts = BuildOptions::new(&out);
    opts.progress = false;
    let built = build_crate(&common::repo().join("tests/plugins/echo"), &opts).unwrap();
    assert_eq!(built.len(), 1);
    assert_eq!(built[0].path, out.join("test-echo.wasm"));
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn not_a_crate_is_reported() {
    let dir = common::tempdir("not-a-crate");
    let err = build_crate(&dir, &BuildOptions::new(&dir)).unwrap_err();
    assert!(matches!(err, BuildError::NotACrate { .. }), "{err}");
    assert!(err.to_string().contains("no Cargo.toml"), "{err}");
}
