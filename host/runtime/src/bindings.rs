//! Host bindings for the four plugin worlds, generated from /wit. The first
//! world owns the shared `types` and `host-log` modules; the others reuse
//! them through `with`, so one Rust type and one host-log implementation
//! serve every world.

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
