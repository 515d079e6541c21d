//! Test namer: `<cluster-name>-<metadata.name>` in namespace `config.namespace`
//! (or the object's own namespace).

wit_bindgen::generate!({ path: "../../../wit", world: "namer" });

use exports::syncweave::plugin::meta::Guest as Meta;
use exports::syncweave::plugin::naming::{Guest as Naming, ObjectName};
use syncweave::plugin::types::{Context, Fixture, PluginError, PluginInfo};

struct Namer;

impl Meta for Namer {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "test-namer".into(),
            version: "0.1.0".into(),
            description: "prefixes names with the cluster name".into(),
            config_schema: None,
            // The second example is wrong on purpose: the self-test must
            // report it as failed.
            examples: vec![
                Fixture {
                    name: "prefixed".into(),
                    config: "{}".into(),
                    input: r#"{"metadata":{"name":"a","namespace":"ns"}}"#.into(),
                    expected: Some(r#"{"namespace":"ns","name":"fixture-cluster-a"}"#.into()),
                },
                Fixture {
                    name: "deliberately-wrong".into(),
                    config: "{}".into(),
                    input: r#"{"metadata":{"name":"a"}}"#.into(),
                    expected: Some(r#"{"name":"a"}"#.into()),
                },
            ],
        }
    }

    fn validate_config(_config: String) -> Result<(), String> {
        Ok(())
    }
}

impl Naming for Namer {
    fn name(ctx: Context, config: String, object: String) -> Result<ObjectName, PluginError> {
        let obj: serde_json::Value =
            serde_json::from_str(&object).map_err(|e| PluginError::InvalidInput(e.to_string()))?;
        let cfg: serde_json::Value =
            serde_json::from_str(&config).map_err(|e| PluginError::InvalidConfig(e.to_string()))?;
        let name = obj["metadata"]["name"]
            .as_str()
            .ok_or_else(|| PluginError::InvalidInput("metadata.name missing".into()))?;
        let namespace = cfg["namespace"]
            .as_str()
            .or_else(|| obj["metadata"]["namespace"].as_str())
            .map(str::to_string);
        Ok(ObjectName {
            name: format!("{}-{name}", ctx.cluster_name),
            namespace,
        })
    }
}

export!(Namer);
