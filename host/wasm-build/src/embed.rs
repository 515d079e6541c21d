//! Compression of what the build scripts embed in the binary (the built-in
//! components, their precompiled code). One setting for both, decoded by
//! `syncweave_builtins::decompress_into`.

/// zstd level: 19 is the highest before the `--ultra` levels. Decoding
/// speed barely depends on it; it costs the build about 15 CPU seconds per
/// 16 MB.
pub const LEVEL: i32 = 19;

/// A 2 MiB window (level 19 would pick 8 MiB for the larger inputs): the
/// decoder's buffer is the window, held while something is decompressed,
/// and the smaller window costs 2.6 % of ratio.
pub const WINDOW_LOG: u32 = 21;

/// `bytes` as one zstd frame (about 4x smaller for components and
/// machine code).
pub fn compress(bytes: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut c = zstd::bulk::Compressor::new(LEVEL)?;
    c.set_parameter(zstd::stream::raw::CParameter::WindowLog(WINDOW_LOG))?;
    c.compress(bytes)
}
