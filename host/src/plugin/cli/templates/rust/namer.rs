//! {{name}}: a syncweave namer. It places each object in a namespace named after the
//! consumer's logical cluster, under its own name with a prefix from the config.
//!
//! Config: `{"prefix": "team-a-"}` (optional; default no prefix).
use serde::Deserialize;
use syncweave_plugin::{Context, Fixture, Namer, ObjectName, PluginError, PluginInfo, Value, json};

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    #[serde(default)]
    prefix: String,
}

fn parse(config: &Value) -> Result<Config, PluginError> {
    if config.is_null() {
        return Ok(Config::default());
    }
    syncweave_plugin::parse_config(config)
}

pub struct Plugin;

impl Namer for Plugin {
    fn info() -> PluginInfo {
        syncweave_plugin::plugin_info!(
            "{{description}}"
        )
        .config_schema(json!({
            "type": "object",
            "additionalProperties": false,
            "properties": {"prefix": {"type": "string"}}
        }))
        .example(
            Fixture::new(
                "prefixed name in the cluster's namespace",
                json!({"prefix": "team-a-"}),
                json!({"apiVersion": "example.com/v1", "kind": "Widget",
                           "metadata": {"name": "w1", "namespace": "default"}}),
            )
            .expect(json!({"name": "team-a-w1", "namespace": "fixture-cluster"})),
        )
    }

    fn validate_config(config: &Value) -> Result<(), String> {
        match parse(config) {
            Ok(_) => Ok(()),
            Err(PluginError::InvalidConfig(message)) => Err(message),
            Err(other) => Err(other.to_string()),
        }
    }

    fn name(ctx: &Context, config: &Value, object: &Value) -> Result<ObjectName, PluginError> {
        let config = parse(config)?;
        let name = object["metadata"]["name"]
            .as_str()
            .filter(|n| !n.is_empty())
            .ok_or_else(|| PluginError::InvalidInput("metadata.name is missing".into()))?;
        let name = format!("{}{name}", config.prefix);
        syncweave_plugin::log!(debug, "naming {name} in {}", ctx.cluster_name);
        // A cluster-scoped object (no namespace) stays cluster-scoped.
        Ok(match object["metadata"]["namespace"].as_str() {
            Some(_) => ObjectName::namespaced(ctx.cluster_name.clone(), name),
            None => ObjectName::cluster_scoped(name),
        })
    }
}

syncweave_plugin::namer!(Plugin);

#[cfg(test)]
mod tests {
    use super::*;
    use syncweave_plugin::testing;

    #[test]
    fn examples_hold() {
        assert_eq!(testing::check_namer_examples::<Plugin>(), Ok(1));
    }

    #[test]
    fn cluster_scoped_objects_stay_cluster_scoped() {
        let n = testing::name::<Plugin>(
            &Context::fixture(),
            &Value::Null,
            &json!({"metadata": {"name": "global"}}),
        )
        .unwrap();
        assert_eq!(n, ObjectName::cluster_scoped("global"));
    }

    #[test]
    fn a_nameless_object_is_invalid_input() {
        let err =
            testing::name::<Plugin>(&Context::fixture(), &Value::Null, &json!({})).unwrap_err();
        assert!(matches!(err, PluginError::InvalidInput(_)), "{err}");
        assert!(Plugin::validate_config(&json!({"prefix": 1})).is_err());
    }
}
