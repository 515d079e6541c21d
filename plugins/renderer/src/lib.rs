//! Built-in renderer: renders an InitTemplate (or any manifest template) into
//! Kubernetes objects, as upstream init-agent does.
//!
//! Config:
//! ```json
//! {"engine": "gotemplate", "htmlEscape": true, "template": "…"}
//! ```
//! - `engine`: `gotemplate` (default; Go templates with sprig, through
//!   [`syncweave_gotmpl`]) or `handlebars`.
//! - `htmlEscape`: escape every action's output like Go's html/template in
//!   text context (`"`→`&#34;`, `'`→`&#39;`, `&`→`&amp;`, `+`→`&#43;`,
//!   `<`→`&lt;`, `>`→`&gt;`). Defaults to `true` for `gotemplate`, because
//!   upstream init-agent executes InitTemplates with html/template, and to
//!   `false` for `handlebars`. Only action output is escaped: html/template
//!   also rewrites template text in HTML contexts (a `<` that starts no tag
//!   becomes `&lt;`, `<!-- -->` is dropped), which corrupts YAML and is not
//!   reproduced.
//! - `template`: used when the call's template argument is empty, so that a
//!   config alone is a complete example (fixtures, `syncweave plugin test`).
//! - `output`: `objects` (default) decodes the rendered text into objects;
//!   `text` returns it as one object `{"text": …}`, trimmed like upstream
//!   api-syncagent's template values (related-object names and selectors).
//!
//! Values: a JSON object. With `gotemplate` its top-level keys are the
//! fields of a struct, as upstream's render context is: `{{ .ClusterName }}`
//! works, an unknown `{{ .Other }}` is an execution error (not `<no value>`).
//!
//! Output: the rendered text is split into objects like upstream (see
//! [`documents`]); errors read "failed to parse template: …", "failed to
//! execute template: …" or "failed to decode YAML: …".

use serde::Deserialize;
use syncweave_gotmpl::{ExecOptions, Record, Template, Value as TValue};
use syncweave_plugin::{Context, Fixture, PluginError, PluginInfo, Renderer, Value, json};

pub mod documents;

/// Template language.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    /// Go text/template with sprig (upstream's language).
    #[default]
    Gotemplate,
    /// Handlebars (the `handlebars` crate).
    Handlebars,
}

/// The plugin config.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Config {
    #[serde(default)]
    pub engine: Engine,
    #[serde(default)]
    pub html_escape: Option<bool>,
    #[serde(default)]
    pub template: Option<String>,
    #[serde(default)]
    pub output: Output,
}

/// What `render` returns.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Output {
    /// The rendered documents, decoded into objects.
    #[default]
    Objects,
    /// `[{"text": "<rendered text, trimmed>"}]`.
    Text,
}

impl Config {
    /// Parses a config; `null` (no config) is the default.
    pub fn parse(config: &Value) -> Result<Config, String> {
        if config.is_null() {
            return Ok(Config::default());
        }
        Config::deserialize(config)
            .map_err(|e| format!("{e} (valid fields: engine, htmlEscape, template, output)"))
    }

    /// Whether output is HTML-escaped: explicit setting, else upstream's
    /// behaviour for the engine.
    pub fn html_escape(&self) -> bool {
        self.html_escape
            .unwrap_or(self.engine == Engine::Gotemplate)
    }
}

/// Name under which Go templates are parsed; upstream init-agent uses the
/// same, so error locations read `template: template:LINE:COL`.
const TEMPLATE_NAME: &str = "template";

/// The upstream e2e InitTemplate: a ConfigMap listed before its Namespace.
const E2E_TEMPLATE: &str = r#"apiVersion: v1
kind: ConfigMap
metadata:
  name: info
  namespace: foobar
data:
  cluster: "{{ .ClusterName }}"
  workspace: "{{ .ClusterPath }}"
---
apiVersion: v1
kind: Namespace
metadata:
  name: foobar
"#;

pub struct GoOrHandlebars;

impl Renderer for GoOrHandlebars {
    fn info() -> PluginInfo {
        syncweave_plugin::plugin_info!(
            "Renders Go templates (sprig, html/template escaping) or Handlebars into Kubernetes objects, split into documents like upstream init-agent"
        )
        .config_schema(json!({
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "engine": {
                    "type": "string",
                    "enum": ["gotemplate", "handlebars"],
                    "default": "gotemplate",
                    "description": "Template language: Go text/template with sprig functions, or Handlebars."
                },
                "htmlEscape": {
                    "type": "boolean",
                    "description": "Escape action output like Go's html/template (upstream init-agent does). Default: true for gotemplate, false for handlebars."
                },
                "template": {
                    "type": "string",
                    "description": "Template to render when the call passes an empty one (examples, `syncweave plugin test`)."
                },
                "output": {
                    "type": "string",
                    "enum": ["objects", "text"],
                    "default": "objects",
                    "description": "objects: decode the rendered YAML/JSON into objects; text: return [{\"text\": <rendered text, trimmed>}]."
                }
            }
        }))
        .example(
            Fixture::new(
                "upstream e2e InitTemplate",
                json!({"template": E2E_TEMPLATE}),
                json!({"ClusterName": "2x8fkdtr3b1z", "ClusterPath": "root:my-new-workspace"}),
            )
            .expect(json!([
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "info", "namespace": "foobar"},
                 "data": {"cluster": "2x8fkdtr3b1z", "workspace": "root:my-new-workspace"}},
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "foobar"}}
            ])),
        )
        .example(
            Fixture::new(
                "html/template escaping like upstream",
                json!({"template": "kind: ConfigMap\napiVersion: v1\nmetadata:\n  name: {{ .ClusterName }}\ndata:\n  joined: '{{ printf \"%s+%s\" .ClusterName .ClusterPath }}'\n"}),
                json!({"ClusterName": "abc", "ClusterPath": "root:abc"}),
            )
            .expect(json!([
                {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "abc"}, "data": {"joined": "abc&#43;root:abc"}}
            ])),
        )
        .example(
            Fixture::new(
                "text output (related-object names)",
                json!({"output": "text", "htmlEscape": false, "template": " {{ .Object.spec.secretName }}-copy\n"}),
                json!({"Object": {"spec": {"secretName": "a&b"}}}),
            )
            .expect(json!([{"text": "a&b-copy"}])),
        )
        .example(
            Fixture::new(
                "handlebars",
                json!({"engine": "handlebars", "template": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ws-{{ClusterName}}\n  annotations:\n    path: \"{{ClusterPath}}\"\n"}),
                json!({"ClusterName": "abc", "ClusterPath": "root:org:abc"}),
            )
            .expect(json!([
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ws-abc", "annotations": {"path": "root:org:abc"}}}
            ])),
        )
    }

    fn validate_config(config: &Value) -> Result<(), String> {
        let cfg = Config::parse(config)?;
        if let Some(t) = &cfg.template {
            compile(&cfg, t).map_err(|e| format!("template: {e}"))?;
        }
        Ok(())
    }

    fn render(
        _ctx: &Context,
        config: &Value,
        template: &str,
        values: &Value,
    ) -> Result<Vec<Value>, PluginError> {
        let cfg = Config::parse(config).map_err(PluginError::InvalidConfig)?;
        let src = match (template.is_empty(), &cfg.template) {
            (true, Some(t)) => t.as_str(),
            _ => template,
        };
        let values = match values {
            Value::Object(_) => values,
            Value::Null => &json!({}),
            other => {
                return Err(PluginError::InvalidInput(format!(
                    "the values must be a JSON object (e.g. {{\"ClusterName\": …, \"ClusterPath\": …}}), got {}",
                    kind(other)
                )));
            }
        };
        let text = match compile(&cfg, src).map_err(PluginError::InvalidInput)? {
            Compiled::Go(t) => execute_go(&t, values, cfg.html_escape())?,
            Compiled::Handlebars(hb) => hb.render(TEMPLATE_NAME, values).map_err(|e| {
                PluginError::InvalidInput(format!("failed to execute template: {e}"))
            })?,
        };
        if cfg.output == Output::Text {
            return Ok(vec![json!({"text": text.trim()})]);
        }
        let docs = documents::decode(&text)
            .map_err(|e| PluginError::InvalidInput(format!("failed to decode YAML: {e}")))?;
        Ok(docs.into_iter().map(Value::Object).collect())
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

enum Compiled {
    Go(Box<Template>),
    Handlebars(Box<handlebars::Handlebars<'static>>),
}

/// Parses the template; the error is upstream's "failed to parse template: …".
fn compile(cfg: &Config, src: &str) -> Result<Compiled, String> {
    match cfg.engine {
        Engine::Gotemplate => Template::parse_named(TEMPLATE_NAME, src)
            .map(|t| Compiled::Go(Box::new(t)))
            .map_err(|e| format!("failed to parse template: {e}")),
        Engine::Handlebars => {
            let mut hb = handlebars::Handlebars::new();
            if !cfg.html_escape() {
                hb.register_escape_fn(handlebars::no_escape);
            }
            hb.register_template_string(TEMPLATE_NAME, src)
                .map_err(|e| format!("failed to parse template: {e}"))?;
            Ok(Compiled::Handlebars(Box::new(hb)))
        }
    }
}

/// Executes a Go template with the values' top-level keys as struct fields.
fn execute_go(t: &Template, values: &Value, html_escape: bool) -> Result<String, PluginError> {
    let fields = values
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.clone(), TValue::from_json(v)));
    let data = TValue::object(Record::new("values", fields));
    let opts = ExecOptions {
        html_escape,
        ..Default::default()
    };
    t.execute_value(data, &opts)
        .map_err(|e| PluginError::InvalidInput(format!("failed to execute template: {e}")))
}

syncweave_plugin::renderer!(GoOrHandlebars);

#[cfg(test)]
mod tests;
