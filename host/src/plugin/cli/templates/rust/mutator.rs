//! {{name}}: a syncweave mutator. It sets the labels named in its config on every
//! object it sees.
//!
//! Config: `{"labels": {"team": "platform"}}`.
use std::collections::BTreeMap;

use serde::Deserialize;
use syncweave_plugin::{
    Context, Fixture, Mutator, Object, PluginError, PluginInfo, Value, json, path,
};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    labels: BTreeMap<String, String>,
}

fn parse(config: &Value) -> Result<Config, PluginError> {
    let config: Config = syncweave_plugin::parse_config(config)?;
    if config.labels.keys().any(String::is_empty) {
        return Err(PluginError::InvalidConfig(
            "labels: a label key must not be empty".into(),
        ));
    }
    Ok(config)
}

pub struct Plugin;

impl Mutator for Plugin {
    fn info() -> PluginInfo {
        // Name and version come from Cargo.toml.
        syncweave_plugin::plugin_info!("{{description}}")
            .config_schema(json!({
                "type": "object",
                "required": ["labels"],
                "additionalProperties": false,
                "properties": {
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}}
                }
            }))
            // Worked examples: `syncweave plugin test --examples` and the tests below
            // run them, and the host can use them as a self-test.
            .example(
                Fixture::new(
                    "sets a label",
                    json!({"labels": {"team": "platform"}}),
                    json!({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": "cfg", "namespace": "default"}}),
                )
                .expect(json!({"apiVersion": "v1", "kind": "ConfigMap",
                               "metadata": {"name": "cfg", "namespace": "default",
                                            "labels": {"team": "platform"}}})),
            )
    }

    fn validate_config(config: &Value) -> Result<(), String> {
        match parse(config) {
            Ok(_) => Ok(()),
            Err(PluginError::InvalidConfig(message)) => Err(message),
            Err(other) => Err(other.to_string()),
        }
    }

    fn mutate(
        _ctx: &Context,
        config: &Value,
        object: &mut Object<'_>,
        _other: Option<&Object<'_>>,
    ) -> Result<(), PluginError> {
        let config = parse(config)?;
        for (key, value) in &config.labels {
            object
                .set(
                    &format!("metadata.labels.{}", path::key(key)),
                    value.as_str(),
                )
                .map_err(|e| PluginError::InvalidInput(e.to_string()))?;
        }
        syncweave_plugin::log!(
            debug,
            "set {} labels on {}",
            config.labels.len(),
            object.get_string("metadata.name")
        );
        Ok(())
    }
}

syncweave_plugin::mutator!(Plugin);

#[cfg(test)]
mod tests {
    use super::*;
    use syncweave_plugin::testing;

    #[test]
    fn examples_hold() {
        assert_eq!(testing::check_mutator_examples::<Plugin>(), Ok(1));
    }

    #[test]
    fn keeps_other_labels() {
        let out = testing::mutate::<Plugin>(
            &Context::fixture(),
            &json!({"labels": {"example.com/tier": "gold"}}),
            &json!({"metadata": {"name": "a", "labels": {"app": "web"}}}),
            None,
        )
        .unwrap();
        assert_eq!(
            out,
            json!({"metadata": {"name": "a", "labels": {"app": "web", "example.com/tier": "gold"}}})
        );
    }

    #[test]
    fn bad_configs_name_the_field() {
        assert!(Plugin::validate_config(&json!({"labels": {"a": "b"}})).is_ok());
        let err = Plugin::validate_config(&json!({})).unwrap_err();
        assert!(err.contains("labels"), "{err}");
        let err = Plugin::validate_config(&json!({"labels": {"": "x"}})).unwrap_err();
        assert!(err.contains("must not be empty"), "{err}");
    }
}
