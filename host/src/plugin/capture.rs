//! The last failing inputs of plugin calls, kept per plugin digest so a
//! failure in the cluster can be replayed on a laptop
//! (`syncweave plugin replay`).
//!
//! The runtime tells [`CaptureStore::record`] about every role call that
//! failed while running the guest (trap, timeout, memory limit, the guest's
//! own error, output the host refused). A capture holds what a rerun needs:
//! the plugin (world, digest, the reference it was fetched from), its
//! limits, the call's context and arguments, and the classified failure.
//!
//! Bounded three ways ([`CaptureLimits`]): a few captures per digest (the
//! newest kept), a size cap per capture (a larger one keeps the failure but
//! not the input) and a cap on all of them together (the least recently
//! seen go first). Captures of a digest no plugin uses any more are dropped
//! with it, as the runtime drops its compiled code. The same input failing
//! the same way again (a retried object) bumps a counter instead of taking
//! another slot.
//!
//! Secret data never gets in: see [`redact`].

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use syncweave_runtime::{
    CallArgs, CallContext, Direction, FailedCall, FailureKind, Limits, Residency, Runtime, World,
    object_json,
};

/// The `format` of every capture document.
pub const FORMAT: &str = "syncweave.dev/plugin-call-capture/v1";

/// What a redacted Secret `data` value becomes: valid base64 (of
/// `<redacted>`), so a plugin that decodes it fails no differently.
pub const REDACTED_BASE64: &str = "PHJlZGFjdGVkPg==";
/// What any other redacted value becomes.
pub const REDACTED: &str = "<redacted>";

/// How much is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CaptureLimits {
    /// Captures per plugin digest; the newest are kept.
    pub per_digest: usize,
    /// Largest capture document kept with its input; a larger one keeps
    /// the failure only.
    pub max_capture_bytes: usize,
    /// All capture documents together.
    pub max_total_bytes: usize,
}

impl Default for CaptureLimits {
    /// 16 per digest: enough distinct failing inputs to see a pattern,
    /// and a retried object takes one slot, not 16. 1 MiB per capture:
    /// etcd caps an object at 1.5 MiB, and a mutation carries the object
    /// and its counterpart, yet typical objects are a few KiB, so nearly
    /// every real input fits. 16 MiB in all: a small, fixed part of the
    /// agent's memory (its default limit is 512 MiB) however many plugins
    /// fail.
    fn default() -> Self {
        CaptureLimits {
            per_digest: 16,
            max_capture_bytes: 1 << 20,
            max_total_bytes: 16 << 20,
        }
    }
}

/// One failed call, as served by the debug endpoint and read by
/// `syncweave plugin replay`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Capture {
    /// Always [`FORMAT`].
    pub format: String,
    /// Unique in this agent process.
    pub id: String,
    /// When this input first failed this way (host time, RFC 3339).
    pub captured_at: String,
    /// When it last did.
    pub last_seen_at: String,
    /// How many times it did.
    pub count: u64,
    /// The agent's version.
    pub agent_version: String,
    pub plugin: CapturedPlugin,
    pub limits: CapturedLimits,
    /// The call; `None` when it was over the size cap (see `omitted`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<CapturedCall>,
    /// Why `call` is missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub omitted: Option<String>,
    pub failure: CapturedFailure,
    /// Contract 0.2: what the call read (each read with its answer), the
    /// context values it got and the limits that applied, so that `plugin
    /// replay` serves the same answers. Secret data in read answers is
    /// redacted like the call's input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<syncweave_runtime::CallRecord>,
    /// What was replaced before storing, as paths (`call.object.data.password`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redacted: Vec<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CapturedPlugin {
    /// The name the agent loaded it under (a WasmPlugin's name, a built-in's).
    pub name: String,
    /// `sha256:<hex>` of the component.
    pub digest: String,
    /// mutator, namer, projector or renderer.
    pub world: String,
    /// The reference it was fetched from, when known (a WasmPlugin's
    /// `spec.source`, an inline source, a built-in name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct CapturedLimits {
    pub timeout_ms: u64,
    pub memory_bytes: u64,
    pub max_output_bytes: u64,
    pub max_log_bytes: u64,
}

impl From<Limits> for CapturedLimits {
    fn from(l: Limits) -> Self {
        CapturedLimits {
            timeout_ms: u64::try_from(l.timeout.as_millis()).unwrap_or(u64::MAX),
            memory_bytes: l.memory_bytes,
            max_output_bytes: l.max_output_bytes as u64,
            max_log_bytes: l.max_log_bytes as u64,
        }
    }
}

impl CapturedLimits {
    pub fn to_limits(self) -> Limits {
        Limits {
            timeout: std::time::Duration::from_millis(self.timeout_ms),
            memory_bytes: self.memory_bytes,
            max_output_bytes: usize::try_from(self.max_output_bytes).unwrap_or(usize::MAX),
            max_log_bytes: usize::try_from(self.max_log_bytes).unwrap_or(usize::MAX),
        }
    }
}

/// The call's context (`types.context`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct CapturedContext {
    pub cluster_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_path: Option<String>,
    /// `kcp-to-service` or `service-to-kcp`.
    pub direction: String,
    pub owner: String,
}

impl From<&CallContext> for CapturedContext {
    fn from(c: &CallContext) -> Self {
        CapturedContext {
            cluster_name: c.cluster_name.clone(),
            cluster_path: c.cluster_path.clone(),
            direction: match c.direction {
                Direction::KcpToService => "kcp-to-service",
                Direction::ServiceToKcp => "service-to-kcp",
            }
            .into(),
            owner: c.owner.clone(),
        }
    }
}

impl CapturedContext {
    pub fn to_context(&self) -> Result<CallContext, String> {
        let direction = match self.direction.as_str() {
            "kcp-to-service" => Direction::KcpToService,
            "service-to-kcp" => Direction::ServiceToKcp,
            other => {
                return Err(format!(
                    "call.context.direction: {other:?} is neither kcp-to-service nor service-to-kcp"
                ));
            }
        };
        Ok(CallContext {
            cluster_name: self.cluster_name.clone(),
            cluster_path: self.cluster_path.clone(),
            direction,
            owner: self.owner.clone(),
        })
    }
}

/// The arguments, as JSON where they are JSON (readable, and written back
/// byte for byte by [`object_json`]); an argument that would not be is kept
/// as its text and named in `textArgs`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CapturedCall {
    /// `mutate`, `name`, `project` or `render`.
    pub function: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<CapturedContext>,
    pub config: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crd: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub values: Option<Value>,
    /// Arguments stored as their exact text (a JSON string) rather than as
    /// JSON: `template` always, and any argument that is not JSON or would
    /// not be written back identically.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub text_args: Vec<String>,
}

impl CapturedCall {
    /// The text of argument `name` (`config`, `object`, …) exactly as the
    /// guest got it (after redaction); `None` when the call had none.
    pub fn arg(&self, name: &str) -> Option<String> {
        let v = match name {
            "config" => Some(&self.config),
            "object" => self.object.as_ref(),
            "other" => self.other.as_ref(),
            "crd" => self.crd.as_ref(),
            "template" => self.template.as_ref(),
            "values" => self.values.as_ref(),
            _ => None,
        }?;
        if self.text_args.iter().any(|a| a == name) {
            return Some(
                v.as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| v.to_string()),
            );
        }
        Some(object_json(v))
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CapturedFailure {
    /// [`FailureKind::as_str`]: timeout, memory limit, crash, bad output,
    /// invalid config, invalid input, rejected, internal error.
    pub kind: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backtrace: Option<String>,
}

impl CapturedFailure {
    pub fn kind(&self) -> Option<FailureKind> {
        FailureKind::parse(&self.kind)
    }

    /// The message's first line (what a replay compares).
    pub fn headline(&self) -> &str {
        self.message.lines().next().unwrap_or_default()
    }
}

/// A capture in the endpoint's list.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CaptureSummary {
    pub id: String,
    /// Where the capture itself is served.
    pub path: String,
    pub plugin: String,
    pub digest: String,
    pub world: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    pub function: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    pub failure: String,
    pub message: String,
    pub captured_at: String,
    pub last_seen_at: String,
    pub count: u64,
    /// Bytes of the capture document.
    pub size: usize,
    /// Whether the input is in it (false when over the size cap).
    pub replayable: bool,
}

/// The endpoint's list: the captures, newest first, and the bounds.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CaptureList {
    pub captures: Vec<CaptureSummary>,
    pub total_bytes: usize,
    pub per_digest: usize,
    pub max_capture_bytes: usize,
    pub max_total_bytes: usize,
}

struct Entry {
    /// Hash of the raw input and the failure, to fold repeats.
    key: [u8; 32],
    capture: Capture,
    size: usize,
    /// Recency across all digests, for the total cap.
    touched: u64,
}

struct DigestCaptures {
    residency: Residency,
    /// Oldest first.
    entries: VecDeque<Entry>,
}

#[derive(Default)]
struct State {
    digests: HashMap<String, DigestCaptures>,
    next_id: u64,
    clock: u64,
    total: usize,
}

/// The captures of one agent process; cheap to share (`Arc`).
pub struct CaptureStore {
    limits: CaptureLimits,
    state: Mutex<State>,
}

impl std::fmt::Debug for CaptureStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.lock();
        f.debug_struct("CaptureStore")
            .field("limits", &self.limits)
            .field("digests", &s.digests.len())
            .field("total", &s.total)
            .finish()
    }
}

impl CaptureStore {
    pub fn new(limits: CaptureLimits) -> Arc<CaptureStore> {
        Arc::new(CaptureStore {
            limits,
            state: Mutex::default(),
        })
    }

    /// Capture every failing call of `runtime`'s plugins from now on.
    /// False if the runtime already has a failure hook.
    pub fn attach(self: &Arc<Self>, runtime: &Runtime) -> bool {
        let store = self.clone();
        runtime.on_call_failure(Box::new(move |call| store.record(call)))
    }

    pub fn limits(&self) -> CaptureLimits {
        self.limits
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Keep `call` (redacted), or count it again if the same input already
    /// failed the same way.
    pub fn record(&self, call: &FailedCall<'_>) {
        let now = now();
        let key = input_key(call);
        let digest = call.plugin.digest().to_string();
        {
            let mut s = self.lock();
            s.clock += 1;
            let clock = s.clock;
            sweep(&mut s);
            if let Some(d) = s.digests.get_mut(&digest)
                && let Some(i) = d.entries.iter().position(|e| e.key == key)
            {
                let mut e = d.entries.remove(i).expect("index from position");
                e.capture.count += 1;
                e.capture.last_seen_at = now;
                e.touched = clock;
                d.entries.push_back(e);
                return;
            }
        }
        // Built outside the lock: parsing and redacting a large object
        // takes a while, and other calls may be failing at the same time.
        let (capture, size) = build(call, &now, &self.limits);
        let mut s = self.lock();
        // Another thread may have kept the same input meanwhile.
        if let Some(e) = s
            .digests
            .get_mut(&digest)
            .and_then(|d| d.entries.iter_mut().find(|e| e.key == key))
        {
            e.capture.count += 1;
            return;
        }
        s.next_id += 1;
        let id = s.next_id;
        s.clock += 1;
        let clock = s.clock;
        let mut capture = capture;
        // The id is part of the document; its few bytes are not counted.
        capture.id = id.to_string();
        let freed = {
            let d = s.digests.entry(digest).or_insert_with(|| DigestCaptures {
                residency: call.plugin.residency(),
                entries: VecDeque::new(),
            });
            d.entries.push_back(Entry {
                key,
                capture,
                size,
                touched: clock,
            });
            let mut freed = 0;
            while d.entries.len() > self.limits.per_digest {
                freed += d.entries.pop_front().map_or(0, |e| e.size);
            }
            freed
        };
        s.total = s.total + size - freed;
        while s.total > self.limits.max_total_bytes && evict_oldest(&mut s) {}
    }

    /// The captures kept now, newest first.
    pub fn list(&self) -> CaptureList {
        let mut s = self.lock();
        sweep(&mut s);
        let mut entries: Vec<&Entry> = s.digests.values().flat_map(|d| d.entries.iter()).collect();
        entries.sort_by_key(|e| std::cmp::Reverse(e.touched));
        CaptureList {
            captures: entries.into_iter().map(summary).collect(),
            total_bytes: s.total,
            per_digest: self.limits.per_digest,
            max_capture_bytes: self.limits.max_capture_bytes,
            max_total_bytes: self.limits.max_total_bytes,
        }
    }

    /// The capture with `id`, if it is still kept.
    pub fn get(&self, id: &str) -> Option<Capture> {
        let mut s = self.lock();
        sweep(&mut s);
        s.digests
            .values()
            .flat_map(|d| d.entries.iter())
            .find(|e| e.capture.id == id)
            .map(|e| e.capture.clone())
    }
}

/// Drop the captures of digests no plugin uses any more.
fn sweep(s: &mut State) {
    let mut freed = 0;
    s.digests.retain(|_, d| {
        let keep = d.residency.is_resident();
        if !keep {
            freed += d.entries.iter().map(|e| e.size).sum::<usize>();
        }
        keep
    });
    s.total -= freed;
}

/// Drop the least recently seen capture of all; false when none is left.
fn evict_oldest(s: &mut State) -> bool {
    let oldest = s
        .digests
        .iter()
        .filter_map(|(digest, d)| d.entries.front().map(|e| (e.touched, digest.clone())))
        .min();
    let Some((_, digest)) = oldest else {
        return false;
    };
    let d = s.digests.get_mut(&digest).expect("found above");
    let e = d.entries.pop_front().expect("found above");
    s.total -= e.size;
    if d.entries.is_empty() {
        s.digests.remove(&digest);
    }
    true
}

fn summary(e: &Entry) -> CaptureSummary {
    let c = &e.capture;
    let (function, owner) = match &c.call {
        Some(call) => (
            call.function.clone(),
            call.context.as_ref().map(|x| x.owner.clone()),
        ),
        None => (String::new(), None),
    };
    CaptureSummary {
        id: c.id.clone(),
        path: format!("/debug/captures/{}", c.id),
        plugin: c.plugin.name.clone(),
        digest: c.plugin.digest.clone(),
        world: c.plugin.world.clone(),
        source: c.plugin.source.clone(),
        function,
        owner,
        failure: c.failure.kind.clone(),
        message: c.failure.headline().to_string(),
        captured_at: c.captured_at.clone(),
        last_seen_at: c.last_seen_at.clone(),
        count: c.count,
        size: e.size,
        replayable: c.call.is_some(),
    }
}

fn now() -> String {
    k8s_openapi::jiff::Timestamp::now()
        .round(k8s_openapi::jiff::Unit::Millisecond)
        .map(|t| t.to_string())
        .unwrap_or_default()
}

/// Which input this was and how it failed, hashed: the same object
/// failing the same way on every retry is one capture, counted.
fn input_key(call: &FailedCall<'_>) -> [u8; 32] {
    let mut h = Sha256::new();
    let mut part = |s: &str| {
        h.update((s.len() as u64).to_le_bytes());
        h.update(s.as_bytes());
    };
    let a = &call.args;
    part(a.function());
    if let Some(c) = a.context() {
        part(&c.cluster_name);
        part(c.cluster_path.as_deref().unwrap_or("\0"));
        part(&format!("{:?}", c.direction));
        part(&c.owner);
    }
    for (_, text) in raw_args(a) {
        part(text.unwrap_or("\0"));
    }
    part(call.failure.kind.as_str());
    part(call.failure.headline());
    h.finalize().into()
}

/// The arguments besides context, by name, in a fixed order.
fn raw_args<'a>(a: &CallArgs<'a>) -> Vec<(&'static str, Option<&'a str>)> {
    match *a {
        CallArgs::Mutate {
            config,
            object,
            other,
            ..
        } => vec![
            ("config", Some(config)),
            ("object", Some(object)),
            ("other", other),
        ],
        CallArgs::Name { config, object, .. } => {
            vec![("config", Some(config)), ("object", Some(object))]
        }
        CallArgs::Project { config, crd } => vec![("config", Some(config)), ("crd", Some(crd))],
        CallArgs::Render {
            config,
            template,
            values,
            ..
        } => vec![
            ("config", Some(config)),
            ("template", Some(template)),
            ("values", Some(values)),
        ],
    }
}

/// The capture document for `call`, and its size.
fn build(call: &FailedCall<'_>, now: &str, limits: &CaptureLimits) -> (Capture, usize) {
    let p = call.plugin;
    let mut capture = Capture {
        format: FORMAT.into(),
        id: String::new(),
        captured_at: now.to_string(),
        last_seen_at: now.to_string(),
        count: 1,
        agent_version: crate::ops::version::VERSION.to_string(),
        plugin: CapturedPlugin {
            name: p.name().to_string(),
            digest: p.digest().to_string(),
            world: p.world().as_str().to_string(),
            source: p.source().map(str::to_string),
        },
        limits: p.limits().into(),
        call: None,
        omitted: None,
        failure: CapturedFailure {
            kind: call.failure.kind.as_str().to_string(),
            message: call.failure.message.clone(),
            backtrace: call.failure.backtrace.clone(),
        },
        redacted: Vec::new(),
        env: None,
    };
    let input_len = call.args.len() + call.env.map_or(0, env_len);
    if input_len > limits.max_capture_bytes {
        capture.omitted = Some(omitted_note(input_len, limits.max_capture_bytes));
    } else {
        let mut redactions = Redactions::default();
        let mut c = CapturedCall {
            function: call.args.function().to_string(),
            context: call.args.context().map(CapturedContext::from),
            config: Value::Null,
            object: None,
            other: None,
            crd: None,
            template: None,
            values: None,
            text_args: Vec::new(),
        };
        for (name, text) in raw_args(&call.args) {
            let Some(text) = text else { continue };
            let parsed = match name {
                "template" => None,
                _ => serde_json::from_str::<Value>(text).ok(),
            };
            let value = match parsed {
                Some(mut v) => {
                    let before = redactions.paths.len();
                    redact(&mut v, &format!("call.{name}"), &mut redactions);
                    if name == "config" {
                        redact_config_keys(&mut v, "call.config", &mut redactions);
                    }
                    // Kept as JSON when it writes back byte for byte, or
                    // when redaction changed it anyway.
                    if redactions.paths.len() > before || object_json(&v) == text {
                        v
                    } else {
                        c.text_args.push(name.to_string());
                        Value::String(text.to_string())
                    }
                }
                None => {
                    c.text_args.push(name.to_string());
                    Value::String(text.to_string())
                }
            };
            match name {
                "config" => c.config = value,
                "object" => c.object = Some(value),
                "other" => c.other = Some(value),
                "crd" => c.crd = Some(value),
                "template" => c.template = Some(value),
                _ => c.values = Some(value),
            }
        }
        // What the call read: Secrets redacted like the input's.
        capture.env = call.env.map(|e| redact_env(e, &mut redactions));
        // A secret value copied elsewhere (another field, the guest's
        // error message, a text argument) goes too.
        redactions.scrub_call(&mut c);
        redactions.scrub_failure(&mut capture.failure);
        capture.redacted = redactions.paths;
        capture.call = Some(c);
    }
    let mut size = serde_json::to_vec(&capture).map_or(usize::MAX, |v| v.len());
    if size > limits.max_capture_bytes && capture.call.is_some() {
        capture.call = None;
        capture.env = None;
        capture.omitted = Some(omitted_note(size, limits.max_capture_bytes));
        size = serde_json::to_vec(&capture).map_or(0, |v| v.len());
    }
    (capture, size)
}

/// Bytes of what a call read and the values it got.
fn env_len(e: &syncweave_runtime::CallRecord) -> usize {
    let reads: usize = e
        .reads
        .iter()
        .map(|r| r.answer.as_ref().map_or(0, |a| a.len()))
        .sum();
    reads
        + e.values
            .iter()
            .map(|(k, v)| k.len() + v.len())
            .sum::<usize>()
}

/// `e` with Secret data in every read answer redacted (paths
/// `env.reads[i]…`), and the secret values noted for scrubbing.
fn redact_env(
    e: &syncweave_runtime::CallRecord,
    r: &mut Redactions,
) -> syncweave_runtime::CallRecord {
    use syncweave_runtime::ReadAnswer;
    let mut e = e.clone();
    let one = |text: &mut String, path: String, r: &mut Redactions| {
        if let Ok(mut v) = serde_json::from_str::<Value>(text) {
            let before = r.paths.len();
            redact(&mut v, &path, r);
            if r.paths.len() > before {
                *text = object_json(&v);
            }
        }
    };
    for (i, read) in e.reads.iter_mut().enumerate() {
        match &mut read.answer {
            Ok(ReadAnswer::Object(Some(text))) => one(text, format!("env.reads[{i}]"), r),
            Ok(ReadAnswer::Objects(list)) => {
                for (j, text) in list.iter_mut().enumerate() {
                    one(text, format!("env.reads[{i}][{j}]"), r);
                }
            }
            _ => {}
        }
    }
    e
}

fn omitted_note(len: usize, max: usize) -> String {
    format!(
        "the call's input ({len} bytes) is over the {max}-byte capture limit; only the failure \
         was kept"
    )
}

/// What was redacted, and the secret values to scrub from everything else.
#[derive(Default)]
struct Redactions {
    paths: Vec<String>,
    /// Secret values (as stored and, for `data`, decoded), at least
    /// [`MIN_SCRUB_LEN`] long: shorter ones would match all over.
    values: Vec<String>,
}

const MIN_SCRUB_LEN: usize = 4;

impl Redactions {
    fn secret_value(&mut self, v: &Value, base64: bool) {
        let Some(s) = v.as_str() else { return };
        if s.len() >= MIN_SCRUB_LEN {
            self.values.push(s.to_string());
        }
        if base64
            && let Some(decoded) = decode_base64(s)
            && let Ok(text) = String::from_utf8(decoded)
            && text.len() >= MIN_SCRUB_LEN
        {
            self.values.push(text);
        }
    }

    fn scrub(&self, s: &mut String) -> bool {
        let mut changed = false;
        for v in &self.values {
            if s.contains(v.as_str()) {
                *s = s.replace(v.as_str(), REDACTED);
                changed = true;
            }
        }
        changed
    }

    fn scrub_value(&mut self, v: &mut Value, path: &str) {
        match v {
            Value::String(s) => {
                let scrubbed = self.scrub(s);
                if scrubbed {
                    self.paths.push(path.to_string());
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter_mut().enumerate() {
                    self.scrub_value(item, &format!("{path}[{i}]"));
                }
            }
            Value::Object(map) => {
                for (k, item) in map.iter_mut() {
                    self.scrub_value(item, &format!("{path}.{k}"));
                }
            }
            _ => {}
        }
    }

    fn scrub_call(&mut self, c: &mut CapturedCall) {
        if self.values.is_empty() {
            return;
        }
        self.values.sort_by_key(|v| std::cmp::Reverse(v.len()));
        self.values.dedup();
        self.scrub_value(&mut c.config, "call.config");
        for (name, v) in [
            ("object", &mut c.object),
            ("other", &mut c.other),
            ("crd", &mut c.crd),
            ("template", &mut c.template),
            ("values", &mut c.values),
        ] {
            if let Some(v) = v {
                self.scrub_value(v, &format!("call.{name}"));
            }
        }
    }

    fn scrub_failure(&mut self, f: &mut CapturedFailure) {
        if self.scrub(&mut f.message) {
            self.paths.push("failure.message".into());
        }
        if let Some(bt) = &mut f.backtrace
            && self.scrub(bt)
        {
            self.paths.push("failure.backtrace".into());
        }
    }
}

/// Replace Secret data in `v` (found at `path`) before it is stored: every
/// object of kind Secret (core/v1), wherever it sits (the call's object,
/// its counterpart, a template's values, a list's items), has each
/// `data` value replaced by [`REDACTED_BASE64`] and each `stringData` value
/// by [`REDACTED`] (keys are kept: plugins often branch on them), and its
/// `kubectl.kubernetes.io/last-applied-configuration` annotation, which
/// holds a full copy, replaced too. Items of a SecretList (which carry no
/// kind of their own) count as Secrets.
fn redact(v: &mut Value, path: &str, r: &mut Redactions) {
    redact_at(v, path, r, false);
}

const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

fn redact_at(v: &mut Value, path: &str, r: &mut Redactions, in_secret_list: bool) {
    match v {
        Value::Object(map) => {
            let kind = map.get("kind").and_then(Value::as_str).unwrap_or_default();
            let core = map
                .get("apiVersion")
                .and_then(Value::as_str)
                .is_none_or(|a| a == "v1");
            let is_secret = core && (kind == "Secret" || (kind.is_empty() && in_secret_list));
            let is_list = core && kind == "SecretList";
            if is_secret {
                for (field, placeholder, base64) in [
                    ("data", REDACTED_BASE64, true),
                    ("stringData", REDACTED, false),
                ] {
                    match map.get_mut(field) {
                        Some(Value::Object(entries)) => {
                            for (k, val) in entries.iter_mut() {
                                r.secret_value(val, base64);
                                *val = Value::String(placeholder.into());
                                r.paths.push(format!("{path}.{field}.{k}"));
                            }
                        }
                        None | Some(Value::Null) => {}
                        Some(other) => {
                            *other = Value::String(REDACTED.into());
                            r.paths.push(format!("{path}.{field}"));
                        }
                    }
                }
                if let Some(a) = map
                    .get_mut("metadata")
                    .and_then(|m| m.get_mut("annotations"))
                    .and_then(|a| a.get_mut(LAST_APPLIED))
                {
                    *a = Value::String(REDACTED.into());
                    r.paths
                        .push(format!("{path}.metadata.annotations.{LAST_APPLIED}"));
                }
            }
            for (k, child) in map.iter_mut() {
                let child_in_list = is_list && k == "items";
                redact_at(child, &format!("{path}.{k}"), r, child_in_list);
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                redact_at(item, &format!("{path}[{i}]"), r, in_secret_list);
            }
        }
        _ => {}
    }
}

/// Config keys whose values are credentials by their name (`password`,
/// `apiToken`, `client_secret`, …). Plugin config is written in
/// PublishedResources and WasmPlugins, which are not Secrets, so it should
/// hold none; but a capture leaves the cluster, so values under such keys
/// are replaced anyway (`plugin replay --config` puts real ones back).
fn is_credential_key(key: &str) -> bool {
    let k: String = key
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .map(|c| c.to_ascii_lowercase())
        .collect();
    const SUFFIXES: [&str; 10] = [
        "password",
        "passwd",
        "secret",
        "token",
        "apikey",
        "accesskey",
        "privatekey",
        "credential",
        "credentials",
        "passphrase",
    ];
    SUFFIXES.iter().any(|s| k.ends_with(s))
}

fn redact_config_keys(v: &mut Value, path: &str, r: &mut Redactions) {
    match v {
        Value::Object(map) => {
            for (k, child) in map.iter_mut() {
                let p = format!("{path}.{k}");
                if is_credential_key(k) && !child.is_null() {
                    r.secret_value(child, false);
                    *child = Value::String(REDACTED.into());
                    r.paths.push(p);
                } else {
                    redact_config_keys(child, &p, r);
                }
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                redact_config_keys(item, &format!("{path}[{i}]"), r);
            }
        }
        _ => {}
    }
}

/// Standard base64 (with or without padding), as Secret data is written.
fn decode_base64(s: &str) -> Option<Vec<u8>> {
    fn val(c: u8) -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    }
    let bytes = s.trim_end_matches('=').as_bytes();
    if bytes.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(bytes.len() * 3 / 4);
    for chunk in bytes.chunks(4) {
        let mut n = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            n |= val(c)? << (18 - 6 * i);
        }
        out.push((n >> 16) as u8);
        if chunk.len() > 2 {
            out.push((n >> 8) as u8);
        }
        if chunk.len() > 3 {
            out.push(n as u8);
        }
    }
    Some(out)
}

/// The world a capture names.
pub fn world_of(capture: &Capture) -> Result<World, String> {
    World::parse(&capture.plugin.world).ok_or_else(|| {
        format!(
            "plugin.world: {:?} is not a plugin world (mutator, namer, projector, renderer)",
            capture.plugin.world
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use syncweave_runtime::{FailureKind, PluginFailure, RuntimeConfig};

    /// Default engine settings, so the built-ins load precompiled.
    fn runtime() -> Runtime {
        Runtime::new(RuntimeConfig {
            cache_dir: None,
            ..Default::default()
        })
        .expect("runtime")
    }

    fn ctx() -> CallContext {
        CallContext {
            cluster_name: "abc".into(),
            cluster_path: Some("root:org".into()),
            direction: Direction::KcpToService,
            owner: "pr".into(),
        }
    }

    fn crash() -> PluginFailure {
        PluginFailure::new(
            "p",
            "sha256:x",
            FailureKind::Crash,
            "the guest trapped: boom",
        )
    }

    /// Record a mutate failure of `plugin` on `object`.
    fn fail_on(store: &CaptureStore, plugin: &syncweave_runtime::Plugin, object: &str) {
        let (c, f) = (ctx(), crash());
        store.record(&FailedCall {
            plugin,
            args: CallArgs::Mutate {
                ctx: &c,
                config: r#"{"mode":"panic"}"#,
                object,
                other: None,
            },
            failure: &f,
            env: None,
        });
    }

    fn cm(name: &str) -> String {
        object_json(&json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "ns"}, "data": {"k": "v"}}))
    }

    #[test]
    fn keeps_the_newest_per_digest_and_folds_repeats() {
        let rt = runtime();
        let naming = rt.load_builtin("naming").unwrap();
        let store = CaptureStore::new(CaptureLimits {
            per_digest: 3,
            ..Default::default()
        });
        for i in 0..5 {
            fail_on(&store, &naming, &cm(&format!("o{i}")));
        }
        let list = store.list();
        let names: Vec<String> = list
            .captures
            .iter()
            .map(|s| {
                store.get(&s.id).unwrap().call.unwrap().object.unwrap()["metadata"]["name"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        assert_eq!(names, ["o4", "o3", "o2"], "newest first, oldest dropped");
        assert_eq!(
            list.total_bytes,
            list.captures.iter().map(|s| s.size).sum::<usize>()
        );

        // The same input failing the same way again is counted, not kept twice.
        fail_on(&store, &naming, &cm("o3"));
        fail_on(&store, &naming, &cm("o3"));
        let list = store.list();
        assert_eq!(list.captures.len(), 3);
        let top = &list.captures[0];
        assert_eq!(top.count, 3);
        let c = store.get(&top.id).unwrap();
        assert_eq!(c.call.unwrap().object.unwrap()["metadata"]["name"], "o3");
        assert_eq!(c.plugin.source.as_deref(), Some("naming"));
        assert_eq!(c.plugin.world, "namer");
        assert_eq!(c.failure.kind, "crash");
        assert_eq!(top.path, format!("/debug/captures/{}", top.id));
    }

    #[test]
    fn arguments_round_trip_byte_for_byte() {
        let rt = runtime();
        let naming = rt.load_builtin("naming").unwrap();
        let store = CaptureStore::new(CaptureLimits::default());
        let object = cm("a");
        let (c, f) = (ctx(), crash());
        // Not what object_json writes (kind after data): kept as text.
        let config = r#"{"data":1,"kind":"x"}"#;
        store.record(&FailedCall {
            plugin: &naming,
            args: CallArgs::Render {
                ctx: &c,
                config,
                template: "{{ .x }}",
                values: &object,
            },
            failure: &f,
            env: None,
        });
        let id = store.list().captures[0].id.clone();
        let doc = serde_json::to_string(&store.get(&id).unwrap()).unwrap();
        let back: Capture = serde_json::from_str(&doc).unwrap();
        let call = back.call.unwrap();
        assert_eq!(call.arg("config").unwrap(), config);
        assert_eq!(call.arg("template").unwrap(), "{{ .x }}");
        assert_eq!(call.arg("values").unwrap(), object);
        assert!(
            call.values.as_ref().unwrap().is_object(),
            "readable JSON, not a string"
        );
        assert_eq!(call.text_args, ["config", "template"]);
        assert_eq!(call.arg("object"), None);
        assert_eq!(call.context.unwrap().to_context().unwrap(), ctx());
    }

    #[test]
    fn size_caps_keep_the_failure_and_evict_the_oldest() {
        let rt = runtime();
        let naming = rt.load_builtin("naming").unwrap();
        let mutation = rt.load_builtin("mutation").unwrap();
        let store = CaptureStore::new(CaptureLimits {
            per_digest: 16,
            max_capture_bytes: 4096,
            max_total_bytes: 8192,
        });
        // Over the per-capture cap: the failure stays, the input does not.
        let big = object_json(&json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "big"}, "data": {"k": "x".repeat(10_000)}}));
        fail_on(&store, &naming, &big);
        let s = store.list().captures[0].clone();
        assert!(!s.replayable);
        assert!(s.size < 4096);
        let c = store.get(&s.id).unwrap();
        assert!(c.call.is_none());
        assert!(
            c.omitted
                .unwrap()
                .contains("over the 4096-byte capture limit")
        );
        assert_eq!(c.failure.message, "the guest trapped: boom");

        // The total cap evicts the least recently seen, across digests.
        for i in 0..20 {
            let p = if i % 2 == 0 { &naming } else { &mutation };
            fail_on(&store, p, &cm(&format!("n{i}")));
        }
        let list = store.list();
        assert!(list.total_bytes <= 8192, "{}", list.total_bytes);
        assert!(list.captures.len() < 20);
        let newest = store.get(&list.captures[0].id).unwrap();
        assert_eq!(
            newest.call.unwrap().object.unwrap()["metadata"]["name"],
            "n19"
        );
        assert!(
            list.captures.iter().all(|c| c.replayable),
            "the big one went first"
        );
    }

    #[test]
    fn captures_go_with_their_digest() {
        // Its own runtime: nothing may be resident at the end.
        let rt = crate::testing::own_runtime();
        // Loaded as a plain plugin, not as the built-in: nothing pins its
        // code, so it goes when the last plugin using it does.
        let bytes = &syncweave_runtime::builtins::get("naming").unwrap().wasm()[..];
        let plugin = rt.load("custom", bytes, None).unwrap();
        let store = CaptureStore::new(CaptureLimits::default());
        fail_on(&store, &plugin, &cm("a"));
        assert_eq!(store.list().captures.len(), 1);
        assert_eq!(store.list().captures[0].source, None, "no fetcher said");
        drop(plugin);
        assert_eq!(rt.stats().resident, 0);
        assert!(store.list().captures.is_empty(), "dropped with the digest");
        assert_eq!(store.list().total_bytes, 0);
    }

    #[test]
    fn what_a_call_read_is_kept_with_secrets_redacted() {
        use syncweave_runtime::{
            CallRecord, ContractVersion, EnvLimits, ReadAnswer, ReadRequest, RecordedRead,
            Resource, Side,
        };
        let rt = runtime();
        let naming = rt.load_builtin("naming").unwrap();
        let store = CaptureStore::new(CaptureLimits::default());
        let secret = object_json(&json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "creds", "namespace": "ns"}, "data": {"password": "aHVudGVyMjI="}}));
        let record = CallRecord {
            contract: ContractVersion::V0_2,
            values: vec![("tenant".into(), "\"acme\"".into())],
            reads: vec![
                RecordedRead {
                    request: ReadRequest::Get {
                        side: Side::Kcp,
                        resource: Resource::core("v1", "secrets"),
                        namespace: Some("ns".into()),
                        name: "creds".into(),
                    },
                    answer: Ok(ReadAnswer::Object(Some(secret))),
                    from_host: true,
                },
                RecordedRead {
                    request: ReadRequest::List {
                        side: Side::Kcp,
                        resource: Resource::core("v1", "configmaps"),
                        namespace: Some("ns".into()),
                        label_selector: None,
                    },
                    answer: Ok(ReadAnswer::Objects(vec![cm("a")])),
                    from_host: true,
                },
            ],
            read_attempts: 2,
            limits: EnvLimits::default(),
        };
        let f = PluginFailure::new(
            "p",
            "sha256:x",
            FailureKind::Crash,
            "the password was hunter22",
        );
        let c = ctx();
        store.record(&FailedCall {
            plugin: &naming,
            args: CallArgs::Name {
                ctx: &c,
                config: "{}",
                object: &cm("x"),
            },
            failure: &f,
            env: Some(&record),
        });
        let id = store.list().captures[0]
            .path
            .rsplit('/')
            .next()
            .unwrap()
            .to_string();
        let capture = store.get(&id).unwrap();
        let env = capture.env.as_ref().expect("the reads are kept");
        assert_eq!(env.values, record.values);
        assert_eq!(env.reads.len(), 2);
        let Ok(ReadAnswer::Object(Some(kept))) = &env.reads[0].answer else {
            panic!("{:?}", env.reads[0])
        };
        assert!(!kept.contains("aHVudGVyMjI="), "{kept}");
        assert_eq!(env.reads[1], record.reads[1], "a ConfigMap is kept as read");
        assert!(
            capture
                .redacted
                .iter()
                .any(|p| p.starts_with("env.reads[0]")),
            "{:?}",
            capture.redacted
        );
        assert!(
            !capture.failure.message.contains("hunter22"),
            "scrubbed from the failure too"
        );
        // A replay serves the recorded answers.
        let replay = env.replay_env();
        let host = replay.reads.unwrap();
        assert_eq!(
            host.list(
                Side::Kcp,
                &Resource::core("v1", "configmaps"),
                Some("ns"),
                None
            )
            .unwrap(),
            vec![cm("a")]
        );
    }

    #[test]
    fn secret_data_is_redacted_everywhere() {
        let rt = runtime();
        let naming = rt.load_builtin("naming").unwrap();
        let store = CaptureStore::new(CaptureLimits::default());
        // "hunter22" and "s3cr3t-token" in base64.
        let secret = object_json(&json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "creds", "annotations": {
                LAST_APPLIED: "{\"data\":{\"password\":\"aHVudGVyMjI=\"}}"}},
            "data": {"password": "aHVudGVyMjI=", "token": "czNjcjN0LXRva2Vu"},
            "stringData": {"extra": "plain-secret"},
            "type": "Opaque",
        }));
        let other = object_json(&json!({
            "apiVersion": "example.com/v1", "kind": "CronTab",
            "metadata": {"name": "x"}, "spec": {"copied": "the password is hunter22"},
        }));
        let values = object_json(&json!({
            "Object": {"apiVersion": "v1", "kind": "SecretList", "items": [
                {"metadata": {"name": "a"}, "data": {"k": "aHVudGVyMjI="}}]},
        }));
        let c = ctx();
        let f = PluginFailure::new(
            "p",
            "sha256:x",
            FailureKind::PluginError(syncweave_runtime::PluginErrorKind::InvalidInput),
            "bad password hunter22 in data.password",
        );
        let config = r#"{"auth":{"apiToken":"tok-123456","user":"bob"},"rules":[]}"#;
        store.record(&FailedCall {
            plugin: &naming,
            args: CallArgs::Mutate {
                ctx: &c,
                config,
                object: &secret,
                other: Some(&other),
            },
            failure: &f,
            env: None,
        });
        store.record(&FailedCall {
            plugin: &naming,
            args: CallArgs::Render {
                ctx: &c,
                config: "null",
                template: "{{ .Object }}",
                values: &values,
            },
            failure: &crash(),
            env: None,
        });
        for s in store.list().captures {
            let doc = serde_json::to_string(&store.get(&s.id).unwrap()).unwrap();
            for needle in [
                "aHVudGVyMjI",
                "hunter22",
                "czNjcjN0LXRva2Vu",
                "s3cr3t-token",
                "plain-secret",
                "tok-123456",
            ] {
                assert!(!doc.contains(needle), "{needle} leaked: {doc}");
            }
        }
        let list = store.list();
        let mutate = list
            .captures
            .iter()
            .find(|s| s.function == "mutate")
            .unwrap();
        let c = store.get(&mutate.id).unwrap();
        let call = c.call.as_ref().unwrap();
        let obj = call.object.as_ref().unwrap();
        assert_eq!(obj["data"]["password"], REDACTED_BASE64);
        assert_eq!(obj["data"]["token"], REDACTED_BASE64);
        assert_eq!(obj["stringData"]["extra"], REDACTED);
        assert_eq!(obj["type"], "Opaque", "the rest is kept");
        assert_eq!(obj["metadata"]["annotations"][LAST_APPLIED], REDACTED);
        assert_eq!(call.config["auth"]["user"], "bob");
        assert_eq!(call.config["auth"]["apiToken"], REDACTED);
        assert_eq!(
            call.other.as_ref().unwrap()["spec"]["copied"],
            "the password is <redacted>"
        );
        assert_eq!(
            c.failure.message,
            "bad password <redacted> in data.password"
        );
        for p in [
            "call.object.data.password",
            "call.object.data.token",
            "call.object.stringData.extra",
            "call.config.auth.apiToken",
            "call.other.spec.copied",
            "failure.message",
        ] {
            assert!(c.redacted.iter().any(|r| r == p), "{p} in {:?}", c.redacted);
        }
        let render = list
            .captures
            .iter()
            .find(|s| s.function == "render")
            .unwrap();
        let c = store.get(&render.id).unwrap();
        assert_eq!(
            c.call.unwrap().values.unwrap()["Object"]["items"][0]["data"]["k"],
            REDACTED_BASE64
        );
        // Data of anything but a core Secret stays.
        let mut v = json!({"apiVersion": "example.com/v1", "kind": "Secret", "data": {"k": "v"}});
        let mut r = Redactions::default();
        redact(&mut v, "x", &mut r);
        assert_eq!(v["data"]["k"], "v");
        assert!(r.paths.is_empty());
    }

    #[test]
    fn credential_keys_and_base64() {
        for k in [
            "password",
            "apiToken",
            "client_secret",
            "AWS_ACCESS_KEY",
            "tls-private-key",
        ] {
            assert!(is_credential_key(k), "{k}");
        }
        for k in ["path", "name", "tokenizer", "secretName"] {
            assert!(!is_credential_key(k), "{k}");
        }
        assert_eq!(decode_base64("aHVudGVyMjI=").unwrap(), b"hunter22");
        assert_eq!(decode_base64("czNjcjN0LXRva2Vu").unwrap(), b"s3cr3t-token");
        assert_eq!(decode_base64(REDACTED_BASE64).unwrap(), b"<redacted>");
        assert!(decode_base64("not base64!").is_none());
    }
}
