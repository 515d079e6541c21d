//! Plain Rust versions of the 0.2 contract's types (`wit/v0.2/plugin.wit`, interface
//! `types`) that differ from 0.1: a context with values, fixtures with reads and
//! values, plugin info with read declarations.
use serde_json::Value;

use super::reads::{Resource, Side};
use crate::Direction;

/// Where a call comes from, and the context values earlier steps of its chain set.
/// Plugins get nothing else from the host but their reads: no clock, no randomness.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Context {
    /// Logical cluster name of the consumer workspace (e.g. "2x8fkdtr3b1z").
    pub cluster_name: String,
    /// Workspace path (e.g. "root:org:team"), when the host knows it.
    pub cluster_path: Option<String>,
    pub direction: Direction,
    /// Name of the PublishedResource or InitTarget this call is made for.
    pub owner: String,
    /// Values set by earlier steps of the same chain, in the order they were set:
    /// (key, JSON text). Empty for the first step and outside chains.
    pub values: Vec<(String, String)>,
}

impl Context {
    /// The context in which a plugin's [`Fixture`]s are run (see
    /// [`crate::Context::fixture`]), with no values.
    pub fn fixture() -> Self {
        crate::Context::fixture().into()
    }

    /// The context value `key`, parsed; `None` when no earlier step set it (or, which
    /// the host never sends, when it is not JSON).
    pub fn value(&self, key: &str) -> Option<Value> {
        self.value_json(key)
            .and_then(|text| serde_json::from_str(text).ok())
    }

    /// The context value `key` as the JSON text the host passed.
    pub fn value_json(&self, key: &str) -> Option<&str> {
        self.values
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The context value `key` deserialised into `T`; the error names the key and
    /// becomes [`PluginError::InvalidInput`](crate::PluginError::InvalidInput).
    pub fn value_as<T: serde::de::DeserializeOwned>(
        &self,
        key: &str,
    ) -> Result<Option<T>, crate::PluginError> {
        self.value_json(key)
            .map(|text| {
                serde_json::from_str(text).map_err(|e| {
                    crate::PluginError::InvalidInput(format!("context value {key:?}: {e}"))
                })
            })
            .transpose()
    }

    /// The same context with one more value (for tests; the host sets them in a chain).
    pub fn with_value(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.values.push((key.into(), value.into().to_string()));
        self
    }
}

/// A 0.1 context has no values.
impl From<crate::Context> for Context {
    fn from(c: crate::Context) -> Self {
        Context {
            cluster_name: c.cluster_name,
            cluster_path: c.cluster_path,
            direction: c.direction,
            owner: c.owner,
            values: Vec::new(),
        }
    }
}

/// A kind of object the plugin reads, declared in [`PluginInfo::reads`]. The host
/// refuses any read that is not declared (and any the operator does not allow).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadDeclaration {
    pub side: Side,
    pub resource: Resource,
    /// Why the plugin reads it, shown by `syncweave plugin inspect`.
    pub purpose: String,
}

impl ReadDeclaration {
    pub fn new(side: Side, resource: Resource, purpose: impl Into<String>) -> Self {
        ReadDeclaration {
            side,
            resource,
            purpose: purpose.into(),
        }
    }
}

/// The objects of one kind that a [`Fixture`]'s reads see.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadFixture {
    pub side: Side,
    pub resource: Resource,
    /// The objects; each needs `metadata.name` (and `metadata.namespace` when
    /// namespaced): reads find them by those and by `metadata.labels`.
    pub objects: Vec<Value>,
}

/// One worked example shipped with a plugin: [`crate::Fixture`] plus what its reads see
/// and the context values of earlier steps. The host runs these as a self-test.
#[derive(Debug, Clone, PartialEq)]
pub struct Fixture {
    pub name: String,
    /// Plugin config.
    pub config: Value,
    /// The object (mutator, namer), the CRD (projector) or the values (renderer).
    pub input: Value,
    /// Expected output when deterministic (see [`crate::Fixture::expected`]).
    pub expected: Option<Value>,
    /// What the example's reads see.
    pub reads: Vec<ReadFixture>,
    /// Context values from earlier steps: (key, value).
    pub values: Vec<(String, Value)>,
}

impl Fixture {
    pub fn new(name: impl Into<String>, config: Value, input: Value) -> Self {
        crate::Fixture::new(name, config, input).into()
    }

    /// Sets the expected output.
    pub fn expect(mut self, expected: Value) -> Self {
        self.expected = Some(expected);
        self
    }

    /// Adds objects the example's reads of `resource` on `side` see.
    pub fn objects(
        mut self,
        side: Side,
        resource: Resource,
        objects: impl IntoIterator<Item = Value>,
    ) -> Self {
        self.reads.push(ReadFixture {
            side,
            resource,
            objects: objects.into_iter().collect(),
        });
        self
    }

    /// Adds a context value from an earlier step.
    pub fn value(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.values.push((key.into(), value.into()));
        self
    }
}

impl From<crate::Fixture> for Fixture {
    fn from(f: crate::Fixture) -> Self {
        Fixture {
            name: f.name,
            config: f.config,
            input: f.input,
            expected: f.expected,
            reads: Vec::new(),
            values: Vec::new(),
        }
    }
}

/// What a plugin says about itself: [`crate::PluginInfo`] plus the reads it declares.
#[derive(Debug, Clone, PartialEq)]
pub struct PluginInfo {
    pub name: String,
    pub version: String,
    pub description: String,
    /// JSON Schema of the config, if the plugin publishes one.
    pub config_schema: Option<Value>,
    pub examples: Vec<Fixture>,
    /// Every kind of object the plugin may read.
    pub reads: Vec<ReadDeclaration>,
}

impl PluginInfo {
    pub fn new(
        name: impl Into<String>,
        version: impl Into<String>,
        description: impl Into<String>,
    ) -> Self {
        crate::PluginInfo::new(name, version, description).into()
    }

    /// Publishes a JSON Schema for the config.
    pub fn config_schema(mut self, schema: Value) -> Self {
        self.config_schema = Some(schema);
        self
    }

    /// Adds a worked example.
    pub fn example(mut self, fixture: impl Into<Fixture>) -> Self {
        self.examples.push(fixture.into());
        self
    }

    /// Declares a kind of object the plugin reads.
    pub fn reads(mut self, declaration: ReadDeclaration) -> Self {
        self.reads.push(declaration);
        self
    }
}

/// `syncweave_plugin::plugin_info!("…").into()` gives a 0.2 info named after the crate.
impl From<crate::PluginInfo> for PluginInfo {
    fn from(i: crate::PluginInfo) -> Self {
        PluginInfo {
            name: i.name,
            version: i.version,
            description: i.description,
            config_schema: i.config_schema,
            examples: i.examples.into_iter().map(Fixture::from).collect(),
            reads: Vec::new(),
        }
    }
}
