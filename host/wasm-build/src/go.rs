//! Building Go plugins: standard Go (no TinyGo) compiles the project's main
//! package with `GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared`, then
//! wit-component embeds the world's types and wraps the module into a
//! component, adapting its WASI preview 1 imports with the preview 1
//! *reactor* adapter of wasmtime 48 (`wasi-preview1-component-adapter-provider`).
//!
//! The world and the contract version come from the project itself: the Go
//! SDK has one role package per world and contract
//! (`syncweave.dev/sdk/go/mutator`, …, `syncweave.dev/sdk/go/v02/mutator`, …),
//! and `go list` says which one the main package imports. The module's
//! `//go:wasmexport`s are the role package's, so what it imports is what it
//! exports. The contracts' WIT is the one [`crate::contract`] embeds for
//! every language.
//!
//! `go` is the one on PATH (else `$GOROOT/bin/go`);
//! it must be Go 1.24 or newer (`//go:wasmexport` and c-shared for wasip1).
//! Unless `GOTOOLCHAIN` is set, the build runs with `GOTOOLCHAIN=local`, so
//! that a go.mod asking for a newer Go is an error rather than a download.

use std::path::{Path, PathBuf};
use std::process::Command;

use wasi_preview1_component_adapter_provider::{
    WASI_SNAPSHOT_PREVIEW1_ADAPTER_NAME, WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER,
};

use crate::{
    BuildError, BuiltComponent, ContractVersion, Scratch, find_on_path, install_component, tail,
};

/// The Go SDK's module path.
pub const SDK_MODULE: &str = "syncweave.dev/sdk/go";
/// The oldest Go that can build a plugin: `//go:wasmexport` came in 1.24.
pub const MIN_GO: (u32, u32) = (1, 24);

/// The role packages of the Go SDK: import path, world, contract.
pub const ROLE_PACKAGES: [(&str, &str, ContractVersion); 8] = [
    (
        "syncweave.dev/sdk/go/mutator",
        "mutator",
        ContractVersion::V0_1,
    ),
    ("syncweave.dev/sdk/go/namer", "namer", ContractVersion::V0_1),
    (
        "syncweave.dev/sdk/go/projector",
        "projector",
        ContractVersion::V0_1,
    ),
    (
        "syncweave.dev/sdk/go/renderer",
        "renderer",
        ContractVersion::V0_1,
    ),
    (
        "syncweave.dev/sdk/go/v02/mutator",
        "mutator",
        ContractVersion::V0_2,
    ),
    (
        "syncweave.dev/sdk/go/v02/namer",
        "namer",
        ContractVersion::V0_2,
    ),
    (
        "syncweave.dev/sdk/go/v02/projector",
        "projector",
        ContractVersion::V0_2,
    ),
    (
        "syncweave.dev/sdk/go/v02/renderer",
        "renderer",
        ContractVersion::V0_2,
    ),
];

/// One Go plugin project: a directory with a go.mod whose main package
/// registers one role.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoProject {
    pub dir: PathBuf,
    /// The module path from go.mod.
    pub module: String,
    /// The component's name: the module path's last element (a `/vN`
    /// suffix dropped). The output is `<out_dir>/<name>.wasm`.
    pub name: String,
}

/// A Go toolchain that can build plugins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoToolchain {
    pub go: PathBuf,
    /// E.g. `go1.26.8`.
    pub version: String,
}

/// The world and contract a project builds for, and the package that says so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoTarget {
    pub world: &'static str,
    pub contract: ContractVersion,
    pub role_package: &'static str,
}

/// Reads `dir/go.mod`: the module path names the component.
pub fn go_project(dir: &Path) -> Result<GoProject, BuildError> {
    let file = dir.join("go.mod");
    let text = std::fs::read_to_string(&file).map_err(|e| BuildError::BadProject {
        project: dir.to_path_buf(),
        detail: format!(
            "cannot read {}: {e}; a Go plugin project is a Go module (create one with \
             `syncweave plugin new NAME --lang go --kind KIND`)",
            file.display()
        ),
    })?;
    let module = module_path(&text).ok_or_else(|| BuildError::BadProject {
        project: dir.to_path_buf(),
        detail: format!(
            "{} has no `module` line; it names the component (e.g. `module team-labels`)",
            file.display()
        ),
    })?;
    let name = component_name(&module).ok_or_else(|| BuildError::BadProject {
        project: dir.to_path_buf(),
        detail: format!(
            "{}: the module path {module:?} ends in an element that cannot name the component \
             file; end it with letters, digits, '-', '_' or '.' (e.g. example.com/team-labels)",
            file.display()
        ),
    })?;
    Ok(GoProject {
        dir: dir.to_path_buf(),
        module,
        name,
    })
}

/// The module path of a go.mod (`module x` or `module "x"`).
fn module_path(gomod: &str) -> Option<String> {
    gomod.lines().find_map(|line| {
        let line = line.split("//").next()?.trim();
        let rest = line.strip_prefix("module")?;
        if !rest.starts_with(char::is_whitespace) {
            return None;
        }
        let path = rest.trim().trim_matches('"').trim_matches('`');
        (!path.is_empty()).then(|| path.to_string())
    })
}

/// The last element of a module path, without a major-version suffix.
fn component_name(module: &str) -> Option<String> {
    let mut parts: Vec<&str> = module.split('/').collect();
    if parts.len() > 1
        && parts.last().is_some_and(|l| {
            l.strip_prefix('v')
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        })
    {
        parts.pop();
    }
    let name = parts.last()?;
    (!name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
    .then(|| name.to_string())
}

/// `(major, minor)` of a Go version (`go1.26.8`, `go1.24`, `go1.25rc1`,
/// `devel go1.27-abcdef …`).
pub fn parse_go_version(text: &str) -> Option<(u32, u32)> {
    let at = text.find("go1.")?;
    let rest = &text[at + 2..];
    let mut nums = rest.split(|c: char| !c.is_ascii_digit());
    let major = nums.next()?.parse().ok()?;
    let minor = nums.next()?.parse().ok()?;
    Some((major, minor))
}

fn go_command(go: &Path) -> Command {
    let mut cmd = Command::new(go);
    if std::env::var_os("GOTOOLCHAIN").is_none() {
        cmd.env("GOTOOLCHAIN", "local");
    }
    cmd
}

/// Finds `go` and checks its version.
pub fn find_go() -> Result<GoToolchain, BuildError> {
    let go = find_on_path("go")
        .or_else(|| {
            std::env::var_os("GOROOT")
                .map(|r| PathBuf::from(r).join("bin/go"))
                .filter(|p| p.is_file())
        })
        .ok_or_else(|| BuildError::MissingTool {
            tool: "go".into(),
            problem: "it is not on PATH (nor in $GOROOT/bin)".into(),
            install: format!(
                "install Go {}.{} or newer from https://go.dev/dl/ and put its bin directory on PATH",
                MIN_GO.0, MIN_GO.1
            ),
        })?;
    let out = go_command(&go)
        .args(["env", "GOVERSION"])
        .output()
        .map_err(|source| BuildError::Spawn {
            program: go.display().to_string(),
            source,
        })?;
    let version = String::from_utf8_lossy(&out.stdout).trim().to_string();
    match parse_go_version(&version) {
        Some(v) if v >= MIN_GO => Ok(GoToolchain { go, version }),
        Some(_) => Err(BuildError::MissingTool {
            tool: "go".into(),
            problem: format!(
                "{} is {version}, too old: //go:wasmexport and -buildmode=c-shared for wasip1 \
                 need Go {}.{} or newer",
                go.display(),
                MIN_GO.0,
                MIN_GO.1
            ),
            install: format!(
                "install Go {}.{} or newer from https://go.dev/dl/ and put it first on PATH",
                MIN_GO.0, MIN_GO.1
            ),
        }),
        None => Err(BuildError::Parse {
            what: format!("`{} env GOVERSION`", go.display()),
            detail: format!("{version:?}{}", String::from_utf8_lossy(&out.stderr).trim()),
        }),
    }
}

/// The world and contract of a main package whose dependencies are `deps`.
pub fn target_from_deps<'a>(deps: impl IntoIterator<Item = &'a str>) -> Result<GoTarget, String> {
    let deps: Vec<&str> = deps.into_iter().collect();
    let found: Vec<&(&str, &str, ContractVersion)> = ROLE_PACKAGES
        .iter()
        .filter(|(pkg, _, _)| deps.contains(pkg))
        .collect();
    match found[..] {
        [(pkg, world, contract)] => Ok(GoTarget {
            world,
            contract: *contract,
            role_package: pkg,
        }),
        [] => Err(format!(
            "the main package imports none of the Go SDK's role packages, so its world is \
             unknown: import the one for the plugin's world ({SDK_MODULE}/mutator, namer, \
             projector or renderer; {SDK_MODULE}/v02/… for contract 0.2) and call its \
             Register from an init function"
        )),
        _ => Err(format!(
            "the main package imports more than one role package ({}); a component is exactly \
             one world of one contract: import one",
            found
                .iter()
                .map(|(p, _, _)| *p)
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// What to do about a failed `go` command, from its output.
fn hint(output: &str, project: &GoProject, go: &GoToolchain) -> String {
    let last = tail(output, 6);
    let fix = if output.contains("requires go >=") || output.contains("requires go>=") {
        format!(
            "the module needs a newer Go than {} (GOTOOLCHAIN=local: nothing is downloaded): \
             install that Go, or lower the `go` line of go.mod",
            go.version
        )
    } else if (output.contains("cannot find module providing package")
        || output.contains("no required module provides package")
        || output.contains("is not in std"))
        && output.contains(SDK_MODULE)
    {
        format!(
            "go.mod does not reach the Go SDK: add `require {SDK_MODULE} v0.0.0` and \
             `replace {SDK_MODULE} => <syncweave checkout>/sdk/go` (as `syncweave plugin new \
             --lang go` writes them)"
        )
    } else if output.contains("replacement directory") && output.contains("does not exist") {
        format!(
            "the `replace {SDK_MODULE} => …` line of go.mod names a directory that does not \
             exist: point it at the sdk/go directory of a syncweave checkout"
        )
    } else if output.contains("missing go.sum entry") || output.contains("updates to go.mod needed")
    {
        format!("run `go mod tidy` in {}", project.dir.display())
    } else if output.contains("no Go files in") || output.contains("no non-test Go files") {
        "the project directory holds no Go package: the plugin is the main package at its root"
            .to_string()
    } else {
        String::new()
    };
    match (fix.is_empty(), last.is_empty()) {
        (true, true) => String::new(),
        (true, false) => format!("; its last lines were:\n{last}"),
        (false, true) => format!("; {fix}"),
        (false, false) => format!("; {fix}. Its last lines were:\n{last}"),
    }
}

/// Runs `go list` on the main package: its world and contract.
pub fn go_target(project: &GoProject, go: &GoToolchain) -> Result<GoTarget, BuildError> {
    let out = go_command(&go.go)
        .args(["list", "-f", "{{.Name}}|{{join .Deps \" \"}}", "."])
        .env("GOOS", "wasip1")
        .env("GOARCH", "wasm")
        .env("CGO_ENABLED", "0")
        .current_dir(&project.dir)
        .output()
        .map_err(|source| BuildError::Spawn {
            program: go.go.display().to_string(),
            source,
        })?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        let text = format!("{stdout}{}", String::from_utf8_lossy(&out.stderr));
        return Err(BuildError::ToolFailed {
            tool: "go list".into(),
            project: project.dir.clone(),
            status: out.status.to_string(),
            hint: hint(&text, project, go),
        });
    }
    let (name, deps) = stdout.trim().split_once('|').unwrap_or((stdout.trim(), ""));
    if name != "main" {
        return Err(BuildError::BadProject {
            project: project.dir.clone(),
            detail: format!(
                "the package at the project's root is `package {name}`; a Go plugin is a main \
                 package (`package main` with an empty `func main() {{}}`) that registers its \
                 role from an init function"
            ),
        });
    }
    target_from_deps(deps.split_whitespace()).map_err(|detail| BuildError::BadProject {
        project: project.dir.clone(),
        detail,
    })
}

/// Embeds `world` of `contract` into the core module and wraps it into a
/// component with the WASI preview 1 reactor adapter.
pub fn componentize_go(
    module: &[u8],
    world: &str,
    contract: ContractVersion,
) -> Result<Vec<u8>, String> {
    let mut resolve = wit_parser::Resolve::default();
    let pkg = resolve
        .push_source("plugin.wit", contract.wit())
        .map_err(|e| {
            format!(
                "the embedded contract {} does not parse: {e:#}",
                contract.package()
            )
        })?;
    let world_id = resolve
        .select_world(&[pkg], Some(world))
        .map_err(|e| format!("{} has no world {world:?}: {e:#}", contract.package()))?;
    let mut module = module.to_vec();
    wit_component::embed_component_metadata(
        &mut module,
        &resolve,
        world_id,
        wit_component::StringEncoding::UTF8,
    )
    .map_err(|e| format!("embedding the world's types: {e:#}"))?;
    let encoder = wit_component::ComponentEncoder::default()
        .validate(true)
        .module(&module)
        .map_err(|e| format!("{e:#}"))?
        .adapter(
            WASI_SNAPSHOT_PREVIEW1_ADAPTER_NAME,
            WASI_SNAPSHOT_PREVIEW1_REACTOR_ADAPTER,
        )
        .map_err(|e| format!("adding the WASI preview 1 adapter: {e:#}"))?;
    let mut encoder = encoder;
    encoder.encode().map_err(|e| {
        format!(
            "{e:#}; the module must export exactly the world's functions (a //go:wasmexport of \
             the plugin's own, or a second role package, would not fit {world} of {})",
            contract.package()
        )
    })
}

/// Builds the Go plugin project at `project.dir` into `<out_dir>/<name>.wasm`.
pub fn build_go(
    project: &GoProject,
    out_dir: &Path,
    progress: bool,
) -> Result<BuiltComponent, BuildError> {
    let go = find_go()?;
    let target = go_target(project, &go)?;
    if progress {
        eprintln!(
            "syncweave: building Go plugin {} (world {} of {}, from {}) with {} \
             (GOOS=wasip1 GOARCH=wasm -buildmode=c-shared; a cold build takes about 20 s)",
            project.name,
            target.world,
            target.contract.package(),
            target.role_package,
            go.version
        );
    }
    let scratch = Scratch::new("go").map_err(|source| BuildError::Write {
        path: std::env::temp_dir(),
        source,
    })?;
    let core = scratch.path().join(format!("{}.core.wasm", project.name));
    let out = go_command(&go.go)
        .args(["build", "-buildmode=c-shared", "-trimpath", "-o"])
        .arg(&core)
        .arg(".")
        .env("GOOS", "wasip1")
        .env("GOARCH", "wasm")
        .env("CGO_ENABLED", "0")
        .current_dir(&project.dir)
        .output()
        .map_err(|source| BuildError::Spawn {
            program: go.go.display().to_string(),
            source,
        })?;
    if !out.status.success() || !core.is_file() {
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        if progress {
            eprintln!("{}", text.trim_end());
        }
        return Err(BuildError::ToolFailed {
            tool: "go build".into(),
            project: project.dir.clone(),
            status: out.status.to_string(),
            hint: hint(&text, project, &go),
        });
    }
    let module = std::fs::read(&core).map_err(|source| BuildError::ReadModule {
        package: project.name.clone(),
        path: core.clone(),
        source,
    })?;
    let component = componentize_go(&module, target.world, target.contract).map_err(|detail| {
        BuildError::Componentize {
            package: project.name.clone(),
            detail,
        }
    })?;
    let tmp = scratch.path().join(format!("{}.wasm", project.name));
    std::fs::write(&tmp, &component).map_err(|source| BuildError::Write {
        path: tmp.clone(),
        source,
    })?;
    install_component("wit-component", &tmp, out_dir, &project.name, progress)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_versions_are_read_from_every_form() {
        assert_eq!(parse_go_version("go1.26.8"), Some((1, 26)));
        assert_eq!(parse_go_version("go1.24"), Some((1, 24)));
        assert_eq!(parse_go_version("go1.25rc1"), Some((1, 25)));
        assert_eq!(
            parse_go_version("devel go1.27-4f0c3a1 Tue Nov 3 2026"),
            Some((1, 27))
        );
        assert_eq!(
            parse_go_version("go version go1.22.3 linux/amd64"),
            Some((1, 22))
        );
        assert_eq!(parse_go_version(""), None);
        assert!(parse_go_version("go1.23.9").unwrap() < MIN_GO);
    }

    #[test]
    fn module_paths_name_the_component() {
        assert_eq!(
            module_path("// x\nmodule example.com/team-labels // c\n\ngo 1.24\n"),
            Some("example.com/team-labels".into())
        );
        assert_eq!(
            module_path("module \"quoted/x\"\n"),
            Some("quoted/x".into())
        );
        assert_eq!(module_path("modules x\n"), None);
        assert_eq!(component_name("team-labels"), Some("team-labels".into()));
        assert_eq!(
            component_name("example.com/team-labels/v2"),
            Some("team-labels".into())
        );
        assert_eq!(component_name("example.com/v2"), Some("example.com".into()));
        assert_eq!(component_name("example.com/a b"), None);
    }

    #[test]
    fn the_role_package_decides_world_and_contract() {
        let t = target_from_deps([
            "fmt",
            "syncweave.dev/sdk/go/plugin",
            "syncweave.dev/sdk/go/namer",
        ])
        .unwrap();
        assert_eq!((t.world, t.contract), ("namer", ContractVersion::V0_1));
        let t = target_from_deps(["syncweave.dev/sdk/go/v02/renderer"]).unwrap();
        assert_eq!((t.world, t.contract), ("renderer", ContractVersion::V0_2));
        let err = target_from_deps(["fmt", "syncweave.dev/sdk/go/plugin"]).unwrap_err();
        assert!(
            err.contains("imports none") && err.contains("Register"),
            "{err}"
        );
        let err = target_from_deps([
            "syncweave.dev/sdk/go/mutator",
            "syncweave.dev/sdk/go/v02/mutator",
        ])
        .unwrap_err();
        assert!(
            err.contains("more than one role package")
                && err.contains("syncweave.dev/sdk/go/v02/mutator"),
            "{err}"
        );
    }

    #[test]
    fn go_errors_come_with_their_fix() {
        let project = GoProject {
            dir: "/p".into(),
            module: "p".into(),
            name: "p".into(),
        };
        let go = GoToolchain {
            go: "go".into(),
            version: "go1.24.1".into(),
        };
        let h = hint(
            "go: go.mod requires go >= 1.26 (running go 1.24.1; GOTOOLCHAIN=local)",
            &project,
            &go,
        );
        assert!(
            h.contains("newer Go than go1.24.1") && h.contains("`go` line"),
            "{h}"
        );
        let h = hint(
            "main.go:3:8: no required module provides package syncweave.dev/sdk/go/mutator; to add it:",
            &project,
            &go,
        );
        assert!(h.contains("replace syncweave.dev/sdk/go =>"), "{h}");
        let h = hint(
            "go: syncweave.dev/sdk/go@v0.0.0: replacement directory /x/sdk/go does not exist",
            &project,
            &go,
        );
        assert!(
            h.contains("sdk/go directory of a syncweave checkout"),
            "{h}"
        );
        let h = hint("./main.go:9:2: undefined: foo", &project, &go);
        assert_eq!(h, "; its last lines were:\n  ./main.go:9:2: undefined: foo");
    }

    #[test]
    fn both_contracts_parse_and_have_every_world() {
        for contract in [ContractVersion::V0_1, ContractVersion::V0_2] {
            let mut resolve = wit_parser::Resolve::default();
            let pkg = resolve.push_source("plugin.wit", contract.wit()).unwrap();
            for (_, world, c) in ROLE_PACKAGES {
                if c == contract {
                    resolve.select_world(&[pkg], Some(world)).unwrap();
                }
            }
            assert!(contract.wit().contains(contract.package()));
        }
    }

    #[test]
    fn a_module_that_is_not_the_world_is_refused_with_the_reason() {
        let empty = b"\0asm\x01\0\0\0";
        let err = componentize_go(empty, "mutator", ContractVersion::V0_1).unwrap_err();
        assert!(err.contains("syncweave:plugin@0.1.0"), "{err}");
    }
}
