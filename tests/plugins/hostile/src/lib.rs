//! Misbehaving test mutator. `config.mode` picks the misbehaviour; the
//! runtime's tests check that each one is contained and classified.

wit_bindgen::generate!({ path: "../../../wit", world: "mutator" });

use exports::syncweave::plugin::meta::Guest as Meta;
use exports::syncweave::plugin::mutation::Guest as Mutation;
use syncweave::plugin::host_log::{Level, log};
use syncweave::plugin::types::{Context, PluginError, PluginInfo};

struct Hostile;

impl Meta for Hostile {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "test-hostile".into(),
            version: "0.1.0".into(),
            description: "misbehaves on purpose, as config.mode says".into(),
            config_schema: None,
            examples: Vec::new(),
        }
    }

    fn validate_config(config: String) -> Result<(), String> {
        mode(&config).map(|_| ())
    }
}

fn mode(config: &str) -> Result<String, String> {
    let v: serde_json::Value =
        serde_json::from_str(config).map_err(|e| format!("config is not JSON: {e}"))?;
    Ok(v.get("mode")
        .and_then(|m| m.as_str())
        .unwrap_or("echo")
        .to_string())
}

// Deliberately unbounded: the "stack" mode must overflow the guest stack.
#[allow(unconditional_recursion)]
#[inline(never)]
fn recurse(n: u64) -> u64 {
    let local = [n; 64];
    std::hint::black_box(&local);
    recurse(n + 1) + local[3]
}

/// The label that makes mode `panic-if-marked` panic on an object.
const MARK: &str = "syncweave.test/explode";

/// Kept out of line so a trap's backtrace names it: the replay tests look
/// for this function in the symbolized backtrace.
#[inline(never)]
fn explode_on_marked_object(name: &str) -> ! {
    panic!("hostile plugin explodes on marked object {name:?}")
}

impl Mutation for Hostile {
    fn mutate(
        _ctx: Context,
        config: String,
        object: String,
        _other: Option<String>,
    ) -> Result<String, PluginError> {
        std::panic::set_hook(Box::new(|info| log(Level::Error, &info.to_string())));
        let mode = mode(&config).map_err(PluginError::InvalidConfig)?;
        match mode.as_str() {
            "echo" => Ok(object),
            "loop" => {
                let mut n = 0u64;
                loop {
                    n = std::hint::black_box(n.wrapping_add(1));
                }
            }
            "alloc" => {
                let mut hoard: Vec<Vec<u8>> = Vec::new();
                loop {
                    hoard.push(vec![1u8; 1 << 20]);
                    std::hint::black_box(&hoard);
                }
            }
            "panic" => panic!("hostile plugin panics on purpose"),
            // Only objects labelled MARK=true: one object of many fails.
            "panic-if-marked" => {
                let v: serde_json::Value = serde_json::from_str(&object)
                    .map_err(|e| PluginError::InvalidInput(e.to_string()))?;
                let meta = &v["metadata"];
                if meta["labels"][MARK] == "true" {
                    explode_on_marked_object(meta["name"].as_str().unwrap_or_default());
                }
                Ok(object)
            }
            "stack" => Ok(recurse(0).to_string()),
            "big" => {
                // 100 MB of output inside a valid object.
                let mut out = String::with_capacity(100 << 20);
                out.push_str(r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"x":""#);
                while out.len() < 100 << 20 {
                    out.push_str("xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
                }
                out.push_str(r#""}}"#);
                Ok(out)
            }
            "reject" => Err(PluginError::Rejected(
                "hostile plugin refuses this object".into(),
            )),
            "rename" => {
                let mut v: serde_json::Value = serde_json::from_str(&object)
                    .map_err(|e| PluginError::InvalidInput(e.to_string()))?;
                v["metadata"]["name"] = "renamed".into();
                Ok(v.to_string())
            }
            "not-json" => Ok("this is not JSON".into()),
            "log-flood" => {
                for i in 0..20_000 {
                    log(Level::Info, &format!("flood line {i}"));
                }
                Ok(object)
            }
            other => Err(PluginError::InvalidConfig(format!(
                "unknown mode {other:?}"
            ))),
        }
    }
}

export!(Hostile);
