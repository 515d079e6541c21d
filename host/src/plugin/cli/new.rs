//! `syncweave plugin new`: a plugin project, in Rust, Python, JavaScript or Go,
//! that builds with `plugin build` and passes `plugin test --examples` and its
//! own unit tests as it is written.
//!
//! The project depends on the guest SDK of a syncweave checkout by path (the
//! SDKs are not published to registries): the checkout given with `--repo`,
//! else the one around the current or target directory, else the one this
//! binary was built from.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use clap::{Args, ValueEnum};

use super::project::{self, Lang};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Kind {
    /// Rewrites objects on their way between kcp and the service cluster.
    Mutator,
    /// Names objects on the service cluster.
    Namer,
    /// Transforms CRDs before they are published to kcp.
    Projector,
    /// Renders templates (InitTemplates) into objects.
    Renderer,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Mutator => "mutator",
            Kind::Namer => "namer",
            Kind::Projector => "projector",
            Kind::Renderer => "renderer",
        }
    }
}

#[derive(Debug, Args)]
pub struct NewArgs {
    /// The plugin's name: lower-case letters, digits and '-', starting with a
    /// letter (it becomes the crate, PyPI or npm package or Go module name and the
    /// component's file name).
    pub name: String,
    /// The language to write the plugin in.
    #[arg(long, value_enum)]
    pub lang: Lang,
    /// What the plugin does: the WIT world it targets.
    #[arg(long, value_enum)]
    pub kind: Kind,
    /// Directory to create (default: ./NAME). It must not exist or be empty.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// The syncweave checkout whose sdk/ the project depends on (default: the
    /// checkout around the current directory or DIR, else the one this binary
    /// was built from). Also $SYNCWEAVE_REPO.
    #[arg(long, value_name = "DIR", env = "SYNCWEAVE_REPO")]
    pub repo: Option<PathBuf>,
}

pub fn run(args: NewArgs) -> anyhow::Result<()> {
    check_name(&args.name)?;
    let dir = args
        .dir
        .clone()
        .unwrap_or_else(|| PathBuf::from(&args.name));
    check_target(&dir)?;
    let repo = find_checkout(args.repo.as_deref(), &dir)?;
    let files = render(args.lang, args.kind, &args.name, &repo)?;
    write_project(&dir, &files)?;

    let shown = dir.display();
    println!(
        "created {} {} plugin {} in {shown} (SDK from {})",
        lang_name(args.lang),
        args.kind.as_str(),
        args.name,
        repo.display()
    );
    println!("next:");
    println!("  cd {shown}");
    match args.lang {
        Lang::Rust => println!("  cargo test"),
        Lang::Python => {
            println!(
                "  python3 -m pip install {} componentize-py=={}",
                repo.join("sdk/python").display(),
                syncweave_runtime::build::python::COMPONENTIZE_PY_VERSION
            );
            println!("  python3 -m unittest");
        }
        Lang::Js => {
            println!("  npm install");
            println!("  npm test");
        }
        Lang::Go => println!("  go test ./..."),
    }
    // --out: inside a checkout the default is the checkout's target/plugins.
    println!("  syncweave plugin build . --out target/plugins");
    println!(
        "  syncweave plugin test target/plugins/{}.wasm --examples",
        args.name
    );
    Ok(())
}

fn lang_name(lang: Lang) -> &'static str {
    match lang {
        Lang::Rust => "Rust",
        Lang::Python => "Python",
        Lang::Js => "JavaScript",
        Lang::Go => "Go",
    }
}

/// Names a crate, a PyPI distribution and an npm package can all take, and
/// that do not collide with what the project itself uses.
fn check_name(name: &str) -> anyhow::Result<()> {
    const RESERVED: &[&str] = &[
        // Rust keywords and the standard crates (the crate's lib name is the name
        // with '-' replaced by '_').
        "as",
        "async",
        "await",
        "box",
        "break",
        "const",
        "continue",
        "crate",
        "dyn",
        "else",
        "enum",
        "extern",
        "false",
        "fn",
        "for",
        "gen",
        "if",
        "impl",
        "in",
        "let",
        "loop",
        "macro",
        "match",
        "mod",
        "move",
        "mut",
        "pub",
        "ref",
        "return",
        "self",
        "static",
        "struct",
        "super",
        "trait",
        "true",
        "try",
        "type",
        "unsafe",
        "use",
        "where",
        "while",
        "yield",
        "std",
        "core",
        "alloc",
        "proc-macro",
        "test",
        // The SDK the project depends on.
        "syncweave-plugin",
    ];
    let valid = !name.is_empty()
        && name.len() <= 64
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.ends_with('-')
        && !name.contains("--");
    if !valid {
        anyhow::bail!(
            "plugin name {name:?} is not valid: use lower-case letters, digits and single '-' \
             between them, starting with a letter, at most 64 characters (e.g. team-labels); \
             it becomes the package name and the component's file name"
        );
    }
    if RESERVED.contains(&name) {
        anyhow::bail!(
            "plugin name {name:?} is reserved (a Rust keyword, a standard crate or the SDK's own \
             name); choose another, e.g. {name}-plugin"
        );
    }
    Ok(())
}

/// The target must not exist, or be an empty directory: nothing is overwritten.
fn check_target(dir: &Path) -> anyhow::Result<()> {
    match std::fs::read_dir(dir) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                anyhow::bail!(
                    "{} already exists and is not empty; choose another name or --dir, or remove it",
                    dir.display()
                );
            }
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(_) if dir.exists() && !dir.is_dir() => anyhow::bail!(
            "{} exists and is not a directory; choose another name or --dir",
            dir.display()
        ),
        Err(e) => Err(e).with_context(|| format!("reading {}", dir.display())),
    }
}

/// A syncweave checkout: the contract and all four SDKs.
fn is_checkout(dir: &Path) -> bool {
    checkout_missing(dir).is_empty()
}

fn checkout_missing(dir: &Path) -> Vec<&'static str> {
    [
        "wit/plugin.wit",
        "sdk/rust/Cargo.toml",
        "sdk/python/pyproject.toml",
        "sdk/js/package.json",
        "sdk/go/go.mod",
    ]
    .into_iter()
    .filter(|f| !dir.join(f).is_file())
    .collect()
}

fn find_checkout(explicit: Option<&Path>, target: &Path) -> anyhow::Result<PathBuf> {
    let repo = match explicit {
        Some(repo) => {
            let missing = checkout_missing(repo);
            if !missing.is_empty() {
                anyhow::bail!(
                    "--repo {}: not a syncweave checkout (missing {}); pass the root of a clone of \
                     the syncweave repository",
                    repo.display(),
                    missing.join(", ")
                );
            }
            repo.to_path_buf()
        }
        None => {
            let cwd = std::env::current_dir().context("reading the current directory")?;
            let target_abs = cwd.join(target);
            // The binary's own checkout: where it was built (still there for
            // `cargo run` and `cargo install --path host`).
            let built_from = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
            cwd.ancestors()
                .chain(target_abs.ancestors())
                .chain(std::iter::once(built_from.as_path()))
                .find(|d| is_checkout(d))
                .map(Path::to_path_buf)
                .ok_or_else(|| {
                    anyhow::anyhow!(
                        "no syncweave checkout found for the SDK (the project depends on its \
                         sdk/rust, sdk/python, sdk/js or sdk/go): pass --repo <path to a clone of the \
                         syncweave repository> (or set SYNCWEAVE_REPO)"
                    )
                })?
        }
    };
    let repo = repo
        .canonicalize()
        .with_context(|| format!("resolving {}", repo.display()))?;
    // The project is built against this binary's contract: the SDK must speak it.
    let wit = std::fs::read_to_string(repo.join("wit/plugin.wit"))
        .with_context(|| format!("reading {}", repo.join("wit/plugin.wit").display()))?;
    let theirs = project::wit_package(&wit)
        .map(|(n, v)| format!("{n}@{v}"))
        .unwrap_or_default();
    let ours = project::contract();
    if theirs != ours {
        anyhow::bail!(
            "the checkout at {} implements {theirs}, but this syncweave binary builds plugins for \
             {ours}; use the syncweave binary of that checkout, or pass --repo with a matching one",
            repo.display()
        );
    }
    Ok(repo)
}

/// One file of a project: path relative to its root, and contents.
type File = (String, String);

fn fill(template: &str, vars: &[(&str, String)]) -> String {
    let mut out = template.to_string();
    for (key, value) in vars {
        out = out.replace(&format!("{{{{{key}}}}}"), value);
    }
    out
}

/// `file://` URL of an absolute path, for a PEP 508 direct reference.
fn file_url(path: &Path) -> String {
    let mut url = String::from("file://");
    for b in path.to_string_lossy().bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            url.push(b as char);
        } else {
            url.push_str(&format!("%{b:02X}"));
        }
    }
    url
}

/// The worked example of each kind as files, so that `plugin test --input`
/// can be tried as the README says.
fn testdata(kind: Kind) -> Vec<File> {
    let (input, config) = match kind {
        Kind::Mutator => (
            r#"{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg", "namespace": "default"}}"#,
            r#"{"labels": {"team": "platform"}}"#,
        ),
        Kind::Namer => (
            r#"{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1", "namespace": "default"}}"#,
            r#"{"prefix": "team-a-"}"#,
        ),
        Kind::Projector => (
            r#"{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "widgets.internal.example.com"}, "spec": {"group": "internal.example.com", "scope": "Namespaced", "names": {"plural": "widgets", "kind": "Widget"}}}"#,
            r#"{"group": "example.org"}"#,
        ),
        Kind::Renderer => (
            r#"{"ClusterName": "2x8fkdtr3b1z", "ClusterPath": "root:org:team"}"#,
            "{}",
        ),
    };
    let mut files = vec![
        ("testdata/input.json".to_string(), format!("{input}\n")),
        ("testdata/config.json".to_string(), format!("{config}\n")),
    ];
    if kind == Kind::Renderer {
        files.push((
            "testdata/template.json".to_string(),
            r#"[
  {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ws-${ClusterName}"}},
  {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "info", "namespace": "ws-${ClusterName}"},
   "data": {"path": "${ClusterPath}"}}
]
"#
            .to_string(),
        ));
    }
    files
}

fn render(lang: Lang, kind: Kind, name: &str, repo: &Path) -> anyhow::Result<Vec<File>> {
    let description = match kind {
        Kind::Mutator => "Sets the labels named in its config on every object",
        Kind::Namer => {
            "Names each object after itself with a prefix, in a namespace per logical cluster"
        }
        Kind::Projector => "Publishes a CRD under the API group named in its config",
        Kind::Renderer => "Renders JSON templates with ${Key} placeholders into objects",
    };
    let (trait_name, function) = match (lang, kind) {
        (Lang::Js, Kind::Mutator) => ("defineMutator", "mutate"),
        (Lang::Js, Kind::Namer) => ("defineNamer", "nameObject"),
        (Lang::Js, Kind::Projector) => ("defineProjector", "project"),
        (Lang::Js, Kind::Renderer) => ("defineRenderer", "render"),
        (Lang::Go, Kind::Mutator) => ("Plugin", "Mutate"),
        (Lang::Go, Kind::Namer) => ("Plugin", "Name"),
        (Lang::Go, Kind::Projector) => ("Plugin", "Project"),
        (Lang::Go, Kind::Renderer) => ("Plugin", "Render"),
        (_, Kind::Mutator) => ("Mutator", "mutate"),
        (Lang::Python, Kind::Namer) => ("Namer", "name_object"),
        (_, Kind::Namer) => ("Namer", "name"),
        (_, Kind::Projector) => ("Projector", "project"),
        (_, Kind::Renderer) => ("Renderer", "render"),
    };
    let interface = match kind {
        Kind::Mutator => "mutation",
        Kind::Namer => "naming",
        Kind::Projector => "projection",
        Kind::Renderer => "rendering",
    };
    let try_flags = match kind {
        Kind::Renderer => {
            "--input testdata/input.json --config testdata/config.json --template testdata/template.json"
        }
        _ => "--input testdata/input.json --config testdata/config.json",
    };
    let sdk = |lang: &str| repo.join("sdk").join(lang);
    let mut interface_class = interface.to_string();
    interface_class[..1].make_ascii_uppercase();
    let vars: Vec<(&str, String)> = vec![
        ("name", name.to_string()),
        ("description", description.to_string()),
        ("kind", kind.as_str().to_string()),
        ("trait", trait_name.to_string()),
        ("function", function.to_string()),
        ("interface", interface.to_string()),
        ("interface_class", interface_class),
        ("try_flags", try_flags.to_string()),
        ("sdk_rust", sdk("rust").display().to_string()),
        ("sdk_python", sdk("python").display().to_string()),
        ("sdk_python_url", file_url(&sdk("python"))),
        ("sdk_js", sdk("js").display().to_string()),
        ("sdk_js_spec", format!("file:{}", sdk("js").display())),
        ("sdk_go", sdk("go").display().to_string()),
    ];
    let t = |text: &str| fill(text, &vars);
    let mut files: Vec<File> = match lang {
        Lang::Rust => {
            let lib = match kind {
                Kind::Mutator => include_str!("templates/rust/mutator.rs"),
                Kind::Namer => include_str!("templates/rust/namer.rs"),
                Kind::Projector => include_str!("templates/rust/projector.rs"),
                Kind::Renderer => include_str!("templates/rust/renderer.rs"),
            };
            let mut files = vec![
                (
                    "Cargo.toml".into(),
                    t(include_str!("templates/rust/Cargo.toml")),
                ),
                ("src/lib.rs".into(), t(lib)),
                (
                    "README.md".into(),
                    t(include_str!("templates/rust/README.md")),
                ),
                (
                    ".gitignore".into(),
                    include_str!("templates/rust/gitignore").into(),
                ),
            ];
            // The versions the SDK is built and tested with (cargo drops what
            // the project does not use), so a fresh project resolves offline.
            if let Ok(lock) = std::fs::read_to_string(repo.join("plugins/Cargo.lock")) {
                files.push(("Cargo.lock".into(), lock));
            }
            files
        }
        Lang::Python => {
            let (plugin, test) = match kind {
                Kind::Mutator => (
                    include_str!("templates/python/mutator.py"),
                    include_str!("templates/python/test_mutator.py"),
                ),
                Kind::Namer => (
                    include_str!("templates/python/namer.py"),
                    include_str!("templates/python/test_namer.py"),
                ),
                Kind::Projector => (
                    include_str!("templates/python/projector.py"),
                    include_str!("templates/python/test_projector.py"),
                ),
                Kind::Renderer => (
                    include_str!("templates/python/renderer.py"),
                    include_str!("templates/python/test_renderer.py"),
                ),
            };
            vec![
                (
                    "pyproject.toml".into(),
                    t(include_str!("templates/python/pyproject.toml")),
                ),
                ("app.py".into(), t(include_str!("templates/python/app.py"))),
                ("plugin.py".into(), t(plugin)),
                ("test_plugin.py".into(), t(test)),
                (
                    "README.md".into(),
                    t(include_str!("templates/python/README.md")),
                ),
                (
                    ".gitignore".into(),
                    include_str!("templates/python/gitignore").into(),
                ),
            ]
        }
        Lang::Js => {
            let (plugin, test) = match kind {
                Kind::Mutator => (
                    include_str!("templates/js/mutator.js"),
                    include_str!("templates/js/test_mutator.js"),
                ),
                Kind::Namer => (
                    include_str!("templates/js/namer.js"),
                    include_str!("templates/js/test_namer.js"),
                ),
                Kind::Projector => (
                    include_str!("templates/js/projector.js"),
                    include_str!("templates/js/test_projector.js"),
                ),
                Kind::Renderer => (
                    include_str!("templates/js/renderer.js"),
                    include_str!("templates/js/test_renderer.js"),
                ),
            };
            vec![
                (
                    "package.json".into(),
                    t(include_str!("templates/js/package.json")),
                ),
                (
                    "component.js".into(),
                    t(include_str!("templates/js/component.js")),
                ),
                ("plugin.js".into(), t(plugin)),
                ("test/plugin.test.js".into(), t(test)),
                (
                    "README.md".into(),
                    t(include_str!("templates/js/README.md")),
                ),
                (
                    ".gitignore".into(),
                    include_str!("templates/js/gitignore").into(),
                ),
            ]
        }
        Lang::Go => {
            let (plugin, test) = match kind {
                Kind::Mutator => (
                    include_str!("templates/go/mutator.go"),
                    include_str!("templates/go/test_mutator.go"),
                ),
                Kind::Namer => (
                    include_str!("templates/go/namer.go"),
                    include_str!("templates/go/test_namer.go"),
                ),
                Kind::Projector => (
                    include_str!("templates/go/projector.go"),
                    include_str!("templates/go/test_projector.go"),
                ),
                Kind::Renderer => (
                    include_str!("templates/go/renderer.go"),
                    include_str!("templates/go/test_renderer.go"),
                ),
            };
            vec![
                ("go.mod".into(), t(include_str!("templates/go/go.mod"))),
                ("plugin.go".into(), t(plugin)),
                ("plugin_test.go".into(), t(test)),
                (
                    "README.md".into(),
                    t(include_str!("templates/go/README.md")),
                ),
                (
                    ".gitignore".into(),
                    include_str!("templates/go/gitignore").into(),
                ),
            ]
        }
    };
    files.extend(testdata(kind));
    // A placeholder the templates use but no variable fills is a bug here.
    for (path, text) in &files {
        if let Some(at) = vars
            .iter()
            .find_map(|(k, _)| text.find(&format!("{{{{{k}}}}}")))
        {
            anyhow::bail!(
                "internal error: template {path} has an unfilled placeholder at byte {at}"
            );
        }
    }
    Ok(files)
}

/// Writes the files into a staging directory beside `dir`, then renames it
/// into place: an interrupted `plugin new` leaves no half-written project.
fn write_project(dir: &Path, files: &[File]) -> anyhow::Result<()> {
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&parent).with_context(|| format!("creating {}", parent.display()))?;
    let base = dir
        .file_name()
        .ok_or_else(|| anyhow::anyhow!("{}: not a usable directory name", dir.display()))?;
    let staging = parent.join(format!(
        ".{}.syncweave-new-{}",
        base.to_string_lossy(),
        std::process::id()
    ));
    let result = (|| -> anyhow::Result<()> {
        for (path, text) in files {
            let full = staging.join(path);
            if let Some(p) = full.parent() {
                std::fs::create_dir_all(p).with_context(|| format!("creating {}", p.display()))?;
            }
            std::fs::write(&full, text).with_context(|| format!("writing {}", full.display()))?;
        }
        if dir.exists() {
            // Checked empty above; rename cannot replace a directory on every OS.
            std::fs::remove_dir(dir).with_context(|| format!("replacing {}", dir.display()))?;
        }
        std::fs::rename(&staging, dir)
            .with_context(|| format!("moving the project into {}", dir.display()))
    })();
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&staging);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("..")
            .canonicalize()
            .unwrap()
    }

    #[test]
    fn names_must_suit_every_package_manager() {
        for good in ["a", "team-labels", "x1-y2", "labels2"] {
            check_name(good).unwrap();
        }
        for bad in [
            "", "Labels", "1abc", "-a", "a-", "a--b", "a_b", "a.b", "a b", "été",
        ] {
            let err = check_name(bad).unwrap_err().to_string();
            assert!(err.contains("lower-case letters"), "{bad}: {err}");
        }
        let err = check_name("fn").unwrap_err().to_string();
        assert!(
            err.contains("reserved") && err.contains("fn-plugin"),
            "{err}"
        );
        assert!(check_name("syncweave-plugin").is_err());
        assert!(check_name(&"a".repeat(65)).is_err());
    }

    #[test]
    fn an_existing_non_empty_directory_is_refused() {
        let dir = std::env::temp_dir().join(format!("sw-new-target-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        check_target(&dir).unwrap();
        std::fs::create_dir_all(&dir).unwrap();
        check_target(&dir).unwrap();
        std::fs::write(dir.join("keep"), "x").unwrap();
        let err = check_target(&dir).unwrap_err().to_string();
        assert!(err.contains("not empty"), "{err}");
        let err = check_target(&dir.join("keep")).unwrap_err().to_string();
        assert!(err.contains("not a directory"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn every_template_renders_completely() {
        let repo = repo();
        for lang in [Lang::Rust, Lang::Python, Lang::Js, Lang::Go] {
            for kind in [Kind::Mutator, Kind::Namer, Kind::Projector, Kind::Renderer] {
                let files = render(lang, kind, "my-plugin", &repo).unwrap();
                let names: Vec<&str> = files.iter().map(|(p, _)| p.as_str()).collect();
                assert!(names.contains(&"README.md"), "{names:?}");
                assert!(names.contains(&"testdata/input.json"), "{names:?}");
                for (path, text) in &files {
                    assert!(!text.contains("{{name}}"), "{path}");
                    if path.ends_with(".json") {
                        serde_json::from_str::<serde_json::Value>(text)
                            .unwrap_or_else(|e| panic!("{lang:?} {kind:?} {path}: {e}"));
                    }
                }
                let all: String = files.iter().map(|(_, t)| t.as_str()).collect();
                assert!(all.contains("my-plugin"), "{lang:?} {kind:?}");
                assert!(
                    all.contains(&repo.join("sdk").display().to_string()),
                    "{lang:?} {kind:?}: the SDK is referenced by its path"
                );
            }
        }
    }

    #[test]
    fn scaffolds_declare_the_tested_tool_versions() {
        let repo = repo();
        let files = render(Lang::Js, Kind::Mutator, "p", &repo).unwrap();
        let pkg: serde_json::Value = serde_json::from_str(&files[0].1).unwrap();
        let dev = &pkg["devDependencies"];
        assert_eq!(
            dev["@bytecodealliance/componentize-js"],
            syncweave_runtime::build::js::COMPONENTIZE_JS_VERSION
        );
        assert_eq!(
            dev["rolldown"],
            syncweave_runtime::build::js::ROLLDOWN_VERSION
        );
        assert_eq!(pkg["syncweave"]["world"], "mutator");
        // The examples build with the same tools.
        let example: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(repo.join("examples/js-mutator/package.json")).unwrap(),
        )
        .unwrap();
        for tool in ["@bytecodealliance/componentize-js", "rolldown"] {
            assert_eq!(example["devDependencies"][tool], dev[tool], "{tool}");
        }
        let build_sh = std::fs::read_to_string(repo.join("examples/build.sh")).unwrap();
        assert!(
            build_sh.contains(&format!(
                "componentize_py_version=\"{}\"",
                syncweave_runtime::build::python::COMPONENTIZE_PY_VERSION
            )),
            "examples/build.sh installs the componentize-py the builder names"
        );
        let files = render(Lang::Python, Kind::Namer, "p", &repo).unwrap();
        let app = &files.iter().find(|(p, _)| p == "app.py").unwrap().1;
        assert!(app.contains("Meta, Naming = exports(PLUGIN)"), "{app}");
    }

    #[test]
    fn the_sdks_are_versioned_with_the_contract() {
        let repo = repo();
        let (_, version) = project::wit_package(project::WIT).unwrap();
        let js: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(repo.join("sdk/js/package.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(js["version"], version);
        let py = std::fs::read_to_string(repo.join("sdk/python/pyproject.toml")).unwrap();
        assert!(py.contains(&format!("\nversion = \"{version}\"\n")), "{py}");
        let rust = std::fs::read_to_string(repo.join("sdk/rust/Cargo.toml")).unwrap();
        assert!(
            rust.contains(&format!("\nversion = \"{version}\"\n")),
            "{rust}"
        );
        let go = std::fs::read_to_string(repo.join("sdk/go/plugin/doc.go")).unwrap();
        assert!(
            go.contains(&format!("\nconst Version = \"{version}\"\n")),
            "{go}"
        );
    }

    #[test]
    fn a_project_is_written_whole() {
        let root = std::env::temp_dir().join(format!("sw-new-write-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let dir = root.join("p");
        let files = vec![
            ("a.txt".to_string(), "a".to_string()),
            ("sub/b.txt".to_string(), "b".to_string()),
        ];
        write_project(&dir, &files).unwrap();
        assert_eq!(std::fs::read_to_string(dir.join("sub/b.txt")).unwrap(), "b");
        // Only the project is left: no staging directory.
        assert_eq!(std::fs::read_dir(&root).unwrap().count(), 1);
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn checkouts_are_found_and_checked() {
        let repo = repo();
        assert_eq!(find_checkout(Some(&repo), Path::new("x")).unwrap(), repo);
        let err = find_checkout(Some(Path::new("/")), Path::new("x"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("not a syncweave checkout") && err.contains("wit/plugin.wit"),
            "{err}"
        );
        assert_eq!(
            file_url(Path::new("/a b/sdk")),
            "file:///a%20b/sdk".to_string()
        );
    }
}
