//! Healthy test mutator: returns the object, with `config.label` (if any)
//! added as label `syncweave.test/echo`, and logs one line per call.

wit_bindgen::generate!({ path: "../../../wit", world: "mutator" });

use exports::syncweave::plugin::meta::Guest as Meta;
use exports::syncweave::plugin::mutation::Guest as Mutation;
use syncweave::plugin::host_log::{Level, log};
use syncweave::plugin::types::{Context, Fixture, PluginError, PluginInfo};

struct Echo;

impl Meta for Echo {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "test-echo".into(),
            version: "0.1.0".into(),
            description: "returns the object, optionally labelled".into(),
            config_schema: Some(
                r#"{"type":"object","properties":{"label":{"type":"string"}}}"#.into(),
            ),
            examples: vec![Fixture {
                name: "unchanged".into(),
                config: "{}".into(),
                input: r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}"#.into(),
                expected: Some(
                    r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}"#.into(),
                ),
            }],
        }
    }

    fn validate_config(config: String) -> Result<(), String> {
        let v: serde_json::Value =
            serde_json::from_str(&config).map_err(|e| format!("config is not JSON: {e}"))?;
        match v.get("label") {
            None | Some(serde_json::Value::String(_)) => Ok(()),
            Some(_) => Err("label: must be a string".into()),
        }
    }
}

impl Mutation for Echo {
    fn mutate(
        ctx: Context,
        config: String,
        object: String,
        _other: Option<String>,
    ) -> Result<String, PluginError> {
        log(Level::Debug, &format!("echo for {}", ctx.owner));
        let config: serde_json::Value =
            serde_json::from_str(&config).map_err(|e| PluginError::InvalidConfig(e.to_string()))?;
        let Some(label) = config.get("label").and_then(|l| l.as_str()) else {
            return Ok(object);
        };
        let mut obj: serde_json::Value =
            serde_json::from_str(&object).map_err(|e| PluginError::InvalidInput(e.to_string()))?;
        let meta = obj
            .get_mut("metadata")
            .and_then(|m| m.as_object_mut())
            .ok_or_else(|| PluginError::InvalidInput("object has no metadata".into()))?;
        let labels = meta
            .entry("labels")
            .or_insert_with(|| serde_json::json!({}))
            .as_object_mut()
            .ok_or_else(|| PluginError::InvalidInput("metadata.labels is not a map".into()))?;
        labels.insert("syncweave.test/echo".into(), label.into());
        Ok(obj.to_string())
    }
}

export!(Echo);
