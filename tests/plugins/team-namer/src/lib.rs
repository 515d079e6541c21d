//! Test namer for contract 0.2 that reads: it places the copy in the
//! service namespace `team-<team>`, after the `team` label of the object's
//! Namespace in kcp (a read `spec.reads.consumerNamespace` must allow), and
//! names it `<namespace>-<name>`. Without the label it fails with a message
//! naming it, so the agent retries until the label is there.

wit_bindgen::generate!({ path: "../../../wit/v0.2", world: "namer" });

use exports::syncweave::plugin::meta::Guest as Meta;
use exports::syncweave::plugin::naming::{Guest as Naming, Named, ObjectName};
use syncweave::plugin::reads::{self, ReadError};
use syncweave::plugin::types::{
    CallResult, Context, Fixture, PluginError, PluginInfo, ReadDeclaration, ReadFixture, Report,
    Resource, Severity, Side,
};

struct Namer;

fn namespaces() -> Resource {
    Resource {
        group: String::new(),
        version: "v1".into(),
        resource: "namespaces".into(),
    }
}

impl Meta for Namer {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "test-team-namer".into(),
            version: "0.2.0".into(),
            description: "places copies in the namespace of their consumer's team".into(),
            config_schema: None,
            examples: vec![Fixture {
                name: "team-namespace".into(),
                config: "{}".into(),
                input: r#"{"metadata":{"name":"a","namespace":"ns"}}"#.into(),
                expected: Some(r#"{"namespace":"team-blue","name":"ns-a"}"#.into()),
                reads: vec![ReadFixture {
                    side: Side::Kcp,
                    resource: namespaces(),
                    objects: vec![
                        r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"ns","labels":{"team":"blue"}}}"#.into(),
                    ],
                }],
                values: vec![],
            }],
            reads: vec![ReadDeclaration {
                side: Side::Kcp,
                resource: namespaces(),
                purpose: "the consumer's team label".into(),
            }],
        }
    }

    fn validate_config(_config: String) -> Result<(), String> {
        Ok(())
    }
}

impl Naming for Namer {
    fn name(_ctx: Context, _config: String, object: String) -> Result<Named, PluginError> {
        let obj: serde_json::Value =
            serde_json::from_str(&object).map_err(|e| PluginError::InvalidInput(e.to_string()))?;
        let name = obj["metadata"]["name"]
            .as_str()
            .ok_or_else(|| PluginError::InvalidInput("metadata.name missing".into()))?;
        let ns = obj["metadata"]["namespace"]
            .as_str()
            .ok_or_else(|| PluginError::InvalidInput("metadata.namespace missing".into()))?;
        let namespace = reads::get(Side::Kcp, &namespaces(), None, ns).map_err(|e| {
            let m = match e {
                ReadError::NotAllowed(m)
                | ReadError::NotServed(m)
                | ReadError::Unavailable(m)
                | ReadError::Invalid(m) => m,
            };
            PluginError::Internal(format!("reading Namespace {ns}: {m}"))
        })?;
        let team = namespace
            .as_deref()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(t).ok())
            .and_then(|n| n["metadata"]["labels"]["team"].as_str().map(str::to_string))
            .ok_or_else(|| {
                PluginError::InvalidInput(format!(
                    "Namespace {ns} has no label `team`; label it to choose where its objects go"
                ))
            })?;
        Ok(Named {
            report: Report {
                results: vec![CallResult {
                    severity: Severity::Normal,
                    reason: "Placed".into(),
                    message: format!("team {team}"),
                }],
                conditions: vec![],
                set_context: vec![],
            },
            name: ObjectName {
                name: format!("{ns}-{name}"),
                namespace: Some(format!("team-{team}")),
            },
        })
    }
}

export!(Namer);
