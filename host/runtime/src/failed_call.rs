//! What the runtime tells a failure hook about a plugin call that failed:
//! enough to run the same call again elsewhere (the plugin, its limits, the
//! arguments exactly as the guest got them, what it read and the context
//! values it saw, and the classified failure).
//! The host keeps these to replay them (`syncweave plugin replay`).

use std::sync::{Arc, OnceLock, Weak};

use crate::env::CallRecord;
use crate::failure::PluginFailure;
use crate::plugin::{CallContext, Compiled, Plugin};

/// The arguments of one role call, as passed to the guest.
#[derive(Debug, Clone, Copy)]
pub enum CallArgs<'a> {
    Mutate {
        ctx: &'a CallContext,
        config: &'a str,
        object: &'a str,
        other: Option<&'a str>,
    },
    Name {
        ctx: &'a CallContext,
        config: &'a str,
        object: &'a str,
    },
    Project {
        config: &'a str,
        crd: &'a str,
    },
    Render {
        ctx: &'a CallContext,
        config: &'a str,
        template: &'a str,
        values: &'a str,
    },
}

impl CallArgs<'_> {
    /// The role function's WIT name: `mutate`, `name`, `project`, `render`.
    pub fn function(&self) -> &'static str {
        match self {
            CallArgs::Mutate { .. } => "mutate",
            CallArgs::Name { .. } => "name",
            CallArgs::Project { .. } => "project",
            CallArgs::Render { .. } => "render",
        }
    }

    pub fn context(&self) -> Option<&CallContext> {
        match self {
            CallArgs::Mutate { ctx, .. }
            | CallArgs::Name { ctx, .. }
            | CallArgs::Render { ctx, .. } => Some(ctx),
            CallArgs::Project { .. } => None,
        }
    }

    pub fn config(&self) -> &str {
        match self {
            CallArgs::Mutate { config, .. }
            | CallArgs::Name { config, .. }
            | CallArgs::Project { config, .. }
            | CallArgs::Render { config, .. } => config,
        }
    }

    /// Bytes of all arguments together.
    pub fn len(&self) -> usize {
        let ctx = self.context().map_or(0, |c| {
            c.cluster_name.len() + c.cluster_path.as_ref().map_or(0, String::len) + c.owner.len()
        });
        ctx + match self {
            CallArgs::Mutate {
                config,
                object,
                other,
                ..
            } => config.len() + object.len() + other.map_or(0, str::len),
            CallArgs::Name { config, object, .. } => config.len() + object.len(),
            CallArgs::Project { config, crd } => config.len() + crd.len(),
            CallArgs::Render {
                config,
                template,
                values,
                ..
            } => config.len() + template.len() + values.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A role call (mutate, name, project, render) that failed while running
/// the guest: see [`PluginFailure::is_call_failure`]. Loading failures and
/// `describe`/`validate-config` calls are not reported.
#[derive(Debug, Clone, Copy)]
pub struct FailedCall<'a> {
    pub plugin: &'a Plugin,
    pub args: CallArgs<'a>,
    pub failure: &'a PluginFailure,
    /// What the call saw besides its arguments: the context values, every
    /// read with its answer, the limits. A replay serves the same answers
    /// with [`CallRecord::replay_env`]. Always set by the runtime; `None`
    /// only in a `FailedCall` made elsewhere (tests) or for a call that
    /// failed before the guest ran.
    pub env: Option<&'a CallRecord>,
}

/// Called on the thread that ran the call, right after it failed; keep it
/// quick and never block on the call pool.
pub type FailureHook = Box<dyn Fn(&FailedCall<'_>) + Send + Sync>;

/// Shared by a runtime and its plugins; set once.
pub(crate) type HookSlot = Arc<OnceLock<FailureHook>>;

/// Whether a digest's compiled code is still held by the runtime: true for
/// as long as any [`Plugin`] with it exists (or for good, for a built-in).
/// Whoever keeps data about a digest drops it when this turns false, as the
/// runtime drops the compiled code. Holds nothing alive itself.
#[derive(Clone)]
pub struct Residency(pub(crate) Weak<Compiled>);

impl Residency {
    pub fn is_resident(&self) -> bool {
        self.0.strong_count() > 0
    }
}

impl std::fmt::Debug for Residency {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Residency")
            .field(&self.is_resident())
            .finish()
    }
}

impl Plugin {
    /// A handle telling whether this plugin's digest is still in use.
    pub fn residency(&self) -> Residency {
        Residency(Arc::downgrade(&self.compiled()))
    }
}
