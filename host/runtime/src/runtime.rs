//! The engine, its compiled-component cache and plugin loading.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::{Component, Linker};

pub use syncweave_engine::EngineKind;
use syncweave_engine::EngineParams;

use crate::bindings;
use crate::disk_cache::{DiskCache, remove_entry, touch, verify_entry};
use crate::failure::{FailureKind, PluginFailure};
use crate::host::HostState;
use crate::plugin::{Compiled, Plugin, WorldPre};
use crate::pool::CallPool;
use crate::world::{self, ContractVersion};

/// Per-call resource limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Wall-clock budget for one call, instantiation included.
    pub timeout: Duration,
    /// Linear memory the instance may hold, summed over its memories.
    pub memory_bytes: u64,
    /// Largest result accepted (for `render`, all documents together).
    pub max_output_bytes: usize,
    /// Guest log text kept per call (host-log lines plus WASI stdout/stderr).
    pub max_log_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            timeout: Duration::from_millis(100),
            memory_bytes: 64 << 20,
            // etcd stores objects up to 1.5 MiB; leave room for a render
            // that returns several of them.
            max_output_bytes: 8 << 20,
            max_log_bytes: 64 << 10,
        }
    }
}

/// How to set up a [`Runtime`].
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    /// Directory for compiled components; `None` compiles every process start.
    pub cache_dir: Option<PathBuf>,
    /// Bytes the cache directory may hold; least recently used entries are
    /// evicted to stay within it (`SYNCWEAVE_CACHE_MAX_SIZE`, else 512 MiB).
    pub cache_max_bytes: u64,
    /// Limits for plugins loaded without their own.
    pub default_limits: Limits,
    /// A directory whose `<name>.wasm` files override the embedded built-in
    /// plugins; `None` searches only the default places (see
    /// [`Runtime::builtin_dirs`]).
    pub plugin_dir: Option<PathBuf>,
    /// Instances that may exist at once, i.e. concurrent calls.
    pub max_instances: u32,
    /// Calls made through [`Runtime::call_pool`] that may run at once, each
    /// on a thread of Tokio's blocking pool; the number of cores by default.
    pub max_concurrent_calls: usize,
    /// Ceiling for any plugin's `memory_bytes`: the size of a pool slot.
    pub max_memory_bytes: u64,
    /// Granularity of timeouts: how often the epoch advances.
    pub epoch_tick: Duration,
    /// Dirty linear-memory bytes per pool slot that are reset by copying and
    /// stay resident between calls, instead of being returned to the kernel
    /// (which costs page faults on the next call and TLB shootdowns now).
    pub keep_resident_bytes: usize,
    /// Read plugins' DWARF debug info, when they carry it, so that trap
    /// backtraces name source files and lines (`plugin replay`). Off in the
    /// agent: it costs memory and compile time, and the precompiled
    /// built-ins are built without it. Function names (from the component's
    /// name section) are in backtraces either way.
    pub backtrace_details: bool,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        let engine = EngineParams::default();
        RuntimeConfig {
            cache_dir: default_cache_dir(),
            // An invalid value is reported by `Runtime::new`.
            cache_max_bytes: crate::disk_cache::max_bytes_from_env()
                .ok()
                .flatten()
                .unwrap_or(crate::disk_cache::DEFAULT_MAX_BYTES),
            default_limits: Limits::default(),
            plugin_dir: None,
            max_instances: engine.max_instances,
            max_concurrent_calls: crate::pool::available_cores(),
            max_memory_bytes: engine.max_memory_bytes,
            epoch_tick: Duration::from_millis(5),
            keep_resident_bytes: engine.keep_resident_bytes,
            backtrace_details: engine.backtrace_details,
        }
    }
}

impl RuntimeConfig {
    /// The part of this configuration the engines are built from (the
    /// built-ins are precompiled with the defaults).
    fn engine_params(&self) -> EngineParams {
        EngineParams {
            max_instances: self.max_instances,
            max_memory_bytes: self.max_memory_bytes,
            keep_resident_bytes: self.keep_resident_bytes,
            backtrace_details: self.backtrace_details,
        }
    }
}

/// `$SYNCWEAVE_CACHE_DIR`, else `$XDG_CACHE_HOME/syncweave/wasm`, else
/// `$HOME/.cache/syncweave/wasm`.
pub fn default_cache_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("SYNCWEAVE_CACHE_DIR").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(d));
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("syncweave").join("wasm"))
}

#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error("cannot set up the Wasm engine: {0}")]
    Engine(String),
    #[error(
        "invalid runtime config: default memory limit {limit} bytes exceeds max_memory_bytes \
         {max}; raise max_memory_bytes or lower the limit"
    )]
    MemoryCeiling { limit: u64, max: u64 },
    #[error("invalid compiled-plugin cache size: {0}")]
    CacheSize(String),
}

/// Counters for what loading did, for tests, metrics and `plugin inspect`.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct RuntimeStats {
    /// Components compiled from Wasm (cache misses).
    pub compiled: u64,
    /// Components loaded from the on-disk cache.
    pub disk_hits: u64,
    /// Built-ins loaded from the code precompiled into the binary.
    pub precompiled: u64,
    /// Loads answered from the in-memory digest map.
    pub memory_hits: u64,
    /// Cache entries rejected (bad checksum, incompatible, unreadable).
    pub cache_rejected: u64,
    /// Compiled components held in memory now: the built-ins, plus every
    /// digest some loaded [`Plugin`] still uses.
    pub resident: u64,
}

#[derive(Default)]
struct Counters {
    compiled: AtomicU64,
    disk_hits: AtomicU64,
    precompiled: AtomicU64,
    memory_hits: AtomicU64,
    cache_rejected: AtomicU64,
}

pub(crate) struct EngineSet {
    pub engine: Engine,
    linker: Linker<HostState>,
    /// Engine compatibility hash in hex: cache entries live under it, so an
    /// upgraded host never even looks at another engine's artefacts.
    compat: String,
}

impl EngineSet {
    fn new(cfg: &RuntimeConfig, kind: EngineKind) -> Result<EngineSet, RuntimeError> {
        let engine = syncweave_engine::engine(&cfg.engine_params(), kind)
            .map_err(|e| RuntimeError::Engine(format!("{e:#}")))?;
        let mut linker = Linker::<HostState>::new(&engine);
        bindings::host_log::add_to_linker::<HostState, wasmtime::component::HasSelf<HostState>>(
            &mut linker,
            |s| s,
        )
        .map_err(|e| RuntimeError::Engine(format!("linking host-log: {e:#}")))?;
        bindings::types::add_to_linker::<HostState, wasmtime::component::HasSelf<HostState>>(
            &mut linker,
            |s| s,
        )
        .map_err(|e| RuntimeError::Engine(format!("linking types: {e:#}")))?;
        // 0.2 beside 0.1: the same linker serves both (the versions differ
        // in their names), so a component links whichever it imports.
        type Own = wasmtime::component::HasSelf<HostState>;
        bindings::v0_2::host_log::add_to_linker::<HostState, Own>(&mut linker, |s| s)
            .map_err(|e| RuntimeError::Engine(format!("linking host-log 0.2: {e:#}")))?;
        bindings::v0_2::types::add_to_linker::<HostState, Own>(&mut linker, |s| s)
            .map_err(|e| RuntimeError::Engine(format!("linking types 0.2: {e:#}")))?;
        bindings::v0_2::reads::add_to_linker::<HostState, Own>(&mut linker, |s| s)
            .map_err(|e| RuntimeError::Engine(format!("linking reads 0.2: {e:#}")))?;
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker)
            .map_err(|e| RuntimeError::Engine(format!("linking WASI: {e:#}")))?;
        let compat = syncweave_engine::compat_hash(&engine);
        Ok(EngineSet {
            engine,
            linker,
            compat,
        })
    }
}

pub(crate) struct Inner {
    bounds_checked: EngineSet,
    guarded: EngineSet,
    cfg: RuntimeConfig,
    /// digest → compiled component; the slot's own lock makes concurrent
    /// loads of one digest compile once. A slot holds its component weakly:
    /// once no [`Plugin`] of a digest is left (no PublishedResource,
    /// InitTarget or WasmPlugin uses it), its compiled code is freed and
    /// the slot swept, so memory follows the digests in use, not every
    /// digest ever seen.
    slots: Mutex<HashMap<String, Slot>>,
    /// The built-ins' components, kept for the life of the runtime: any
    /// PublishedResource may name them at any time, and there are few.
    pinned: Mutex<HashMap<String, Arc<Compiled>>>,
    counters: Counters,
    calls: CallPool,
    /// Told about every role call that fails (see [`Runtime::on_call_failure`]).
    hook: crate::failed_call::HookSlot,
}

/// One digest's compiled component, filled by the first load and empty
/// again once every plugin using it is gone.
type Slot = Arc<Mutex<Weak<Compiled>>>;

/// The plugin runtime: one per process, cheap to clone.
#[derive(Clone)]
pub struct Runtime {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("cache_dir", &self.inner.cfg.cache_dir)
            .field("stats", &self.stats())
            .finish()
    }
}

impl Runtime {
    pub fn new(cfg: RuntimeConfig) -> Result<Runtime, RuntimeError> {
        if cfg.default_limits.memory_bytes > cfg.max_memory_bytes {
            return Err(RuntimeError::MemoryCeiling {
                limit: cfg.default_limits.memory_bytes,
                max: cfg.max_memory_bytes,
            });
        }
        crate::disk_cache::max_bytes_from_env().map_err(RuntimeError::CacheSize)?;
        let bounds_checked = EngineSet::new(&cfg, EngineKind::BoundsChecked)?;
        let guarded = EngineSet::new(&cfg, EngineKind::Guarded)?;
        start_epoch_ticker(&[&bounds_checked.engine, &guarded.engine], cfg.epoch_tick);
        Ok(Runtime {
            inner: Arc::new(Inner {
                bounds_checked,
                guarded,
                slots: Mutex::default(),
                pinned: Mutex::default(),
                counters: Counters::default(),
                calls: CallPool::new(cfg.max_concurrent_calls),
                hook: Default::default(),
                cfg,
            }),
        })
    }

    fn engine_set(&self, kind: EngineKind) -> &EngineSet {
        match kind {
            EngineKind::BoundsChecked => &self.inner.bounds_checked,
            EngineKind::Guarded => &self.inner.guarded,
        }
    }

    /// The engine components of `kind` are compiled for.
    pub fn engine(&self, kind: EngineKind) -> &Engine {
        &self.engine_set(kind).engine
    }

    pub fn config(&self) -> &RuntimeConfig {
        &self.inner.cfg
    }

    /// Where async callers run plugin calls: the blocking pool, at most
    /// [`RuntimeConfig::max_concurrent_calls`] at once across all clones
    /// of this runtime.
    pub fn call_pool(&self) -> &CallPool {
        &self.inner.calls
    }

    /// Install the hook told about every role call of this runtime's
    /// plugins that fails while running the guest (once; later calls
    /// return false). Plugins loaded before and after both report to it.
    pub fn on_call_failure(&self, hook: crate::failed_call::FailureHook) -> bool {
        self.inner.hook.set(hook).is_ok()
    }

    pub fn stats(&self) -> RuntimeStats {
        let c = &self.inner.counters;
        RuntimeStats {
            compiled: c.compiled.load(Ordering::Relaxed),
            disk_hits: c.disk_hits.load(Ordering::Relaxed),
            precompiled: c.precompiled.load(Ordering::Relaxed),
            memory_hits: c.memory_hits.load(Ordering::Relaxed),
            cache_rejected: c.cache_rejected.load(Ordering::Relaxed),
            resident: self.resident() as u64,
        }
    }

    /// Compiled components alive: those some slot can still reach.
    fn resident(&self) -> usize {
        let slots = self.inner.slots.lock().unwrap_or_else(|e| e.into_inner());
        slots
            .values()
            .filter(|s| match s.try_lock() {
                Ok(w) => w.strong_count() > 0,
                // Being filled right now.
                Err(_) => true,
            })
            .count()
    }

    /// Where the compiled form of `plugin` is cached, if caching is on.
    pub fn cache_path(&self, plugin: &Plugin) -> Option<PathBuf> {
        self.cache_path_for(plugin.engine_kind(), plugin.digest())
    }

    fn cache_path_for(&self, kind: EngineKind, digest: &str) -> Option<PathBuf> {
        let hex = digest.strip_prefix("sha256:").unwrap_or(digest);
        let compat = &self.engine_set(kind).compat;
        self.inner
            .cfg
            .cache_dir
            .as_ref()
            .map(|d| d.join(compat).join(format!("{hex}.cwasm")))
    }

    /// The on-disk cache and its bound, if caching is on (the agent keeps
    /// fetched plugin sources under it too, within the same limit).
    pub fn disk_cache(&self) -> Option<DiskCache> {
        let cfg = &self.inner.cfg;
        cfg.cache_dir.as_ref().map(|root| DiskCache {
            root: root.clone(),
            max_bytes: cfg.cache_max_bytes,
            engines: vec![
                self.inner.bounds_checked.compat.clone(),
                self.inner.guarded.compat.clone(),
            ],
        })
    }

    /// Compile (or fetch from cache) a component and bind it to `name`.
    pub fn load(
        &self,
        name: &str,
        wasm: &[u8],
        limits: Option<Limits>,
    ) -> Result<Arc<Plugin>, PluginFailure> {
        let digest = format!("sha256:{}", hex::encode(Sha256::digest(wasm)));
        self.load_with_digest(name, &digest, wasm, limits)
    }

    /// [`Runtime::load`] for a caller that already knows the component's
    /// digest (`sha256:<hex>` of `wasm`, e.g. verified when it was fetched),
    /// which saves hashing it again: for a large guest that is a quarter of a
    /// cached load. The digest keys the caches, so it must be right.
    pub fn load_with_digest(
        &self,
        name: &str,
        digest: &str,
        wasm: &[u8],
        limits: Option<Limits>,
    ) -> Result<Arc<Plugin>, PluginFailure> {
        self.load_digest_lazily(name, digest, &|| Cow::Borrowed(wasm), limits)
    }

    /// [`Runtime::load_with_digest`] with the bytes asked for only when the
    /// component is not compiled yet: the embedded built-ins are
    /// decompressed only then.
    fn load_digest_lazily<'w>(
        &self,
        name: &str,
        digest: &str,
        wasm: &dyn Fn() -> Cow<'w, [u8]>,
        limits: Option<Limits>,
    ) -> Result<Arc<Plugin>, PluginFailure> {
        let digest = digest.to_string();
        let fail = |kind, msg: String| PluginFailure::new(name, digest.clone(), kind, msg);
        // The digest names a cache file: only the exact form may get that far.
        let well_formed = digest.strip_prefix("sha256:").is_some_and(|hex| {
            hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        });
        if !well_formed {
            return Err(fail(
                FailureKind::Load,
                "the digest is not of the form sha256:<64 lower-case hex digits>".into(),
            ));
        }
        let limits = limits.unwrap_or(self.inner.cfg.default_limits);
        if limits.memory_bytes > self.inner.cfg.max_memory_bytes {
            return Err(fail(
                FailureKind::Load,
                format!(
                    "memory limit {} bytes exceeds the runtime's ceiling of {} bytes; \
                     lower the plugin's limit or raise RuntimeConfig::max_memory_bytes",
                    limits.memory_bytes, self.inner.cfg.max_memory_bytes
                ),
            ));
        }
        let slot = {
            let mut slots = self.inner.slots.lock().unwrap_or_else(|e| e.into_inner());
            // Sweep slots whose component is gone (a slot being filled is
            // locked, and kept).
            slots
                .retain(|d, s| d == &digest || s.try_lock().map_or(true, |w| w.strong_count() > 0));
            slots.entry(digest.clone()).or_default().clone()
        };
        let mut guard = slot.lock().unwrap_or_else(|e| e.into_inner());
        let compiled = match guard.upgrade() {
            Some(c) => {
                self.inner
                    .counters
                    .memory_hits
                    .fetch_add(1, Ordering::Relaxed);
                c
            }
            None => {
                let wasm = wasm();
                debug_assert_eq!(
                    digest,
                    format!("sha256:{}", hex::encode(Sha256::digest(&wasm))),
                    "load_with_digest: the digest does not match the bytes"
                );
                let c = Arc::new(self.prepare(name, &digest, &wasm)?);
                *guard = Arc::downgrade(&c);
                c
            }
        };
        drop(guard);
        Ok(Arc::new(Plugin::new(
            name.to_string(),
            limits,
            compiled,
            self.inner.cfg.epoch_tick,
            self.inner.hook.clone(),
        )))
    }

    /// Load the built-in plugin `name`: `<name>.wasm` from the first plugin
    /// directory holding it (an override), else the copy embedded in the binary.
    pub fn load_builtin(&self, name: &str) -> Result<Arc<Plugin>, PluginFailure> {
        self.load_builtin_with(name, None)
    }

    pub(crate) fn load_builtin_with(
        &self,
        name: &str,
        limits: Option<Limits>,
    ) -> Result<Arc<Plugin>, PluginFailure> {
        let dirs = self.builtin_dirs();
        for dir in &dirs {
            let path = dir.join(format!("{name}.wasm"));
            match std::fs::read(&path) {
                Ok(bytes) => {
                    let plugin = self.load(name, &bytes, limits)?;
                    plugin.set_source(name);
                    return Ok(plugin);
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => {
                    return Err(PluginFailure::new(
                        name,
                        "",
                        FailureKind::Load,
                        format!("cannot read {}: {e}", path.display()),
                    ));
                }
            }
        }
        if let Some(b) = syncweave_builtins::get(name) {
            let plugin =
                self.load_digest_lazily(name, b.digest, &|| Cow::Owned(b.wasm()), limits)?;
            plugin.set_source(name);
            self.inner
                .pinned
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .entry(name.to_string())
                .or_insert_with(|| plugin.compiled());
            return Ok(plugin);
        }
        let searched = if dirs.is_empty() {
            String::new()
        } else {
            format!(
                "; also searched {}",
                dirs.iter()
                    .map(|d| d.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        Err(PluginFailure::new(
            name,
            "",
            FailureKind::Load,
            format!(
                "no built-in plugin named {name:?} (built-ins: {}{searched}); check the name, \
                 or reference your own plugin by WasmPlugin name or source URL",
                self.builtin_names().join(", ")
            ),
        ))
    }

    /// The first existing override directory for built-ins.
    pub fn builtin_dir(&self) -> Option<PathBuf> {
        self.builtin_dirs().into_iter().next()
    }

    /// Existing directories whose `<name>.wasm` files override the embedded
    /// built-ins, in search order: the configured one, `$SYNCWEAVE_PLUGIN_DIR`,
    /// and `plugins/` beside the executable.
    pub fn builtin_dirs(&self) -> Vec<PathBuf> {
        let mut candidates = Vec::new();
        if let Some(d) = &self.inner.cfg.plugin_dir {
            candidates.push(d.clone());
        }
        if let Some(d) = std::env::var_os("SYNCWEAVE_PLUGIN_DIR").filter(|d| !d.is_empty()) {
            candidates.push(PathBuf::from(d));
        }
        if let Some(exe_dir) = std::env::current_exe()
            .ok()
            .and_then(|e| e.parent().map(Path::to_path_buf))
        {
            candidates.push(exe_dir.join("plugins"));
        }
        let mut out: Vec<PathBuf> = Vec::new();
        for c in candidates {
            let c = c.canonicalize().unwrap_or(c);
            if c.is_dir() && !out.contains(&c) {
                out.push(c);
            }
        }
        out
    }

    /// Names of all built-ins, embedded or in an override directory, sorted.
    pub fn builtin_names(&self) -> Vec<String> {
        let mut names = crate::fsutil::wasm_names_in(&self.builtin_dirs());
        names.extend(syncweave_builtins::names().map(str::to_string));
        names.sort();
        names.dedup();
        names
    }

    /// Compile or load from cache, detect the world, link.
    fn prepare(&self, name: &str, digest: &str, wasm: &[u8]) -> Result<Compiled, PluginFailure> {
        let fail = |kind, msg: String| PluginFailure::new(name, digest, kind, msg);
        if !wasmparser::Parser::is_component(wasm) {
            let what = if wasmparser::Parser::is_core_wasm(wasm) {
                "a core Wasm module, not a component; build it with `syncweave plugin build` \
                 (or `wasm-tools component new`)"
            } else {
                "not WebAssembly (no \\0asm header); pass a .wasm component file"
            };
            return Err(fail(FailureKind::Load, format!("this file is {what}")));
        }
        let kind = EngineKind::for_component(wasm);
        let set = self.engine_set(kind);
        let component = self.compile_cached(kind, name, digest, wasm)?;
        let shape = world::shape(&set.engine, &component);
        let world = shape
            .world
            .clone()
            .map_err(|m| fail(FailureKind::WrongWorld, m))?;
        let contract = shape.contract.unwrap_or(ContractVersion::V0_1);
        if let Some(m) = shape.import_error() {
            return Err(fail(FailureKind::Load, m));
        }
        let instance_pre = set.linker.instantiate_pre(&component).map_err(|e| {
            fail(
                FailureKind::Load,
                format!(
                    "cannot link the component: {e:#}; a {}@{} plugin may import only {} and \
                     WASI 0.2 (granted nothing)",
                    world::PACKAGE,
                    contract.range(),
                    contract
                        .host_interfaces()
                        .iter()
                        .map(|i| format!("{}/{i}", world::PACKAGE))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
        })?;
        let pre = WorldPre::new(contract, world, instance_pre).map_err(|e| {
            fail(
                FailureKind::WrongWorld,
                format!(
                    "the component's exports do not match world {world} of {}@{}: {e:#}",
                    world::PACKAGE,
                    contract.as_str()
                ),
            )
        })?;
        let imports_reads = shape.imports.iter().any(|i| {
            let n = world::split_name(i);
            n.package == world::PACKAGE && n.interface == "reads"
        });
        Ok(Compiled {
            digest: digest.to_string(),
            world,
            contract,
            imports_wasi: shape.imports_wasi(),
            imports_reads,
            declarations: Default::default(),
            engine_kind: kind,
            shape,
            pre,
            size: wasm.len(),
        })
    }

    fn compile_cached(
        &self,
        kind: EngineKind,
        name: &str,
        digest: &str,
        wasm: &[u8],
    ) -> Result<Component, PluginFailure> {
        let set = self.engine_set(kind);
        let engine = &set.engine;
        let counters = &self.inner.counters;
        let cache_path = self.cache_path_for(kind, digest);
        if let Some(path) = &cache_path {
            match verify_entry(path) {
                Ok(true) => {
                    // SAFETY: the file is exactly what this host wrote (its
                    // checksum sidecar matched just now), under a directory
                    // keyed by this engine's compatibility hash. Entries are
                    // only ever replaced by rename, never rewritten in place,
                    // so the file wasmtime maps is the one that was checked;
                    // only someone able to write the cache directory (and so
                    // the sidecar too) could change that.
                    match unsafe { Component::deserialize_file(engine, path) } {
                        Ok(c) => {
                            counters.disk_hits.fetch_add(1, Ordering::Relaxed);
                            touch(path);
                            tracing::debug!(plugin = name, digest, path = %path.display(), "loaded compiled component from cache");
                            return Ok(c);
                        }
                        Err(e) => {
                            counters.cache_rejected.fetch_add(1, Ordering::Relaxed);
                            tracing::warn!(plugin = name, digest, path = %path.display(), error = %format!("{e:#}"), "cached component is unusable; recompiling");
                            remove_entry(path);
                        }
                    }
                }
                Ok(false) => {}
                Err(reason) => {
                    counters.cache_rejected.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(plugin = name, digest, path = %path.display(), reason, "rejecting cached component; recompiling");
                    remove_entry(path);
                }
            }
        }
        if let Some(pre) = crate::precompiled::get(digest, kind) {
            let cache = self.disk_cache().zip(cache_path.as_deref());
            match pre.load(engine, &set.compat, cache) {
                Ok(c) => {
                    counters.precompiled.fetch_add(1, Ordering::Relaxed);
                    tracing::debug!(plugin = name, digest, "loaded precompiled built-in");
                    return Ok(c);
                }
                Err(reason) => {
                    // Another machine's CPU features, or non-default engine
                    // settings: compile, as for any plugin (and cache it).
                    tracing::info!(
                        plugin = name,
                        digest,
                        built_for = pre.compat,
                        engine = %set.compat,
                        reason,
                        "the built-in's precompiled code does not fit this engine; compiling it"
                    );
                }
            }
        }
        let started = std::time::Instant::now();
        let component = Component::new(engine, wasm).map_err(|e| {
            PluginFailure::new(
                name,
                digest,
                FailureKind::Load,
                format!("the component does not compile: {e:#}"),
            )
        })?;
        counters.compiled.fetch_add(1, Ordering::Relaxed);
        tracing::info!(
            plugin = name,
            digest,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "compiled plugin component"
        );
        if let (Some(path), Some(cache)) = (&cache_path, self.disk_cache()) {
            match component.serialize() {
                Ok(bytes) => {
                    if let Err(e) = cache.write(path, &bytes) {
                        tracing::warn!(plugin = name, digest, path = %path.display(), error = %e, "cannot write the compiled-component cache; continuing without it");
                    }
                }
                Err(e) => {
                    tracing::warn!(plugin = name, digest, error = %format!("{e:#}"), "cannot serialize compiled component");
                }
            }
        }
        Ok(component)
    }
}

/// Advance the engines' epochs every `tick` for as long as any engine lives
/// (plugins keep theirs alive beyond the Runtime, and still need timeouts).
fn start_epoch_ticker(engines: &[&Engine], tick: Duration) {
    let weak: Vec<_> = engines.iter().map(|e| e.weak()).collect();
    let spawned = std::thread::Builder::new()
        .name("syncweave-epoch".into())
        .spawn(move || {
            loop {
                std::thread::sleep(tick);
                let mut alive = false;
                for w in &weak {
                    if let Some(e) = w.upgrade() {
                        e.increment_epoch();
                        alive = true;
                    }
                }
                if !alive {
                    break;
                }
            }
        });
    if let Err(e) = spawned {
        // Without the ticker a runaway guest would never be interrupted.
        panic!("cannot start the epoch ticker thread: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn component_importing(name: &str) -> Vec<u8> {
        use wasm_encoder::{
            Component, ComponentImportSection, ComponentTypeRef, ComponentTypeSection, InstanceType,
        };
        let mut types = ComponentTypeSection::new();
        types.instance(&InstanceType::new());
        let mut imports = ComponentImportSection::new();
        imports.import(name, ComponentTypeRef::Instance(0));
        let mut c = Component::new();
        c.section(&types).section(&imports);
        c.finish()
    }

    #[test]
    fn wasi_importers_get_the_guarded_engine() {
        assert_eq!(
            EngineKind::for_component(&component_importing("wasi:cli/environment@0.2.0")),
            EngineKind::Guarded
        );
        assert_eq!(
            EngineKind::for_component(&component_importing("syncweave:plugin/host-log@0.1.0")),
            EngineKind::BoundsChecked
        );
        assert_eq!(
            EngineKind::for_component(b"junk"),
            EngineKind::BoundsChecked
        );
    }

    #[test]
    fn config_rejects_a_default_limit_over_the_ceiling() {
        let err = Runtime::new(RuntimeConfig {
            cache_dir: None,
            max_memory_bytes: 1 << 20,
            ..RuntimeConfig::default()
        })
        .unwrap_err();
        assert!(err.to_string().contains("raise max_memory_bytes"), "{err}");
    }
}
