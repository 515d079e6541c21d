//! Test renderer: the template is a JSON array of objects; every string
//! `"$cluster"` inside becomes the context's cluster name, and `$key` the
//! value of `values.key`.

wit_bindgen::generate!({ path: "../../../wit", world: "renderer" });

use exports::syncweave::plugin::meta::Guest as Meta;
use exports::syncweave::plugin::rendering::Guest as Rendering;
use syncweave::plugin::types::{Context, PluginError, PluginInfo};

struct Renderer;

impl Meta for Renderer {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "test-renderer".into(),
            version: "0.1.0".into(),
            description: "substitutes $placeholders in a JSON array of objects".into(),
            config_schema: None,
            examples: Vec::new(),
        }
    }

    fn validate_config(_config: String) -> Result<(), String> {
        Ok(())
    }
}

fn substitute(v: &mut serde_json::Value, ctx: &Context, values: &serde_json::Value) {
    match v {
        serde_json::Value::String(s) if s.starts_with('$') => {
            let key = &s[1..];
            if key == "cluster" {
                *s = ctx.cluster_name.clone();
            } else if let Some(x) = values.get(key).and_then(|x| x.as_str()) {
                *s = x.to_string();
            }
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(|x| substitute(x, ctx, values)),
        serde_json::Value::Object(o) => o.values_mut().for_each(|x| substitute(x, ctx, values)),
        _ => {}
    }
}

impl Rendering for Renderer {
    fn render(
        ctx: Context,
        _config: String,
        template: String,
        values: String,
    ) -> Result<Vec<String>, PluginError> {
        let mut docs: Vec<serde_json::Value> = serde_json::from_str(&template)
            .map_err(|e| PluginError::InvalidInput(format!("template: {e}")))?;
        let values: serde_json::Value = serde_json::from_str(&values)
            .map_err(|e| PluginError::InvalidInput(format!("values: {e}")))?;
        for d in &mut docs {
            substitute(d, &ctx, &values);
        }
        Ok(docs.iter().map(|d| d.to_string()).collect())
    }
}

export!(Renderer);
