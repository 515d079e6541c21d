//! A component that fits no plugin world: it exports `meta` but no role.
//! The runtime must refuse to load it and say why.

wit_bindgen::generate!({
    path: "../../../wit",
    inline: "
        package syncweave-test:meta-only;
        world meta-only {
            export syncweave:plugin/meta@0.1.0;
        }
    ",
    world: "syncweave-test:meta-only/meta-only",
    generate_all,
});

use exports::syncweave::plugin::meta::Guest as Meta;
use syncweave::plugin::types::PluginInfo;

struct MetaOnly;

impl Meta for MetaOnly {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "test-meta-only".into(),
            version: "0.1.0".into(),
            description: "exports only meta".into(),
            config_schema: None,
            examples: Vec::new(),
        }
    }

    fn validate_config(_config: String) -> Result<(), String> {
        Ok(())
    }
}

export!(MetaOnly);
