//! The built-in plugins, embedded in the binary.
//!
//! `build.rs` compiles every plugin crate directly under `plugins/` (those
//! with a `cdylib` target) to a Wasm component and includes the bytes here,
//! so a `syncweave` binary needs no plugin directory: projection, naming,
//! mutation and the template renderer always travel with it.
//!
//! The components are embedded zstd-compressed (8 MB become about 2) and
//! decompressed only when asked for: with the precompiled machine code in
//! the runtime, most starts never need a component's bytes at all.

use std::io::{Read, Write};

/// One embedded component.
#[derive(Debug, Clone, Copy)]
pub struct Builtin {
    /// The name a `PublishedResource` or `syncweave plugin` uses (`naming`).
    pub name: &'static str,
    /// The component's length in bytes.
    pub len: usize,
    /// The component, as one zstd frame ([`Builtin::wasm`] decompresses it).
    pub zstd: &'static [u8],
    /// `sha256:<hex>` of the component, computed when it was built.
    pub digest: &'static str,
}

impl Builtin {
    /// The component bytes, decompressed (a few milliseconds per MB; the
    /// caller keeps them only as long as it needs them).
    pub fn wasm(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len);
        // The frame was written by this crate's build script: a failure here
        // is a corrupt binary, not a user error.
        decompress_into(self.zstd, self.len, &mut out)
            .unwrap_or_else(|e| panic!("embedded built-in {}: {e}", self.name));
        out
    }
}

/// Decompress `frame`, one zstd frame that a build script embedded (see
/// `syncweave_wasm_build::embed`), into `out`, checking that it is exactly
/// `len` bytes long. Also used for the runtime's precompiled code.
pub fn decompress_into(frame: &[u8], len: usize, out: &mut dyn Write) -> std::io::Result<()> {
    let mut input = frame;
    let decoder = ruzstd::decoding::StreamingDecoder::new(&mut input)
        .map_err(|e| std::io::Error::other(format!("embedded zstd frame: {e}")))?;
    // At most one byte past the expected length is read, so a wrong
    // length shows without decoding further.
    let copied = std::io::copy(&mut decoder.take(len as u64 + 1), out)?;
    if copied != len as u64 {
        return Err(std::io::Error::other(format!(
            "embedded zstd frame decompressed to {copied} bytes, expected {len}"
        )));
    }
    Ok(())
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
            let wasm = b.wasm();
            // A component (not a core module): magic, then version 0x0d layer 1.
            assert_eq!(&wasm[..4], b"\0asm", "{}", b.name);
            assert_eq!(&wasm[4..8], &[0x0d, 0x00, 0x01, 0x00], "{}", b.name);
            assert!(b.zstd.len() < wasm.len() / 2, "{} compresses", b.name);
            assert!(b.digest.starts_with("sha256:") && b.digest.len() == 71);
        }
    }
}
