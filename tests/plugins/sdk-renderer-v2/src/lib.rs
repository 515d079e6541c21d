//! Test renderer for contract 0.2 written with the Rust SDK's `v2` API: lists the
//! service-cluster ConfigMaps in `config.namespace` matching `config.selector` and
//! renders one ConfigMap per match, named `<prefix><name>` where the prefix is the
//! context value `test/prefix` (default empty). Reports a Normal result `Rendered`
//! and sets context value `test/rendered` to the number of documents.

use syncweave_plugin::v2::{
    self, Context, Fixture, PluginInfo, ReadDeclaration, Renderer, Report, Resource, Side,
};
use syncweave_plugin::{PluginError, Value, json};

fn configmaps() -> Resource {
    Resource::core("v1", "configmaps")
}

pub struct Copies;

impl Renderer for Copies {
    fn info() -> PluginInfo {
        PluginInfo::new("test-sdk-renderer-v2", "0.2.0", "one ConfigMap per match")
            .reads(ReadDeclaration::new(
                Side::Service,
                configmaps(),
                "the ConfigMaps to copy",
            ))
            .example(
                Fixture::new(
                    "copies",
                    json!({"namespace": "src", "selector": "copy=yes"}),
                    json!({}),
                )
                .objects(
                    Side::Service,
                    configmaps(),
                    [
                        json!({"metadata": {"name": "a", "namespace": "src", "labels": {"copy": "yes"}}}),
                        json!({"metadata": {"name": "b", "namespace": "src", "labels": {"copy": "no"}}}),
                    ],
                )
                .value("test/prefix", "p-")
                .expect(json!([{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "p-a"}}])),
            )
    }

    fn validate_config(config: &Value) -> Result<(), String> {
        match config.get("namespace") {
            Some(Value::String(_)) => Ok(()),
            _ => Err("namespace: must be a string".into()),
        }
    }

    fn render(
        ctx: &Context,
        config: &Value,
        _template: &str,
        _values: &Value,
        report: &mut Report,
    ) -> Result<Vec<Value>, PluginError> {
        let namespace = config["namespace"]
            .as_str()
            .ok_or_else(|| PluginError::InvalidConfig("namespace: must be a string".into()))?;
        let selector = config["selector"].as_str();
        let prefix: String = ctx.value_as("test/prefix")?.unwrap_or_default();
        let docs: Vec<Value> =
            v2::reads::list(Side::Service, &configmaps(), Some(namespace), selector)?
                .iter()
                .map(|cm| {
                    let name = format!("{prefix}{}", cm.get_string("metadata.name"));
                    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}})
                })
                .collect();
        report.normal("Rendered", format!("{} documents", docs.len()));
        report.set_context("test/rendered", docs.len());
        Ok(docs)
    }
}

syncweave_plugin::v2::renderer!(Copies);

#[cfg(test)]
mod tests {
    #[test]
    fn examples_hold() {
        assert_eq!(
            syncweave_plugin::testing::v2::check_renderer_examples::<super::Copies>(),
            Ok(1)
        );
    }
}
