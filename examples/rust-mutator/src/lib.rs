//! Example mutator: adds one label and copies one annotation to another key.
//!
//! Config:
//! ```json
//! {"label": {"key": "team", "value": "platform"},
//!  "copyAnnotation": {"from": "example.com/owner", "to": "example.com/previous-owner"}}
//! ```
//! `copyAnnotation` is optional; when the `from` annotation is absent nothing is copied.
//! The Python and JavaScript examples next to this one behave identically.
use serde::Deserialize;
use syncweave_plugin::{Context, Fixture, Mutator, Object, PluginError, PluginInfo, Value, json};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Config {
    label: Label,
    copy_annotation: Option<CopyAnnotation>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Label {
    key: String,
    value: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CopyAnnotation {
    from: String,
    to: String,
}

impl Config {
    fn parse(config: &Value) -> Result<Config, String> {
        let config = Config::deserialize(config).map_err(|e| e.to_string())?;
        if config.label.key.is_empty() {
            return Err("label.key must not be empty".into());
        }
        if let Some(copy) = &config.copy_annotation
            && (copy.from.is_empty() || copy.to.is_empty())
        {
            return Err("copyAnnotation.from and copyAnnotation.to must not be empty".into());
        }
        Ok(config)
    }
}

/// Escapes a label or annotation key for use as one path segment.
fn key_segment(key: &str) -> String {
    let mut out = String::with_capacity(key.len() + 4);
    for c in key.chars() {
        if matches!(c, '\\' | '.' | '*' | '?') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

pub struct LabelAndCopy;

impl Mutator for LabelAndCopy {
    fn info() -> PluginInfo {
        syncweave_plugin::plugin_info!("Adds a label from the config and copies an annotation to another key")
            .config_schema(json!({
                "type": "object",
                "required": ["label"],
                "additionalProperties": false,
                "properties": {
                    "label": {
                        "type": "object",
                        "required": ["key", "value"],
                        "properties": {"key": {"type": "string", "minLength": 1}, "value": {"type": "string"}}
                    },
                    "copyAnnotation": {
                        "type": "object",
                        "required": ["from", "to"],
                        "properties": {"from": {"type": "string", "minLength": 1}, "to": {"type": "string", "minLength": 1}}
                    }
                }
            }))
            .example(
                Fixture::new(
                    "label and copy",
                    json!({"label": {"key": "team", "value": "platform"},
                           "copyAnnotation": {"from": "example.com/owner", "to": "example.com/previous-owner"}}),
                    json!({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": "cfg", "namespace": "default",
                                        "annotations": {"example.com/owner": "alice"}}}),
                )
                .expect(json!({"apiVersion": "v1", "kind": "ConfigMap",
                               "metadata": {"name": "cfg", "namespace": "default",
                                            "labels": {"team": "platform"},
                                            "annotations": {"example.com/owner": "alice",
                                                            "example.com/previous-owner": "alice"}}})),
            )
    }

    fn validate_config(config: &Value) -> Result<(), String> {
        Config::parse(config).map(drop)
    }

    fn mutate(
        _ctx: &Context,
        config: &Value,
        object: &mut Object<'_>,
        _other: Option<&Object<'_>>,
    ) -> Result<(), PluginError> {
        let config = Config::parse(config).map_err(PluginError::InvalidConfig)?;
        let label_path = format!("metadata.labels.{}", key_segment(&config.label.key));
        object
            .set(&label_path, config.label.value.as_str())
            .map_err(|e| PluginError::Internal(e.to_string()))?;
        if let Some(copy) = &config.copy_annotation {
            let from = format!("metadata.annotations.{}", key_segment(&copy.from));
            if let Some(value) = object.get(&from) {
                let to = format!("metadata.annotations.{}", key_segment(&copy.to));
                object
                    .set(&to, value)
                    .map_err(|e| PluginError::Internal(e.to_string()))?;
            }
        }
        syncweave_plugin::log!(debug, "set label {}", config.label.key);
        Ok(())
    }
}

syncweave_plugin::mutator!(LabelAndCopy);

#[cfg(test)]
mod tests {
    use super::*;
    use syncweave_plugin::testing;

    #[test]
    fn examples_hold() {
        assert_eq!(testing::check_mutator_examples::<LabelAndCopy>(), Ok(1));
    }

    #[test]
    fn creates_labels_and_skips_missing_annotation() {
        let out = testing::mutate::<LabelAndCopy>(
            &Context::fixture(),
            &json!({"label": {"key": "app.kubernetes.io/team", "value": "x"},
                    "copyAnnotation": {"from": "a", "to": "b"}}),
            &json!({"metadata": {"name": "n"}}),
            None,
        )
        .unwrap();
        assert_eq!(
            out,
            json!({"metadata": {"name": "n", "labels": {"app.kubernetes.io/team": "x"}}})
        );
    }

    #[test]
    fn rejects_bad_config_and_input() {
        let ctx = Context::fixture();
        let err = testing::mutate::<LabelAndCopy>(&ctx, &json!({}), &json!({}), None).unwrap_err();
        assert!(
            matches!(err, PluginError::InvalidConfig(ref m) if m.contains("label")),
            "{err}"
        );
        let err = testing::mutate::<LabelAndCopy>(
            &ctx,
            &json!({"label": {"key": "", "value": ""}}),
            &json!({}),
            None,
        )
        .unwrap_err();
        assert_eq!(
            err,
            PluginError::InvalidConfig("label.key must not be empty".into())
        );
        let err = testing::mutate::<LabelAndCopy>(
            &ctx,
            &json!({"label": {"key": "k", "value": "v"}}),
            &json!([1]),
            None,
        )
        .unwrap_err();
        assert!(matches!(err, PluginError::InvalidInput(_)), "{err}");
        assert!(
            LabelAndCopy::validate_config(
                &json!({"label": {"key": "k", "value": "v"}, "extra": 1})
            )
            .is_err()
        );
    }
}
