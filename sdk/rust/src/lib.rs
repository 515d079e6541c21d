//! Guest SDK for syncweave plugins.
//!
//! A plugin is a WebAssembly component that targets one world of the contract in
//! `wit/plugin.wit` (mutator, namer, projector or renderer). With this crate a plugin
//! is a plain Rust type implementing one role trait, plus one macro call:
//!
//! ```
//! use syncweave_plugin::{Context, Mutator, Object, PluginError, PluginInfo, Value};
//!
//! pub struct AddLabel;
//!
//! impl Mutator for AddLabel {
//!     fn info() -> PluginInfo {
//!         syncweave_plugin::plugin_info!("adds a fixed label")
//!     }
//!     fn mutate(_: &Context, config: &Value, object: &mut Object<'_>, _: Option<&Object<'_>>) -> Result<(), PluginError> {
//!         object.set("metadata.labels.team", config["team"].clone())
//!             .map_err(|e| PluginError::Internal(e.to_string()))
//!     }
//! }
//!
//! syncweave_plugin::mutator!(AddLabel);
//! # fn main() {
//! #     let out = syncweave_plugin::testing::mutate::<AddLabel>(
//! #         &Context::fixture(), &syncweave_plugin::json!({"team": "a"}), &syncweave_plugin::json!({}), None);
//! #     assert_eq!(out.unwrap(), syncweave_plugin::json!({"metadata": {"labels": {"team": "a"}}}));
//! # }
//! ```
//!
//! The macro generates the component bindings (with wit-bindgen, inside a hidden
//! module of the plugin crate), parses the JSON strings that cross the boundary,
//! serialises the result and maps errors to the contract's `plugin-error`. Build the
//! crate as a `cdylib` for `wasm32-unknown-unknown` and turn it into a component with
//! `syncweave plugin build <crate-dir>`.
//!
//! Helpers: [`Object`] (the object a mutator edits, parsed only as far as it is used),
//! [`path`] (gjson/sjson-style paths), [`patch`] (JSON merge patch and JSON
//! patch), [`log`] (host logging) and [`testing`] (run a plugin natively in unit tests).
//!
//! The traits and macros at the crate root build components for contract 0.1
//! (`syncweave:plugin@0.1.0`). Contract 0.2 adds reads of other objects, a report of
//! results and conditions beside the output, and context values along a mutation chain:
//! opt in with the traits and macros of [`v2`].

extern crate self as syncweave_plugin;

pub mod log;
mod object;
pub mod patch;
pub mod path;
/// The host's own label-selector parser and report checks (std only), so that the
/// test harness decides exactly as the host does.
#[allow(dead_code)]
#[path = "../../../host/runtime/src/rules.rs"]
mod rules;
pub mod testing;
mod types;
pub mod v2;

pub use object::{Object, ObjectError};
pub use serde_json::{self, Value, json};
pub use types::{Context, Direction, Fixture, ObjectName, PluginError, PluginInfo};

include!(concat!(env!("OUT_DIR"), "/contract.rs"));

/// Rewrites one object on its way between kcp and the service cluster.
pub trait Mutator {
    /// Name, version, description, config schema and examples.
    fn info() -> PluginInfo;

    /// Checks a config before it is used; the error names the bad field.
    fn validate_config(config: &Value) -> Result<(), String> {
        let _ = config;
        Ok(())
    }

    /// Edits `object` in place. `other` is the object's counterpart on the other
    /// side, if it exists yet. Both are parsed only as far as they are read (see
    /// [`Object`]); [`Object::value_mut`] gives the whole object as a [`Value`].
    fn mutate(
        ctx: &Context,
        config: &Value,
        object: &mut Object<'_>,
        other: Option<&Object<'_>>,
    ) -> Result<(), PluginError>;
}

/// Decides what an object is called on the service cluster.
pub trait Namer {
    fn info() -> PluginInfo;

    fn validate_config(config: &Value) -> Result<(), String> {
        let _ = config;
        Ok(())
    }

    fn name(ctx: &Context, config: &Value, object: &Value) -> Result<ObjectName, PluginError>;
}

/// Transforms a CustomResourceDefinition before it is published to kcp.
pub trait Projector {
    fn info() -> PluginInfo;

    fn validate_config(config: &Value) -> Result<(), String> {
        let _ = config;
        Ok(())
    }

    /// `crd` is an apiextensions.k8s.io/v1 CustomResourceDefinition; returns the
    /// projected CRD.
    fn project(config: &Value, crd: Value) -> Result<Value, PluginError>;
}

/// Renders a template into Kubernetes objects.
pub trait Renderer {
    fn info() -> PluginInfo;

    fn validate_config(config: &Value) -> Result<(), String> {
        let _ = config;
        Ok(())
    }

    /// `values` is the JSON object exposed to the template. Returns one object per
    /// rendered document.
    fn render(
        ctx: &Context,
        config: &Value,
        template: &str,
        values: &Value,
    ) -> Result<Vec<Value>, PluginError>;
}

/// Deserialises a config into a typed struct; the error names the bad field and
/// becomes [`PluginError::InvalidConfig`].
pub fn parse_config<T: serde::de::DeserializeOwned>(config: &Value) -> Result<T, PluginError> {
    T::deserialize(config).map_err(|err| PluginError::InvalidConfig(err.to_string()))
}

/// A [`PluginInfo`] named and versioned after the calling crate (`CARGO_PKG_NAME`,
/// `CARGO_PKG_VERSION`).
#[macro_export]
macro_rules! plugin_info {
    ($description:expr) => {
        $crate::PluginInfo::new(
            ::core::env!("CARGO_PKG_NAME"),
            ::core::env!("CARGO_PKG_VERSION"),
            $description,
        )
    };
}

/// Exports a [`Mutator`] as the component's `mutator` world. Call once, at the crate
/// root, in a `cdylib` crate that depends on this SDK as `syncweave-plugin`.
#[macro_export]
macro_rules! mutator {
    ($plugin:ty) => {
        #[doc(hidden)]
        type __SyncweavePlugin = $plugin;

        /// Generated component bindings and export glue (syncweave_plugin::mutator!).
        // Not when collecting doctests: wit-bindgen's generated docs carry examples.
        #[cfg(not(doctest))]
        #[doc(hidden)]
        #[allow(dead_code, unused_imports, clippy::all)]
        pub mod __syncweave_mutator {
            $crate::__syncweave_generate!("mutator");
            $crate::__syncweave_glue!();

            pub struct Export;

            impl self::exports::syncweave::plugin::meta::Guest for Export {
                fn describe() -> __wit::PluginInfo {
                    $crate::log::install_sink(__log);
                    __info(<super::__SyncweavePlugin as $crate::Mutator>::info())
                }
                fn validate_config(config: ::std::string::String) -> ::core::result::Result<(), ::std::string::String> {
                    $crate::log::install_sink(__log);
                    $crate::__private::validate_config(&config, <super::__SyncweavePlugin as $crate::Mutator>::validate_config)
                }
            }

            impl self::exports::syncweave::plugin::mutation::Guest for Export {
                fn mutate(
                    ctx: __wit::Context,
                    config: ::std::string::String,
                    object: ::std::string::String,
                    other: ::core::option::Option<::std::string::String>,
                ) -> ::core::result::Result<::std::string::String, __wit::PluginError> {
                    $crate::log::install_sink(__log);
                    $crate::__private::mutate::<super::__SyncweavePlugin>(&__ctx(ctx), &config, &object, other.as_deref())
                        .map_err(__err)
                }
            }

            #[cfg(target_arch = "wasm32")]
            export!(Export with_types_in self);
        }
    };
}

/// Exports a [`Namer`] as the component's `namer` world (see [`mutator!`]).
#[macro_export]
macro_rules! namer {
    ($plugin:ty) => {
        #[doc(hidden)]
        type __SyncweavePlugin = $plugin;

        /// Generated component bindings and export glue (syncweave_plugin::namer!).
        // Not when collecting doctests: wit-bindgen's generated docs carry examples.
        #[cfg(not(doctest))]
        #[doc(hidden)]
        #[allow(dead_code, unused_imports, clippy::all)]
        pub mod __syncweave_namer {
            $crate::__syncweave_generate!("namer");
            $crate::__syncweave_glue!();

            pub struct Export;

            impl self::exports::syncweave::plugin::meta::Guest for Export {
                fn describe() -> __wit::PluginInfo {
                    $crate::log::install_sink(__log);
                    __info(<super::__SyncweavePlugin as $crate::Namer>::info())
                }
                fn validate_config(config: ::std::string::String) -> ::core::result::Result<(), ::std::string::String> {
                    $crate::log::install_sink(__log);
                    $crate::__private::validate_config(&config, <super::__SyncweavePlugin as $crate::Namer>::validate_config)
                }
            }

            impl self::exports::syncweave::plugin::naming::Guest for Export {
                fn name(
                    ctx: __wit::Context,
                    config: ::std::string::String,
                    object: ::std::string::String,
                ) -> ::core::result::Result<self::exports::syncweave::plugin::naming::ObjectName, __wit::PluginError> {
                    $crate::log::install_sink(__log);
                    $crate::__private::name::<super::__SyncweavePlugin>(&__ctx(ctx), &config, &object)
                        .map(|n| self::exports::syncweave::plugin::naming::ObjectName {
                            name: n.name,
                            namespace: n.namespace,
                        })
                        .map_err(__err)
                }
            }

            #[cfg(target_arch = "wasm32")]
            export!(Export with_types_in self);
        }
    };
}

/// Exports a [`Projector`] as the component's `projector` world (see [`mutator!`]).
#[macro_export]
macro_rules! projector {
    ($plugin:ty) => {
        #[doc(hidden)]
        type __SyncweavePlugin = $plugin;

        /// Generated component bindings and export glue (syncweave_plugin::projector!).
        // Not when collecting doctests: wit-bindgen's generated docs carry examples.
        #[cfg(not(doctest))]
        #[doc(hidden)]
        #[allow(dead_code, unused_imports, clippy::all)]
        pub mod __syncweave_projector {
            $crate::__syncweave_generate!("projector");
            $crate::__syncweave_glue!();

            pub struct Export;

            impl self::exports::syncweave::plugin::meta::Guest for Export {
                fn describe() -> __wit::PluginInfo {
                    $crate::log::install_sink(__log);
                    __info(<super::__SyncweavePlugin as $crate::Projector>::info())
                }
                fn validate_config(config: ::std::string::String) -> ::core::result::Result<(), ::std::string::String> {
                    $crate::log::install_sink(__log);
                    $crate::__private::validate_config(&config, <super::__SyncweavePlugin as $crate::Projector>::validate_config)
                }
            }

            impl self::exports::syncweave::plugin::projection::Guest for Export {
                fn project(
                    config: ::std::string::String,
                    crd: ::std::string::String,
                ) -> ::core::result::Result<::std::string::String, __wit::PluginError> {
                    $crate::log::install_sink(__log);
                    $crate::__private::project::<super::__SyncweavePlugin>(&config, &crd).map_err(__err)
                }
            }

            #[cfg(target_arch = "wasm32")]
            export!(Export with_types_in self);
        }
    };
}

/// Exports a [`Renderer`] as the component's `renderer` world (see [`mutator!`]).
#[macro_export]
macro_rules! renderer {
    ($plugin:ty) => {
        #[doc(hidden)]
        type __SyncweavePlugin = $plugin;

        /// Generated component bindings and export glue (syncweave_plugin::renderer!).
        // Not when collecting doctests: wit-bindgen's generated docs carry examples.
        #[cfg(not(doctest))]
        #[doc(hidden)]
        #[allow(dead_code, unused_imports, clippy::all)]
        pub mod __syncweave_renderer {
            $crate::__syncweave_generate!("renderer");
            $crate::__syncweave_glue!();

            pub struct Export;

            impl self::exports::syncweave::plugin::meta::Guest for Export {
                fn describe() -> __wit::PluginInfo {
                    $crate::log::install_sink(__log);
                    __info(<super::__SyncweavePlugin as $crate::Renderer>::info())
                }
                fn validate_config(config: ::std::string::String) -> ::core::result::Result<(), ::std::string::String> {
                    $crate::log::install_sink(__log);
                    $crate::__private::validate_config(&config, <super::__SyncweavePlugin as $crate::Renderer>::validate_config)
                }
            }

            impl self::exports::syncweave::plugin::rendering::Guest for Export {
                fn render(
                    ctx: __wit::Context,
                    config: ::std::string::String,
                    template: ::std::string::String,
                    values: ::std::string::String,
                ) -> ::core::result::Result<::std::vec::Vec<::std::string::String>, __wit::PluginError> {
                    $crate::log::install_sink(__log);
                    $crate::__private::render::<super::__SyncweavePlugin>(&__ctx(ctx), &config, &template, &values)
                        .map_err(__err)
                }
            }

            #[cfg(target_arch = "wasm32")]
            export!(Export with_types_in self);
        }
    };
}

/// Conversions between the generated WIT types (in the calling module) and this
/// crate's types; shared by the role macros.
#[doc(hidden)]
#[macro_export]
macro_rules! __syncweave_glue {
    () => {
        use self::syncweave::plugin::types as __wit;

        fn __ctx(ctx: __wit::Context) -> $crate::Context {
            $crate::Context {
                cluster_name: ctx.cluster_name,
                cluster_path: ctx.cluster_path,
                direction: match ctx.direction {
                    __wit::Direction::KcpToService => $crate::Direction::KcpToService,
                    __wit::Direction::ServiceToKcp => $crate::Direction::ServiceToKcp,
                },
                owner: ctx.owner,
            }
        }

        fn __err(err: $crate::PluginError) -> __wit::PluginError {
            match err {
                $crate::PluginError::InvalidConfig(m) => __wit::PluginError::InvalidConfig(m),
                $crate::PluginError::InvalidInput(m) => __wit::PluginError::InvalidInput(m),
                $crate::PluginError::Rejected(m) => __wit::PluginError::Rejected(m),
                $crate::PluginError::Internal(m) => __wit::PluginError::Internal(m),
            }
        }

        fn __info(info: $crate::PluginInfo) -> __wit::PluginInfo {
            let raw = $crate::__private::RawInfo::from(info);
            __wit::PluginInfo {
                name: raw.name,
                version: raw.version,
                description: raw.description,
                config_schema: raw.config_schema,
                examples: raw
                    .examples
                    .into_iter()
                    .map(|f| __wit::Fixture {
                        name: f.name,
                        config: f.config,
                        input: f.input,
                        expected: f.expected,
                    })
                    .collect(),
            }
        }

        fn __log(level: $crate::log::Level, message: &str) {
            use self::syncweave::plugin::host_log as __h;
            let level = match level {
                $crate::log::Level::Trace => __h::Level::Trace,
                $crate::log::Level::Debug => __h::Level::Debug,
                $crate::log::Level::Info => __h::Level::Info,
                $crate::log::Level::Warn => __h::Level::Warn,
                $crate::log::Level::Error => __h::Level::Error,
            };
            __h::log(level, message);
        }
    };
}

/// String-level adapters behind the role macros: JSON in, trait call, JSON out. Not a
/// stable API.
#[doc(hidden)]
pub mod __private {
    use super::*;

    pub use wit_bindgen;

    /// The contract's plugin-info with JSON already serialised.
    pub struct RawInfo {
        pub name: String,
        pub version: String,
        pub description: String,
        pub config_schema: Option<String>,
        pub examples: Vec<RawFixture>,
    }

    pub struct RawFixture {
        pub name: String,
        pub config: String,
        pub input: String,
        pub expected: Option<String>,
    }

    impl From<PluginInfo> for RawInfo {
        fn from(info: PluginInfo) -> Self {
            RawInfo {
                name: info.name,
                version: info.version,
                description: info.description,
                config_schema: info.config_schema.map(|s| s.to_string()),
                examples: info
                    .examples
                    .into_iter()
                    .map(|f| RawFixture {
                        name: f.name,
                        config: f.config.to_string(),
                        input: f.input.to_string(),
                        expected: f.expected.map(|e| e.to_string()),
                    })
                    .collect(),
            }
        }
    }

    /// An empty config (the host passes "" when none is set) is JSON `null`.
    pub fn parse_config(config: &str) -> Result<Value, String> {
        if config.trim().is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_str(config).map_err(|err| format!("the config is not valid JSON: {err}"))
    }

    fn parse_input(what: &str, text: &str) -> Result<Value, PluginError> {
        serde_json::from_str(text).map_err(|err| {
            PluginError::InvalidInput(format!("the {what} is not valid JSON: {err}"))
        })
    }

    fn parse_object<'a>(what: &str, text: &'a str) -> Result<Object<'a>, PluginError> {
        Object::parse(text).map_err(|err| PluginError::InvalidInput(format!("the {what} {err}")))
    }

    fn config(config: &str) -> Result<Value, PluginError> {
        parse_config(config).map_err(PluginError::InvalidConfig)
    }

    pub fn validate_config(
        config: &str,
        validate: fn(&Value) -> Result<(), String>,
    ) -> Result<(), String> {
        validate(&parse_config(config)?)
    }

    pub fn mutate<P: Mutator>(
        ctx: &Context,
        config_json: &str,
        object: &str,
        other: Option<&str>,
    ) -> Result<String, PluginError> {
        let config = config(config_json)?;
        let mut object = parse_object("object", object)?;
        let other = other.map(|o| parse_object("other object", o)).transpose()?;
        P::mutate(ctx, &config, &mut object, other.as_ref())?;
        // Fields are read lazily, so malformed JSON surfaces only where it was read.
        for (what, obj) in [("object", Some(&object)), ("other object", other.as_ref())] {
            if let Some(err) = obj.and_then(Object::error) {
                return Err(PluginError::InvalidInput(format!(
                    "the {what} is not valid JSON: {err}"
                )));
            }
        }
        Ok(object.to_json())
    }

    pub fn name<P: Namer>(
        ctx: &Context,
        config_json: &str,
        object: &str,
    ) -> Result<ObjectName, PluginError> {
        let config = config(config_json)?;
        let object = parse_input("object", object)?;
        P::name(ctx, &config, &object)
    }

    pub fn project<P: Projector>(config_json: &str, crd: &str) -> Result<String, PluginError> {
        let config = config(config_json)?;
        let crd = parse_input("CRD", crd)?;
        Ok(P::project(&config, crd)?.to_string())
    }

    pub fn render<P: Renderer>(
        ctx: &Context,
        config_json: &str,
        template: &str,
        values: &str,
    ) -> Result<Vec<String>, PluginError> {
        let config = config(config_json)?;
        let values = parse_input("values", values)?;
        Ok(P::render(ctx, &config, template, &values)?
            .iter()
            .map(Value::to_string)
            .collect())
    }

    /// The 0.2 adapters: the same conversions, plus the report.
    pub mod v2 {
        use super::{config, parse_input, parse_object};
        use crate::v2::{self, Context, Report, Resource, Side};
        use crate::{ObjectName, PluginError, Value};

        /// The 0.2 plugin-info with JSON already serialised.
        pub struct RawInfo {
            pub name: String,
            pub version: String,
            pub description: String,
            pub config_schema: Option<String>,
            pub examples: Vec<RawFixture>,
            /// (side, resource, purpose).
            pub reads: Vec<(Side, Resource, String)>,
        }

        pub struct RawFixture {
            pub name: String,
            pub config: String,
            pub input: String,
            pub expected: Option<String>,
            /// (side, resource, objects as JSON).
            pub reads: Vec<(Side, Resource, Vec<String>)>,
            /// (key, JSON value).
            pub values: Vec<(String, String)>,
        }

        impl From<v2::PluginInfo> for RawInfo {
            fn from(info: v2::PluginInfo) -> Self {
                RawInfo {
                    name: info.name,
                    version: info.version,
                    description: info.description,
                    config_schema: info.config_schema.map(|s| s.to_string()),
                    examples: info
                        .examples
                        .into_iter()
                        .map(|f| RawFixture {
                            name: f.name,
                            config: f.config.to_string(),
                            input: f.input.to_string(),
                            expected: f.expected.map(|e| e.to_string()),
                            reads: f
                                .reads
                                .into_iter()
                                .map(|r| {
                                    let objects = r.objects.iter().map(Value::to_string).collect();
                                    (r.side, r.resource, objects)
                                })
                                .collect(),
                            values: f
                                .values
                                .into_iter()
                                .map(|(k, v)| (k, v.to_string()))
                                .collect(),
                        })
                        .collect(),
                    reads: info
                        .reads
                        .into_iter()
                        .map(|d| (d.side, d.resource, d.purpose))
                        .collect(),
                }
            }
        }

        /// The report with JSON already serialised.
        #[derive(Debug, Default, PartialEq)]
        pub struct RawReport {
            /// (is a warning, reason, message).
            pub results: Vec<(bool, String, String)>,
            /// (type, status, reason, message).
            pub conditions: Vec<(String, String, String, String)>,
            /// (key, JSON value).
            pub set_context: Vec<(String, String)>,
        }

        pub fn mutate<P: v2::Mutator>(
            ctx: &Context,
            config_json: &str,
            object: &str,
            other: Option<&str>,
        ) -> Result<(String, RawReport), PluginError> {
            let config = config(config_json)?;
            let mut object = parse_object("object", object)?;
            let other = other.map(|o| parse_object("other object", o)).transpose()?;
            let mut report = Report::default();
            P::mutate(ctx, &config, &mut object, other.as_ref(), &mut report)?;
            for (what, obj) in [("object", Some(&object)), ("other object", other.as_ref())] {
                if let Some(err) = obj.and_then(crate::Object::error) {
                    return Err(PluginError::InvalidInput(format!(
                        "the {what} is not valid JSON: {err}"
                    )));
                }
            }
            Ok((object.to_json(), report.into_raw()))
        }

        pub fn name<P: v2::Namer>(
            ctx: &Context,
            config_json: &str,
            object: &str,
        ) -> Result<(ObjectName, RawReport), PluginError> {
            let config = config(config_json)?;
            let object = parse_input("object", object)?;
            let mut report = Report::default();
            let name = P::name(ctx, &config, &object, &mut report)?;
            Ok((name, report.into_raw()))
        }

        pub fn project<P: v2::Projector>(config_json: &str, crd: &str) -> Result<String, PluginError> {
            let config = config(config_json)?;
            let crd = parse_input("CRD", crd)?;
            Ok(P::project(&config, crd)?.to_string())
        }

        pub fn render<P: v2::Renderer>(
            ctx: &Context,
            config_json: &str,
            template: &str,
            values: &str,
        ) -> Result<(Vec<String>, RawReport), PluginError> {
            let config = config(config_json)?;
            let values = parse_input("values", values)?;
            let mut report = Report::default();
            let docs = P::render(ctx, &config, template, &values, &mut report)?
                .iter()
                .map(Value::to_string)
                .collect();
            Ok((docs, report.into_raw()))
        }
    }
}
