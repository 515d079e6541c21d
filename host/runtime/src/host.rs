//! Per-call store state: resource limits, guest logging, the call's
//! environment (reads, context values; contract 0.2), and WASI with nothing
//! granted.

use std::sync::Arc;

use wasmtime::ResourceLimiter;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use crate::bindings::host_log::{self, Level};
use crate::bindings::v0_2;
use crate::env::{EnvState, ReadAnswer, ReadError, ReadRequest, Resource, Side};
use crate::stdio::BoundedPipe;

/// Enforces the memory cap over all of an instance's memories together, and
/// remembers whether it had to, so a trap can be reported as MemoryLimit
/// rather than a crash.
pub(crate) struct Limiter {
    pub memory_limit: usize,
    memory_used: usize,
    /// The total the guest asked for when it was refused.
    pub refused_at: Option<usize>,
}

/// Table growth is bounded too (tables hold function references; a guest
/// could otherwise grow them without touching linear memory).
const MAX_TABLE_ELEMENTS: usize = 100_000;

impl Limiter {
    pub fn new(memory_limit: u64) -> Self {
        Limiter {
            memory_limit: usize::try_from(memory_limit).unwrap_or(usize::MAX),
            memory_used: 0,
            refused_at: None,
        }
    }

    /// The most memory the instance has held (it never shrinks).
    pub fn memory_used(&self) -> usize {
        self.memory_used
    }
}

impl ResourceLimiter for Limiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let total = self.memory_used - current.min(self.memory_used) + desired;
        if total > self.memory_limit {
            self.refused_at = Some(total);
            // Trap rather than return -1 from memory.grow: most guests abort
            // on allocation failure anyway, and a trap names the cause.
            wasmtime::bail!(
                "memory limit reached: the guest asked for {total} bytes, the limit is {}",
                self.memory_limit
            );
        }
        self.memory_used = total;
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= MAX_TABLE_ELEMENTS)
    }
}

/// Guest log lines for one call: forwarded to tracing target "plugin" while
/// within budget, counted after.
pub(crate) struct CallLog {
    pub plugin: Arc<str>,
    pub digest: Arc<str>,
    budget: usize,
    used: usize,
    pub dropped: usize,
}

impl CallLog {
    pub fn new(plugin: Arc<str>, digest: Arc<str>, budget: usize) -> Self {
        CallLog {
            plugin,
            digest,
            budget,
            used: 0,
            dropped: 0,
        }
    }

    pub fn emit(&mut self, level: Level, message: &str) {
        if self.used + message.len() > self.budget {
            self.dropped += 1;
            return;
        }
        self.used += message.len();
        let (p, d) = (&*self.plugin, &*self.digest);
        match level {
            Level::Trace => tracing::trace!(target: "plugin", plugin = p, digest = d, "{message}"),
            Level::Debug => tracing::debug!(target: "plugin", plugin = p, digest = d, "{message}"),
            Level::Info => tracing::info!(target: "plugin", plugin = p, digest = d, "{message}"),
            Level::Warn => tracing::warn!(target: "plugin", plugin = p, digest = d, "{message}"),
            Level::Error => tracing::error!(target: "plugin", plugin = p, digest = d, "{message}"),
        }
    }

    /// Forward captured stdout/stderr text line by line, then report drops.
    pub fn finish(&mut self, stdio: Option<&(BoundedPipe, BoundedPipe)>) {
        if let Some((out, err)) = stdio {
            for (pipe, level) in [(out, Level::Info), (err, Level::Warn)] {
                let (bytes, dropped) = pipe.take();
                for line in String::from_utf8_lossy(&bytes).lines() {
                    self.emit(level, line);
                }
                if dropped > 0 {
                    self.dropped += 1;
                }
            }
        }
        if self.dropped > 0 {
            tracing::warn!(
                target: "plugin",
                plugin = &*self.plugin,
                digest = &*self.digest,
                dropped = self.dropped,
                "guest log output over the per-call budget of {} bytes was dropped",
                self.budget
            );
        }
    }
}

pub(crate) struct HostState {
    pub limiter: Limiter,
    pub log: CallLog,
    /// Reads and context values of this call, and the record of them.
    pub env: EnvState,
    table: ResourceTable,
    /// Built on first use: Rust guests never touch WASI, so they never pay
    /// for a context.
    wasi: Option<WasiCtx>,
    pub stdio: Option<(BoundedPipe, BoundedPipe)>,
}

impl HostState {
    pub fn new(limiter: Limiter, log: CallLog, env: EnvState) -> Self {
        HostState {
            limiter,
            log,
            env,
            table: ResourceTable::new(),
            wasi: None,
            stdio: None,
        }
    }
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        let budget = self.log.budget;
        let stdio = &mut self.stdio;
        let wasi = self.wasi.get_or_insert_with(|| {
            let out = BoundedPipe::new(budget);
            let err = BoundedPipe::new(budget);
            // Defaults grant nothing: no args, env, preopened dirs, network
            // addresses or name lookups; stdin is closed.
            let ctx = WasiCtx::builder()
                .stdout(out.clone())
                .stderr(err.clone())
                .allow_ip_name_lookup(false)
                .allow_tcp(false)
                .allow_udp(false)
                .build();
            *stdio = Some((out, err));
            ctx
        });
        WasiCtxView {
            ctx: wasi,
            table: &mut self.table,
        }
    }
}

impl host_log::Host for HostState {
    fn log(&mut self, level: Level, message: String) {
        self.log.emit(level, &message);
    }
}

impl crate::bindings::types::Host for HostState {}

impl v0_2::host_log::Host for HostState {
    fn log(&mut self, level: v0_2::host_log::Level, message: String) {
        use v0_2::host_log::Level as L2;
        let level = match level {
            L2::Trace => Level::Trace,
            L2::Debug => Level::Debug,
            L2::Info => Level::Info,
            L2::Warn => Level::Warn,
            L2::Error => Level::Error,
        };
        self.log.emit(level, &message);
    }
}

impl v0_2::types::Host for HostState {}

impl From<v0_2::types::Side> for Side {
    fn from(s: v0_2::types::Side) -> Side {
        match s {
            v0_2::types::Side::Kcp => Side::Kcp,
            v0_2::types::Side::Service => Side::Service,
        }
    }
}

impl From<v0_2::types::Resource> for Resource {
    fn from(r: v0_2::types::Resource) -> Resource {
        Resource {
            group: r.group,
            version: r.version,
            resource: r.resource,
        }
    }
}

impl From<ReadError> for v0_2::reads::ReadError {
    fn from(e: ReadError) -> Self {
        use v0_2::reads::ReadError as W;
        match e {
            ReadError::NotAllowed(m) => W::NotAllowed(m),
            ReadError::NotServed(m) => W::NotServed(m),
            ReadError::Unavailable(m) => W::Unavailable(m),
            ReadError::Invalid(m) => W::Invalid(m),
        }
    }
}

impl v0_2::reads::Host for HostState {
    fn get(
        &mut self,
        side: v0_2::types::Side,
        resource: v0_2::types::Resource,
        namespace: Option<String>,
        name: String,
    ) -> Result<Option<String>, v0_2::reads::ReadError> {
        let request = ReadRequest::Get {
            side: side.into(),
            resource: resource.into(),
            namespace,
            name,
        };
        match self.env.read(request)? {
            ReadAnswer::Object(o) => Ok(o),
            ReadAnswer::Objects(_) => unreachable!("a get is answered with one object"),
        }
    }

    fn list(
        &mut self,
        side: v0_2::types::Side,
        resource: v0_2::types::Resource,
        namespace: Option<String>,
        label_selector: Option<String>,
    ) -> Result<Vec<String>, v0_2::reads::ReadError> {
        let request = ReadRequest::List {
            side: side.into(),
            resource: resource.into(),
            namespace,
            label_selector,
        };
        match self.env.read(request)? {
            ReadAnswer::Objects(v) => Ok(v),
            ReadAnswer::Object(_) => unreachable!("a list is answered with objects"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limiter_caps_total_memory_and_records_refusal() {
        let mut l = Limiter::new(100);
        assert!(l.memory_growing(0, 60, None).unwrap());
        assert!(l.memory_growing(60, 90, None).unwrap());
        let err = l.memory_growing(90, 120, None).unwrap_err();
        assert!(err.to_string().contains("limit is 100"), "{err}");
        assert_eq!(l.refused_at, Some(120));
        assert!(l.table_growing(0, 10, None).unwrap());
        assert!(!l.table_growing(0, MAX_TABLE_ELEMENTS + 1, None).unwrap());
    }

    #[test]
    fn call_log_drops_over_budget() {
        let mut log = CallLog::new("p".into(), "sha256:x".into(), 10);
        log.emit(Level::Info, "12345");
        log.emit(Level::Info, "12345");
        log.emit(Level::Info, "1");
        assert_eq!(log.dropped, 1);
    }
}
