//! syncweave: one Rust host for kcp's api-syncagent and init-agent roles,
//! with projection, mutation, naming and rendering run as Wasm components.
//!
//! The data path, top to bottom:
//! kcp watch ([`sync::controller`], driven by [`controller::watch`]) → work
//! queue and workers ([`controller`]) → plugin chain ([`plugin::chain`]) →
//! service-cluster apply ([`sync::syncer`]) → status back
//! ([`sync::syncer`]). Every long-running loop runs under
//! [`controller::supervise`].
//!
//! The folders are layers, from the foundations up; no module uses one from
//! a layer above its own, and no two modules use each other, directly or
//! through others (the unit test `no_module_import_cycles` keeps it so, for
//! the folders and for the modules inside each).

// Foundations: the process and its observability; the API types; the
// controller machinery (watch, caches, queue, runner, builder); talking to
// API servers.
pub mod apis;
pub mod controller;
pub mod kube;
pub mod ops;

// The kcp side: the APIExportEndpointSlice → virtual-workspace clients.
pub mod kcp;

// The roles' controllers: sync (kcp ⇄ service cluster), publishing
// (schemas into the APIExport), init (workspace initialisation), and
// registering physical clusters. Plugins (fetch → verify → resolve → chain →
// capture, and the `plugin` CLI) sit between: the sync path defines what it
// needs from them, the chain implements it.
pub mod init;
pub mod plugin;
pub mod publish;
pub mod register;
pub mod sync;

// The binary's edge: the roles' entry points and their servers, and the
// command line.
pub mod cli;
pub mod roles;

#[cfg(test)]
mod testing;

#[cfg(test)]
mod layering {
    //! The module graph, read from the source: which module's non-test code
    //! names which other module (`crate::a::b`, `super::b`, grouped
    //! `{…}` imports). Checked at two levels: the folders under `src/`, and
    //! the modules one level inside each folder (`sync::controller`).
    use std::collections::{BTreeMap, BTreeSet};
    use std::path::{Path, PathBuf};

    type Graph = BTreeMap<String, BTreeSet<String>>;

    fn src() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
    }

    /// `a::b` when `src/a/b.rs` or `src/a/b/mod.rs` exists, else `a`: the
    /// second-level module a path names (an item re-exported by `a/mod.rs`
    /// belongs to `a`).
    fn node(parts: &[String]) -> Option<String> {
        let first = parts.first()?;
        if let Some(second) = parts.get(1) {
            let dir = src().join(first);
            if dir.join(format!("{second}.rs")).is_file()
                || dir.join(second).join("mod.rs").is_file()
            {
                return Some(format!("{first}::{second}"));
            }
        }
        Some(first.clone())
    }

    /// The identifiers of a path starting at `rest` (`a::b::{c, d}` →
    /// `[[a, b, c], [a, b, d]]`), one level of braces.
    fn paths(rest: &str) -> Vec<Vec<String>> {
        let ident = |s: &str| -> String {
            s.trim()
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect()
        };
        let mut prefix = Vec::new();
        let mut tail = rest;
        loop {
            if let Some(list) = tail.strip_prefix('{') {
                let inner = list.split('}').next().unwrap_or("");
                return inner
                    .split(',')
                    .map(|p| {
                        let mut v = prefix.clone();
                        v.extend(p.split("::").map(ident).filter(|s| !s.is_empty()));
                        v
                    })
                    .collect();
            }
            let seg = ident(tail);
            if seg.is_empty() {
                return vec![prefix];
            }
            tail = &tail[seg.len()..];
            prefix.push(seg);
            match tail.strip_prefix("::") {
                Some(t) => tail = t,
                None => return vec![prefix],
            }
        }
    }

    /// Second-level module → the second-level modules its code names.
    fn graph() -> Graph {
        fn walk(dir: &Path, module: &[String], out: &mut Graph) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                let stem = path.file_stem().unwrap().to_string_lossy().to_string();
                if path.is_dir() {
                    let mut m = module.to_vec();
                    m.push(stem);
                    walk(&path, &m, out);
                    continue;
                }
                if path.extension().is_none_or(|e| e != "rs") {
                    continue;
                }
                // This file's module path (`a/mod.rs` is `a`).
                let mut me = module.to_vec();
                if stem != "mod" {
                    me.push(stem.clone());
                }
                // Test support is no layer: only tests use it.
                if me.is_empty() || me == ["lib"] || me == ["main"] || me[0] == "testing" {
                    continue;
                }
                let from = node(&me).unwrap();
                let text = std::fs::read_to_string(&path).unwrap();
                let code = text.split("#[cfg(test)]").next().unwrap_or("");
                let uses = out.entry(from.clone()).or_default();
                for line in code.lines() {
                    let line = line.split("//").next().unwrap_or("");
                    // A folder's re-exports are its facade, not a dependency.
                    if stem == "mod" && line.trim_start().starts_with("pub use") {
                        continue;
                    }
                    let mut found = Vec::new();
                    for (i, _) in line.match_indices("crate::") {
                        found.extend(paths(&line[i + "crate::".len()..]));
                    }
                    for (i, _) in line.match_indices("super::") {
                        if line[..i].ends_with("super::") {
                            continue; // counted from the first `super::`
                        }
                        // `super::` of `a/b.rs` is `a`; of `a/b/mod.rs` too
                        // when the file is `mod.rs` one level further up.
                        let mut base = me.clone();
                        let mut rest = &line[i..];
                        while let Some(r) = rest.strip_prefix("super::") {
                            base.pop();
                            rest = r;
                        }
                        for p in paths(rest) {
                            let mut full = base.clone();
                            full.extend(p);
                            found.push(full);
                        }
                    }
                    for p in found {
                        if let Some(to) = node(&p)
                            && to != from
                            && !to.is_empty()
                        {
                            uses.insert(to);
                        }
                    }
                }
            }
        }
        let mut out = Graph::new();
        walk(&src(), &[], &mut out);
        out
    }

    /// The graph of the folders: `a::b` → `a`.
    fn folders(g: &Graph) -> Graph {
        let top = |s: &str| s.split("::").next().unwrap().to_string();
        let mut out = Graph::new();
        for (from, tos) in g {
            let e = out.entry(top(from)).or_default();
            for to in tos {
                if top(to) != top(from) {
                    e.insert(top(to));
                }
            }
        }
        out
    }

    fn find_cycle(graph: &Graph) -> Option<Vec<String>> {
        fn visit<'a>(
            m: &'a str,
            graph: &'a Graph,
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
        graph
            .keys()
            .find_map(|m| visit(m, graph, &mut Vec::new(), &mut done))
    }

    /// The folders in the order `lib.rs` declares their layers, bottom up;
    /// a folder may use folders of its own layer and of lower ones.
    const LAYERS: &[&[&str]] = &[
        &["ops"],
        &["apis"],
        &["controller"],
        &["kube"],
        &["kcp"],
        &["sync"],
        &["plugin", "publish", "init", "register"],
        &["roles", "cli"],
    ];

    #[test]
    fn no_module_import_cycles() {
        let g = graph();
        assert!(g.contains_key("sync::controller") && g.contains_key("plugin::chain"));
        if let Some(cycle) = find_cycle(&folders(&g)) {
            panic!("import cycle between folders: {}", cycle.join(" → "));
        }
        if let Some(cycle) = find_cycle(&g) {
            panic!("import cycle between modules: {}", cycle.join(" → "));
        }
    }

    #[test]
    fn folders_use_only_lower_layers() {
        let layer = |f: &str| LAYERS.iter().position(|l| l.contains(&f));
        for (from, tos) in folders(&graph()) {
            let Some(mine) = layer(&from) else {
                panic!("src/{from} is in no layer of LAYERS; add it where it belongs");
            };
            for to in tos {
                let theirs = layer(&to).unwrap_or(usize::MAX);
                // Folders of one layer may use each other (without cycles).
                assert!(
                    theirs <= mine,
                    "{from} (layer {mine}) uses {to} (layer {theirs}), a layer above it: \
                     move what they share down"
                );
            }
        }
    }

    #[test]
    fn the_path_parser_reads_grouped_and_relative_imports() {
        assert_eq!(
            paths("a::b::{c, d::e}"),
            [vec!["a", "b", "c"], vec!["a", "b", "d", "e"]]
        );
        assert_eq!(paths("x::Y;"), [vec!["x", "Y"]]);
    }
}
