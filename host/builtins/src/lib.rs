//! The built-in plugins, embedded in the binary.
//!
//! `build.rs` compiles every plugin crate directly under `plugins/` (those
//! with a `cdylib` target) to a Wasm component and includes the bytes here,
//! so a `syncweave` binary needs no plugin directory: projection, naming,
//! mutation and the template renderer always travel with it.

/// One embedded component.
#[derive(Debug, Clone, Copy)]
pub struct Builtin {
    /// The name a `PublishedResource` or `syncweave plugin` uses (`naming`).
    pub name: &'static str,
    /// The component bytes.
    pub wasm: &'static [u8],
    /// `sha256:<hex>` of `wasm`, computed when it was built.
    pub digest: &'static str,
}

include!(concat!(env!("OUT_DIR"), "/builtins.rs"));

/// Every embedded plugin, sorted by name.
pub fn all() -> &'static [Builtin] {
    BUILTINS
}

/// The embedded plugin called `name`.
pub fn get(name: &str) -> Option<&'static Builtin> {
    BUILTINS.iter().find(|b| b.name == name)
}

/// Names of the embedded plugins, sorted.
pub fn names() -> impl Iterator<Item = &'static str> {
    BUILTINS.iter().map(|b| b.name)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_four_builtins_are_embedded_components() {
        let names: Vec<_> = super::names().collect();
        for expected in ["mutation", "naming", "projection", "renderer"] {
            assert!(
                names.contains(&expected),
                "{expected} missing from {names:?}"
            );
        }
        for b in super::all() {
            // A component (not a core module): magic, then version 0x0d layer 1.
            assert_eq!(&b.wasm[..4], b"\0asm", "{}", b.name);
            assert_eq!(&b.wasm[4..8], &[0x0d, 0x00, 0x01, 0x00], "{}", b.name);
            assert!(b.digest.starts_with("sha256:") && b.digest.len() == 71);
        }
    }
}
