//! The process allocator's tuning, applied once at start.
//!
//! glibc gives every thread that contends for the heap its own arena, up to
//! eight per core. The agent's threads (tokio's workers, its blocking pool,
//! wasmtime's) each allocate and free cache entries, so each arena keeps its
//! own free pages and the resident set grows well past what is in use
//! (measured: ~1.7x the heap at 10 000 cached objects, docs/performance.md).
//! One arena per core bounds that at little contention: tokio runs one
//! worker per core.

/// Cap glibc's arenas at one per core, unless `MALLOC_ARENA_MAX` is set
/// (glibc reads it itself, and an operator's choice wins). Call before the
/// runtime starts threads. Returns the cap set, if any.
pub fn limit_arenas() -> Option<usize> {
    if std::env::var_os("MALLOC_ARENA_MAX").is_some() {
        return None;
    }
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    set_arena_max(cores.max(2))
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn set_arena_max(n: usize) -> Option<usize> {
    let n = i32::try_from(n).ok()?;
    // SAFETY: mallopt only sets an allocator parameter; it is called before
    // any thread but this one exists.
    let ok = unsafe { libc::mallopt(libc::M_ARENA_MAX, n) } == 1;
    ok.then_some(n as usize)
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn set_arena_max(_: usize) -> Option<usize> {
    None
}

#[cfg(test)]
mod tests {
    #[test]
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    fn arenas_are_capped_unless_the_operator_chose() {
        if std::env::var_os("MALLOC_ARENA_MAX").is_some() {
            assert_eq!(super::limit_arenas(), None);
        } else {
            let n = super::limit_arenas().expect("glibc accepts M_ARENA_MAX");
            assert!(n >= 2);
        }
    }
}
