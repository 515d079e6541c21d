//! What the sync needs from plugin code, as traits the plugin chain
//! ([`crate::plugin::chain`]) implements: naming ([`Namer`]), mutations
//! ([`Mutator`]) and related-object templates ([`Templates`]), swapped as
//! one [`PluginSet`] when a WasmPlugin moves to new code. The sync never
//! names a plugin; the chain adapts plugins to these.

use std::sync::Arc;

use futures::future::BoxFuture;
use kube::api::DynamicObject;
use serde_json::Value;
use syncweave_runtime::{ReadHost, Report};

use super::naming::LocalName;
use crate::apis::wasmplugin::{Labels, Subject};
use crate::apis::{RelatedResourceOrigin, RelatedResourceSpec};
use crate::controller::store::ObjectKey;

/// Turns an object into its service-side name. The default is upstream's
/// scheme; templates and plugins implement it as Wasm. Async because plugin
/// calls run on the blocking pool, never on the caller's async worker.
pub trait Namer: Send + Sync {
    /// The name of `object` from `origin`; the reports of the call come
    /// back beside it (contract 0.2; always empty for 0.1 plugins).
    fn name<'a>(
        &'a self,
        origin: &'a Origin<'a>,
        object: &'a Value,
    ) -> BoxFuture<'a, Result<(LocalName, Reports), String>>;
}

/// Rewrites objects on their way (spec down, status up). Async like
/// [`Namer`].
pub trait Mutator: Send + Sync {
    /// `object` is mutated in place; `other` is the counterpart (for spec
    /// mutations, the projected destination when no copy exists yet). What
    /// the chain's steps report comes back.
    fn mutate_spec<'a>(
        &'a self,
        origin: &'a Origin<'a>,
        object: &'a mut Value,
        other: Option<&'a Value>,
    ) -> BoxFuture<'a, Result<Reports, String>>;
    fn mutate_status<'a>(
        &'a self,
        origin: &'a Origin<'a>,
        object: &'a mut Value,
        other: Option<&'a Value>,
    ) -> BoxFuture<'a, Result<Reports, String>>;
}

/// What the plugin calls of one phase reported (contract 0.2): each step's
/// results and conditions with the field of the step
/// (`spec.mutation.spec[1].wasm`). Context values stay inside the chain.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Reports(pub Vec<(String, Report)>);

impl Reports {
    pub fn is_empty(&self) -> bool {
        self.0
            .iter()
            .all(|(_, r)| r.results.is_empty() && r.conditions.is_empty())
    }

    pub fn extend(&mut self, other: Reports) {
        self.0.extend(other.0);
    }
}

/// Where a kcp object lives: its logical cluster and, with
/// `enableWorkspacePaths`, its workspace path; and the object itself
/// (identity and labels), by which a WasmPlugin in a staged rollout picks
/// the digest for every call made for it (its status and related objects
/// included).
#[derive(Clone, Copy)]
pub struct Origin<'a> {
    pub cluster: &'a str,
    pub path: Option<&'a str>,
    pub subject: Subject<'a>,
    /// Answers the reads of the calls made for this object (contract 0.2),
    /// when the PublishedResource allows reads (`spec.reads`).
    pub reads: Option<&'a Arc<dyn ReadHost>>,
}

impl std::fmt::Debug for Origin<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Origin")
            .field("cluster", &self.cluster)
            .field("path", &self.path)
            .field("subject", &self.subject)
            .field("reads", &self.reads.is_some())
            .finish()
    }
}

impl<'a> Origin<'a> {
    /// The origin of the kcp object `remote` with key `key`.
    pub(crate) fn of(key: &'a ObjectKey, path: Option<&'a str>, remote: &'a DynamicObject) -> Self {
        Origin {
            cluster: &key.cluster,
            path,
            subject: Subject {
                cluster: &key.cluster,
                namespace: key.namespace.as_deref(),
                name: &key.name,
                labels: remote
                    .metadata
                    .labels
                    .as_ref()
                    .map_or(Labels::None, Labels::Map),
            },
            reads: None,
        }
    }

    /// The same origin, whose calls' reads `reads` answers.
    pub fn with_reads(mut self, reads: Option<&'a Arc<dyn ReadHost>>) -> Self {
        self.reads = reads;
        self
    }
}

/// The parts of a sync that run plugin code.
pub struct PluginSet {
    pub namer: Arc<dyn Namer>,
    pub mutator: Option<Arc<dyn Mutator>>,
    /// `spec.related`, in order, with their mutations.
    pub related: Vec<Related>,
    /// Evaluates related-object templates (in the sandbox).
    pub templates: Option<Arc<dyn Templates>>,
}

/// Evaluates a Go template with a context (the built-in renderer, in the
/// sandbox; a fake in unit tests). Async: the sandbox call runs on the
/// blocking pool.
pub trait Templates: Send + Sync {
    fn render<'a>(
        &'a self,
        cluster: &'a str,
        template: &'a str,
        values: &'a Value,
    ) -> BoxFuture<'a, Result<String, String>>;
}

/// One configured related resource, ready to sync.
pub struct Related {
    /// Position in `spec.related` (for messages).
    pub index: usize,
    pub spec: RelatedResourceSpec,
    pub mutator: Option<Arc<dyn Mutator>>,
}

impl Related {
    pub(crate) fn field(&self) -> String {
        format!("spec.related[{}] ({})", self.index, self.spec.identifier)
    }
    pub(crate) fn is_service(&self) -> bool {
        self.spec.origin == RelatedResourceOrigin::Service
    }
}
