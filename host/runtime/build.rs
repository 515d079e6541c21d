//! Precompiles the embedded built-in plugins with the engine the runtime
//! will use (`syncweave-engine`, default settings) and generates
//! `precompiled.rs`, which embeds the compiled code: an agent then loads
//! them in milliseconds instead of compiling them at start (seconds, and
//! Cranelift's memory peak). Wasmtime checks the code against the running
//! engine when it is loaded; if it does not fit (other CPU features, other
//! settings) the runtime compiles as before.
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
        for b in syncweave_builtins::all() {
            let kind = EngineKind::for_component(b.wasm);
            let engine = syncweave_engine::engine(&params, kind)
                .unwrap_or_else(|e| fail(&format!("cannot set up the Wasm engine: {e:#}")));
            let started = Instant::now();
            let bytes = engine
                .precompile_component(b.wasm)
                .unwrap_or_else(|e| fail(&format!("precompiling the built-in {}: {e:#}", b.name)));
            let path = dir.join(format!("{}.cwasm", b.name));
            std::fs::write(&path, &bytes)
                .unwrap_or_else(|e| fail(&format!("cannot write {}: {e}", path.display())));
            writeln!(
                code,
                "    Precompiled {{ digest: {digest:?}, kind: EngineKind::{kind:?}, compat: {compat:?}, \
                 code: include_bytes!({path:?}) }}, // {ms} ms, {len} bytes",
                digest = b.digest,
                compat = syncweave_engine::compat_hash(&engine),
                ms = started.elapsed().as_millis(),
                len = bytes.len(),
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
