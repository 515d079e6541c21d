//! Test namer for contract 0.2 that never reads (so its component does not
//! import `reads`): `<cluster-name>-<metadata.name>`, with the context value
//! `test/suffix` (a JSON string) appended when set, and a Normal result
//! `Named` saying what it chose.

wit_bindgen::generate!({ path: "../../../wit/v0.2", world: "namer" });

use exports::syncweave::plugin::meta::Guest as Meta;
use exports::syncweave::plugin::naming::{Guest as Naming, Named, ObjectName};
use syncweave::plugin::types::{
    CallResult, Context, Fixture, PluginError, PluginInfo, Report, Severity,
};

struct Namer;

impl Meta for Namer {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "test-namer-v2".into(),
            version: "0.2.0".into(),
            description: "prefixes names with the cluster name".into(),
            config_schema: None,
            examples: vec![Fixture {
                name: "prefixed".into(),
                config: "{}".into(),
                input: r#"{"metadata":{"name":"a","namespace":"ns"}}"#.into(),
                expected: Some(r#"{"namespace":"ns","name":"fixture-cluster-a"}"#.into()),
                reads: vec![],
                values: vec![],
            }],
            reads: vec![],
        }
    }

    fn validate_config(_config: String) -> Result<(), String> {
        Ok(())
    }
}

impl Naming for Namer {
    fn name(ctx: Context, _config: String, object: String) -> Result<Named, PluginError> {
        let obj: serde_json::Value =
            serde_json::from_str(&object).map_err(|e| PluginError::InvalidInput(e.to_string()))?;
        let name = obj["metadata"]["name"]
            .as_str()
            .ok_or_else(|| PluginError::InvalidInput("metadata.name missing".into()))?;
        let mut name = format!("{}-{name}", ctx.cluster_name);
        if let Some(e) = ctx.values.iter().find(|e| e.key == "test/suffix") {
            let suffix: String = serde_json::from_str(&e.value)
                .map_err(|e| PluginError::InvalidInput(format!("test/suffix: {e}")))?;
            name = format!("{name}-{suffix}");
        }
        Ok(Named {
            report: Report {
                results: vec![CallResult {
                    severity: Severity::Normal,
                    reason: "Named".into(),
                    message: format!("named {name}"),
                }],
                conditions: vec![],
                set_context: vec![],
            },
            name: ObjectName {
                name,
                namespace: obj["metadata"]["namespace"].as_str().map(str::to_string),
            },
        })
    }
}

export!(Namer);
