//! Example mutator for contract 0.2: works out the object's tenant and hands it to the
//! steps after it in the chain as the context value `tenant`, without changing the
//! object. A template step then writes it with `{{ .Context.tenant }}`, a CEL step with
//! `context.tenant`: one lookup, used by declarative rules that cannot do it themselves.
//!
//! The tenant is the value of the object's label `fromLabel` (default
//! `example.com/tenant`); without it, `t-` and the first 8 characters of the consumer's
//! logical cluster name.
//!
//! Config: `{"fromLabel": "example.com/tenant"}` (optional).
use serde::Deserialize;
use syncweave_plugin::v2::{Context, Fixture, Mutator, PluginInfo, Report};
use syncweave_plugin::{Object, PluginError, Value, json};

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Config {
    from_label: Option<String>,
}

const DEFAULT_LABEL: &str = "example.com/tenant";

pub struct Tenant;

impl Mutator for Tenant {
    fn info() -> PluginInfo {
        PluginInfo::new(
            "rust-tenant",
            env!("CARGO_PKG_VERSION"),
            "Sets the context value `tenant` (from a label, else the workspace) for later steps",
        )
        .config_schema(json!({
            "type": "object", "additionalProperties": false,
            "properties": {"fromLabel": {"type": "string", "minLength": 1}}
        }))
        .example(
            Fixture::new(
                "from the label",
                json!({}),
                json!({"metadata": {"name": "a", "labels": {"example.com/tenant": "acme"}}}),
            )
            .expect(json!({"metadata": {"name": "a", "labels": {"example.com/tenant": "acme"}}})),
        )
    }

    fn validate_config(config: &Value) -> Result<(), String> {
        parse(config).map(|_| ()).map_err(|e| e.to_string())
    }

    fn mutate(
        ctx: &Context,
        config: &Value,
        object: &mut Object<'_>,
        _other: Option<&Object<'_>>,
        report: &mut Report,
    ) -> Result<(), PluginError> {
        let config = parse(config)?;
        let label = config.from_label.as_deref().unwrap_or(DEFAULT_LABEL);
        let from_label = object.get_string(&format!("metadata.labels.{}", key(label)));
        let tenant = if from_label.is_empty() {
            let short: String = ctx.cluster_name.chars().take(8).collect();
            format!("t-{short}")
        } else {
            from_label
        };
        report.set_context("tenant", tenant);
        Ok(())
    }
}

fn parse(config: &Value) -> Result<Config, PluginError> {
    if config.is_null() {
        return Ok(Config::default());
    }
    syncweave_plugin::serde_json::from_value(config.clone())
        .map_err(|e| PluginError::InvalidConfig(format!("config: {e}")))
}

/// A label key as one path segment (dots and slashes escaped).
fn key(k: &str) -> String {
    syncweave_plugin::path::key(k)
}

syncweave_plugin::v2::mutator!(Tenant);

#[cfg(test)]
mod tests {
    use super::*;
    use syncweave_plugin::testing::v2::{self as t, Env};

    #[test]
    fn the_label_wins_and_the_workspace_is_the_fallback() {
        let obj = json!({"metadata": {"name": "a", "labels": {"example.com/tenant": "acme"}}});
        let out = t::mutate::<Tenant>(&Env::new(), &json!(null), &obj, None).unwrap();
        assert_eq!(out.output, obj, "the object is unchanged");
        assert_eq!(out.report.context(), [("tenant".to_string(), json!("acme"))]);
        let out = t::mutate::<Tenant>(&Env::new(), &json!({}), &json!({"metadata": {"name": "b"}}), None)
            .unwrap();
        let (_, v) = &out.report.context()[0];
        assert!(v.as_str().unwrap().starts_with("t-"), "{v}");
    }
}
