//! {{name}}: a syncweave renderer. Its templates are JSON documents (one object, or a
//! list of objects) in which `${Key}` is replaced by the string value of `Key` in the
//! values (for InitTemplates: ClusterName and ClusterPath).
//!
//! Config: `{"template": "…"}` (optional): rendered when the call passes an empty
//! template, so that the config alone is a complete example.
use serde::Deserialize;
use syncweave_plugin::{Context, Fixture, PluginError, PluginInfo, Renderer, Value, json};

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    #[serde(default)]
    template: Option<String>,
}

fn parse(config: &Value) -> Result<Config, PluginError> {
    if config.is_null() {
        return Ok(Config::default());
    }
    syncweave_plugin::parse_config(config)
}

/// Replaces `${Key}` with the values' `Key`; an unknown key is an error.
fn substitute(template: &str, values: &Value) -> Result<String, PluginError> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after.find('}').ok_or_else(|| {
            PluginError::InvalidInput("the template has a ${ without a closing }".into())
        })?;
        let key = &after[..end];
        let value = match values.get(key) {
            Some(Value::String(s)) => s.clone(),
            Some(v @ (Value::Number(_) | Value::Bool(_))) => v.to_string(),
            _ => {
                return Err(PluginError::InvalidInput(format!(
                    "the template refers to {key:?}, but the values have no string or number of that name"
                )));
            }
        };
        // The value lands inside a JSON string: escape it as one.
        let quoted = Value::String(value).to_string();
        out.push_str(&quoted[1..quoted.len() - 1]);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

pub struct Plugin;

impl Renderer for Plugin {
    fn info() -> PluginInfo {
        syncweave_plugin::plugin_info!("{{description}}")
            .config_schema(json!({
                "type": "object",
                "additionalProperties": false,
                "properties": {"template": {"type": "string"}}
            }))
            .example(
                Fixture::new(
                    "a namespace per workspace",
                    json!({"template": r#"{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ws-${ClusterName}", "annotations": {"path": "${ClusterPath}"}}}"#}),
                    json!({"ClusterName": "2x8fkdtr3b1z", "ClusterPath": "root:org:team"}),
                )
                .expect(json!([{"apiVersion": "v1", "kind": "Namespace",
                                "metadata": {"name": "ws-2x8fkdtr3b1z",
                                             "annotations": {"path": "root:org:team"}}}])),
            )
    }

    fn validate_config(config: &Value) -> Result<(), String> {
        match parse(config) {
            Ok(_) => Ok(()),
            Err(PluginError::InvalidConfig(message)) => Err(message),
            Err(other) => Err(other.to_string()),
        }
    }

    fn render(
        ctx: &Context,
        config: &Value,
        template: &str,
        values: &Value,
    ) -> Result<Vec<Value>, PluginError> {
        let config = parse(config)?;
        let template = match (template.trim(), &config.template) {
            ("", Some(t)) => t.as_str(),
            ("", None) => {
                return Err(PluginError::InvalidInput(
                    "no template: pass one, or set template in the config".into(),
                ));
            }
            _ => template,
        };
        let text = substitute(template, values)?;
        let doc: Value = syncweave_plugin::serde_json::from_str(&text).map_err(|e| {
            PluginError::InvalidInput(format!("the rendered template is not JSON: {e}"))
        })?;
        let docs = match doc {
            Value::Array(items) => items,
            other => vec![other],
        };
        syncweave_plugin::log!(
            debug,
            "rendered {} objects for {}",
            docs.len(),
            ctx.cluster_name
        );
        Ok(docs)
    }
}

syncweave_plugin::renderer!(Plugin);

#[cfg(test)]
mod tests {
    use super::*;
    use syncweave_plugin::testing;

    #[test]
    fn examples_hold() {
        // Renderer examples carry their template in the config: render with an empty one.
        let info = Plugin::info();
        assert_eq!(info.examples.len(), 1);
        for example in &info.examples {
            assert!(Plugin::validate_config(&example.config).is_ok());
            let out =
                testing::render::<Plugin>(&Context::fixture(), &example.config, "", &example.input)
                    .unwrap();
            assert_eq!(
                Some(Value::Array(out)),
                example.expected,
                "{}",
                example.name
            );
        }
    }

    #[test]
    fn values_are_escaped_and_unknown_keys_refused() {
        let out = testing::render::<Plugin>(
            &Context::fixture(),
            &Value::Null,
            r#"[{"kind": "A", "v": "${X}"}, {"kind": "B"}]"#,
            &json!({"X": "say \"hi\""}),
        )
        .unwrap();
        assert_eq!(
            out,
            vec![
                json!({"kind": "A", "v": "say \"hi\""}),
                json!({"kind": "B"})
            ]
        );
        let err =
            testing::render::<Plugin>(&Context::fixture(), &Value::Null, "${Nope}", &json!({}))
                .unwrap_err();
        assert!(
            matches!(err, PluginError::InvalidInput(ref m) if m.contains("Nope")),
            "{err}"
        );
    }
}
