//! A content-addressed store of fetched bytes: `<dir>/sha256/<hex>`.
//!
//! Entries are written atomically (temporary file, then rename) and hashed
//! again on every read, so a truncated or altered file is never handed out:
//! it is deleted and the caller fetches afresh.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

#[derive(Debug, Clone)]
pub struct BlobCache {
    dir: PathBuf,
    /// Keeps the plugin cache (this store and the compiled plugins beside
    /// it) within its size limit.
    bound: Option<syncweave_runtime::DiskCache>,
}

impl BlobCache {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        BlobCache {
            dir: dir.into(),
            bound: None,
        }
    }

    pub fn with_bound(mut self, bound: Option<syncweave_runtime::DiskCache>) -> Self {
        self.bound = bound;
        self
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Path of the entry for `digest` (`sha256:<hex>`); `None` for any other
    /// form, so a crafted digest can never name a path outside the cache.
    pub fn path(&self, digest: &str) -> Option<PathBuf> {
        let hex = digest.strip_prefix("sha256:")?;
        let valid = hex.len() == 64
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        valid.then(|| self.dir.join("sha256").join(hex))
    }

    /// The bytes stored for `digest`, if present, verified, and at most
    /// `max_bytes` long.
    pub fn get(&self, digest: &str, max_bytes: u64) -> Option<Vec<u8>> {
        let path = self.path(digest)?;
        let meta = std::fs::metadata(&path).ok()?;
        if meta.len() > max_bytes {
            return None;
        }
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) => {
                if e.kind() != std::io::ErrorKind::NotFound {
                    tracing::warn!(path = %path.display(), error = %e, "cannot read cached plugin source; fetching again");
                }
                return None;
            }
        };
        if sha256_digest(&bytes) != digest {
            tracing::warn!(path = %path.display(), digest, "cached plugin source does not match its digest; deleting it and fetching again");
            let _ = std::fs::remove_file(&path);
            return None;
        }
        // Recently used: evicted after the others.
        syncweave_runtime::touch(&path);
        Some(bytes)
    }

    /// Store `bytes` under their own digest. Failures are logged, not
    /// returned: the cache only saves work.
    pub fn put(&self, bytes: &[u8]) {
        let digest = sha256_digest(bytes);
        let Some(path) = self.path(&digest) else {
            return;
        };
        if path.exists() {
            return;
        }
        if let Some(bound) = &self.bound
            && let Err(e) = bound.make_room(&path, bytes.len() as u64)
        {
            tracing::warn!(digest, error = %e, "not caching the plugin source");
            return;
        }
        if let Err(e) = syncweave_runtime::fsutil::write_atomically(&path, bytes) {
            tracing::warn!(path = %path.display(), error = %e, "cannot write the plugin source cache; continuing without it");
        }
    }
}

/// `sha256:<hex>` of `bytes`.
pub fn sha256_digest(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tempdir() -> PathBuf {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let d =
            std::env::temp_dir().join(format!("syncweave-blobcache-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn round_trip_and_tamper_detection() {
        let cache = BlobCache::new(tempdir());
        let bytes = b"\0asm component bytes".to_vec();
        let digest = sha256_digest(&bytes);
        assert_eq!(cache.get(&digest, 1 << 20), None);
        cache.put(&bytes);
        assert_eq!(cache.get(&digest, 1 << 20), Some(bytes.clone()));
        // Over the size limit: not served.
        assert_eq!(cache.get(&digest, 3), None);

        // Altered on disk: rejected and removed.
        let path = cache.path(&digest).unwrap();
        std::fs::write(&path, b"tampered").unwrap();
        assert_eq!(cache.get(&digest, 1 << 20), None);
        assert!(!path.exists());
        // No temporary files are left behind.
        let leftovers: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with(".tmp-"))
            .collect();
        assert!(leftovers.is_empty());
    }

    #[test]
    fn sources_stay_within_the_shared_plugin_cache_limit() {
        let root = tempdir();
        let bound = syncweave_runtime::DiskCache {
            root: root.clone(),
            max_bytes: 2_500,
            engines: vec!["engine".into()],
        };
        let cache = BlobCache::new(root.join(syncweave_runtime::SOURCES_DIR))
            .with_bound(Some(bound.clone()));
        let (a, b, c) = (vec![1u8; 1_000], vec![2u8; 1_000], vec![3u8; 1_000]);
        cache.put(&a);
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
        let path_a = cache.path(&sha256_digest(&a)).unwrap();
        std::fs::File::options()
            .append(true)
            .open(&path_a)
            .unwrap()
            .set_modified(old)
            .unwrap();
        cache.put(&b);
        cache.put(&c);
        assert!(
            !path_a.exists(),
            "the least recently used source was evicted"
        );
        assert_eq!(cache.get(&sha256_digest(&c), 1 << 20), Some(c));
        assert_eq!(cache.get(&sha256_digest(&b), 1 << 20), Some(b));
        // Larger than the whole limit: not cached, nothing evicted for it.
        let huge = vec![4u8; 3_000];
        cache.put(&huge);
        assert_eq!(cache.get(&sha256_digest(&huge), 1 << 20), None);
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn only_sha256_digests_name_entries() {
        let cache = BlobCache::new("/cache");
        assert_eq!(cache.path("sha256:../../etc/passwd"), None);
        assert_eq!(cache.path("md5:abcd"), None);
        assert_eq!(cache.path(&format!("sha256:{}", "A".repeat(64))), None);
        assert_eq!(
            cache.path(&format!("sha256:{}", "a".repeat(64))),
            Some(PathBuf::from(format!("/cache/sha256/{}", "a".repeat(64))))
        );
    }
}
