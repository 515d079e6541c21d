//! Builds real Python and JavaScript components for each contract version,
//! the way `syncweave plugin build` does (componentize-py; rolldown and
//! componentize-js), and reads back the WIT world each component carries.
//!
//! Ignored by default: they need componentize-py on PATH and `npm install`
//! in `tests/fixtures/js-namespace-labels`, and take a few minutes (each
//! build 40-80 s on two shared cores). Run them with
//!
//!     cargo test -p syncweave-wasm-build --test contract_builds -- --ignored --nocapture
//!
//! `--nocapture` prints each component's WIT, as `wasm-tools component wit`
//! would, with its size and build time.

use std::path::{Path, PathBuf};
use std::time::Instant;

use syncweave_wasm_build::js::{JsProject, build_js};
use syncweave_wasm_build::python::{PythonProject, build_python};
use syncweave_wasm_build::{BuildError, BuiltComponent};
use wit_component::{DecodedWasm, WitPrinter};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn out_dir(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("sw-contract-builds-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The component's world as WIT text, and its imports and exports by name
/// (`syncweave:plugin/mutation@0.2.0`).
fn world_of(path: &Path) -> (String, Vec<String>, Vec<String>) {
    let bytes = std::fs::read(path).unwrap();
    let decoded = wit_component::decode(&bytes).unwrap();
    let DecodedWasm::Component(resolve, world) = &decoded else {
        panic!("{} is not a component", path.display())
    };
    let w = &resolve.worlds[*world];
    let imports: Vec<String> = w
        .imports
        .keys()
        .map(|k| resolve.name_world_key(k))
        .collect();
    let exports: Vec<String> = w
        .exports
        .keys()
        .map(|k| resolve.name_world_key(k))
        .collect();
    let main = decoded.package();
    let nested: Vec<_> = resolve
        .packages
        .iter()
        .map(|(id, _)| id)
        .filter(|id| *id != main)
        .collect();
    let mut printer = WitPrinter::default();
    printer.print(resolve, main, &nested).unwrap();
    (printer.output.to_string(), imports, exports)
}

fn report(what: &str, built: &BuiltComponent, started: Instant, wit: &str) {
    println!(
        "== {what}: {} ({} bytes, built in {:.1} s, {})",
        built.path.display(),
        built.size,
        started.elapsed().as_secs_f64(),
        built.digest()
    );
    // The component's own world: the root package, before the nested ones.
    let root = wit
        .split("\npackage syncweave:plugin")
        .next()
        .unwrap_or(wit);
    println!("{root}");
}

fn python(dir: PathBuf, name: &str) -> PythonProject {
    PythonProject {
        dir,
        name: name.into(),
        world: "mutator".into(),
        app: "app".into(),
        // What the CLI passes today: the 0.1 contract. A 0.2 project must
        // still get the 0.2 world.
        wit: repo().join("wit/plugin.wit"),
        python_path: vec![repo().join("sdk/python/src")],
    }
}

fn js(dir: PathBuf, name: &str) -> JsProject {
    JsProject {
        dir,
        name: name.into(),
        world: "mutator".into(),
        entry: "component.js".into(),
        wit: repo().join("wit/plugin.wit"),
    }
}

fn assert_v02(imports: &[String], exports: &[String]) {
    for export in [
        "syncweave:plugin/meta@0.2.0",
        "syncweave:plugin/mutation@0.2.0",
    ] {
        assert!(
            exports.iter().any(|e| e == export),
            "no export {export} in {exports:?}"
        );
    }
    for import in [
        "syncweave:plugin/host-log@0.2.0",
        "syncweave:plugin/reads@0.2.0",
    ] {
        assert!(
            imports.iter().any(|i| i == import),
            "no import {import} in {imports:?}"
        );
    }
    assert!(
        !imports
            .iter()
            .chain(exports)
            .any(|n| n.contains("syncweave:plugin") && n.ends_with("@0.1.0")),
        "0.1 interfaces in a 0.2 component: {imports:?} {exports:?}"
    );
}

/// Copies a fixture project to a scratch directory (node_modules linked, not
/// copied), with `edit` applied to one of its files.
fn variant(from: &Path, name: &str, file: &str, edit: impl Fn(String) -> String) -> PathBuf {
    let dir = out_dir(name).join("project");
    std::fs::create_dir_all(&dir).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let path = entry.path();
        let target = dir.join(entry.file_name());
        if entry.file_name() == "node_modules" {
            std::os::unix::fs::symlink(&path, &target).unwrap();
        } else if path.is_file() {
            std::fs::copy(&path, &target).unwrap();
        }
    }
    let text = std::fs::read_to_string(dir.join(file)).unwrap();
    let edited = edit(text.clone());
    assert_ne!(edited, text, "the edit of {file} changed nothing");
    std::fs::write(dir.join(file), edited).unwrap();
    dir
}

#[test]
#[ignore = "needs componentize-py; run with --ignored"]
fn python_0_2_project_builds_against_the_0_2_world() {
    let started = Instant::now();
    let out = out_dir("py02");
    let built = build_python(
        &python(
            fixture("python-namespace-labels"),
            "python-namespace-labels",
        ),
        &out,
        true,
    )
    .unwrap();
    let (wit, imports, exports) = world_of(&built.path);
    report("Python, contract 0.2", &built, started, &wit);
    assert_v02(&imports, &exports);
}

#[test]
#[ignore = "needs componentize-py; run with --ignored"]
fn python_0_1_example_still_builds_against_0_1() {
    let started = Instant::now();
    let out = out_dir("py01");
    let built = build_python(
        &python(repo().join("examples/python-mutator"), "python-mutator"),
        &out,
        true,
    )
    .unwrap();
    let (wit, imports, exports) = world_of(&built.path);
    report(
        "Python, contract 0.1 (examples/python-mutator)",
        &built,
        started,
        &wit,
    );
    assert!(
        exports
            .iter()
            .any(|e| e == "syncweave:plugin/mutation@0.1.0"),
        "{exports:?}"
    );
    assert!(
        !imports
            .iter()
            .any(|i| i.starts_with("syncweave:plugin/reads")),
        "{imports:?}"
    );
}

#[test]
#[ignore = "needs componentize-py; run with --ignored"]
fn python_contract_mismatch_stops_the_build_with_the_fix() {
    let dir = variant(
        &fixture("python-namespace-labels"),
        "pymismatch",
        "pyproject.toml",
        |t| t.replace("contract = \"0.2\"", "contract = \"0.1\""),
    );
    let err = build_python(&python(dir, "mismatch"), &out_dir("pymismatch"), false).unwrap_err();
    let text = err.to_string();
    println!("{text}");
    assert!(matches!(err, BuildError::ToolFailed { .. }), "{text}");
    assert!(
        text.contains("the plugin and the project disagree on the contract"),
        "{text}"
    );
    assert!(
        text.contains("NamespaceLabels targets contract 0.2"),
        "{text}"
    );
    assert!(
        text.contains("set contract = \"0.2\" under [tool.syncweave]"),
        "{text}"
    );
}

fn need_node_modules(dir: &Path) {
    assert!(
        dir.join("node_modules/@bytecodealliance/componentize-js")
            .is_dir(),
        "run `npm install` in {} first",
        dir.display()
    );
}

#[test]
#[ignore = "needs npm install in tests/fixtures/js-namespace-labels; run with --ignored"]
fn js_0_2_project_builds_against_the_0_2_world() {
    let dir = fixture("js-namespace-labels");
    need_node_modules(&dir);
    let started = Instant::now();
    let out = out_dir("js02");
    let built = build_js(&js(dir.clone(), "js-namespace-labels"), &out, true).unwrap();
    let (wit, imports, exports) = world_of(&built.path);
    report("JavaScript, contract 0.2", &built, started, &wit);
    assert_v02(&imports, &exports);

    // Call it: jco (componentize-js's own dependency) turns the component
    // into an ES module that node instantiates with a fake host for the
    // contract's imports; run-component.mjs checks describe, the report, the
    // context values and a read error as the host would see them.
    let transpiled = out.join("transpiled");
    let status = std::process::Command::new(dir.join("node_modules/.bin/jco"))
        .arg("transpile")
        .arg(&built.path)
        .arg("-o")
        .arg(&transpiled)
        .args(["--instantiation", "async", "--name", "component", "--quiet"])
        .status()
        .unwrap();
    assert!(status.success(), "jco transpile failed");
    let out = std::process::Command::new("node")
        .arg("run-component.mjs")
        .arg(transpiled.join("component.js"))
        .current_dir(&dir)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    println!("{text}");
    assert!(out.status.success(), "run-component.mjs failed:\n{text}");
}

#[test]
#[ignore = "needs npm install in tests/fixtures/js-namespace-labels; run with --ignored"]
fn js_contract_mismatches_stop_the_build_with_the_fix() {
    let from = fixture("js-namespace-labels");
    need_node_modules(&from);

    // package.json says 0.1, the entry module imports @0.2.0.
    let dir = variant(&from, "jsimports", "package.json", |t| {
        t.replace("\"contract\": \"0.2\"", "\"contract\": \"0.1\"")
    });
    let text = build_js(&js(dir, "mismatch"), &out_dir("jsimports"), false)
        .unwrap_err()
        .to_string();
    println!("{text}");
    assert!(
        text.contains("the entry module imports syncweave:plugin interfaces @0.2.0"),
        "{text}"
    );
    assert!(text.contains("\"contract\": \"0.2\""), "{text}");

    // package.json and the imports say 0.2, the plugin says 0.1 (and so may
    // not declare reads): the SDK stops the build while componentize-js runs
    // the entry module.
    let dir = variant(&from, "jsplugin", "plugin.js", |t| {
        t.replace("  contract: '0.2',\n", "")
    });
    let text = build_js(&js(dir, "mismatch"), &out_dir("jsplugin"), false)
        .unwrap_err()
        .to_string();
    println!("{text}");
    assert!(
        text.contains("the plugin and the project disagree on the contract"),
        "{text}"
    );
    assert!(text.contains("is a contract 0.2 feature"), "{text}");
}
