//! How syncweave configures wasmtime, in one place.
//!
//! The runtime builds its engines from [`config`]; the runtime's build script
//! builds the same engine to precompile the embedded built-in plugins. Both
//! must agree bit for bit, or wasmtime refuses the precompiled code (and the
//! runtime compiles instead), so the configuration lives here and nowhere
//! else.

use std::hash::{Hash, Hasher};

pub use wasmtime;
use wasmtime::{
    Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, WasmBacktraceDetails,
};

/// The engine settings a runtime chooses; everything else is fixed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EngineParams {
    /// Instances that may exist at once, i.e. concurrent calls.
    pub max_instances: u32,
    /// Ceiling for any plugin's memory limit: the size of a pool slot.
    pub max_memory_bytes: u64,
    /// Dirty linear-memory bytes per pool slot that are reset by copying and
    /// stay resident between calls, instead of being returned to the kernel.
    pub keep_resident_bytes: usize,
    /// Read the DWARF of components that carry it, so trap backtraces name
    /// source files and lines (function names come from the name section
    /// either way). Costs memory and compile time: for `plugin replay`, not
    /// for the agent.
    pub backtrace_details: bool,
}

impl Default for EngineParams {
    fn default() -> Self {
        EngineParams {
            max_instances: 128,
            max_memory_bytes: 1 << 30,
            // Rust guests dirty a few hundred KB per call: all of it stays
            // resident and is reset by memset, with no page faults later.
            keep_resident_bytes: 4 << 20,
            backtrace_details: false,
        }
    }
}

/// Which of the two engines a component runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EngineKind {
    /// Explicit bounds checks, no guard pages: instantiation and reset never
    /// change page protections, which makes a fresh instance cost a few
    /// microseconds. For components that import no WASI (Rust guests).
    BoundsChecked,
    /// Guard pages instead of bounds checks: compiled code is about a third
    /// smaller, so large interpreters (Python, JS; they import WASI) load
    /// from the cache faster, and their milliseconds-long instantiation
    /// does not notice the page-protection syscalls.
    Guarded,
}

impl EngineKind {
    /// Interpreted guests import WASI; compiled Rust guests import nothing
    /// but host-log.
    pub fn for_component(wasm: &[u8]) -> EngineKind {
        if imports_wasi(wasm) {
            EngineKind::Guarded
        } else {
            EngineKind::BoundsChecked
        }
    }
}

/// A cheap scan of the component's import names, before compiling.
fn imports_wasi(wasm: &[u8]) -> bool {
    for payload in wasmparser::Parser::new(0).parse_all(wasm) {
        let Ok(payload) = payload else { return false };
        if let wasmparser::Payload::ComponentImportSection(reader) = payload {
            for import in reader.into_iter().flatten() {
                if import.name.name.starts_with("wasi:") {
                    return true;
                }
            }
        }
    }
    false
}

/// The wasmtime configuration of an engine of `kind`.
pub fn config(params: &EngineParams, kind: EngineKind) -> Config {
    let mut c = Config::new();
    c.wasm_component_model(true);
    c.epoch_interruption(true);
    // Stated, not left to WASMTIME_BACKTRACE_DETAILS: the setting is part of
    // the compatibility hash, and an environment variable must not make the
    // precompiled built-ins or the compiled cache unusable. (Backtraces
    // themselves are on by default; function names come from the name
    // section.)
    c.wasm_backtrace_details(if params.backtrace_details {
        WasmBacktraceDetails::Enable
    } else {
        WasmBacktraceDetails::Disable
    });
    let n = params.max_instances.max(1);
    let mut pool = PoolingAllocationConfig::default();
    // Python and JS components hold a dozen or so core instances and a few
    // memories/tables each; Rust guests one of each.
    pool.total_component_instances(n)
        .total_core_instances(n.saturating_mul(16))
        .total_memories(n.saturating_mul(2))
        .total_tables(n.saturating_mul(4))
        .max_core_instances_per_component(64)
        .max_memories_per_component(8)
        .max_tables_per_component(16)
        .max_memory_size(params.max_memory_bytes as usize)
        .table_elements(100_000)
        .max_core_instance_size(4 << 20)
        .max_component_instance_size(4 << 20)
        // Reused slots skip the madvise/mmap dance for small heaps.
        .linear_memory_keep_resident(params.keep_resident_bytes)
        .table_keep_resident(params.keep_resident_bytes.min(1 << 20))
        // With PAGEMAP_SCAN (Linux 6.7+) only the pages a call dirtied are
        // reset, instead of memsetting the first keep_resident bytes of
        // every memory and table: for a small guest that is most of the cost
        // of a fresh instance. Older kernels fall back to the memset.
        .pagemap_scan(wasmtime::Enabled::Auto);
    c.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    if kind == EngineKind::BoundsChecked {
        // Explicit bounds checks instead of guard pages: the memory's
        // accessible range then never changes, so neither instantiation nor
        // memory.grow nor the reset after a call needs mprotect (and its TLB
        // shootdowns). For calls of a few microseconds that is a third of
        // the cost (measured with host/runtime/benches/plugins.rs).
        c.signals_based_traps(false);
        c.memory_guard_size(0);
        c.memory_reservation(params.max_memory_bytes);
        c.memory_reservation_for_growth(0);
    }
    c
}

/// Build an engine of `kind`.
pub fn engine(params: &EngineParams, kind: EngineKind) -> wasmtime::Result<Engine> {
    Engine::new(&config(params, kind))
}

/// The engine's compatibility hash as 16 hex digits, stable across runs:
/// compiled code made by one engine loads into another only if they agree.
pub fn compat_hash(engine: &Engine) -> String {
    struct Sha(sha2::Sha256);
    impl Hasher for Sha {
        fn finish(&self) -> u64 {
            unreachable!("only the SHA-256 digest is read")
        }
        fn write(&mut self, bytes: &[u8]) {
            sha2::Digest::update(&mut self.0, bytes);
        }
    }
    let mut h = Sha(<sha2::Sha256 as sha2::Digest>::new());
    engine.precompile_compatibility_hash().hash(&mut h);
    hex::encode(&sha2::Digest::finalize(h.0)[..8])
}
