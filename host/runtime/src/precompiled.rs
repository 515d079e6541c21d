//! The embedded built-in plugins, compiled by this crate's build script with
//! the engine settings the runtime uses by default ([`syncweave_engine`]),
//! and embedded zstd-compressed.
//!
//! A built-in's code is decompressed only when the built-in is first loaded
//! (most configurations use two or three of the four), and then straight
//! into its compiled-plugin cache file, a block at a time: wasmtime maps it
//! from there, so the code stays file-backed (clean pages the kernel can
//! drop, shared by every process that maps it) and only the part that runs
//! becomes resident. Without a cache directory it is decompressed into
//! memory.

use std::io::Write;
use std::path::Path;

use syncweave_engine::EngineKind;
use wasmtime::Engine;
use wasmtime::component::Component;

/// One built-in's compiled code.
pub(crate) struct Precompiled {
    /// The digest of the component it was compiled from.
    pub digest: &'static str,
    pub kind: EngineKind,
    /// The compatibility hash of the engine that compiled it.
    pub compat: &'static str,
    /// The length of what `Engine::precompile_component` returned.
    pub len: usize,
    /// That code, as one zstd frame.
    pub zstd: &'static [u8],
}

include!(concat!(env!("OUT_DIR"), "/precompiled.rs"));

/// The compiled code of the built-in whose component has `digest`, for an
/// engine of `kind`.
pub(crate) fn get(digest: &str, kind: EngineKind) -> Option<&'static Precompiled> {
    PRECOMPILED
        .iter()
        .find(|p| p.digest == digest && p.kind == kind)
}

impl Precompiled {
    /// The component, made from this code, for an engine whose
    /// compatibility hash is `compat` (anything else could not load it:
    /// nothing is decompressed then). With a cache directory, the code is
    /// decompressed into the cache entry of its digest and mapped from that
    /// file, so only the code that runs becomes resident (a copy in memory
    /// would hold all of it); the binary's pages it was read from are
    /// handed back to the kernel either way.
    pub(crate) fn load(
        &self,
        engine: &Engine,
        compat: &str,
        cache: Option<(crate::disk_cache::DiskCache, &Path)>,
    ) -> Result<Component, String> {
        if compat != self.compat {
            return Err(format!(
                "compiled for engine {}, this one is {compat}",
                self.compat
            ));
        }
        let written = match cache {
            Some((cache, path)) => {
                match cache.write_with(path, self.len as u64, |out| self.decompress_into(out)) {
                    Ok(()) => Some(path),
                    Err(e) => {
                        tracing::warn!(path = %path.display(), error = %e, "cannot write the compiled-component cache; loading the precompiled built-in from memory");
                        None
                    }
                }
            }
            None => None,
        };
        // SAFETY: the code was produced by `Engine::precompile_component`
        // when this binary was built, from the component of exactly this
        // digest, and is part of the binary itself (decompressed into
        // memory, or into a file just renamed into a directory only this
        // host writes, to exactly the length it had); wasmtime checks that
        // the code fits this engine (settings, CPU features) first.
        let loaded = match written {
            Some(path) => unsafe { Component::deserialize_file(engine, path) }
                .map_err(|e| format!("{e:#}"))
                .inspect_err(|_| crate::disk_cache::remove_entry(path)),
            None => {
                let mut code = Vec::with_capacity(self.len);
                match self.decompress_into(&mut code) {
                    Ok(()) => unsafe { Component::deserialize(engine, &code) }
                        .map_err(|e| format!("{e:#}")),
                    Err(e) => Err(e.to_string()),
                }
            }
        };
        release(self.zstd);
        loaded
    }

    /// Decompress the code into `out`, checking its length.
    fn decompress_into(&self, out: &mut dyn Write) -> std::io::Result<()> {
        syncweave_builtins::decompress_into(self.zstd, self.len, out)
    }
}

/// Tell the kernel that the pages of `bytes` (read-only data of this
/// executable) are not needed now: they are dropped from memory and read
/// from the file again if ever touched, instead of counting towards the
/// agent's resident memory for the life of the process.
fn release(bytes: &'static [u8]) {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: sysconf has no preconditions.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096);
        let start = (bytes.as_ptr() as usize).next_multiple_of(page);
        let end = (bytes.as_ptr() as usize + bytes.len()) / page * page;
        if end > start {
            // SAFETY: whole pages inside a `&'static [u8]` of the binary's
            // read-only data, a private file mapping never written to: after
            // MADV_DONTNEED they read back from the file with the same
            // content, so every reference into them stays valid.
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_DONTNEED);
            }
        }
    }
}

/// How many built-ins were precompiled into this binary.
pub fn count() -> usize {
    PRECOMPILED.len()
}

#[cfg(test)]
mod tests {
    /// Every embedded built-in decompresses to the length it was compiled
    /// to (what `load` writes into the cache).
    #[test]
    fn embedded_code_decompresses() {
        for p in super::PRECOMPILED {
            p.decompress_into(&mut std::io::sink())
                .unwrap_or_else(|e| panic!("{}: {e}", p.digest));
            assert!(p.zstd.len() < p.len, "{}: compressed", p.digest);
        }
    }
}
