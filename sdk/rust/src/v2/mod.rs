//! The 0.2 contract (`wit/v0.2/plugin.wit`, `syncweave:plugin@0.2.0`): everything of
//! 0.1, plus reads of other objects, a report beside the output, and context values
//! along a mutation chain. Opt in by implementing this module's role traits and
//! calling its macros; the crate-root traits and macros keep producing 0.1
//! components.
//!
//! ```
//! use syncweave_plugin::v2::{self, Context, Mutator, PluginInfo, ReadDeclaration, Report, Resource, Side, Status};
//! use syncweave_plugin::{Object, PluginError, Value};
//!
//! pub struct TeamLabel;
//!
//! impl Mutator for TeamLabel {
//!     fn info() -> PluginInfo {
//!         PluginInfo::new("team-label", "0.1.0", "labels objects with their namespace's team")
//!             .reads(ReadDeclaration::new(Side::Kcp, Resource::core("v1", "namespaces"), "the team label"))
//!     }
//!     fn mutate(ctx: &Context, _: &Value, object: &mut Object<'_>, _: Option<&Object<'_>>, report: &mut Report) -> Result<(), PluginError> {
//!         let ns = object.get_string("metadata.namespace");
//!         let namespace = v2::reads::get(Side::Kcp, &Resource::core("v1", "namespaces"), None, &ns)?;
//!         match namespace.map(|n| n.get_string("metadata.labels.team")) {
//!             Some(team) if !team.is_empty() => {
//!                 object.set("metadata.labels.team", team.as_str()).map_err(|e| PluginError::Internal(e.to_string()))?;
//!                 report.condition("TeamKnown", Status::True, "Labelled", format!("team {team}"));
//!                 report.set_context("example.com/team", team);
//!             }
//!             _ => {
//!                 report.warning("NoTeam", format!("namespace {ns} has no team label"));
//!             }
//!         }
//!         if let Some(zone) = ctx.value("example.com/zone") {
//!             object.set("metadata.labels.zone", zone).map_err(|e| PluginError::Internal(e.to_string()))?;
//!         }
//!         Ok(())
//!     }
//! }
//!
//! syncweave_plugin::v2::mutator!(TeamLabel);
//! # fn main() {
//! #     use syncweave_plugin::{json, testing::v2::{self as t, Env}};
//! #     let env = Env::new().objects(Side::Kcp, Resource::core("v1", "namespaces"),
//! #         [json!({"metadata": {"name": "ns", "labels": {"team": "a"}}})]);
//! #     let out = t::mutate::<TeamLabel>(&env, &json!(null), &json!({"metadata": {"name": "x", "namespace": "ns"}}), None).unwrap();
//! #     assert_eq!(out.output["metadata"]["labels"]["team"], "a");
//! #     assert_eq!(out.report.context(), [("example.com/team".to_string(), json!("a"))]);
//! # }
//! ```
//!
//! Reads go through [`reads::get`] and [`reads::list`]. The host answers only reads the
//! plugin declares in [`PluginInfo::reads`] and the operator allows, at most 64 per call
//! and 4 MiB together by default. The [`Report`] a role function fills is returned beside
//! its output; the host turns results and conditions into Events on the consumer's object (and
//! counts warnings on the PublishedResource's `PluginWarnings` condition),
//! and hands the context values on to the later steps of a mutation chain, which see
//! them in [`Context::values`].
//!
//! Unit tests run a 0.2 plugin natively with read fixtures and context values through
//! [`crate::testing::v2`].

pub mod reads;
mod report;
mod types;

pub use reads::{ReadError, Resource, Side};
pub use report::{CallResult, Condition, Report, Severity, Status};
pub use types::{Context, Fixture, PluginInfo, ReadDeclaration, ReadFixture};

pub use crate::{Direction, Object, ObjectName, PluginError, Value};

include!(concat!(env!("OUT_DIR"), "/contract_v2.rs"));

/// Rewrites one object on its way between kcp and the service cluster (0.2).
pub trait Mutator {
    /// Name, version, description, config schema, examples and read declarations.
    fn info() -> PluginInfo;

    /// Checks a config before it is used; the error names the bad field.
    fn validate_config(config: &Value) -> Result<(), String> {
        let _ = config;
        Ok(())
    }

    /// Edits `object` in place (see [`crate::Mutator::mutate`]); results, conditions and
    /// context values for later steps go into `report`.
    fn mutate(
        ctx: &Context,
        config: &Value,
        object: &mut Object<'_>,
        other: Option<&Object<'_>>,
        report: &mut Report,
    ) -> Result<(), PluginError>;
}

/// Decides what an object is called on the service cluster (0.2).
pub trait Namer {
    /// Name, version, description, config schema, examples and read declarations.
    fn info() -> PluginInfo;

    /// Checks a config before it is used; the error names the bad field.
    fn validate_config(config: &Value) -> Result<(), String> {
        let _ = config;
        Ok(())
    }

    /// The object's name and namespace on the service cluster.
    fn name(
        ctx: &Context,
        config: &Value,
        object: &Value,
        report: &mut Report,
    ) -> Result<ObjectName, PluginError>;
}

/// Transforms a CustomResourceDefinition before it is published to kcp. The same as
/// in 0.1 (a projection has no consumer to read for or report to); offered so that a
/// plugin can be written against 0.2 alone.
pub trait Projector {
    /// Name, version, description, config schema and examples (no reads).
    fn info() -> PluginInfo;

    /// Checks a config before it is used; the error names the bad field.
    fn validate_config(config: &Value) -> Result<(), String> {
        let _ = config;
        Ok(())
    }

    /// `crd` is an apiextensions.k8s.io/v1 CustomResourceDefinition; returns the
    /// projected CRD.
    fn project(config: &Value, crd: Value) -> Result<Value, PluginError>;
}

/// Renders a template into Kubernetes objects (0.2).
pub trait Renderer {
    /// Name, version, description, config schema, examples and read declarations.
    fn info() -> PluginInfo;

    /// Checks a config before it is used; the error names the bad field.
    fn validate_config(config: &Value) -> Result<(), String> {
        let _ = config;
        Ok(())
    }

    /// `values` is the JSON object exposed to the template (the context values are in
    /// `ctx`). Returns one object per rendered document.
    fn render(
        ctx: &Context,
        config: &Value,
        template: &str,
        values: &Value,
        report: &mut Report,
    ) -> Result<Vec<Value>, PluginError>;
}

/// Exports a [`v2::Mutator`](Mutator) as the component's `mutator` world of contract 0.2.
/// Call once, at the crate root, in a `cdylib` crate that depends on this SDK as
/// `syncweave-plugin`.
#[doc(inline)]
pub use crate::__syncweave_v2_mutator as mutator;

/// Exports a [`v2::Namer`](Namer) as the component's `namer` world of contract 0.2 (see
/// [`mutator!`]).
#[doc(inline)]
pub use crate::__syncweave_v2_namer as namer;

/// Exports a [`v2::Projector`](Projector) as the component's `projector` world of
/// contract 0.2 (see [`mutator!`]).
#[doc(inline)]
pub use crate::__syncweave_v2_projector as projector;

/// Exports a [`v2::Renderer`](Renderer) as the component's `renderer` world of contract
/// 0.2 (see [`mutator!`]).
#[doc(inline)]
pub use crate::__syncweave_v2_renderer as renderer;

#[doc(hidden)]
#[macro_export]
macro_rules! __syncweave_v2_mutator {
    ($plugin:ty) => {
        #[doc(hidden)]
        type __SyncweavePlugin = $plugin;

        /// Generated component bindings and export glue (syncweave_plugin::v2::mutator!).
        // Not when collecting doctests: wit-bindgen's generated docs carry examples.
        #[cfg(not(doctest))]
        #[doc(hidden)]
        #[allow(dead_code, unused_imports, clippy::all)]
        pub mod __syncweave_mutator {
            $crate::__syncweave_generate_v2!("mutator");
            $crate::__syncweave_glue_v2!();
            $crate::__syncweave_reads_v2!();

            pub struct Export;

            impl self::exports::syncweave::plugin::meta::Guest for Export {
                fn describe() -> __wit::PluginInfo {
                    __install();
                    __info(<super::__SyncweavePlugin as $crate::v2::Mutator>::info())
                }
                fn validate_config(config: ::std::string::String) -> ::core::result::Result<(), ::std::string::String> {
                    __install();
                    $crate::__private::validate_config(&config, <super::__SyncweavePlugin as $crate::v2::Mutator>::validate_config)
                }
            }

            impl self::exports::syncweave::plugin::mutation::Guest for Export {
                fn mutate(
                    ctx: __wit::Context,
                    config: ::std::string::String,
                    object: ::std::string::String,
                    other: ::core::option::Option<::std::string::String>,
                ) -> ::core::result::Result<self::exports::syncweave::plugin::mutation::Mutated, __wit::PluginError> {
                    __install();
                    $crate::__private::v2::mutate::<super::__SyncweavePlugin>(&__ctx(ctx), &config, &object, other.as_deref())
                        .map(|(object, report)| self::exports::syncweave::plugin::mutation::Mutated {
                            object,
                            report: __report(report),
                        })
                        .map_err(__err)
                }
            }

            #[cfg(target_arch = "wasm32")]
            export!(Export with_types_in self);
        }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __syncweave_v2_namer {
    ($plugin:ty) => {
        #[doc(hidden)]
        type __SyncweavePlugin = $plugin;

        /// Generated component bindings and export glue (syncweave_plugin::v2::namer!).
        // Not when collecting doctests: wit-bindgen's generated docs carry examples.
        #[cfg(not(doctest))]
        #[doc(hidden)]
        #[allow(dead_code, unused_imports, clippy::all)]
        pub mod __syncweave_namer {
            $crate::__syncweave_generate_v2!("namer");
            $crate::__syncweave_glue_v2!();
            $crate::__syncweave_reads_v2!();

            pub struct Export;

            impl self::exports::syncweave::plugin::meta::Guest for Export {
                fn describe() -> __wit::PluginInfo {
                    __install();
                    __info(<super::__SyncweavePlugin as $crate::v2::Namer>::info())
                }
                fn validate_config(config: ::std::string::String) -> ::core::result::Result<(), ::std::string::String> {
                    __install();
                    $crate::__private::validate_config(&config, <super::__SyncweavePlugin as $crate::v2::Namer>::validate_config)
                }
            }

            impl self::exports::syncweave::plugin::naming::Guest for Export {
                fn name(
                    ctx: __wit::Context,
                    config: ::std::string::String,
                    object: ::std::string::String,
                ) -> ::core::result::Result<self::exports::syncweave::plugin::naming::Named, __wit::PluginError> {
                    use self::exports::syncweave::plugin::naming as __n;
                    __install();
                    $crate::__private::v2::name::<super::__SyncweavePlugin>(&__ctx(ctx), &config, &object)
                        .map(|(n, report)| __n::Named {
                            name: __n::ObjectName {
                                name: n.name,
                                namespace: n.namespace,
                            },
                            report: __report(report),
                        })
                        .map_err(__err)
                }
            }

            #[cfg(target_arch = "wasm32")]
            export!(Export with_types_in self);
        }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __syncweave_v2_projector {
    ($plugin:ty) => {
        #[doc(hidden)]
        type __SyncweavePlugin = $plugin;

        /// Generated component bindings and export glue (syncweave_plugin::v2::projector!).
        // Not when collecting doctests: wit-bindgen's generated docs carry examples.
        #[cfg(not(doctest))]
        #[doc(hidden)]
        #[allow(dead_code, unused_imports, clippy::all)]
        pub mod __syncweave_projector {
            $crate::__syncweave_generate_v2!("projector");
            $crate::__syncweave_glue_v2!();

            /// The projector world has no reads: only the log sink.
            fn __install() {
                $crate::log::install_sink(__log);
            }

            pub struct Export;

            impl self::exports::syncweave::plugin::meta::Guest for Export {
                fn describe() -> __wit::PluginInfo {
                    __install();
                    __info(<super::__SyncweavePlugin as $crate::v2::Projector>::info())
                }
                fn validate_config(config: ::std::string::String) -> ::core::result::Result<(), ::std::string::String> {
                    __install();
                    $crate::__private::validate_config(&config, <super::__SyncweavePlugin as $crate::v2::Projector>::validate_config)
                }
            }

            impl self::exports::syncweave::plugin::projection::Guest for Export {
                fn project(
                    config: ::std::string::String,
                    crd: ::std::string::String,
                ) -> ::core::result::Result<::std::string::String, __wit::PluginError> {
                    __install();
                    $crate::__private::v2::project::<super::__SyncweavePlugin>(&config, &crd).map_err(__err)
                }
            }

            #[cfg(target_arch = "wasm32")]
            export!(Export with_types_in self);
        }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __syncweave_v2_renderer {
    ($plugin:ty) => {
        #[doc(hidden)]
        type __SyncweavePlugin = $plugin;

        /// Generated component bindings and export glue (syncweave_plugin::v2::renderer!).
        // Not when collecting doctests: wit-bindgen's generated docs carry examples.
        #[cfg(not(doctest))]
        #[doc(hidden)]
        #[allow(dead_code, unused_imports, clippy::all)]
        pub mod __syncweave_renderer {
            $crate::__syncweave_generate_v2!("renderer");
            $crate::__syncweave_glue_v2!();
            $crate::__syncweave_reads_v2!();

            pub struct Export;

            impl self::exports::syncweave::plugin::meta::Guest for Export {
                fn describe() -> __wit::PluginInfo {
                    __install();
                    __info(<super::__SyncweavePlugin as $crate::v2::Renderer>::info())
                }
                fn validate_config(config: ::std::string::String) -> ::core::result::Result<(), ::std::string::String> {
                    __install();
                    $crate::__private::validate_config(&config, <super::__SyncweavePlugin as $crate::v2::Renderer>::validate_config)
                }
            }

            impl self::exports::syncweave::plugin::rendering::Guest for Export {
                fn render(
                    ctx: __wit::Context,
                    config: ::std::string::String,
                    template: ::std::string::String,
                    values: ::std::string::String,
                ) -> ::core::result::Result<self::exports::syncweave::plugin::rendering::Rendered, __wit::PluginError> {
                    __install();
                    $crate::__private::v2::render::<super::__SyncweavePlugin>(&__ctx(ctx), &config, &template, &values)
                        .map(|(documents, report)| self::exports::syncweave::plugin::rendering::Rendered {
                            documents,
                            report: __report(report),
                        })
                        .map_err(__err)
                }
            }

            #[cfg(target_arch = "wasm32")]
            export!(Export with_types_in self);
        }
    };
}

/// Conversions between the generated 0.2 WIT types (in the calling module) and this
/// module's types; shared by the v2 role macros.
#[doc(hidden)]
#[macro_export]
macro_rules! __syncweave_glue_v2 {
    () => {
        use self::syncweave::plugin::types as __wit;

        fn __side(side: __wit::Side) -> $crate::v2::Side {
            match side {
                __wit::Side::Kcp => $crate::v2::Side::Kcp,
                __wit::Side::Service => $crate::v2::Side::Service,
            }
        }

        fn __side_wit(side: $crate::v2::Side) -> __wit::Side {
            match side {
                $crate::v2::Side::Kcp => __wit::Side::Kcp,
                $crate::v2::Side::Service => __wit::Side::Service,
            }
        }

        fn __resource_wit(r: &$crate::v2::Resource) -> __wit::Resource {
            __wit::Resource {
                group: r.group.clone(),
                version: r.version.clone(),
                resource: r.resource.clone(),
            }
        }

        fn __ctx(ctx: __wit::Context) -> $crate::v2::Context {
            $crate::v2::Context {
                cluster_name: ctx.cluster_name,
                cluster_path: ctx.cluster_path,
                direction: match ctx.direction {
                    __wit::Direction::KcpToService => $crate::Direction::KcpToService,
                    __wit::Direction::ServiceToKcp => $crate::Direction::ServiceToKcp,
                },
                owner: ctx.owner,
                values: ctx.values.into_iter().map(|e| (e.key, e.value)).collect(),
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

        fn __entries(entries: ::std::vec::Vec<(::std::string::String, ::std::string::String)>) -> ::std::vec::Vec<__wit::ContextEntry> {
            entries
                .into_iter()
                .map(|(key, value)| __wit::ContextEntry { key, value })
                .collect()
        }

        fn __report(report: $crate::__private::v2::RawReport) -> __wit::Report {
            __wit::Report {
                results: report
                    .results
                    .into_iter()
                    .map(|(warning, reason, message)| __wit::CallResult {
                        severity: if warning { __wit::Severity::Warning } else { __wit::Severity::Normal },
                        reason,
                        message,
                    })
                    .collect(),
                conditions: report
                    .conditions
                    .into_iter()
                    .map(|(type_, status, reason, message)| __wit::Condition { type_, status, reason, message })
                    .collect(),
                set_context: __entries(report.set_context),
            }
        }

        fn __info(info: $crate::v2::PluginInfo) -> __wit::PluginInfo {
            let raw = $crate::__private::v2::RawInfo::from(info);
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
                        reads: f
                            .reads
                            .into_iter()
                            .map(|(side, resource, objects)| __wit::ReadFixture {
                                side: __side_wit(side),
                                resource: __resource_wit(&resource),
                                objects,
                            })
                            .collect(),
                        values: __entries(f.values),
                    })
                    .collect(),
                reads: raw
                    .reads
                    .into_iter()
                    .map(|(side, resource, purpose)| __wit::ReadDeclaration {
                        side: __side_wit(side),
                        resource: __resource_wit(&resource),
                        purpose,
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

/// Routes [`reads`] to the component's `reads` import; for the worlds that have it.
#[doc(hidden)]
#[macro_export]
macro_rules! __syncweave_reads_v2 {
    () => {
        fn __read_err(e: self::syncweave::plugin::reads::ReadError) -> $crate::v2::ReadError {
            use self::syncweave::plugin::reads::ReadError as __E;
            match e {
                __E::NotAllowed(m) => $crate::v2::ReadError::NotAllowed(m),
                __E::NotServed(m) => $crate::v2::ReadError::NotServed(m),
                __E::Unavailable(m) => $crate::v2::ReadError::Unavailable(m),
                __E::Invalid(m) => $crate::v2::ReadError::Invalid(m),
            }
        }

        fn __read_get(
            side: $crate::v2::Side,
            resource: &$crate::v2::Resource,
            namespace: ::core::option::Option<&str>,
            name: &str,
        ) -> ::core::result::Result<::core::option::Option<::std::string::String>, $crate::v2::ReadError> {
            self::syncweave::plugin::reads::get(__side_wit(side), &__resource_wit(resource), namespace, name)
                .map_err(__read_err)
        }

        fn __read_list(
            side: $crate::v2::Side,
            resource: &$crate::v2::Resource,
            namespace: ::core::option::Option<&str>,
            label_selector: ::core::option::Option<&str>,
        ) -> ::core::result::Result<::std::vec::Vec<::std::string::String>, $crate::v2::ReadError> {
            self::syncweave::plugin::reads::list(__side_wit(side), &__resource_wit(resource), namespace, label_selector)
                .map_err(__read_err)
        }

        /// Routes logs and reads to the host; called before any plugin code runs.
        fn __install() {
            $crate::log::install_sink(__log);
            $crate::v2::reads::install_host($crate::v2::reads::HostReads {
                get: __read_get,
                list: __read_list,
            });
        }
    };
}
