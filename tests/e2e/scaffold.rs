//! The plugin author's start, as an author runs it: `syncweave plugin new` into
//! an empty directory outside the repository, `plugin build`, `plugin test
//! --examples` and `--input`, then the language's own test runner (cargo test,
//! python unittest and pytest, node --test, go test), for Rust, Python,
//! JavaScript and Go. Real toolchains throughout: cargo for wasm32,
//! componentize-py in a fresh virtualenv with the SDK pip-installed from the
//! repository, npm + componentize-js with the SDK npm-installed from the
//! repository, Go (GOOS=wasip1) with the SDK replaced by the repository's.
//!
//! componentize-py and the npm cache are provided by examples/build.sh, which
//! tests/run.sh runs before the tests.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use syncweave_tests::author::{PythonEnv, repo};

/// A temporary directory outside the repository, removed at the end.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("sw-scaffold-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// Runs `cmd`, panicking with its output unless it succeeds; returns stdout.
fn ok(cmd: &mut Command, what: &str) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot run: {e}"));
    assert_success(&out, what);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn assert_success(out: &Output, what: &str) {
    assert!(
        out.status.success(),
        "{what} failed ({}):\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn syncweave(scratch: &Path) -> Command {
    let mut cmd = Command::new(crate::binary());
    // Outside the repository, so the SDK is found the way a user's binary
    // finds it, and with a cache of its own.
    cmd.current_dir(scratch)
        .env("SYNCWEAVE_CACHE_DIR", scratch.join("cache"))
        .env_remove("SYNCWEAVE_REPO")
        .env_remove("PYTHONPATH");
    cmd
}

/// `plugin new` → `plugin build` → `plugin test --examples` and `--input`
/// with the testdata the project ships. Returns the project directory.
fn new_build_and_test(
    scratch: &Path,
    lang: &str,
    kind: &str,
    prepare: &dyn Fn(&Path, &mut Command),
    build_args: &[&str],
) -> PathBuf {
    let name = format!("my-{lang}-{kind}");
    let dir = scratch.join(&name);
    let stdout = ok(
        syncweave(scratch).args(["plugin", "new", &name, "--lang", lang, "--kind", kind]),
        "plugin new",
    );
    assert!(
        stdout.contains(&format!("SDK from {}", repo().display())),
        "the SDK comes from this checkout: {stdout}"
    );
    for file in ["README.md", "testdata/input.json", "testdata/config.json"] {
        assert!(dir.join(file).is_file(), "{lang} {kind}: {file} missing");
    }

    let out_dir = scratch.join("out");
    let mut build = syncweave(scratch);
    build
        .args(["plugin", "build"])
        .arg(&dir)
        .arg("--out")
        .arg(&out_dir)
        .args(build_args);
    prepare(&dir, &mut build);
    let built = ok(&mut build, &format!("plugin build ({lang} {kind})"));
    let wasm = out_dir.join(format!("{name}.wasm"));
    assert!(
        built.contains(&format!("{name}\t{}", wasm.display())) && built.contains("sha256:"),
        "{built}"
    );

    let examples = ok(
        syncweave(scratch)
            .args(["plugin", "test"])
            .arg(&wasm)
            .arg("--examples"),
        &format!("plugin test --examples ({lang} {kind})"),
    );
    if kind == "renderer" {
        // The contract's fixture has no template: the starter carries it in the
        // config and renders it when the call's template is empty. A host that
        // does not run renderer examples lists them as skipped; the run below and
        // the unit tests check the output either way.
        assert!(
            examples.contains("skipped") || examples.contains("1 passed, 0 failed"),
            "{examples}"
        );
    } else {
        assert!(
            examples.contains("1 passed, 0 failed") && examples.contains("ok "),
            "{examples}"
        );
    }

    let inspect = ok(
        syncweave(scratch)
            .args(["plugin", "inspect", "--json"])
            .arg(&wasm),
        "plugin inspect",
    );
    let info: Value = serde_json::from_str(&inspect).unwrap();
    assert_eq!(info["world"], kind, "{info}");
    assert_eq!(info["describe"]["name"], name.as_str(), "{info}");
    let example = &info["describe"]["examples"][0];
    let expected: Value =
        serde_json::from_str(example["expected"].as_str().expect("an expected output")).unwrap();

    // The testdata the README's `plugin test` line uses gives the example's output.
    let mut run = syncweave(scratch);
    run.current_dir(&dir)
        .args(["plugin", "test"])
        .arg(&wasm)
        .args([
            "--input",
            "testdata/input.json",
            "--config",
            "testdata/config.json",
        ]);
    if kind == "renderer" {
        run.args(["--template", "testdata/template.json"]);
    }
    let got: Value = serde_json::from_str(&ok(&mut run, "plugin test --input")).unwrap();
    match kind {
        "renderer" => {
            assert_eq!(got[0]["metadata"]["name"], "ws-2x8fkdtr3b1z", "{got}");
            assert_eq!(got[1]["data"]["path"], "root:org:team", "{got}");
        }
        "namer" => assert_eq!(
            got,
            serde_json::json!({"name": "team-a-w1", "namespace": "2x8fkdtr3b1z"}),
            "plugin test runs in cluster 2x8fkdtr3b1z by default"
        ),
        _ => assert_eq!(got, expected),
    }
    dir
}

fn no_prepare(_: &Path, _: &mut Command) {}

#[test]
fn rust_plugins_from_new_to_tested() {
    let scratch = Scratch::new("rust");
    let repo = repo();
    // The std and dependency builds the examples already made (same profile).
    let wasm_target = repo.join("target/wasm");
    let native_target = repo.join("target/scaffold-native");
    for kind in ["mutator", "namer", "projector", "renderer"] {
        let dir = new_build_and_test(
            &scratch.0,
            "rust",
            kind,
            &no_prepare,
            &["--target-dir", wasm_target.to_str().unwrap()],
        );
        assert!(
            dir.join("Cargo.lock").is_file(),
            "the SDK's tested versions are pinned"
        );
        let stdout = ok(
            Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
                .arg("test")
                .current_dir(&dir)
                .env("CARGO_TARGET_DIR", &native_target)
                .env_remove("RUSTFLAGS")
                .env_remove("CARGO_ENCODED_RUSTFLAGS")
                .env_remove("CARGO_BUILD_TARGET"),
            &format!("cargo test ({kind})"),
        );
        assert!(stdout.contains("test result: ok"), "{stdout}");
        assert!(stdout.contains("examples_hold ... ok"), "{stdout}");
    }
}

#[test]
fn python_plugins_from_new_to_tested() {
    let scratch = Scratch::new("python");
    // A fresh virtualenv (seeing the machine's componentize-py and pytest)
    // with the SDK installed from the repository path, as the README says.
    let venv = PythonEnv::new(&scratch.0);
    let python = &venv.python;
    let in_venv = |_: &Path, cmd: &mut Command| venv.activate(cmd);
    for kind in ["mutator", "namer", "projector", "renderer"] {
        let dir = new_build_and_test(&scratch.0, "python", kind, &in_venv, &[]);
        let out = Command::new(python)
            .args(["-m", "unittest", "-v"])
            .current_dir(&dir)
            .output()
            .unwrap();
        assert_success(&out, &format!("python -m unittest ({kind})"));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("test_examples_hold") && stderr.trim_end().ends_with("OK"),
            "{stderr}"
        );
        let stdout = ok(
            Command::new(python)
                .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
                .current_dir(&dir),
            &format!("pytest ({kind})"),
        );
        assert!(stdout.contains("passed"), "{stdout}");
    }
}

#[test]
fn javascript_plugins_from_new_to_tested() {
    let scratch = Scratch::new("js");
    for kind in ["mutator", "namer", "projector", "renderer"] {
        let install = |dir: &Path, _: &mut Command| {
            // The README's first step: the SDK from the checkout, componentize-js
            // and rolldown from the registry (cached by examples/build.sh).
            ok(
                Command::new("npm")
                    .args([
                        "install",
                        "--no-audit",
                        "--no-fund",
                        "--prefer-offline",
                        "--loglevel=error",
                    ])
                    .current_dir(dir),
                "npm install",
            );
        };
        let dir = new_build_and_test(&scratch.0, "js", kind, &install, &[]);
        let out = ok(
            Command::new("node").arg("--test").current_dir(&dir),
            &format!("node --test ({kind})"),
        );
        assert!(
            out.contains("# fail 0") && !out.contains("# pass 0"),
            "{out}"
        );
    }
}

/// False, with the reason on stderr, when `go` is not on PATH: the Go steps
/// are skipped rather than failed on a machine without Go.
fn have_go(test: &str) -> bool {
    let found = Command::new("go")
        .args(["env", "GOVERSION"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        eprintln!("{test}: Go steps SKIPPED, `go` is not on PATH (install Go 1.24 or newer)");
    }
    found
}

#[test]
fn go_plugins_from_new_to_tested() {
    if !have_go("go_plugins_from_new_to_tested") {
        return;
    }
    let scratch = Scratch::new("go");
    for kind in ["mutator", "namer", "projector", "renderer"] {
        let dir = new_build_and_test(&scratch.0, "go", kind, &no_prepare, &[]);
        let gomod = std::fs::read_to_string(dir.join("go.mod")).unwrap();
        assert!(
            gomod.contains(&format!(
                "replace syncweave.dev/sdk/go => {}",
                repo().join("sdk/go").display()
            )),
            "the SDK comes from this checkout: {gomod}"
        );
        // The README's first step, as generated: the plugin's own tests run
        // natively, with no network (the SDK is a local replace, standard Go
        // only).
        let out = ok(
            Command::new("go")
                .args(["test", "-v", "./..."])
                .current_dir(&dir)
                .env("GOPROXY", "off")
                .env("GOTOOLCHAIN", "local"),
            &format!("go test ({kind})"),
        );
        assert!(
            out.contains("--- PASS: TestExamplesHold") && !out.contains("FAIL"),
            "{out}"
        );
        ok(
            Command::new("go")
                .args(["vet", "./..."])
                .current_dir(&dir)
                .env("GOPROXY", "off")
                .env("GOTOOLCHAIN", "local"),
            &format!("go vet ({kind})"),
        );
    }
    // A Go plugin's component, as the agent sees it: a 0.1 world importing
    // WASI (linked with nothing granted).
    let inspect = ok(
        syncweave(&scratch.0)
            .args(["plugin", "inspect", "--json"])
            .arg(scratch.0.join("out/my-go-mutator.wasm")),
        "plugin inspect",
    );
    let info: Value = serde_json::from_str(&inspect).unwrap();
    let imports: Vec<&str> = info["imports"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        imports.contains(&"syncweave:plugin/host-log@0.1.0")
            && imports.iter().any(|i| i.starts_with("wasi:")),
        "{imports:?}"
    );
}

/// The Go example of contract 0.2 (examples/go-labeler), built by `plugin
/// build` and run by the host: its examples only pass when the host serves
/// their read fixtures (the Namespace whose labels it copies) through the
/// `reads` import.
#[test]
fn go_example_of_contract_02_reads_its_fixtures() {
    if !have_go("go_example_of_contract_02_reads_its_fixtures") {
        return;
    }
    let scratch = Scratch::new("go-labeler");
    let out_dir = scratch.0.join("out");
    let built = ok(
        syncweave(&scratch.0)
            .args(["plugin", "build"])
            .arg(repo().join("examples/go-labeler"))
            .arg("--out")
            .arg(&out_dir),
        "plugin build examples/go-labeler",
    );
    let wasm = out_dir.join("go-labeler.wasm");
    assert!(built.contains("go-labeler\t"), "{built}");

    let info: Value = serde_json::from_str(&ok(
        syncweave(&scratch.0)
            .args(["plugin", "inspect", "--json"])
            .arg(&wasm),
        "plugin inspect go-labeler",
    ))
    .unwrap();
    assert_eq!(info["world"], "mutator", "{info}");
    assert_eq!(info["contract"], "0.2.0", "{info}");
    assert!(
        info["imports"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i == "syncweave:plugin/reads@0.2.0"),
        "{info}"
    );
    let examples = info["describe"]["examples"].as_array().unwrap();
    assert!(
        examples
            .iter()
            .all(|e| e["reads"][0]["resource"]["resource"] == "namespaces"),
        "every example brings the Namespace it reads: {info}"
    );

    let out = ok(
        syncweave(&scratch.0)
            .args(["plugin", "test"])
            .arg(&wasm)
            .arg("--examples"),
        "plugin test --examples go-labeler",
    );
    assert!(
        out.contains(&format!("{} passed, 0 failed", examples.len())),
        "{out}"
    );
}

#[test]
fn plugin_new_and_build_refuse_bad_input() {
    let scratch = Scratch::new("bad");
    let run = |args: &[&str]| -> (bool, String) {
        let out = syncweave(&scratch.0).args(args).output().unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };

    let (success, err) = run(&[
        "plugin",
        "new",
        "My_Plugin",
        "--lang",
        "rust",
        "--kind",
        "mutator",
    ]);
    assert!(!success);
    assert!(
        err.contains("\"My_Plugin\" is not valid") && err.contains("lower-case letters"),
        "{err}"
    );
    let (success, err) = run(&["plugin", "new", "fn", "--lang", "js", "--kind", "namer"]);
    assert!(!success && err.contains("reserved"), "{err}");
    let (success, err) = run(&["plugin", "new", "p", "--lang", "cobol", "--kind", "mutator"]);
    assert!(
        !success && err.contains("--lang") && err.contains("python") && err.contains("go"),
        "{err}"
    );
    let (success, err) = run(&["plugin", "new", "p", "--lang", "rust", "--kind", "filter"]);
    assert!(
        !success && err.contains("--kind") && err.contains("projector"),
        "{err}"
    );

    // Nothing is overwritten.
    let taken = scratch.0.join("taken");
    std::fs::create_dir_all(&taken).unwrap();
    std::fs::write(taken.join("notes.txt"), "mine").unwrap();
    let (success, err) = run(&[
        "plugin",
        "new",
        "p",
        "--lang",
        "python",
        "--kind",
        "mutator",
        "--dir",
        taken.to_str().unwrap(),
    ]);
    assert!(!success && err.contains("is not empty"), "{err}");
    assert_eq!(std::fs::read_dir(&taken).unwrap().count(), 1);
    assert_eq!(
        std::fs::read_to_string(taken.join("notes.txt")).unwrap(),
        "mine"
    );

    let (success, err) = run(&[
        "plugin",
        "new",
        "p",
        "--lang",
        "rust",
        "--kind",
        "mutator",
        "--repo",
        scratch.0.to_str().unwrap(),
    ]);
    assert!(
        !success && err.contains("not a syncweave checkout") && err.contains("sdk/rust"),
        "{err}"
    );

    // plugin build: not a project, and tools that are missing are named with
    // how to install them, nothing installed behind the user's back.
    let (success, err) = run(&["plugin", "build", scratch.0.to_str().unwrap()]);
    assert!(
        !success && err.contains("not a plugin project") && err.contains("plugin new"),
        "{err}"
    );
    let (success, _) = run(&["plugin", "new", "py", "--lang", "python", "--kind", "namer"]);
    assert!(success);
    let out = syncweave(&scratch.0)
        .args(["plugin", "build", "py"])
        .env("PATH", "/nonexistent")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success()
            && err.contains("componentize-py")
            && err.contains("pip install componentize-py==0.25.1"),
        "{err}"
    );
    let (success, _) = run(&["plugin", "new", "js", "--lang", "js", "--kind", "mutator"]);
    assert!(success);
    let (success, err) = run(&["plugin", "build", "js"]);
    assert!(
        !success && err.contains("npm install") && err.contains("devDependencies"),
        "{err}"
    );
    std::fs::write(
        scratch.0.join("js/package.json"),
        r#"{"name": "js", "syncweave": {"world": "mutate"}}"#,
    )
    .unwrap();
    let (success, err) = run(&["plugin", "build", "js"]);
    assert!(
        !success && err.contains("\"mutate\"") && err.contains("mutator, namer"),
        "{err}"
    );

    // Go: no go on PATH names Go and where to get it; a main package that
    // imports no role package names the role packages.
    let (success, _) = run(&["plugin", "new", "gop", "--lang", "go", "--kind", "namer"]);
    assert!(success);
    let out = syncweave(&scratch.0)
        .args(["plugin", "build", "gop"])
        .env("PATH", "/nonexistent")
        .env_remove("GOROOT")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("go is needed") && err.contains("go.dev/dl"),
        "{err}"
    );
    if !have_go("plugin_new_and_build_refuse_bad_input") {
        return;
    }
    let plugin_go = scratch.0.join("gop/plugin.go");
    let text = std::fs::read_to_string(&plugin_go).unwrap();
    std::fs::write(
        &plugin_go,
        text.replace(
            "syncweave.dev/sdk/go/namer\"",
            "syncweave.dev/sdk/go/namer\"\n\t_ \"syncweave.dev/sdk/go/v02/namer\"",
        ),
    )
    .unwrap();
    let (success, err) = run(&["plugin", "build", "gop"]);
    assert!(
        !success && err.contains("more than one role package"),
        "{err}"
    );
}
