//! Building Rust plugin crates into Wasm components.
//!
//! A crate of its own (no wasmtime) so that the host's build script can use it
//! to embed the built-in plugins; the runtime re-exports it as `build`.
//!
//! `build_crate` runs cargo for `wasm32-unknown-unknown`, then wraps each
//! produced core module into a component with `wit-component` (the module
//! carries its WIT world in a custom section that wit-bindgen embedded).
//!
//! Python and JavaScript projects are built by [`python::build_python`] and
//! [`js::build_js`] (componentize-py, and rolldown + componentize-js), against
//! the version of the plugin contract the project names ([`contract`]: 0.1 or
//! 0.2, both embedded here). Go projects are built by [`go::build_go`]
//! (`go build` for wasip1, then wit-component with the WASI preview 1 reactor
//! adapter).
//!
//! Two Rust toolchains are supported, detected in this order:
//! - rustup with the `wasm32-unknown-unknown` target installed: plain
//!   `cargo build --target wasm32-unknown-unknown --release`;
//! - Debian's `rustc-web`/`cargo-web`/`rust-web-src` plus `lld`: std is built
//!   from source with `-Zbuild-std` (see shared/TOOLCHAIN.md).

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::Deserialize;
use sha2::{Digest, Sha256};

pub mod contract;
#[cfg(feature = "embed")]
pub mod embed;
pub mod go;
pub mod js;
pub mod python;

pub use contract::ContractVersion;

/// The target every guest is built for: no WASI, no libc, imports only what
/// the plugin's world declares.
pub const WASM_TARGET: &str = "wasm32-unknown-unknown";

/// How to build.
#[derive(Debug, Clone)]
pub struct BuildOptions {
    /// Packages to build. Empty: the package at `crate_dir`, or every member
    /// with a `cdylib` target when `crate_dir` is a virtual workspace.
    pub packages: Vec<String>,
    /// Where `<crate-name>.wasm` components are written.
    pub out_dir: PathBuf,
    /// Cargo target directory. Default: `<repo>/target/wasm`, where `<repo>`
    /// is the nearest ancestor of the cargo workspace holding `.git` (else the
    /// workspace root), so std is built once for all guest crates.
    pub target_dir: Option<PathBuf>,
    /// Toolchain to use; `None` detects one.
    pub toolchain: Option<Toolchain>,
    /// Print progress lines and cargo's own output on stderr.
    pub progress: bool,
}

impl BuildOptions {
    pub fn new(out_dir: impl Into<PathBuf>) -> Self {
        BuildOptions {
            packages: Vec::new(),
            out_dir: out_dir.into(),
            target_dir: None,
            toolchain: None,
            progress: true,
        }
    }
}

/// A cargo + rustc pair able to produce `wasm32-unknown-unknown` modules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Toolchain {
    /// rustup's toolchain with the wasm target installed.
    Rustup { cargo: PathBuf },
    /// Debian's rustc with std sources: needs `-Zbuild-std` and an external linker.
    BuildStd {
        cargo: PathBuf,
        rustc: PathBuf,
        linker: PathBuf,
    },
}

impl Toolchain {
    fn describe(&self) -> String {
        match self {
            Toolchain::Rustup { .. } => format!("rustup toolchain with {WASM_TARGET}"),
            Toolchain::BuildStd { rustc, .. } => {
                format!("{} with -Zbuild-std", rustc.display())
            }
        }
    }

    fn cargo(&self) -> &Path {
        match self {
            Toolchain::Rustup { cargo } | Toolchain::BuildStd { cargo, .. } => cargo,
        }
    }

    /// A cargo command with the environment this toolchain needs and none of
    /// the variables an outer cargo (`cargo run`, `cargo test`) leaves behind.
    fn command(&self) -> Command {
        let mut cmd = Command::new(self.cargo());
        for var in [
            "CARGO_ENCODED_RUSTFLAGS",
            "CARGO_BUILD_RUSTFLAGS",
            "CARGO_BUILD_TARGET",
            "CARGO_MAKEFLAGS",
            "RUSTC",
            "RUSTDOC",
            "RUSTC_WRAPPER",
            "RUSTC_WORKSPACE_WRAPPER",
        ] {
            cmd.env_remove(var);
        }
        if let Toolchain::BuildStd { rustc, linker, .. } = self {
            // The outer rustup toolchain must not leak into Debian's cargo.
            cmd.env_remove("RUSTUP_TOOLCHAIN");
            cmd.env("RUSTC_BOOTSTRAP", "1");
            cmd.env("RUSTC", rustc);
            let mut flags = OsString::from("-C linker=");
            flags.push(linker);
            cmd.env("RUSTFLAGS", flags);
        } else {
            cmd.env_remove("RUSTFLAGS");
        }
        cmd
    }
}

/// One component written by [`build_crate`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuiltComponent {
    /// Cargo package name; the file is `<name>.wasm`.
    pub name: String,
    pub path: PathBuf,
    pub size: u64,
    /// Lower-case hex SHA-256 of the component bytes.
    pub sha256: String,
}

impl BuiltComponent {
    /// `sha256:<hex>`, the digest the runtime reports for this component.
    pub fn digest(&self) -> String {
        format!("sha256:{}", self.sha256)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error(
        "no toolchain can build {WASM_TARGET} modules: either run `rustup target add {WASM_TARGET}`, \
         or install Debian's `rustc-web cargo-web rust-web-src lld` packages ({detail})"
    )]
    NoToolchain { detail: String },
    #[error(
        "{path}: not a cargo crate or workspace (no Cargo.toml); pass the directory of a plugin crate"
    )]
    NotACrate { path: PathBuf },
    #[error("could not run {program}: {source}; check that it is installed and on PATH")]
    Spawn {
        program: String,
        #[source]
        source: std::io::Error,
    },
    #[error("`cargo metadata` failed for {manifest}: {stderr}")]
    Metadata { manifest: PathBuf, stderr: String },
    #[error("unexpected output from {what}: {detail}")]
    Parse { what: String, detail: String },
    #[error("{manifest}: no package named {package:?} in this workspace (members: {members})")]
    UnknownPackage {
        manifest: PathBuf,
        package: String,
        members: String,
    },
    #[error(
        "package {package:?} has no cdylib target, so it cannot become a plugin; \
         add `[lib] crate-type = [\"cdylib\"]` to {manifest}"
    )]
    NotCdylib { package: String, manifest: PathBuf },
    #[error(
        "{manifest}: no workspace member has a cdylib target; plugin crates need \
         `[lib] crate-type = [\"cdylib\"]`"
    )]
    NoPlugins { manifest: PathBuf },
    #[error("cargo build failed for {packages} ({status}); see cargo's messages above")]
    CargoFailed { packages: String, status: String },
    #[error("cargo built {package:?} but reported no .wasm file for it")]
    NoArtifact { package: String },
    #[error("{package}: {path}: cannot read the module: {source}")]
    ReadModule {
        package: String,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{package}: turning the core module into a component failed: {detail}")]
    Componentize { package: String, detail: String },
    #[error("{tool} is needed to build this plugin but {problem}; {install}")]
    MissingTool {
        tool: String,
        problem: String,
        install: String,
    },
    #[error("{project}: {detail}")]
    BadProject { project: PathBuf, detail: String },
    #[error(
        "{file}: {key} = {value:?} names a plugin contract version this build does not know \
         (it knows: {known}); write one of those, e.g. {example}, or build with a syncweave \
         release that knows {value}"
    )]
    UnknownContract {
        file: PathBuf,
        key: String,
        value: String,
        known: String,
        /// How the key is written with a known version, in that file's syntax.
        example: String,
    },
    #[error("{tool} failed for {project} ({status}){hint}")]
    ToolFailed {
        tool: String,
        project: PathBuf,
        status: String,
        /// Empty, or "; " and what to do.
        hint: String,
    },
    #[error("{tool} wrote {path}, but it is not a valid WebAssembly component: {detail}")]
    NotAComponent {
        tool: String,
        path: PathBuf,
        detail: String,
    },
    #[error("{path}: cannot write the component: {source}; check that the directory is writable")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Lower-case hex SHA-256 of `bytes` (the digest a component is known by).
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Find a toolchain that can build `wasm32-unknown-unknown`.
pub fn detect_toolchain() -> Result<Toolchain, BuildError> {
    let mut detail = Vec::new();
    match Command::new("rustup")
        .args(["target", "list", "--installed"])
        .stderr(Stdio::null())
        .output()
    {
        Ok(out) if out.status.success() => {
            let list = String::from_utf8_lossy(&out.stdout);
            if list.lines().any(|l| l.trim() == WASM_TARGET) {
                return Ok(Toolchain::Rustup {
                    cargo: PathBuf::from("cargo"),
                });
            }
            detail.push(format!("rustup has no {WASM_TARGET} target"));
        }
        Ok(_) => detail.push("`rustup target list` failed".to_string()),
        Err(_) => detail.push("rustup not found".to_string()),
    }

    let cargo = PathBuf::from("/usr/bin/cargo");
    let rustc = PathBuf::from("/usr/bin/rustc");
    if !cargo.exists() || !rustc.exists() {
        detail.push("/usr/bin/cargo or /usr/bin/rustc missing".to_string());
        return Err(BuildError::NoToolchain {
            detail: detail.join("; "),
        });
    }
    let sysroot = Command::new(&rustc)
        .args(["--print", "sysroot"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    let has_src = sysroot
        .as_ref()
        .is_some_and(|s| s.join("lib/rustlib/src/rust/library/std").is_dir());
    if !has_src {
        detail.push("std sources for /usr/bin/rustc missing (package rust-web-src)".to_string());
        return Err(BuildError::NoToolchain {
            detail: detail.join("; "),
        });
    }
    let Some(linker) = find_wasm_ld() else {
        detail.push("wasm-ld not found (package lld-22 or lld)".to_string());
        return Err(BuildError::NoToolchain {
            detail: detail.join("; "),
        });
    };
    Ok(Toolchain::BuildStd {
        cargo,
        rustc,
        linker,
    })
}

/// wasm-ld from PATH, else the newest /usr/lib/llvm-N/bin/wasm-ld.
fn find_wasm_ld() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            let candidate = dir.join("wasm-ld");
            if candidate.is_file() {
                return Some(candidate);
            }
        }
    }
    let mut best: Option<(u32, PathBuf)> = None;
    for entry in fs::read_dir("/usr/lib").ok()?.flatten() {
        let name = entry.file_name();
        let Some(version) = name
            .to_str()
            .and_then(|n| n.strip_prefix("llvm-"))
            .and_then(|v| v.parse::<u32>().ok())
        else {
            continue;
        };
        let candidate = entry.path().join("bin/wasm-ld");
        if candidate.is_file() && best.as_ref().is_none_or(|(v, _)| version > *v) {
            best = Some((version, candidate));
        }
    }
    best.map(|(_, p)| p)
}

#[derive(Debug, Deserialize)]
struct Metadata {
    packages: Vec<MetaPackage>,
    workspace_members: Vec<String>,
    workspace_root: PathBuf,
}

#[derive(Debug, Deserialize)]
struct MetaPackage {
    name: String,
    id: String,
    manifest_path: PathBuf,
    targets: Vec<MetaTarget>,
}

#[derive(Debug, Deserialize)]
struct MetaTarget {
    kind: Vec<String>,
}

impl MetaPackage {
    fn is_cdylib(&self) -> bool {
        self.targets
            .iter()
            .any(|t| t.kind.iter().any(|k| k == "cdylib"))
    }
}

/// Build the plugin crate (or the plugin members of the workspace) at
/// `crate_dir` and write one component per package into `opts.out_dir`.
pub fn build_crate(
    crate_dir: &Path,
    opts: &BuildOptions,
) -> Result<Vec<BuiltComponent>, BuildError> {
    let manifest = if crate_dir.file_name().is_some_and(|n| n == "Cargo.toml") {
        crate_dir.to_path_buf()
    } else {
        crate_dir.join("Cargo.toml")
    };
    if !manifest.is_file() {
        return Err(BuildError::NotACrate {
            path: crate_dir.to_path_buf(),
        });
    }
    let manifest = manifest.canonicalize().map_err(|_| BuildError::NotACrate {
        path: crate_dir.to_path_buf(),
    })?;
    let toolchain = match &opts.toolchain {
        Some(t) => t.clone(),
        None => detect_toolchain()?,
    };

    let meta = cargo_metadata(&toolchain, &manifest)?;
    let packages = select_packages(&meta, &manifest, &opts.packages)?;
    let target_dir = match &opts.target_dir {
        Some(t) => t.clone(),
        None => default_target_dir(&meta.workspace_root),
    };
    let names: Vec<&str> = packages.iter().map(|p| p.name.as_str()).collect();
    if opts.progress {
        eprintln!(
            "syncweave: building {} for {WASM_TARGET} with {} (target dir {}; a cold build takes 30-60 s)",
            names.join(", "),
            toolchain.describe(),
            target_dir.display()
        );
    }

    let modules = cargo_build(&toolchain, &manifest, &packages, &target_dir, opts)?;

    let mut built = Vec::new();
    for package in &packages {
        let module_path = modules
            .get(&package.id)
            .ok_or_else(|| BuildError::NoArtifact {
                package: package.name.clone(),
            })?;
        let module = fs::read(module_path).map_err(|source| BuildError::ReadModule {
            package: package.name.clone(),
            path: module_path.clone(),
            source,
        })?;
        let component = componentize(&module).map_err(|detail| BuildError::Componentize {
            package: package.name.clone(),
            detail,
        })?;
        let path = opts.out_dir.join(format!("{}.wasm", package.name));
        write_atomically(&path, &component)?;
        let out = BuiltComponent {
            name: package.name.clone(),
            path,
            size: component.len() as u64,
            sha256: sha256_hex(&component),
        };
        if opts.progress {
            eprintln!(
                "syncweave: wrote {} ({} bytes, {})",
                out.path.display(),
                out.size,
                out.digest()
            );
        }
        built.push(out);
    }
    Ok(built)
}

fn cargo_metadata(toolchain: &Toolchain, manifest: &Path) -> Result<Metadata, BuildError> {
    let out = toolchain
        .command()
        .args([
            "metadata",
            "--no-deps",
            "--format-version",
            "1",
            "--manifest-path",
        ])
        .arg(manifest)
        .output()
        .map_err(|source| BuildError::Spawn {
            program: toolchain.cargo().display().to_string(),
            source,
        })?;
    if !out.status.success() {
        return Err(BuildError::Metadata {
            manifest: manifest.to_path_buf(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    serde_json::from_slice(&out.stdout).map_err(|e| BuildError::Parse {
        what: "cargo metadata".to_string(),
        detail: e.to_string(),
    })
}

fn select_packages<'m>(
    meta: &'m Metadata,
    manifest: &Path,
    wanted: &[String],
) -> Result<Vec<&'m MetaPackage>, BuildError> {
    let members: Vec<&MetaPackage> = meta
        .packages
        .iter()
        .filter(|p| meta.workspace_members.contains(&p.id))
        .collect();
    let check = |p: &'m MetaPackage| {
        if p.is_cdylib() {
            Ok(p)
        } else {
            Err(BuildError::NotCdylib {
                package: p.name.clone(),
                manifest: p.manifest_path.clone(),
            })
        }
    };
    if !wanted.is_empty() {
        return wanted
            .iter()
            .map(|name| {
                let p = members.iter().find(|p| &p.name == name).ok_or_else(|| {
                    BuildError::UnknownPackage {
                        manifest: manifest.to_path_buf(),
                        package: name.clone(),
                        members: members
                            .iter()
                            .map(|p| p.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", "),
                    }
                })?;
                check(p)
            })
            .collect();
    }
    if let Some(p) = members.iter().find(|p| p.manifest_path == manifest) {
        return Ok(vec![check(p)?]);
    }
    let plugins: Vec<&MetaPackage> = members.into_iter().filter(|p| p.is_cdylib()).collect();
    if plugins.is_empty() {
        return Err(BuildError::NoPlugins {
            manifest: manifest.to_path_buf(),
        });
    }
    Ok(plugins)
}

fn default_target_dir(workspace_root: &Path) -> PathBuf {
    workspace_root
        .ancestors()
        .find(|d| d.join(".git").exists())
        .unwrap_or(workspace_root)
        .join("target")
        .join("wasm")
}

#[derive(Debug, Deserialize)]
struct CargoMessage {
    reason: String,
    #[serde(default)]
    package_id: String,
    #[serde(default)]
    target: Option<MetaTarget>,
    #[serde(default)]
    filenames: Vec<PathBuf>,
}

/// What the release profile's `strip` is overridden with, if anything.
///
/// Components keep their `name` section: a trap's backtrace then names the
/// guest's functions (in the agent's Events and in `syncweave plugin
/// replay`), where a fully stripped module shows only function indices. It
/// costs some size, not speed. `strip = true` (what plugin workspaces
/// usually set) also drops names, so it becomes `debuginfo`; with
/// `CARGO_PROFILE_RELEASE_DEBUG` set (DWARF asked for, for source lines in
/// replays) nothing is stripped. A `CARGO_PROFILE_RELEASE_STRIP` of the
/// caller's own always wins.
fn strip_setting(strip_set: bool, debug: Option<&str>) -> Option<&'static str> {
    if strip_set {
        return None;
    }
    match debug.map(str::trim) {
        Some("" | "0" | "false" | "none") | None => Some("debuginfo"),
        Some(_) => Some("none"),
    }
}

/// Run `cargo build` and return package id → produced `.wasm` module.
fn cargo_build(
    toolchain: &Toolchain,
    manifest: &Path,
    packages: &[&MetaPackage],
    target_dir: &Path,
    opts: &BuildOptions,
) -> Result<std::collections::HashMap<String, PathBuf>, BuildError> {
    let mut cmd = toolchain.command();
    cmd.arg("build");
    if matches!(toolchain, Toolchain::BuildStd { .. }) {
        cmd.arg("-Zbuild-std=std,panic_abort");
    }
    cmd.args(["--release", "--target", WASM_TARGET])
        .args(["--message-format", "json-render-diagnostics"])
        .arg("--manifest-path")
        .arg(manifest)
        .env("CARGO_TARGET_DIR", target_dir);
    if let Some(strip) = strip_setting(
        std::env::var_os("CARGO_PROFILE_RELEASE_STRIP").is_some(),
        std::env::var("CARGO_PROFILE_RELEASE_DEBUG").ok().as_deref(),
    ) {
        cmd.env("CARGO_PROFILE_RELEASE_STRIP", strip);
    }
    for p in packages {
        cmd.args(["-p", &p.name]);
    }
    if !opts.progress {
        cmd.arg("--quiet");
    }
    cmd.stdout(Stdio::piped());
    cmd.stderr(if opts.progress {
        Stdio::inherit()
    } else {
        Stdio::piped()
    });
    let mut child = cmd.spawn().map_err(|source| BuildError::Spawn {
        program: toolchain.cargo().display().to_string(),
        source,
    })?;
    // Drain stderr on a thread when captured so cargo never blocks on a full pipe.
    let stderr_reader = child.stderr.take().map(|mut err| {
        std::thread::spawn(move || {
            let mut buf = String::new();
            let _ = std::io::Read::read_to_string(&mut err, &mut buf);
            buf
        })
    });
    let wanted: BTreeSet<&str> = packages.iter().map(|p| p.id.as_str()).collect();
    let mut modules = std::collections::HashMap::new();
    let stdout = child.stdout.take().expect("stdout is piped");
    for line in BufReader::new(stdout).lines() {
        let Ok(line) = line else { break };
        let Ok(msg) = serde_json::from_str::<CargoMessage>(&line) else {
            continue;
        };
        if msg.reason != "compiler-artifact" || !wanted.contains(msg.package_id.as_str()) {
            continue;
        }
        let is_cdylib = msg
            .target
            .as_ref()
            .is_some_and(|t| t.kind.iter().any(|k| k == "cdylib"));
        if let Some(wasm) = msg
            .filenames
            .into_iter()
            .find(|f| is_cdylib && f.extension().is_some_and(|e| e == "wasm"))
        {
            modules.insert(msg.package_id, wasm);
        }
    }
    let status = child.wait().map_err(|source| BuildError::Spawn {
        program: toolchain.cargo().display().to_string(),
        source,
    })?;
    let captured = stderr_reader
        .and_then(|h| h.join().ok())
        .unwrap_or_default();
    if !status.success() {
        if !captured.is_empty() {
            // Quiet mode swallowed cargo's diagnostics; show them now that they matter.
            eprint!("{captured}");
        }
        return Err(BuildError::CargoFailed {
            packages: packages
                .iter()
                .map(|p| p.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            status: status.to_string(),
        });
    }
    Ok(modules)
}

/// Wrap a core module into a component. Already-componentized input (e.g. a
/// crate built by other tooling) is passed through after validation.
pub fn componentize(module: &[u8]) -> Result<Vec<u8>, String> {
    if wasmparser::Parser::is_component(module) {
        wasmparser::Validator::new_with_features(wasmparser::WasmFeatures::all())
            .validate_all(module)
            .map_err(|e| format!("the input is a component but does not validate: {e}"))?;
        return Ok(module.to_vec());
    }
    if !wasmparser::Parser::is_core_wasm(module) {
        return Err("the file is not a WebAssembly module".to_string());
    }
    if let Some(import) = wasi_p1_import(module) {
        return Err(format!(
            "the module imports WASI preview 1 ({import}); syncweave builds Rust plugins for \
             {WASM_TARGET}, which needs no WASI: build for that target, or componentize \
             the module with a WASI adapter yourself"
        ));
    }
    let mut encoder = wit_component::ComponentEncoder::default()
        .validate(true)
        .module(module)
        .map_err(|e| {
            format!(
                "{e:#}; was the crate built with wit-bindgen (it embeds the WIT world \
                 the component needs)?"
            )
        })?;
    encoder.encode().map_err(|e| format!("{e:#}"))
}

fn wasi_p1_import(module: &[u8]) -> Option<String> {
    for payload in wasmparser::Parser::new(0).parse_all(module) {
        if let Ok(wasmparser::Payload::ImportSection(reader)) = payload {
            for import in reader.into_imports().flatten() {
                if import.module == "wasi_snapshot_preview1" {
                    return Some(format!("{}::{}", import.module, import.name));
                }
            }
        }
    }
    None
}

/// Checks that `built` (written by `tool`) is a valid component, writes it to
/// `<out_dir>/<name>.wasm` and describes the result. Used by the Python and
/// JavaScript builders, whose tools write components themselves.
pub(crate) fn install_component(
    tool: &str,
    built: &Path,
    out_dir: &Path,
    name: &str,
    progress: bool,
) -> Result<BuiltComponent, BuildError> {
    let bytes = fs::read(built).map_err(|source| BuildError::ReadModule {
        package: name.to_string(),
        path: built.to_path_buf(),
        source,
    })?;
    let not_a_component = |detail: String| BuildError::NotAComponent {
        tool: tool.to_string(),
        path: built.to_path_buf(),
        detail,
    };
    if !wasmparser::Parser::is_component(&bytes) {
        return Err(not_a_component(
            "the file is not a component (a core module or something else)".into(),
        ));
    }
    wasmparser::Validator::new_with_features(wasmparser::WasmFeatures::all())
        .validate_all(&bytes)
        .map_err(|e| not_a_component(e.to_string()))?;
    let path = out_dir.join(format!("{name}.wasm"));
    write_atomically(&path, &bytes)?;
    let out = BuiltComponent {
        name: name.to_string(),
        path,
        size: bytes.len() as u64,
        sha256: sha256_hex(&bytes),
    };
    if progress {
        eprintln!(
            "syncweave: wrote {} ({} bytes, {})",
            out.path.display(),
            out.size,
            out.digest()
        );
    }
    Ok(out)
}

/// `program` as found on PATH (a file, executable for someone).
pub(crate) fn find_on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| {
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                candidate
                    .metadata()
                    .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            }
            #[cfg(not(unix))]
            {
                candidate.is_file()
            }
        })
}

/// A unique scratch directory under the system temp dir, removed on drop.
pub(crate) struct Scratch(PathBuf);

impl Scratch {
    pub(crate) fn new(what: &str) -> std::io::Result<Scratch> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static N: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "syncweave-{what}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        fs::create_dir_all(&dir)?;
        Ok(Scratch(dir))
    }

    pub(crate) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// The last `max` lines of a tool's output, indented, for an error message.
pub(crate) fn tail(output: &str, max: usize) -> String {
    let lines: Vec<&str> = output.lines().filter(|l| !l.trim().is_empty()).collect();
    let start = lines.len().saturating_sub(max);
    lines[start..]
        .iter()
        .map(|l| format!("  {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Write to a unique temporary file beside `path`, then rename: readers see
/// either no file or the complete one, even with concurrent writers (the
/// temporary name is unique per process *and* per call).
pub fn write_file_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let dir = path.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(dir)?;
    let tmp = dir.join(format!(
        ".tmp-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let result = (|| {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// [`write_file_atomically`], reporting failures as a build error.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), BuildError> {
    write_file_atomically(path, bytes).map_err(|source| BuildError::Write {
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_kept_unless_the_caller_says_otherwise() {
        assert_eq!(strip_setting(false, None), Some("debuginfo"));
        assert_eq!(strip_setting(false, Some("0")), Some("debuginfo"));
        assert_eq!(strip_setting(false, Some("line-tables-only")), Some("none"));
        assert_eq!(strip_setting(true, None), None);
        assert_eq!(strip_setting(true, Some("2")), None);
    }

    fn meta(json: &str) -> Metadata {
        serde_json::from_str(json).unwrap()
    }

    const WS: &str = r#"{
        "packages": [
            {"name": "naming", "id": "a", "manifest_path": "/ws/naming/Cargo.toml",
             "targets": [{"kind": ["cdylib", "rlib"]}]},
            {"name": "sdk", "id": "b", "manifest_path": "/sdk/Cargo.toml",
             "targets": [{"kind": ["lib"]}]}
        ],
        "workspace_members": ["a", "b"],
        "workspace_root": "/ws"
    }"#;

    #[test]
    fn virtual_workspace_selects_cdylib_members() {
        let m = meta(WS);
        let picked = select_packages(&m, Path::new("/ws/Cargo.toml"), &[]).unwrap();
        assert_eq!(
            picked.iter().map(|p| &p.name).collect::<Vec<_>>(),
            ["naming"]
        );
    }

    #[test]
    fn member_manifest_selects_that_package_and_rejects_non_cdylib() {
        let m = meta(WS);
        let picked = select_packages(&m, Path::new("/ws/naming/Cargo.toml"), &[]).unwrap();
        assert_eq!(picked[0].name, "naming");
        let err = select_packages(&m, Path::new("/sdk/Cargo.toml"), &[]).unwrap_err();
        assert!(matches!(err, BuildError::NotCdylib { .. }), "{err}");
        assert!(err.to_string().contains("crate-type"), "{err}");
    }

    #[test]
    fn unknown_package_lists_members() {
        let m = meta(WS);
        let err =
            select_packages(&m, Path::new("/ws/Cargo.toml"), &["nope".to_string()]).unwrap_err();
        assert!(err.to_string().contains("naming, sdk"), "{err}");
    }

    #[test]
    fn default_target_dir_is_beside_git() {
        let dir = std::env::temp_dir().join(format!("sw-build-test-{}", std::process::id()));
        let ws = dir.join("plugins");
        fs::create_dir_all(dir.join(".git")).unwrap();
        fs::create_dir_all(&ws).unwrap();
        assert_eq!(default_target_dir(&ws), dir.join("target/wasm"));
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn componentize_rejects_non_wasm() {
        assert!(
            componentize(b"hello")
                .unwrap_err()
                .contains("not a WebAssembly")
        );
    }

    #[test]
    fn componentize_names_wasi_preview1_imports() {
        let mut m = b"\0asm\x01\0\0\0".to_vec();
        m.extend_from_slice(&[1, 4, 1, 0x60, 0, 0]); // type section: () -> ()
        let mut imports = vec![1, 22];
        imports.extend_from_slice(b"wasi_snapshot_preview1");
        imports.push(8);
        imports.extend_from_slice(b"fd_write");
        imports.extend_from_slice(&[0, 0]); // func of type 0
        m.push(2);
        m.push(imports.len() as u8);
        m.extend_from_slice(&imports);
        let err = componentize(&m).unwrap_err();
        assert!(err.contains("wasi_snapshot_preview1::fd_write"), "{err}");
        assert!(err.contains(WASM_TARGET), "{err}");
    }

    #[test]
    fn componentize_passes_components_through() {
        let empty_module = b"\0asm\x01\0\0\0";
        let component = componentize(empty_module).unwrap();
        assert!(wasmparser::Parser::is_component(&component));
        assert_eq!(componentize(&component).unwrap(), component);
    }

    #[test]
    fn atomic_write_replaces_file() {
        let dir = std::env::temp_dir().join(format!("sw-write-test-{}", std::process::id()));
        let path = dir.join("x.wasm");
        write_atomically(&path, b"one").unwrap();
        write_atomically(&path, b"two").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"two");
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 1, "no temp file left");
        fs::remove_dir_all(&dir).unwrap();
    }
}
