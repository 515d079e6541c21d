//! Embeds the plugin contract (`wit/plugin.wit`) into a `macro_rules!` macro.
//!
//! The role macros (`mutator!` and friends) run wit-bindgen inside the *plugin* crate,
//! so that a component carries exactly one world. wit-bindgen's proc macro cannot
//! expand user macros, so the WIT text has to sit in the macro definition as a
//! literal; a build script is the only way to get it there without copying the
//! contract by hand.
use std::{env, fs, path::PathBuf};

fn main() {
    let manifest_dir =
        PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let wit_path = manifest_dir.join("../../wit/plugin.wit");
    println!("cargo:rerun-if-changed={}", wit_path.display());
    let wit = fs::read_to_string(&wit_path).unwrap_or_else(|err| {
        panic!(
            "cannot read the plugin contract at {}: {err}; the SDK must stay inside the syncweave \
             repository (sdk/rust next to wit/)",
            wit_path.display()
        )
    });
    // `{:?}` of a str is a valid Rust string literal (quotes and escapes included).
    let generated = format!(
        "/// Runs wit-bindgen for one world of the embedded contract, in the calling crate.\n\
         #[doc(hidden)]\n\
         #[macro_export]\n\
         macro_rules! __syncweave_generate {{\n\
         \x20   ($world:literal) => {{\n\
         \x20       $crate::__private::wit_bindgen::generate!({{\n\
         \x20           inline: {wit:?},\n\
         \x20           world: $world,\n\
         \x20           runtime_path: \"::syncweave_plugin::__private::wit_bindgen::rt\",\n\
         \x20       }});\n\
         \x20   }};\n\
         }}\n\
         /// The plugin contract this SDK was built against.\n\
         pub const WIT: &str = {wit:?};\n"
    );
    let out =
        PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("contract.rs");
    fs::write(&out, generated)
        .unwrap_or_else(|err| panic!("cannot write {}: {err}", out.display()));
}
