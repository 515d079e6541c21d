//! Test projector: annotates the CRD with `syncweave.test/projected`.

wit_bindgen::generate!({ path: "../../../wit", world: "projector" });

use exports::syncweave::plugin::meta::Guest as Meta;
use exports::syncweave::plugin::projection::Guest as Projection;
use syncweave::plugin::types::{PluginError, PluginInfo};

struct Projector;

impl Meta for Projector {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "test-projector".into(),
            version: "0.1.0".into(),
            description: "marks CRDs as projected".into(),
            config_schema: None,
            examples: Vec::new(),
        }
    }

    fn validate_config(_config: String) -> Result<(), String> {
        Ok(())
    }
}

impl Projection for Projector {
    fn project(_config: String, crd: String) -> Result<String, PluginError> {
        let mut v: serde_json::Value =
            serde_json::from_str(&crd).map_err(|e| PluginError::InvalidInput(e.to_string()))?;
        v["metadata"]["annotations"]["syncweave.test/projected"] = "true".into();
        Ok(v.to_string())
    }
}

export!(Projector);
