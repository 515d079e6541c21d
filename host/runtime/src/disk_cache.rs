//! The on-disk cache of compiled components:
//! `<dir>/<engine compatibility hash>/<digest hex>.cwasm`, each entry with a
//! BLAKE3 checksum sidecar (`.cwasm.blake3`).
//!
//! The cache is bounded: before an entry is written, the least recently used
//! entries are deleted until the new one fits under the limit. Entries under
//! another engine's hash (left by an earlier version of the host) can never
//! be loaded by this one, so they go first. A hit refreshes an entry's
//! modification time, which is what "recently used" means here. Without the
//! bound, every plugin version ever loaded stays on disk: in the chart's
//! emptyDir that ends with the kubelet evicting the pod for exceeding its
//! `sizeLimit`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Limit when `SYNCWEAVE_CACHE_MAX_SIZE` is not set: a few dozen compiled
/// plugins (an interpreter-based one, e.g. Python, is ~35 MB compiled).
pub const DEFAULT_MAX_BYTES: u64 = 512 << 20;

/// The environment variable that sets the limit (the chart sets it to the
/// cache volume's `sizeLimit`).
pub const MAX_SIZE_ENV: &str = "SYNCWEAVE_CACHE_MAX_SIZE";

/// A temporary file this old is left over from a writer that died.
const STALE_TMP: Duration = Duration::from_secs(3600);

/// The limit set in the environment: `Ok(None)` when unset.
pub fn max_bytes_from_env() -> Result<Option<u64>, String> {
    match std::env::var(MAX_SIZE_ENV) {
        Ok(v) if !v.trim().is_empty() => parse_size(&v).map(Some).map_err(|e| {
            format!(
                "{MAX_SIZE_ENV}={v:?} is not a size: {e}; write bytes or a quantity such as 512Mi or 1Gi"
            )
        }),
        _ => Ok(None),
    }
}

/// A byte count, plain or as a Kubernetes quantity (`512Mi`, `1.5Gi`,
/// `2G`), as a volume's `sizeLimit` may be written.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let mult: u64 = match unit {
        "" => 1,
        "k" => 1_000,
        "M" => 1_000_000,
        "G" => 1_000_000_000,
        "T" => 1_000_000_000_000,
        "P" => 1_000_000_000_000_000,
        "Ki" => 1 << 10,
        "Mi" => 1 << 20,
        "Gi" => 1 << 30,
        "Ti" => 1 << 40,
        "Pi" => 1 << 50,
        other => {
            return Err(format!(
                "unknown unit {other:?} (use Ki, Mi, Gi, Ti, Pi, k, M, G, T or P)"
            ));
        }
    };
    if num.is_empty() || num.starts_with('.') || num.ends_with('.') || num.matches('.').count() > 1
    {
        return Err("it does not start with a number".to_string());
    }
    if let Some((whole, frac)) = num.split_once('.') {
        // Exact for the fractions quantities are written with (1.5Gi);
        // rounded down to a byte.
        let whole: u64 = whole.parse().map_err(|_| "it is too large".to_string())?;
        let digits = frac.len().min(18) as u32;
        let frac: u64 = frac[..digits as usize]
            .parse()
            .map_err(|_| "it does not start with a number".to_string())?;
        let scale = 10u128.pow(digits);
        let bytes =
            u128::from(whole) * u128::from(mult) + u128::from(frac) * u128::from(mult) / scale;
        return u64::try_from(bytes).map_err(|_| "it is too large".to_string());
    }
    let n: u64 = num.parse().map_err(|_| "it is too large".to_string())?;
    n.checked_mul(mult)
        .ok_or_else(|| "it is too large".to_string())
}

/// The checksum beside a cache entry: BLAKE3 of the file, in hex.
fn sidecar(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".blake3");
    PathBuf::from(s)
}

/// Checksums of the sidecar format written by earlier versions (SHA-256);
/// such entries are recompiled and their old sidecar removed.
fn legacy_sidecar(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".sha256");
    PathBuf::from(s)
}

/// `Ok(false)` when there is no entry; `Ok(true)` when it exists and its
/// checksum matches; `Err(reason)` when it exists but must not be trusted.
/// The file is hashed through a memory map: reading tens of MB into a fresh
/// buffer costs more in page faults than the hashing itself.
pub(crate) fn verify_entry(path: &Path) -> Result<bool, String> {
    match std::fs::metadata(path) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(format!("unreadable: {e}")),
    }
    let expected = std::fs::read_to_string(sidecar(path))
        .map_err(|e| format!("checksum sidecar unreadable: {e}"))?;
    let mut hasher = blake3::Hasher::new();
    hasher
        .update_mmap(path)
        .map_err(|e| format!("unreadable: {e}"))?;
    let actual = hasher.finalize().to_hex();
    if expected.trim() != actual.as_str() {
        return Err(format!(
            "checksum mismatch (sidecar {}, file {actual})",
            expected.trim()
        ));
    }
    Ok(true)
}

/// Mark an entry as just used, so eviction takes others first. Best effort:
/// a read-only cache still serves hits.
pub fn touch(path: &Path) {
    if let Ok(f) = std::fs::File::options().append(true).open(path) {
        let _ = f.set_modified(SystemTime::now());
    }
}

pub(crate) fn remove_entry(path: &Path) {
    let _ = std::fs::remove_file(sidecar(path));
    let _ = std::fs::remove_file(legacy_sidecar(path));
    let _ = std::fs::remove_file(path);
}

/// Where the cache lives, how large it may grow, and which of its
/// directories belong to this host's engines.
#[derive(Debug, Clone)]
pub struct DiskCache {
    pub root: PathBuf,
    pub max_bytes: u64,
    /// Directory names (engine compatibility hashes) this host loads from;
    /// any other directory directly under `root` but [`SOURCES_DIR`] is an
    /// older engine's.
    pub engines: Vec<String>,
}

/// The directory under the cache root where fetched plugin sources are
/// kept (by the agent's fetcher); they count toward the same limit.
pub const SOURCES_DIR: &str = "sources";

/// One evictable thing: an entry with its sidecars, or a stale temp file.
struct Item {
    path: PathBuf,
    bytes: u64,
    used: SystemTime,
    /// Loadable by this host (its engines' entries, fetched sources) rather
    /// than left by an older engine.
    current: bool,
    /// Another writer's temporary file, still being written.
    in_progress: bool,
}

impl DiskCache {
    /// Write `bytes` as the entry at `path` (inside this cache), artefact
    /// first and sidecar second, so a reader that sees the sidecar sees the
    /// complete artefact it describes. Older entries are evicted first to
    /// keep the cache within its limit; an artefact larger than the whole
    /// limit is not cached.
    pub fn write(&self, path: &Path, bytes: &[u8]) -> Result<(), String> {
        self.make_room(path, bytes.len() as u64 + 64)?;
        crate::fsutil::write_atomically(path, bytes).map_err(|e| e.to_string())?;
        crate::fsutil::write_atomically(&sidecar(path), blake3::hash(bytes).to_hex().as_bytes())
            .map_err(|e| e.to_string())?;
        let _ = std::fs::remove_file(legacy_sidecar(path));
        Ok(())
    }

    /// Like [`DiskCache::write`], but the artefact (`len` bytes) is
    /// produced by `fill` writing to the file as it goes, so it never has
    /// to be in memory as a whole (the precompiled built-ins are
    /// decompressed this way). The entry appears, by rename, only once
    /// `fill` succeeded.
    pub fn write_with(
        &self,
        path: &Path,
        len: u64,
        fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
    ) -> Result<(), String> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static N: AtomicU64 = AtomicU64::new(0);
        self.make_room(path, len + 64)?;
        let dir = path.parent().unwrap_or(Path::new("."));
        let tmp = dir.join(format!(
            ".tmp-{}-w{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let hash = (|| {
            std::fs::create_dir_all(dir)?;
            let mut out = std::io::BufWriter::with_capacity(
                256 << 10,
                Hashing {
                    file: std::fs::File::create(&tmp)?,
                    hasher: blake3::Hasher::new(),
                },
            );
            fill(&mut out)?;
            let Hashing { file, hasher } = out.into_inner().map_err(|e| e.into_error())?;
            file.sync_all()?;
            std::fs::rename(&tmp, path)?;
            Ok::<_, std::io::Error>(hasher.finalize())
        })()
        .map_err(|e: std::io::Error| {
            let _ = std::fs::remove_file(&tmp);
            e.to_string()
        })?;
        crate::fsutil::write_atomically(&sidecar(path), hash.to_hex().as_bytes())
            .map_err(|e| e.to_string())?;
        let _ = std::fs::remove_file(legacy_sidecar(path));
        Ok(())
    }

    /// Delete least recently used entries until `incoming` more bytes fit
    /// (an existing entry at `replacing` is about to be overwritten, so it
    /// counts as gone). `Err` when `incoming` alone is over the limit: the
    /// caller does not cache it.
    pub fn make_room(&self, replacing: &Path, incoming: u64) -> Result<(), String> {
        if incoming > self.max_bytes {
            return Err(format!(
                "{incoming} bytes do not fit in the plugin cache at all (its limit is {} bytes); \
                 raise {MAX_SIZE_ENV} (the chart's pluginCache.sizeLimit) to cache this plugin",
                self.max_bytes
            ));
        }
        let now = SystemTime::now();
        let mut items = Vec::new();
        let Ok(dirs) = std::fs::read_dir(&self.root) else {
            return Ok(());
        };
        for dir in dirs.flatten() {
            let dir = dir.path();
            if !dir.is_dir() {
                continue;
            }
            let name = dir.file_name().unwrap_or_default().to_string_lossy();
            let current = name == SOURCES_DIR || self.engines.iter().any(|e| *e == name);
            collect(&dir, current, replacing, now, 0, &mut items);
        }
        let mut total: u64 = items.iter().map(|i| i.bytes).sum();
        // Older engines' entries first, then the least recently used.
        items.sort_by_key(|i| (i.current, i.used));
        let mut evicted = Evicted::default();
        for i in items {
            if total + incoming <= self.max_bytes {
                break;
            }
            if i.in_progress {
                continue;
            }
            remove_entry(&i.path);
            total = total.saturating_sub(i.bytes);
            evicted.files += 1;
            evicted.bytes += i.bytes;
            if !i.current
                && let Some(d) = i.path.parent()
            {
                // Removed only once empty.
                let _ = std::fs::remove_dir(d);
            }
        }
        if evicted.files > 0 {
            tracing::info!(
                dir = %self.root.display(),
                evicted_entries = evicted.files,
                evicted_bytes = evicted.bytes,
                max_bytes = self.max_bytes,
                "plugin cache full; evicted the least recently used entries"
            );
        }
        Ok(())
    }
}

/// The evictable items under `dir` (entries grouped with their sidecars),
/// a few levels deep (`sources/sha256/<hex>`).
fn collect(
    dir: &Path,
    current: bool,
    replacing: &Path,
    now: SystemTime,
    depth: u8,
    items: &mut Vec<Item>,
) {
    let Ok(files) = std::fs::read_dir(dir) else {
        return;
    };
    for f in files.flatten() {
        let p = f.path();
        let Ok(meta) = f.metadata() else { continue };
        if meta.is_dir() {
            if depth < 2 {
                collect(&p, current, replacing, now, depth + 1, items);
            }
            continue;
        }
        let name = f.file_name();
        let name = name.to_string_lossy();
        let used = meta.modified().unwrap_or(now);
        if name.starts_with(".tmp-") {
            // Another writer's file in progress, unless it is old.
            let stale = now.duration_since(used).unwrap_or_default() > STALE_TMP;
            items.push(Item {
                path: p,
                bytes: meta.len(),
                used,
                current: false,
                in_progress: !stale,
            });
            continue;
        }
        let base = match name
            .strip_suffix(".blake3")
            .or_else(|| name.strip_suffix(".sha256"))
        {
            Some(b) => dir.join(b),
            None => p.clone(),
        };
        if base == replacing {
            continue;
        }
        match items.iter_mut().find(|i: &&mut Item| i.path == base) {
            Some(i) => {
                i.bytes += meta.len();
                if p == base {
                    i.used = used;
                }
            }
            None => items.push(Item {
                path: base.clone(),
                bytes: meta.len(),
                // A sidecar alone (its artefact gone) goes first.
                used: if p == base {
                    used
                } else {
                    SystemTime::UNIX_EPOCH
                },
                current,
                in_progress: false,
            }),
        }
    }
}

/// A file that hashes what is written to it.
struct Hashing {
    file: std::fs::File,
    hasher: blake3::Hasher,
}

impl Write for Hashing {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.file.write(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

#[derive(Debug, Default, PartialEq, Eq)]
struct Evicted {
    files: u64,
    bytes: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tempdir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "syncweave-disk-cache-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn cache(root: &Path, max_bytes: u64, engines: &[&str]) -> DiskCache {
        DiskCache {
            root: root.to_path_buf(),
            max_bytes,
            engines: engines.iter().map(|e| e.to_string()).collect(),
        }
    }

    fn age(path: &Path, secs_ago: u64) {
        let f = std::fs::File::options().append(true).open(path).unwrap();
        f.set_modified(SystemTime::now() - Duration::from_secs(secs_ago))
            .unwrap();
    }

    fn size_of(root: &Path) -> u64 {
        let mut n = 0;
        for d in std::fs::read_dir(root).unwrap().flatten() {
            for f in std::fs::read_dir(d.path()).unwrap().flatten() {
                n += f.metadata().unwrap().len();
            }
        }
        n
    }

    #[test]
    fn sizes_parse_as_bytes_or_quantities() {
        assert_eq!(parse_size("1024"), Ok(1024));
        assert_eq!(parse_size("512Mi"), Ok(512 << 20));
        assert_eq!(parse_size(" 1Gi "), Ok(1 << 30));
        assert_eq!(parse_size("2G"), Ok(2_000_000_000));
        assert_eq!(parse_size("1.5Gi"), Ok(3 << 29));
        assert_eq!(parse_size("0.5Mi"), Ok(512 << 10));
        assert!(parse_size("1Gb").unwrap_err().contains("unknown unit"));
        assert!(parse_size("Gi").unwrap_err().contains("number"));
        assert!(parse_size("1.2.3Mi").unwrap_err().contains("number"));
        assert!(parse_size(".5Mi").unwrap_err().contains("number"));
        assert!(
            parse_size("99999999999Ti")
                .unwrap_err()
                .contains("too large")
        );
    }

    #[test]
    fn writing_past_the_limit_evicts_the_least_recently_used_entries() {
        let root = tempdir("lru");
        let cache = cache(&root, 3_000, &["engine-a"]);
        let dir = root.join("engine-a");
        let [a, b, c, d] = ["a", "b", "c", "d"].map(|n| dir.join(format!("{n}.cwasm")));
        cache.write(&a, &[0; 900]).unwrap();
        cache.write(&b, &[0; 900]).unwrap();
        cache.write(&c, &[0; 900]).unwrap();
        age(&a, 300);
        age(&b, 200);
        age(&c, 100);
        // a was used most recently (a hit touches it), so b is the oldest.
        touch(&a);
        cache.write(&d, &[0; 900]).unwrap();
        assert!(a.exists() && c.exists() && d.exists());
        assert!(
            !b.exists() && !sidecar(&b).exists(),
            "b was least recently used"
        );
        assert!(size_of(&root) <= 3_000, "{} bytes", size_of(&root));
        assert_eq!(verify_entry(&d), Ok(true));
    }

    #[test]
    fn another_engines_entries_go_before_this_ones() {
        let root = tempdir("engines");
        let cache = cache(&root, 2_500, &["engine-new"]);
        let old = root.join("engine-old").join("x.cwasm");
        let mine = root.join("engine-new").join("y.cwasm");
        cache.write(&mine, &[0; 900]).unwrap();
        age(&mine, 1_000);
        cache.write(&old, &[0; 900]).unwrap();
        let next = root.join("engine-new").join("z.cwasm");
        cache.write(&next, &[0; 900]).unwrap();
        assert!(mine.exists() && next.exists());
        assert!(
            !root.join("engine-old").exists(),
            "the other engine's entry and its then-empty directory are gone"
        );
    }

    #[test]
    fn an_entry_larger_than_the_limit_is_not_cached_and_evicts_nothing() {
        let root = tempdir("huge");
        let cache = cache(&root, 1_000, &["e"]);
        let small = root.join("e").join("small.cwasm");
        cache.write(&small, &[0; 100]).unwrap();
        let err = cache
            .write(&root.join("e").join("big.cwasm"), &[0; 2_000])
            .unwrap_err();
        assert!(err.contains(MAX_SIZE_ENV), "{err}");
        assert!(small.exists());
    }

    #[test]
    fn rewriting_an_entry_does_not_evict_others_for_its_old_copy() {
        let root = tempdir("rewrite");
        let cache = cache(&root, 2_000, &["e"]);
        let a = root.join("e").join("a.cwasm");
        let b = root.join("e").join("b.cwasm");
        cache.write(&a, &[0; 900]).unwrap();
        cache.write(&b, &[0; 900]).unwrap();
        age(&a, 100);
        cache.write(&b, &[1; 900]).unwrap();
        assert!(a.exists(), "b's old copy made room for its new one");
    }

    #[test]
    fn both_engines_and_fetched_sources_count_and_are_kept_by_recency() {
        let root = tempdir("two-engines");
        let cache = cache(&root, 2_500, &["bounds", "guarded"]);
        let bounds = root.join("bounds").join("a.cwasm");
        let source = root.join(SOURCES_DIR).join("sha256").join("ab12");
        std::fs::create_dir_all(source.parent().unwrap()).unwrap();
        cache.write(&bounds, &[0; 900]).unwrap();
        std::fs::write(&source, [0; 900]).unwrap();
        age(&source, 500);
        // A guarded entry evicts the oldest loadable item (the source), not
        // the other current engine's entry as if it were an old engine's.
        cache
            .write(&root.join("guarded").join("b.cwasm"), &[0; 900])
            .unwrap();
        assert!(bounds.exists());
        assert!(!source.exists(), "the least recently used source went");
        assert!(root.join(SOURCES_DIR).join("sha256").is_dir());
    }

    /// A streamed entry verifies like one written whole; a fill that fails
    /// leaves neither the entry nor a temporary file behind.
    #[test]
    fn streamed_entries_verify_and_failures_leave_nothing() {
        let root = tempdir("write-with");
        let c = cache(&root, 1 << 20, &["e"]);
        let path = root.join("e").join("a.cwasm");
        c.write_with(&path, 3000, |out| {
            for _ in 0..3 {
                out.write_all(&[7; 1000])?;
            }
            Ok(())
        })
        .unwrap();
        assert_eq!(verify_entry(&path), Ok(true));
        assert_eq!(std::fs::read(&path).unwrap(), vec![7; 3000]);

        let failed = root.join("e").join("b.cwasm");
        let err = c
            .write_with(&failed, 10, |out| {
                out.write_all(b"half")?;
                Err(std::io::Error::other("source broke"))
            })
            .unwrap_err();
        assert!(err.contains("source broke"), "{err}");
        assert_eq!(verify_entry(&failed), Ok(false));
        let left: Vec<_> = std::fs::read_dir(root.join("e"))
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert!(left.iter().all(|n| n.starts_with("a.cwasm")), "{left:?}");
        std::fs::remove_dir_all(&root).unwrap();
    }
}
