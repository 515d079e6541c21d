//! syncweave: one Rust host for kcp's api-syncagent and init-agent roles,
//! with projection, mutation, naming and rendering run as Wasm components.
//!
//! The data path, top to bottom:
//! kcp watch ([`sync::controller`], driven by [`watch`]) → work queue and
//! workers ([`runner`]) → plugin chain ([`plugin_chain`]) → service-cluster
//! apply ([`sync::syncer`]) → status back ([`sync::syncer`]). Every
//! long-running loop runs under [`supervise`].
//!
//! Modules are grouped below from the foundations up; no module uses one
//! from a group below its own, and no two modules use each other, directly
//! or through others (the unit test `no_module_import_cycles` keeps it so).

// Foundations: no knowledge of kcp or of plugins.
pub mod backoff;
pub mod logging;
pub mod malloc;
pub mod metrics;
pub mod selector;
pub mod validation;
pub mod version;

// Talking to API servers and running controllers: the request stack,
// leadership, watches, health, Events; supervised loops and the keyed runner
// (scheduler + workers) every controller uses.
pub mod client;
pub mod fence;
pub mod health;
pub mod kubeconfig;
pub mod leader;
pub mod liveness;
pub mod namespace;
pub mod recorder;
pub mod runner;
pub mod supervise;
pub mod watch;

// The API types (PublishedResource, InitTarget, WasmPlugin, kcp's) and the
// kcp side (endpoint slice → virtual-workspace clients).
pub mod apis;
pub mod kcp;

// Plugins: fetching their bytes, the WasmPlugin controller, the chain a
// PublishedResource runs, the inputs of failed calls kept for replay. The
// Wasm runtime itself is the `syncweave-runtime` crate; the embedded
// built-ins are `syncweave-builtins`.
pub mod plugin_capture;
pub mod plugin_controller;
pub mod plugin_fetch;

// The controllers: sync (kcp ⇄ service cluster), publishing (schemas into
// the APIExport), init (workspace initialisation), the chain in between.
pub mod init;
pub mod plugin_chain;
pub mod publish;
pub mod sync;

// The binary's edge: the agents, their servers and the command line.
pub mod agent;
pub mod cli;
pub mod cluster;
pub mod plugin_cli;
pub mod serve;

#[cfg(test)]
mod layering {
    use std::collections::{BTreeMap, BTreeSet};
    use std::path::Path;

    /// Top-level module → the top-level modules its non-test code names
    /// (`crate::x`, `crate::{x, y}`).
    fn imports() -> BTreeMap<String, BTreeSet<String>> {
        fn walk(dir: &Path, top: Option<&str>, out: &mut BTreeMap<String, BTreeSet<String>>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                let name = path.file_stem().unwrap().to_string_lossy().to_string();
                let module = top.map(str::to_string).unwrap_or(name.clone());
                if path.is_dir() {
                    walk(&path, Some(&module), out);
                    continue;
                }
                if path.extension().is_none_or(|e| e != "rs") || module == "lib" || module == "main"
                {
                    continue;
                }
                let text = std::fs::read_to_string(&path).unwrap();
                let code = text.split("#[cfg(test)]").next().unwrap_or("");
                let uses = out.entry(module.clone()).or_default();
                for line in code.lines() {
                    let line = line.split("//").next().unwrap_or("");
                    for (i, _) in line.match_indices("crate::") {
                        let rest = &line[i + "crate::".len()..];
                        let names: Vec<&str> = match rest.strip_prefix('{') {
                            Some(list) => list.split('}').next().unwrap_or("").split(',').collect(),
                            None => vec![rest],
                        };
                        for n in names {
                            let n: String = n
                                .trim()
                                .chars()
                                .take_while(|c| c.is_ascii_lowercase() || *c == '_')
                                .collect();
                            if !n.is_empty() && n != module {
                                uses.insert(n);
                            }
                        }
                    }
                }
            }
        }
        let mut out = BTreeMap::new();
        walk(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
            None,
            &mut out,
        );
        out
    }

    #[test]
    fn no_module_import_cycles() {
        let graph = imports();
        assert!(graph.contains_key("sync") && graph.contains_key("plugin_chain"));
        // Depth-first search; a module met again while on the path closes a cycle.
        fn visit<'a>(
            m: &'a str,
            graph: &'a BTreeMap<String, BTreeSet<String>>,
            path: &mut Vec<&'a str>,
            done: &mut BTreeSet<&'a str>,
        ) -> Option<Vec<String>> {
            if let Some(at) = path.iter().position(|p| *p == m) {
                let mut cycle: Vec<String> = path[at..].iter().map(|s| s.to_string()).collect();
                cycle.push(m.to_string());
                return Some(cycle);
            }
            if !done.insert(m) {
                return None;
            }
            path.push(m);
            for next in graph.get(m).into_iter().flatten() {
                if let Some(c) = visit(next, graph, path, done) {
                    return Some(c);
                }
            }
            path.pop();
            None
        }
        let mut done = BTreeSet::new();
        for m in graph.keys() {
            if let Some(cycle) = visit(m, &graph, &mut Vec::new(), &mut done) {
                panic!("import cycle between modules: {}", cycle.join(" → "));
            }
        }
    }
}
