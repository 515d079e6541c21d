//! Embeds the plugin contracts (`wit/plugin.wit`, 0.1, and `wit/v0.2/plugin.wit`, 0.2)
//! into `macro_rules!` macros.
//!
//! The role macros (`mutator!`, `v2::mutator!` and friends) run wit-bindgen inside the
//! *plugin* crate, so that a component carries exactly one world. wit-bindgen's proc macro
//! cannot expand user macros, so the WIT text has to sit in the macro definition as a
//! literal; a build script is the only way to get it there without copying the contract
//! by hand.
use std::{env, fs, path::PathBuf};

fn read_contract(manifest_dir: &std::path::Path, rel: &str) -> String {
    let wit_path = manifest_dir.join(rel);
    println!("cargo:rerun-if-changed={}", wit_path.display());
    fs::read_to_string(&wit_path).unwrap_or_else(|err| {
        panic!(
            "cannot read the plugin contract at {}: {err}; the SDK must stay inside the syncweave \
             repository (sdk/rust next to wit/)",
            wit_path.display()
        )
    })
}

/// A `macro_rules!` macro named `name` that runs wit-bindgen for one world of `wit`.
fn generate_macro(name: &str, wit: &str) -> String {
    // `{:?}` of a str is a valid Rust string literal (quotes and escapes included).
    format!(
        "/// Runs wit-bindgen for one world of the embedded contract, in the calling crate.\n\
         #[doc(hidden)]\n\
         #[macro_export]\n\
         macro_rules! {name} {{\n\
         \x20   ($world:literal) => {{\n\
         \x20       $crate::__private::wit_bindgen::generate!({{\n\
         \x20           inline: {wit:?},\n\
         \x20           world: $world,\n\
         \x20           runtime_path: \"::syncweave_plugin::__private::wit_bindgen::rt\",\n\
         \x20       }});\n\
         \x20   }};\n\
         }}\n"
    )
}

fn main() {
    let manifest_dir =
        PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));

    let v1 = read_contract(&manifest_dir, "../../wit/plugin.wit");
    let generated = format!(
        "{}/// The plugin contract this SDK's 0.1 API builds against (`syncweave:plugin@0.1.0`).\n\
         pub const WIT: &str = {v1:?};\n",
        generate_macro("__syncweave_generate", &v1)
    );
    let out = out_dir.join("contract.rs");
    fs::write(&out, generated)
        .unwrap_or_else(|err| panic!("cannot write {}: {err}", out.display()));

    let v2 = read_contract(&manifest_dir, "../../wit/v0.2/plugin.wit");
    let generated = format!(
        "{}/// The plugin contract the [`v2`](self) API builds against (`syncweave:plugin@0.2.0`).\n\
         pub const WIT: &str = {v2:?};\n",
        generate_macro("__syncweave_generate_v2", &v2)
    );
    let out = out_dir.join("contract_v2.rs");
    fs::write(&out, generated)
        .unwrap_or_else(|err| panic!("cannot write {}: {err}", out.display()));
}
