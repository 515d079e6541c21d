//! {{name}}: a syncweave projector. It publishes a CRD under another API group (the
//! one in its config) and renames it to match.
//!
//! Config: `{"group": "example.org"}`.
use serde::Deserialize;
use syncweave_plugin::{Fixture, PluginError, PluginInfo, Projector, Value, json};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    group: String,
}

fn parse(config: &Value) -> Result<Config, PluginError> {
    let config: Config = syncweave_plugin::parse_config(config)?;
    if config.group.is_empty() || !config.group.contains('.') {
        return Err(PluginError::InvalidConfig(format!(
            "group: {:?} is not a fully qualified API group (e.g. example.org)",
            config.group
        )));
    }
    Ok(config)
}

pub struct Plugin;

impl Projector for Plugin {
    fn info() -> PluginInfo {
        syncweave_plugin::plugin_info!("{{description}}")
            .config_schema(json!({
                "type": "object",
                "required": ["group"],
                "additionalProperties": false,
                "properties": {"group": {"type": "string", "minLength": 1}}
            }))
            .example(
                Fixture::new(
                    "moves the CRD to another group",
                    json!({"group": "example.org"}),
                    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                           "metadata": {"name": "widgets.internal.example.com"},
                           "spec": {"group": "internal.example.com", "scope": "Namespaced",
                                    "names": {"plural": "widgets", "kind": "Widget"}}}),
                )
                .expect(json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                               "metadata": {"name": "widgets.example.org"},
                               "spec": {"group": "example.org", "scope": "Namespaced",
                                        "names": {"plural": "widgets", "kind": "Widget"}}})),
            )
    }

    fn validate_config(config: &Value) -> Result<(), String> {
        match parse(config) {
            Ok(_) => Ok(()),
            Err(PluginError::InvalidConfig(message)) => Err(message),
            Err(other) => Err(other.to_string()),
        }
    }

    fn project(config: &Value, mut crd: Value) -> Result<Value, PluginError> {
        let config = parse(config)?;
        let plural = crd["spec"]["names"]["plural"]
            .as_str()
            .filter(|p| !p.is_empty())
            .ok_or_else(|| PluginError::InvalidInput("spec.names.plural is missing".into()))?
            .to_string();
        crd["spec"]["group"] = json!(config.group);
        crd["metadata"]["name"] = json!(format!("{plural}.{}", config.group));
        syncweave_plugin::log!(debug, "projected {plural} into {}", config.group);
        Ok(crd)
    }
}

syncweave_plugin::projector!(Plugin);

#[cfg(test)]
mod tests {
    use super::*;
    use syncweave_plugin::testing;

    #[test]
    fn examples_hold() {
        assert_eq!(testing::check_projector_examples::<Plugin>(), Ok(1));
    }

    #[test]
    fn bad_config_and_input() {
        let err = Plugin::validate_config(&json!({"group": "nodots"})).unwrap_err();
        assert!(err.starts_with("group:"), "{err}");
        let err =
            testing::project::<Plugin>(&json!({"group": "a.b"}), &json!({"spec": {}})).unwrap_err();
        assert!(matches!(err, PluginError::InvalidInput(_)), "{err}");
    }
}
