//! Host bindings for the plugin worlds, generated from /wit: one module per
//! contract version ([`v0_1`] from `wit/plugin.wit`, [`v0_2`] from
//! `wit/v0.2/plugin.wit`). Within a version the first world owns the shared
//! `types`, `host-log` (and in 0.2 `reads`) modules; the others reuse them
//! through `with`, so one Rust type and one host implementation serve every
//! world of that version.
//!
//! The 0.1 modules are also re-exported at this level (`bindings::mutator`,
//! `bindings::types`, …), where they were before 0.2 existed.

/// `syncweave:plugin@0.1.0`.
pub mod v0_1 {
    pub mod mutator {
        wasmtime::component::bindgen!({
            path: "../../wit",
            world: "mutator",
        });
    }

    pub mod namer {
        wasmtime::component::bindgen!({
            path: "../../wit",
            world: "namer",
            with: {
                "syncweave:plugin/types": super::mutator::syncweave::plugin::types,
                "syncweave:plugin/host-log": super::mutator::syncweave::plugin::host_log,
            },
        });
    }

    pub mod projector {
        wasmtime::component::bindgen!({
            path: "../../wit",
            world: "projector",
            with: {
                "syncweave:plugin/types": super::mutator::syncweave::plugin::types,
                "syncweave:plugin/host-log": super::mutator::syncweave::plugin::host_log,
            },
        });
    }

    pub mod renderer {
        wasmtime::component::bindgen!({
            path: "../../wit",
            world: "renderer",
            with: {
                "syncweave:plugin/types": super::mutator::syncweave::plugin::types,
                "syncweave:plugin/host-log": super::mutator::syncweave::plugin::host_log,
            },
        });
    }

    pub use mutator::syncweave::plugin::host_log;
    pub use mutator::syncweave::plugin::types;
}

/// `syncweave:plugin@0.2.0`.
pub mod v0_2 {
    pub mod mutator {
        wasmtime::component::bindgen!({
            path: "../../wit/v0.2",
            world: "mutator",
        });
    }

    pub mod namer {
        wasmtime::component::bindgen!({
            path: "../../wit/v0.2",
            world: "namer",
            with: {
                "syncweave:plugin/types": super::mutator::syncweave::plugin::types,
                "syncweave:plugin/host-log": super::mutator::syncweave::plugin::host_log,
                "syncweave:plugin/reads": super::mutator::syncweave::plugin::reads,
            },
        });
    }

    pub mod projector {
        wasmtime::component::bindgen!({
            path: "../../wit/v0.2",
            world: "projector",
            with: {
                "syncweave:plugin/types": super::mutator::syncweave::plugin::types,
                "syncweave:plugin/host-log": super::mutator::syncweave::plugin::host_log,
            },
        });
    }

    pub mod renderer {
        wasmtime::component::bindgen!({
            path: "../../wit/v0.2",
            world: "renderer",
            with: {
                "syncweave:plugin/types": super::mutator::syncweave::plugin::types,
                "syncweave:plugin/host-log": super::mutator::syncweave::plugin::host_log,
                "syncweave:plugin/reads": super::mutator::syncweave::plugin::reads,
            },
        });
    }

    pub use mutator::syncweave::plugin::host_log;
    pub use mutator::syncweave::plugin::reads;
    pub use mutator::syncweave::plugin::types;
}

pub use v0_1::{host_log, mutator, namer, projector, renderer, types};
