// The test mutator "stamp", shared by test-stamp-v1, -v2 and -bad: it
// labels every object `stamp: <VERSION>` (and refuses objects labelled
// `stamp-fail`, so tests can make calls fail), and its one worked example
// expects `stamp: <EXPECTED>`. Each crate sets both constants and includes
// this file, so the three builds are three digests of one plugin.

wit_bindgen::generate!({ path: "../../../wit", world: "mutator" });

use exports::syncweave::plugin::meta::Guest as Meta;
use exports::syncweave::plugin::mutation::Guest as Mutation;
use syncweave::plugin::types::{Context, Fixture, PluginError, PluginInfo};

struct Stamp;

impl Meta for Stamp {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "test-stamp".into(),
            version: VERSION.into(),
            description: "labels every object with the plugin's version".into(),
            config_schema: Some(r#"{"type":"object"}"#.into()),
            examples: vec![Fixture {
                name: "stamps the version".into(),
                config: "{}".into(),
                input: r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}"#.into(),
                expected: Some(format!(
                    r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"a","labels":{{"stamp":"{EXPECTED}"}}}}}}"#
                )),
            }],
        }
    }

    fn validate_config(config: String) -> Result<(), String> {
        match serde_json::from_str::<serde_json::Value>(&config) {
            Ok(serde_json::Value::Object(_) | serde_json::Value::Null) => Ok(()),
            Ok(_) => Err("the config must be an object".into()),
            Err(e) => Err(format!("config is not JSON: {e}")),
        }
    }
}

impl Mutation for Stamp {
    fn mutate(
        _ctx: Context,
        _config: String,
        object: String,
        _other: Option<String>,
    ) -> Result<String, PluginError> {
        let mut obj: serde_json::Value =
            serde_json::from_str(&object).map_err(|e| PluginError::InvalidInput(e.to_string()))?;
        let labels = obj
            .get_mut("metadata")
            .and_then(|m| m.as_object_mut())
            .ok_or_else(|| PluginError::InvalidInput("object has no metadata".into()))?
            .entry("labels")
            .or_insert_with(|| serde_json::json!({}))
            .as_object_mut()
            .ok_or_else(|| PluginError::InvalidInput("metadata.labels is not a map".into()))?;
        if labels.contains_key("stamp-fail") {
            return Err(PluginError::Rejected(format!(
                "stamp {VERSION} refuses objects labelled stamp-fail"
            )));
        }
        labels.insert("stamp".into(), VERSION.into());
        Ok(obj.to_string())
    }
}

export!(Stamp);
