//! Precompiles the embedded built-in plugins with the engine the runtime
//! will use (`syncweave-engine`, default settings) and generates
//! `precompiled.rs`, which embeds the compiled code: an agent then loads
//! them in milliseconds instead of compiling them at start (seconds, and
//! Cranelift's memory peak). Wasmtime checks the code against the running
//! engine when it is loaded; if it does not fit (other CPU features, other
//! settings) the runtime compiles as before.
//!
//! The code is embedded zstd-compressed (`syncweave_wasm_build::embed`):
//! machine code shrinks about 4x (38.6 MB for the four built-ins to
//! 9.2 MB), which is most of what the binary would otherwise carry. The
//! runtime decompresses a built-in only when it is first loaded, straight
//! into its plugin-cache file (see `src/precompiled.rs`).
//!
//! Skipped, with nothing embedded, when cross-compiling (this machine's
//! engine would be the wrong one) or with `SYNCWEAVE_PRECOMPILE=0`.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Instant;

use syncweave_engine::{EngineKind, EngineParams};

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=SYNCWEAVE_PRECOMPILE");
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").unwrap());
    let mut code = String::from("static PRECOMPILED: &[Precompiled] = &[\n");
    let cross = std::env::var("TARGET").ok() != std::env::var("HOST").ok();
    let off = std::env::var("SYNCWEAVE_PRECOMPILE").is_ok_and(|v| v == "0");
    if cross || off {
        println!(
            "cargo::warning=built-in plugins not precompiled ({}): agents compile them at start",
            if cross {
                "cross-compiling"
            } else {
                "SYNCWEAVE_PRECOMPILE=0"
            }
        );
    } else {
        let params = EngineParams::default();
        let dir = out_dir.join("precompiled");
        std::fs::create_dir_all(&dir).unwrap();
        // Compile one after the other (Cranelift already uses every core),
        // then compress all in parallel: level 19 is single-threaded.
        let mut compiled = Vec::new();
        for b in syncweave_builtins::all() {
            let wasm = b.wasm();
            let kind = EngineKind::for_component(&wasm);
            let engine = syncweave_engine::engine(&params, kind)
                .unwrap_or_else(|e| fail(&format!("cannot set up the Wasm engine: {e:#}")));
            let started = Instant::now();
            let bytes = engine
                .precompile_component(&wasm)
                .unwrap_or_else(|e| fail(&format!("precompiling the built-in {}: {e:#}", b.name)));
            let ms = started.elapsed().as_millis();
            compiled.push((b, kind, syncweave_engine::compat_hash(&engine), bytes, ms));
        }
        let compressed: Vec<Vec<u8>> = std::thread::scope(|s| {
            let handles: Vec<_> = compiled
                .iter()
                .map(|(b, _, _, bytes, _)| {
                    s.spawn(move || {
                        syncweave_wasm_build::embed::compress(bytes).unwrap_or_else(|e| {
                            fail(&format!("compressing the built-in {}: {e}", b.name))
                        })
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for ((b, kind, compat, bytes, ms), zst) in compiled.iter().zip(&compressed) {
            let path = dir.join(format!("{}.cwasm.zst", b.name));
            std::fs::write(&path, zst)
                .unwrap_or_else(|e| fail(&format!("cannot write {}: {e}", path.display())));
            writeln!(
                code,
                "    Precompiled {{ digest: {digest:?}, kind: EngineKind::{kind:?}, compat: {compat:?}, \
                 len: {len}, zstd: include_bytes!({path:?}) }}, // {ms} ms, {zlen} bytes compressed",
                digest = b.digest,
                len = bytes.len(),
                zlen = zst.len(),
            )
            .unwrap();
        }
    }
    code.push_str("];\n");
    std::fs::write(out_dir.join("precompiled.rs"), code).unwrap();
}

fn fail(msg: &str) -> ! {
    println!("cargo::error={msg}");
    std::process::exit(1);
}
