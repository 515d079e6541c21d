//! Run a 0.2 plugin natively, with read fixtures and context values, through the same
//! JSON-string adapters its component exports use, and assert on its output, its report
//! and the reads it made.
//!
//! Reads are answered like the host answers them: only reads the plugin declares in
//! `info().reads` (others fail with `not-allowed`, naming the declarations), at most 64
//! per call, `get` by namespace and name, `list` by namespace and label selector (the
//! Kubernetes syntax the host accepts: `key`, `!key`, `key=value`, `key==value`,
//! `key!=value`, `key in (a,b)`, `key notin (a,b)`, `key>n`, `key<n`). The report is
//! checked with the host's own rules: a report the host would refuse fails the call with
//! [`PluginError::Internal`] saying why.
//!
//! ```
//! # use syncweave_plugin::v2::{self, Context, Namer, PluginInfo, ReadDeclaration, Report, Resource, Side};
//! # use syncweave_plugin::{ObjectName, PluginError, Value, json};
//! # struct ByTeam;
//! # impl Namer for ByTeam {
//! #     fn info() -> PluginInfo {
//! #         PluginInfo::new("by-team", "0", "").reads(ReadDeclaration::new(Side::Kcp, Resource::core("v1", "namespaces"), "team"))
//! #     }
//! #     fn name(ctx: &Context, _: &Value, object: &Value, report: &mut Report) -> Result<ObjectName, PluginError> {
//! #         let ns = v2::reads::get(Side::Kcp, &Resource::core("v1", "namespaces"), None, object["metadata"]["namespace"].as_str().unwrap_or(""))?;
//! #         let team = ns.map(|n| n.get_string("metadata.labels.team")).unwrap_or_default();
//! #         report.normal("Named", format!("team {team}"));
//! #         Ok(ObjectName::cluster_scoped(format!("{team}-{}", ctx.value("suffix").and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default())))
//! #     }
//! # }
//! use syncweave_plugin::testing::v2::{self as t, Env};
//!
//! let env = Env::new()
//!     .objects(Side::Kcp, Resource::core("v1", "namespaces"), [json!({"metadata": {"name": "ns", "labels": {"team": "a"}}})])
//!     .value("suffix", "x");
//! let out = t::name::<ByTeam>(&env, &json!({}), &json!({"metadata": {"name": "o", "namespace": "ns"}})).unwrap();
//! assert_eq!(out.output, ObjectName::cluster_scoped("a-x"));
//! assert_eq!(out.report.results()[0].message, "team a");
//! assert_eq!(out.reads, ["get kcp namespaces (v1) ns"]);
//! ```
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use crate::rules::{ReportBounds, ReportText, Selector, check_report};
use crate::v2::reads::{self, Harness, ReadError, Resource, Side};
use crate::v2::{
    self, Context, Fixture, ReadDeclaration, ReadFixture, Report, Severity, Status,
};
use crate::{ObjectName, PluginError, Value};

/// The host's default number of reads per call.
const MAX_READS: usize = 64;

/// What a call sees: its context (with the context values of earlier steps) and the
/// objects its reads find.
#[derive(Debug, Clone)]
pub struct Env {
    ctx: Context,
    reads: Vec<ReadFixture>,
}

impl Default for Env {
    fn default() -> Self {
        Env::new()
    }
}

impl Env {
    /// [`Context::fixture`], no context values, nothing to read.
    pub fn new() -> Env {
        Env {
            ctx: Context::fixture(),
            reads: Vec::new(),
        }
    }

    /// The environment a worked example runs in (as the host's self-test runs it).
    pub fn for_example(fixture: &Fixture) -> Env {
        let mut env = Env::new();
        env.reads = fixture.reads.clone();
        for (k, v) in &fixture.values {
            env = env.value(k.clone(), v.clone());
        }
        env
    }

    /// Use `ctx` (its values included) as the call's context.
    pub fn context(mut self, ctx: Context) -> Env {
        self.ctx = ctx;
        self
    }

    /// Add a context value, as an earlier step of the chain would have set it.
    pub fn value(mut self, key: impl Into<String>, value: impl Into<Value>) -> Env {
        self.ctx = self.ctx.with_value(key, value);
        self
    }

    /// Add objects that reads of `resource` on `side` find. Each needs
    /// `metadata.name` (and `metadata.namespace` when namespaced).
    pub fn objects(
        mut self,
        side: Side,
        resource: Resource,
        objects: impl IntoIterator<Item = Value>,
    ) -> Env {
        self.reads.push(ReadFixture {
            side,
            resource,
            objects: objects.into_iter().collect(),
        });
        self
    }

    /// The call's context.
    pub fn ctx(&self) -> &Context {
        &self.ctx
    }
}

/// What a call returned: its output, its report, and the reads it made, in order
/// (`get kcp namespaces (v1) ns`, `list service configmaps (v1) in db matching "app=db"`).
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome<T> {
    pub output: T,
    pub report: Report,
    pub reads: Vec<String>,
}

struct FixtureObject {
    side: Side,
    resource: Resource,
    namespace: Option<String>,
    name: String,
    labels: HashMap<String, String>,
    json: String,
}

/// Answers reads from an [`Env`]'s objects, checking them as the host does.
struct FixtureHost {
    objects: Vec<FixtureObject>,
    declarations: Vec<ReadDeclaration>,
    log: RefCell<Vec<String>>,
}

impl FixtureHost {
    fn new(fixtures: &[ReadFixture], declarations: Vec<ReadDeclaration>) -> FixtureHost {
        let mut objects = Vec::new();
        for (i, f) in fixtures.iter().enumerate() {
            for (j, o) in f.objects.iter().enumerate() {
                let meta = &o["metadata"];
                let name = meta["name"].as_str().unwrap_or_else(|| {
                    panic!(
                        "read fixture {i} ({} {}), object {j}: no metadata.name; reads find \
                         objects by it",
                        f.side, f.resource
                    )
                });
                let labels = meta["labels"]
                    .as_object()
                    .map(|m| {
                        m.iter()
                            .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                            .collect()
                    })
                    .unwrap_or_default();
                objects.push(FixtureObject {
                    side: f.side,
                    resource: f.resource.clone(),
                    namespace: meta["namespace"].as_str().map(str::to_string),
                    name: name.to_string(),
                    labels,
                    json: o.to_string(),
                });
            }
        }
        FixtureHost {
            objects,
            declarations,
            log: RefCell::default(),
        }
    }

    /// Count, log and check a read; the error is what the host would answer.
    fn admit(&self, side: Side, resource: &Resource, what: String) -> Result<(), ReadError> {
        let n = {
            let mut log = self.log.borrow_mut();
            log.push(what.clone());
            log.len()
        };
        if n > MAX_READS {
            return Err(ReadError::NotAllowed(format!(
                "this call has already made {MAX_READS} reads, the limit per call \
                 (EnvLimits::max_reads); read less, e.g. one list with a label selector \
                 instead of many gets"
            )));
        }
        if self
            .declarations
            .iter()
            .any(|d| d.side == side && &d.resource == resource)
        {
            return Ok(());
        }
        let declared = if self.declarations.is_empty() {
            "describe() declares no reads".to_string()
        } else {
            format!(
                "describe() declares reads of {}",
                self.declarations
                    .iter()
                    .map(|d| format!("{} {}", d.side, d.resource))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        Err(ReadError::NotAllowed(format!(
            "the plugin may not {what}: {declared}; add {side} {resource} to plugin-info.reads \
             to read it (the operator must allow it too)"
        )))
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

impl Harness for FixtureHost {
    fn get(
        &self,
        side: Side,
        resource: &Resource,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<String>, ReadError> {
        let ns = namespace.map(|n| format!("{n}/")).unwrap_or_default();
        self.admit(side, resource, format!("get {side} {resource} {ns}{name}"))?;
        if name.is_empty() {
            return Err(ReadError::Invalid(
                "get needs a name; use list to read several objects".into(),
            ));
        }
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
        let mut what = format!("list {side} {resource}");
        if let Some(ns) = namespace {
            what.push_str(&format!(" in {ns}"));
        }
        if let Some(s) = label_selector {
            what.push_str(&format!(" matching {s:?}"));
        }
        self.admit(side, resource, what)?;
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

/// Run `call` with `env`'s reads answered, then check its report as the host would.
fn run<T>(
    env: &Env,
    declarations: Vec<ReadDeclaration>,
    call: impl FnOnce() -> Result<(T, crate::__private::v2::RawReport), PluginError>,
) -> Result<Outcome<T>, PluginError> {
    let host = Rc::new(FixtureHost::new(&env.reads, declarations));
    let (output, raw) = {
        let _guard = reads::set_harness(host.clone());
        call()?
    };
    let text = ReportText {
        results: raw
            .results
            .iter()
            .map(|(_, r, m)| (r.as_str(), m.as_str()))
            .collect(),
        conditions: raw
            .conditions
            .iter()
            .map(|(t, s, r, m)| (t.as_str(), s.as_str(), r.as_str(), m.as_str()))
            .collect(),
        set_context: raw
            .set_context
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect(),
    };
    let incoming = |k: &str| env.ctx.values.iter().any(|(have, _)| have == k);
    let is_json = |v: &str| {
        serde_json::from_str::<serde::de::IgnoredAny>(v)
            .map(|_| ())
            .map_err(|e| e.to_string())
    };
    let bounds = ReportBounds {
        max_bytes: 64 << 10,
        max_results: 32,
        max_conditions: 16,
        max_context_keys: 32,
    };
    check_report(&text, &incoming, &is_json, &bounds).map_err(|m| {
        PluginError::Internal(format!(
            "bad output: the host would refuse this report: {m}"
        ))
    })?;
    let mut report = Report::default();
    for (warning, reason, message) in raw.results {
        let severity = if warning {
            Severity::Warning
        } else {
            Severity::Normal
        };
        report.result(severity, reason, message);
    }
    for (t, s, r, m) in raw.conditions {
        let status = match s.as_str() {
            "True" => Status::True,
            "False" => Status::False,
            _ => Status::Unknown,
        };
        report.condition(t, status, r, m);
    }
    for (k, v) in raw.set_context {
        let value: Value = serde_json::from_str(&v).expect("checked to be JSON just above");
        report.set_context(k, value);
    }
    let reads = host.log.borrow().clone();
    Ok(Outcome {
        output,
        report,
        reads,
    })
}

fn parse(json: &str) -> Value {
    serde_json::from_str(json).expect("the adapter serialises valid JSON")
}

/// Calls the plugin's `mutate` export in `env`, as the host would.
pub fn mutate<P: v2::Mutator>(
    env: &Env,
    config: &Value,
    object: &Value,
    other: Option<&Value>,
) -> Result<Outcome<Value>, PluginError> {
    let other = other.map(Value::to_string);
    run(env, P::info().reads, || {
        crate::__private::v2::mutate::<P>(
            &env.ctx,
            &config.to_string(),
            &object.to_string(),
            other.as_deref(),
        )
        .map(|(o, r)| (parse(&o), r))
    })
}

/// Calls the plugin's `name` export in `env`, as the host would.
pub fn name<P: v2::Namer>(
    env: &Env,
    config: &Value,
    object: &Value,
) -> Result<Outcome<ObjectName>, PluginError> {
    run(env, P::info().reads, || {
        crate::__private::v2::name::<P>(&env.ctx, &config.to_string(), &object.to_string())
    })
}

/// Calls the plugin's `project` export, as the host would (projections cannot read).
pub fn project<P: v2::Projector>(config: &Value, crd: &Value) -> Result<Value, PluginError> {
    let out = crate::__private::v2::project::<P>(&config.to_string(), &crd.to_string())?;
    Ok(parse(&out))
}

/// Calls the plugin's `render` export in `env`, as the host would.
pub fn render<P: v2::Renderer>(
    env: &Env,
    config: &Value,
    template: &str,
    values: &Value,
) -> Result<Outcome<Vec<Value>>, PluginError> {
    run(env, P::info().reads, || {
        crate::__private::v2::render::<P>(&env.ctx, &config.to_string(), template, &values.to_string())
            .map(|(docs, r)| (docs.iter().map(|d| parse(d)).collect(), r))
    })
}

fn check(
    examples: &[Fixture],
    validate: fn(&Value) -> Result<(), String>,
    run: impl Fn(&Fixture) -> Result<Value, PluginError>,
) -> Result<usize, String> {
    if examples.is_empty() {
        return Err("the plugin publishes no examples".into());
    }
    for fixture in examples {
        validate(&fixture.config).map_err(|err| {
            format!(
                "example {:?}: config rejected by validate_config: {err}",
                fixture.name
            )
        })?;
        let actual =
            run(fixture).map_err(|err| format!("example {:?} failed: {err}", fixture.name))?;
        if let Some(expected) = &fixture.expected
            && &actual != expected
        {
            return Err(format!(
                "example {:?}: expected {expected}, got {actual}",
                fixture.name
            ));
        }
    }
    Ok(examples.len())
}

/// Runs every example of a 0.2 mutator in its own reads and values (as the host's
/// self-test does) and compares the output; returns how many ran.
pub fn check_mutator_examples<P: v2::Mutator>() -> Result<usize, String> {
    check(&P::info().examples, P::validate_config, |f| {
        mutate::<P>(&Env::for_example(f), &f.config, &f.input, None).map(|o| o.output)
    })
}

/// Runs every example of a 0.2 namer; expected outputs are `{"name": …, "namespace": …}`.
pub fn check_namer_examples<P: v2::Namer>() -> Result<usize, String> {
    check(&P::info().examples, P::validate_config, |f| {
        name::<P>(&Env::for_example(f), &f.config, &f.input).map(|o| o.output.to_json())
    })
}

/// Runs every example of a 0.2 projector and compares the projected CRDs.
pub fn check_projector_examples<P: v2::Projector>() -> Result<usize, String> {
    check(&P::info().examples, P::validate_config, |f| {
        project::<P>(&f.config, &f.input)
    })
}

/// Runs every example of a 0.2 renderer with an empty template (as the host's
/// self-test does: a renderer with examples takes its template from its config) and
/// compares the list of documents.
pub fn check_renderer_examples<P: v2::Renderer>() -> Result<usize, String> {
    check(&P::info().examples, P::validate_config, |f| {
        render::<P>(&Env::for_example(f), &f.config, "", &f.input)
            .map(|o| Value::Array(o.output))
    })
}
