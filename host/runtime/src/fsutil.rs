//! Small file-system helpers shared by the runtime and the agent.

use std::path::PathBuf;

pub use syncweave_wasm_build::write_file_atomically as write_atomically;

/// Names (file stems) of the `*.wasm` files in `dirs`, sorted, deduplicated.
pub fn wasm_names_in(dirs: &[PathBuf]) -> Vec<String> {
    let mut names: Vec<String> = dirs
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flatten()
        .flatten()
        .filter_map(|e| {
            let p = e.path();
            (p.extension()? == "wasm").then(|| p.file_stem()?.to_str().map(str::to_string))?
        })
        .collect();
    names.sort();
    names.dedup();
    names
}
