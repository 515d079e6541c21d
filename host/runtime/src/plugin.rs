//! A loaded plugin and its calls: a fresh store and instance per call.

use std::sync::Arc;
use std::time::Duration;

use wasmtime::{Store, Trap};

use crate::bindings::{self, types};
use crate::failed_call::{CallArgs, FailedCall, HookSlot};
use crate::failure::{FailureKind, PluginErrorKind, PluginFailure};
use crate::host::{CallLog, HostState, Limiter};
use crate::output;
use crate::runtime::Limits;
use crate::world::{Shape, World};

/// Which way an object travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    KcpToService,
    ServiceToKcp,
}

/// Where a call comes from; passed to the guest as `types.context`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallContext {
    /// Logical cluster name of the consumer workspace.
    pub cluster_name: String,
    /// Workspace path (`root:org:team`), when known.
    pub cluster_path: Option<String>,
    pub direction: Direction,
    /// PublishedResource or InitTarget the call is made for.
    pub owner: String,
}

impl CallContext {
    fn to_wit(&self) -> types::Context {
        types::Context {
            cluster_name: self.cluster_name.clone(),
            cluster_path: self.cluster_path.clone(),
            direction: match self.direction {
                Direction::KcpToService => types::Direction::KcpToService,
                Direction::ServiceToKcp => types::Direction::ServiceToKcp,
            },
            owner: self.owner.clone(),
        }
    }
}

/// A namer's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectName {
    pub name: String,
    /// `None` for cluster-scoped objects.
    pub namespace: Option<String>,
}

/// A worked example shipped with a plugin.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Fixture {
    pub name: String,
    pub config: String,
    pub input: String,
    pub expected: Option<String>,
}

/// What a plugin says about itself (`meta.describe`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PluginInfo {
    pub name: String,
    pub version: String,
    pub description: String,
    pub config_schema: Option<String>,
    pub examples: Vec<Fixture>,
}

impl From<types::PluginInfo> for PluginInfo {
    fn from(i: types::PluginInfo) -> Self {
        PluginInfo {
            name: i.name,
            version: i.version,
            description: i.description,
            config_schema: i.config_schema,
            examples: i
                .examples
                .into_iter()
                .map(|f| Fixture {
                    name: f.name,
                    config: f.config,
                    input: f.input,
                    expected: f.expected,
                })
                .collect(),
        }
    }
}

pub(crate) enum WorldPre {
    Mutator(bindings::mutator::MutatorPre<HostState>),
    Namer(bindings::namer::NamerPre<HostState>),
    Projector(bindings::projector::ProjectorPre<HostState>),
    Renderer(bindings::renderer::RendererPre<HostState>),
}

enum Bound {
    Mutator(bindings::mutator::Mutator),
    Namer(bindings::namer::Namer),
    Projector(bindings::projector::Projector),
    Renderer(bindings::renderer::Renderer),
}

/// A compiled, linked component, shared by every plugin with its digest.
pub(crate) struct Compiled {
    pub digest: String,
    pub world: World,
    pub shape: Shape,
    pub imports_wasi: bool,
    pub engine_kind: crate::runtime::EngineKind,
    pub pre: WorldPre,
    pub size: usize,
}

/// A plugin ready to call. Every call gets a fresh store and instance, so no
/// state leaks between calls and a trap poisons nothing.
pub struct Plugin {
    name: String,
    name_arc: Arc<str>,
    digest_arc: Arc<str>,
    limits: Limits,
    compiled: Arc<Compiled>,
    epoch_ticks: u64,
    /// The most linear memory one call's instance has held.
    peak_memory: std::sync::atomic::AtomicUsize,
    /// Told about role calls that fail (the runtime's failure hook).
    hook: HookSlot,
    /// Where the bytes came from, when the loader said (see [`Plugin::set_source`]).
    source: std::sync::OnceLock<String>,
}

impl std::fmt::Debug for Plugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plugin")
            .field("name", &self.name)
            .field("digest", &self.compiled.digest)
            .field("world", &self.compiled.world)
            .field("limits", &self.limits)
            .finish()
    }
}

impl Plugin {
    pub(crate) fn new(
        name: String,
        limits: Limits,
        compiled: Arc<Compiled>,
        tick: Duration,
        hook: HookSlot,
    ) -> Self {
        // The deadline is counted from the current epoch, which may be about
        // to end: one extra tick makes the budget a minimum, not a maximum.
        let ticks = limits.timeout.as_nanos().div_ceil(tick.as_nanos().max(1)) as u64 + 1;
        Plugin {
            name_arc: name.as_str().into(),
            digest_arc: compiled.digest.as_str().into(),
            name,
            limits,
            compiled,
            epoch_ticks: ticks,
            peak_memory: Default::default(),
            hook,
            source: Default::default(),
        }
    }

    /// Record the reference this plugin's bytes were fetched from (a
    /// WasmPlugin's `spec.source`, an inline source, a built-in name), so
    /// that a failed call can be fetched again elsewhere to replay it. The
    /// first call wins.
    pub fn set_source(&self, source: &str) {
        let _ = self.source.set(source.to_string());
    }

    /// See [`Plugin::set_source`].
    pub fn source(&self) -> Option<&str> {
        self.source.get().map(String::as_str)
    }

    /// Tell the failure hook, if any, about a role call that failed while
    /// running the guest.
    fn report(&self, result: &Result<impl Sized, PluginFailure>, args: CallArgs<'_>) {
        if let (Err(failure), Some(hook)) = (result, self.hook.get())
            && failure.is_call_failure()
        {
            hook(&FailedCall {
                plugin: self,
                args,
                failure,
            });
        }
    }

    /// The most memory (all of its linear memories together) any one call's
    /// instance of this plugin has held so far, in bytes.
    pub fn peak_memory_bytes(&self) -> usize {
        self.peak_memory.load(std::sync::atomic::Ordering::Relaxed)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The shared compiled component (the runtime pins the built-ins').
    pub(crate) fn compiled(&self) -> Arc<Compiled> {
        self.compiled.clone()
    }

    /// `sha256:<hex>` of the component bytes.
    pub fn digest(&self) -> &str {
        &self.compiled.digest
    }

    pub fn world(&self) -> World {
        self.compiled.world
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// The engine this plugin's component was compiled for.
    pub fn engine_kind(&self) -> crate::runtime::EngineKind {
        self.compiled.engine_kind
    }

    /// Size of the component in bytes.
    pub fn size(&self) -> usize {
        self.compiled.size
    }

    /// Export names (`syncweave:plugin/meta@0.1.0`, …).
    pub fn exports(&self) -> &[String] {
        &self.compiled.shape.exports
    }

    /// Import names; WASI ones are linked with nothing granted.
    pub fn imports(&self) -> &[String] {
        &self.compiled.shape.imports
    }

    /// Fail with WrongWorld unless this plugin implements `world`.
    pub fn expect_world(&self, world: World) -> Result<(), PluginFailure> {
        if self.compiled.world == world {
            return Ok(());
        }
        Err(self.failure(
            FailureKind::WrongWorld,
            format!(
                "this component exports {}, expected world {world}",
                self.compiled.shape.exports.join(", ")
            ),
        ))
    }

    fn failure(&self, kind: FailureKind, message: impl Into<String>) -> PluginFailure {
        PluginFailure::new(
            self.name.clone(),
            self.compiled.digest.clone(),
            kind,
            message,
        )
    }

    pub fn describe(&self) -> Result<PluginInfo, PluginFailure> {
        let info = self.call(|store, bound| match bound {
            Bound::Mutator(b) => b.syncweave_plugin_meta().call_describe(store),
            Bound::Namer(b) => b.syncweave_plugin_meta().call_describe(store),
            Bound::Projector(b) => b.syncweave_plugin_meta().call_describe(store),
            Bound::Renderer(b) => b.syncweave_plugin_meta().call_describe(store),
        })?;
        Ok(info.into())
    }

    pub fn validate_config(&self, config: &str) -> Result<(), PluginFailure> {
        let res = self.call(|store, bound| match bound {
            Bound::Mutator(b) => b
                .syncweave_plugin_meta()
                .call_validate_config(store, config),
            Bound::Namer(b) => b
                .syncweave_plugin_meta()
                .call_validate_config(store, config),
            Bound::Projector(b) => b
                .syncweave_plugin_meta()
                .call_validate_config(store, config),
            Bound::Renderer(b) => b
                .syncweave_plugin_meta()
                .call_validate_config(store, config),
        })?;
        res.map_err(|m| self.failure(FailureKind::PluginError(PluginErrorKind::InvalidConfig), m))
    }

    /// Rewrite `object`; `other` is its counterpart on the other side. The
    /// result must keep apiVersion, kind, metadata.name and metadata.namespace.
    pub fn mutate(
        &self,
        ctx: &CallContext,
        config: &str,
        object: &str,
        other: Option<&str>,
    ) -> Result<String, PluginFailure> {
        let result = self.mutate_here(ctx, config, object, other);
        self.report(
            &result,
            CallArgs::Mutate {
                ctx,
                config,
                object,
                other,
            },
        );
        result
    }

    fn mutate_here(
        &self,
        ctx: &CallContext,
        config: &str,
        object: &str,
        other: Option<&str>,
    ) -> Result<String, PluginFailure> {
        self.expect_world(World::Mutator)?;
        let wit_ctx = ctx.to_wit();
        let res = self.call(|store, bound| match bound {
            Bound::Mutator(b) => b
                .syncweave_plugin_mutation()
                .call_mutate(store, &wit_ctx, config, object, other),
            _ => unreachable!("world checked above"),
        })?;
        let out = res.map_err(|e| self.guest_error(e))?;
        self.check_size(out.len())?;
        output::check_mutation(object, &out)
            .map_err(|m| self.failure(FailureKind::BadOutput, m))?;
        Ok(out)
    }

    /// Decide the service-cluster name of `object`.
    pub fn name_object(
        &self,
        ctx: &CallContext,
        config: &str,
        object: &str,
    ) -> Result<ObjectName, PluginFailure> {
        let result = self.name_here(ctx, config, object);
        self.report(
            &result,
            CallArgs::Name {
                ctx,
                config,
                object,
            },
        );
        result
    }

    fn name_here(
        &self,
        ctx: &CallContext,
        config: &str,
        object: &str,
    ) -> Result<ObjectName, PluginFailure> {
        self.expect_world(World::Namer)?;
        let wit_ctx = ctx.to_wit();
        let res = self.call(|store, bound| match bound {
            Bound::Namer(b) => b
                .syncweave_plugin_naming()
                .call_name(store, &wit_ctx, config, object),
            _ => unreachable!("world checked above"),
        })?;
        let n = res.map_err(|e| self.guest_error(e))?;
        self.check_size(n.name.len() + n.namespace.as_ref().map_or(0, String::len))?;
        output::check_name(&n.name, n.namespace.as_deref())
            .map_err(|m| self.failure(FailureKind::BadOutput, m))?;
        Ok(ObjectName {
            name: n.name,
            namespace: n.namespace,
        })
    }

    /// Transform a CRD before it is published to kcp.
    pub fn project(&self, config: &str, crd: &str) -> Result<String, PluginFailure> {
        let result = self.project_here(config, crd);
        self.report(&result, CallArgs::Project { config, crd });
        result
    }

    fn project_here(&self, config: &str, crd: &str) -> Result<String, PluginFailure> {
        self.expect_world(World::Projector)?;
        let res = self.call(|store, bound| match bound {
            Bound::Projector(b) => b
                .syncweave_plugin_projection()
                .call_project(store, config, crd),
            _ => unreachable!("world checked above"),
        })?;
        let out = res.map_err(|e| self.guest_error(e))?;
        self.check_size(out.len())?;
        output::check_object(&out).map_err(|m| self.failure(FailureKind::BadOutput, m))?;
        Ok(out)
    }

    /// Render `template` with `values` into one JSON object per document.
    pub fn render(
        &self,
        ctx: &CallContext,
        config: &str,
        template: &str,
        values: &str,
    ) -> Result<Vec<String>, PluginFailure> {
        let result = self.render_here(ctx, config, template, values);
        self.report(
            &result,
            CallArgs::Render {
                ctx,
                config,
                template,
                values,
            },
        );
        result
    }

    fn render_here(
        &self,
        ctx: &CallContext,
        config: &str,
        template: &str,
        values: &str,
    ) -> Result<Vec<String>, PluginFailure> {
        self.expect_world(World::Renderer)?;
        let wit_ctx = ctx.to_wit();
        let res = self.call(|store, bound| match bound {
            Bound::Renderer(b) => b
                .syncweave_plugin_rendering()
                .call_render(store, &wit_ctx, config, template, values),
            _ => unreachable!("world checked above"),
        })?;
        let docs = res.map_err(|e| self.guest_error(e))?;
        self.check_size(docs.iter().map(String::len).sum())?;
        for (i, d) in docs.iter().enumerate() {
            output::check_object(d).map_err(|m| {
                self.failure(FailureKind::BadOutput, format!("document {}: {m}", i + 1))
            })?;
        }
        Ok(docs)
    }

    /// An instance kept alive across calls, for benchmarks that separate
    /// call cost from instantiation. Production calls never reuse instances.
    #[doc(hidden)]
    pub fn warm(&self) -> Result<WarmInstance<'_>, PluginFailure> {
        let mut store = self.new_store();
        let bound = self
            .instantiate(&mut store)
            .map_err(|e| self.classify(e, store.data()))?;
        Ok(WarmInstance {
            plugin: self,
            store,
            bound,
        })
    }

    fn new_store(&self) -> Store<HostState> {
        let engine = match &self.compiled.pre {
            WorldPre::Mutator(p) => p.engine(),
            WorldPre::Namer(p) => p.engine(),
            WorldPre::Projector(p) => p.engine(),
            WorldPre::Renderer(p) => p.engine(),
        };
        let state = HostState::new(
            Limiter::new(self.limits.memory_bytes),
            CallLog::new(
                self.name_arc.clone(),
                self.digest_arc.clone(),
                self.limits.max_log_bytes,
            ),
        );
        let mut store = Store::new(engine, state);
        store.limiter(|s| &mut s.limiter);
        store.set_epoch_deadline(self.epoch_ticks);
        store
    }

    fn check_size(&self, len: usize) -> Result<(), PluginFailure> {
        if len > self.limits.max_output_bytes {
            return Err(self.failure(
                FailureKind::BadOutput,
                format!(
                    "output is {len} bytes, over the limit of {} bytes (Limits::max_output_bytes)",
                    self.limits.max_output_bytes
                ),
            ));
        }
        Ok(())
    }

    fn guest_error(&self, e: types::PluginError) -> PluginFailure {
        let (kind, msg) = match e {
            types::PluginError::InvalidConfig(m) => (PluginErrorKind::InvalidConfig, m),
            types::PluginError::InvalidInput(m) => (PluginErrorKind::InvalidInput, m),
            types::PluginError::Rejected(m) => (PluginErrorKind::Rejected, m),
            types::PluginError::Internal(m) => (PluginErrorKind::Internal, m),
        };
        self.failure(FailureKind::PluginError(kind), msg)
    }

    /// Instantiate into a fresh store and run `f`, classifying any failure.
    fn call<R: Send>(
        &self,
        f: impl FnOnce(&mut Store<HostState>, &Bound) -> wasmtime::Result<R> + Send,
    ) -> Result<R, PluginFailure> {
        // WASI's synchronous bindings block on a Tokio runtime internally and
        // panic on a runtime worker thread: step out of the async context
        // first. Rust guests import no WASI and skip this. On a thread of
        // the blocking pool (calls through `CallPool`) the handle is set but
        // the thread is no worker: `block_in_place` then just runs the call.
        if self.compiled.imports_wasi
            && let Ok(handle) = tokio::runtime::Handle::try_current()
        {
            return match handle.runtime_flavor() {
                tokio::runtime::RuntimeFlavor::MultiThread => {
                    tokio::task::block_in_place(|| self.call_here(f))
                }
                _ => std::thread::scope(|s| {
                    s.spawn(|| self.call_here(f))
                        .join()
                        .unwrap_or_else(|p| std::panic::resume_unwind(p))
                }),
            };
        }
        self.call_here(f)
    }

    fn call_here<R>(
        &self,
        f: impl FnOnce(&mut Store<HostState>, &Bound) -> wasmtime::Result<R>,
    ) -> Result<R, PluginFailure> {
        let mut store = self.new_store();
        let result = self
            .instantiate(&mut store)
            .and_then(|bound| f(&mut store, &bound));
        let data = store.data_mut();
        let stdio = data.stdio.take();
        data.log.finish(stdio.as_ref());
        self.peak_memory.fetch_max(
            data.limiter.memory_used(),
            std::sync::atomic::Ordering::Relaxed,
        );
        result.map_err(|e| self.classify(e, store.data()))
    }

    fn instantiate(&self, store: &mut Store<HostState>) -> wasmtime::Result<Bound> {
        Ok(match &self.compiled.pre {
            WorldPre::Mutator(p) => Bound::Mutator(p.instantiate(store)?),
            WorldPre::Namer(p) => Bound::Namer(p.instantiate(store)?),
            WorldPre::Projector(p) => Bound::Projector(p.instantiate(store)?),
            WorldPre::Renderer(p) => Bound::Renderer(p.instantiate(store)?),
        })
    }

    fn classify(&self, err: wasmtime::Error, state: &HostState) -> PluginFailure {
        let mut failure = self.classify_kind(&err, state);
        failure.backtrace = err
            .downcast_ref::<wasmtime::WasmBacktrace>()
            .map(|bt| truncate(&bt.to_string(), MAX_BACKTRACE_BYTES));
        failure
    }

    fn classify_kind(&self, err: &wasmtime::Error, state: &HostState) -> PluginFailure {
        if let Some(asked) = state.limiter.refused_at {
            return self.failure(
                FailureKind::MemoryLimit,
                format!(
                    "the guest needed {asked} bytes of memory, over the limit of {} bytes \
                     (Limits::memory_bytes)",
                    state.limiter.memory_limit
                ),
            );
        }
        if let Some(trap) = err.downcast_ref::<Trap>() {
            if *trap == Trap::Interrupt {
                return self.failure(
                    FailureKind::Timeout,
                    format!("call exceeded {:?}", self.limits.timeout),
                );
            }
            let mut msg = format!("the guest trapped: {trap}");
            if let Some(bt) = err.downcast_ref::<wasmtime::WasmBacktrace>() {
                let text = bt.to_string();
                msg.push('\n');
                msg.push_str(&truncate(&text, 4096));
            }
            return self.failure(FailureKind::Crash, msg);
        }
        if let Some(pool) = err.downcast_ref::<wasmtime::PoolConcurrencyLimitError>() {
            return self.failure(
                FailureKind::Load,
                format!(
                    "{pool}: too many plugin calls at once; raise RuntimeConfig::max_instances"
                ),
            );
        }
        // Anything else is the guest breaking the component ABI (bad UTF-8,
        // out-of-bounds pointers, …): a crash of the plugin, not the host.
        self.failure(FailureKind::Crash, truncate(&format!("{err:#}"), 4096))
    }
}

/// A deep recursion's backtrace lists thousands of frames; the innermost
/// ones (printed first) are what matter.
const MAX_BACKTRACE_BYTES: usize = 16 << 10;

fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} more bytes)", &s[..end], s.len() - end)
}

/// See [`Plugin::warm`].
#[doc(hidden)]
pub struct WarmInstance<'p> {
    plugin: &'p Plugin,
    store: Store<HostState>,
    bound: Bound,
}

impl WarmInstance<'_> {
    pub fn mutate(
        &mut self,
        ctx: &CallContext,
        config: &str,
        object: &str,
        other: Option<&str>,
    ) -> Result<String, PluginFailure> {
        let p = self.plugin;
        p.expect_world(World::Mutator)?;
        self.store.set_epoch_deadline(p.epoch_ticks);
        let Bound::Mutator(b) = &self.bound else {
            unreachable!("world checked above")
        };
        let res = b
            .syncweave_plugin_mutation()
            .call_mutate(&mut self.store, &ctx.to_wit(), config, object, other)
            .map_err(|e| p.classify(e, self.store.data()))?;
        let out = res.map_err(|e| p.guest_error(e))?;
        p.check_size(out.len())?;
        output::check_mutation(object, &out).map_err(|m| p.failure(FailureKind::BadOutput, m))?;
        Ok(out)
    }
}
