//! What a call sees beyond its arguments, and what it reports beside its
//! output (contract 0.2): reads of other objects through a [`ReadHost`],
//! context values from earlier steps of a chain, and a [`Report`] of
//! results, conditions and context values for later steps.
//!
//! The caller passes a [`CallEnv`] to [`Plugin::mutate_with`],
//! [`Plugin::name_object_with`] or [`Plugin::render_with`]. The runtime
//! checks every read against the plugin's `describe()` declarations and
//! the [`EnvLimits`] before the `ReadHost` sees it, records every read and
//! its answer in a [`CallRecord`] (a failed call's capture carries it, and
//! [`RecordedReads`] serves it again in a replay), and checks the report
//! the guest returns.
//!
//! A 0.1 component has none of this: it gets no values, cannot read, and
//! its report is always empty.
//!
//! [`Plugin::mutate_with`]: crate::Plugin::mutate_with
//! [`Plugin::name_object_with`]: crate::Plugin::name_object_with
//! [`Plugin::render_with`]: crate::Plugin::render_with

use std::fmt;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use crate::plugin::ObjectName;
use crate::rules::{ReportBounds, ReportText, Selector, check_report};
use crate::world::ContractVersion;

/// Which API server a read goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Side {
    /// The consumer's workspace in kcp (the workspace of the object the call
    /// is made for).
    Kcp,
    /// The provider's service cluster.
    Service,
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Side::Kcp => "kcp",
            Side::Service => "service",
        })
    }
}

/// A resource type, as in a REST path: `group` is `""` for the core group.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Resource {
    pub group: String,
    pub version: String,
    /// The plural resource name (`namespaces`, `deployments`).
    pub resource: String,
}

impl Resource {
    pub fn new(
        group: impl Into<String>,
        version: impl Into<String>,
        resource: impl Into<String>,
    ) -> Resource {
        Resource {
            group: group.into(),
            version: version.into(),
            resource: resource.into(),
        }
    }

    /// A resource of the core group (`Resource::core("v1", "namespaces")`).
    pub fn core(version: impl Into<String>, resource: impl Into<String>) -> Resource {
        Resource::new("", version, resource)
    }
}

/// `namespaces (v1)`, `deployments (apps/v1)`.
impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.group.is_empty() {
            write!(f, "{} ({})", self.resource, self.version)
        } else {
            write!(f, "{} ({}/{})", self.resource, self.group, self.version)
        }
    }
}

/// A kind of object a plugin declares in `describe()` that it reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadDeclaration {
    pub side: Side,
    pub resource: Resource,
    /// Why the plugin reads it, shown by `plugin inspect`.
    pub purpose: String,
}

impl ReadDeclaration {
    fn covers(&self, side: Side, resource: &Resource) -> bool {
        self.side == side && &self.resource == resource
    }
}

/// The objects of one kind that a worked example's reads see.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadFixture {
    pub side: Side,
    pub resource: Resource,
    /// The objects, JSON each.
    pub objects: Vec<String>,
}

/// Why a read was not answered: the contract's `read-error`, returned to the
/// guest as is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[serde(tag = "kind", content = "message", rename_all = "kebab-case")]
pub enum ReadError {
    /// Not declared in `describe()`, not allowed by the operator, or over a
    /// per-call limit; the message names the declarations or the limit.
    #[error("not allowed: {0}")]
    NotAllowed(String),
    /// The API server does not serve that resource.
    #[error("not served: {0}")]
    NotServed(String),
    /// The host cannot read it now (cache not synced, server down, reads not
    /// configured); the call may be retried.
    #[error("unavailable: {0}")]
    Unavailable(String),
    /// The request itself is malformed (a bad label selector, an empty name).
    #[error("invalid: {0}")]
    Invalid(String),
}

/// Answers a call's reads: the host's caches in the agent, recorded answers
/// in a replay ([`RecordedReads`]), a worked example's objects in the
/// self-test ([`FixtureReads`]).
///
/// The runtime has already checked each read against the plugin's
/// declarations, the per-call [`EnvLimits`] and the syntax of the label
/// selector; the `ReadHost` applies the operator's allow-list and answers.
/// Reads run synchronously on the thread running the call (a blocking-pool
/// thread in the agent) while the call's timeout runs: answer from memory.
pub trait ReadHost: Send + Sync {
    /// One object by name, as JSON; `None` when it does not exist.
    /// `namespace` is `None` for cluster-scoped resources.
    fn get(
        &self,
        side: Side,
        resource: &Resource,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<String>, ReadError>;

    /// The objects of a resource, as JSON each: in `namespace` (`None`: every
    /// namespace the allow-list grants, or the cluster-scoped objects), and
    /// matching `label_selector` (already checked to parse as a [`Selector`]).
    fn list(
        &self,
        side: Side,
        resource: &Resource,
        namespace: Option<&str>,
        label_selector: Option<&str>,
    ) -> Result<Vec<String>, ReadError>;
}

/// Bounds on what one call may read and report. Kept per call (in
/// [`CallEnv`]) and recorded with it, so that a replay applies the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvLimits {
    /// Reads one call may make (gets and lists together, refused ones
    /// included); further reads fail with `not-allowed`.
    pub max_reads: usize,
    /// Bytes of objects all reads of one call may return together; a read
    /// whose answer would go over fails with `not-allowed`.
    pub max_read_bytes: usize,
    /// Bytes of all strings of a report together.
    pub max_report_bytes: usize,
    /// Results in one report.
    pub max_results: usize,
    /// Conditions in one report.
    pub max_conditions: usize,
    /// Context values one report may set.
    pub max_context_keys: usize,
}

impl Default for EnvLimits {
    /// 64 reads and 4 MiB read per call: a plugin reads a handful of
    /// objects (a namespace, a subnet, a few related objects), and the host
    /// answers from caches already in memory. A report of up to 64 KiB with
    /// 32 results, 16 conditions and 32 context values: Events and
    /// conditions are short, and a status takes a few of each.
    fn default() -> Self {
        EnvLimits {
            max_reads: 64,
            max_read_bytes: 4 << 20,
            max_report_bytes: 64 << 10,
            max_results: 32,
            max_conditions: 16,
            max_context_keys: 32,
        }
    }
}

/// The environment of one call: what the guest may read and the context
/// values of earlier steps. `CallEnv::default()` has no reads and no
/// values, which is what the older methods (`mutate`, `name_object`,
/// `render`) pass.
#[derive(Clone, Default)]
pub struct CallEnv<'a> {
    /// Answers the guest's reads; `None`: every read fails with
    /// `unavailable` ("reads are not configured").
    pub reads: Option<Arc<dyn ReadHost>>,
    /// Context values set by earlier steps of the chain, in the order they
    /// were set: (key, JSON value). Not passed to a 0.1 component.
    pub values: &'a [(String, String)],
    /// Bounds on reads and the report.
    pub limits: EnvLimits,
}

impl fmt::Debug for CallEnv<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallEnv")
            .field("reads", &self.reads.as_ref().map(|_| "ReadHost"))
            .field("values", &self.values)
            .field("limits", &self.limits)
            .finish()
    }
}

impl<'a> CallEnv<'a> {
    /// An environment whose reads `host` answers.
    pub fn with_reads(host: Arc<dyn ReadHost>) -> CallEnv<'a> {
        CallEnv {
            reads: Some(host),
            ..CallEnv::default()
        }
    }

    /// The same environment with these context values.
    pub fn values(mut self, values: &'a [(String, String)]) -> CallEnv<'a> {
        self.values = values;
        self
    }

    /// The same environment with these limits.
    pub fn limits(mut self, limits: EnvLimits) -> CallEnv<'a> {
        self.limits = limits;
        self
    }
}

/// One read a guest asked for.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "kebab-case")]
pub enum ReadRequest {
    Get {
        side: Side,
        resource: Resource,
        namespace: Option<String>,
        name: String,
    },
    List {
        side: Side,
        resource: Resource,
        namespace: Option<String>,
        label_selector: Option<String>,
    },
}

impl ReadRequest {
    pub fn side(&self) -> Side {
        match self {
            ReadRequest::Get { side, .. } | ReadRequest::List { side, .. } => *side,
        }
    }

    pub fn resource(&self) -> &Resource {
        match self {
            ReadRequest::Get { resource, .. } | ReadRequest::List { resource, .. } => resource,
        }
    }

    pub fn namespace(&self) -> Option<&str> {
        match self {
            ReadRequest::Get { namespace, .. } | ReadRequest::List { namespace, .. } => {
                namespace.as_deref()
            }
        }
    }

    fn ask(&self, host: &dyn ReadHost) -> Result<ReadAnswer, ReadError> {
        match self {
            ReadRequest::Get {
                side,
                resource,
                namespace,
                name,
            } => host
                .get(*side, resource, namespace.as_deref(), name)
                .map(ReadAnswer::Object),
            ReadRequest::List {
                side,
                resource,
                namespace,
                label_selector,
            } => host
                .list(
                    *side,
                    resource,
                    namespace.as_deref(),
                    label_selector.as_deref(),
                )
                .map(ReadAnswer::Objects),
        }
    }

    /// Refuse a malformed request before anyone answers it.
    fn check(&self) -> Result<(), ReadError> {
        if self.namespace() == Some("") {
            return Err(ReadError::Invalid(
                "the namespace is empty; pass none for cluster-scoped resources (or, for list, \
                 every namespace)"
                    .into(),
            ));
        }
        let r = self.resource();
        if r.version.is_empty() || r.resource.is_empty() {
            return Err(ReadError::Invalid(format!(
                "the resource {{group: {:?}, version: {:?}, resource: {:?}}} needs a version \
                 and a plural resource name (e.g. v1 and namespaces)",
                r.group, r.version, r.resource
            )));
        }
        match self {
            ReadRequest::Get { name, .. } if name.is_empty() => Err(ReadError::Invalid(
                "get needs a name; use list to read several objects".into(),
            )),
            ReadRequest::List {
                label_selector: Some(s),
                ..
            } => Selector::parse(s).map(|_| ()).map_err(ReadError::Invalid),
            _ => Ok(()),
        }
    }
}

/// `get kcp namespaces (v1) team-a`, `list service configmaps (v1) in ns-1 matching app=db`.
impl fmt::Display for ReadRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadRequest::Get {
                side,
                resource,
                namespace,
                name,
            } => {
                write!(f, "get {side} {resource} ")?;
                if let Some(ns) = namespace {
                    write!(f, "{ns}/")?;
                }
                write!(f, "{name}")
            }
            ReadRequest::List {
                side,
                resource,
                namespace,
                label_selector,
            } => {
                write!(f, "list {side} {resource}")?;
                if let Some(ns) = namespace {
                    write!(f, " in {ns}")?;
                }
                if let Some(s) = label_selector {
                    write!(f, " matching {s:?}")?;
                }
                Ok(())
            }
        }
    }
}

/// What a successful read returned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReadAnswer {
    /// A get's object, `None` when it does not exist.
    Object(Option<String>),
    /// A list's objects.
    Objects(Vec<String>),
}

impl ReadAnswer {
    /// Bytes of JSON returned.
    pub fn len(&self) -> usize {
        match self {
            ReadAnswer::Object(o) => o.as_ref().map_or(0, String::len),
            ReadAnswer::Objects(v) => v.iter().map(String::len).sum(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One read of a call and what the guest got back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedRead {
    pub request: ReadRequest,
    pub answer: Result<ReadAnswer, ReadError>,
    /// Whether the [`ReadHost`] was asked. False when the runtime answered
    /// by itself: an undeclared read, one over [`EnvLimits::max_reads`], a
    /// malformed one, or no `ReadHost` at all. A replay asks its own
    /// `ReadHost` only for these.
    pub from_host: bool,
}

/// Everything a call saw besides its arguments: the contract version it
/// was made under, the context values passed in, every read with its
/// answer in order, and the limits that applied. Enough, with the
/// arguments, to make the same call again ([`RecordedReads`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallRecord {
    pub contract: ContractVersion,
    /// The context values passed to the guest (none for 0.1).
    pub values: Vec<(String, String)>,
    pub reads: Vec<RecordedRead>,
    /// Reads the guest attempted: more than `reads.len()` when it kept
    /// reading past [`EnvLimits::max_reads`] (only the first refusal is
    /// recorded).
    pub read_attempts: usize,
    pub limits: EnvLimits,
}

impl CallRecord {
    /// A [`CallEnv`] that makes the same call again: the recorded values
    /// and limits, and the recorded answers (see [`RecordedReads`]).
    pub fn replay_env(&self) -> CallEnv<'_> {
        CallEnv {
            reads: Some(Arc::new(RecordedReads::from_record(self))),
            values: &self.values,
            limits: self.limits,
        }
    }
}

/// One recorded read: the request, its answer, and whether a replay has
/// served it yet.
type RecordedEntry = (ReadRequest, Result<ReadAnswer, ReadError>, bool);

/// A [`ReadHost`] that answers from a recording, for replays: each read gets
/// the answer the recorded call got for the same request (the same request
/// made several times gets the recorded answers in order, then the last one
/// again). A read the recording does not have fails with `unavailable`,
/// naming it: the replay is not the same call (another plugin version,
/// another input).
#[derive(Debug)]
pub struct RecordedReads {
    /// (request, answer, served yet).
    entries: Mutex<Vec<RecordedEntry>>,
}

impl RecordedReads {
    /// Serve `reads` (those the runtime answered itself are left out: a
    /// replay's runtime answers them the same way again).
    pub fn new(reads: impl IntoIterator<Item = RecordedRead>) -> RecordedReads {
        RecordedReads {
            entries: Mutex::new(
                reads
                    .into_iter()
                    .filter(|r| r.from_host)
                    .map(|r| (r.request, r.answer, false))
                    .collect(),
            ),
        }
    }

    /// Serve the reads of `record`.
    pub fn from_record(record: &CallRecord) -> RecordedReads {
        RecordedReads::new(record.reads.iter().cloned())
    }

    /// Recorded reads the replay has not asked for (yet): when the replay
    /// is over, a sign that it took another path than the recorded call.
    pub fn unserved(&self) -> Vec<ReadRequest> {
        self.entries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .filter(|(_, _, served)| !served)
            .map(|(r, _, _)| r.clone())
            .collect()
    }

    fn answer(&self, request: &ReadRequest) -> Result<ReadAnswer, ReadError> {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let next = entries
            .iter()
            .position(|(r, _, served)| !served && r == request)
            .or_else(|| entries.iter().rposition(|(r, _, _)| r == request));
        match next {
            Some(i) => {
                entries[i].2 = true;
                entries[i].1.clone()
            }
            None => Err(ReadError::Unavailable(format!(
                "the replay asked to {request}, which the recorded call did not read; the \
                 plugin's reads differ from the recording (another plugin version or another \
                 input?)"
            ))),
        }
    }
}

impl ReadHost for RecordedReads {
    fn get(
        &self,
        side: Side,
        resource: &Resource,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<String>, ReadError> {
        let request = ReadRequest::Get {
            side,
            resource: resource.clone(),
            namespace: namespace.map(str::to_string),
            name: name.to_string(),
        };
        match self.answer(&request)? {
            ReadAnswer::Object(o) => Ok(o),
            ReadAnswer::Objects(_) => Err(ReadError::Unavailable(format!(
                "the recording answers {request} with a list; the recording is corrupt"
            ))),
        }
    }

    fn list(
        &self,
        side: Side,
        resource: &Resource,
        namespace: Option<&str>,
        label_selector: Option<&str>,
    ) -> Result<Vec<String>, ReadError> {
        let request = ReadRequest::List {
            side,
            resource: resource.clone(),
            namespace: namespace.map(str::to_string),
            label_selector: label_selector.map(str::to_string),
        };
        match self.answer(&request)? {
            ReadAnswer::Objects(v) => Ok(v),
            ReadAnswer::Object(_) => Err(ReadError::Unavailable(format!(
                "the recording answers {request} with a single object; the recording is corrupt"
            ))),
        }
    }
}

/// A [`ReadHost`] over a worked example's [`ReadFixture`]s (the self-test
/// and `syncweave plugin test`): `get` finds the object by namespace and
/// name, `list` returns the objects in the namespace (all of them for
/// none) that match the label selector ([`Selector`] syntax). A resource
/// the fixtures do not list has no objects.
#[derive(Debug, Clone)]
pub struct FixtureReads {
    objects: Vec<FixtureObject>,
}

#[derive(Debug, Clone)]
struct FixtureObject {
    side: Side,
    resource: Resource,
    namespace: Option<String>,
    name: String,
    labels: std::collections::HashMap<String, String>,
    json: String,
}

impl FixtureReads {
    /// Index the fixtures' objects; the error names an object that is not a
    /// JSON object with `metadata.name` (`reads[0].objects[2]: …`).
    pub fn new(fixtures: &[ReadFixture]) -> Result<FixtureReads, String> {
        #[derive(Deserialize)]
        struct Meta {
            name: Option<String>,
            namespace: Option<String>,
            #[serde(default)]
            labels: Option<std::collections::HashMap<String, String>>,
        }
        #[derive(Deserialize)]
        struct Obj {
            metadata: Option<Meta>,
        }
        let mut objects = Vec::new();
        for (i, f) in fixtures.iter().enumerate() {
            for (j, json) in f.objects.iter().enumerate() {
                let at = format!("reads[{i}].objects[{j}] ({} {})", f.side, f.resource);
                let o: Obj = serde_json::from_str(json).map_err(|e| {
                    format!("{at} is not a Kubernetes object in JSON ({e}); fix the example")
                })?;
                let meta = o.metadata.ok_or_else(|| format!("{at} has no metadata"))?;
                let name = meta
                    .name
                    .filter(|n| !n.is_empty())
                    .ok_or_else(|| format!("{at} has no metadata.name"))?;
                objects.push(FixtureObject {
                    side: f.side,
                    resource: f.resource.clone(),
                    namespace: meta.namespace.filter(|n| !n.is_empty()),
                    name,
                    labels: meta.labels.unwrap_or_default(),
                    json: json.clone(),
                });
            }
        }
        Ok(FixtureReads { objects })
    }

    fn of<'s>(
        &'s self,
        side: Side,
        resource: &'s Resource,
    ) -> impl Iterator<Item = &'s FixtureObject> + 's {
        self.objects
            .iter()
            .filter(move |o| o.side == side && &o.resource == resource)
    }
}

impl ReadHost for FixtureReads {
    fn get(
        &self,
        side: Side,
        resource: &Resource,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<String>, ReadError> {
        Ok(self
            .of(side, resource)
            .find(|o| o.name == name && o.namespace.as_deref() == namespace)
            .map(|o| o.json.clone()))
    }

    fn list(
        &self,
        side: Side,
        resource: &Resource,
        namespace: Option<&str>,
        label_selector: Option<&str>,
    ) -> Result<Vec<String>, ReadError> {
        let selector =
            Selector::parse(label_selector.unwrap_or_default()).map_err(ReadError::Invalid)?;
        Ok(self
            .of(side, resource)
            .filter(|o| namespace.is_none() || o.namespace.as_deref() == namespace)
            .filter(|o| selector.matches(&o.labels))
            .map(|o| o.json.clone())
            .collect())
    }
}

/// How much a result matters (the contract's `severity`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Severity {
    /// Worth telling the consumer: a Normal Event.
    Normal,
    /// Something is wrong or missing, but the output is usable: a Warning
    /// Event.
    Warning,
}

/// Something a call wants the consumer to know, beside its output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallResult {
    pub severity: Severity,
    /// CamelCase, as an Event's reason (`SubnetMissing`).
    pub reason: String,
    pub message: String,
}

/// A condition a call reports on the object it handled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Condition {
    /// CamelCase condition type (`SubnetResolved`).
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    pub reason: String,
    pub message: String,
}

/// What a call reports beside its output (always empty for a 0.1
/// component). The runtime has checked it: within [`EnvLimits`], reasons
/// and condition types as Kubernetes accepts them, condition statuses
/// `True`/`False`/`Unknown`, context keys set once and not already among
/// the incoming values, context values valid JSON.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Report {
    pub results: Vec<CallResult>,
    pub conditions: Vec<Condition>,
    /// Context values for the steps after this one: (key, JSON value).
    pub set_context: Vec<(String, String)>,
}

impl Report {
    pub fn is_empty(&self) -> bool {
        self.results.is_empty() && self.conditions.is_empty() && self.set_context.is_empty()
    }

    /// Check the report against the contract's rules (see [`Report`]); the
    /// error names the field and the fix.
    pub fn check(&self, incoming: &[(String, String)], limits: &EnvLimits) -> Result<(), String> {
        let text = ReportText {
            results: self
                .results
                .iter()
                .map(|r| (r.reason.as_str(), r.message.as_str()))
                .collect(),
            conditions: self
                .conditions
                .iter()
                .map(|c| {
                    (
                        c.type_.as_str(),
                        c.status.as_str(),
                        c.reason.as_str(),
                        c.message.as_str(),
                    )
                })
                .collect(),
            set_context: self
                .set_context
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect(),
        };
        let is_json = |v: &str| {
            serde_json::from_str::<serde::de::IgnoredAny>(v)
                .map(|_| ())
                .map_err(|e| e.to_string())
        };
        check_report(
            &text,
            &|k| incoming.iter().any(|(have, _)| have == k),
            &is_json,
            &ReportBounds {
                max_bytes: limits.max_report_bytes,
                max_results: limits.max_results,
                max_conditions: limits.max_conditions,
                max_context_keys: limits.max_context_keys,
            },
        )
    }
}

/// A mutator's answer with its report ([`crate::Plugin::mutate_with`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mutated {
    /// The full new object, JSON.
    pub object: String,
    pub report: Report,
}

/// A namer's answer with its report ([`crate::Plugin::name_object_with`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Named {
    pub name: ObjectName,
    pub report: Report,
}

/// A renderer's documents with its report ([`crate::Plugin::render_with`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    /// One JSON object per document.
    pub documents: Vec<String>,
    pub report: Report,
}

/// When in a call's life reads are possible.
#[derive(Debug, Clone)]
pub(crate) enum ReadPhase {
    /// `describe` and `validate-config`: the declarations are not known yet.
    Meta,
    /// A role call, with the plugin's declarations.
    Role(Arc<[ReadDeclaration]>),
}

/// A call's environment inside its store: answers reads and records them.
pub(crate) struct EnvState {
    contract: ContractVersion,
    host: Option<Arc<dyn ReadHost>>,
    phase: ReadPhase,
    limits: EnvLimits,
    values: Vec<(String, String)>,
    reads: Vec<RecordedRead>,
    attempts: usize,
    bytes: usize,
}

impl EnvState {
    /// The environment of a `describe` or `validate-config` call.
    pub fn meta(contract: ContractVersion) -> EnvState {
        EnvState::new(contract, &CallEnv::default(), ReadPhase::Meta)
    }

    pub fn new(contract: ContractVersion, env: &CallEnv<'_>, phase: ReadPhase) -> EnvState {
        EnvState {
            contract,
            host: env.reads.clone(),
            phase,
            limits: env.limits,
            // 0.1 has no field for them: the guest never sees them.
            values: match contract {
                ContractVersion::V0_1 => Vec::new(),
                ContractVersion::V0_2 => env.values.to_vec(),
            },
            reads: Vec::new(),
            attempts: 0,
            bytes: 0,
        }
    }

    /// What the call saw, once it is over.
    pub fn into_record(self) -> CallRecord {
        CallRecord {
            contract: self.contract,
            values: self.values,
            reads: self.reads,
            read_attempts: self.attempts,
            limits: self.limits,
        }
    }

    /// Answer one read of the guest and record it.
    pub fn read(&mut self, request: ReadRequest) -> Result<ReadAnswer, ReadError> {
        self.attempts += 1;
        let (answer, from_host) = self.answer(&request);
        // Past the limit only the first refusal is kept: a guest looping on
        // reads must not grow the record without bound.
        if self.attempts <= self.limits.max_reads + 1 {
            self.reads.push(RecordedRead {
                request,
                answer: answer.clone(),
                from_host,
            });
        }
        answer
    }

    fn answer(&mut self, request: &ReadRequest) -> (Result<ReadAnswer, ReadError>, bool) {
        let declarations = match &self.phase {
            ReadPhase::Meta => {
                return (
                    Err(ReadError::Unavailable(
                        "reads are not available in describe() and validate-config(); read in \
                         the role function (mutate, name, render)"
                            .into(),
                    )),
                    false,
                );
            }
            ReadPhase::Role(d) => d,
        };
        if self.attempts > self.limits.max_reads {
            return (
                Err(ReadError::NotAllowed(format!(
                    "this call has already made {} reads, the limit per call \
                     (EnvLimits::max_reads); read less, e.g. one list with a label selector \
                     instead of many gets",
                    self.limits.max_reads
                ))),
                false,
            );
        }
        let (side, resource) = (request.side(), request.resource());
        if !declarations.iter().any(|d| d.covers(side, resource)) {
            let declared = if declarations.is_empty() {
                "describe() declares no reads".to_string()
            } else {
                format!(
                    "describe() declares reads of {}",
                    declarations
                        .iter()
                        .map(|d| format!("{} {}", d.side, d.resource))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            return (
                Err(ReadError::NotAllowed(format!(
                    "the plugin may not {request}: {declared}; add {side} {resource} to \
                     plugin-info.reads to read it (the operator must allow it too)"
                ))),
                false,
            );
        }
        if let Err(e) = request.check() {
            return (Err(e), false);
        }
        let Some(host) = &self.host else {
            return (
                Err(ReadError::Unavailable(
                    "reads are not configured for this call: the host gave the runtime no \
                     ReadHost (CallEnv::reads), so nothing can be read"
                        .into(),
                )),
                false,
            );
        };
        let answer = match request.ask(host.as_ref()) {
            Ok(a) => a,
            Err(e) => return (Err(e), true),
        };
        let len = answer.len();
        if self.bytes + len > self.limits.max_read_bytes {
            return (
                Err(ReadError::NotAllowed(format!(
                    "this read returns {len} bytes; with the {} bytes this call has already \
                     read that is over the limit of {} bytes per call \
                     (EnvLimits::max_read_bytes); read fewer objects (name a namespace or a \
                     label selector)",
                    self.bytes, self.limits.max_read_bytes
                ))),
                true,
            );
        }
        self.bytes += len;
        (Ok(answer), true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ns(name: &str, labels: &str) -> String {
        format!(
            r#"{{"apiVersion":"v1","kind":"Namespace","metadata":{{"name":"{name}","labels":{labels}}}}}"#
        )
    }

    fn namespaces() -> Resource {
        Resource::core("v1", "namespaces")
    }

    fn get(name: &str) -> ReadRequest {
        ReadRequest::Get {
            side: Side::Kcp,
            resource: namespaces(),
            namespace: None,
            name: name.into(),
        }
    }

    fn state(host: Option<Arc<dyn ReadHost>>, limits: EnvLimits) -> EnvState {
        let decl: Arc<[ReadDeclaration]> = vec![ReadDeclaration {
            side: Side::Kcp,
            resource: namespaces(),
            purpose: "the consumer's namespace".into(),
        }]
        .into();
        let env = CallEnv {
            reads: host,
            limits,
            ..CallEnv::default()
        };
        EnvState::new(ContractVersion::V0_2, &env, ReadPhase::Role(decl))
    }

    fn fixture() -> Arc<FixtureReads> {
        Arc::new(
            FixtureReads::new(&[ReadFixture {
                side: Side::Kcp,
                resource: namespaces(),
                objects: vec![ns("a", r#"{"team":"x"}"#), ns("b", r#"{"team":"y"}"#)],
            }])
            .unwrap(),
        )
    }

    #[test]
    fn reads_are_checked_then_answered_and_recorded() {
        let mut s = state(Some(fixture()), EnvLimits::default());
        assert_eq!(
            s.read(get("a")).unwrap(),
            ReadAnswer::Object(Some(ns("a", r#"{"team":"x"}"#)))
        );
        assert_eq!(s.read(get("zz")).unwrap(), ReadAnswer::Object(None));
        let secrets = ReadRequest::Get {
            side: Side::Service,
            resource: Resource::core("v1", "secrets"),
            namespace: Some("ns".into()),
            name: "s".into(),
        };
        let e = s.read(secrets).unwrap_err();
        assert_eq!(
            e.to_string(),
            "not allowed: the plugin may not get service secrets (v1) ns/s: describe() declares \
             reads of kcp namespaces (v1); add service secrets (v1) to plugin-info.reads to read \
             it (the operator must allow it too)"
        );
        let list = ReadRequest::List {
            side: Side::Kcp,
            resource: namespaces(),
            namespace: None,
            label_selector: Some("team in (y)".into()),
        };
        assert_eq!(
            s.read(list).unwrap(),
            ReadAnswer::Objects(vec![ns("b", r#"{"team":"y"}"#)])
        );
        let bad = ReadRequest::List {
            side: Side::Kcp,
            resource: namespaces(),
            namespace: None,
            label_selector: Some("team in".into()),
        };
        assert!(matches!(s.read(bad), Err(ReadError::Invalid(_))));
        let r = s.into_record();
        assert_eq!(r.reads.len(), 5);
        assert_eq!(
            r.reads.iter().map(|r| r.from_host).collect::<Vec<_>>(),
            [true, true, false, true, false]
        );
    }

    #[test]
    fn without_a_read_host_reads_are_unavailable() {
        let mut s = state(None, EnvLimits::default());
        let e = s.read(get("a")).unwrap_err();
        assert!(
            matches!(&e, ReadError::Unavailable(m) if m.starts_with("reads are not configured")),
            "{e}"
        );
        let mut meta = EnvState::meta(ContractVersion::V0_2);
        assert!(
            meta.read(get("a"))
                .unwrap_err()
                .to_string()
                .contains("not available in describe()")
        );
    }

    #[test]
    fn limits_on_count_and_bytes() {
        let limits = EnvLimits {
            max_reads: 2,
            ..EnvLimits::default()
        };
        let mut s = state(Some(fixture()), limits);
        s.read(get("a")).unwrap();
        s.read(get("b")).unwrap();
        for _ in 0..5 {
            let e = s.read(get("a")).unwrap_err();
            assert!(
                e.to_string()
                    .contains("already made 2 reads, the limit per call (EnvLimits::max_reads)"),
                "{e}"
            );
        }
        let r = s.into_record();
        assert_eq!((r.reads.len(), r.read_attempts), (3, 7));

        let one = ns("a", r#"{"team":"x"}"#).len();
        let limits = EnvLimits {
            max_read_bytes: one + 10,
            ..EnvLimits::default()
        };
        let mut s = state(Some(fixture()), limits);
        s.read(get("a")).unwrap();
        let e = s.read(get("b")).unwrap_err();
        assert!(
            e.to_string().contains(&format!(
                "this read returns {one} bytes; with the {one} bytes this call has already read \
                 that is over the limit of {} bytes per call (EnvLimits::max_read_bytes)",
                one + 10
            )),
            "{e}"
        );
        // Small reads still fit.
        assert_eq!(s.read(get("zz")).unwrap(), ReadAnswer::Object(None));
    }

    #[test]
    fn recorded_reads_replay_in_order_and_refuse_the_unrecorded() {
        let mut s = state(Some(fixture()), EnvLimits::default());
        s.read(get("a")).unwrap();
        s.read(get("zz")).unwrap();
        let record = s.into_record();
        let json = serde_json::to_string(&record).unwrap();
        let back: CallRecord = serde_json::from_str(&json).unwrap();
        assert_eq!(back, record);

        let replay = RecordedReads::from_record(&record);
        assert_eq!(replay.unserved().len(), 2);
        assert_eq!(
            replay
                .get(Side::Kcp, &namespaces(), None, "a")
                .unwrap()
                .unwrap(),
            ns("a", r#"{"team":"x"}"#)
        );
        assert_eq!(replay.get(Side::Kcp, &namespaces(), None, "zz"), Ok(None));
        // Asked again: the last answer again.
        assert!(replay.get(Side::Kcp, &namespaces(), None, "a").is_ok());
        assert!(replay.unserved().is_empty());
        let e = replay.get(Side::Kcp, &namespaces(), None, "b").unwrap_err();
        assert_eq!(
            e.to_string(),
            "unavailable: the replay asked to get kcp namespaces (v1) b, which the recorded \
             call did not read; the plugin's reads differ from the recording (another plugin \
             version or another input?)"
        );
    }

    #[test]
    fn fixture_reads_honour_namespace_and_selector() {
        let cm = |ns: &str, name: &str, app: &str| {
            format!(
                r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"namespace":"{ns}","name":"{name}","labels":{{"app":"{app}"}}}}}}"#
            )
        };
        let cms = Resource::core("v1", "configmaps");
        let f = FixtureReads::new(&[ReadFixture {
            side: Side::Service,
            resource: cms.clone(),
            objects: vec![
                cm("a", "one", "db"),
                cm("b", "one", "web"),
                cm("b", "two", "db"),
            ],
        }])
        .unwrap();
        let names = |v: Vec<String>| {
            v.iter()
                .map(|j| {
                    let v: serde_json::Value = serde_json::from_str(j).unwrap();
                    format!(
                        "{}/{}",
                        v["metadata"]["namespace"].as_str().unwrap(),
                        v["metadata"]["name"].as_str().unwrap()
                    )
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(
            names(f.list(Side::Service, &cms, None, Some("app=db")).unwrap()),
            ["a/one", "b/two"]
        );
        assert_eq!(
            names(f.list(Side::Service, &cms, Some("b"), None).unwrap()),
            ["b/one", "b/two"]
        );
        assert_eq!(
            names(
                f.list(Side::Service, &cms, Some("b"), Some("app!=db"))
                    .unwrap()
            ),
            ["b/one"]
        );
        assert!(f.list(Side::Kcp, &cms, None, None).unwrap().is_empty());
        assert_eq!(
            f.get(Side::Service, &cms, Some("b"), "two").unwrap(),
            Some(cm("b", "two", "db"))
        );
        assert_eq!(f.get(Side::Service, &cms, None, "two").unwrap(), None);
        let e = FixtureReads::new(&[ReadFixture {
            side: Side::Kcp,
            resource: namespaces(),
            objects: vec!["{}".into()],
        }])
        .unwrap_err();
        assert_eq!(
            e,
            "reads[0].objects[0] (kcp namespaces (v1)) has no metadata"
        );
    }

    #[test]
    fn report_checks_use_the_limits() {
        let mut r = Report::default();
        r.check(&[], &EnvLimits::default()).unwrap();
        r.set_context.push(("zone".into(), "\"a\"".into()));
        r.check(&[], &EnvLimits::default()).unwrap();
        let e = r
            .check(&[("zone".into(), "\"b\"".into())], &EnvLimits::default())
            .unwrap_err();
        assert!(e.contains("already set by an earlier step"), "{e}");
        let tight = EnvLimits {
            max_report_bytes: 5,
            ..EnvLimits::default()
        };
        assert!(
            r.check(&[], &tight)
                .unwrap_err()
                .contains("over the limit of 5 bytes")
        );
    }
}
