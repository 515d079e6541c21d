//! Plain Rust versions of the contract's types (`wit/plugin.wit`, interface `types`).
use serde_json::Value;

/// Which way an object is travelling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// From a consumer's kcp workspace down to the service cluster (spec).
    KcpToService,
    /// From the service cluster back up to kcp (status, related objects).
    ServiceToKcp,
}

/// Where a call comes from. Plugins get nothing else from the host: no clock, no
/// randomness, no I/O.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Context {
    /// Logical cluster name of the consumer workspace (e.g. "2x8fkdtr3b1z").
    pub cluster_name: String,
    /// Workspace path (e.g. "root:org:team"), when the host knows it.
    pub cluster_path: Option<String>,
    pub direction: Direction,
    /// Name of the PublishedResource or InitTarget this call is made for.
    pub owner: String,
}

impl Context {
    /// The context in which a plugin's [`Fixture`]s are run (by `syncweave plugin test`,
    /// the host's self-test and [`crate::testing`]): cluster "fixture-cluster", path
    /// "root:fixture", direction kcp-to-service, owner "fixture".
    pub fn fixture() -> Self {
        Context {
            cluster_name: "fixture-cluster".into(),
            cluster_path: Some("root:fixture".into()),
            direction: Direction::KcpToService,
            owner: "fixture".into(),
        }
    }
}

/// A typed failure; the host reports it with the plugin's name and digest.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PluginError {
    /// The plugin's config is unusable (the user must fix the config).
    #[error("invalid config: {0}")]
    InvalidConfig(String),
    /// The input object does not have the shape the plugin needs.
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// The plugin deliberately refuses this object (policy decision).
    #[error("rejected: {0}")]
    Rejected(String),
    /// A bug or unexpected condition inside the plugin.
    #[error("internal error: {0}")]
    Internal(String),
}

/// One worked example shipped with a plugin. The host can run these as a self-test
/// (in [`Context::fixture`]) before it marks the plugin ready.
#[derive(Debug, Clone, PartialEq)]
pub struct Fixture {
    pub name: String,
    /// Plugin config.
    pub config: Value,
    /// The object (mutator, namer), the CRD (projector) or the values (renderer).
    pub input: Value,
    /// Expected output when deterministic: the object (mutator), `{"name", "namespace"}`
    /// (namer), the CRD (projector) or the list of objects (renderer).
    pub expected: Option<Value>,
}

impl Fixture {
    pub fn new(name: impl Into<String>, config: Value, input: Value) -> Self {
        Fixture {
            name: name.into(),
            config,
            input,
            expected: None,
        }
    }

    /// Sets the expected output.
    pub fn expect(mut self, expected: Value) -> Self {
        self.expected = Some(expected);
        self
    }
}

/// What a plugin says about itself.
#[derive(Debug, Clone, PartialEq)]
pub struct PluginInfo {
    pub name: String,
    pub version: String,
    pub description: String,
    /// JSON Schema of the config, if the plugin publishes one.
    pub config_schema: Option<Value>,
    pub examples: Vec<Fixture>,
}

impl PluginInfo {
    pub fn new(
        name: impl Into<String>,
        version: impl Into<String>,
        description: impl Into<String>,
    ) -> Self {
        PluginInfo {
            name: name.into(),
            version: version.into(),
            description: description.into(),
            config_schema: None,
            examples: Vec::new(),
        }
    }

    /// Publishes a JSON Schema for the config.
    pub fn config_schema(mut self, schema: Value) -> Self {
        self.config_schema = Some(schema);
        self
    }

    /// Adds a worked example.
    pub fn example(mut self, fixture: Fixture) -> Self {
        self.examples.push(fixture);
        self
    }
}

/// Where an object lives on the service cluster (namer output).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectName {
    pub name: String,
    /// `None` for cluster-scoped objects.
    pub namespace: Option<String>,
}

impl ObjectName {
    pub fn namespaced(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        ObjectName {
            name: name.into(),
            namespace: Some(namespace.into()),
        }
    }

    pub fn cluster_scoped(name: impl Into<String>) -> Self {
        ObjectName {
            name: name.into(),
            namespace: None,
        }
    }

    /// `{"name": …, "namespace": …}`, the form used in namer fixtures.
    pub fn to_json(&self) -> Value {
        match &self.namespace {
            Some(ns) => serde_json::json!({"name": self.name, "namespace": ns}),
            None => serde_json::json!({"name": self.name}),
        }
    }
}
