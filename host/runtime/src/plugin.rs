//! A loaded plugin and its calls: a fresh store and instance per call.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use wasmtime::{Store, Trap};

use crate::bindings::{types, v0_1, v0_2};
use crate::env::{
    CallEnv, CallRecord, CallResult, Condition, EnvState, Mutated, Named, ReadDeclaration,
    ReadFixture, ReadPhase, Rendered, Report, Resource, Severity, Side,
};
use crate::failed_call::{CallArgs, FailedCall, HookSlot};
use crate::failure::{FailureKind, PluginErrorKind, PluginFailure};
use crate::host::{CallLog, HostState, Limiter};
use crate::output;
use crate::runtime::Limits;
use crate::world::{ContractVersion, Shape, World};

/// Which way an object travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    KcpToService,
    ServiceToKcp,
}

/// Where a call comes from; passed to the guest as `types.context` (in
/// 0.2 with the [`CallEnv`]'s context values).
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

    fn to_wit_v2(&self, values: &[(String, String)]) -> v0_2::types::Context {
        v0_2::types::Context {
            cluster_name: self.cluster_name.clone(),
            cluster_path: self.cluster_path.clone(),
            direction: match self.direction {
                Direction::KcpToService => v0_2::types::Direction::KcpToService,
                Direction::ServiceToKcp => v0_2::types::Direction::ServiceToKcp,
            },
            owner: self.owner.clone(),
            values: values
                .iter()
                .map(|(key, value)| v0_2::types::ContextEntry {
                    key: key.clone(),
                    value: value.clone(),
                })
                .collect(),
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
    /// What the example's reads see (0.2; empty for 0.1).
    pub reads: Vec<ReadFixture>,
    /// Context values from earlier steps, (key, JSON value) (0.2; empty
    /// for 0.1).
    pub values: Vec<(String, String)>,
}

/// What a plugin says about itself (`meta.describe`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PluginInfo {
    pub name: String,
    pub version: String,
    pub description: String,
    pub config_schema: Option<String>,
    pub examples: Vec<Fixture>,
    /// The contract version the component was built against.
    pub contract_version: ContractVersion,
    /// Every kind of object the plugin may read (0.2; empty for 0.1).
    pub reads: Vec<ReadDeclaration>,
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
                    reads: Vec::new(),
                    values: Vec::new(),
                })
                .collect(),
            contract_version: ContractVersion::V0_1,
            reads: Vec::new(),
        }
    }
}

impl From<v0_2::types::PluginInfo> for PluginInfo {
    fn from(i: v0_2::types::PluginInfo) -> Self {
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
                    reads: f
                        .reads
                        .into_iter()
                        .map(|r| ReadFixture {
                            side: r.side.into(),
                            resource: Resource::from(r.resource),
                            objects: r.objects,
                        })
                        .collect(),
                    values: f.values.into_iter().map(|e| (e.key, e.value)).collect(),
                })
                .collect(),
            contract_version: ContractVersion::V0_2,
            reads: i
                .reads
                .into_iter()
                .map(|d| ReadDeclaration {
                    side: Side::from(d.side),
                    resource: d.resource.into(),
                    purpose: d.purpose,
                })
                .collect(),
        }
    }
}

impl From<v0_2::types::Report> for Report {
    fn from(r: v0_2::types::Report) -> Self {
        Report {
            results: r
                .results
                .into_iter()
                .map(|r| CallResult {
                    severity: match r.severity {
                        v0_2::types::Severity::Normal => Severity::Normal,
                        v0_2::types::Severity::Warning => Severity::Warning,
                    },
                    reason: r.reason,
                    message: r.message,
                })
                .collect(),
            conditions: r
                .conditions
                .into_iter()
                .map(|c| Condition {
                    type_: c.type_,
                    status: c.status,
                    reason: c.reason,
                    message: c.message,
                })
                .collect(),
            set_context: r
                .set_context
                .into_iter()
                .map(|e| (e.key, e.value))
                .collect(),
        }
    }
}

/// A guest's `plugin-error`, whichever contract version it came from.
struct GuestError(PluginErrorKind, String);

impl From<types::PluginError> for GuestError {
    fn from(e: types::PluginError) -> Self {
        match e {
            types::PluginError::InvalidConfig(m) => GuestError(PluginErrorKind::InvalidConfig, m),
            types::PluginError::InvalidInput(m) => GuestError(PluginErrorKind::InvalidInput, m),
            types::PluginError::Rejected(m) => GuestError(PluginErrorKind::Rejected, m),
            types::PluginError::Internal(m) => GuestError(PluginErrorKind::Internal, m),
        }
    }
}

impl From<v0_2::types::PluginError> for GuestError {
    fn from(e: v0_2::types::PluginError) -> Self {
        use v0_2::types::PluginError as E;
        match e {
            E::InvalidConfig(m) => GuestError(PluginErrorKind::InvalidConfig, m),
            E::InvalidInput(m) => GuestError(PluginErrorKind::InvalidInput, m),
            E::Rejected(m) => GuestError(PluginErrorKind::Rejected, m),
            E::Internal(m) => GuestError(PluginErrorKind::Internal, m),
        }
    }
}

/// What a role function returned, in one shape for every contract
/// version: its output and report, or its own error.
type RoleResult<T> = Result<(T, Report), GuestError>;

/// Lift a 0.1 role function's result (no report) into a [`RoleResult`].
fn v1<T, E: Into<GuestError>>(r: Result<T, E>) -> RoleResult<T> {
    r.map(|out| (out, Report::default())).map_err(Into::into)
}

pub(crate) enum WorldPre {
    V1Mutator(v0_1::mutator::MutatorPre<HostState>),
    V1Namer(v0_1::namer::NamerPre<HostState>),
    V1Projector(v0_1::projector::ProjectorPre<HostState>),
    V1Renderer(v0_1::renderer::RendererPre<HostState>),
    V2Mutator(v0_2::mutator::MutatorPre<HostState>),
    V2Namer(v0_2::namer::NamerPre<HostState>),
    V2Projector(v0_2::projector::ProjectorPre<HostState>),
    V2Renderer(v0_2::renderer::RendererPre<HostState>),
}

enum Bound {
    V1Mutator(v0_1::mutator::Mutator),
    V1Namer(v0_1::namer::Namer),
    V1Projector(v0_1::projector::Projector),
    V1Renderer(v0_1::renderer::Renderer),
    V2Mutator(v0_2::mutator::Mutator),
    V2Namer(v0_2::namer::Namer),
    V2Projector(v0_2::projector::Projector),
    V2Renderer(v0_2::renderer::Renderer),
}

/// `match` over every (version, world) variant of [`WorldPre`] or
/// [`Bound`] with the same body: what differs between the versions is
/// only the generated types, which the body converts.
macro_rules! each_world {
    ($value:expr, $ty:ident, $b:ident => $body:expr) => {
        match $value {
            $ty::V1Mutator($b) => $body,
            $ty::V1Namer($b) => $body,
            $ty::V1Projector($b) => $body,
            $ty::V1Renderer($b) => $body,
            $ty::V2Mutator($b) => $body,
            $ty::V2Namer($b) => $body,
            $ty::V2Projector($b) => $body,
            $ty::V2Renderer($b) => $body,
        }
    };
}

impl WorldPre {
    /// Bind `instance_pre` as `world` of `contract`.
    pub(crate) fn new(
        contract: ContractVersion,
        world: World,
        instance_pre: wasmtime::component::InstancePre<HostState>,
    ) -> wasmtime::Result<WorldPre> {
        use ContractVersion::{V0_1, V0_2};
        Ok(match (contract, world) {
            (V0_1, World::Mutator) => {
                WorldPre::V1Mutator(v0_1::mutator::MutatorPre::new(instance_pre)?)
            }
            (V0_1, World::Namer) => WorldPre::V1Namer(v0_1::namer::NamerPre::new(instance_pre)?),
            (V0_1, World::Projector) => {
                WorldPre::V1Projector(v0_1::projector::ProjectorPre::new(instance_pre)?)
            }
            (V0_1, World::Renderer) => {
                WorldPre::V1Renderer(v0_1::renderer::RendererPre::new(instance_pre)?)
            }
            (V0_2, World::Mutator) => {
                WorldPre::V2Mutator(v0_2::mutator::MutatorPre::new(instance_pre)?)
            }
            (V0_2, World::Namer) => WorldPre::V2Namer(v0_2::namer::NamerPre::new(instance_pre)?),
            (V0_2, World::Projector) => {
                WorldPre::V2Projector(v0_2::projector::ProjectorPre::new(instance_pre)?)
            }
            (V0_2, World::Renderer) => {
                WorldPre::V2Renderer(v0_2::renderer::RendererPre::new(instance_pre)?)
            }
        })
    }
}

/// A compiled, linked component, shared by every plugin with its digest.
pub(crate) struct Compiled {
    pub digest: String,
    pub world: World,
    pub contract: ContractVersion,
    pub shape: Shape,
    pub imports_wasi: bool,
    /// Whether the component imports `reads` (a 0.2 guest that never reads
    /// does not).
    pub imports_reads: bool,
    /// The read declarations from `describe()`, learnt on the first role
    /// call of a component that imports `reads` (or any `describe`).
    pub declarations: OnceLock<Arc<[ReadDeclaration]>>,
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
    fn report(
        &self,
        result: &Result<impl Sized, PluginFailure>,
        args: CallArgs<'_>,
        env: Option<&CallRecord>,
    ) {
        if let (Err(failure), Some(hook)) = (result, self.hook.get())
            && failure.is_call_failure()
        {
            hook(&FailedCall {
                plugin: self,
                args,
                failure,
                env,
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

    /// The contract version the component was built against (from its
    /// exports): what it can do beyond 0.1 (reads, reports, context values).
    pub fn contract_version(&self) -> ContractVersion {
        self.compiled.contract
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
        let env = EnvState::meta(self.compiled.contract);
        let info: PluginInfo = self
            .call(env, |store, bound| {
                each_world!(bound, Bound, b => b
                    .syncweave_plugin_meta()
                    .call_describe(store)
                    .map(PluginInfo::from))
            })
            .0?;
        // The declarations cannot change for a digest: keep the first.
        let _ = self.compiled.declarations.set(info.reads.clone().into());
        Ok(info)
    }

    pub fn validate_config(&self, config: &str) -> Result<(), PluginFailure> {
        let env = EnvState::meta(self.compiled.contract);
        let res = self
            .call(env, |store, bound| {
                each_world!(bound, Bound, b => b
                    .syncweave_plugin_meta()
                    .call_validate_config(store, config))
            })
            .0?;
        res.map_err(|m| self.failure(FailureKind::PluginError(PluginErrorKind::InvalidConfig), m))
    }

    /// What a plugin may read: its `describe()` declarations, learnt once.
    fn read_declarations(&self) -> Result<Arc<[ReadDeclaration]>, PluginFailure> {
        if let Some(d) = self.compiled.declarations.get() {
            return Ok(d.clone());
        }
        self.describe().map_err(|mut e| {
            e.message = format!(
                "describe(), which the host calls to learn what the plugin may read, failed: {}",
                e.message
            );
            e
        })?;
        Ok(self
            .compiled
            .declarations
            .get()
            .cloned()
            .unwrap_or_else(|| Arc::from([])))
    }

    /// The in-store environment of a role call.
    fn role_env(&self, env: &CallEnv<'_>) -> Result<EnvState, PluginFailure> {
        let declarations = if self.compiled.imports_reads {
            self.read_declarations()?
        } else {
            // The guest cannot read at all.
            Arc::from([])
        };
        Ok(EnvState::new(
            self.compiled.contract,
            env,
            ReadPhase::Role(declarations),
        ))
    }

    /// Run a role function with `env`, in one shape for every contract
    /// version: `f` binds the call per version and lifts its result into a
    /// [`RoleResult`]; the guest's error is classified and the report
    /// checked against `env`. Returns what the call saw, for the failure
    /// hook.
    fn role_call<T: Send>(
        &self,
        world: World,
        env: &CallEnv<'_>,
        f: impl FnOnce(&mut Store<HostState>, &Bound) -> wasmtime::Result<RoleResult<T>> + Send,
    ) -> (Result<(T, Report), PluginFailure>, Option<CallRecord>) {
        let state = match self.expect_world(world).and_then(|()| self.role_env(env)) {
            Ok(s) => s,
            Err(e) => return (Err(e), None),
        };
        let (res, record) = self.call(state, f);
        let result = res.and_then(|r| {
            let (out, report) = r.map_err(|GuestError(kind, msg)| {
                self.failure(FailureKind::PluginError(kind), msg)
            })?;
            report
                .check(&record.values, &record.limits)
                .map_err(|m| self.failure(FailureKind::BadOutput, m))?;
            Ok((out, report))
        });
        (result, Some(record))
    }

    /// Rewrite `object`; `other` is its counterpart on the other side. The
    /// result must keep apiVersion, kind, metadata.name and metadata.namespace.
    /// The same as [`Plugin::mutate_with`] with no reads and no context
    /// values, without the report.
    pub fn mutate(
        &self,
        ctx: &CallContext,
        config: &str,
        object: &str,
        other: Option<&str>,
    ) -> Result<String, PluginFailure> {
        self.mutate_with(ctx, &CallEnv::default(), config, object, other)
            .map(|m| m.object)
    }

    /// [`Plugin::mutate`] in an environment: the guest's reads go to
    /// `env.reads`, it sees `env.values`, and its report comes back beside
    /// the object (empty for a 0.1 component, which sees no values and
    /// cannot read).
    pub fn mutate_with(
        &self,
        ctx: &CallContext,
        env: &CallEnv<'_>,
        config: &str,
        object: &str,
        other: Option<&str>,
    ) -> Result<Mutated, PluginFailure> {
        let (result, record) = self.role_call(World::Mutator, env, |store, bound| {
            Ok(match bound {
                Bound::V1Mutator(b) => v1(b.syncweave_plugin_mutation().call_mutate(
                    store,
                    &ctx.to_wit(),
                    config,
                    object,
                    other,
                )?),
                Bound::V2Mutator(b) => b
                    .syncweave_plugin_mutation()
                    .call_mutate(store, &ctx.to_wit_v2(env.values), config, object, other)?
                    .map(|m| (m.object, m.report.into()))
                    .map_err(Into::into),
                _ => unreachable!("role_call checked the world"),
            })
        });
        let result = result.and_then(|(out, report)| {
            self.check_size(out.len())?;
            output::check_mutation(object, &out)
                .map_err(|m| self.failure(FailureKind::BadOutput, m))?;
            Ok(Mutated {
                object: out,
                report,
            })
        });
        self.report(
            &result,
            CallArgs::Mutate {
                ctx,
                config,
                object,
                other,
            },
            record.as_ref(),
        );
        result
    }

    /// Decide the service-cluster name of `object`. The same as
    /// [`Plugin::name_object_with`] with no reads and no context values,
    /// without the report.
    pub fn name_object(
        &self,
        ctx: &CallContext,
        config: &str,
        object: &str,
    ) -> Result<ObjectName, PluginFailure> {
        self.name_object_with(ctx, &CallEnv::default(), config, object)
            .map(|n| n.name)
    }

    /// [`Plugin::name_object`] in an environment (see [`Plugin::mutate_with`]).
    pub fn name_object_with(
        &self,
        ctx: &CallContext,
        env: &CallEnv<'_>,
        config: &str,
        object: &str,
    ) -> Result<Named, PluginFailure> {
        let (result, record) = self.role_call(World::Namer, env, |store, bound| {
            Ok(match bound {
                Bound::V1Namer(b) => v1(b
                    .syncweave_plugin_naming()
                    .call_name(store, &ctx.to_wit(), config, object)?
                    .map(|n| ObjectName {
                        name: n.name,
                        namespace: n.namespace,
                    })),
                Bound::V2Namer(b) => b
                    .syncweave_plugin_naming()
                    .call_name(store, &ctx.to_wit_v2(env.values), config, object)?
                    .map(|n| {
                        let name = ObjectName {
                            name: n.name.name,
                            namespace: n.name.namespace,
                        };
                        (name, n.report.into())
                    })
                    .map_err(Into::into),
                _ => unreachable!("role_call checked the world"),
            })
        });
        let result = result.and_then(|(n, report)| {
            self.check_size(n.name.len() + n.namespace.as_ref().map_or(0, String::len))?;
            output::check_name(&n.name, n.namespace.as_deref())
                .map_err(|m| self.failure(FailureKind::BadOutput, m))?;
            Ok(Named { name: n, report })
        });
        self.report(
            &result,
            CallArgs::Name {
                ctx,
                config,
                object,
            },
            record.as_ref(),
        );
        result
    }

    /// Transform a CRD before it is published to kcp (the same in 0.1 and
    /// 0.2: a projection has no consumer to read for or report to).
    pub fn project(&self, config: &str, crd: &str) -> Result<String, PluginFailure> {
        let (result, record) =
            self.role_call(World::Projector, &CallEnv::default(), |store, bound| {
                Ok(match bound {
                    Bound::V1Projector(b) => v1(b
                        .syncweave_plugin_projection()
                        .call_project(store, config, crd)?),
                    Bound::V2Projector(b) => v1(b
                        .syncweave_plugin_projection()
                        .call_project(store, config, crd)?),
                    _ => unreachable!("role_call checked the world"),
                })
            });
        let result = result.and_then(|(out, _)| {
            self.check_size(out.len())?;
            output::check_object(&out).map_err(|m| self.failure(FailureKind::BadOutput, m))?;
            Ok(out)
        });
        self.report(&result, CallArgs::Project { config, crd }, record.as_ref());
        result
    }

    /// Render `template` with `values` into one JSON object per document.
    /// The same as [`Plugin::render_with`] with no reads and no context
    /// values, without the report.
    pub fn render(
        &self,
        ctx: &CallContext,
        config: &str,
        template: &str,
        values: &str,
    ) -> Result<Vec<String>, PluginFailure> {
        self.render_with(ctx, &CallEnv::default(), config, template, values)
            .map(|r| r.documents)
    }

    /// [`Plugin::render`] in an environment (see [`Plugin::mutate_with`]).
    /// `values` is the template's values document; the context values are
    /// `env.values`.
    pub fn render_with(
        &self,
        ctx: &CallContext,
        env: &CallEnv<'_>,
        config: &str,
        template: &str,
        values: &str,
    ) -> Result<Rendered, PluginFailure> {
        let (result, record) = self.role_call(World::Renderer, env, |store, bound| {
            Ok(match bound {
                Bound::V1Renderer(b) => v1(b.syncweave_plugin_rendering().call_render(
                    store,
                    &ctx.to_wit(),
                    config,
                    template,
                    values,
                )?),
                Bound::V2Renderer(b) => b
                    .syncweave_plugin_rendering()
                    .call_render(store, &ctx.to_wit_v2(env.values), config, template, values)?
                    .map(|r| (r.documents, r.report.into()))
                    .map_err(Into::into),
                _ => unreachable!("role_call checked the world"),
            })
        });
        let result = result.and_then(|(docs, report)| {
            self.check_size(docs.iter().map(String::len).sum())?;
            for (i, d) in docs.iter().enumerate() {
                output::check_object(d).map_err(|m| {
                    self.failure(FailureKind::BadOutput, format!("document {}: {m}", i + 1))
                })?;
            }
            Ok(Rendered {
                documents: docs,
                report,
            })
        });
        self.report(
            &result,
            CallArgs::Render {
                ctx,
                config,
                template,
                values,
            },
            record.as_ref(),
        );
        result
    }

    /// An instance kept alive across calls, for benchmarks that separate
    /// call cost from instantiation. Production calls never reuse instances.
    #[doc(hidden)]
    pub fn warm(&self) -> Result<WarmInstance<'_>, PluginFailure> {
        let env = EnvState::new(
            self.compiled.contract,
            &CallEnv::default(),
            ReadPhase::Role(Arc::from([])),
        );
        let mut store = self.new_store(env);
        let bound = self
            .instantiate(&mut store)
            .map_err(|e| self.classify(e, store.data()))?;
        Ok(WarmInstance {
            plugin: self,
            store,
            bound,
        })
    }

    fn new_store(&self, env: EnvState) -> Store<HostState> {
        let engine = each_world!(&self.compiled.pre, WorldPre, p => p.engine());
        let state = HostState::new(
            Limiter::new(self.limits.memory_bytes),
            CallLog::new(
                self.name_arc.clone(),
                self.digest_arc.clone(),
                self.limits.max_log_bytes,
            ),
            env,
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

    /// Instantiate into a fresh store with `env` and run `f`, classifying
    /// any failure; returns what the call saw of its environment too.
    fn call<R: Send>(
        &self,
        env: EnvState,
        f: impl FnOnce(&mut Store<HostState>, &Bound) -> wasmtime::Result<R> + Send,
    ) -> (Result<R, PluginFailure>, CallRecord) {
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
                    tokio::task::block_in_place(|| self.call_here(env, f))
                }
                _ => std::thread::scope(|s| {
                    s.spawn(|| self.call_here(env, f))
                        .join()
                        .unwrap_or_else(|p| std::panic::resume_unwind(p))
                }),
            };
        }
        self.call_here(env, f)
    }

    fn call_here<R>(
        &self,
        env: EnvState,
        f: impl FnOnce(&mut Store<HostState>, &Bound) -> wasmtime::Result<R>,
    ) -> (Result<R, PluginFailure>, CallRecord) {
        let mut store = self.new_store(env);
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
        let result = result.map_err(|e| self.classify(e, store.data()));
        (result, store.into_data().env.into_record())
    }

    fn instantiate(&self, store: &mut Store<HostState>) -> wasmtime::Result<Bound> {
        Ok(match &self.compiled.pre {
            WorldPre::V1Mutator(p) => Bound::V1Mutator(p.instantiate(store)?),
            WorldPre::V1Namer(p) => Bound::V1Namer(p.instantiate(store)?),
            WorldPre::V1Projector(p) => Bound::V1Projector(p.instantiate(store)?),
            WorldPre::V1Renderer(p) => Bound::V1Renderer(p.instantiate(store)?),
            WorldPre::V2Mutator(p) => Bound::V2Mutator(p.instantiate(store)?),
            WorldPre::V2Namer(p) => Bound::V2Namer(p.instantiate(store)?),
            WorldPre::V2Projector(p) => Bound::V2Projector(p.instantiate(store)?),
            WorldPre::V2Renderer(p) => Bound::V2Renderer(p.instantiate(store)?),
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
        let res = match &self.bound {
            Bound::V1Mutator(b) => b
                .syncweave_plugin_mutation()
                .call_mutate(&mut self.store, &ctx.to_wit(), config, object, other)
                .map(v1),
            Bound::V2Mutator(b) => b
                .syncweave_plugin_mutation()
                .call_mutate(&mut self.store, &ctx.to_wit_v2(&[]), config, object, other)
                .map(|r| {
                    r.map(|m| (m.object, Report::from(m.report)))
                        .map_err(Into::into)
                }),
            _ => unreachable!("world checked above"),
        }
        .map_err(|e| p.classify(e, self.store.data()))?;
        let (out, _) =
            res.map_err(|GuestError(kind, msg)| p.failure(FailureKind::PluginError(kind), msg))?;
        p.check_size(out.len())?;
        output::check_mutation(object, &out).map_err(|m| p.failure(FailureKind::BadOutput, m))?;
        Ok(out)
    }
}
