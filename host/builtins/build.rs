//! Compiles the built-in plugins from `plugins/` to Wasm components and
//! generates `builtins.rs`, which embeds them (see `src/lib.rs`).
//!
//! With `SYNCWEAVE_BUILTINS_DIR` set, the components are taken from that
//! directory instead (`<name>.wasm` for each built-in crate): for builds
//! where the wasm toolchain lives elsewhere.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use syncweave_wasm_build::{BuildOptions, build_crate, detect_toolchain};

fn main() {
    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap());
    let repo = manifest_dir.join("../..");
    let plugins = repo.join("plugins");
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").unwrap());

    let crates = builtin_crates(&plugins);
    watch_sources(&repo, &plugins);
    println!("cargo::rerun-if-env-changed=SYNCWEAVE_BUILTINS_DIR");

    let components: Vec<(String, PathBuf)> =
        match std::env::var_os("SYNCWEAVE_BUILTINS_DIR").filter(|d| !d.is_empty()) {
            Some(dir) => {
                let dir = PathBuf::from(dir);
                crates
                    .iter()
                    .map(|name| {
                        let path = dir.join(format!("{name}.wasm"));
                        if !path.is_file() {
                            fail(&format!(
                                "SYNCWEAVE_BUILTINS_DIR={} has no {name}.wasm; build it with \
                             `syncweave plugin build plugins/{name} --out {}`, or unset the \
                             variable to build the built-ins from source",
                                dir.display(),
                                dir.display()
                            ));
                        }
                        println!("cargo::rerun-if-changed={}", path.display());
                        (name.clone(), path)
                    })
                    .collect()
            }
            None => {
                let toolchain = detect_toolchain().unwrap_or_else(|e| {
                    fail(&format!(
                        "the built-in plugins are compiled to Wasm as part of this build, and {e}. \
                     On Debian, `tests/setup.sh --only-wasm` installs them."
                    ))
                });
                let mut opts = BuildOptions::new(out_dir.join("components"));
                opts.packages = crates.clone();
                opts.toolchain = Some(toolchain);
                // Shared with `syncweave plugin build`, so std for wasm32 is built once.
                opts.target_dir = Some(repo.join("target").join("wasm"));
                opts.progress = false;
                let built = build_crate(&plugins, &opts).unwrap_or_else(|e| {
                    fail(&format!(
                        "building the built-in plugins from {}: {e}",
                        plugins.display()
                    ))
                });
                built.into_iter().map(|b| (b.name, b.path)).collect()
            }
        };

    let mut code = String::from("static BUILTINS: &[Builtin] = &[\n");
    let mut sorted = components;
    sorted.sort();
    // Level 19 is single-threaded: compress the components side by side.
    let compressed: Vec<(usize, String, PathBuf)> = std::thread::scope(|s| {
        let handles: Vec<_> = sorted
            .iter()
            .map(|(name, path)| {
                let zst = out_dir.join(format!("{name}.wasm.zst"));
                s.spawn(move || {
                    let bytes = std::fs::read(path)
                        .unwrap_or_else(|e| fail(&format!("cannot read {}: {e}", path.display())));
                    let digest = syncweave_wasm_build::sha256_hex(&bytes);
                    let packed = syncweave_wasm_build::embed::compress(&bytes)
                        .unwrap_or_else(|e| fail(&format!("compressing the built-in {name}: {e}")));
                    std::fs::write(&zst, packed)
                        .unwrap_or_else(|e| fail(&format!("cannot write {}: {e}", zst.display())));
                    (bytes.len(), digest, zst)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for ((name, _), (len, digest, zst)) in sorted.iter().zip(&compressed) {
        writeln!(
            code,
            "    Builtin {{ name: {name:?}, len: {len}, zstd: include_bytes!({zst:?}), digest: \"sha256:{digest}\" }},",
        )
        .unwrap();
    }
    code.push_str("];\n");
    std::fs::write(out_dir.join("builtins.rs"), code).unwrap();
}

/// Plugin crates directly under `plugins/`: those with a cdylib target
/// (`gotmpl` is a library they share, not a plugin).
fn builtin_crates(plugins: &Path) -> Vec<String> {
    let mut names = Vec::new();
    let entries = std::fs::read_dir(plugins)
        .unwrap_or_else(|e| fail(&format!("cannot list {}: {e}", plugins.display())));
    for entry in entries.flatten() {
        let manifest = entry.path().join("Cargo.toml");
        let Ok(text) = std::fs::read_to_string(&manifest) else {
            continue;
        };
        let is_plugin = text
            .lines()
            .any(|l| l.trim_start().starts_with("crate-type") && l.contains("\"cdylib\""));
        if is_plugin {
            names.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    names.sort();
    names
}

/// Rebuild when a plugin's sources, the SDK or the WIT contract change; the
/// directories are listed one by one so `plugins/target` is not scanned.
fn watch_sources(repo: &Path, plugins: &Path) {
    for f in ["Cargo.toml", "Cargo.lock"] {
        println!("cargo::rerun-if-changed={}", plugins.join(f).display());
    }
    if let Ok(entries) = std::fs::read_dir(plugins) {
        for entry in entries.flatten() {
            let dir = entry.path();
            if dir.join("Cargo.toml").is_file() {
                println!(
                    "cargo::rerun-if-changed={}",
                    dir.join("Cargo.toml").display()
                );
                for sub in ["src", "testdata"] {
                    if dir.join(sub).is_dir() {
                        println!("cargo::rerun-if-changed={}", dir.join(sub).display());
                    }
                }
            }
        }
    }
    println!("cargo::rerun-if-changed={}", repo.join("wit").display());
    println!(
        "cargo::rerun-if-changed={}",
        repo.join("sdk/rust/src").display()
    );
    println!(
        "cargo::rerun-if-changed={}",
        repo.join("sdk/rust/Cargo.toml").display()
    );
    // The SDK compiles the runtime's label-selector and report rules in.
    println!(
        "cargo::rerun-if-changed={}",
        repo.join("host/runtime/src/rules.rs").display()
    );
}

fn fail(msg: &str) -> ! {
    // cargo shows `cargo::error` lines as the build's error message (Rust 1.84+).
    println!("cargo::error={msg}");
    std::process::exit(1);
}
