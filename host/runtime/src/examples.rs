//! The worked examples a plugin ships in `describe()`, run as a self-test:
//! one implementation for `syncweave plugin test --examples` and for the
//! agent's gate, which refuses a digest whose examples fail.
//!
//! Each example's input goes through the plugin's role function in the
//! fixed context docs/writing-plugins.md promises (cluster
//! `fixture-cluster`, path `root:fixture`, kcp-to-service, owner `fixture`,
//! no counterpart object):
//!
//! | world | call | output compared with `expected` |
//! |---|---|---|
//! | mutator | `mutate(ctx, config, input, none)` | the object |
//! | namer | `name(ctx, config, input)` | `{"name": …, "namespace": …}` (no `namespace` when cluster-scoped) |
//! | projector | `project(config, input)` | the CRD |
//! | renderer | `render(ctx, config, "", input)` | the array of documents |
//!
//! A 0.2 example's `reads` are served to the plugin's reads by a
//! [`FixtureReads`] (get by namespace and name; list by namespace and label
//! selector, in Kubernetes syntax: see [`crate::rules::Selector`]), and its
//! `values` are the context values of the call. Its report is checked like
//! any call's (a bad report fails the example) but not compared.
//!
//! Renderer examples pass an empty template: a renderer that ships
//! examples takes its template from its config then (the built-in one has
//! `config.template`). Outputs are compared as JSON values: key order does
//! not matter and numbers compare by value (`1` equals `1.0`). An example
//! without `expected` only has to run without error.

use std::fmt;

use std::sync::Arc;

use serde_json::Value;

use crate::env::{CallEnv, FixtureReads};
use crate::failure::PluginFailure;
use crate::plugin::{CallContext, Direction, Plugin};
use crate::world::World;

/// How one worked example fared in [`Plugin::run_examples`].
#[derive(Debug, Clone)]
pub struct ExampleOutcome {
    pub name: String,
    pub verdict: ExampleVerdict,
}

#[derive(Debug, Clone)]
pub enum ExampleVerdict {
    Passed,
    Failed(ExampleFailure),
}

impl ExampleVerdict {
    pub fn passed(&self) -> bool {
        matches!(self, ExampleVerdict::Passed)
    }
}

/// Why an example failed.
#[derive(Debug, Clone)]
pub enum ExampleFailure {
    /// The call itself failed: a trap, a timeout, the memory limit, the
    /// plugin's own error, or output the host refuses.
    Call(PluginFailure),
    /// The output is valid but not what the example expects.
    Mismatch(Difference),
    /// The output (for a renderer: a document) is not JSON.
    OutputNotJson(String),
    /// The example's `expected` is not JSON: the example itself is broken.
    ExpectedNotJson(String),
    /// An object of the example's `reads` is not a Kubernetes object in
    /// JSON with a `metadata.name`: the example itself is broken.
    BadReadFixture(String),
}

/// Where two JSON documents first differ.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    /// JSON pointer of the first difference (`""` for the whole document).
    pub path: String,
    /// What the example expects there (JSON, shortened), or `(missing)`.
    pub expected: String,
    /// What the plugin returned there (JSON, shortened), or `(missing)`.
    pub got: String,
}

/// Longest value shown in a difference: enough to see what is wrong, short
/// enough for a status condition and an Event.
const SHOWN_MAX: usize = 200;

fn shown(v: Option<&Value>) -> String {
    let Some(v) = v else {
        return "(missing)".into();
    };
    let s = v.to_string();
    if s.len() <= SHOWN_MAX {
        return s;
    }
    let mut end = SHOWN_MAX;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes)", &s[..end], s.len())
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = if self.path.is_empty() {
            "the top level"
        } else {
            &self.path
        };
        write!(
            f,
            "output differs at {at}: expected {}, got {}",
            self.expected, self.got
        )
    }
}

impl fmt::Display for ExampleFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExampleFailure::Call(e) => write!(f, "the call failed: {e}"),
            ExampleFailure::Mismatch(d) => d.fmt(f),
            ExampleFailure::OutputNotJson(e) => write!(f, "the output is not JSON: {e}"),
            ExampleFailure::ExpectedNotJson(e) => write!(
                f,
                "the example's expected output is not JSON ({e}); fix the example in describe()"
            ),
            ExampleFailure::BadReadFixture(e) => {
                write!(f, "the example's reads are unusable: {e} in describe()")
            }
        }
    }
}

/// Numbers are equal when their values are: integers exactly, anything
/// with a fraction or exponent as f64.
fn numbers_equal(a: &serde_json::Number, b: &serde_json::Number) -> bool {
    let int = |n: &serde_json::Number| {
        n.as_i64()
            .map(i128::from)
            .or_else(|| n.as_u64().map(i128::from))
    };
    match (int(a), int(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a.as_f64() == b.as_f64(),
    }
}

/// The first place where `got` differs from `want` as a JSON value (key
/// order ignored, numbers by value), or `None` when they are equal.
pub fn json_difference(got: &Value, want: &Value) -> Option<Difference> {
    let mut path = String::new();
    diff_at(&mut path, Some(got), Some(want))
}

fn escape_pointer(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

fn diff_at(path: &mut String, got: Option<&Value>, want: Option<&Value>) -> Option<Difference> {
    let differ = |path: &str| {
        Some(Difference {
            path: path.to_string(),
            expected: shown(want),
            got: shown(got),
        })
    };
    match (got, want) {
        (Some(Value::Object(g)), Some(Value::Object(w))) => {
            // Expected keys in their order first, then unexpected ones.
            let keys = w.keys().chain(g.keys().filter(|k| !w.contains_key(*k)));
            for k in keys {
                let len = path.len();
                path.push('/');
                path.push_str(&escape_pointer(k));
                let d = diff_at(path, g.get(k), w.get(k));
                path.truncate(len);
                if d.is_some() {
                    return d;
                }
            }
            None
        }
        (Some(Value::Array(g)), Some(Value::Array(w))) => {
            for i in 0..g.len().max(w.len()) {
                let len = path.len();
                path.push('/');
                path.push_str(&i.to_string());
                let d = diff_at(path, g.get(i), w.get(i));
                path.truncate(len);
                if d.is_some() {
                    return d;
                }
            }
            None
        }
        (Some(Value::Number(g)), Some(Value::Number(w))) if numbers_equal(g, w) => None,
        (Some(g), Some(w)) if g == w => None,
        _ => differ(path),
    }
}

/// Check `got` (JSON text) against an example's `expected` (JSON text).
fn compare(got: &str, expected: &str) -> ExampleVerdict {
    let want: Value = match serde_json::from_str(expected) {
        Ok(v) => v,
        Err(e) => return ExampleVerdict::Failed(ExampleFailure::ExpectedNotJson(e.to_string())),
    };
    let got: Value = match serde_json::from_str(got) {
        Ok(v) => v,
        Err(e) => return ExampleVerdict::Failed(ExampleFailure::OutputNotJson(e.to_string())),
    };
    match json_difference(&got, &want) {
        None => ExampleVerdict::Passed,
        Some(d) => ExampleVerdict::Failed(ExampleFailure::Mismatch(d)),
    }
}

/// The fixed context examples run in (docs/writing-plugins.md).
pub fn example_context() -> CallContext {
    CallContext {
        cluster_name: "fixture-cluster".into(),
        cluster_path: Some("root:fixture".into()),
        direction: Direction::KcpToService,
        owner: "fixture".into(),
    }
}

impl Plugin {
    /// Run the worked examples from `describe()` under this plugin's limits
    /// (see the module docs for the call per world and the comparison).
    /// Fails only when `describe()` itself does.
    pub fn run_examples(&self) -> Result<Vec<ExampleOutcome>, PluginFailure> {
        let info = self.describe()?;
        let ctx = example_context();
        let mut outcomes = Vec::with_capacity(info.examples.len());
        for ex in info.examples {
            let reads = match FixtureReads::new(&ex.reads) {
                Ok(r) => Arc::new(r),
                Err(m) => {
                    outcomes.push(ExampleOutcome {
                        name: ex.name,
                        verdict: ExampleVerdict::Failed(ExampleFailure::BadReadFixture(m)),
                    });
                    continue;
                }
            };
            let env = CallEnv::with_reads(reads).values(&ex.values);
            let output: Result<String, PluginFailure> = match self.world() {
                World::Mutator => self
                    .mutate_with(&ctx, &env, &ex.config, &ex.input, None)
                    .map(|m| m.object),
                World::Namer => self
                    .name_object_with(&ctx, &env, &ex.config, &ex.input)
                    .map(|n| {
                        // Cluster-scoped names are written without a namespace key.
                        let mut v = serde_json::json!({"name": n.name.name});
                        if let Some(ns) = n.name.namespace {
                            v["namespace"] = ns.into();
                        }
                        v.to_string()
                    }),
                World::Projector => self.project(&ex.config, &ex.input),
                World::Renderer => self
                    .render_with(&ctx, &env, &ex.config, "", &ex.input)
                    .map(|r| format!("[{}]", r.documents.join(","))),
            };
            let verdict = match (output, &ex.expected) {
                (Err(e), _) => ExampleVerdict::Failed(ExampleFailure::Call(e)),
                (Ok(_), None) => ExampleVerdict::Passed,
                (Ok(got), Some(want)) => compare(&got, want),
            };
            outcomes.push(ExampleOutcome {
                name: ex.name,
                verdict,
            });
        }
        Ok(outcomes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn diff(got: Value, want: Value) -> Option<String> {
        json_difference(&got, &want).map(|d| d.to_string())
    }

    #[test]
    fn equal_values_match_whatever_the_key_order() {
        assert_eq!(
            diff(
                json!({"a": 1, "b": {"c": [1, 2], "d": null}}),
                serde_json::from_str(r#"{"b": {"d": null, "c": [1, 2]}, "a": 1}"#).unwrap()
            ),
            None
        );
    }

    #[test]
    fn numbers_compare_by_value() {
        assert_eq!(diff(json!({"n": 1}), json!({"n": 1.0})), None);
        assert_eq!(diff(json!(1e3), json!(1000)), None);
        assert_eq!(diff(json!(-5), json!(-5.0)), None);
        assert_eq!(diff(json!(u64::MAX), json!(u64::MAX)), None);
        // Large integers are compared exactly, not through f64.
        assert!(diff(json!(u64::MAX), json!(u64::MAX - 1)).is_some());
        assert!(diff(json!(i64::MIN), json!(u64::MAX)).is_some());
        assert_eq!(
            diff(json!({"n": 1.5}), json!({"n": 1})).unwrap(),
            "output differs at /n: expected 1, got 1.5"
        );
        // A number is not its string.
        assert!(diff(json!("1"), json!(1)).is_some());
    }

    #[test]
    fn the_first_difference_is_named_by_its_json_pointer() {
        assert_eq!(
            diff(
                json!({"metadata": {"labels": {"stamp": "v3"}}}),
                json!({"metadata": {"labels": {"stamp": "v2"}}})
            )
            .unwrap(),
            "output differs at /metadata/labels/stamp: expected \"v2\", got \"v3\""
        );
        assert_eq!(
            diff(json!({"a": 1}), json!({"a": 1, "b": true})).unwrap(),
            "output differs at /b: expected true, got (missing)"
        );
        assert_eq!(
            diff(json!({"a": 1, "x/y~": 2}), json!({"a": 1})).unwrap(),
            "output differs at /x~1y~0: expected (missing), got 2"
        );
        assert_eq!(
            diff(json!([1, 2]), json!([1, 2, 3])).unwrap(),
            "output differs at /2: expected 3, got (missing)"
        );
        assert_eq!(
            diff(json!([]), json!({})).unwrap(),
            "output differs at the top level: expected {}, got []"
        );
    }

    #[test]
    fn long_values_are_shortened() {
        let long = "x".repeat(1000);
        let d = json_difference(&json!({"a": long}), &json!({"a": "y"})).unwrap();
        assert!(d.got.len() < 260, "{}", d.got);
        assert!(d.got.ends_with("(1002 bytes)"), "{}", d.got);
        // Never cut inside a character.
        let wide = "é".repeat(300);
        let d = json_difference(&json!(wide), &json!(1)).unwrap();
        assert!(d.got.contains('…'));
    }

    #[test]
    fn comparing_texts() {
        assert!(compare(r#"{"a":1}"#, r#"{"a":1.0}"#).passed());
        match compare("{}", "not json") {
            ExampleVerdict::Failed(e @ ExampleFailure::ExpectedNotJson(_)) => {
                assert!(e.to_string().contains("fix the example"), "{e}")
            }
            v => panic!("{v:?}"),
        }
        assert!(matches!(
            compare("nope", "{}"),
            ExampleVerdict::Failed(ExampleFailure::OutputNotJson(_))
        ));
    }
}
